package gce

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"cloud.google.com/go/compute/apiv1/computepb"
	"golang.org/x/sync/errgroup"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
)

// The external (target pool) load balancer's parts.

// ensureExternal creates or updates the Service's address, health check,
// target pool, forwarding rules and firewall rules. rules are the
// Service's forwarding rules as they are now.
func (l *loadBalancers) ensureExternal(ctx context.Context, base, key string, sp *lbSpec, members []instanceRef, tags []string, rules map[string]*computepb.ForwardingRule) (*v1.LoadBalancerStatus, error) {
	hc := l.healthCheckFor(base, sp)
	hcOwner := healthCheckOwner(sp, key)
	pool := l.regionLink("targetPools", base)
	// The address does not depend on the health check and the pool that
	// uses it, nor the client firewall on the rules: each pair is made at
	// once, so a new load balancer takes two operations' time, not four.
	var ip string
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		ip, err = l.ensureAddress(gctx, base, key, sp, rules)
		return err
	})
	g.Go(func() error {
		if err := l.once(gctx, hcOwner, "httpHealthChecks/"+hc.Name, func(ctx context.Context) error { return l.ensureHealthCheck(ctx, hc, hcOwner) }); err != nil {
			return err
		}
		h, hctx := errgroup.WithContext(gctx)
		if hcOwner == "" {
			h.Go(func() error {
				return l.ensureHealthCheckFirewall(hctx, healthCheckFirewallName(hc.Name, true), int(hc.Port), tags, "", "", healthCheckRanges)
			})
		}
		h.Go(func() error {
			return l.ensureTargetPool(hctx, base, key, l.globalLink("httpHealthChecks", hc.Name), instanceLinks(members), sp)
		})
		return h.Wait()
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	g, gctx = errgroup.WithContext(ctx)
	g.Go(func() error {
		return l.ensureRules(gctx, key, rules, ruleNames(base, sp), func(name string, p v1.Protocol, cur *computepb.ForwardingRule) error {
			return l.ensureForwardingRule(gctx, name, key, ip, p, sp, pool, cur)
		})
	})
	g.Go(func() error {
		if len(sp.sources) == 0 {
			// The Service admits IPv6 clients only, which a target
			// pool does not serve.
			return l.deleteFirewall(gctx, firewallName(base), key)
		}
		return l.ensureClientFirewall(gctx, base, key, ip, sp, tags)
	})
	if hcOwner != "" {
		// The Service's own health check's rule, narrowed to its IP
		// as upstream makes it: it waits for the IP.
		g.Go(func() error {
			return l.ensureHealthCheckFirewall(gctx, healthCheckFirewallName(hc.Name, false), int(hc.Port), tags, hcOwner, ip, healthCheckRanges)
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	// The rules hold the IP now: the reservation goes, as upstream's
	// (the rules keep the IP as an ephemeral one); so does one this
	// manager kept before keepAddresses (its default then), or one a
	// failed upstream sync left: one read when there is none.
	if !l.cfg.KeepAddresses && sp.staticIP == "" {
		if err := l.releaseAddress(ctx, base, key); err != nil {
			return nil, err
		}
	}
	return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: ip}}}, nil
}

// ensureTargetPool makes the Service's target pool hold members and use
// the health check.
func (l *loadBalancers) ensureTargetPool(ctx context.Context, name, svcKey, hc string, members []string, sp *lbSpec) error {
	affinity := "NONE"
	if sp.sessionIP {
		affinity = "CLIENT_IP"
	}
	req := &computepb.GetTargetPoolRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, TargetPool: name}
	cur, err := l.api.targetPools.Get(ctx, req, l.api.retry)
	if isNotFound(err) {
		err = waitOp(ctx)(l.api.targetPools.Insert(ctx, &computepb.InsertTargetPoolRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, TargetPoolResource: &computepb.TargetPool{
			Name: proto.String(name), Description: proto.String(l.describe(ctx, svcKey).String()),
			Instances: members, HealthChecks: []string{hc}, SessionAffinity: proto.String(affinity),
		}}, l.api.retry))
		if err != nil && !alreadyExists(err) {
			return fmt.Errorf("create target pool %s: %w", name, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("get target pool %s: %w", name, err)
	}
	if !l.owns(cur.GetDescription(), svcKey, "") {
		return fmt.Errorf("target pool %s exists and is not this Service's (description %q)", name, cur.GetDescription())
	}
	if cur.GetSessionAffinity() != affinity {
		return fmt.Errorf("target pool %s has session affinity %s, the Service asks for %s: a pool's affinity cannot change; recreate the Service", name, cur.GetSessionAffinity(), affinity)
	}
	if !slices.ContainsFunc(cur.GetHealthChecks(), func(h string) bool { return sameLink(h, hc) }) {
		err = waitOp(ctx)(l.api.targetPools.AddHealthCheck(ctx, &computepb.AddHealthCheckTargetPoolRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, TargetPool: name,
			TargetPoolsAddHealthCheckRequestResource: &computepb.TargetPoolsAddHealthCheckRequest{HealthChecks: []*computepb.HealthCheckReference{{HealthCheck: proto.String(hc)}}}}, l.api.retry))
		if err != nil {
			return fmt.Errorf("target pool %s: add health check: %w", name, err)
		}
		var stale []*computepb.HealthCheckReference
		for _, h := range cur.GetHealthChecks() {
			stale = append(stale, &computepb.HealthCheckReference{HealthCheck: proto.String(h)})
		}
		if len(stale) > 0 {
			err = waitOp(ctx)(l.api.targetPools.RemoveHealthCheck(ctx, &computepb.RemoveHealthCheckTargetPoolRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, TargetPool: name,
				TargetPoolsRemoveHealthCheckRequestResource: &computepb.TargetPoolsRemoveHealthCheckRequest{HealthChecks: stale}}, l.api.retry))
			if err != nil {
				return fmt.Errorf("target pool %s: remove health check: %w", name, err)
			}
		}
	}
	return l.syncPoolMembers(ctx, cur, members)
}

// syncPoolMembers adds and removes only the difference.
func (l *loadBalancers) syncPoolMembers(ctx context.Context, pool *computepb.TargetPool, members []string) error {
	var add, remove []*computepb.InstanceReference
	for _, m := range members {
		if !slices.ContainsFunc(pool.GetInstances(), func(c string) bool { return sameLink(c, m) }) {
			add = append(add, &computepb.InstanceReference{Instance: proto.String(m)})
		}
	}
	for _, c := range pool.GetInstances() {
		if !slices.ContainsFunc(members, func(m string) bool { return sameLink(c, m) }) {
			remove = append(remove, &computepb.InstanceReference{Instance: proto.String(c)})
		}
	}
	name := pool.GetName()
	if len(add) > 0 {
		err := l.waitRegional(ctx)(l.api.targetPools.AddInstance(ctx, &computepb.AddInstanceTargetPoolRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, TargetPool: name,
			TargetPoolsAddInstanceRequestResource: &computepb.TargetPoolsAddInstanceRequest{Instances: add}}, l.api.retry))
		if err != nil {
			return fmt.Errorf("target pool %s: add %d instances: %w", name, len(add), err)
		}
	}
	if len(remove) > 0 {
		err := l.waitRegional(ctx)(l.api.targetPools.RemoveInstance(ctx, &computepb.RemoveInstanceTargetPoolRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, TargetPool: name,
			TargetPoolsRemoveInstanceRequestResource: &computepb.TargetPoolsRemoveInstanceRequest{Instances: remove}}, l.api.retry))
		if err != nil {
			return fmt.Errorf("target pool %s: remove %d instances: %w", name, len(remove), err)
		}
	}
	return nil
}

func (l *loadBalancers) deleteTargetPool(ctx context.Context, name, svcKey string) error {
	cur, err := l.api.targetPools.Get(ctx, &computepb.GetTargetPoolRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, TargetPool: name}, l.api.retry)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get target pool %s: %w", name, err)
	}
	if !l.owns(cur.GetDescription(), svcKey, "") {
		return nil
	}
	err = waitOp(ctx)(l.api.targetPools.Delete(ctx, &computepb.DeleteTargetPoolRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, TargetPool: name}, l.api.retry))
	if err = ignoreNotFound(err); err != nil {
		return fmt.Errorf("delete target pool %s: %w", name, err)
	}
	return nil
}

// portRange is the forwarding rule's range for protocol's ports: from the
// lowest to the highest, as upstream sets it.
func portRange(ports []v1.ServicePort, protocol v1.Protocol) string {
	lo, hi := int32(65536), int32(0)
	for _, p := range ports {
		if p.Protocol == protocol {
			lo, hi = min(lo, p.Port), max(hi, p.Port)
		}
	}
	return fmt.Sprintf("%d-%d", lo, hi)
}

// ensureForwardingRule makes the rule forward protocol's ports at ip to
// the pool; cur is the rule as it is, nil if missing. Its address,
// protocol, ports and tier cannot change in place: a rule that differs is
// deleted and created again.
func (l *loadBalancers) ensureForwardingRule(ctx context.Context, name, svcKey, ip string, protocol v1.Protocol, sp *lbSpec, pool string, cur *computepb.ForwardingRule) error {
	want := &computepb.ForwardingRule{
		Name: proto.String(name), Description: proto.String(l.describe(ctx, svcKey).String()),
		IPAddress: proto.String(ip), IPProtocol: proto.String(string(protocol)), PortRange: proto.String(portRange(sp.ports, protocol)),
		Target: proto.String(pool), LoadBalancingScheme: proto.String(schemeExternal), NetworkTier: proto.String(sp.tier),
	}
	if cur != nil {
		if ruleAsWanted(cur, ip, protocol, sp) {
			if sameLink(cur.GetTarget(), pool) {
				return nil
			}
			err := waitOp(ctx)(l.api.forwardingRules.SetTarget(ctx, &computepb.SetTargetForwardingRuleRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, ForwardingRule: name,
				TargetReferenceResource: &computepb.TargetReference{Target: proto.String(pool)}}, l.api.retry))
			if err != nil {
				return fmt.Errorf("forwarding rule %s: set target: %w", name, err)
			}
			return nil
		}
		if err := l.deleteForwardingRule(ctx, name); err != nil {
			return err
		}
	}
	return l.createForwardingRule(ctx, want)
}

// ruleAsWanted says an external forwarding rule forwards protocol's ports
// at ip in the Service's tier: what cannot change in place.
func ruleAsWanted(cur *computepb.ForwardingRule, ip string, protocol v1.Protocol, sp *lbSpec) bool {
	return cur.GetIPAddress() == ip && cur.GetIPProtocol() == string(protocol) && cur.GetPortRange() == portRange(sp.ports, protocol) &&
		(cur.GetNetworkTier() == "" || cur.GetNetworkTier() == sp.tier)
}

func (l *loadBalancers) createForwardingRule(ctx context.Context, want *computepb.ForwardingRule) error {
	err := waitOp(ctx)(l.api.forwardingRules.Insert(ctx, &computepb.InsertForwardingRuleRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, ForwardingRuleResource: want}, l.api.retry))
	if err != nil && !alreadyExists(err) {
		return fmt.Errorf("create forwarding rule %s: %w", want.GetName(), err)
	}
	return nil
}

// ensureRules deletes the Service's forwarding rules not in keep (of
// protocols or families it no longer has) (first, so a rule made next never clashes with one on its
// way out at the same IP), then ensures a rule for each of its protocols
// with ensure, refusing rules of the name that are not the Service's.
func (l *loadBalancers) ensureRules(ctx context.Context, key string, rules map[string]*computepb.ForwardingRule, keep map[string]v1.Protocol, ensure func(name string, p v1.Protocol, cur *computepb.ForwardingRule) error) error {
	for _, name := range slices.Sorted(maps.Keys(rules)) {
		if _, ok := keep[name]; !ok && l.owns(rules[name].GetDescription(), key, "") {
			if err := l.deleteForwardingRule(ctx, name); err != nil {
				return err
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(keep)) {
		cur := rules[name]
		if cur != nil && !l.owns(cur.GetDescription(), key, "") {
			return fmt.Errorf("forwarding rule %s exists and is not this Service's (description %q)", name, cur.GetDescription())
		}
		if err := ensure(name, keep[name], cur); err != nil {
			return err
		}
	}
	return nil
}

// ruleNames are the Service's forwarding rules (and, internal, backend
// services) by name, with their protocol.
func ruleNames(base string, sp *lbSpec) map[string]v1.Protocol {
	out := map[string]v1.Protocol{}
	for i, p := range sp.protocols {
		out[forwardingRuleName(base, p, i == 0)] = p
	}
	return out
}

// deleteForwardingRule deletes a rule the caller found to be the
// Service's; one already gone is fine.
func (l *loadBalancers) deleteForwardingRule(ctx context.Context, name string) error {
	err := waitOp(ctx)(l.api.forwardingRules.Delete(ctx, &computepb.DeleteForwardingRuleRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, ForwardingRule: name}, l.api.retry))
	if err = ignoreNotFound(err); err != nil {
		return fmt.Errorf("delete forwarding rule %s: %w", name, err)
	}
	return nil
}
