package aws

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
)

// TestPinnedAddresses: an internet-facing NLB gets the Elastic IPs of
// eip-allocations, one per subnet in zone order, and an internal one the
// private addresses of private-ipv4-addresses; a changed list on an
// existing NLB is an error (its addresses are fixed), and deleting the
// Service leaves the user's Elastic IPs allocated.
func TestPinnedAddresses(t *testing.T) {
	e := newLBEnv(t)
	nodes := e.nodes(1)
	zones := slices.Sorted(func(yield func(string) bool) {
		for z := range e.fx.PublicSubnets {
			if !yield(z) {
				return
			}
		}
	})
	var allocs []string
	for range zones {
		id, _, err := e.emu.AllocateAddress(map[string]string{"owner": "user"})
		if err != nil {
			t.Fatal(err)
		}
		allocs = append(allocs, id)
	}
	svc := lbService(map[string]string{string(annotationEIPAllocations): strings.Join(allocs, ",")})
	e.ensure(svc, nodes)
	got := map[string]string{} // subnet -> allocation
	for _, az := range e.view(svc).lb.AvailabilityZones {
		for _, a := range az.LoadBalancerAddresses {
			got[aws.ToString(az.SubnetId)] = aws.ToString(a.AllocationId)
		}
	}
	for i, z := range zones {
		if got[e.fx.PublicSubnets[z]] != allocs[i] {
			t.Errorf("zone %s: subnet %s has allocation %q, want %s", z, e.fx.PublicSubnets[z], got[e.fx.PublicSubnets[z]], allocs[i])
		}
	}

	other, _, err := e.emu.AllocateAddress(nil)
	if err != nil {
		t.Fatal(err)
	}
	svc.Annotations[string(annotationEIPAllocations)] = strings.Join(append(allocs[1:], other), ",")
	if _, err := e.lb.EnsureLoadBalancer(e.ctx, "kubernetes", svc, nodes); err == nil || !strings.Contains(err.Error(), "fixed when it is created") {
		t.Errorf("changed Elastic IPs on an existing NLB: err %v", err)
	}
	if err := e.lb.EnsureLoadBalancerDeleted(e.ctx, "kubernetes", svc); err != nil {
		t.Fatal(err)
	}
	for _, a := range e.emu.Addresses() {
		if a.LoadBalancerARN != "" {
			t.Errorf("address %s still used by %s after the Service went", a.AllocationID, a.LoadBalancerARN)
		}
	}
	if n := len(e.emu.Addresses()); n != len(allocs)+1 {
		t.Errorf("%d Elastic IPs left, want the user's %d", n, len(allocs)+1)
	}

	// Internal: a chosen private address in each private subnet.
	out, err := e.api.ec2.DescribeSubnets(e.ctx, &ec2.DescribeSubnetsInput{SubnetIds: func() (ids []string) {
		for _, z := range zones {
			ids = append(ids, e.fx.PrivateSubnets[z])
		}
		return ids
	}()})
	if err != nil {
		t.Fatal(err)
	}
	cidr := map[string]string{}
	for _, s := range out.Subnets {
		cidr[aws.ToString(s.SubnetId)] = aws.ToString(s.CidrBlock)
	}
	var ips []string
	for _, z := range zones {
		p := netip.MustParsePrefix(cidr[e.fx.PrivateSubnets[z]])
		a := p.Addr()
		for range 20 {
			a = a.Next()
		}
		ips = append(ips, a.String())
	}
	internal := lbService(map[string]string{string(annotationInternal): "true", string(annotationPrivateIPv4): strings.Join(ips, ",")})
	internal.Name = "internal"
	e.ensure(internal, nodes)
	lbs, err := e.api.elbv2.DescribeLoadBalancers(e.ctx, &elbv2.DescribeLoadBalancersInput{Names: []string{loadBalancerName(lbTestCluster, internal)}})
	if err != nil {
		t.Fatal(err)
	}
	var have []string
	for _, az := range lbs.LoadBalancers[0].AvailabilityZones {
		for _, a := range az.LoadBalancerAddresses {
			have = append(have, aws.ToString(a.PrivateIPv4Address))
		}
	}
	slices.Sort(have)
	want := slices.Sorted(slices.Values(ips))
	if !slices.Equal(have, want) {
		t.Errorf("internal NLB private addresses %v, want %v", have, want)
	}
}
