package aws

import (
	"maps"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

// withFamilies sets the Service's families as the apiserver fills them in.
func withFamilies(svc *v1.Service, fams ...v1.IPFamily) *v1.Service {
	svc.Spec.IPFamilies = fams
	policy := v1.IPFamilyPolicySingleStack
	if len(fams) == 2 {
		policy = v1.IPFamilyPolicyPreferDualStack
	}
	svc.Spec.IPFamilyPolicy = &policy
	return svc
}

var (
	v4   = []v1.IPFamily{v1.IPv4Protocol}
	v6   = []v1.IPFamily{v1.IPv6Protocol}
	v46  = []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol}
	v64  = []v1.IPFamily{v1.IPv6Protocol, v1.IPv4Protocol}
	none = []v1.IPFamily(nil)
)

// The NLB's IP address type: the annotation as the AWS Load Balancer
// Controller reads it, else the Service's families; what cannot be served
// is an error naming the field or annotation.
func TestIPAddressTypeOptions(t *testing.T) {
	ann := func(v string) map[string]string { return map[string]string{string(annotationIPAddressType): v} }
	for _, c := range []struct {
		name   string
		fams   []v1.IPFamily
		ann    map[string]string
		ports  []v1.ServicePort
		want   elbv2types.IpAddressType
		asked  bool
		ranges []string
		err    string
	}{
		{name: "no families (older cluster)", fams: none, want: "ipv4", ranges: []string{"0.0.0.0/0"}},
		{name: "IPv4", fams: v4, want: "ipv4", ranges: []string{"0.0.0.0/0"}},
		{name: "dual-stack, IPv4 first", fams: v46, want: "dualstack", ranges: []string{"0.0.0.0/0", "::/0"}},
		{name: "dual-stack, IPv6 first", fams: v64, want: "dualstack", ranges: []string{"0.0.0.0/0", "::/0"}},
		{name: "annotation ipv4 on a dual-stack Service", fams: v46, ann: ann("ipv4"), want: "ipv4", asked: true, ranges: []string{"0.0.0.0/0"}},
		{name: "annotation dualstack on an IPv4 Service", fams: v4, ann: ann("dualstack"), want: "dualstack", asked: true, ranges: []string{"0.0.0.0/0", "::/0"}},
		{name: "given source ranges are kept", fams: v46, ann: map[string]string{v1.AnnotationLoadBalancerSourceRangesKey: "10.0.0.0/8"}, want: "dualstack", ranges: []string{"10.0.0.0/8"}},
		{name: "IPv6-only", fams: v6, err: "spec.ipFamilies is [IPv6]"},
		{name: "IPv6-only with the annotation", fams: v6, ann: ann("dualstack"), err: "spec.ipFamilies is [IPv6]"},
		{name: "unknown value", fams: v4, ann: ann("ipv6"), err: string(annotationIPAddressType)},
		{name: "ALB-only value", fams: v46, ann: ann("dualstack-without-public-ipv4"), err: string(annotationIPAddressType)},
		{name: "UDP on dualstack", fams: v46, ports: []v1.ServicePort{udpPort(53, 30053)}, err: "port 53 is UDP"},
		{name: "UDP on ipv4 by annotation", fams: v46, ann: ann("ipv4"), ports: []v1.ServicePort{udpPort(53, 30053)}, want: "ipv4", asked: true, ranges: []string{"0.0.0.0/0"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			svc := withFamilies(lbService(c.ann, c.ports...), c.fams...)
			opts, err := parseLBOptions(svc)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one with %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ranges []string
			for _, r := range opts.sourceRanges {
				ranges = append(ranges, r.String())
			}
			if opts.addressType() != c.want || opts.ipTypeAsked != c.asked || !slices.Equal(ranges, c.ranges) {
				t.Fatalf("type %s asked %v ranges %v, want %s %v %v", opts.addressType(), opts.ipTypeAsked, ranges, c.want, c.asked, c.ranges)
			}
		})
	}
}

// A Classic ELB has no IPv6 in a VPC: asked for one by the annotation or
// an IPv6-only Service, it is refused; a dual-stack Service gets an IPv4
// one, as upstream's.
func TestClassicFamilies(t *testing.T) {
	classic := map[string]string{string(annotationLBType): "classic"}
	for _, c := range []struct {
		fams []v1.IPFamily
		ann  string
		err  string
	}{
		{fams: v46},
		{fams: v64},
		{fams: v46, ann: "ipv4"},
		{fams: v46, ann: "dualstack", err: "a Classic ELB has no IPv6"},
		{fams: v6, err: "spec.ipFamilies is [IPv6]"},
	} {
		ann := maps.Clone(classic)
		if c.ann != "" {
			ann[string(annotationIPAddressType)] = c.ann
		}
		_, err := parseCLBOptions(withFamilies(lbService(ann), c.fams...))
		if (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%v %q: error %v, want %q", c.fams, c.ann, err, c.err)
		}
	}
}

// zoneIPv6 are the NLB's IPv6 addresses, one per zone.
func zoneIPv6(lb elbv2types.LoadBalancer) []string {
	var out []string
	for _, z := range lb.AvailabilityZones {
		for _, a := range z.LoadBalancerAddresses {
			if v := aws.ToString(a.IPv6Address); v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}

// A dual-stack Service gets a dualstack NLB: IPv6 addresses in its
// subnets, ::/0 next to 0.0.0.0/0 in its security group, IPv4 target
// groups of instances. Dropping IPv6 turns it back to ipv4 in place with
// one SetIpAddressType, and the ::/0 rules go.
func TestDualStackNLB(t *testing.T) {
	e := newLBEnv(t)
	nodes := e.nodes(2)
	svc := withFamilies(lbService(nil, tcpPort(80, 30080)), v46...)
	e.srv.ResetCalls()
	st := e.ensure(svc, nodes)
	if got := e.mutations(); got["elbv2:SetIpAddressType"] != 0 {
		t.Errorf("a new NLB had its type set after creation: %v", got)
	}
	v := e.view(svc)
	if v.lb.IpAddressType != elbv2types.IpAddressTypeDualstack || len(zoneIPv6(v.lb)) != len(v.lb.AvailabilityZones) {
		t.Fatalf("NLB type %s, IPv6 addresses %v", v.lb.IpAddressType, zoneIPv6(v.lb))
	}
	for _, a := range zoneIPv6(v.lb) {
		if !netip.MustParseAddr(a).Is6() {
			t.Errorf("IPv6 address %s", a)
		}
	}
	if len(st.Ingress) != 1 || st.Ingress[0].Hostname != aws.ToString(v.lb.DNSName) {
		t.Errorf("status %+v: the NLB's name serves both families", st.Ingress)
	}
	if got, want := v.sgIngress(), []string{"tcp/80<-0.0.0.0/0", "tcp/80<-::/0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("load balancer SG ingress %v, want %v", got, want)
	}
	for _, tg := range v.tgs {
		if tg.IpAddressType != elbv2types.TargetGroupIpAddressTypeEnumIpv4 || tg.TargetType != elbv2types.TargetTypeEnumInstance {
			t.Errorf("target group %s: %s %s", aws.ToString(tg.TargetGroupName), tg.IpAddressType, tg.TargetType)
		}
	}
	e.srv.ResetCalls()
	e.ensure(svc, nodes)
	if m := e.mutations(); len(m) != 0 {
		t.Errorf("re-ensure made mutating calls: %v", m)
	}

	withFamilies(svc, v4...)
	e.srv.ResetCalls()
	e.ensure(svc, nodes)
	if got, want := e.mutations(), map[string]int{"elbv2:SetIpAddressType": 1, "ec2:RevokeSecurityGroupIngress": 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("to IPv4: mutations %v, want %v", got, want)
	}
	v = e.view(svc)
	if v.lb.IpAddressType != elbv2types.IpAddressTypeIpv4 || len(zoneIPv6(v.lb)) != 0 || !reflect.DeepEqual(v.sgIngress(), []string{"tcp/80<-0.0.0.0/0"}) {
		t.Errorf("after IPv4: %s %v %v", v.lb.IpAddressType, zoneIPv6(v.lb), v.sgIngress())
	}
	// The annotation turns it dualstack whatever the families.
	svc.Annotations = map[string]string{string(annotationIPAddressType): "dualstack"}
	e.ensure(svc, nodes)
	if v = e.view(svc); v.lb.IpAddressType != elbv2types.IpAddressTypeDualstack {
		t.Errorf("annotation dualstack: %s", v.lb.IpAddressType)
	}
}

// What cannot be served creates nothing: an IPv6-only Service, and a
// dual-stack one whose NLB subnets lack IPv6 blocks (ELBv2's own refusal,
// passed on with its text).
func TestDualStackRefusals(t *testing.T) {
	e := newLBEnv(t)
	nodes := e.nodes(1)
	before := e.srv.Resources()
	if _, err := e.lb.EnsureLoadBalancer(e.ctx, "kubernetes", withFamilies(lbService(nil), v6...), nodes); err == nil || !strings.Contains(err.Error(), "spec.ipFamilies is [IPv6]") {
		t.Fatalf("IPv6-only: %v", err)
	}
	if m := e.mutations(); len(m) != 0 {
		t.Errorf("IPv6-only Service: mutations %v", m)
	}
	if after := e.srv.Resources(); len(after) != len(before) {
		t.Errorf("IPv6-only Service left %d resources, had %d", len(after), len(before))
	}

	v4only, err := e.emu.CreateSubnet(cloudsimSubnet(e, 200))
	if err != nil {
		t.Fatal(err)
	}
	svc := withFamilies(lbService(map[string]string{string(annotationSubnets): v4only}), v46...)
	_, err = e.lb.EnsureLoadBalancer(e.ctx, "kubernetes", svc, nodes)
	if err == nil || !strings.Contains(err.Error(), "associated IPv6 CIDR block") {
		t.Fatalf("dualstack in an IPv4-only subnet: %v", err)
	}
}

// An NLB upstream made (ipv4, named a<uid>) for a dual-stack Service is
// taken over as it is: the switch gives it no IPv6 addresses. The
// annotation turns it dualstack.
func TestAdoptedNLBStaysIPv4(t *testing.T) {
	e, c, insts, ns := switchEnv(t)
	svc := withFamilies(switchService("web", "7234abcd-0000-1111-2222-333344445555", map[string]string{string(annotationLBType): lbTypeNLB}, tcpPort(80, 30080)), v46...)
	up, err := c.MakeUpstreamLoadBalancer(svc, switchCluster, insts)
	if err != nil {
		t.Fatal(err)
	}
	svc.Status.LoadBalancer = up.Status
	c.Server().ResetCalls()
	e.ensure(svc, ns)
	if m := e.mutations(); len(m) != 0 {
		t.Errorf("adopting upstream's NLB of a dual-stack Service wrote %v", m)
	}
	lbType := func() elbv2types.IpAddressType {
		out, err := e.api.elbv2.DescribeLoadBalancers(e.ctx, &elbv2.DescribeLoadBalancersInput{Names: []string{upstreamNLBName(svc)}})
		if err != nil {
			t.Fatal(err)
		}
		return out.LoadBalancers[0].IpAddressType
	}
	if got := lbType(); got != elbv2types.IpAddressTypeIpv4 {
		t.Fatalf("adopted NLB is %s", got)
	}
	svc.Annotations[string(annotationIPAddressType)] = "dualstack"
	c.Server().ResetCalls()
	e.ensure(svc, ns)
	if got := e.mutations(); !reflect.DeepEqual(got, map[string]int{"elbv2:SetIpAddressType": 1}) {
		t.Errorf("annotation dualstack on the adopted NLB: mutations %v", got)
	}
	if got := lbType(); got != elbv2types.IpAddressTypeDualstack {
		t.Fatalf("after the annotation the NLB is %s", got)
	}
	now := metav1.Now()
	svc.DeletionTimestamp = &now
	e.deleteAll(svc)
}

// cloudsimSubnet is an IPv4-only subnet of the fixture VPC in its first
// zone: the n-th /24 of the VPC's block.
func cloudsimSubnet(e *lbEnv, n int) cloudsimaws.SubnetSpec {
	b := netip.MustParsePrefix(e.fx.VPCCIDR).Addr().As4()
	b[2] = byte(n)
	return cloudsimaws.SubnetSpec{VPCID: e.fx.VPCID, Zone: e.emu.Zones()[0], CIDR: netip.PrefixFrom(netip.AddrFrom4(b), 24).String()}
}
