package gce

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"

	v1 "k8s.io/api/core/v1"

	"github.com/multicloud-ccm/multicloud-ccm/providers/podcidrs"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	gceemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/gce"
)

// TestPodCIDRsFromAliasRanges: the cloud allocator's answer is nic0's
// first alias IP range and its IPv6 /96 masked to upstream's /112, read
// from the listing the node controller makes anyway (no call per Node);
// an instance without either has no ranges; an unmanaged Node is not
// served and costs no call.
func TestPodCIDRsFromAliasRanges(t *testing.T) {
	env := newTestEnv(t, gceemu.Config{}, nil)
	var specs []cloudsim.InstanceSpec
	for i := range 6 {
		specs = append(specs, cloudsim.InstanceSpec{Name: fmt.Sprintf("dual-%d", i), PodRanges: []string{"/24", "/96"}})
	}
	specs = append(specs,
		cloudsim.InstanceSpec{Name: "v4only", PodRanges: []string{"/26"}},
		cloudsim.InstanceSpec{Name: "bare"},
	)
	nodes := env.launch(t, specs...)
	env.srv.ResetCalls()
	for _, n := range nodes {
		info, _ := env.emu.GetInstance(n.Name)
		a, err := env.cloud.instances.PodCIDRs(t.Context(), n)
		if n.Name == "bare" {
			if !errors.Is(err, podcidrs.ErrNoRanges) {
				t.Errorf("bare: %+v, %v; want ErrNoRanges", a, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", n.Name, err)
		}
		if !a.CloudRouted || a.IPv4.CIDR != info.PodRanges[0] || a.IPv4.Allocate || a.IPv6.Allocate {
			t.Errorf("%s: answer %+v; the cloud holds %v", n.Name, a, info.PodRanges)
		}
		if n.Name == "v4only" {
			if a.IPv6.CIDR != "" {
				t.Errorf("v4only: IPv6 %q without an IPv6 range", a.IPv6.CIDR)
			}
			continue
		}
		r96 := netip.MustParsePrefix(info.PodRanges[1])
		want := netip.PrefixFrom(r96.Addr(), 112).String()
		if a.IPv6.CIDR != want {
			t.Errorf("%s: IPv6 pod CIDR %q, want the first /112 of %s: %s", n.Name, a.IPv6.CIDR, r96, want)
		}
	}
	if n := env.srv.CallCount("compute:Instances.Get"); n > 0 {
		t.Errorf("%d instance GETs for %d Nodes: the listing should serve them", n, len(nodes))
	}
	if n, zones := env.srv.CallCount(cloudsim.ReadOps), len(env.emu.Config().Zones); n > zones {
		t.Errorf("%d reads for %d Nodes in %d zones: want one list per zone", n, len(nodes), zones)
	}

	env.srv.ResetCalls()
	unmanaged := &v1.Node{}
	unmanaged.Name = "dual-0"
	unmanaged.Labels = map[string]string{labelUnmanagedNode: unmanagedNodeValue}
	if _, err := env.cloud.instances.PodCIDRs(t.Context(), unmanaged); !errors.Is(err, podcidrs.ErrNotServed) {
		t.Errorf("unmanaged Node: %v, want ErrNotServed", err)
	}
	if n := env.srv.CallCount(cloudsim.ReadOps); n != 0 {
		t.Errorf("an unmanaged Node cost %d reads", n)
	}
}

// TestPodRangesAsUpstreamReadsThem pins upstream's reading of the
// interfaces: the one named nic0 (else the first), its first alias range,
// its ipv6Address, else with EXTERNAL access an access config's
// externalIpv6, masked to /112.
func TestPodRangesAsUpstreamReadsThem(t *testing.T) {
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		name       string
		nics       []*computepb.NetworkInterface
		alias, ip6 string
	}{
		{"nic0 first alias", []*computepb.NetworkInterface{{Name: s("nic0"), AliasIpRanges: []*computepb.AliasIpRange{{IpCidrRange: s("10.4.1.0/24")}, {IpCidrRange: s("10.9.0.0/24")}}}}, "10.4.1.0/24", ""},
		{"nic0 found by name", []*computepb.NetworkInterface{{Name: s("nic1"), AliasIpRanges: []*computepb.AliasIpRange{{IpCidrRange: s("10.9.0.0/24")}}}, {Name: s("nic0"), AliasIpRanges: []*computepb.AliasIpRange{{IpCidrRange: s("10.4.2.0/24")}}}}, "10.4.2.0/24", ""},
		{"internal IPv6", []*computepb.NetworkInterface{{Name: s("nic0"), Ipv6Address: s("fd20:1:2:3:0:5::"), Ipv6AccessType: s("INTERNAL")}}, "", "fd20:1:2:3:0:5::/112"},
		{"external IPv6", []*computepb.NetworkInterface{{Name: s("nic0"), Ipv6AccessType: s("EXTERNAL"), Ipv6AccessConfigs: []*computepb.AccessConfig{{ExternalIpv6: s("2600:1900:4000:7a0:8000:0:1:0")}}}}, "", "2600:1900:4000:7a0:8000:0:1:0/112"},
		{"external config ignored for internal access", []*computepb.NetworkInterface{{Name: s("nic0"), Ipv6AccessType: s("INTERNAL"), Ipv6AccessConfigs: []*computepb.AccessConfig{{ExternalIpv6: s("2600:1900::1")}}}}, "", ""},
	} {
		alias, ip6 := podRanges(tc.nics)
		if alias != tc.alias || ip6 != tc.ip6 {
			t.Errorf("%s: %q, %q; want %q, %q", tc.name, alias, ip6, tc.alias, tc.ip6)
		}
	}
}
