package command

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

// TestNodeCacheHoldsNoManagedFields: Nodes in the manager's cache lose
// their managedFields; everything else is kept.
func TestNodeCacheHoldsNoManagedFields(t *testing.T) {
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:          "n1",
			Labels:        map[string]string{"a": "b"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}},
		},
		Spec: v1.NodeSpec{ProviderID: "aws:///eu-west-1a/i-0123456789abcdef0"},
	}
	f := informers.NewSharedInformerFactory(fake.NewClientset(node), 0)
	stripNodeManagedFields(f)
	lister := f.Core().V1().Nodes().Lister()
	stop := make(chan struct{})
	defer f.Shutdown()
	defer close(stop)
	f.Start(stop)
	f.WaitForCacheSync(stop)
	got, err := lister.Get("n1")
	if err != nil {
		t.Fatal(err)
	}
	if got.ManagedFields != nil || got.Labels["a"] != "b" || got.Spec.ProviderID != node.Spec.ProviderID {
		t.Errorf("cached node %+v", got)
	}
}
