package aws_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

// eipNLB is an internet-facing NLB input mapping the public subnets, in
// zone order, to allocs.
func eipNLB(e *env, name string, allocs ...string) *elbv2.CreateLoadBalancerInput {
	in := &elbv2.CreateLoadBalancerInput{
		Name: aws.String(name), Type: elbtypes.LoadBalancerTypeEnumNetwork, Scheme: elbtypes.LoadBalancerSchemeEnumInternetFacing,
	}
	for i, id := range allocs {
		m := elbtypes.SubnetMapping{SubnetId: aws.String(e.publicSubnets()[i])}
		if id != "" {
			m.AllocationId = aws.String(id)
		}
		in.SubnetMappings = append(in.SubnetMappings, m)
	}
	return in
}

// privateNLB is an internal NLB input mapping private subnets to ips.
func privateNLB(e *env, name string, ips map[string]string) *elbv2.CreateLoadBalancerInput {
	in := &elbv2.CreateLoadBalancerInput{
		Name: aws.String(name), Type: elbtypes.LoadBalancerTypeEnumNetwork, Scheme: elbtypes.LoadBalancerSchemeEnumInternal,
	}
	for _, z := range e.emu.Zones() {
		ip, ok := ips[z]
		if !ok {
			continue
		}
		m := elbtypes.SubnetMapping{SubnetId: aws.String(e.fx.PrivateSubnets[z])}
		if ip != "" {
			m.PrivateIPv4Address = aws.String(ip)
		}
		in.SubnetMappings = append(in.SubnetMappings, m)
	}
	return in
}

// zoneAddresses renders a load balancer's LoadBalancerAddresses per zone.
func zoneAddresses(lb elbtypes.LoadBalancer) string {
	var out []string
	for _, az := range lb.AvailabilityZones {
		var as []string
		for _, a := range az.LoadBalancerAddresses {
			as = append(as, fmt.Sprintf("%s/%s/%s", aws.ToString(a.IpAddress), aws.ToString(a.AllocationId), aws.ToString(a.PrivateIPv4Address)))
		}
		out = append(out, aws.ToString(az.ZoneName)+"="+strings.Join(as, ","))
	}
	return strings.Join(out, " ")
}

func subnetCIDR(t *testing.T, e *env, id string) netip.Prefix {
	t.Helper()
	out := must[*ec2.DescribeSubnetsOutput](t)(e.ec2.DescribeSubnets(ctx(), &ec2.DescribeSubnetsInput{SubnetIds: []string{id}}))
	return netip.MustParsePrefix(aws.ToString(out.Subnets[0].CidrBlock))
}

// nthAddr is the n-th address of p (negative: from the end, -1 the last).
func nthAddr(p netip.Prefix, n int) string {
	b := p.Masked().Addr().As4()
	if n < 0 {
		n += 1 << (32 - p.Bits())
	}
	binary.BigEndian.PutUint32(b[:], binary.BigEndian.Uint32(b[:])+uint32(n))
	return netip.AddrFrom4(b).String()
}

func TestNLBElasticIPs(t *testing.T) {
	e := newEnv(t)
	before := e.srv.Resources()
	var allocs, ips []string
	for i := range 4 {
		id, ip := allocate(t, e, map[string]string{"n": fmt.Sprint(i)})
		allocs, ips = append(allocs, id), append(ips, ip)
	}

	lb := must[*elbv2.CreateLoadBalancerOutput](t)(e.elb.CreateLoadBalancer(ctx(), eipNLB(e, "static", allocs[0], allocs[1], allocs[2]))).LoadBalancers[0]
	arn := aws.ToString(lb.LoadBalancerArn)
	want := fmt.Sprintf("eu-west-1a=%s/%s/ eu-west-1b=%s/%s/ eu-west-1c=%s/%s/", ips[0], allocs[0], ips[1], allocs[1], ips[2], allocs[2])
	if got := zoneAddresses(lb); got != want {
		t.Fatalf("created with addresses %s, want %s", got, want)
	}
	described := must[*elbv2.DescribeLoadBalancersOutput](t)(e.elb.DescribeLoadBalancers(ctx(), &elbv2.DescribeLoadBalancersInput{LoadBalancerArns: []string{arn}})).LoadBalancers[0]
	if got := zoneAddresses(described); got != want {
		t.Fatalf("described with addresses %s, want %s", got, want)
	}
	// A plain NLB reports no static addresses.
	plain := createNLB(t, e, "plain")
	if got := zoneAddresses(plain); strings.Contains(got, "/") {
		t.Fatalf("plain NLB addresses %s", got)
	}

	// The addresses are associated with ELB's interfaces in the subnets.
	used := describeAddresses(t, e, &ec2.DescribeAddressesInput{AllocationIds: allocs[:3]})
	for i, a := range used {
		cidr := subnetCIDR(t, e, e.publicSubnets()[i])
		priv, err := netip.ParseAddr(aws.ToString(a.PrivateIpAddress))
		if err != nil || !cidr.Contains(priv) || !strings.HasPrefix(aws.ToString(a.AssociationId), "eipassoc-") ||
			!strings.HasPrefix(aws.ToString(a.NetworkInterfaceId), "eni-") || aws.ToString(a.NetworkInterfaceOwnerId) != "123456789012" ||
			a.InstanceId != nil {
			t.Errorf("address in use %+v", a)
		}
	}
	byAssoc := describeAddresses(t, e, &ec2.DescribeAddressesInput{Filters: []ec2types.Filter{filter("association-id", aws.ToString(used[1].AssociationId))}})
	byENI := describeAddresses(t, e, &ec2.DescribeAddressesInput{Filters: []ec2types.Filter{filter("network-interface-id", aws.ToString(used[2].NetworkInterfaceId))}})
	associated := describeAddresses(t, e, &ec2.DescribeAddressesInput{Filters: []ec2types.Filter{filter("association-id", "eipassoc-*")}})
	if len(byAssoc) != 1 || aws.ToString(byAssoc[0].AllocationId) != allocs[1] || len(byENI) != 1 || aws.ToString(byENI[0].AllocationId) != allocs[2] || len(associated) != 3 {
		t.Fatalf("filters: by association %v, by interface %v, associated %v", allocationIDs(byAssoc), allocationIDs(byENI), allocationIDs(associated))
	}
	for _, info := range e.emu.Addresses() {
		if (info.AllocationID == allocs[3]) != (info.LoadBalancerARN == "") || info.LoadBalancerARN != "" && info.LoadBalancerARN != arn {
			t.Errorf("admin view %+v", info)
		}
	}

	// In use: no release, no second load balancer.
	_, err := e.ec2.ReleaseAddress(ctx(), &ec2.ReleaseAddressInput{AllocationId: aws.String(allocs[0])})
	wantCode(t, err, "InvalidIPAddress.InUse")
	if !strings.Contains(err.Error(), "Address "+ips[0]+" is in use.") {
		t.Errorf("in-use message: %v", err)
	}
	_, err = e.elb.CreateLoadBalancer(ctx(), eipNLB(e, "thief", allocs[3], allocs[0]))
	wantCode(t, err, "ResourceInUse")
	// The same request again is the same load balancer; other addresses
	// under the same name are a conflict.
	again := must[*elbv2.CreateLoadBalancerOutput](t)(e.elb.CreateLoadBalancer(ctx(), eipNLB(e, "static", allocs[0], allocs[1], allocs[2]))).LoadBalancers[0]
	if aws.ToString(again.LoadBalancerArn) != arn {
		t.Fatal("identical create made a second load balancer")
	}
	_, err = e.elb.CreateLoadBalancer(ctx(), eipNLB(e, "static", allocs[3], allocs[1], allocs[2]))
	wantCode(t, err, "DuplicateLoadBalancerName")
	if got := describeAddresses(t, e, &ec2.DescribeAddressesInput{AllocationIds: allocs[:1]}); aws.ToString(got[0].AssociationId) != aws.ToString(used[0].AssociationId) {
		t.Fatalf("idempotent create re-associated %+v", got[0])
	}

	// Deleting the load balancer frees the addresses; they stay allocated.
	must[*elbv2.DeleteLoadBalancerOutput](t)(e.elb.DeleteLoadBalancer(ctx(), &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: aws.String(arn)}))
	free := describeAddresses(t, e, &ec2.DescribeAddressesInput{})
	if len(free) != 4 {
		t.Fatalf("addresses after delete: %v", allocationIDs(free))
	}
	for _, a := range free {
		if a.AssociationId != nil || a.NetworkInterfaceId != nil || a.PrivateIpAddress != nil || a.NetworkInterfaceOwnerId != nil {
			t.Errorf("freed address %+v", a)
		}
	}
	reused := must[*elbv2.CreateLoadBalancerOutput](t)(e.elb.CreateLoadBalancer(ctx(), eipNLB(e, "reused", allocs[3], allocs[0]))).LoadBalancers[0]
	if got := zoneAddresses(reused); got != fmt.Sprintf("eu-west-1a=%s/%s/ eu-west-1b=%s/%s/", ips[3], allocs[3], ips[0], allocs[0]) {
		t.Fatalf("reused %s", got)
	}
	for _, l := range []string{aws.ToString(reused.LoadBalancerArn), aws.ToString(plain.LoadBalancerArn)} {
		must[*elbv2.DeleteLoadBalancerOutput](t)(e.elb.DeleteLoadBalancer(ctx(), &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: aws.String(l)}))
	}
	added, _ := cloudsim.DiffResources(before, e.srv.Resources())
	if len(added) != 4 || added[0].Kind != cloudsimaws.KindElasticIP {
		t.Fatalf("left after the load balancers: %+v", added)
	}
	for _, id := range allocs {
		must[*ec2.ReleaseAddressOutput](t)(e.ec2.ReleaseAddress(ctx(), &ec2.ReleaseAddressInput{AllocationId: aws.String(id)}))
	}
	if added, removed := cloudsim.DiffResources(before, e.srv.Resources()); len(added)+len(removed) != 0 {
		t.Fatalf("added %+v removed %+v", added, removed)
	}
}

func TestNLBSubnetMappingErrors(t *testing.T) {
	e := newEnv(t)
	a1, _ := allocate(t, e, nil)
	a2, _ := allocate(t, e, nil)
	privA := subnetCIDR(t, e, e.fx.PrivateSubnets[region+"a"])
	za, zb := region+"a", region+"b"

	for _, c := range []struct {
		name string
		in   *elbv2.CreateLoadBalancerInput
		code string
	}{
		{"internal with allocation", func() *elbv2.CreateLoadBalancerInput {
			in := eipNLB(e, "x", a1)
			in.Scheme = elbtypes.LoadBalancerSchemeEnumInternal
			return in
		}(), "InvalidConfigurationRequest"},
		{"application with allocation", func() *elbv2.CreateLoadBalancerInput {
			in := eipNLB(e, "x", a1, a2)
			in.Type = elbtypes.LoadBalancerTypeEnumApplication
			in.SecurityGroups = []string{e.fx.NodeSecurityGroupID}
			return in
		}(), "InvalidConfigurationRequest"},
		{"some with allocation", eipNLB(e, "x", a1, ""), "InvalidConfigurationRequest"},
		{"same allocation twice", eipNLB(e, "x", a1, a1), "InvalidConfigurationRequest"},
		{"unknown allocation", eipNLB(e, "x", a1, "eipalloc-0000000000000dead"), "AllocationIdNotFound"},
		{"internet-facing with private address", func() *elbv2.CreateLoadBalancerInput {
			in := privateNLB(e, "x", map[string]string{za: nthAddr(privA, 10)})
			in.Scheme = elbtypes.LoadBalancerSchemeEnumInternetFacing
			return in
		}(), "InvalidConfigurationRequest"},
		{"some with private address", privateNLB(e, "x", map[string]string{za: nthAddr(privA, 10), zb: ""}), "InvalidConfigurationRequest"},
		{"outside the subnet", privateNLB(e, "x", map[string]string{za: "10.0.200.10"}), "InvalidConfigurationRequest"},
		{"network address", privateNLB(e, "x", map[string]string{za: nthAddr(privA, 0)}), "InvalidConfigurationRequest"},
		{"reserved third", privateNLB(e, "x", map[string]string{za: nthAddr(privA, 3)}), "InvalidConfigurationRequest"},
		{"broadcast", privateNLB(e, "x", map[string]string{za: nthAddr(privA, -1)}), "InvalidConfigurationRequest"},
		{"malformed", privateNLB(e, "x", map[string]string{za: "10.0.0.300"}), "ValidationError"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := e.elb.CreateLoadBalancer(ctx(), c.in)
			wantCode(t, err, c.code)
		})
	}

	// AllocationIdNotFound is the SDK's typed error and names every ID.
	_, err := e.elb.CreateLoadBalancer(ctx(), eipNLB(e, "x", "eipalloc-000000000000000d1", "eipalloc-000000000000000d2"))
	var nf *elbtypes.AllocationIdNotFoundException
	if !errors.As(err, &nf) || !strings.Contains(nf.ErrorMessage(), "'eipalloc-000000000000000d1', 'eipalloc-000000000000000d2'") {
		t.Fatalf("want AllocationIdNotFoundException naming both IDs, got %v", err)
	}
	// Nothing was created or associated by the failures.
	if n := len(describeAddresses(t, e, &ec2.DescribeAddressesInput{Filters: []ec2types.Filter{filter("association-id", "*")}})); n != 0 {
		t.Fatalf("%d addresses associated after failed creates", n)
	}
	lbs := must[*elbv2.DescribeLoadBalancersOutput](t)(e.elb.DescribeLoadBalancers(ctx(), &elbv2.DescribeLoadBalancersInput{}))
	if len(lbs.LoadBalancers) != 0 {
		t.Fatalf("failed creates made %d load balancers", len(lbs.LoadBalancers))
	}
}

func TestNLBPrivateIPv4Addresses(t *testing.T) {
	e := newEnv(t)
	za, zb := region+"a", region+"b"
	privA, privB := subnetCIDR(t, e, e.fx.PrivateSubnets[za]), subnetCIDR(t, e, e.fx.PrivateSubnets[zb])
	// The first address an instance would get in zone a, and the last
	// usable one in zone b.
	ipA, ipB := nthAddr(privA, 4), nthAddr(privB, -2)
	lb := must[*elbv2.CreateLoadBalancerOutput](t)(e.elb.CreateLoadBalancer(ctx(), privateNLB(e, "pinned", map[string]string{za: ipA, zb: ipB}))).LoadBalancers[0]
	if got, want := zoneAddresses(lb), fmt.Sprintf("eu-west-1a=//%s eu-west-1b=//%s", ipA, ipB); got != want {
		t.Fatalf("addresses %s, want %s", got, want)
	}

	// The address is the load balancer's: another one cannot have it, and
	// instances launched into the subnet get other addresses.
	_, err := e.elb.CreateLoadBalancer(ctx(), privateNLB(e, "second", map[string]string{za: ipA}))
	wantCode(t, err, "InvalidConfigurationRequest")
	id := launch(t, e, cloudsimaws.LaunchSpec{SubnetID: e.fx.PrivateSubnets[za]})[0]
	inst, _ := e.emu.Instance(id)
	if inst.PrivateIP == ipA || !privA.Contains(netip.MustParseAddr(inst.PrivateIP)) {
		t.Fatalf("instance got %s next to the load balancer's %s", inst.PrivateIP, ipA)
	}
	_, err = e.elb.CreateLoadBalancer(ctx(), privateNLB(e, "second", map[string]string{za: inst.PrivateIP}))
	wantCode(t, err, "InvalidConfigurationRequest")

	// Deleting the load balancer frees the address.
	must[*elbv2.DeleteLoadBalancerOutput](t)(e.elb.DeleteLoadBalancer(ctx(), &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: lb.LoadBalancerArn}))
	second := must[*elbv2.CreateLoadBalancerOutput](t)(e.elb.CreateLoadBalancer(ctx(), privateNLB(e, "second", map[string]string{za: ipA}))).LoadBalancers[0]
	if got := zoneAddresses(second); got != "eu-west-1a=//"+ipA {
		t.Fatalf("second %s", got)
	}
}

func TestNLBSetSubnetsKeepsAddresses(t *testing.T) {
	e := newEnv(t)
	var allocs []string
	for range 3 {
		id, _ := allocate(t, e, nil)
		allocs = append(allocs, id)
	}
	lb := must[*elbv2.CreateLoadBalancerOutput](t)(e.elb.CreateLoadBalancer(ctx(), eipNLB(e, "grow", allocs[0], allocs[1]))).LoadBalancers[0]
	set := func(allocs ...string) (*elbv2.SetSubnetsOutput, error) {
		return e.elb.SetSubnets(ctx(), &elbv2.SetSubnetsInput{LoadBalancerArn: lb.LoadBalancerArn, SubnetMappings: eipNLB(e, "", allocs...).SubnetMappings})
	}
	_, err := set(allocs[2], allocs[1], allocs[0])
	wantCode(t, err, "InvalidConfigurationRequest")
	out := must[*elbv2.SetSubnetsOutput](t)(set(allocs[0], allocs[1], allocs[2]))
	if len(out.AvailabilityZones) != 3 || aws.ToString(out.AvailabilityZones[2].LoadBalancerAddresses[0].AllocationId) != allocs[2] {
		t.Fatalf("set subnets %+v", out.AvailabilityZones)
	}
	if n := len(describeAddresses(t, e, &ec2.DescribeAddressesInput{Filters: []ec2types.Filter{filter("association-id", "*")}})); n != 3 {
		t.Fatalf("%d addresses associated, want 3", n)
	}
}
