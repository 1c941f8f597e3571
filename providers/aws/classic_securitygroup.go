package aws

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	v1 "k8s.io/api/core/v1"
)

// clbSecurityGroupPrefix names a Classic ELB's security group
// "k8s-elb-<load balancer name>", as upstream does
// (kubernetes/cloud-provider-aws pkg/providers/v1/aws.go:2008). MUST NOT
// change: a group made by upstream or by us is found by it.
const clbSecurityGroupPrefix = "k8s-elb-"

func clbSecurityGroupName(svc *v1.Service) string { return clbSecurityGroupPrefix + classicName(svc) }

// ownedSG says sg is this cluster's group for the Service's Classic ELB.
// Its name holds the Service's UID, so a group of that name tagged owned
// by this cluster is the Service's even without the service-name tag:
// upstream tags its groups with the cluster tag only (aws.go:1555-1610).
func (c *classicLoadBalancers) ownedSG(sg *ec2types.SecurityGroup, svc *v1.Service) bool {
	tags := sgTags(sg)
	svcTag, tagged := tags[serviceNameTagKey]
	return tags[clusterTagKey(c.nlb.clusterID)] == clusterTagOwned && (!tagged || svcTag == serviceKey(svc))
}

// findSecurityGroup returns the Classic ELB's security group in the load
// balancer's (or the cluster's) VPC, or nil. The caller checks it is ours.
func (c *classicLoadBalancers) findSecurityGroup(ctx context.Context, svc *v1.Service, lb *elbtypes.LoadBalancerDescription) (*ec2types.SecurityGroup, error) {
	vpc, err := c.vpcFor(ctx, lb)
	if err != nil {
		return nil, err
	}
	return c.nlb.findSecurityGroupNamed(ctx, clbSecurityGroupName(svc), vpc)
}

// clbListenerRules is what a Classic ELB's security group admits from the
// source ranges: the listener ports, and ICMP "fragmentation needed"
// (type 3, code 4) for path MTU discovery, as upstream adds it
// (aws.go:2041-2047, IPv4 source ranges only).
func clbListenerRules(opts *clbOptions) map[sgRule]bool {
	out := listenerRules(opts.lbOptions)
	for _, r := range opts.sourceRanges {
		if r.Addr().Is4() {
			out[sgRule{proto: "icmp", from: 3, to: 4, cidr: r.String()}] = true
		}
	}
	return out
}

// ensureSecurityGroup finds or creates the Classic ELB's security group
// and makes its ingress exactly clbListenerRules. isNew says it was just
// created, so no node rule can reference it yet.
func (c *classicLoadBalancers) ensureSecurityGroup(ctx context.Context, svc *v1.Service, opts *clbOptions, vpc string) (id string, isNew bool, err error) {
	l := c.nlb
	name := clbSecurityGroupName(svc)
	sg, err := l.findSecurityGroupNamed(ctx, name, vpc)
	if err != nil {
		return "", false, err
	}
	if sg != nil && !c.ownedSG(sg, svc) {
		return "", false, fmt.Errorf("security group %s (%s) exists in %s but is not tagged as ours; refusing to adopt it", name, aws.ToString(sg.GroupId), vpc)
	}
	if sg == nil {
		// upstream: aws.go:2008-2010, name and description
		// With upstreamShape it is tagged as upstream tags it (the
		// cluster and the user's tags; ownedSG finds it by its name).
		sg, isNew, err = l.createOwnedSecurityGroup(ctx, svc, opts.lbOptions, name,
			fmt.Sprintf("Security group for Kubernetes ELB %s (%s)", classicName(svc), serviceKey(svc)), vpc,
			l.upstreamShape(), func(sg *ec2types.SecurityGroup) bool { return c.ownedSG(sg, svc) })
		if err != nil {
			return "", false, err
		}
	}
	if err := l.syncListenerIngress(ctx, svc, sg, clbListenerRules(opts)); err != nil {
		return "", false, err
	}
	return aws.ToString(sg.GroupId), isNew, nil
}
