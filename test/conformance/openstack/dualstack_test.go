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
	for name, fams := range map[string][]corev1.IPFamily{"v4": conformance.IPv4Only, "v6": conformance.IPv6Only, "none": nil} {
		if got := c.LoadBalancerFamilies(types.NamespacedName{Namespace: "ns", Name: name}); !slices.Equal(got, fams) {
			t.Errorf("%s: families %v, want %v", name, got, fams)
		}
	}
}

// TestDualStackCasesFollowOctavia: at the emulator's default Octavia
// (2.26) a dual-stack Service is served with both families and
// LoadBalancerFamilies reads an additional VIP's family too; with
// OctaviaVersion v2.25 the cases are upstream's first-family ones, the
// Service that requires dual-stack warned.
func TestDualStackCasesFollowOctavia(t *testing.T) {
	for _, tc := range []struct {
		version string
		serves  []corev1.IPFamily
		warning string
	}{
		{"", conformance.IPv4First, ""},
		{"v2.25", conformance.IPv4Only, firstFamilyOnly},
	} {
		cl, _ := conformance.StartWithNodes(t, Adapter{Options: Options{OctaviaVersion: tc.version}}, conformance.Options{ClusterID: "cid", DualStack: true})
		c := cl.(*Cloud)
		cases := c.DualStackCases()
		i := slices.IndexFunc(cases, func(x conformance.DualStackCase) bool { return x.Name == "ds-v4-first" })
		if i < 0 || !slices.Equal(cases[i].Serves, tc.serves) || cases[i].Warning != tc.warning {
			t.Errorf("Octavia %q: ds-v4-first %+v, want serving %v with Warning %q", tc.version, cases, tc.serves, tc.warning)
		}
		for _, x := range cases {
			if x.Upstream && len(x.Serves) != 1 {
				t.Errorf("Octavia %q: upstream case %s serves %v, want its first family", tc.version, x.Name, x.Serves)
			}
		}
		ctx := context.Background()
		lbc, _, err := c.Clients(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = loadbalancers.Create(ctx, lbc, loadbalancers.CreateOpts{
			Name: c.lbName(types.NamespacedName{Namespace: "ns", Name: "dual"}), VipSubnetID: c.fx.SubnetID,
			AdditionalVips: []loadbalancers.AdditionalVip{{SubnetID: c.fx.SubnetIPv6ID}},
		}).Extract()
		if tc.version != "" {
			if err == nil {
				t.Errorf("Octavia %s took additional_vips", tc.version)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := c.LoadBalancerFamilies(types.NamespacedName{Namespace: "ns", Name: "dual"}); !slices.Equal(got, conformance.IPv4First) {
			t.Errorf("families %v, want both", got)
		}
	}
}
