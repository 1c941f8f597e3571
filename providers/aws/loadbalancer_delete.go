package aws

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// delete removes what ensure created, found by name and tags. The order
// keeps every remaining piece findable after a crash at any point:
//
//	listeners -> target groups -> (CIDR node rules of an NLB without a
//	security group) -> load balancer -> node rules -> security group
//
// Target groups go before the load balancer because the load balancer's
// tags are the record of them; the security group goes last because AWS
// keeps it in use until the load balancer is gone.
func (l *loadBalancers) delete(ctx context.Context, svc *v1.Service) error {
	logger := klog.FromContext(ctx)
	// The record goes whatever the outcome: a failed delete may have
	// removed any part of what it described.
	op := l.records.Begin(l.recordKey(svc))
	defer op.End(nil, op.Start)
	l.forgotten.Delete(serviceKey(svc))
	st, err := l.load(ctx, svc, true)
	if err != nil {
		return err
	}
	if st.lb != nil {
		if st.owned {
			if g, err := parseUserGroups(svc); err == nil && len(g.replace) > 0 {
				// The user's group stays; the node rules admitting it
				// are ours, and go while the load balancer still says
				// there is something to clean.
				if err := l.revokeNodeRulesFrom(ctx, svc, g.replace[0], false); err != nil {
					return err
				}
			}
			if err := l.deleteELB(ctx, svc, st); err != nil {
				return err
			}
		} else {
			logger.Info("A load balancer with this Service's name is not ours; leaving it alone")
		}
	}
	vpc, err := l.vpcFor(ctx, st.lb)
	if err != nil {
		return err
	}
	sg, err := l.findLBSecurityGroup(ctx, svc, vpc)
	if err != nil {
		return err
	}
	if sg != nil {
		if !l.ownedSG(sg, svc) {
			logger.Info("A security group with this Service's name is not ours; leaving it alone", "securityGroup", aws.ToString(sg.GroupId))
		} else if err := l.deleteLBSecurityGroup(ctx, svc, sg); err != nil {
			return err
		}
	}
	if st.lb != nil || sg != nil {
		// Only when there was something: the Classic ELB code calls this
		// on every sync of its Services to find NLB leftovers, and shares
		// the cache.
		l.nodeRules.Delete(serviceKey(svc))
	}
	return nil
}

// deleteELB deletes an owned NLB with its listeners and target groups.
func (l *loadBalancers) deleteELB(ctx context.Context, svc *v1.Service, st *lbState) error {
	logger := klog.FromContext(ctx)
	if err := l.resolveRecorded(ctx, svc, st); err != nil {
		return err
	}
	// Attached target groups are normally recorded already; make sure,
	// since deleting the listeners detaches them.
	prefix := st.tgPrefix
	rec := union(st.record, nil)
	var names []string
	for name := range st.tgs {
		names = append(names, name)
		if strings.HasPrefix(name, prefix) {
			rec[strings.TrimPrefix(name, prefix)] = true
		}
	}
	sort.Strings(names)
	if err := l.writeRecord(ctx, st, rec); err != nil {
		return err
	}
	listeners, err := l.listeners(ctx, st.lbARN())
	if err != nil {
		return err
	}
	for _, li := range listeners {
		if _, err := l.api.elbv2.DeleteListener(ctx, &elbv2.DeleteListenerInput{ListenerArn: li.ListenerArn}); err != nil && !isAPIError(err, "ListenerNotFound") {
			return fmt.Errorf("delete listener on port %d: %w", aws.ToInt32(li.Port), err)
		}
	}
	if err := l.deleteTargetGroups(ctx, st, names); err != nil {
		return err
	}
	if st.sgless() {
		// Its node rules are known by its name only: they go while it
		// still exists, so a crash here cannot leave them unfindable.
		if err := l.ensureUpstreamNodeRules(ctx, svc, upstreamRules{lbName: st.name}, aws.ToString(st.lb.VpcId), nil); err != nil {
			return err
		}
	}
	if _, err := l.api.elbv2.DeleteLoadBalancer(ctx, &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: st.lb.LoadBalancerArn}); err != nil && !isAPIError(err, "LoadBalancerNotFound") {
		return fmt.Errorf("delete load balancer %s: %w", st.name, err)
	}
	logger.Info("Deleted load balancer", "listeners", len(listeners), "targetGroups", len(names))
	return nil
}
