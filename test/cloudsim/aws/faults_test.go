package aws_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

func httpStatus(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func setFault(t *testing.T, e *env, spec cloudsim.FaultSpec) {
	t.Helper()
	if err := e.srv.SetFault(spec); err != nil {
		t.Fatal(err)
	}
}

func TestThrottlingIsRetriedBySDK(t *testing.T) {
	e := newEnv(t)
	ec2c, elbc := clients(e.srv.URL(), 3)

	// Two throttles, then success: the SDK's third attempt gets through.
	setFault(t, e, cloudsim.FaultSpec{Op: "ec2:DescribeInstances", ThrottleNext: 2})
	must[*ec2.DescribeInstancesOutput](t)(ec2c.DescribeInstances(ctx(), &ec2.DescribeInstancesInput{}))
	if n := e.srv.CallCount("ec2:DescribeInstances"); n != 3 {
		t.Fatalf("%d calls, want 3", n)
	}

	// Three throttles exhaust three attempts: EC2's 503 RequestLimitExceeded.
	e.srv.ResetCalls()
	setFault(t, e, cloudsim.FaultSpec{Op: "ec2:*", ThrottleNext: 3})
	_, err := ec2c.DescribeInstances(ctx(), &ec2.DescribeInstancesInput{})
	wantCode(t, err, "RequestLimitExceeded")
	if httpStatus(err) != http.StatusServiceUnavailable || e.srv.CallCount("ec2:DescribeInstances") != 3 {
		t.Fatalf("status %d after %d calls", httpStatus(err), e.srv.CallCount("ec2:DescribeInstances"))
	}

	// ELBv2 throttles with a 400 Throttling, which the SDK retries too.
	setFault(t, e, cloudsim.FaultSpec{Op: "elbv2:DescribeLoadBalancers", ThrottleNext: 3})
	_, err = elbc.DescribeLoadBalancers(ctx(), &elbv2.DescribeLoadBalancersInput{})
	wantCode(t, err, "Throttling")
	if httpStatus(err) != http.StatusBadRequest || e.srv.CallCount("elbv2:DescribeLoadBalancers") != 3 {
		t.Fatalf("status %d after %d calls", httpStatus(err), e.srv.CallCount("elbv2:DescribeLoadBalancers"))
	}
}

func TestRateLimit(t *testing.T) {
	e := newEnv(t)
	// A bucket of 2 refilling at 1/s shared by all reads; writes are free.
	setFault(t, e, cloudsim.FaultSpec{Op: cloudsim.ReadOps, RatePerSecond: 1, Burst: 2})
	var codes []string
	for range 3 {
		_, err := e.ec2.DescribeVpcs(ctx(), &ec2.DescribeVpcsInput{})
		codes = append(codes, errorCode(err))
	}
	if fmt.Sprint(codes) != "[  RequestLimitExceeded]" {
		t.Fatalf("codes %q", codes)
	}
	_, err := e.elb.DescribeLoadBalancers(ctx(), &elbv2.DescribeLoadBalancersInput{})
	wantCode(t, err, "Throttling")
	createSG(t, e, "writes-are-not-limited", nil)
}

func TestServerErrors(t *testing.T) {
	e := newEnv(t)
	setFault(t, e, cloudsim.FaultSpec{Op: "ec2:DescribeSubnets", FailNext: 1})
	_, err := e.ec2.DescribeSubnets(ctx(), &ec2.DescribeSubnetsInput{})
	wantCode(t, err, "InternalError")
	if httpStatus(err) != http.StatusInternalServerError {
		t.Fatalf("status %d", httpStatus(err))
	}

	setFault(t, e, cloudsim.FaultSpec{Op: "elbv2:*", FailNext: 1})
	_, err = e.elb.DescribeTargetGroups(ctx(), &elbv2.DescribeTargetGroupsInput{})
	wantCode(t, err, "ServiceUnavailable")
	if httpStatus(err) != http.StatusServiceUnavailable {
		t.Fatalf("status %d", httpStatus(err))
	}

	// With retries the SDK rides out a single 5xx.
	ec2c, _ := clients(e.srv.URL(), 3)
	e.srv.ResetCalls()
	setFault(t, e, cloudsim.FaultSpec{Op: "ec2:DescribeSubnets", FailNext: 1})
	must[*ec2.DescribeSubnetsOutput](t)(ec2c.DescribeSubnets(ctx(), &ec2.DescribeSubnetsInput{}))
	if n := e.srv.CallCount("ec2:DescribeSubnets"); n != 2 {
		t.Fatalf("%d calls, want 2", n)
	}
}

func TestLatencyByGroup(t *testing.T) {
	e := newEnv(t)
	setFault(t, e, cloudsim.FaultSpec{Op: cloudsim.AllOps, Latency: 30 * time.Millisecond})
	setFault(t, e, cloudsim.FaultSpec{Op: cloudsim.MutatingOps, Latency: 60 * time.Millisecond})
	start := time.Now()
	must[*ec2.DescribeVpcsOutput](t)(e.ec2.DescribeVpcs(ctx(), &ec2.DescribeVpcsInput{}))
	if d := time.Since(start); d < 30*time.Millisecond || d > 85*time.Millisecond {
		t.Errorf("read took %v", d)
	}
	start = time.Now()
	createSG(t, e, "slow", nil)
	if d := time.Since(start); d < 90*time.Millisecond {
		t.Errorf("mutating call took %v", d)
	}
}

func TestHangUntilClientTimeout(t *testing.T) {
	e := newEnv(t)
	setFault(t, e, cloudsim.FaultSpec{Op: "elbv2:DescribeLoadBalancers", HangNext: 1})
	c, cancel := context.WithTimeout(ctx(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := e.elb.DescribeLoadBalancers(c, &elbv2.DescribeLoadBalancersInput{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want a deadline error, got %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("hung %v", d)
	}
	must[*elbv2.DescribeLoadBalancersOutput](t)(e.elb.DescribeLoadBalancers(ctx(), &elbv2.DescribeLoadBalancersInput{}))
}

func TestConcurrentClients(t *testing.T) {
	e := newEnv(t)
	launch(t, e, cloudsimaws.LaunchSpec{Count: 6})
	setFault(t, e, cloudsim.FaultSpec{Op: cloudsim.AllOps, Latency: time.Millisecond})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("svc-%d", g)
			lb, err := e.elb.CreateLoadBalancer(ctx(), nlbInput(e, name))
			if err != nil {
				errs <- err
				return
			}
			tg, err := e.elb.CreateTargetGroup(ctx(), &elbv2.CreateTargetGroupInput{
				Name: aws.String(name), Protocol: elbtypes.ProtocolEnumTcp, Port: aws.Int32(int32(30000 + g)), VpcId: aws.String(e.fx.VPCID),
			})
			if err != nil {
				errs <- err
				return
			}
			lbARN, tgARN := lb.LoadBalancers[0].LoadBalancerArn, tg.TargetGroups[0].TargetGroupArn
			steps := []func() error{
				func() error {
					_, err := e.elb.CreateListener(ctx(), forwardListener(*lbARN, *tgARN, 80))
					return err
				},
				func() error {
					_, err := e.ec2.AuthorizeSecurityGroupIngress(ctx(), &ec2.AuthorizeSecurityGroupIngressInput{
						GroupId: aws.String(e.fx.NodeSecurityGroupID), IpPermissions: []ec2types.IpPermission{tcp(int32(30000+g), "0.0.0.0/0")},
					})
					return err
				},
				func() error {
					_, err := e.ec2.DescribeInstances(ctx(), &ec2.DescribeInstancesInput{})
					return err
				},
				func() error {
					_, err := e.elb.DeleteLoadBalancer(ctx(), &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: lbARN})
					return err
				},
				func() error {
					_, err := e.elb.DeleteTargetGroup(ctx(), &elbv2.DeleteTargetGroupInput{TargetGroupArn: tgARN})
					return err
				},
			}
			for _, step := range steps {
				if err := step(); err != nil {
					errs <- err
					return
				}
				_ = e.srv.Resources()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := e.srv.CallCount("elbv2:CreateLoadBalancer"); n != 8 {
		t.Errorf("%d CreateLoadBalancer calls", n)
	}
	for _, r := range e.srv.Resources() {
		if r.Kind == cloudsimaws.KindLoadBalancer || r.Kind == cloudsimaws.KindTargetGroup || r.Kind == cloudsimaws.KindListener {
			t.Errorf("left behind: %+v", r)
		}
	}
}

func TestInvalidActionAndVersion(t *testing.T) {
	e := newEnv(t)
	if code := rawCode(t, e, "Action=RunInstances&Version=2016-11-15"); code != "InvalidAction" {
		t.Errorf("ec2: %q", code)
	}
	if code := rawCode(t, e, "Action=CreateRule&Version=2015-12-01"); code != "InvalidAction" {
		t.Errorf("elbv2: %q", code)
	}
	resp, err := http.Post(e.srv.URL(), "application/x-www-form-urlencoded", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || e.srv.CallCount("*") != 2 {
		t.Fatalf("status %d, %d calls counted", resp.StatusCode, e.srv.CallCount("*"))
	}
}
