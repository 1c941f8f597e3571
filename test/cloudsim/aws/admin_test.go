package aws_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

// admin calls the admin HTTP API and decodes the JSON answer into out.
func admin(t *testing.T, e *env, method, path, body string, out any) int {
	t.Helper()
	status, err := cloudsim.AdminCall(t.Context(), e.srv.URL(), method, path, body, out)
	if err != nil {
		t.Fatal(err)
	}
	return status
}

func TestAdminHTTPInstances(t *testing.T) {
	e := newEnv(t)
	var launched struct{ InstanceIDs []string }
	st := admin(t, e, "POST", "/admin/aws/instances",
		`{"count": 2, "zone": "eu-west-1c", "publicIp": true, "instanceType": "t3.small", "tags": {"Name": "n"}}`, &launched)
	if st != 200 || len(launched.InstanceIDs) != 2 {
		t.Fatalf("launch: %d %+v", st, launched)
	}
	insts := describeInstances(t, e, &ec2.DescribeInstancesInput{InstanceIds: launched.InstanceIDs})
	if len(insts) != 2 || aws.ToString(insts[0].Placement.AvailabilityZone) != "eu-west-1c" || insts[0].PublicIpAddress == nil ||
		insts[0].InstanceType != "t3.small" {
		t.Fatalf("launched %+v", insts[0])
	}

	var listed []cloudsimaws.InstanceInfo
	admin(t, e, "GET", "/admin/aws/instances", "", &listed)
	if len(listed) != 2 || listed[0].State != "running" || listed[0].PrivateDNSName == "" {
		t.Fatalf("listed %+v", listed)
	}

	body := `{"instanceIds": ["` + launched.InstanceIDs[0] + `"]}`
	for _, step := range []struct{ path, state string }{
		{"/admin/aws/instances/stop", "stopped"},
		{"/admin/aws/instances/start", "running"},
		{"/admin/aws/instances/terminate", "terminated"},
	} {
		if st := admin(t, e, "POST", step.path, body, nil); st != 200 {
			t.Fatalf("%s: %d", step.path, st)
		}
		if info, _ := e.emu.Instance(launched.InstanceIDs[0]); info.State != step.state {
			t.Fatalf("after %s: %s", step.path, info.State)
		}
	}
	if st := admin(t, e, "POST", "/admin/aws/instances/remove", body, nil); st != 200 {
		t.Fatalf("remove: %d", st)
	}
	if _, ok := e.emu.Instance(launched.InstanceIDs[0]); ok {
		t.Fatal("removed instance still there")
	}
	if st := admin(t, e, "POST", "/admin/aws/instances/state", `{"instanceId": "`+launched.InstanceIDs[1]+`", "state": "pending"}`, nil); st != 200 {
		t.Fatalf("state: %d", st)
	}

	var failure map[string]string
	if st := admin(t, e, "POST", "/admin/aws/instances/remove", `{"instanceIds": ["`+launched.InstanceIDs[1]+`"]}`, &failure); st != 400 || failure["error"] == "" {
		t.Fatalf("removing a live instance: %d %v", st, failure)
	}
	if st := admin(t, e, "POST", "/admin/aws/instances", `{"cuont": 1}`, nil); st != 400 {
		t.Fatalf("unknown field accepted: %d", st)
	}
}

func TestAdminHTTPFixtures(t *testing.T) {
	e := newEnv(t)
	var fx cloudsimaws.Fixture
	admin(t, e, "GET", "/admin/aws/fixture", "", &fx)
	if fx.VPCID != e.fx.VPCID || fx.ClusterTagKey != "kubernetes.io/cluster/test" || len(fx.PublicSubnets) != 3 {
		t.Fatalf("fixture %+v", fx)
	}

	var vpc, subnet, rtb, sg struct{ ID string }
	admin(t, e, "POST", "/admin/aws/vpcs", `{"cidr": "192.168.0.0/16", "tags": {"Name": "v2"}}`, &vpc)
	admin(t, e, "POST", "/admin/aws/subnets", `{"vpcId": "`+vpc.ID+`", "zone": "eu-west-1a", "cidr": "192.168.1.0/24", "tags": {"kubernetes.io/role/elb": "1"}}`, &subnet)
	admin(t, e, "POST", "/admin/aws/route-tables", `{"vpcId": "`+vpc.ID+`", "subnetIds": ["`+subnet.ID+`"], "tags": {"Name": "r2"}}`, &rtb)
	admin(t, e, "POST", "/admin/aws/security-groups", `{"vpcId": "`+vpc.ID+`", "name": "g2", "description": "d", "tags": {"Name": "g2"}}`, &sg)
	if vpc.ID == "" || subnet.ID == "" || rtb.ID == "" || sg.ID == "" {
		t.Fatalf("ids %v %v %v %v", vpc, subnet, rtb, sg)
	}
	out := must[*ec2.DescribeSubnetsOutput](t)(e.ec2.DescribeSubnets(ctx(), &ec2.DescribeSubnetsInput{
		Filters: []ec2types.Filter{filter("vpc-id", vpc.ID)},
	}))
	if len(out.Subnets) != 1 || aws.ToString(out.Subnets[0].SubnetId) != subnet.ID {
		t.Fatalf("subnets %+v", out.Subnets)
	}
	if st := admin(t, e, "POST", "/admin/aws/subnets", `{"vpcId": "vpc-nope", "zone": "eu-west-1a", "cidr": "10.1.0.0/24"}`, nil); st != 400 {
		t.Fatalf("bad subnet: %d", st)
	}
}

func TestAdminHTTPFaultsCallsResources(t *testing.T) {
	e := newEnv(t)
	if st := admin(t, e, "POST", "/admin/faults", `{"op": "ec2:DescribeInstances", "throttleNext": 1}`, nil); st != 200 {
		t.Fatalf("post fault: %d", st)
	}
	_, err := e.ec2.DescribeInstances(ctx(), &ec2.DescribeInstancesInput{})
	wantCode(t, err, "RequestLimitExceeded")
	must[*ec2.DescribeInstancesOutput](t)(e.ec2.DescribeInstances(ctx(), &ec2.DescribeInstancesInput{}))

	var calls map[string]int
	admin(t, e, "GET", "/admin/calls", "", &calls)
	if calls["ec2:DescribeInstances"] != 2 {
		t.Fatalf("calls %v", calls)
	}
	admin(t, e, "POST", "/admin/calls/reset", "", nil)
	if e.srv.CallCount("*") != 0 {
		t.Fatal("calls not reset")
	}

	createNLB(t, e, "listed")
	var rs []cloudsim.Resource
	admin(t, e, "GET", "/admin/resources?kind=load-balancer", "", &rs)
	if len(rs) != 1 || rs[0].Name != "listed" || rs[0].Tags["kubernetes.io/service-name"] != "default/web" {
		t.Fatalf("resources %+v", rs)
	}
	admin(t, e, "DELETE", "/admin/faults", "", nil)
	if len(e.srv.Faults()) != 0 {
		t.Fatal("faults not cleared")
	}
}

// TestLeakCheck is the pattern a CCM test follows: snapshot, provision a
// service's cloud objects, tear them down, and diff.
func TestLeakCheck(t *testing.T) {
	e := newEnv(t)
	ids := launch(t, e, cloudsimaws.LaunchSpec{Count: 2})
	before := e.srv.Resources()

	sgID := createSG(t, e, "k8s-svc", map[string]string{"svc": "web"})
	perm := tcp(31000, "0.0.0.0/0")
	must[*ec2.AuthorizeSecurityGroupIngressOutput](t)(e.ec2.AuthorizeSecurityGroupIngress(ctx(), &ec2.AuthorizeSecurityGroupIngressInput{
		GroupId: aws.String(e.fx.NodeSecurityGroupID), IpPermissions: []ec2types.IpPermission{perm},
	}))
	must[*ec2.CreateRouteOutput](t)(e.ec2.CreateRoute(ctx(), &ec2.CreateRouteInput{
		RouteTableId: aws.String(e.fx.RouteTableID), DestinationCidrBlock: aws.String("100.96.0.0/24"), InstanceId: aws.String(ids[0]),
	}))
	lb := aws.ToString(createNLB(t, e, "web").LoadBalancerArn)
	tg := aws.ToString(createTG(t, e, "web", 31000).TargetGroupArn)
	createListener(t, e, lb, tg, 80)
	must[*elbv2.RegisterTargetsOutput](t)(e.elb.RegisterTargets(ctx(), &elbv2.RegisterTargetsInput{
		TargetGroupArn: aws.String(tg), Targets: targetsOf(ids),
	}))

	added, _ := cloudsim.DiffResources(before, e.srv.Resources())
	kinds := map[string]int{}
	for _, r := range added {
		kinds[r.Kind]++
	}
	// SG + its default egress rule + the ingress rule on the node group.
	want := map[string]int{"security-group": 1, "security-group-rule": 2, "route": 1, "load-balancer": 1, "target-group": 1, "listener": 1, "target": 2}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("added %d %s, want %d (all: %v)", kinds[k], k, n, kinds)
		}
	}

	// Tear down everything but the node group rule: the diff names it.
	must[*elbv2.DeleteLoadBalancerOutput](t)(e.elb.DeleteLoadBalancer(ctx(), &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: aws.String(lb)}))
	must[*elbv2.DeleteTargetGroupOutput](t)(e.elb.DeleteTargetGroup(ctx(), &elbv2.DeleteTargetGroupInput{TargetGroupArn: aws.String(tg)}))
	must[*ec2.DeleteRouteOutput](t)(e.ec2.DeleteRoute(ctx(), &ec2.DeleteRouteInput{RouteTableId: aws.String(e.fx.RouteTableID), DestinationCidrBlock: aws.String("100.96.0.0/24")}))
	must[*ec2.DeleteSecurityGroupOutput](t)(e.ec2.DeleteSecurityGroup(ctx(), &ec2.DeleteSecurityGroupInput{GroupId: aws.String(sgID)}))
	added, removed := cloudsim.DiffResources(before, e.srv.Resources())
	if len(added) != 1 || added[0].Kind != cloudsimaws.KindSecurityGroupRule || added[0].Parent != e.fx.NodeSecurityGroupID || len(removed) != 0 {
		t.Fatalf("added %+v removed %+v", added, removed)
	}
	must[*ec2.RevokeSecurityGroupIngressOutput](t)(e.ec2.RevokeSecurityGroupIngress(ctx(), &ec2.RevokeSecurityGroupIngressInput{
		GroupId: aws.String(e.fx.NodeSecurityGroupID), IpPermissions: []ec2types.IpPermission{perm},
	}))
	if added, removed := cloudsim.DiffResources(before, e.srv.Resources()); len(added)+len(removed) != 0 {
		t.Fatalf("added %+v removed %+v", added, removed)
	}
}
