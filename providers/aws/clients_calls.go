package aws

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
)

// The operations the backend calls, held as method values of the SDK
// clients rather than as the clients themselves.
//
// Why: *ec2.Client has over 800 exported operations. Kubernetes libraries
// in the binary use reflection's Method (text/template), so once a value
// whose type reaches *ec2.Client is stored in an interface (the
// paginators take one; Cloud reaches its clients through fields), the
// linker has to keep every one of those operations with its serializers:
// 20 MB of machine code and as much again of tables, a third of the binary,
// paged into every replica's memory. A method value keeps only the
// operation it names. Call sites read as before: l.api.ec2.DescribeSubnets(ctx, in).
//
// A new operation is one field here and one line in the constructor.

// op is one SDK operation of a client whose options are O.
type op[I, R, O any] func(context.Context, *I, ...func(*O)) (*R, error)

type ec2Calls struct {
	AssignIpv6Addresses           op[ec2.AssignIpv6AddressesInput, ec2.AssignIpv6AddressesOutput, ec2.Options]
	AuthorizeSecurityGroupIngress op[ec2.AuthorizeSecurityGroupIngressInput, ec2.AuthorizeSecurityGroupIngressOutput, ec2.Options]
	CreateRoute                   op[ec2.CreateRouteInput, ec2.CreateRouteOutput, ec2.Options]
	CreateSecurityGroup           op[ec2.CreateSecurityGroupInput, ec2.CreateSecurityGroupOutput, ec2.Options]
	CreateTags                    op[ec2.CreateTagsInput, ec2.CreateTagsOutput, ec2.Options]
	DeleteRoute                   op[ec2.DeleteRouteInput, ec2.DeleteRouteOutput, ec2.Options]
	DeleteSecurityGroup           op[ec2.DeleteSecurityGroupInput, ec2.DeleteSecurityGroupOutput, ec2.Options]
	DeleteTags                    op[ec2.DeleteTagsInput, ec2.DeleteTagsOutput, ec2.Options]
	DescribeAvailabilityZones     op[ec2.DescribeAvailabilityZonesInput, ec2.DescribeAvailabilityZonesOutput, ec2.Options]
	DescribeInstances             describeInstances
	DescribeRouteTables           describeRouteTables
	DescribeSecurityGroups        describeSecurityGroups
	DescribeSubnets               describeSubnets
	ModifyInstanceAttribute       op[ec2.ModifyInstanceAttributeInput, ec2.ModifyInstanceAttributeOutput, ec2.Options]
	RevokeSecurityGroupIngress    op[ec2.RevokeSecurityGroupIngressInput, ec2.RevokeSecurityGroupIngressOutput, ec2.Options]
}

func newEC2Calls(c *ec2.Client) *ec2Calls {
	return &ec2Calls{
		AssignIpv6Addresses:           c.AssignIpv6Addresses,
		AuthorizeSecurityGroupIngress: c.AuthorizeSecurityGroupIngress,
		CreateRoute:                   c.CreateRoute,
		CreateSecurityGroup:           c.CreateSecurityGroup,
		CreateTags:                    c.CreateTags,
		DeleteRoute:                   c.DeleteRoute,
		DeleteSecurityGroup:           c.DeleteSecurityGroup,
		DeleteTags:                    c.DeleteTags,
		DescribeAvailabilityZones:     c.DescribeAvailabilityZones,
		DescribeInstances:             c.DescribeInstances,
		DescribeRouteTables:           c.DescribeRouteTables,
		DescribeSecurityGroups:        c.DescribeSecurityGroups,
		DescribeSubnets:               c.DescribeSubnets,
		ModifyInstanceAttribute:       c.ModifyInstanceAttribute,
		RevokeSecurityGroupIngress:    c.RevokeSecurityGroupIngress,
	}
}

type elbv2Calls struct {
	AddTags               op[elbv2.AddTagsInput, elbv2.AddTagsOutput, elbv2.Options]
	CreateListener        op[elbv2.CreateListenerInput, elbv2.CreateListenerOutput, elbv2.Options]
	CreateLoadBalancer    op[elbv2.CreateLoadBalancerInput, elbv2.CreateLoadBalancerOutput, elbv2.Options]
	CreateTargetGroup     op[elbv2.CreateTargetGroupInput, elbv2.CreateTargetGroupOutput, elbv2.Options]
	DeleteListener        op[elbv2.DeleteListenerInput, elbv2.DeleteListenerOutput, elbv2.Options]
	DeleteLoadBalancer    op[elbv2.DeleteLoadBalancerInput, elbv2.DeleteLoadBalancerOutput, elbv2.Options]
	DeleteTargetGroup     op[elbv2.DeleteTargetGroupInput, elbv2.DeleteTargetGroupOutput, elbv2.Options]
	DeregisterTargets     op[elbv2.DeregisterTargetsInput, elbv2.DeregisterTargetsOutput, elbv2.Options]
	DescribeListeners     describeListeners
	DescribeLoadBalancers op[elbv2.DescribeLoadBalancersInput, elbv2.DescribeLoadBalancersOutput, elbv2.Options]
	DescribeTags          op[elbv2.DescribeTagsInput, elbv2.DescribeTagsOutput, elbv2.Options]
	DescribeTargetGroups  describeTargetGroups
	DescribeTargetHealth  op[elbv2.DescribeTargetHealthInput, elbv2.DescribeTargetHealthOutput, elbv2.Options]
	ModifyListener        op[elbv2.ModifyListenerInput, elbv2.ModifyListenerOutput, elbv2.Options]
	ModifyTargetGroup     op[elbv2.ModifyTargetGroupInput, elbv2.ModifyTargetGroupOutput, elbv2.Options]

	DescribeTargetGroupAttributes op[elbv2.DescribeTargetGroupAttributesInput, elbv2.DescribeTargetGroupAttributesOutput, elbv2.Options]
	ModifyTargetGroupAttributes   op[elbv2.ModifyTargetGroupAttributesInput, elbv2.ModifyTargetGroupAttributesOutput, elbv2.Options]
	RegisterTargets               op[elbv2.RegisterTargetsInput, elbv2.RegisterTargetsOutput, elbv2.Options]
	RemoveTags                    op[elbv2.RemoveTagsInput, elbv2.RemoveTagsOutput, elbv2.Options]
	SetSecurityGroups             op[elbv2.SetSecurityGroupsInput, elbv2.SetSecurityGroupsOutput, elbv2.Options]
	SetIpAddressType              op[elbv2.SetIpAddressTypeInput, elbv2.SetIpAddressTypeOutput, elbv2.Options]

	DescribeLoadBalancerAttributes op[elbv2.DescribeLoadBalancerAttributesInput, elbv2.DescribeLoadBalancerAttributesOutput, elbv2.Options]
	ModifyLoadBalancerAttributes   op[elbv2.ModifyLoadBalancerAttributesInput, elbv2.ModifyLoadBalancerAttributesOutput, elbv2.Options]
}

func newELBv2Calls(c *elbv2.Client) *elbv2Calls {
	return &elbv2Calls{
		AddTags:               c.AddTags,
		CreateListener:        c.CreateListener,
		CreateLoadBalancer:    c.CreateLoadBalancer,
		CreateTargetGroup:     c.CreateTargetGroup,
		DeleteListener:        c.DeleteListener,
		DeleteLoadBalancer:    c.DeleteLoadBalancer,
		DeleteTargetGroup:     c.DeleteTargetGroup,
		DeregisterTargets:     c.DeregisterTargets,
		DescribeListeners:     c.DescribeListeners,
		DescribeLoadBalancers: c.DescribeLoadBalancers,
		DescribeTags:          c.DescribeTags,
		DescribeTargetGroups:  c.DescribeTargetGroups,
		DescribeTargetHealth:  c.DescribeTargetHealth,
		ModifyListener:        c.ModifyListener,
		ModifyTargetGroup:     c.ModifyTargetGroup,

		DescribeTargetGroupAttributes: c.DescribeTargetGroupAttributes,
		ModifyTargetGroupAttributes:   c.ModifyTargetGroupAttributes,
		RegisterTargets:               c.RegisterTargets,
		RemoveTags:                    c.RemoveTags,
		SetSecurityGroups:             c.SetSecurityGroups,
		SetIpAddressType:              c.SetIpAddressType,

		DescribeLoadBalancerAttributes: c.DescribeLoadBalancerAttributes,
		ModifyLoadBalancerAttributes:   c.ModifyLoadBalancerAttributes,
	}
}

// elbCalls are the Classic ELB operations (classic*.go). Classic ELBs are
// addressed by name; one DescribeLoadBalancers by name returns the
// listeners, health check, security groups, instances and policies.
type elbCalls struct {
	AddTags                                 op[elb.AddTagsInput, elb.AddTagsOutput, elb.Options]
	ApplySecurityGroupsToLoadBalancer       op[elb.ApplySecurityGroupsToLoadBalancerInput, elb.ApplySecurityGroupsToLoadBalancerOutput, elb.Options]
	AttachLoadBalancerToSubnets             op[elb.AttachLoadBalancerToSubnetsInput, elb.AttachLoadBalancerToSubnetsOutput, elb.Options]
	DetachLoadBalancerFromSubnets           op[elb.DetachLoadBalancerFromSubnetsInput, elb.DetachLoadBalancerFromSubnetsOutput, elb.Options]
	ConfigureHealthCheck                    op[elb.ConfigureHealthCheckInput, elb.ConfigureHealthCheckOutput, elb.Options]
	CreateLoadBalancer                      op[elb.CreateLoadBalancerInput, elb.CreateLoadBalancerOutput, elb.Options]
	CreateLoadBalancerListeners             op[elb.CreateLoadBalancerListenersInput, elb.CreateLoadBalancerListenersOutput, elb.Options]
	CreateLoadBalancerPolicy                op[elb.CreateLoadBalancerPolicyInput, elb.CreateLoadBalancerPolicyOutput, elb.Options]
	DeleteLoadBalancer                      op[elb.DeleteLoadBalancerInput, elb.DeleteLoadBalancerOutput, elb.Options]
	DeleteLoadBalancerListeners             op[elb.DeleteLoadBalancerListenersInput, elb.DeleteLoadBalancerListenersOutput, elb.Options]
	DeregisterInstancesFromLoadBalancer     op[elb.DeregisterInstancesFromLoadBalancerInput, elb.DeregisterInstancesFromLoadBalancerOutput, elb.Options]
	DescribeLoadBalancerAttributes          op[elb.DescribeLoadBalancerAttributesInput, elb.DescribeLoadBalancerAttributesOutput, elb.Options]
	DescribeLoadBalancers                   op[elb.DescribeLoadBalancersInput, elb.DescribeLoadBalancersOutput, elb.Options]
	DescribeTags                            op[elb.DescribeTagsInput, elb.DescribeTagsOutput, elb.Options]
	ModifyLoadBalancerAttributes            op[elb.ModifyLoadBalancerAttributesInput, elb.ModifyLoadBalancerAttributesOutput, elb.Options]
	RegisterInstancesWithLoadBalancer       op[elb.RegisterInstancesWithLoadBalancerInput, elb.RegisterInstancesWithLoadBalancerOutput, elb.Options]
	SetLoadBalancerPoliciesForBackendServer op[elb.SetLoadBalancerPoliciesForBackendServerInput, elb.SetLoadBalancerPoliciesForBackendServerOutput, elb.Options]
	SetLoadBalancerPoliciesOfListener       op[elb.SetLoadBalancerPoliciesOfListenerInput, elb.SetLoadBalancerPoliciesOfListenerOutput, elb.Options]
	SetLoadBalancerListenerSSLCertificate   op[elb.SetLoadBalancerListenerSSLCertificateInput, elb.SetLoadBalancerListenerSSLCertificateOutput, elb.Options]
}

func newELBCalls(c *elb.Client) *elbCalls {
	return &elbCalls{
		AddTags:                                 c.AddTags,
		ApplySecurityGroupsToLoadBalancer:       c.ApplySecurityGroupsToLoadBalancer,
		AttachLoadBalancerToSubnets:             c.AttachLoadBalancerToSubnets,
		DetachLoadBalancerFromSubnets:           c.DetachLoadBalancerFromSubnets,
		ConfigureHealthCheck:                    c.ConfigureHealthCheck,
		CreateLoadBalancer:                      c.CreateLoadBalancer,
		CreateLoadBalancerListeners:             c.CreateLoadBalancerListeners,
		CreateLoadBalancerPolicy:                c.CreateLoadBalancerPolicy,
		DeleteLoadBalancer:                      c.DeleteLoadBalancer,
		DeleteLoadBalancerListeners:             c.DeleteLoadBalancerListeners,
		DeregisterInstancesFromLoadBalancer:     c.DeregisterInstancesFromLoadBalancer,
		DescribeLoadBalancerAttributes:          c.DescribeLoadBalancerAttributes,
		DescribeLoadBalancers:                   c.DescribeLoadBalancers,
		DescribeTags:                            c.DescribeTags,
		ModifyLoadBalancerAttributes:            c.ModifyLoadBalancerAttributes,
		RegisterInstancesWithLoadBalancer:       c.RegisterInstancesWithLoadBalancer,
		SetLoadBalancerPoliciesForBackendServer: c.SetLoadBalancerPoliciesForBackendServer,
		SetLoadBalancerPoliciesOfListener:       c.SetLoadBalancerPoliciesOfListener,
		SetLoadBalancerListenerSSLCertificate:   c.SetLoadBalancerListenerSSLCertificate,
	}
}

// The paginated operations also satisfy the SDK paginators' client
// interfaces, so ec2.NewDescribeSubnetsPaginator(l.api.ec2.DescribeSubnets, in) works.

type describeInstances op[ec2.DescribeInstancesInput, ec2.DescribeInstancesOutput, ec2.Options]

func (f describeInstances) DescribeInstances(ctx context.Context, in *ec2.DescribeInstancesInput, o ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	return f(ctx, in, o...)
}

type describeRouteTables op[ec2.DescribeRouteTablesInput, ec2.DescribeRouteTablesOutput, ec2.Options]

func (f describeRouteTables) DescribeRouteTables(ctx context.Context, in *ec2.DescribeRouteTablesInput, o ...func(*ec2.Options)) (*ec2.DescribeRouteTablesOutput, error) {
	return f(ctx, in, o...)
}

type describeSecurityGroups op[ec2.DescribeSecurityGroupsInput, ec2.DescribeSecurityGroupsOutput, ec2.Options]

func (f describeSecurityGroups) DescribeSecurityGroups(ctx context.Context, in *ec2.DescribeSecurityGroupsInput, o ...func(*ec2.Options)) (*ec2.DescribeSecurityGroupsOutput, error) {
	return f(ctx, in, o...)
}

type describeSubnets op[ec2.DescribeSubnetsInput, ec2.DescribeSubnetsOutput, ec2.Options]

func (f describeSubnets) DescribeSubnets(ctx context.Context, in *ec2.DescribeSubnetsInput, o ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error) {
	return f(ctx, in, o...)
}

type describeListeners op[elbv2.DescribeListenersInput, elbv2.DescribeListenersOutput, elbv2.Options]

func (f describeListeners) DescribeListeners(ctx context.Context, in *elbv2.DescribeListenersInput, o ...func(*elbv2.Options)) (*elbv2.DescribeListenersOutput, error) {
	return f(ctx, in, o...)
}

type describeTargetGroups op[elbv2.DescribeTargetGroupsInput, elbv2.DescribeTargetGroupsOutput, elbv2.Options]

func (f describeTargetGroups) DescribeTargetGroups(ctx context.Context, in *elbv2.DescribeTargetGroupsInput, o ...func(*elbv2.Options)) (*elbv2.DescribeTargetGroupsOutput, error) {
	return f(ctx, in, o...)
}
