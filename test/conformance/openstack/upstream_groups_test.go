package openstack

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

// TestSwitchedUpstreamGroup: on a switched config the upstream load
// balancer comes with upstream's security group for the Service, its
// NodePort admitted from the member subnet, on every backend's port.
func TestSwitchedUpstreamGroup(t *testing.T) {
	cl, insts := conformance.StartWithNodes(t, Adapter{Options: Options{ProvisioningDelay: 10 * time.Millisecond}}, conformance.Options{ClusterID: "cid", Switched: true})
	c := cl.(*Cloud)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "1234abcd-0000-1111-2222-333344445555"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{
			{Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}},
	}
	if _, err := c.MakeUpstreamLoadBalancer(svc, "cid", insts); err != nil {
		t.Fatal(err)
	}
	name := "lb-sg-1234abcd-0000-1111-2222-333344445555-ns-web"
	var id string
	for _, g := range c.emu.SecurityGroups() {
		if g.Name == name {
			id = g.ID
			if g.Description != "Security Group for ns/web Service LoadBalancer in cluster cid" {
				t.Errorf("description %q", g.Description)
			}
		}
	}
	if id == "" {
		t.Fatalf("no group %s", name)
	}
	for _, inst := range insts {
		for _, p := range c.emu.DevicePorts(inst.ID) {
			if !slices.Contains(p.SecurityGroups, id) {
				t.Errorf("port %s of %s lacks upstream's group: %v", p.ID, inst.ID, p.SecurityGroups)
			}
		}
	}
}
