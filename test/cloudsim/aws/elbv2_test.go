package aws_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

func (e *env) publicSubnets() []string {
	var ids []string
	for _, z := range e.emu.Zones() {
		ids = append(ids, e.fx.PublicSubnets[z])
	}
	return ids
}

func nlbInput(e *env, name string) *elbv2.CreateLoadBalancerInput {
	return &elbv2.CreateLoadBalancerInput{
		Name:    aws.String(name),
		Type:    elbtypes.LoadBalancerTypeEnumNetwork,
		Scheme:  elbtypes.LoadBalancerSchemeEnumInternetFacing,
		Subnets: e.publicSubnets(),
		Tags:    []elbtypes.Tag{{Key: aws.String("kubernetes.io/service-name"), Value: aws.String("default/web")}},
	}
}

func createNLB(t *testing.T, e *env, name string) elbtypes.LoadBalancer {
	t.Helper()
	out := must[*elbv2.CreateLoadBalancerOutput](t)(e.elb.CreateLoadBalancer(ctx(), nlbInput(e, name)))
	return out.LoadBalancers[0]
}

func createTG(t *testing.T, e *env, name string, port int32) elbtypes.TargetGroup {
	t.Helper()
	out := must[*elbv2.CreateTargetGroupOutput](t)(e.elb.CreateTargetGroup(ctx(), &elbv2.CreateTargetGroupInput{
		Name: aws.String(name), Protocol: elbtypes.ProtocolEnumTcp, Port: aws.Int32(port), VpcId: aws.String(e.fx.VPCID),
		TargetType: elbtypes.TargetTypeEnumInstance,
	}))
	return out.TargetGroups[0]
}

func createListener(t *testing.T, e *env, lbARN, tgARN string, port int32) elbtypes.Listener {
	t.Helper()
	out := must[*elbv2.CreateListenerOutput](t)(e.elb.CreateListener(ctx(), forwardListener(lbARN, tgARN, port)))
	return out.Listeners[0]
}

func forwardListener(lbARN, tgARN string, port int32) *elbv2.CreateListenerInput {
	return &elbv2.CreateListenerInput{
		LoadBalancerArn: aws.String(lbARN), Protocol: elbtypes.ProtocolEnumTcp, Port: aws.Int32(port),
		DefaultActions: []elbtypes.Action{{Type: elbtypes.ActionTypeEnumForward, TargetGroupArn: aws.String(tgARN)}},
	}
}

func TestCreateLoadBalancer(t *testing.T) {
	e := newEnv(t)
	lb := createNLB(t, e, "k8s-default-web")

	arnRE := regexp.MustCompile(`^arn:aws:elasticloadbalancing:eu-west-1:123456789012:loadbalancer/net/k8s-default-web/[0-9a-f]{16}$`)
	dnsRE := regexp.MustCompile(`^k8s-default-web-[0-9a-f]{16}\.elb\.eu-west-1\.amazonaws\.com$`)
	if !arnRE.MatchString(aws.ToString(lb.LoadBalancerArn)) || !dnsRE.MatchString(aws.ToString(lb.DNSName)) {
		t.Fatalf("arn %s dns %s", aws.ToString(lb.LoadBalancerArn), aws.ToString(lb.DNSName))
	}
	if lb.State.Code != elbtypes.LoadBalancerStateEnumActive || lb.Type != elbtypes.LoadBalancerTypeEnumNetwork ||
		lb.Scheme != elbtypes.LoadBalancerSchemeEnumInternetFacing || aws.ToString(lb.VpcId) != e.fx.VPCID ||
		aws.ToString(lb.CanonicalHostedZoneId) != "Z2IFOLAFXWLO4F" || lb.CreatedTime == nil {
		t.Fatalf("load balancer %+v", lb)
	}
	var zones []string
	for _, az := range lb.AvailabilityZones {
		zones = append(zones, aws.ToString(az.ZoneName)+"="+aws.ToString(az.SubnetId))
	}
	want := fmt.Sprintf("[eu-west-1a=%s eu-west-1b=%s eu-west-1c=%s]", e.fx.PublicSubnets[region+"a"], e.fx.PublicSubnets[region+"b"], e.fx.PublicSubnets[region+"c"])
	if fmt.Sprint(zones) != want {
		t.Fatalf("zones %v", zones)
	}

	// Identical settings: the same load balancer comes back.
	again := createNLB(t, e, "k8s-default-web")
	if aws.ToString(again.LoadBalancerArn) != aws.ToString(lb.LoadBalancerArn) {
		t.Fatal("identical create made a second load balancer")
	}
	in := nlbInput(e, "k8s-default-web")
	in.Scheme = elbtypes.LoadBalancerSchemeEnumInternal
	_, err := e.elb.CreateLoadBalancer(ctx(), in)
	wantCode(t, err, "DuplicateLoadBalancerName")

	for _, tc := range []struct {
		mutate func(*elbv2.CreateLoadBalancerInput)
		code   string
	}{
		{func(in *elbv2.CreateLoadBalancerInput) { in.Name = aws.String(strings.Repeat("x", 33)) }, "ValidationError"},
		{func(in *elbv2.CreateLoadBalancerInput) { in.Name = aws.String("bad_name") }, "ValidationError"},
		{func(in *elbv2.CreateLoadBalancerInput) { in.Name = aws.String("-dash") }, "ValidationError"},
		{func(in *elbv2.CreateLoadBalancerInput) { in.Subnets = []string{"subnet-00000000000000999"} }, "SubnetNotFound"},
		{func(in *elbv2.CreateLoadBalancerInput) { in.Subnets = nil }, "ValidationError"},
		{func(in *elbv2.CreateLoadBalancerInput) {
			in.Subnets = []string{e.fx.PublicSubnets[region+"a"], e.fx.PrivateSubnets[region+"a"]}
		}, "InvalidConfigurationRequest"},
		{func(in *elbv2.CreateLoadBalancerInput) { in.SecurityGroups = []string{"sg-0123456789abcdef0"} }, "InvalidSecurityGroup"},
		{func(in *elbv2.CreateLoadBalancerInput) {
			in.Type = elbtypes.LoadBalancerTypeEnumApplication
			in.Subnets = in.Subnets[:1]
		}, "ValidationError"},
	} {
		in := nlbInput(e, "other")
		tc.mutate(in)
		_, err := e.elb.CreateLoadBalancer(ctx(), in)
		wantCode(t, err, tc.code)
	}

	// Subnet mappings work like subnets; an internal ALB gets ALB-style DNS.
	alb := must[*elbv2.CreateLoadBalancerOutput](t)(e.elb.CreateLoadBalancer(ctx(), &elbv2.CreateLoadBalancerInput{
		Name: aws.String("alb"), Scheme: elbtypes.LoadBalancerSchemeEnumInternal, SecurityGroups: []string{e.fx.NodeSecurityGroupID},
		SubnetMappings: []elbtypes.SubnetMapping{{SubnetId: aws.String(e.fx.PrivateSubnets[region+"a"])}, {SubnetId: aws.String(e.fx.PrivateSubnets[region+"b"])}},
	})).LoadBalancers[0]
	if alb.Type != elbtypes.LoadBalancerTypeEnumApplication || !strings.HasPrefix(aws.ToString(alb.DNSName), "internal-alb-") ||
		!strings.Contains(aws.ToString(alb.LoadBalancerArn), ":loadbalancer/app/alb/") || len(alb.SecurityGroups) != 1 {
		t.Fatalf("alb %+v", alb)
	}
}

func TestDescribeLoadBalancers(t *testing.T) {
	e := newEnv(t)
	var arns []string
	for i := range 7 {
		arns = append(arns, aws.ToString(createNLB(t, e, fmt.Sprintf("lb-%d", i)).LoadBalancerArn))
	}
	var got []string
	pages := 0
	p := elbv2.NewDescribeLoadBalancersPaginator(e.elb, &elbv2.DescribeLoadBalancersInput{PageSize: aws.Int32(3)})
	for p.HasMorePages() {
		out := must[*elbv2.DescribeLoadBalancersOutput](t)(p.NextPage(ctx()))
		pages++
		for _, lb := range out.LoadBalancers {
			got = append(got, aws.ToString(lb.LoadBalancerArn))
		}
	}
	if pages != 3 || fmt.Sprint(got) != fmt.Sprint(arns) {
		t.Fatalf("%d pages: %v", pages, got)
	}

	out := must[*elbv2.DescribeLoadBalancersOutput](t)(e.elb.DescribeLoadBalancers(ctx(), &elbv2.DescribeLoadBalancersInput{Names: []string{"lb-3", "lb-5"}}))
	if len(out.LoadBalancers) != 2 || aws.ToString(out.LoadBalancers[1].LoadBalancerName) != "lb-5" {
		t.Fatalf("by name: %+v", out.LoadBalancers)
	}
	out = must[*elbv2.DescribeLoadBalancersOutput](t)(e.elb.DescribeLoadBalancers(ctx(), &elbv2.DescribeLoadBalancersInput{LoadBalancerArns: arns[:1]}))
	if len(out.LoadBalancers) != 1 || aws.ToString(out.LoadBalancers[0].LoadBalancerName) != "lb-0" {
		t.Fatalf("by arn: %+v", out.LoadBalancers)
	}
	_, err := e.elb.DescribeLoadBalancers(ctx(), &elbv2.DescribeLoadBalancersInput{Names: []string{"lb-3", "missing"}})
	wantCode(t, err, "LoadBalancerNotFound")
	_, err = e.elb.DescribeLoadBalancers(ctx(), &elbv2.DescribeLoadBalancersInput{LoadBalancerArns: []string{strings.Replace(arns[0], "lb-0", "lb-x", 1)}})
	wantCode(t, err, "LoadBalancerNotFound")
	_, err = e.elb.DescribeLoadBalancers(ctx(), &elbv2.DescribeLoadBalancersInput{PageSize: aws.Int32(401)})
	wantCode(t, err, "ValidationError")
}

func TestLoadBalancerProvisioningDelay(t *testing.T) {
	emu := cloudsimaws.NewDefault(cloudsimaws.Config{Region: region, LoadBalancerProvisioningDelay: 150 * time.Millisecond})
	srv := must[*cloudsim.Server](t)(cloudsim.Start(emu))
	t.Cleanup(func() { _ = srv.Close() })
	e := &env{emu: emu, srv: srv, fx: emu.Fixture()}
	e.ec2, e.elb = clients(srv.URL(), 1)

	lb := createNLB(t, e, "slow")
	if lb.State.Code != elbtypes.LoadBalancerStateEnumProvisioning {
		t.Fatalf("state %s, want provisioning", lb.State.Code)
	}
	// The SDK's own waiter polls until the load balancer is active.
	w := elbv2.NewLoadBalancerAvailableWaiter(e.elb, func(o *elbv2.LoadBalancerAvailableWaiterOptions) {
		o.MinDelay, o.MaxDelay = 20*time.Millisecond, 50*time.Millisecond
	})
	ok(t, w.Wait(ctx(), &elbv2.DescribeLoadBalancersInput{LoadBalancerArns: []string{aws.ToString(lb.LoadBalancerArn)}}, 5*time.Second))
}

func TestLoadBalancerSecurityGroupsSubnetsAttributes(t *testing.T) {
	e := newEnv(t)
	plain := createNLB(t, e, "plain")
	_, err := e.elb.SetSecurityGroups(ctx(), &elbv2.SetSecurityGroupsInput{
		LoadBalancerArn: plain.LoadBalancerArn, SecurityGroups: []string{e.fx.NodeSecurityGroupID},
	})
	wantCode(t, err, "InvalidConfigurationRequest")

	lbSG := createSG(t, e, "lb-sg", nil)
	in := nlbInput(e, "with-sg")
	in.SecurityGroups = []string{lbSG}
	lb := must[*elbv2.CreateLoadBalancerOutput](t)(e.elb.CreateLoadBalancer(ctx(), in)).LoadBalancers[0]
	arn := lb.LoadBalancerArn

	// A group a load balancer uses cannot be deleted.
	_, err = e.ec2.DeleteSecurityGroup(ctx(), &ec2.DeleteSecurityGroupInput{GroupId: aws.String(lbSG)})
	wantCode(t, err, "DependencyViolation")

	other := createSG(t, e, "lb-sg-2", nil)
	sgOut := must[*elbv2.SetSecurityGroupsOutput](t)(e.elb.SetSecurityGroups(ctx(), &elbv2.SetSecurityGroupsInput{
		LoadBalancerArn: arn, SecurityGroups: []string{lbSG, other},
	}))
	if len(sgOut.SecurityGroupIds) != 2 {
		t.Fatalf("set security groups: %v", sgOut.SecurityGroupIds)
	}
	_, err = e.elb.SetSecurityGroups(ctx(), &elbv2.SetSecurityGroupsInput{LoadBalancerArn: arn, SecurityGroups: []string{"sg-0123456789abcdef0"}})
	wantCode(t, err, "InvalidSecurityGroup")
	must[*elbv2.SetSecurityGroupsOutput](t)(e.elb.SetSecurityGroups(ctx(), &elbv2.SetSecurityGroupsInput{LoadBalancerArn: arn, SecurityGroups: []string{}}))
	must[*ec2.DeleteSecurityGroupOutput](t)(e.ec2.DeleteSecurityGroup(ctx(), &ec2.DeleteSecurityGroupInput{GroupId: aws.String(lbSG)}))

	subOut := must[*elbv2.SetSubnetsOutput](t)(e.elb.SetSubnets(ctx(), &elbv2.SetSubnetsInput{
		LoadBalancerArn: arn, Subnets: e.publicSubnets()[:2],
	}))
	if len(subOut.AvailabilityZones) != 2 {
		t.Fatalf("set subnets: %+v", subOut.AvailabilityZones)
	}

	attrs := func(out []elbtypes.LoadBalancerAttribute) map[string]string {
		m := map[string]string{}
		for _, a := range out {
			m[aws.ToString(a.Key)] = aws.ToString(a.Value)
		}
		return m
	}
	got := attrs(must[*elbv2.DescribeLoadBalancerAttributesOutput](t)(e.elb.DescribeLoadBalancerAttributes(ctx(),
		&elbv2.DescribeLoadBalancerAttributesInput{LoadBalancerArn: arn})).Attributes)
	if got["load_balancing.cross_zone.enabled"] != "false" || got["deletion_protection.enabled"] != "false" {
		t.Fatalf("default attributes %v", got)
	}
	mod := must[*elbv2.ModifyLoadBalancerAttributesOutput](t)(e.elb.ModifyLoadBalancerAttributes(ctx(), &elbv2.ModifyLoadBalancerAttributesInput{
		LoadBalancerArn: arn, Attributes: []elbtypes.LoadBalancerAttribute{
			{Key: aws.String("load_balancing.cross_zone.enabled"), Value: aws.String("true")},
			{Key: aws.String("deletion_protection.enabled"), Value: aws.String("true")},
		},
	}))
	if got := attrs(mod.Attributes); got["load_balancing.cross_zone.enabled"] != "true" {
		t.Fatalf("modified attributes %v", got)
	}
	_, err = e.elb.ModifyLoadBalancerAttributes(ctx(), &elbv2.ModifyLoadBalancerAttributesInput{
		LoadBalancerArn: arn, Attributes: []elbtypes.LoadBalancerAttribute{{Key: aws.String("no.such.key"), Value: aws.String("1")}},
	})
	wantCode(t, err, "ValidationError")

	_, err = e.elb.DeleteLoadBalancer(ctx(), &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: arn})
	wantCode(t, err, "OperationNotPermitted")
	must[*elbv2.ModifyLoadBalancerAttributesOutput](t)(e.elb.ModifyLoadBalancerAttributes(ctx(), &elbv2.ModifyLoadBalancerAttributesInput{
		LoadBalancerArn: arn, Attributes: []elbtypes.LoadBalancerAttribute{{Key: aws.String("deletion_protection.enabled"), Value: aws.String("false")}},
	}))
	must[*elbv2.DeleteLoadBalancerOutput](t)(e.elb.DeleteLoadBalancer(ctx(), &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: arn}))
	// Deleting again succeeds, as in ELBv2.
	must[*elbv2.DeleteLoadBalancerOutput](t)(e.elb.DeleteLoadBalancer(ctx(), &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: arn}))
	_, err = e.elb.DescribeLoadBalancerAttributes(ctx(), &elbv2.DescribeLoadBalancerAttributesInput{LoadBalancerArn: arn})
	wantCode(t, err, "LoadBalancerNotFound")
}

func TestTargetGroups(t *testing.T) {
	e := newEnv(t)
	in := &elbv2.CreateTargetGroupInput{
		Name: aws.String("k8s-web-80"), Protocol: elbtypes.ProtocolEnumTcp, Port: aws.Int32(31080), VpcId: aws.String(e.fx.VPCID),
		HealthCheckProtocol: elbtypes.ProtocolEnumHttp, HealthCheckPort: aws.String("10256"), HealthCheckPath: aws.String("/healthz"),
		HealthCheckIntervalSeconds: aws.Int32(10), HealthyThresholdCount: aws.Int32(2), UnhealthyThresholdCount: aws.Int32(3),
		Tags: []elbtypes.Tag{{Key: aws.String("svc"), Value: aws.String("web")}},
	}
	tg := must[*elbv2.CreateTargetGroupOutput](t)(e.elb.CreateTargetGroup(ctx(), in)).TargetGroups[0]
	if !regexp.MustCompile(`^arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/k8s-web-80/[0-9a-f]{16}$`).MatchString(aws.ToString(tg.TargetGroupArn)) ||
		tg.HealthCheckProtocol != elbtypes.ProtocolEnumHttp || aws.ToString(tg.HealthCheckPath) != "/healthz" ||
		aws.ToString(tg.HealthCheckPort) != "10256" || aws.ToInt32(tg.HealthCheckIntervalSeconds) != 10 ||
		aws.ToInt32(tg.HealthyThresholdCount) != 2 || aws.ToInt32(tg.UnhealthyThresholdCount) != 3 ||
		tg.TargetType != elbtypes.TargetTypeEnumInstance || aws.ToInt32(tg.Port) != 31080 || aws.ToString(tg.VpcId) != e.fx.VPCID {
		t.Fatalf("target group %+v", tg)
	}
	again := must[*elbv2.CreateTargetGroupOutput](t)(e.elb.CreateTargetGroup(ctx(), in)).TargetGroups[0]
	if aws.ToString(again.TargetGroupArn) != aws.ToString(tg.TargetGroupArn) {
		t.Fatal("identical create made a second target group")
	}
	in.Port = aws.Int32(31081)
	_, err := e.elb.CreateTargetGroup(ctx(), in)
	wantCode(t, err, "DuplicateTargetGroupName")

	plain := createTG(t, e, "plain", 30000)
	if plain.HealthCheckProtocol != elbtypes.ProtocolEnumTcp || aws.ToString(plain.HealthCheckPort) != "traffic-port" ||
		aws.ToInt32(plain.HealthCheckIntervalSeconds) != 30 || plain.HealthCheckPath != nil {
		t.Fatalf("default health check %+v", plain)
	}
	for _, bad := range []*elbv2.CreateTargetGroupInput{
		{Name: aws.String("x"), Protocol: elbtypes.ProtocolEnumTcp, Port: aws.Int32(1), VpcId: aws.String("vpc-00000000000000999")},
		{Name: aws.String("x"), Protocol: elbtypes.ProtocolEnumTcp, Port: aws.Int32(1), VpcId: aws.String(e.fx.VPCID), HealthCheckPath: aws.String("/")},
		{Name: aws.String("x"), Protocol: elbtypes.ProtocolEnumTcp, Port: aws.Int32(1), VpcId: aws.String(e.fx.VPCID), HealthCheckIntervalSeconds: aws.Int32(1)},
		{Name: aws.String(strings.Repeat("n", 33)), Protocol: elbtypes.ProtocolEnumTcp, Port: aws.Int32(1), VpcId: aws.String(e.fx.VPCID)},
	} {
		_, err := e.elb.CreateTargetGroup(ctx(), bad)
		wantCode(t, err, "ValidationError")
	}

	mod := must[*elbv2.ModifyTargetGroupOutput](t)(e.elb.ModifyTargetGroup(ctx(), &elbv2.ModifyTargetGroupInput{
		TargetGroupArn: plain.TargetGroupArn, HealthCheckPort: aws.String("10256"), HealthCheckIntervalSeconds: aws.Int32(15),
	})).TargetGroups[0]
	if aws.ToString(mod.HealthCheckPort) != "10256" || aws.ToInt32(mod.HealthCheckIntervalSeconds) != 15 {
		t.Fatalf("modified %+v", mod)
	}

	attrOut := must[*elbv2.ModifyTargetGroupAttributesOutput](t)(e.elb.ModifyTargetGroupAttributes(ctx(), &elbv2.ModifyTargetGroupAttributesInput{
		TargetGroupArn: plain.TargetGroupArn, Attributes: []elbtypes.TargetGroupAttribute{
			{Key: aws.String("proxy_protocol_v2.enabled"), Value: aws.String("true")},
			{Key: aws.String("deregistration_delay.timeout_seconds"), Value: aws.String("30")},
		},
	}))
	got := map[string]string{}
	for _, a := range attrOut.Attributes {
		got[aws.ToString(a.Key)] = aws.ToString(a.Value)
	}
	if got["proxy_protocol_v2.enabled"] != "true" || got["deregistration_delay.timeout_seconds"] != "30" || got["preserve_client_ip.enabled"] != "true" {
		t.Fatalf("attributes %v", got)
	}
	desc := must[*elbv2.DescribeTargetGroupAttributesOutput](t)(e.elb.DescribeTargetGroupAttributes(ctx(), &elbv2.DescribeTargetGroupAttributesInput{TargetGroupArn: plain.TargetGroupArn}))
	if len(desc.Attributes) != len(attrOut.Attributes) {
		t.Fatal("describe and modify disagree")
	}
	_, err = e.elb.ModifyTargetGroupAttributes(ctx(), &elbv2.ModifyTargetGroupAttributesInput{
		TargetGroupArn: plain.TargetGroupArn, Attributes: []elbtypes.TargetGroupAttribute{{Key: aws.String("proxy_protocol_v2.enabled"), Value: aws.String("yes")}},
	})
	wantCode(t, err, "ValidationError")

	// Describe by name, ARN and load balancer, and paginate.
	byName := must[*elbv2.DescribeTargetGroupsOutput](t)(e.elb.DescribeTargetGroups(ctx(), &elbv2.DescribeTargetGroupsInput{Names: []string{"plain"}}))
	if len(byName.TargetGroups) != 1 || aws.ToString(byName.TargetGroups[0].TargetGroupArn) != aws.ToString(plain.TargetGroupArn) {
		t.Fatalf("by name %+v", byName.TargetGroups)
	}
	_, err = e.elb.DescribeTargetGroups(ctx(), &elbv2.DescribeTargetGroupsInput{Names: []string{"missing"}})
	wantCode(t, err, "TargetGroupNotFound")
	_, err = e.elb.DescribeTargetGroups(ctx(), &elbv2.DescribeTargetGroupsInput{TargetGroupArns: []string{aws.ToString(plain.TargetGroupArn) + "0"}})
	wantCode(t, err, "TargetGroupNotFound")

	lb := createNLB(t, e, "lb")
	createListener(t, e, aws.ToString(lb.LoadBalancerArn), aws.ToString(plain.TargetGroupArn), 80)
	byLB := must[*elbv2.DescribeTargetGroupsOutput](t)(e.elb.DescribeTargetGroups(ctx(), &elbv2.DescribeTargetGroupsInput{LoadBalancerArn: lb.LoadBalancerArn}))
	if len(byLB.TargetGroups) != 1 || fmt.Sprint(byLB.TargetGroups[0].LoadBalancerArns) != fmt.Sprint([]string{aws.ToString(lb.LoadBalancerArn)}) {
		t.Fatalf("by load balancer %+v", byLB.TargetGroups)
	}
	for i := range 5 {
		createTG(t, e, fmt.Sprintf("tg-%d", i), 30001)
	}
	n := 0
	p := elbv2.NewDescribeTargetGroupsPaginator(e.elb, &elbv2.DescribeTargetGroupsInput{PageSize: aws.Int32(2)})
	for p.HasMorePages() {
		n += len(must[*elbv2.DescribeTargetGroupsOutput](t)(p.NextPage(ctx())).TargetGroups)
	}
	if n != 7 {
		t.Fatalf("paginated %d target groups", n)
	}

	_, err = e.elb.DeleteTargetGroup(ctx(), &elbv2.DeleteTargetGroupInput{TargetGroupArn: plain.TargetGroupArn})
	wantCode(t, err, "ResourceInUse")
	must[*elbv2.DeleteTargetGroupOutput](t)(e.elb.DeleteTargetGroup(ctx(), &elbv2.DeleteTargetGroupInput{TargetGroupArn: tg.TargetGroupArn}))
	_, err = e.elb.ModifyTargetGroup(ctx(), &elbv2.ModifyTargetGroupInput{TargetGroupArn: tg.TargetGroupArn, HealthCheckPort: aws.String("1")})
	wantCode(t, err, "TargetGroupNotFound")
}

func TestListeners(t *testing.T) {
	e := newEnv(t)
	lb := createNLB(t, e, "lb")
	lbARN := aws.ToString(lb.LoadBalancerArn)
	tg80 := aws.ToString(createTG(t, e, "tg-80", 30080).TargetGroupArn)
	tg443 := aws.ToString(createTG(t, e, "tg-443", 30443).TargetGroupArn)

	l80 := createListener(t, e, lbARN, tg80, 80)
	if !strings.HasPrefix(aws.ToString(l80.ListenerArn), strings.Replace(lbARN, ":loadbalancer/", ":listener/", 1)+"/") ||
		aws.ToInt32(l80.Port) != 80 || l80.Protocol != elbtypes.ProtocolEnumTcp ||
		len(l80.DefaultActions) != 1 || aws.ToString(l80.DefaultActions[0].TargetGroupArn) != tg80 ||
		aws.ToString(l80.DefaultActions[0].ForwardConfig.TargetGroups[0].TargetGroupArn) != tg80 {
		t.Fatalf("listener %+v", l80)
	}
	if again := createListener(t, e, lbARN, tg80, 80); aws.ToString(again.ListenerArn) != aws.ToString(l80.ListenerArn) {
		t.Fatal("identical create made a second listener")
	}
	_, err := e.elb.CreateListener(ctx(), forwardListener(lbARN, tg443, 80))
	wantCode(t, err, "DuplicateListener")
	_, err = e.elb.CreateListener(ctx(), forwardListener(lbARN+"0", tg443, 443))
	wantCode(t, err, "LoadBalancerNotFound")
	_, err = e.elb.CreateListener(ctx(), forwardListener(lbARN, tg443+"0", 443))
	wantCode(t, err, "TargetGroupNotFound")
	httpIn := forwardListener(lbARN, tg443, 443)
	httpIn.Protocol = elbtypes.ProtocolEnumHttp
	_, err = e.elb.CreateListener(ctx(), httpIn)
	wantCode(t, err, "UnsupportedProtocol")
	udpIn := forwardListener(lbARN, tg443, 443)
	udpIn.Protocol = elbtypes.ProtocolEnumUdp
	_, err = e.elb.CreateListener(ctx(), udpIn)
	wantCode(t, err, "IncompatibleProtocols")
	// A network load balancer's target group belongs to it alone.
	other := createNLB(t, e, "other")
	_, err = e.elb.CreateListener(ctx(), forwardListener(aws.ToString(other.LoadBalancerArn), tg80, 80))
	wantCode(t, err, "TargetGroupAssociationLimit")

	l443 := createListener(t, e, lbARN, tg443, 443)
	var ports []int32
	p := elbv2.NewDescribeListenersPaginator(e.elb, &elbv2.DescribeListenersInput{LoadBalancerArn: aws.String(lbARN), PageSize: aws.Int32(1)})
	for p.HasMorePages() {
		for _, l := range must[*elbv2.DescribeListenersOutput](t)(p.NextPage(ctx())).Listeners {
			ports = append(ports, aws.ToInt32(l.Port))
		}
	}
	if fmt.Sprint(ports) != "[80 443]" {
		t.Fatalf("listener ports %v", ports)
	}
	byARN := must[*elbv2.DescribeListenersOutput](t)(e.elb.DescribeListeners(ctx(), &elbv2.DescribeListenersInput{ListenerArns: []string{aws.ToString(l443.ListenerArn)}}))
	if len(byARN.Listeners) != 1 || aws.ToInt32(byARN.Listeners[0].Port) != 443 {
		t.Fatalf("by arn %+v", byARN.Listeners)
	}
	_, err = e.elb.DescribeListeners(ctx(), &elbv2.DescribeListenersInput{ListenerArns: []string{aws.ToString(l443.ListenerArn) + "0"}})
	wantCode(t, err, "ListenerNotFound")
	_, err = e.elb.DescribeListeners(ctx(), &elbv2.DescribeListenersInput{})
	wantCode(t, err, "ValidationError")

	_, err = e.elb.ModifyListener(ctx(), &elbv2.ModifyListenerInput{ListenerArn: l443.ListenerArn, Port: aws.Int32(80)})
	wantCode(t, err, "DuplicateListener")
	mod := must[*elbv2.ModifyListenerOutput](t)(e.elb.ModifyListener(ctx(), &elbv2.ModifyListenerInput{
		ListenerArn: l443.ListenerArn, Port: aws.Int32(8443),
		DefaultActions: []elbtypes.Action{{Type: elbtypes.ActionTypeEnumForward, TargetGroupArn: aws.String(tg80)}},
	})).Listeners[0]
	if aws.ToInt32(mod.Port) != 8443 || aws.ToString(mod.DefaultActions[0].TargetGroupArn) != tg80 {
		t.Fatalf("modified %+v", mod)
	}
	// tg-443 is free again and can be deleted.
	must[*elbv2.DeleteTargetGroupOutput](t)(e.elb.DeleteTargetGroup(ctx(), &elbv2.DeleteTargetGroupInput{TargetGroupArn: aws.String(tg443)}))

	must[*elbv2.DeleteListenerOutput](t)(e.elb.DeleteListener(ctx(), &elbv2.DeleteListenerInput{ListenerArn: l443.ListenerArn}))
	_, err = e.elb.DeleteListener(ctx(), &elbv2.DeleteListenerInput{ListenerArn: l443.ListenerArn})
	wantCode(t, err, "ListenerNotFound")

	// Deleting the load balancer takes its listeners along.
	must[*elbv2.DeleteLoadBalancerOutput](t)(e.elb.DeleteLoadBalancer(ctx(), &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: aws.String(lbARN)}))
	_, err = e.elb.DescribeListeners(ctx(), &elbv2.DescribeListenersInput{ListenerArns: []string{aws.ToString(l80.ListenerArn)}})
	wantCode(t, err, "ListenerNotFound")
	must[*elbv2.DeleteTargetGroupOutput](t)(e.elb.DeleteTargetGroup(ctx(), &elbv2.DeleteTargetGroupInput{TargetGroupArn: aws.String(tg80)}))
}

func TestTargetsAndHealth(t *testing.T) {
	e := newEnv(t)
	ids := launch(t, e, cloudsimaws.LaunchSpec{Count: 3})
	tg := aws.ToString(createTG(t, e, "tg", 30080).TargetGroupArn)

	register := func(ids ...string) error {
		var targets []elbtypes.TargetDescription
		for _, id := range ids {
			targets = append(targets, elbtypes.TargetDescription{Id: aws.String(id)})
		}
		_, err := e.elb.RegisterTargets(ctx(), &elbv2.RegisterTargetsInput{TargetGroupArn: aws.String(tg), Targets: targets})
		return err
	}
	health := func() map[string]string {
		out := must[*elbv2.DescribeTargetHealthOutput](t)(e.elb.DescribeTargetHealth(ctx(), &elbv2.DescribeTargetHealthInput{TargetGroupArn: aws.String(tg)}))
		m := map[string]string{}
		for _, d := range out.TargetHealthDescriptions {
			m[aws.ToString(d.Target.Id)] = fmt.Sprintf("%s/%d/%s", d.TargetHealth.State, aws.ToInt32(d.Target.Port), aws.ToString(d.HealthCheckPort))
		}
		return m
	}

	ok(t, register(ids...))
	ok(t, register(ids[0])) // registering twice is a no-op
	if h := health(); len(h) != 3 || h[ids[0]] != "unused/30080/30080" {
		t.Fatalf("before a listener: %v", h)
	}
	lb := createNLB(t, e, "lb")
	createListener(t, e, aws.ToString(lb.LoadBalancerArn), tg, 80)
	if h := health(); h[ids[0]] != "healthy/30080/30080" || h[ids[2]] != "healthy/30080/30080" {
		t.Fatalf("with a listener: %v", h)
	}
	ok(t, e.emu.Stop(ids[1]))
	ok(t, e.emu.Terminate(ids[2]))
	if h := health(); !strings.HasPrefix(h[ids[1]], "unused/") || !strings.HasPrefix(h[ids[2]], "unhealthy/") {
		t.Fatalf("stopped and terminated: %v", h)
	}

	wantCode(t, register(ids[1]), "InvalidTarget")
	wantCode(t, register("i-0123456789abcdef0"), "InvalidTarget")

	// Asking about a target that is not registered reports it unused.
	out := must[*elbv2.DescribeTargetHealthOutput](t)(e.elb.DescribeTargetHealth(ctx(), &elbv2.DescribeTargetHealthInput{
		TargetGroupArn: aws.String(tg), Targets: []elbtypes.TargetDescription{{Id: aws.String("i-0123456789abcdef0")}},
	}))
	if d := out.TargetHealthDescriptions[0]; d.TargetHealth.State != elbtypes.TargetHealthStateEnumUnused || d.TargetHealth.Reason != elbtypes.TargetHealthReasonEnumNotRegistered {
		t.Fatalf("unregistered target: %+v", d.TargetHealth)
	}

	must[*elbv2.DeregisterTargetsOutput](t)(e.elb.DeregisterTargets(ctx(), &elbv2.DeregisterTargetsInput{
		TargetGroupArn: aws.String(tg), Targets: []elbtypes.TargetDescription{{Id: aws.String(ids[1])}, {Id: aws.String(ids[2])}},
	}))
	if h := health(); len(h) != 1 {
		t.Fatalf("after deregister: %v", h)
	}
	_, err := e.elb.DescribeTargetHealth(ctx(), &elbv2.DescribeTargetHealthInput{TargetGroupArn: aws.String(tg + "0")})
	wantCode(t, err, "TargetGroupNotFound")

	// IP targets.
	ipTG := must[*elbv2.CreateTargetGroupOutput](t)(e.elb.CreateTargetGroup(ctx(), &elbv2.CreateTargetGroupInput{
		Name: aws.String("ip"), Protocol: elbtypes.ProtocolEnumTcp, Port: aws.Int32(8080), VpcId: aws.String(e.fx.VPCID), TargetType: elbtypes.TargetTypeEnumIp,
	})).TargetGroups[0].TargetGroupArn
	must[*elbv2.RegisterTargetsOutput](t)(e.elb.RegisterTargets(ctx(), &elbv2.RegisterTargetsInput{
		TargetGroupArn: ipTG, Targets: []elbtypes.TargetDescription{{Id: aws.String("10.0.5.6"), Port: aws.Int32(9090)}},
	}))
	_, err = e.elb.RegisterTargets(ctx(), &elbv2.RegisterTargetsInput{TargetGroupArn: ipTG, Targets: []elbtypes.TargetDescription{{Id: aws.String(ids[0])}}})
	wantCode(t, err, "InvalidTarget")
}

func TestELBTags(t *testing.T) {
	e := newEnv(t)
	lb := aws.ToString(createNLB(t, e, "lb").LoadBalancerArn)
	tg := aws.ToString(createTG(t, e, "tg", 30080).TargetGroupArn)
	l := aws.ToString(createListener(t, e, lb, tg, 80).ListenerArn)
	arns := []string{lb, tg, l}

	must[*elbv2.AddTagsOutput](t)(e.elb.AddTags(ctx(), &elbv2.AddTagsInput{
		ResourceArns: arns, Tags: []elbtypes.Tag{{Key: aws.String("owner"), Value: aws.String("ccm")}, {Key: aws.String("tmp"), Value: aws.String("x")}},
	}))
	must[*elbv2.RemoveTagsOutput](t)(e.elb.RemoveTags(ctx(), &elbv2.RemoveTagsInput{ResourceArns: arns, TagKeys: []string{"tmp"}}))
	out := must[*elbv2.DescribeTagsOutput](t)(e.elb.DescribeTags(ctx(), &elbv2.DescribeTagsInput{ResourceArns: arns}))
	if len(out.TagDescriptions) != 3 {
		t.Fatalf("descriptions %+v", out.TagDescriptions)
	}
	for i, d := range out.TagDescriptions {
		var keys []string
		for _, tag := range d.Tags {
			keys = append(keys, aws.ToString(tag.Key)+"="+aws.ToString(tag.Value))
		}
		want := []string{"owner=ccm"}
		if i == 0 { // the load balancer was created with a tag
			want = []string{"kubernetes.io/service-name=default/web", "owner=ccm"}
		}
		if aws.ToString(d.ResourceArn) != arns[i] || !slices.Equal(keys, want) {
			t.Errorf("%s: %v, want %v", aws.ToString(d.ResourceArn), keys, want)
		}
	}

	for _, tc := range []struct {
		arn, code string
	}{
		{lb + "0", "LoadBalancerNotFound"},
		{tg + "0", "TargetGroupNotFound"},
		{l + "0", "ListenerNotFound"},
		{"arn:aws:s3:::bucket", "ValidationError"},
	} {
		_, err := e.elb.DescribeTags(ctx(), &elbv2.DescribeTagsInput{ResourceArns: []string{tc.arn}})
		wantCode(t, err, tc.code)
	}
	many := slices.Repeat([]string{lb}, 21)
	_, err := e.elb.DescribeTags(ctx(), &elbv2.DescribeTagsInput{ResourceArns: many})
	wantCode(t, err, "ValidationError")
	_, err = e.elb.AddTags(ctx(), &elbv2.AddTagsInput{ResourceArns: []string{lb},
		Tags: []elbtypes.Tag{{Key: aws.String("a"), Value: aws.String("1")}, {Key: aws.String("a"), Value: aws.String("2")}}})
	wantCode(t, err, "DuplicateTagKeys")
	var fifty []elbtypes.Tag
	for i := range 50 {
		fifty = append(fifty, elbtypes.Tag{Key: aws.String(fmt.Sprintf("k%d", i)), Value: aws.String("v")})
	}
	_, err = e.elb.AddTags(ctx(), &elbv2.AddTagsInput{ResourceArns: []string{lb}, Tags: fifty})
	wantCode(t, err, "TooManyTags")
}
