package aws_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	clbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"

	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

func clbInstances(ids ...string) []clbtypes.Instance {
	var out []clbtypes.Instance
	for _, id := range ids {
		out = append(out, clbtypes.Instance{InstanceId: aws.String(id)})
	}
	return out
}

func instanceIDsOf(is []clbtypes.Instance) []string {
	return idsOf(is, func(i clbtypes.Instance) *string { return i.InstanceId })
}

func TestClassicInstancesAndHealth(t *testing.T) {
	e := newCLBEnv(t)
	createCLB(t, e, "web")
	name := aws.String("web")
	ids := launch(t, e.env, cloudsimaws.LaunchSpec{Count: 3}) // one per zone
	register := func(ids ...string) (*elb.RegisterInstancesWithLoadBalancerOutput, error) {
		return e.clb.RegisterInstancesWithLoadBalancer(ctx(), &elb.RegisterInstancesWithLoadBalancerInput{LoadBalancerName: name, Instances: clbInstances(ids...)})
	}
	deregister := func(ids ...string) (*elb.DeregisterInstancesFromLoadBalancerOutput, error) {
		return e.clb.DeregisterInstancesFromLoadBalancer(ctx(), &elb.DeregisterInstancesFromLoadBalancerInput{LoadBalancerName: name, Instances: clbInstances(ids...)})
	}
	health := func(ids ...string) map[string]string {
		t.Helper()
		out := must[*elb.DescribeInstanceHealthOutput](t)(e.clb.DescribeInstanceHealth(ctx(), &elb.DescribeInstanceHealthInput{LoadBalancerName: name, Instances: clbInstances(ids...)}))
		m := map[string]string{}
		for _, s := range out.InstanceStates {
			m[aws.ToString(s.InstanceId)] = fmt.Sprintf("%s/%s/%s", aws.ToString(s.State), aws.ToString(s.ReasonCode), aws.ToString(s.Description))
		}
		return m
	}

	out := must[*elb.RegisterInstancesWithLoadBalancerOutput](t)(register(ids[:2]...))
	if !slices.Equal(instanceIDsOf(out.Instances), ids[:2]) {
		t.Fatalf("registered %v", instanceIDsOf(out.Instances))
	}
	// Registering again, with one new instance, is fine and lists them all.
	out = must[*elb.RegisterInstancesWithLoadBalancerOutput](t)(register(ids...))
	if !slices.Equal(instanceIDsOf(out.Instances), ids) || !slices.Equal(instanceIDsOf(describeCLB(t, e, "web").Instances), ids) {
		t.Fatalf("registered %v", instanceIDsOf(out.Instances))
	}
	inService := "InService/N/A/N/A"
	if h := health(); len(h) != 3 || h[ids[0]] != inService || h[ids[2]] != inService {
		t.Fatalf("health %v", h)
	}
	// The SDK's own waiter agrees.
	w := elb.NewInstanceInServiceWaiter(e.clb, func(o *elb.InstanceInServiceWaiterOptions) {
		o.MinDelay, o.MaxDelay = time.Millisecond, 10*time.Millisecond
	})
	ok(t, w.Wait(ctx(), &elb.DescribeInstanceHealthInput{LoadBalancerName: name}, time.Second))

	for _, tc := range []struct {
		name string
		ids  []string
	}{
		{"unknown", []string{"i-0123456789abcdef0"}},
		{"malformed", []string{"i-nope"}},
	} {
		_, err := register(tc.ids...)
		wantTyped[*clbtypes.InvalidEndPointException](t, err)
		wantCode(t, err, "InvalidInstance")
	}
	other := must[string](t)(e.emu.CreateVPC("10.9.0.0/16", nil))
	otherSubnet := must[string](t)(e.emu.CreateSubnet(cloudsimaws.SubnetSpec{VPCID: other, Zone: region + "a", CIDR: "10.9.0.0/24"}))
	stranger := launch(t, e.env, cloudsimaws.LaunchSpec{SubnetID: otherSubnet, SecurityGroupIDs: []string{}})[0]
	_, err := register(stranger)
	wantCode(t, err, "InvalidInstance")
	stopped := launch(t, e.env, cloudsimaws.LaunchSpec{State: "stopped"})[0]
	_, err = register(stopped)
	wantCode(t, err, "InvalidInstance")
	if h := health(); len(h) != 3 {
		t.Fatalf("a refused registration registered: %v", h)
	}

	// Stopping and terminating: a stopped instance stays registered and
	// out of service; a terminated one leaves the load balancer.
	ok(t, e.emu.Stop(ids[0]))
	ok(t, e.emu.Terminate(ids[1]))
	h := health()
	if len(h) != 2 || h[ids[0]] != "OutOfService/Instance/Instance is in stopped state." || h[ids[2]] != inService {
		t.Fatalf("after stop and terminate: %v", h)
	}
	if got := instanceIDsOf(describeCLB(t, e, "web").Instances); !slices.Equal(got, []string{ids[0], ids[2]}) {
		t.Fatalf("registered after terminate: %v", got)
	}
	pending := launch(t, e.env, cloudsimaws.LaunchSpec{State: "pending", Zone: region + "a"})[0]
	must[*elb.RegisterInstancesWithLoadBalancerOutput](t)(register(pending))
	if h := health(pending); h[pending] != "OutOfService/Instance/Instance is in pending state." {
		t.Fatalf("pending: %v", h)
	}

	// Asked about explicitly, an instance that is not registered is out of
	// service because of the load balancer.
	if h := health(stranger); h[stranger] != "OutOfService/ELB/Instance is not currently registered with the LoadBalancer." {
		t.Fatalf("unregistered: %v", h)
	}
	_, err = e.clb.DescribeInstanceHealth(ctx(), &elb.DescribeInstanceHealthInput{LoadBalancerName: name, Instances: clbInstances("i-0123456789abcdef0")})
	wantCode(t, err, "InvalidInstance")

	// An instance in a zone the load balancer left is out of service.
	must[*elb.DetachLoadBalancerFromSubnetsOutput](t)(e.clb.DetachLoadBalancerFromSubnets(ctx(), &elb.DetachLoadBalancerFromSubnetsInput{
		LoadBalancerName: name, Subnets: []string{e.fx.PublicSubnets[region+"c"]},
	}))
	if h := health(ids[2]); h[ids[2]] != "OutOfService/ELB/Instance is in the EC2 Availability Zone for which LoadBalancer is not configured to route traffic to." {
		t.Fatalf("instance in a detached zone: %v", h)
	}

	// Deregistering: an instance that is not registered fails the call and
	// nothing is removed.
	_, err = deregister(ids[2], stranger)
	wantTyped[*clbtypes.InvalidEndPointException](t, err)
	_, err = deregister(ids[1]) // terminated: already gone
	wantCode(t, err, "InvalidInstance")
	dout := must[*elb.DeregisterInstancesFromLoadBalancerOutput](t)(deregister(ids[2], pending))
	if got := instanceIDsOf(dout.Instances); !slices.Equal(got, []string{ids[0]}) {
		t.Fatalf("after deregister: %v", got)
	}
	wd := elb.NewInstanceDeregisteredWaiter(e.clb, func(o *elb.InstanceDeregisteredWaiterOptions) {
		o.MinDelay, o.MaxDelay = time.Millisecond, 10*time.Millisecond
	})
	ok(t, wd.Wait(ctx(), &elb.DescribeInstanceHealthInput{LoadBalancerName: name, Instances: clbInstances(ids[2])}, time.Second))
	if info, _ := e.emu.ClassicLoadBalancer("web"); !slices.Equal(info.Instances, []string{ids[0]}) {
		t.Fatalf("admin view: %v", info.Instances)
	}
	_, err = e.clb.RegisterInstancesWithLoadBalancer(ctx(), &elb.RegisterInstancesWithLoadBalancerInput{LoadBalancerName: aws.String("missing"), Instances: clbInstances(ids[0])})
	wantTyped[*clbtypes.AccessPointNotFoundException](t, err)
}
