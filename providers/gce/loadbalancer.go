package gce

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/iterator"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	servicehelpers "k8s.io/cloud-provider/service/helpers"
	"k8s.io/klog/v2"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/flight"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/lbrecords"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/naming"
)

// loadBalancers implements cloudprovider.LoadBalancer with passthrough
// network load balancers, as upstream builds them:
//   - external (the default, loadbalancer_external.go): a regional IP
//     (reserved while its rules are made, or the user's
//     spec.loadBalancerIP), a target pool of the nodes' instances with a
//     legacy HTTP health check and a regional forwarding rule per
//     protocol;
//   - internal (networking.gke.io/load-balancer-type: Internal,
//     loadbalancer_internal.go): the cluster's per-zone instance groups, a
//     global health check, a regional backend service and an internal
//     forwarding rule per protocol in the subnetwork;
//
// both with firewall rules admitting the clients and Google's health
// checkers to the node tags. A Service's parts share its names, so a
// Service that changes type has the other type's parts deleted first.
type loadBalancers struct {
	cfg       *Section
	clusterID string
	api       *clients
	in        *instances
	groups    *instanceGroups
	// shared guards the cluster's shared parts (the node health checks,
	// their firewall rule, the instance groups): a Service holds it for
	// reading while it ensures its load balancer on them, and they are
	// deleted, once no load balancer uses them, only while it is held
	// for writing. So a part is never deleted between a Service finding
	// it there and its load balancer referencing it.
	shared sync.RWMutex
	// pools records, per Service (by namespace/name, so Forget finds
	// it), the target pool members its last successful sync left, so a
	// node-set change costs the member diff alone, without reading the
	// pool.
	pools *lbrecords.Store[[]string]
	// sharedFlight makes the Services that find a shared part (the node
	// health checks, their firewall rule) missing at the same moment
	// share one creation and its operation, instead of each inserting it
	// (all but one then failing with alreadyExists) and making their
	// pools reference a check whose creation is still running.
	sharedFlight flight.Group[struct{}]
	// upstreamID is the upstream CCM's cluster ID (clusterid.go), set
	// once at Initialize; sharedMu guards it.
	sharedMu   sync.Mutex
	upstreamID string
	// services patches Services (their upstream finalizers), set at
	// Initialize; nil in tests without a cluster.
	services corev1client.CoreV1Interface
}

// upstreamFinalizers are the upstream GCE CCM's own finalizers on the
// Services it served (cloud-provider-gcp providers/gce/gce_util.go:56,
// gce_loadbalancer_internal.go:47). After a switch only this manager can
// remove them: it does once the load balancer is gone, as upstream's
// ensureExternalLoadBalancerDeleted and ensureInternalLoadBalancerDeleted
// do, or a deleted Service would stay Terminating for ever. (The v2 and
// v3 ones are GKE's own controllers', left to them.)
var upstreamFinalizers = []string{"gke.networking.io/l4-netlb-v1", "gke.networking.io/l4-ilb-v1"}

// dropUpstreamFinalizers patches upstream's finalizers off the Service.
func (l *loadBalancers) dropUpstreamFinalizers(ctx context.Context, svc *v1.Service) error {
	if l.services == nil || !slices.ContainsFunc(svc.Finalizers, func(f string) bool { return slices.Contains(upstreamFinalizers, f) }) {
		return nil
	}
	updated := svc.DeepCopy()
	updated.Finalizers = slices.DeleteFunc(updated.Finalizers, func(f string) bool { return slices.Contains(upstreamFinalizers, f) })
	if _, err := servicehelpers.PatchService(l.services, svc, updated); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove the upstream GCE CCM's finalizers: %w", err)
	}
	klog.FromContext(ctx).Info("Removed the upstream GCE CCM's finalizers", "service", klog.KObj(svc))
	return nil
}

// once runs ensure for a shared part of the cluster once among the
// Services asking at the same time; owner "" is the cluster's shared
// part, anything else (a Service's own) runs as it is.
func (l *loadBalancers) once(ctx context.Context, owner, key string, ensure func(context.Context) error) error {
	if owner != "" {
		return ensure(ctx)
	}
	_, err := l.sharedFlight.Do(ctx, key, func(ctx context.Context) (struct{}, error) { return struct{}{}, ensure(ctx) })
	return err
}

// poolRecordTTL bounds how long a pool record is trusted: members changed
// outside the manager are put right by the next full sync within it.
const poolRecordTTL = 10 * time.Minute

var _ cloudprovider.LoadBalancer = (*loadBalancers)(nil)

// Load-balancing schemes of forwarding rules and backend services.
const (
	schemeExternal = "EXTERNAL"
	schemeInternal = "INTERNAL"
)

// GetLoadBalancerName is upstream's name of the Service's parts.
func (l *loadBalancers) GetLoadBalancerName(_ context.Context, _ string, svc *v1.Service) string {
	return lbName(svc)
}

// GetLoadBalancer reports the address of the Service's forwarding rules.
// Without a rule, any other part the Service still has (its target pool,
// firewall rule, address or backend services) makes the load balancer
// exist with no address: the service controller deletes only load
// balancers that exist, and upstream, answering from the forwarding rule
// alone, leaked the rest when the rule was gone. One filtered list when
// the rule is there.
func (l *loadBalancers) GetLoadBalancer(ctx context.Context, _ string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	base, key := lbName(svc), naming.ServiceKey(svc)
	rules, err := l.serviceRules(ctx, base)
	if err != nil {
		return nil, false, err
	}
	if st := rulesStatus(rules); len(st.Ingress) > 0 {
		return st, true, nil
	}
	left, err := l.anyPartLeft(ctx, base, key)
	if err != nil || !left {
		return nil, false, err
	}
	return &v1.LoadBalancerStatus{}, true, nil
}

// rulesStatus is the status the Service's forwarding rules give: the
// first IPv4 rule's address (by name), then the first IPv6 rule's.
func rulesStatus(rules map[string]*computepb.ForwardingRule) *v1.LoadBalancerStatus {
	var v4, v6 string
	for _, name := range slices.Sorted(maps.Keys(rules)) {
		ip := ruleAddress(rules[name])
		switch {
		case ip == "":
		case isIPv6RuleName(name) || rules[name].GetIpVersion() == "IPV6":
			if v6 == "" {
				v6 = ip
			}
		case v4 == "":
			v4 = ip
		}
	}
	return lbStatus(v4, v6)
}

// anyPartLeft says whether the Service still has a part besides its
// forwarding rules, checked in the reverse of deletion order so a
// deletion cut off anywhere is found with few calls.
func (l *loadBalancers) anyPartLeft(ctx context.Context, base, key string) (bool, error) {
	a, err := l.api.addresses.Get(ctx, &computepb.GetAddressRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, Address: base}, l.api.retry)
	if err == nil && l.owns(a.GetDescription(), key, "") {
		return true, nil
	}
	if err != nil && !isNotFound(err) {
		return false, fmt.Errorf("get address %s: %w", base, err)
	}
	fw, err := l.api.firewalls.Get(ctx, &computepb.GetFirewallRequest{Project: l.cfg.NetworkProjectID, Firewall: firewallName(base)}, l.api.retry)
	if err == nil && l.owns(fw.GetDescription(), key, "") {
		return true, nil
	}
	if err != nil && !isNotFound(err) {
		return false, fmt.Errorf("get firewall rule %s: %w", firewallName(base), err)
	}
	// An IPv6-only Service's client rule is its IPv6 one.
	fw, err = l.api.firewalls.Get(ctx, &computepb.GetFirewallRequest{Project: l.cfg.NetworkProjectID, Firewall: ipv6FirewallName(base)}, l.api.retry)
	if err == nil && l.owns(fw.GetDescription(), key, "") {
		return true, nil
	}
	if err != nil && !isNotFound(err) {
		return false, fmt.Errorf("get firewall rule %s: %w", ipv6FirewallName(base), err)
	}
	pool, err := l.api.targetPools.Get(ctx, &computepb.GetTargetPoolRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, TargetPool: base}, l.api.retry)
	if err == nil && l.owns(pool.GetDescription(), key, "") {
		return true, nil
	}
	if err != nil && !isNotFound(err) {
		return false, fmt.Errorf("get target pool %s: %w", base, err)
	}
	bs, err := l.api.regionBackendServices.Get(ctx, &computepb.GetRegionBackendServiceRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, BackendService: base}, l.api.retry)
	if err == nil && l.owns(bs.GetDescription(), key, "") {
		return true, nil
	}
	if err != nil && !isNotFound(err) {
		return false, fmt.Errorf("get backend service %s: %w", base, err)
	}
	return false, nil
}

// EnsureLoadBalancer creates or updates the Service's load balancer of
// the type it asks for, after deleting the parts of the other type if the
// Service changed type.
func (l *loadBalancers) EnsureLoadBalancer(ctx context.Context, _ string, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	sp, err := serviceSpec(l.cfg, svc)
	if err != nil {
		return nil, err
	}
	base, key := lbName(svc), naming.ServiceKey(svc)
	ctx = withServiceUID(ctx, svc.UID)
	members, tags, err := l.nodeInstances(ctx, nodes)
	if err != nil {
		return nil, err
	}
	rules, err := l.serviceRules(ctx, base)
	if err != nil {
		return nil, err
	}
	want := schemeExternal
	if sp.internal {
		want = schemeInternal
	}
	for _, fr := range rules {
		if l.owns(fr.GetDescription(), key, "") && fr.GetLoadBalancingScheme() != want {
			if err := l.deleteParts(ctx, base, key, rules); err != nil {
				return nil, fmt.Errorf("delete the %s load balancer the Service had: %w", fr.GetLoadBalancingScheme(), err)
			}
			rules = nil
			break
		}
	}
	l.shared.RLock()
	defer l.shared.RUnlock()
	if sp.internal {
		l.pools.Forget(key)
		st, err := l.ensureInternal(ctx, base, key, sp, members, tags, rules)
		if err != nil {
			// The groups may be other than the record says (one deleted
			// behind the manager's back fails the backend service): the
			// next sync reads them.
			l.groups.forget()
		}
		return st, err
	}
	op := l.pools.Begin(key)
	st, err := l.ensureExternal(ctx, base, key, sp, members, tags, rules)
	if err != nil {
		op.End(nil, op.Start)
		return nil, err
	}
	links := instanceLinks(members)
	op.End(&links, op.Start)
	return st, nil
}

// UpdateLoadBalancer brings the Service's backends in step with the
// nodes: the target pool's members (one addInstance and one
// removeInstance call at most), or the cluster's instance groups and the
// backend service's groups.
func (l *loadBalancers) UpdateLoadBalancer(ctx context.Context, _ string, svc *v1.Service, nodes []*v1.Node) error {
	sp, err := serviceSpec(l.cfg, svc)
	if err != nil {
		return err
	}
	members, _, err := l.nodeInstances(ctx, nodes)
	if err != nil {
		return err
	}
	return l.updateHosts(ctx, svc, sp, members)
}

// updateHosts brings one Service's backends to members (the instances of
// the nodes).
func (l *loadBalancers) updateHosts(ctx context.Context, svc *v1.Service, sp *lbSpec, members []instanceRef) error {
	if sp.internal {
		err := l.updateInternal(ctx, lbName(svc), naming.ServiceKey(svc), sp, members)
		if err != nil {
			l.groups.forget()
		}
		return err
	}
	base, links := lbName(svc), instanceLinks(members)
	op := l.pools.Begin(naming.ServiceKey(svc))
	if op.Rec != nil {
		err := l.syncPoolMembers(ctx, &computepb.TargetPool{Name: proto.String(base), Instances: *op.Rec}, links)
		if err == nil {
			op.End(&links, op.RecAt)
			return nil
		}
		// The pool changed under the record (GCE refuses adding a member
		// or removing a non-member): read it and sync in full.
		klog.FromContext(ctx).V(2).Info("Target pool record is stale; reading the pool", "pool", base, "err", err)
	}
	pool, err := l.api.targetPools.Get(ctx, &computepb.GetTargetPoolRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, TargetPool: base}, l.api.retry)
	if err != nil {
		op.End(nil, op.Start)
		return fmt.Errorf("get target pool %s: %w", base, err)
	}
	if err := l.syncPoolMembers(ctx, pool, links); err != nil {
		op.End(nil, op.Start)
		return err
	}
	op.End(&links, op.Start)
	return nil
}

// EnsureLoadBalancerDeleted deletes the Service's parts of either type.
func (l *loadBalancers) EnsureLoadBalancerDeleted(ctx context.Context, _ string, svc *v1.Service) error {
	base, key := lbName(svc), naming.ServiceKey(svc)
	l.pools.Forget(key)
	rules, err := l.serviceRules(ctx, base)
	if err != nil {
		return err
	}
	if err := l.deleteParts(ctx, base, key, rules); err != nil {
		return err
	}
	return l.dropUpstreamFinalizers(ctx, svc)
}

// deleteParts deletes, in dependency order, the Service's forwarding
// rules, its target pool and backend services, its own health checks,
// its firewall rules and the address the manager reserved, then the
// cluster's shared parts no load balancer uses any more. Each step tolerates what is already gone, so a target pool is
// deleted even when its forwarding rule went first, and a deletion cut
// off at any point completes next time. Only resources whose description
// names this cluster and Service are deleted.
func (l *loadBalancers) deleteParts(ctx context.Context, base, key string, rules map[string]*computepb.ForwardingRule) error {
	for _, name := range slices.Sorted(maps.Keys(rules)) {
		if !l.owns(rules[name].GetDescription(), key, "") {
			continue
		}
		if err := l.deleteForwardingRule(ctx, name); err != nil {
			return err
		}
	}
	if err := l.deleteTargetPool(ctx, base, key); err != nil {
		return err
	}
	if _, err := l.deleteBackendServices(ctx, base, key); err != nil {
		return err
	}
	if _, err := l.deleteHealthCheck(ctx, base, key); err != nil {
		return err
	}
	if _, err := l.deleteRegionHealthCheck(ctx, base, key); err != nil {
		return err
	}
	if _, err := l.deleteGlobalHealthCheck(ctx, base, key); err != nil {
		return err
	}
	// The IPv6 rules go first: anyPartLeft finds the rest by the IPv4 ones.
	for _, name := range []string{ipv6FirewallName(base), ipv6HealthCheckFirewallName(base), firewallName(base), healthCheckFirewallName(base, false),
		internalHealthCheckFirewallName(base), legacyHealthCheckFirewallName(base)} {
		if err := l.deleteFirewall(ctx, name, key); err != nil {
			return err
		}
	}
	if err := l.releaseAddress(ctx, base, key); err != nil {
		return err
	}
	return l.releaseShared(ctx)
}

// releaseShared deletes the cluster's shared parts that no load balancer
// uses any more, as upstream does: the node health checks (legacy HTTP,
// global, and the regional one of before; GCE refuses,
// resourceInUseByAnotherResource, while a target pool or backend service
// uses one, and it stays), their firewall rule once both are gone, and
// the instance groups no backend service uses.
func (l *loadBalancers) releaseShared(ctx context.Context) error {
	l.shared.Lock()
	defer l.shared.Unlock()
	hc := nodeHealthCheckName(l.sharedID())
	legacyGone, err := l.deleteHealthCheck(ctx, hc, "")
	if err != nil {
		return err
	}
	regionalGone, err := l.deleteRegionHealthCheck(ctx, hc, "")
	if err != nil {
		return err
	}
	globalGone, err := l.deleteGlobalHealthCheck(ctx, hc, "")
	if err != nil {
		return err
	}
	// The legacy check's rule served the regional one of before too.
	if legacyGone && regionalGone {
		if err := l.deleteFirewall(ctx, healthCheckFirewallName(hc, true), ""); err != nil {
			return err
		}
	}
	if globalGone {
		for _, name := range []string{ipv6HealthCheckFirewallName(hc), internalHealthCheckFirewallName(hc)} {
			if err := l.deleteFirewall(ctx, name, ""); err != nil {
				return err
			}
		}
	}
	return l.groups.deleteUnused(ctx)
}

// serviceRules are the Service's forwarding rules (one per protocol and
// family, named base and base-<protocol>, the IPv6 ones with -ipv6
// after), whoever's they are: one filtered list.
func (l *loadBalancers) serviceRules(ctx context.Context, base string) (map[string]*computepb.ForwardingRule, error) {
	it := l.api.forwardingRules.List(ctx, &computepb.ListForwardingRulesRequest{
		Project: l.cfg.ProjectID, Region: l.cfg.Region, Filter: proto.String(`name eq "` + base + `(-tcp|-udp)?(-ipv6)?"`),
	}, l.api.retry)
	out := map[string]*computepb.ForwardingRule{}
	for {
		fr, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("list forwarding rules %s: %w", base, err)
		}
		out[fr.GetName()] = fr
	}
}

// nodeInstances are the nodes' instances and the network tags firewall
// rules target: nodeTags, else the tags every node has.
func (l *loadBalancers) nodeInstances(ctx context.Context, nodes []*v1.Node) (members []instanceRef, tags []string, err error) {
	var common []string
	for i, n := range nodes {
		inst, err := l.in.Lookup(ctx, n)
		if err != nil {
			return nil, nil, fmt.Errorf("node %s: %w", n.Name, err)
		}
		members = append(members, inst.ref)
		if i == 0 {
			common = slices.Clone(inst.tags)
		} else {
			common = slices.DeleteFunc(common, func(t string) bool { return !slices.Contains(inst.tags, t) })
		}
	}
	if len(l.cfg.NodeTags) > 0 {
		return members, l.cfg.NodeTags, nil
	}
	if len(common) == 0 && len(nodes) > 0 {
		return nil, nil, errors.New("the nodes' instances share no network tag for the firewall rules to target: set gce.nodeTags")
	}
	slices.Sort(common)
	return members, common, nil
}

// instanceLink is an instance's relative link, as target pools and
// instance groups take it.
func instanceLink(r instanceRef) string {
	return "projects/" + r.project + "/zones/" + r.zone + "/instances/" + r.name
}

// instanceLinks are the instances' links, sorted.
func instanceLinks(refs []instanceRef) []string {
	var out []string
	for _, r := range refs {
		out = append(out, instanceLink(r))
	}
	slices.Sort(out)
	return out
}
