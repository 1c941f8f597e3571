package aws

import (
	"net/netip"
	"testing"

	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

// TestPodCIDRsFromDelegatedPrefixes: the primary interface's /80 and /28
// are the Node's pod CIDRs, read from the listing (no call per Node); an
// IPv4 family without a prefix is allocated from --cluster-cidr; without
// assignIPv6Prefix nothing is written to EC2.
func TestPodCIDRsFromDelegatedPrefixes(t *testing.T) {
	env := newTestEnv(t, nil)
	dual := env.launch(t, cloudsimaws.LaunchSpec{Count: 5, PodRanges: []string{"/28", "/80"}})
	v6 := env.launch(t, cloudsimaws.LaunchSpec{Count: 1, PodRanges: []string{"/80"}})
	bare := env.launch(t, cloudsimaws.LaunchSpec{Count: 1})
	env.srv.ResetCalls()
	for _, id := range append(append(dual, v6...), bare...) {
		info := env.info(t, id)
		a, err := env.in.PodCIDRs(t.Context(), env.nodeByProviderID(t, id))
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		var want4, want6 string
		for _, r := range info.PodRanges {
			if netip.MustParsePrefix(r).Addr().Is4() {
				want4 = r
			} else {
				want6 = r
			}
		}
		if a.IPv4.CIDR != want4 || a.IPv6.CIDR != want6 || a.IPv4.Allocate != (want4 == "") || a.IPv6.Allocate || !a.CloudRouted {
			t.Errorf("%s: answer %+v; the interface holds %v", id, a, info.PodRanges)
		}
	}
	if n := env.describes(); n != 1 {
		t.Errorf("%d DescribeInstances for 7 Nodes: want the one listing", n)
	}
	if n := env.srv.CallCount("ec2:AssignIpv6Addresses"); n != 0 {
		t.Errorf("%d AssignIpv6Addresses without nodeIPAM.assignIPv6Prefix", n)
	}
}

// TestAssignIPv6Prefix: with nodeIPAM.assignIPv6Prefix an interface
// without a /80 gets one, once, even when asked again before the
// listing shows it.
func TestAssignIPv6Prefix(t *testing.T) {
	env := newTestEnv(t, func(s *Section) { s.NodeIPAM.AssignIPv6Prefix = true })
	ids := env.launch(t, cloudsimaws.LaunchSpec{Count: 2})
	with := env.launch(t, cloudsimaws.LaunchSpec{Count: 1, PodRanges: []string{"/80"}})
	env.srv.ResetCalls()
	for range 2 {
		for _, id := range ids {
			a, err := env.in.PodCIDRs(t.Context(), env.nodeByProviderID(t, id))
			if err != nil {
				t.Fatalf("%s: %v", id, err)
			}
			info := env.info(t, id)
			if len(info.PodRanges) != 1 || a.IPv6.CIDR != info.PodRanges[0] {
				t.Errorf("%s: answer %+v; the interface holds %v", id, a, info.PodRanges)
			}
		}
	}
	if _, err := env.in.PodCIDRs(t.Context(), env.nodeByProviderID(t, with[0])); err != nil {
		t.Fatal(err)
	}
	if n := env.srv.CallCount("ec2:AssignIpv6Addresses"); n != 2 {
		t.Errorf("%d AssignIpv6Addresses for 2 interfaces without a prefix, each asked twice, and one with: want 2", n)
	}
	// Once the listing shows the prefix, nothing more is assigned.
	env.expire()
	if _, err := env.in.PodCIDRs(t.Context(), env.nodeByProviderID(t, ids[0])); err != nil {
		t.Fatal(err)
	}
	if got := env.info(t, ids[0]).PodRanges; len(got) != 1 {
		t.Errorf("interface prefixes after a refresh: %v", got)
	}
}
