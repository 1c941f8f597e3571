package aws

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	"k8s.io/klog/v2"
)

// syncSubnets moves an existing Classic ELB to the subnets it should be in
// now (a subnet tagged or untagged, the annotation or config changed), as
// upstream does on every sync (aws_loadbalancer.go:1238-1270). Upstream
// detaches first; here a subnet in a zone the load balancer is not in yet
// is attached first, so the load balancer never has fewer zones than it
// needs, and a subnet replacing another in its zone (a Classic ELB has one
// subnet per zone) is attached right after the old one is detached.
// Subnets are read only when something differs.
func (c *classicLoadBalancers) syncSubnets(ctx context.Context, st *clbState, want []string) error {
	var add, remove []string
	for _, id := range want {
		if !slices.Contains(st.lb.Subnets, id) {
			add = append(add, id)
		}
	}
	for _, id := range st.lb.Subnets {
		if !slices.Contains(want, id) {
			remove = append(remove, id)
		}
	}
	if len(add)+len(remove) == 0 {
		return nil
	}
	api := c.nlb.api
	zoneOf := map[string]string{}
	out, err := api.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: append(slices.Clone(add), remove...)})
	if err != nil {
		return fmt.Errorf("describe subnets %v: %w", append(slices.Clone(add), remove...), err)
	}
	for _, s := range out.Subnets {
		zoneOf[aws.ToString(s.SubnetId)] = aws.ToString(s.AvailabilityZone)
	}
	removedZones := map[string]bool{}
	for _, id := range remove {
		removedZones[zoneOf[id]] = true
	}
	var first, after []string
	for _, id := range add {
		if removedZones[zoneOf[id]] {
			after = append(after, id)
		} else {
			first = append(first, id)
		}
	}
	attach := func(ids []string) error {
		if len(ids) == 0 {
			return nil
		}
		if _, err := api.elb.AttachLoadBalancerToSubnets(ctx, &elb.AttachLoadBalancerToSubnetsInput{LoadBalancerName: aws.String(st.name), Subnets: ids}); err != nil {
			return fmt.Errorf("attach load balancer %s to subnets %v: %w", st.name, ids, err)
		}
		return nil
	}
	if err := attach(first); err != nil {
		return err
	}
	if len(remove) > 0 {
		if _, err := api.elb.DetachLoadBalancerFromSubnets(ctx, &elb.DetachLoadBalancerFromSubnetsInput{LoadBalancerName: aws.String(st.name), Subnets: remove}); err != nil {
			return fmt.Errorf("detach load balancer %s from subnets %v: %w", st.name, remove, err)
		}
	}
	if err := attach(after); err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Moved Classic ELB to its subnets", "attached", add, "detached", remove)
	st.lb.Subnets = slices.Clone(want)
	return nil
}
