package nodes

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// parse accepts "test:///<id>" providerIDs, like a backend's parser.
func parse(pid string) (string, error) {
	id, ok := strings.CutPrefix(pid, "test:///")
	if !ok || id == "" {
		return "", errors.New("not ours")
	}
	return id, nil
}

func node(name, pid string, ready v1.ConditionStatus) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{ProviderID: pid}}
	if ready != "" {
		n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: ready}}
	}
	return n
}

func TestLister(t *testing.T) {
	l := New(parse)
	// Before informers: nothing known, no panic.
	if _, ok := l.InstanceID("a"); ok {
		t.Fatal("knew a Node before SetInformers")
	}
	client := fake.NewClientset(
		node("a", "test:///i-1", v1.ConditionTrue),
		node("kubelet-named", "test:///i-2", v1.ConditionFalse),
		node("unknown", "test:///i-3", v1.ConditionUnknown),
		node("no-status", "test:///i-4", ""),
		node("other-cloud", "aws:///eu-west-1a/i-5", v1.ConditionFalse),
		node("uninitialized", "", v1.ConditionFalse),
	)
	f := informers.NewSharedInformerFactory(client, 0)
	l.SetInformers(f)
	f.Start(t.Context().Done())
	if !cache.WaitForCacheSync(t.Context().Done(), f.Core().V1().Nodes().Informer().HasSynced) {
		t.Fatal("no sync")
	}
	if id, ok := l.InstanceID("kubelet-named"); !ok || id != "i-2" {
		t.Errorf("InstanceID(kubelet-named) = %q, %v", id, ok)
	}
	for _, name := range []string{"other-cloud", "uninitialized", "missing"} {
		if id, ok := l.InstanceID(name); ok {
			t.Errorf("InstanceID(%s) = %q, want none", name, id)
		}
	}
	if name, ok := l.NodeName("i-2"); !ok || name != "kubelet-named" {
		t.Errorf("NodeName(i-2) = %q, %v", name, ok)
	}
	if name, ok := l.NodeName("i-5"); ok {
		t.Errorf("NodeName(i-5) = %q: another cloud's Node", name)
	}
	got := l.NotReadyInstanceIDs(nil)
	slices.Sort(got)
	if want := []string{"i-2", "i-3", "i-4"}; !slices.Equal(got, want) {
		t.Errorf("NotReadyInstanceIDs = %v, want %v", got, want)
	}
	// An uninitialized Node is resolved by name, from memory.
	got = l.NotReadyInstanceIDs(func(name string) (string, bool) { return "id-of-" + name, name == "uninitialized" })
	slices.Sort(got)
	if want := []string{"i-2", "i-3", "i-4", "id-of-uninitialized"}; !slices.Equal(got, want) {
		t.Errorf("NotReadyInstanceIDs(byName) = %v, want %v", got, want)
	}
	// The index follows updates.
	if _, err := client.CoreV1().Nodes().Create(t.Context(), node("late", "test:///i-9", v1.ConditionTrue), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if name, ok := l.NodeName("i-9"); ok && name == "late" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("new Node never indexed")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestListersOfSeveralClouds: in a hybrid manager each cloud's Lister
// indexes the one shared Node informer with its own parser; each gets its
// own index (a shared index name would leave all but the first scanning).
func TestListersOfSeveralClouds(t *testing.T) {
	other := func(pid string) (string, error) {
		id, ok := strings.CutPrefix(pid, "other:///")
		if !ok || id == "" {
			return "", errors.New("not ours")
		}
		return id, nil
	}
	a, b := New(parse), New(other)
	client := fake.NewClientset(node("a1", "test:///i-1", v1.ConditionTrue), node("b1", "other:///i-1", v1.ConditionTrue))
	f := informers.NewSharedInformerFactory(client, 0)
	a.SetInformers(f)
	b.SetInformers(f)
	f.Start(t.Context().Done())
	if !cache.WaitForCacheSync(t.Context().Done(), f.Core().V1().Nodes().Informer().HasSynced) {
		t.Fatal("no sync")
	}
	for _, l := range []*Lister{a, b} {
		if _, indexed := l.synced(); !indexed {
			t.Errorf("lister %s scans instead of using its index", l.index)
		}
	}
	if name, ok := a.NodeName("i-1"); !ok || name != "a1" {
		t.Errorf("first cloud: NodeName(i-1) = %q, %v", name, ok)
	}
	if name, ok := b.NodeName("i-1"); !ok || name != "b1" {
		t.Errorf("second cloud: NodeName(i-1) = %q, %v", name, ok)
	}
}

// LoadBalancerBackend follows the service controller's stable node set:
// a Node that is excluded by label, tainted for deletion by the cluster
// autoscaler or being deleted is no backend; NotReady still is; unknown
// is not.
func TestLoadBalancerBackend(t *testing.T) {
	l := New(parse)
	if l.LoadBalancerBackend("i-1") {
		t.Fatal("a backend before SetInformers")
	}
	excluded := node("excluded", "test:///i-2", v1.ConditionTrue)
	excluded.Labels = map[string]string{v1.LabelNodeExcludeBalancers: "true"}
	notExcluded := node("not-excluded", "test:///i-3", v1.ConditionTrue)
	notExcluded.Labels = map[string]string{v1.LabelNodeExcludeBalancers: "false"}
	tainted := node("tainted", "test:///i-4", v1.ConditionTrue)
	tainted.Spec.Taints = []v1.Taint{{Key: "ToBeDeletedByClusterAutoscaler", Effect: v1.TaintEffectNoSchedule}}
	deleting := node("deleting", "test:///i-5", v1.ConditionTrue)
	now := metav1.Now()
	deleting.DeletionTimestamp, deleting.Finalizers = &now, []string{"test"}
	client := fake.NewClientset(node("plain", "test:///i-1", v1.ConditionTrue), excluded, notExcluded, tainted, deleting,
		node("not-ready", "test:///i-6", v1.ConditionFalse))
	f := informers.NewSharedInformerFactory(client, 0)
	l.SetInformers(f)
	f.Start(t.Context().Done())
	if !cache.WaitForCacheSync(t.Context().Done(), f.Core().V1().Nodes().Informer().HasSynced) {
		t.Fatal("no sync")
	}
	for id, want := range map[string]bool{"i-1": true, "i-2": false, "i-3": true, "i-4": false, "i-5": false, "i-6": true, "i-7": false} {
		if got := l.LoadBalancerBackend(id); got != want {
			t.Errorf("LoadBalancerBackend(%s) = %v, want %v", id, got, want)
		}
	}
}
