package aws_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
)

// TestPolicyDeniesAsAWSDoes: under a policy, an EC2 call outside it is a
// 403 UnauthorizedOperation and an Elastic Load Balancing call a 403
// AccessDenied, each naming the IAM action; nothing is served; the
// permissions the principal's calls needed are recorded, another
// principal's calls are neither checked nor recorded.
func TestPolicyDeniesAsAWSDoes(t *testing.T) {
	e := newEnv(t)
	e.srv.SetPolicy("AKIDCLOUDSIM", []string{"ec2:DescribeInstances"})
	if _, err := e.ec2.DescribeInstances(ctx(), &ec2.DescribeInstancesInput{}); err != nil {
		t.Fatalf("an allowed call: %v", err)
	}
	_, err := e.ec2.DescribeSubnets(ctx(), &ec2.DescribeSubnetsInput{})
	wantCode(t, err, "UnauthorizedOperation")
	if !strings.Contains(err.Error(), "is not authorized to perform: ec2:DescribeSubnets") {
		t.Errorf("the denial does not name the action: %v", err)
	}
	var re *awshttp.ResponseError
	if !errors.As(err, &re) || re.HTTPStatusCode() != 403 {
		t.Errorf("status of the denial: %v", err)
	}
	_, err = e.elb.DescribeLoadBalancers(ctx(), &elbv2.DescribeLoadBalancersInput{})
	wantCode(t, err, "AccessDenied")
	if !strings.Contains(err.Error(), "elasticloadbalancing:DescribeLoadBalancers") {
		t.Errorf("the denial does not name the action: %v", err)
	}
	if got := e.srv.Used(); !slices.Equal(got, []string{"ec2:DescribeInstances", "ec2:DescribeSubnets", "elasticloadbalancing:DescribeLoadBalancers"}) {
		t.Errorf("used %v", got)
	}
	if got := e.srv.Denied(); !slices.Equal(got, []string{"ec2:DescribeSubnets", "elasticloadbalancing:DescribeLoadBalancers"}) {
		t.Errorf("denied %v", got)
	}

	// Another identity is not the policy's.
	e.srv.ResetUsed()
	e.srv.SetPolicy("AKIDSOMEONEELSE", []string{})
	if _, err := e.ec2.DescribeSubnets(ctx(), &ec2.DescribeSubnetsInput{}); err != nil {
		t.Errorf("another principal's call: %v", err)
	}
	if got := e.srv.Used(); len(got) != 0 {
		t.Errorf("another principal's calls recorded: %v", got)
	}
	// No policy: everything is served.
	e.srv.SetPolicy("", nil)
	if _, err := e.elb.DescribeLoadBalancers(ctx(), &elbv2.DescribeLoadBalancersInput{}); err != nil {
		t.Errorf("without a policy: %v", err)
	}
}
