package aws

import (
	"context"
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	"k8s.io/klog/v2"
)

// ensureInstances registers the backends' instances the load balancer
// lacks and deregisters the ones no backend is, as upstream's
// ensureLoadBalancerInstances does (aws_loadbalancer.go:1630-1680), from
// the instance list the load balancer's description already carries: no
// read, and no call when nothing changed. Instances that cannot be
// registered now (stopped) stay if they are registered, as on NLBs.
func (c *classicLoadBalancers) ensureInstances(ctx context.Context, st *clbState, be *backendSet) error {
	have := map[string]bool{}
	for _, i := range st.lb.Instances {
		have[aws.ToString(i.InstanceId)] = true
	}
	want := map[string]bool{}
	var add []string
	for _, id := range be.ids {
		want[id] = true
		if !have[id] {
			add = append(add, id)
		}
	}
	var remove []string
	for id := range have {
		if !want[id] && !be.keep[id] {
			remove = append(remove, id)
		}
	}
	sort.Strings(remove)
	api := c.nlb.api.elb
	for start := 0; start < len(add); start += registerBatch {
		batch := add[start:min(start+registerBatch, len(add))]
		if _, err := api.RegisterInstancesWithLoadBalancer(ctx, &elb.RegisterInstancesWithLoadBalancerInput{LoadBalancerName: aws.String(st.name), Instances: clbInstances(batch)}); err != nil {
			return fmt.Errorf("register %d instances with %s: %w", len(batch), st.name, err)
		}
	}
	for start := 0; start < len(remove); start += registerBatch {
		batch := remove[start:min(start+registerBatch, len(remove))]
		_, err := api.DeregisterInstancesFromLoadBalancer(ctx, &elb.DeregisterInstancesFromLoadBalancerInput{LoadBalancerName: aws.String(st.name), Instances: clbInstances(batch)})
		if err != nil && !isAPIError(err, "InvalidInstance") {
			return fmt.Errorf("deregister %d instances from %s: %w", len(batch), st.name, err)
		}
	}
	if len(add)+len(remove) > 0 {
		klog.FromContext(ctx).Info("Updated Classic ELB instances", "registered", len(add), "deregistered", len(remove))
	}
	return nil
}

func clbInstances(ids []string) []elbtypes.Instance {
	out := make([]elbtypes.Instance, len(ids))
	for i, id := range ids {
		out[i] = elbtypes.Instance{InstanceId: aws.String(id)}
	}
	return out
}
