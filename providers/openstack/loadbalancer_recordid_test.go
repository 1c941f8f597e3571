package openstack

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestRecordIDOnTheCallersService: the load-balancer-id annotation is
// written to the API and onto the Service the caller passed, as
// upstream's patcher leaves it (the service controller then takes it
// for part of the spec the load balancer was made from).
func TestRecordIDOnTheCallersService(t *testing.T) {
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}
	kube := fake.NewClientset(svc.DeepCopy())
	l := &loadBalancers{services: kube.CoreV1()}
	if err := l.recordID(t.Context(), svc, "lb-1"); err != nil {
		t.Fatal(err)
	}
	key := annotationLoadBalancerID.String()
	if svc.Annotations[key] != "lb-1" {
		t.Errorf("caller's Service annotations %v", svc.Annotations)
	}
	got, err := kube.CoreV1().Services("default").Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil || got.Annotations[key] != "lb-1" {
		t.Errorf("API object annotations %v: %v", got.Annotations, err)
	}
	if err := l.forgetID(t.Context(), svc, "lb-1"); err != nil {
		t.Fatal(err)
	}
	if _, ok := svc.Annotations[key]; ok {
		t.Errorf("after forgetID the caller's Service still has %s", key)
	}
}
