package openstack

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

// TestDrift deletes a listener of a load balancer made through the API
// (DeletePart returns once Octavia has deleted it), then the whole load
// balancer with its floating IP; a floating IP someone else allocated
// stays.
func TestDrift(t *testing.T) {
	cl, insts := conformance.StartWithNodes(t, Adapter{Options: Options{ProvisioningDelay: 50 * time.Millisecond}}, conformance.Options{ClusterID: "cid"})
	c := cl.(*Cloud)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "1234abcd-0000-1111-2222-333344445555"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{
			{Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}, {Protocol: corev1.ProtocolTCP, Port: 443, NodePort: 30443}}},
	}
	k := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	if _, err := c.MakeUpstreamLoadBalancer(svc, "cid", insts); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, netc, err := c.Clients(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other, err := floatingips.Create(ctx, netc, floatingips.CreateOpts{FloatingNetworkID: c.fx.ExternalNetworkID, Description: "the user's"}).Extract()
	if err != nil {
		t.Fatal(err)
	}

	conformance.CheckListenerDrift(t, c, k)
	var fips []string
	for _, f := range c.emu.FloatingIPs() {
		fips = append(fips, f.ID)
	}
	if !slices.Equal(fips, []string{other.ID}) {
		t.Errorf("floating IPs %v, want only the user's %s", fips, other.ID)
	}
	if err := c.DeleteLoadBalancer(k); err != nil {
		t.Errorf("deleting again: %v", err)
	}
}
