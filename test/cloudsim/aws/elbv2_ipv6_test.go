package aws_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

// zoneIPv6 is each zone's IPv6 load balancer address, by subnet.
func zoneIPv6(lb elbtypes.LoadBalancer) map[string]string {
	out := map[string]string{}
	for _, z := range lb.AvailabilityZones {
		for _, a := range z.LoadBalancerAddresses {
			if v := aws.ToString(a.IPv6Address); v != "" {
				out[aws.ToString(z.SubnetId)] = v
			}
		}
	}
	return out
}

func describeLB(t *testing.T, e *env, arn *string) elbtypes.LoadBalancer {
	t.Helper()
	return must[*elbv2.DescribeLoadBalancersOutput](t)(e.elb.DescribeLoadBalancers(ctx(), &elbv2.DescribeLoadBalancersInput{LoadBalancerArns: []string{aws.ToString(arn)}})).LoadBalancers[0]
}

// A dualstack NLB gets an IPv6 address in each subnet's IPv6 block;
// SetIpAddressType turns it to ipv4 and back, releasing and taking the
// addresses; the NLB's values are ELBv2's.
func TestDualstackNLB(t *testing.T) {
	e := newEnv(t)
	in := nlbInput(e, "dual")
	in.IpAddressType = elbtypes.IpAddressTypeDualstack
	lb := must[*elbv2.CreateLoadBalancerOutput](t)(e.elb.CreateLoadBalancer(ctx(), in)).LoadBalancers[0]
	if lb.IpAddressType != elbtypes.IpAddressTypeDualstack {
		t.Fatalf("IpAddressType %q", lb.IpAddressType)
	}
	addrs := zoneIPv6(lb)
	if len(addrs) != len(e.publicSubnets()) {
		t.Fatalf("IPv6 addresses %v", addrs)
	}
	for subnet, a := range addrs {
		if !subnetIPv6(t, e, subnet).Contains(netip.MustParseAddr(a)) {
			t.Errorf("subnet %s: address %s is outside its IPv6 block", subnet, a)
		}
	}
	if got := zoneIPv6(describeLB(t, e, lb.LoadBalancerArn)); len(got) != len(addrs) {
		t.Fatalf("described IPv6 addresses %v, created with %v", got, addrs)
	}

	out := must[*elbv2.SetIpAddressTypeOutput](t)(e.elb.SetIpAddressType(ctx(), &elbv2.SetIpAddressTypeInput{LoadBalancerArn: lb.LoadBalancerArn, IpAddressType: elbtypes.IpAddressTypeIpv4}))
	if out.IpAddressType != elbtypes.IpAddressTypeIpv4 {
		t.Fatalf("SetIpAddressType answered %q", out.IpAddressType)
	}
	if got := describeLB(t, e, lb.LoadBalancerArn); got.IpAddressType != elbtypes.IpAddressTypeIpv4 || len(zoneIPv6(got)) != 0 {
		t.Fatalf("after ipv4: %q %v", got.IpAddressType, zoneIPv6(got))
	}
	must[*elbv2.SetIpAddressTypeOutput](t)(e.elb.SetIpAddressType(ctx(), &elbv2.SetIpAddressTypeInput{LoadBalancerArn: lb.LoadBalancerArn, IpAddressType: elbtypes.IpAddressTypeDualstack}))
	if got := describeLB(t, e, lb.LoadBalancerArn); got.IpAddressType != elbtypes.IpAddressTypeDualstack || len(zoneIPv6(got)) != len(addrs) {
		t.Fatalf("after dualstack again: %q %v", got.IpAddressType, zoneIPv6(got))
	}
	// Deleting it releases the addresses: nothing is left behind.
	must[*elbv2.DeleteLoadBalancerOutput](t)(e.elb.DeleteLoadBalancer(ctx(), &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: lb.LoadBalancerArn}))
	again := must[*elbv2.CreateLoadBalancerOutput](t)(e.elb.CreateLoadBalancer(ctx(), in)).LoadBalancers[0]
	if got := zoneIPv6(again); len(got) != len(addrs) {
		t.Fatalf("re-created: %v", got)
	}
	for subnet, a := range zoneIPv6(again) {
		if a != addrs[subnet] {
			t.Errorf("subnet %s: re-created NLB got %s, the released address was %s", subnet, a, addrs[subnet])
		}
	}
}

// What ELBv2 refuses around dualstack, each with its code.
func TestDualstackNLBErrors(t *testing.T) {
	e := newEnv(t)
	v4only, err := e.emu.CreateSubnet(cloudsimaws.SubnetSpec{VPCID: e.fx.VPCID, Zone: region + "a", CIDR: nthSubnet(t, e, 200)})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		edit func(*elbv2.CreateLoadBalancerInput)
		code string
	}{
		{"unknown type", func(in *elbv2.CreateLoadBalancerInput) { in.IpAddressType = "ipv6" }, "ValidationError"},
		{"ALB-only type on an NLB", func(in *elbv2.CreateLoadBalancerInput) { in.IpAddressType = "dualstack-without-public-ipv4" }, "ValidationError"},
		{"subnet without IPv6", func(in *elbv2.CreateLoadBalancerInput) {
			in.IpAddressType = elbtypes.IpAddressTypeDualstack
			in.Subnets = []string{v4only}
		}, "InvalidSubnet"},
		{"source NAT prefix on ipv4", func(in *elbv2.CreateLoadBalancerInput) {
			in.EnablePrefixForIpv6SourceNat = elbtypes.EnablePrefixForIpv6SourceNatEnumOn
		}, "ValidationError"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := nlbInput(e, "bad")
			c.edit(in)
			_, err := e.elb.CreateLoadBalancer(ctx(), in)
			if errorCode(err) != c.code {
				t.Fatalf("got %v, want %s", err, c.code)
			}
		})
	}

	// An ipv4 NLB in an IPv4-only subnet cannot become dualstack.
	in := nlbInput(e, "v4")
	in.Subnets = []string{v4only}
	lb := must[*elbv2.CreateLoadBalancerOutput](t)(e.elb.CreateLoadBalancer(ctx(), in)).LoadBalancers[0]
	if _, err := e.elb.SetIpAddressType(ctx(), &elbv2.SetIpAddressTypeInput{LoadBalancerArn: lb.LoadBalancerArn, IpAddressType: elbtypes.IpAddressTypeDualstack}); errorCode(err) != "InvalidSubnet" {
		t.Fatalf("SetIpAddressType dualstack in an IPv4-only subnet: %v", err)
	}
	if _, err := e.elb.SetIpAddressType(ctx(), &elbv2.SetIpAddressTypeInput{LoadBalancerArn: aws.String(aws.ToString(lb.LoadBalancerArn) + "0"), IpAddressType: elbtypes.IpAddressTypeIpv4}); errorCode(err) != "LoadBalancerNotFound" {
		t.Fatalf("SetIpAddressType of an unknown load balancer: %v", err)
	}

	// A UDP listener on a dualstack NLB needs the source NAT prefix, and
	// an NLB with one cannot become dualstack without it.
	dual := nlbInput(e, "dual-udp")
	dual.IpAddressType = elbtypes.IpAddressTypeDualstack
	dlb := must[*elbv2.CreateLoadBalancerOutput](t)(e.elb.CreateLoadBalancer(ctx(), dual)).LoadBalancers[0]
	tg := must[*elbv2.CreateTargetGroupOutput](t)(e.elb.CreateTargetGroup(ctx(), &elbv2.CreateTargetGroupInput{
		Name: aws.String("udp"), Protocol: elbtypes.ProtocolEnumUdp, Port: aws.Int32(53), VpcId: aws.String(e.fx.VPCID), TargetType: elbtypes.TargetTypeEnumInstance,
	})).TargetGroups[0]
	udp := forwardListener(aws.ToString(dlb.LoadBalancerArn), aws.ToString(tg.TargetGroupArn), 53)
	udp.Protocol = elbtypes.ProtocolEnumUdp
	if _, err := e.elb.CreateListener(ctx(), udp); errorCode(err) != "InvalidConfigurationRequest" {
		t.Fatalf("UDP listener on a dualstack NLB: %v", err)
	}
	must[*elbv2.SetIpAddressTypeOutput](t)(e.elb.SetIpAddressType(ctx(), &elbv2.SetIpAddressTypeInput{LoadBalancerArn: dlb.LoadBalancerArn, IpAddressType: elbtypes.IpAddressTypeIpv4}))
	must[*elbv2.CreateListenerOutput](t)(e.elb.CreateListener(ctx(), udp))
	if _, err := e.elb.SetIpAddressType(ctx(), &elbv2.SetIpAddressTypeInput{LoadBalancerArn: dlb.LoadBalancerArn, IpAddressType: elbtypes.IpAddressTypeDualstack}); errorCode(err) != "InvalidConfigurationRequest" {
		t.Fatalf("SetIpAddressType dualstack with a UDP listener: %v", err)
	}
}

// nthSubnet is a free /24 of the fixture VPC's IPv4 block.
func nthSubnet(t *testing.T, e *env, n int) string {
	t.Helper()
	vpc := netip.MustParsePrefix(e.fx.VPCCIDR)
	b := vpc.Addr().As4()
	b[2] = byte(n)
	return netip.PrefixFrom(netip.AddrFrom4(b), 24).String()
}

// Security group rules take IPv6 sources in Ipv6Ranges only: an IPv6 CIDR
// in IpRanges is EC2's "CIDR block ::/0 is malformed"; Ipv6Ranges are
// canonicalised, reported back as ipv6Ranges and found by the ipv6-cidr
// filter.
func TestSecurityGroupIPv6Ranges(t *testing.T) {
	e := newEnv(t)
	sg := must[*ec2.CreateSecurityGroupOutput](t)(e.ec2.CreateSecurityGroup(ctx(), &ec2.CreateSecurityGroupInput{
		GroupName: aws.String("v6"), Description: aws.String("v6"), VpcId: aws.String(e.fx.VPCID),
	})).GroupId
	perm := func(v4, v6 string) []ec2types.IpPermission {
		p := ec2types.IpPermission{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(80), ToPort: aws.Int32(80)}
		if v4 != "" {
			p.IpRanges = []ec2types.IpRange{{CidrIp: aws.String(v4)}}
		}
		if v6 != "" {
			p.Ipv6Ranges = []ec2types.Ipv6Range{{CidrIpv6: aws.String(v6)}}
		}
		return []ec2types.IpPermission{p}
	}
	_, err := e.ec2.AuthorizeSecurityGroupIngress(ctx(), &ec2.AuthorizeSecurityGroupIngressInput{GroupId: sg, IpPermissions: perm("::/0", "")})
	if errorCode(err) != "InvalidParameterValue" || !strings.Contains(err.Error(), "CIDR block ::/0 is malformed") {
		t.Fatalf("IPv6 CIDR in IpRanges: %v", err)
	}
	if _, err := e.ec2.AuthorizeSecurityGroupIngress(ctx(), &ec2.AuthorizeSecurityGroupIngressInput{GroupId: sg, IpPermissions: perm("", "10.0.0.0/8")}); errorCode(err) != "InvalidParameterValue" {
		t.Fatalf("IPv4 CIDR in Ipv6Ranges: %v", err)
	}
	must[*ec2.AuthorizeSecurityGroupIngressOutput](t)(e.ec2.AuthorizeSecurityGroupIngress(ctx(), &ec2.AuthorizeSecurityGroupIngressInput{GroupId: sg, IpPermissions: perm("0.0.0.0/0", "2001:db8::1/64")}))
	if _, err := e.ec2.AuthorizeSecurityGroupIngress(ctx(), &ec2.AuthorizeSecurityGroupIngressInput{GroupId: sg, IpPermissions: perm("", "2001:0db8:0::/64")}); errorCode(err) != "InvalidPermission.Duplicate" {
		t.Fatalf("non-canonical spelling of an existing IPv6 rule: %v", err)
	}
	out := must[*ec2.DescribeSecurityGroupsOutput](t)(e.ec2.DescribeSecurityGroups(ctx(), &ec2.DescribeSecurityGroupsInput{
		Filters: []ec2types.Filter{filter("ip-permission.ipv6-cidr", "2001:db8::/64")},
	}))
	if len(out.SecurityGroups) != 1 || aws.ToString(out.SecurityGroups[0].GroupId) != aws.ToString(sg) {
		t.Fatalf("ipv6-cidr filter: %+v", out.SecurityGroups)
	}
	p := out.SecurityGroups[0].IpPermissions
	if len(p) != 1 || len(p[0].IpRanges) != 1 || len(p[0].Ipv6Ranges) != 1 || aws.ToString(p[0].Ipv6Ranges[0].CidrIpv6) != "2001:db8::/64" {
		t.Fatalf("permissions %+v", p)
	}
	must[*ec2.RevokeSecurityGroupIngressOutput](t)(e.ec2.RevokeSecurityGroupIngress(ctx(), &ec2.RevokeSecurityGroupIngressInput{GroupId: sg, IpPermissions: perm("", "2001:db8::/64")}))
	out = must[*ec2.DescribeSecurityGroupsOutput](t)(e.ec2.DescribeSecurityGroups(ctx(), &ec2.DescribeSecurityGroupsInput{GroupIds: []string{aws.ToString(sg)}}))
	if p := out.SecurityGroups[0].IpPermissions; len(p) != 1 || len(p[0].Ipv6Ranges) != 0 || len(p[0].IpRanges) != 1 {
		t.Fatalf("after revoking the IPv6 rule: %+v", p)
	}
}

// IPv6 target groups: their type is reported and fixed; they attach only
// to dualstack NLBs (which then cannot go back to ipv4); an instance
// target needs an IPv6 address, an IP target must be IPv6.
func TestIPv6TargetGroups(t *testing.T) {
	e := newEnv(t)
	mk := func(name, typ, ipType string) elbtypes.TargetGroup {
		return must[*elbv2.CreateTargetGroupOutput](t)(e.elb.CreateTargetGroup(ctx(), &elbv2.CreateTargetGroupInput{
			Name: aws.String(name), Protocol: elbtypes.ProtocolEnumTcp, Port: aws.Int32(80), VpcId: aws.String(e.fx.VPCID),
			TargetType: elbtypes.TargetTypeEnum(typ), IpAddressType: elbtypes.TargetGroupIpAddressTypeEnum(ipType),
		})).TargetGroups[0]
	}
	v4 := mk("v4", "instance", "")
	v6 := mk("v6", "instance", "ipv6")
	if v4.IpAddressType != elbtypes.TargetGroupIpAddressTypeEnumIpv4 || v6.IpAddressType != elbtypes.TargetGroupIpAddressTypeEnumIpv6 {
		t.Fatalf("IpAddressType %q %q", v4.IpAddressType, v6.IpAddressType)
	}
	if _, err := e.elb.CreateTargetGroup(ctx(), &elbv2.CreateTargetGroupInput{
		Name: aws.String("bad"), Protocol: elbtypes.ProtocolEnumTcp, Port: aws.Int32(80), VpcId: aws.String(e.fx.VPCID), IpAddressType: "dualstack",
	}); errorCode(err) != "ValidationError" {
		t.Fatalf("dualstack target group: %v", err)
	}

	plain := createNLB(t, e, "plain")
	if _, err := e.elb.CreateListener(ctx(), forwardListener(aws.ToString(plain.LoadBalancerArn), aws.ToString(v6.TargetGroupArn), 80)); errorCode(err) != "InvalidConfigurationRequest" {
		t.Fatalf("IPv6 target group on an ipv4 NLB: %v", err)
	}
	in := nlbInput(e, "dual")
	in.IpAddressType = elbtypes.IpAddressTypeDualstack
	dual := must[*elbv2.CreateLoadBalancerOutput](t)(e.elb.CreateLoadBalancer(ctx(), in)).LoadBalancers[0]
	must[*elbv2.CreateListenerOutput](t)(e.elb.CreateListener(ctx(), forwardListener(aws.ToString(dual.LoadBalancerArn), aws.ToString(v6.TargetGroupArn), 80)))
	if _, err := e.elb.SetIpAddressType(ctx(), &elbv2.SetIpAddressTypeInput{LoadBalancerArn: dual.LoadBalancerArn, IpAddressType: elbtypes.IpAddressTypeIpv4}); errorCode(err) != "InvalidConfigurationRequest" {
		t.Fatalf("ipv4 with an IPv6 target group attached: %v", err)
	}

	v4only := launch(t, e, cloudsimaws.LaunchSpec{Count: 1})[0]
	withV6 := launch(t, e, cloudsimaws.LaunchSpec{Count: 1, IPv6: true})[0]
	reg := func(tg elbtypes.TargetGroup, id string) error {
		_, err := e.elb.RegisterTargets(ctx(), &elbv2.RegisterTargetsInput{TargetGroupArn: tg.TargetGroupArn, Targets: []elbtypes.TargetDescription{{Id: aws.String(id)}}})
		return err
	}
	if err := reg(v6, v4only); errorCode(err) != "InvalidTarget" || !strings.Contains(err.Error(), "missing primary IPv6 addresses") {
		t.Fatalf("instance without IPv6 in an IPv6 target group: %v", err)
	}
	ok(t, reg(v6, withV6))
	ok(t, reg(v4, v4only))
	ipv6IP := mk("v6ip", "ip", "ipv6")
	if err := reg(ipv6IP, "10.0.0.10"); errorCode(err) != "InvalidTarget" {
		t.Fatalf("IPv4 address in an IPv6 target group: %v", err)
	}
	info, _ := e.emu.Instance(withV6)
	ok(t, reg(ipv6IP, info.IPv6Addresses[0]))
}
