package openstack

import (
	"context"
	"net/netip"
	"slices"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

// TestDualStackAdapter: with Options.DualStack an instance has an IPv6
// address on the node network's IPv6 subnet, its Node an InternalIP of
// each family (IPv4 first, as Neutron lists the port's fixed IPs), and
// LoadBalancerFamilies reads the family of a load balancer's VIP.
func TestDualStackAdapter(t *testing.T) {
	cl, insts := conformance.StartWithNodes(t, Adapter{}, conformance.Options{ClusterID: "cid", DualStack: true})
	c := cl.(*Cloud)
	want, err := c.ExpectedNode(insts[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	var internal []string
	for _, a := range want.Addresses {
		if a.Type == corev1.NodeInternalIP {
			internal = append(internal, a.Address)
		}
	}
	if len(internal) != 2 || !netip.MustParseAddr(internal[0]).Is4() || !netip.MustParsePrefix(dualStackCIDR).Contains(netip.MustParseAddr(internal[1])) {
		t.Errorf("InternalIPs %v, want an IPv4 then an IPv6 one of %s", internal, dualStackCIDR)
	}

	ctx := context.Background()
	lbc, _, err := c.Clients(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for name, subnet := range map[string]string{"v4": c.fx.SubnetID, "v6": c.fx.SubnetIPv6ID} {
		if _, err := loadbalancers.Create(ctx, lbc, loadbalancers.CreateOpts{Name: c.lbName(types.NamespacedName{Namespace: "ns", Name: name}), VipSubnetID: subnet}).Extract(); err != nil {
			t.Fatal(err)
		}
	}
	for name, fams := range map[string][]corev1.IPFamily{"v4": v4, "v6": v6, "none": nil} {
		if got := c.LoadBalancerFamilies(types.NamespacedName{Namespace: "ns", Name: name}); !slices.Equal(got, fams) {
			t.Errorf("%s: families %v, want %v", name, got, fams)
		}
	}
}
