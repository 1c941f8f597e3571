package aws_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
)

// A page token belongs to the listing that issued it: handing one to
// another Describe call is the caller's bug, and EC2 and ELBv2 refuse it
// with their own error codes.
func TestForeignPageTokens(t *testing.T) {
	e := newEnv(t)
	subnets := must[*ec2.DescribeSubnetsOutput](t)(e.ec2.DescribeSubnets(ctx(), &ec2.DescribeSubnetsInput{MaxResults: aws.Int32(5)}))
	if subnets.NextToken == nil {
		t.Fatal("want a second page of subnets")
	}
	_, err := e.ec2.DescribeInstances(ctx(), &ec2.DescribeInstancesInput{NextToken: subnets.NextToken})
	wantCode(t, err, "InvalidParameterValue")

	createNLB(t, e, "a")
	createNLB(t, e, "b")
	lbs := must[*elbv2.DescribeLoadBalancersOutput](t)(e.elb.DescribeLoadBalancers(ctx(), &elbv2.DescribeLoadBalancersInput{PageSize: aws.Int32(1)}))
	if lbs.NextMarker == nil {
		t.Fatal("want a second page of load balancers")
	}
	_, err = e.elb.DescribeTargetGroups(ctx(), &elbv2.DescribeTargetGroupsInput{Marker: lbs.NextMarker})
	wantCode(t, err, "ValidationError")
	_, err = e.elb.DescribeLoadBalancers(ctx(), &elbv2.DescribeLoadBalancersInput{Marker: aws.String("bm90LW91cnM")})
	wantCode(t, err, "ValidationError")
}
