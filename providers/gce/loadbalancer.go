package gce

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/naming"
)

// loadBalancers implements cloudprovider.LoadBalancer with external
// passthrough network load balancers: per Service a regional address (or
// the user's spec.loadBalancerIP), a target pool of the nodes' instances
// with a legacy HTTP health check, a regional forwarding rule per
// protocol, and firewall rules admitting the clients and Google's health
// checkers to the node tags. Internal load balancers are the GCE issue's
// next step.
type loadBalancers struct {
	cfg       *Section
	clusterID string
	api       *clients
	in        *instances
}

var _ cloudprovider.LoadBalancer = (*loadBalancers)(nil)

// errInternalNotYet refuses internal Services until they are served.
var errInternalNotYet = errors.New("internal load balancers (networking.gke.io/load-balancer-type: Internal) are not served by this version of the gce backend yet")

// GetLoadBalancerName is upstream's name of the Service's parts.
func (l *loadBalancers) GetLoadBalancerName(_ context.Context, _ string, svc *v1.Service) string {
	return lbName(svc)
}

// GetLoadBalancer reports the address of the Service's first forwarding
// rule, if it has one.
func (l *loadBalancers) GetLoadBalancer(ctx context.Context, _ string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	fr, err := l.api.forwardingRules.Get(ctx, &computepb.GetForwardingRuleRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, ForwardingRule: lbName(svc)}, l.api.retry)
	if isNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("get forwarding rule %s: %w", lbName(svc), err)
	}
	return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: fr.GetIPAddress()}}}, true, nil
}

// EnsureLoadBalancer creates or updates the Service's address, health
// check, target pool, forwarding rules and firewall rules.
func (l *loadBalancers) EnsureLoadBalancer(ctx context.Context, _ string, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	sp, err := serviceSpec(l.cfg, svc)
	if err != nil {
		return nil, err
	}
	if sp.internal {
		return nil, errInternalNotYet
	}
	base, key := lbName(svc), naming.ServiceKey(svc)
	members, tags, err := l.nodeInstances(ctx, nodes)
	if err != nil {
		return nil, err
	}
	ip, err := l.ensureAddress(ctx, base, key, sp)
	if err != nil {
		return nil, err
	}
	hc := l.healthCheckFor(base, sp)
	hcOwner := key
	if !sp.local {
		hcOwner = ""
	}
	if err := l.ensureHealthCheck(ctx, hc, hcOwner); err != nil {
		return nil, err
	}
	if err := l.ensureFirewall(ctx, &computepb.Firewall{
		Name: proto.String(healthCheckFirewallName(hc.Name)), SourceRanges: healthCheckRanges, TargetTags: tags,
		Allowed: []*computepb.Allowed{{IPProtocol: proto.String("tcp"), Ports: []string{strconv.Itoa(int(hc.Port))}}},
	}, hcOwner); err != nil {
		return nil, err
	}
	pool := l.regionLink("targetPools", base)
	if err := l.ensureTargetPool(ctx, base, key, l.globalLink("httpHealthChecks", hc.Name), members, sp); err != nil {
		return nil, err
	}
	for i, p := range sp.protocols {
		if err := l.ensureForwardingRule(ctx, forwardingRuleName(base, p, i == 0), key, ip, p, sp, pool); err != nil {
			return nil, err
		}
	}
	// A protocol the Service no longer has loses its rule.
	for _, p := range []v1.Protocol{v1.ProtocolTCP, v1.ProtocolUDP} {
		if !slices.Contains(sp.protocols, p) {
			if err := l.deleteForwardingRule(ctx, forwardingRuleName(base, p, false), key); err != nil {
				return nil, err
			}
		}
	}
	if err := l.ensureFirewall(ctx, &computepb.Firewall{
		Name: proto.String(firewallName(base)), SourceRanges: sp.sources, TargetTags: tags, DestinationRanges: []string{ip + "/32"},
		Allowed: allowedPorts(sp.ports, func(p v1.ServicePort) int32 { return p.Port }),
	}, key); err != nil {
		return nil, err
	}
	return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: ip}}}, nil
}

// UpdateLoadBalancer brings the target pool's instances in step with the
// nodes: one addInstance and one removeInstance call at most.
func (l *loadBalancers) UpdateLoadBalancer(ctx context.Context, _ string, svc *v1.Service, nodes []*v1.Node) error {
	sp, err := serviceSpec(l.cfg, svc)
	if err != nil {
		return err
	}
	if sp.internal {
		return errInternalNotYet
	}
	members, _, err := l.nodeInstances(ctx, nodes)
	if err != nil {
		return err
	}
	pool, err := l.api.targetPools.Get(ctx, &computepb.GetTargetPoolRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, TargetPool: lbName(svc)}, l.api.retry)
	if err != nil {
		return fmt.Errorf("get target pool %s: %w", lbName(svc), err)
	}
	return l.syncPoolMembers(ctx, pool, members)
}

// EnsureLoadBalancerDeleted deletes, in dependency order, the forwarding
// rules, the target pool, the Service's own health check, its firewall
// rules and the address the manager reserved. Each step tolerates what is
// already gone, so a target pool is deleted even when its forwarding rule
// went first, and a deletion cut off at any point completes next time.
func (l *loadBalancers) EnsureLoadBalancerDeleted(ctx context.Context, _ string, svc *v1.Service) error {
	base, key := lbName(svc), naming.ServiceKey(svc)
	for _, name := range []string{base, forwardingRuleName(base, v1.ProtocolTCP, false), forwardingRuleName(base, v1.ProtocolUDP, false)} {
		if err := l.deleteForwardingRule(ctx, name, key); err != nil {
			return err
		}
	}
	if err := l.deleteTargetPool(ctx, base, key); err != nil {
		return err
	}
	if err := l.deleteHealthCheck(ctx, base, key); err != nil {
		return err
	}
	for _, name := range []string{firewallName(base), healthCheckFirewallName(base)} {
		if err := l.deleteFirewall(ctx, name, key); err != nil {
			return err
		}
	}
	return l.releaseAddress(ctx, base, key)
}

// nodeInstances are the nodes' instance URLs for the target pool, and the
// network tags firewall rules target: nodeTags, else the tags every node
// has.
func (l *loadBalancers) nodeInstances(ctx context.Context, nodes []*v1.Node) (urls, tags []string, err error) {
	var common []string
	for i, n := range nodes {
		inst, err := l.in.lookup(ctx, n)
		if err != nil {
			return nil, nil, fmt.Errorf("node %s: %w", n.Name, err)
		}
		urls = append(urls, "projects/"+inst.ref.project+"/zones/"+inst.ref.zone+"/instances/"+inst.ref.name)
		if i == 0 {
			common = slices.Clone(inst.tags)
		} else {
			common = slices.DeleteFunc(common, func(t string) bool { return !slices.Contains(inst.tags, t) })
		}
	}
	slices.Sort(urls)
	if len(l.cfg.NodeTags) > 0 {
		return urls, l.cfg.NodeTags, nil
	}
	if len(common) == 0 && len(nodes) > 0 {
		return nil, nil, errors.New("the nodes' instances share no network tag for the firewall rules to target: set gce.nodeTags")
	}
	slices.Sort(common)
	return urls, common, nil
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
			Name: proto.String(name), Description: proto.String(description{Service: svcKey, Cluster: l.clusterID}.String()),
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
	if !ours(cur.GetDescription(), l.clusterID, svcKey) {
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
		err := waitOp(ctx)(l.api.targetPools.AddInstance(ctx, &computepb.AddInstanceTargetPoolRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, TargetPool: name,
			TargetPoolsAddInstanceRequestResource: &computepb.TargetPoolsAddInstanceRequest{Instances: add}}, l.api.retry))
		if err != nil {
			return fmt.Errorf("target pool %s: add %d instances: %w", name, len(add), err)
		}
	}
	if len(remove) > 0 {
		err := waitOp(ctx)(l.api.targetPools.RemoveInstance(ctx, &computepb.RemoveInstanceTargetPoolRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, TargetPool: name,
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
	if !ours(cur.GetDescription(), l.clusterID, svcKey) {
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
// the pool. Its address, protocol, ports and tier cannot change in place:
// a rule that differs is deleted and created again.
func (l *loadBalancers) ensureForwardingRule(ctx context.Context, name, svcKey, ip string, protocol v1.Protocol, sp *lbSpec, pool string) error {
	want := &computepb.ForwardingRule{
		Name: proto.String(name), Description: proto.String(description{Service: svcKey, Cluster: l.clusterID}.String()),
		IPAddress: proto.String(ip), IPProtocol: proto.String(string(protocol)), PortRange: proto.String(portRange(sp.ports, protocol)),
		Target: proto.String(pool), LoadBalancingScheme: proto.String("EXTERNAL"), NetworkTier: proto.String(sp.tier),
	}
	cur, err := l.api.forwardingRules.Get(ctx, &computepb.GetForwardingRuleRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, ForwardingRule: name}, l.api.retry)
	switch {
	case isNotFound(err):
	case err != nil:
		return fmt.Errorf("get forwarding rule %s: %w", name, err)
	case !ours(cur.GetDescription(), l.clusterID, svcKey):
		return fmt.Errorf("forwarding rule %s exists and is not this Service's (description %q)", name, cur.GetDescription())
	case cur.GetIPAddress() == ip && cur.GetIPProtocol() == string(protocol) && cur.GetPortRange() == want.GetPortRange() && (cur.GetNetworkTier() == "" || cur.GetNetworkTier() == sp.tier):
		if sameLink(cur.GetTarget(), pool) {
			return nil
		}
		err = waitOp(ctx)(l.api.forwardingRules.SetTarget(ctx, &computepb.SetTargetForwardingRuleRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, ForwardingRule: name,
			TargetReferenceResource: &computepb.TargetReference{Target: proto.String(pool)}}, l.api.retry))
		if err != nil {
			return fmt.Errorf("forwarding rule %s: set target: %w", name, err)
		}
		return nil
	default:
		if err := l.deleteForwardingRule(ctx, name, svcKey); err != nil {
			return err
		}
	}
	err = waitOp(ctx)(l.api.forwardingRules.Insert(ctx, &computepb.InsertForwardingRuleRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, ForwardingRuleResource: want}, l.api.retry))
	if err != nil && !alreadyExists(err) {
		return fmt.Errorf("create forwarding rule %s: %w", name, err)
	}
	return nil
}

func (l *loadBalancers) deleteForwardingRule(ctx context.Context, name, svcKey string) error {
	cur, err := l.api.forwardingRules.Get(ctx, &computepb.GetForwardingRuleRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, ForwardingRule: name}, l.api.retry)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get forwarding rule %s: %w", name, err)
	}
	if !ours(cur.GetDescription(), l.clusterID, svcKey) {
		return nil
	}
	err = waitOp(ctx)(l.api.forwardingRules.Delete(ctx, &computepb.DeleteForwardingRuleRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, ForwardingRule: name}, l.api.retry))
	if err = ignoreNotFound(err); err != nil {
		return fmt.Errorf("delete forwarding rule %s: %w", name, err)
	}
	return nil
}
