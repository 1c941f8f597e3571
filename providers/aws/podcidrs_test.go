package aws

import (
	"net/netip"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"

	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

// TestPodCIDRsFromDelegatedPrefixes: the primary interface's /80 and /28
// are the Node's pod CIDRs, read from the listing (no call per Node); an
// IPv4 family without a prefix is allocated from --cluster-cidr; without
// assignIPv6Prefix nothing is written to EC2.
func TestPodCIDRsFromDelegatedPrefixes(t *testing.T) {
	env := newTestEnv(t, func(s *Section) { s.NodeIPAM.IPv4Prefix = true })
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

// TestIPv4PrefixesIgnoredByDefault: a /28 on the primary interface is
// not a pod CIDR unless nodeIPAM.ipv4Prefix says so (the VPC CNI's pools
// look the same).
func TestIPv4PrefixesIgnoredByDefault(t *testing.T) {
	env := newTestEnv(t, nil)
	id := env.launch(t, cloudsimaws.LaunchSpec{Count: 1, PodRanges: []string{"/28", "/80"}})[0]
	a, err := env.in.PodCIDRs(t.Context(), env.nodeByProviderID(t, id))
	if err != nil {
		t.Fatal(err)
	}
	if a.IPv4.CIDR != "" || !a.IPv4.Allocate || a.IPv6.CIDR == "" {
		t.Errorf("answer %+v; want IPv4 allocated, the /80 as IPv6", a)
	}
}

// TestAssignIPv6Prefix: with nodeIPAM.assignIPv6Prefix an interface
// without a /80 gets one, once, even when asked again before the listing
// shows it; one that has one (given since the listing) gets none more;
// the setting off assigns nothing.
func TestAssignIPv6Prefix(t *testing.T) {
	env := newTestEnv(t, func(s *Section) { s.NodeIPAM.AssignIPv6Prefix = true })
	ids := env.launch(t, cloudsimaws.LaunchSpec{Count: 2})
	env.srv.ResetCalls()
	for range 2 {
		for _, id := range ids {
			r, err := env.in.AssignIPv6Range(t.Context(), env.nodeByProviderID(t, id))
			if err != nil {
				t.Fatalf("%s: %v", id, err)
			}
			info := env.info(t, id)
			if len(info.PodRanges) != 1 || r != info.PodRanges[0] {
				t.Errorf("%s: assigned %q; the interface holds %v", id, r, info.PodRanges)
			}
			a, err := env.in.PodCIDRs(t.Context(), env.nodeByProviderID(t, id))
			if err != nil || a.IPv6.CIDR != r {
				t.Errorf("%s: answer after assigning %+v, %v", id, a, err)
			}
		}
	}
	if n := env.srv.CallCount("ec2:AssignIpv6Addresses"); n != 2 {
		t.Errorf("%d AssignIpv6Addresses for 2 interfaces without a prefix, each asked twice: want 2", n)
	}
	// A prefix given behind the snapshot's back (nodeup at boot) is found
	// by the direct read: no second one.
	late := env.launch(t, cloudsimaws.LaunchSpec{Count: 1})[0]
	if _, err := env.in.PodCIDRs(t.Context(), env.nodeByProviderID(t, late)); err != nil {
		t.Fatal(err)
	}
	eni := env.info(t, late).NetworkInterfaceID
	if _, err := env.api.ec2.AssignIpv6Addresses(t.Context(), &ec2.AssignIpv6AddressesInput{NetworkInterfaceId: &eni, Ipv6PrefixCount: aws.Int32(1)}); err != nil {
		t.Fatal(err)
	}
	env.srv.ResetCalls()
	r, err := env.in.AssignIPv6Range(t.Context(), env.nodeByProviderID(t, late))
	if err != nil || r != env.info(t, late).PodRanges[0] {
		t.Errorf("late: %q, %v; the interface holds %v", r, err, env.info(t, late).PodRanges)
	}
	if n := env.srv.CallCount("ec2:AssignIpv6Addresses"); n != 0 {
		t.Errorf("%d AssignIpv6Addresses for an interface that had a prefix", n)
	}

	off := newTestEnv(t, nil)
	id := off.launch(t, cloudsimaws.LaunchSpec{Count: 1})[0]
	if r, err := off.in.AssignIPv6Range(t.Context(), off.nodeByProviderID(t, id)); r != "" || err != nil {
		t.Errorf("setting off: %q, %v", r, err)
	}
	if n := off.srv.CallCount(cloudsim.AllOps); n != 0 {
		t.Errorf("setting off: %d calls", n)
	}
}
