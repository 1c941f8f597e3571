package gce

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"cloud.google.com/go/compute/apiv1/computepb"
	"golang.org/x/sync/errgroup"
	"google.golang.org/api/iterator"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// The internal passthrough load balancer's parts: an internal address in
// the subnetwork, a global health check (the cluster's shared one, or the
// Service's own for Local) with its firewall rule, the cluster's instance
// groups (instancegroups.go), and per protocol a regional backend service
// over the groups and an internal forwarding rule, named as upstream
// names them (gce_loadbalancer_internal.go, gce_loadbalancer_naming.go),
// so a cluster switched from it keeps them. Versions of this manager
// before 2026-11-26 used regional health checks: a backend service moves
// to the global check on its next sync and the regional ones go once
// unused (releaseShared, deleteParts).

// maxInternalPorts is how many ports an internal forwarding rule lists;
// a Service with more gets a rule for all ports, as upstream does.
const maxInternalPorts = 5

// ensureInternal creates or updates the internal Service's parts, of
// each family it is served on (loadbalancer_families.go); a family it no
// longer has loses its parts in the same sync. rules are the Service's
// forwarding rules as they are now.
func (l *loadBalancers) ensureInternal(ctx context.Context, base, key string, sp *lbSpec, members []instanceRef, tags []string, rules map[string]*computepb.ForwardingRule) (*v1.LoadBalancerStatus, error) {
	v6, err := l.internalIPv6(ctx, key, sp)
	if err != nil {
		return nil, err
	}
	hc := l.internalHealthCheckFor(base, sp)
	hcOwner := healthCheckOwner(sp, key)
	hcLink := l.globalLink("healthChecks", hc.GetName())
	// The IPv4 rules' names are the backend services' too, the IPv6 rules
	// use them.
	names4 := ruleNames(base, sp)
	keep := map[string]v1.Protocol{}
	had4, had6, upstreams := false, false, false
	for name, fr := range rules {
		if l.owns(fr.GetDescription(), key, "") {
			had6 = had6 || isIPv6RuleName(name)
			had4 = had4 || !isIPv6RuleName(name)
			upstreams = upstreams || (!isIPv6RuleName(name) && parseDescription(fr.GetDescription()).Cluster == "")
		}
	}
	if v6 && sp.v4 && !had6 && upstreams {
		// An internal load balancer the upstream CCM made (its rule's
		// description names no cluster) gets no IPv6 half: upstream
		// serves every Service on IPv4 (its load balancer code never
		// reads spec.ipFamilies), and taking it over adds nothing to
		// it, so the switch opens no new address and the way back finds
		// exactly upstream's parts. Re-creating the Service gives it
		// both families.
		klog.FromContext(ctx).V(2).Info("Internal load balancer the upstream CCM made stays IPv4; re-create the Service for its IPv6 half")
		v6 = false
	}
	for name, p := range names4 {
		if sp.v4 {
			keep[name] = p
		}
		if v6 {
			keep[ipv6RuleName(name)] = p
		}
	}
	// A family going loses its firewall rules before its forwarding
	// rules, so a sync cut off in between still finds the rules and
	// finishes the job.
	var drop []string
	if !sp.v4 && had4 {
		drop = append(drop, firewallName(base))
		if hcOwner != "" {
			drop = append(drop, internalHealthCheckFirewallName(hc.GetName()))
		}
	}
	if !v6 && had6 {
		drop = append(drop, ipv6FirewallName(base))
		if hcOwner != "" {
			drop = append(drop, ipv6HealthCheckFirewallName(hc.GetName()))
		}
	}
	for _, name := range drop {
		if err := l.deleteFirewall(ctx, name, key); err != nil {
			return nil, err
		}
	}
	// The address, the health check with its firewall rules, and the
	// groups do not depend on each other: made at once, as the external
	// parts are.
	var ip string
	var groups []string
	g, gctx := errgroup.WithContext(ctx)
	if sp.v4 {
		g.Go(func() (err error) {
			ip, err = l.ensureInternalAddress(gctx, base, key, sp, rules)
			return err
		})
	}
	g.Go(func() error {
		if err := l.once(gctx, hcOwner, "healthChecks/"+hc.GetName(), func(ctx context.Context) error { return l.ensureGlobalHealthCheck(ctx, hc, hcOwner) }); err != nil {
			return err
		}
		// Upstream's internal health-check rules name no destination
		// (ensureInternalFirewalls, gce_loadbalancer_internal.go:600-618);
		// the IPv6 checkers have a rule of their own, as ingress-gce's
		// (EnsureHealthCheckWithDualStackFirewalls, healthchecksl4.go).
		port := int(hc.GetHttpHealthCheck().GetPort())
		h, hctx := errgroup.WithContext(gctx)
		if sp.v4 {
			h.Go(func() error {
				return l.ensureHealthCheckFirewall(hctx, internalHealthCheckFirewallName(hc.GetName()), port, tags, hcOwner, "", healthCheckRanges)
			})
		}
		if v6 {
			h.Go(func() error {
				return l.ensureHealthCheckFirewall(hctx, ipv6HealthCheckFirewallName(hc.GetName()), port, tags, hcOwner, "", ilbHealthCheckRangesIPv6)
			})
		}
		return h.Wait()
	})
	g.Go(func() (err error) {
		groups, err = l.groups.sync(gctx, membersByZone(members))
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	// A backend service's protocol changes only once no rule of the old
	// protocol uses it, of either family.
	rules = maps.Clone(rules)
	for _, name := range slices.Sorted(maps.Keys(keep)) {
		if cur := rules[name]; cur != nil && l.owns(cur.GetDescription(), key, "") && cur.GetIPProtocol() != string(keep[name]) {
			if err := l.deleteForwardingRule(ctx, name); err != nil {
				return nil, err
			}
			delete(rules, name)
		}
	}
	g, gctx = errgroup.WithContext(ctx)
	if sp.v4 {
		g.Go(func() error {
			if len(sp.sources) == 0 {
				// The Service names IPv6 clients only.
				return l.deleteFirewall(gctx, firewallName(base), key)
			}
			return l.ensureClientFirewall(gctx, base, key, ip, sp, tags)
		})
	}
	ensured := map[string]bool{}
	var ip6 string
	err = l.ensureRules(ctx, key, rules, keep, func(name string, p v1.Protocol, cur *computepb.ForwardingRule) error {
		if bs := backendServiceOf(name); !ensured[bs] {
			if err := l.ensureBackendService(ctx, bs, key, p, hcLink, groups, sp); err != nil {
				return err
			}
			ensured[bs] = true
		}
		if !isIPv6RuleName(name) {
			return l.ensureInternalForwardingRule(ctx, name, key, ip, p, sp, cur)
		}
		fr, err := l.ensureInternalIPv6Rule(ctx, name, key, p, sp, cur)
		if err == nil && ip6 == "" {
			ip6 = ruleAddress(fr)
		}
		return err
	})
	if err != nil {
		_ = g.Wait()
		return nil, err
	}
	// Backend services of protocols the Service no longer has.
	if _, err := l.deleteBackendServicesExcept(ctx, base, key, names4); err != nil {
		return nil, err
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if v6 {
		// The IPv6 clients' rule waits for the IPv6 address.
		if err := l.ensureIPv6ClientFirewall(ctx, base, key, ip6, sp, tags); err != nil {
			return nil, err
		}
	}
	// The rules hold the IP now: the reservation goes, as upstream's
	// (ensureInternalAddress); so does one this manager kept before, or
	// one a failed upstream sync left: one read when there is none.
	if sp.staticIP == "" && (!sp.v4 || !keepsInternalAddress(sp)) {
		if err := l.releaseAddress(ctx, base, key); err != nil {
			return nil, err
		}
	}
	if !sp.v4 {
		ip = ""
	}
	return lbStatus(ip, ip6), nil
}

// ensureIPv6ClientFirewall admits the Service's IPv6 source ranges to its
// ports at the IPv6 address ip on the nodes, as ingress-gce's
// ensureIPv6NodesFirewall (l4ipv6.go:141-197); a Service that names IPv4
// clients only gets none, and loses one it had.
func (l *loadBalancers) ensureIPv6ClientFirewall(ctx context.Context, base, svcKey, ip string, sp *lbSpec, tags []string) error {
	if len(sp.sources6) == 0 || ip == "" {
		return l.deleteFirewall(ctx, ipv6FirewallName(base), svcKey)
	}
	return l.ensureFirewall(ctx, &computepb.Firewall{
		Name: proto.String(ipv6FirewallName(base)), SourceRanges: sp.sources6, TargetTags: tags, DestinationRanges: []string{ip},
		Allowed: allowedPorts(sp.ports, func(p v1.ServicePort) int32 { return p.Port }),
	}, svcKey)
}

// ensureInternalIPv6Rule makes the IPv6 rule forward protocol's ports to
// the backend service of its IPv4 name, as ingress-gce's
// buildExpectedIPv6ForwardingRule (forwarding_rules_ipv6.go:85-135) does,
// and returns it as GCE holds it; cur is the rule as it is, nil if
// missing. A rule that differs is made again on the /96 it had when its
// subnetwork is the same (ingress-gce's IPv6ToUse,
// pkg/l4/address/to_use.go:67-80), without a reservation between
// (ingress-gce holds one, HoldAddress, l4.go:512-529).
func (l *loadBalancers) ensureInternalIPv6Rule(ctx context.Context, name, svcKey string, protocol v1.Protocol, sp *lbSpec, cur *computepb.ForwardingRule) (*computepb.ForwardingRule, error) {
	ports := internalPorts(sp.ports, protocol)
	subnet := l.subnetworkLink(sp.subnet)
	want := &computepb.ForwardingRule{
		Name: proto.String(name), Description: proto.String(l.describe(ctx, svcKey).String()),
		IPProtocol: proto.String(string(protocol)), LoadBalancingScheme: proto.String(schemeInternal), IpVersion: proto.String("IPV6"),
		BackendService: proto.String(l.regionLink("backendServices", backendServiceOf(name))), Network: proto.String(l.cfg.networkURL()),
		Subnetwork: proto.String(subnet), Ports: ports, AllowGlobalAccess: proto.Bool(sp.globalAccess), NetworkTier: proto.String(tierPremium),
	}
	if ports == nil {
		want.AllPorts = proto.Bool(true)
	}
	if cur != nil {
		curPorts := slices.Sorted(slices.Values(cur.GetPorts()))
		if cur.GetLoadBalancingScheme() == schemeInternal && cur.GetIpVersion() == "IPV6" && cur.GetIPProtocol() == string(protocol) &&
			slices.Equal(curPorts, ports) && cur.GetAllPorts() == (ports == nil) && sameLink(cur.GetBackendService(), want.GetBackendService()) &&
			sameLink(cur.GetSubnetwork(), subnet) && cur.GetAllowGlobalAccess() == sp.globalAccess {
			return cur, nil
		}
		if sameLink(cur.GetSubnetwork(), subnet) {
			want.IPAddress = proto.String(ruleAddress(cur))
		}
		if err := l.deleteForwardingRule(ctx, name); err != nil {
			return nil, err
		}
	}
	if err := l.createForwardingRule(ctx, want); err != nil {
		return nil, err
	}
	fr, err := l.api.forwardingRules.Get(ctx, &computepb.GetForwardingRuleRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, ForwardingRule: name}, l.api.retry)
	if err != nil {
		return nil, fmt.Errorf("get forwarding rule %s: %w", name, err)
	}
	return fr, nil
}

// updateInternal brings the cluster's instance groups in step with the
// nodes and the Service's backend services with the zones that have
// nodes. After the first internal Service of a node change, the groups
// are as wanted already and this is one read per backend service.
func (l *loadBalancers) updateInternal(ctx context.Context, base, key string, sp *lbSpec, members []instanceRef) error {
	l.shared.RLock()
	defer l.shared.RUnlock()
	groups, err := l.groups.sync(ctx, membersByZone(members))
	if err != nil {
		return err
	}
	for name := range ruleNames(base, sp) {
		cur, err := l.api.regionBackendServices.Get(ctx, &computepb.GetRegionBackendServiceRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, BackendService: name}, l.api.retry)
		if err != nil {
			return fmt.Errorf("get backend service %s: %w", name, err)
		}
		if !l.owns(cur.GetDescription(), key, "") {
			return fmt.Errorf("backend service %s exists and is not this Service's (description %q)", name, cur.GetDescription())
		}
		if sameGroups(cur.GetBackends(), groups) {
			continue
		}
		if err := l.patchBackendService(ctx, cur, &computepb.BackendService{Backends: backendsOf(groups)}); err != nil {
			return err
		}
	}
	return nil
}

// membersByZone groups the nodes' instance links by zone, sorted: the
// instance groups' wanted members.
func membersByZone(members []instanceRef) map[string][]string {
	out := map[string][]string{}
	for _, m := range members {
		out[m.zone] = append(out[m.zone], instanceLink(m))
	}
	for _, links := range out {
		slices.Sort(links)
	}
	return out
}

func (l *loadBalancers) subnetworkLink(name string) string {
	return "projects/" + l.cfg.NetworkProjectID + "/regions/" + l.cfg.Region + "/subnetworks/" + name
}

// ensureInternalAddress is the internal Service's IP: spec.loadBalancerIP
// as it is (the user's, never released), else the IP its forwarding rules
// hold, else a new one in the subnetwork. As upstream's internal load
// balancer (ensureInternalLoadBalancer, gce_loadbalancer_internal.go:
// 167-182, with the address manager's HoldAddress and ReleaseAddress,
// gce_address_manager.go:61-120), an address named base is reserved only
// while rules are made, promoting the IP a rule holds so a rule made
// again keeps it, and released after (ensureInternal); with the rules as
// wanted no address is touched at all, so taking over upstream's load
// balancer reserves nothing. Only a Service with more than one protocol
// keeps its address for its life: its rules share the IP, which GCE
// allows only on a SHARED_LOADBALANCER_VIP address.
func (l *loadBalancers) ensureInternalAddress(ctx context.Context, base, svcKey string, sp *lbSpec, rules map[string]*computepb.ForwardingRule) (string, error) {
	if sp.staticIP != "" {
		return sp.staticIP, nil
	}
	subnet := l.subnetworkLink(sp.subnet)
	want := &computepb.Address{
		Name: proto.String(base), AddressType: proto.String("INTERNAL"), Purpose: proto.String("SHARED_LOADBALANCER_VIP"), Subnetwork: proto.String(subnet),
	}
	for _, name := range slices.Sorted(maps.Keys(rules)) {
		if fr := rules[name]; !isIPv6RuleName(name) && l.owns(fr.GetDescription(), svcKey, "") && fr.GetLoadBalancingScheme() == schemeInternal && sameLink(fr.GetSubnetwork(), subnet) && fr.GetIPAddress() != "" {
			want.Address = proto.String(fr.GetIPAddress())
			break
		}
	}
	if held := want.GetAddress(); held != "" && !keepsInternalAddress(sp) {
		settled := true
		for name, p := range ruleNames(base, sp) {
			cur := rules[name]
			settled = settled && cur != nil && l.owns(cur.GetDescription(), svcKey, "") && l.internalRuleAsWanted(cur, name, held, p, sp)
		}
		if settled {
			return held, nil
		}
	}
	a, err := l.reserveAddress(ctx, svcKey, want, func(a *computepb.Address) bool {
		return a.GetAddressType() != "INTERNAL" || !sameLink(a.GetSubnetwork(), subnet)
	})
	if err != nil {
		return "", err
	}
	return a.GetAddress(), nil
}

// keepsInternalAddress says the internal Service's address stays
// reserved for its life: its rules (one per protocol) share the IP.
func keepsInternalAddress(sp *lbSpec) bool { return sp.staticIP == "" && len(sp.protocols) > 1 }

// internalHealthCheckFor is the global health check of the Service's
// backend services: its own on healthCheckNodePort
// (externalTrafficPolicy Local), else the cluster's shared check of
// kube-proxy, with upstream's timings.
func (l *loadBalancers) internalHealthCheckFor(base string, sp *lbSpec) *computepb.HealthCheck {
	name, port, path := nodeHealthCheckName(l.sharedID()), int32(kubeProxyHealthPort), "/healthz"
	if sp.local {
		name, port, path = base, sp.healthPort, sp.healthPath
	}
	return &computepb.HealthCheck{
		Name: proto.String(name), Type: proto.String("HTTP"),
		HttpHealthCheck:  &computepb.HTTPHealthCheck{Port: proto.Int32(port), RequestPath: proto.String(path)},
		CheckIntervalSec: proto.Int32(8), TimeoutSec: proto.Int32(1), HealthyThreshold: proto.Int32(1), UnhealthyThreshold: proto.Int32(3),
	}
}

// ensureGlobalHealthCheck makes the global health check exist as want;
// svcKey is "" for the cluster's shared one.
func (l *loadBalancers) ensureGlobalHealthCheck(ctx context.Context, want *computepb.HealthCheck, svcKey string) error {
	name := want.GetName()
	want.Description = proto.String(l.describe(ctx, svcKey).String())
	cur, err := l.api.healthChecks.Get(ctx, &computepb.GetHealthCheckRequest{Project: l.cfg.ProjectID, HealthCheck: name}, l.api.retry)
	switch {
	case isNotFound(err):
		err = waitOp(ctx)(l.api.healthChecks.Insert(ctx, &computepb.InsertHealthCheckRequest{Project: l.cfg.ProjectID, HealthCheckResource: want}, l.api.retry))
		if err != nil && !alreadyExists(err) {
			return fmt.Errorf("create health check %s: %w", name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("get health check %s: %w", name, err)
	}
	if !l.owns(cur.GetDescription(), svcKey, name) {
		return fmt.Errorf("health check %s exists and is not this cluster's (description %q)", name, cur.GetDescription())
	}
	if cur.GetType() == want.GetType() && cur.GetHttpHealthCheck().GetPort() == want.GetHttpHealthCheck().GetPort() &&
		cur.GetHttpHealthCheck().GetRequestPath() == want.GetHttpHealthCheck().GetRequestPath() &&
		cur.GetCheckIntervalSec() == want.GetCheckIntervalSec() && cur.GetUnhealthyThreshold() == want.GetUnhealthyThreshold() {
		return nil
	}
	err = waitOp(ctx)(l.api.healthChecks.Update(ctx, &computepb.UpdateHealthCheckRequest{Project: l.cfg.ProjectID, HealthCheck: name, HealthCheckResource: want}, l.api.retry))
	if err != nil {
		return fmt.Errorf("update health check %s: %w", name, err)
	}
	return nil
}

// deleteGlobalHealthCheck deletes the global health check name if it is
// svcKey's ("" for the cluster's shared one) and no backend service uses
// it, and says whether it is gone. One not the Service's stays and counts
// as not gone.
func (l *loadBalancers) deleteGlobalHealthCheck(ctx context.Context, name, svcKey string) (bool, error) {
	return l.deleteCheck(name, svcKey, func() (*computepb.HealthCheck, error) {
		return l.api.healthChecks.Get(ctx, &computepb.GetHealthCheckRequest{Project: l.cfg.ProjectID, HealthCheck: name}, l.api.retry)
	}, func() error {
		return waitOp(ctx)(l.api.healthChecks.Delete(ctx, &computepb.DeleteHealthCheckRequest{Project: l.cfg.ProjectID, HealthCheck: name}, l.api.retry))
	})
}

// deleteRegionHealthCheck is deleteGlobalHealthCheck for the regional
// checks versions before 2026-11-26 made.
func (l *loadBalancers) deleteRegionHealthCheck(ctx context.Context, name, svcKey string) (bool, error) {
	return l.deleteCheck(name, svcKey, func() (*computepb.HealthCheck, error) {
		return l.api.regionHealthChecks.Get(ctx, &computepb.GetRegionHealthCheckRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, HealthCheck: name}, l.api.retry)
	}, func() error {
		return waitOp(ctx)(l.api.regionHealthChecks.Delete(ctx, &computepb.DeleteRegionHealthCheckRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, HealthCheck: name}, l.api.retry))
	})
}

// deleteCheck reads a health check with get and, if it is svcKey's,
// deletes it with del; in use, it stays and counts as not gone.
func (l *loadBalancers) deleteCheck(name, svcKey string, get func() (*computepb.HealthCheck, error), del func() error) (bool, error) {
	cur, err := get()
	if isNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("get health check %s: %w", name, err)
	}
	if !l.owns(cur.GetDescription(), svcKey, name) {
		return false, nil
	}
	err = ignoreNotFound(del())
	if inUse(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("delete health check %s: %w", name, err)
	}
	return true, nil
}

func backendsOf(groups []string) []*computepb.Backend {
	var out []*computepb.Backend
	for _, g := range groups {
		out = append(out, &computepb.Backend{Group: proto.String(g), BalancingMode: proto.String("CONNECTION")})
	}
	return out
}

// sameGroups says the backends are exactly the groups.
func sameGroups(backends []*computepb.Backend, groups []string) bool {
	if len(backends) != len(groups) {
		return false
	}
	for _, b := range backends {
		if !slices.ContainsFunc(groups, func(g string) bool { return sameLink(b.GetGroup(), g) }) {
			return false
		}
	}
	return true
}

// ensureBackendService makes the backend service of one protocol balance
// over the groups with the health check.
func (l *loadBalancers) ensureBackendService(ctx context.Context, name, svcKey string, protocol v1.Protocol, hc string, groups []string, sp *lbSpec) error {
	affinity := "NONE"
	if sp.sessionIP {
		affinity = "CLIENT_IP"
	}
	want := &computepb.BackendService{
		Name: proto.String(name), Description: proto.String(l.describe(ctx, svcKey).String()),
		LoadBalancingScheme: proto.String(schemeInternal), Protocol: proto.String(string(protocol)),
		HealthChecks: []string{hc}, Backends: backendsOf(groups), SessionAffinity: proto.String(affinity),
	}
	cur, err := l.api.regionBackendServices.Get(ctx, &computepb.GetRegionBackendServiceRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, BackendService: name}, l.api.retry)
	switch {
	case isNotFound(err):
		err = waitOp(ctx)(l.api.regionBackendServices.Insert(ctx, &computepb.InsertRegionBackendServiceRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, BackendServiceResource: want}, l.api.retry))
		if err != nil && !alreadyExists(err) {
			return fmt.Errorf("create backend service %s: %w", name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("get backend service %s: %w", name, err)
	}
	if !l.owns(cur.GetDescription(), svcKey, "") {
		return fmt.Errorf("backend service %s exists and is not this Service's (description %q)", name, cur.GetDescription())
	}
	if cur.GetProtocol() == want.GetProtocol() && cur.GetSessionAffinity() == affinity && len(cur.GetHealthChecks()) == 1 &&
		sameLink(cur.GetHealthChecks()[0], hc) && sameGroups(cur.GetBackends(), groups) {
		return nil
	}
	return l.patchBackendService(ctx, cur, &computepb.BackendService{
		Protocol: want.Protocol, HealthChecks: want.HealthChecks, Backends: want.Backends, SessionAffinity: want.SessionAffinity,
	})
}

// patchBackendService changes the fields patch sets, on the version cur
// read: GCE refuses the patch (412) if the service changed since, and the
// Service's next sync reads it again.
func (l *loadBalancers) patchBackendService(ctx context.Context, cur, patch *computepb.BackendService) error {
	patch.Fingerprint = cur.Fingerprint
	err := waitOp(ctx)(l.api.regionBackendServices.Patch(ctx, &computepb.PatchRegionBackendServiceRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region,
		BackendService: cur.GetName(), BackendServiceResource: patch}, l.api.retry))
	if err != nil {
		return fmt.Errorf("update backend service %s: %w", cur.GetName(), err)
	}
	return nil
}

// deleteBackendServicesExcept deletes the Service's backend services
// (named like its forwarding rules) not in keep, after their rules went;
// it says whether the Service had any.
func (l *loadBalancers) deleteBackendServicesExcept(ctx context.Context, base, svcKey string, keep map[string]v1.Protocol) (bool, error) {
	it := l.api.regionBackendServices.List(ctx, &computepb.ListRegionBackendServicesRequest{
		Project: l.cfg.ProjectID, Region: l.cfg.Region, Filter: proto.String(`name eq "` + base + `(-tcp|-udp)?"`),
	}, l.api.retry)
	had := false
	var stale []string
	for {
		bs, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			return false, fmt.Errorf("list backend services %s: %w", base, err)
		}
		if !l.owns(bs.GetDescription(), svcKey, "") {
			continue
		}
		had = true
		if _, ok := keep[bs.GetName()]; !ok {
			stale = append(stale, bs.GetName())
		}
	}
	for _, name := range stale {
		err := waitOp(ctx)(l.api.regionBackendServices.Delete(ctx, &computepb.DeleteRegionBackendServiceRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, BackendService: name}, l.api.retry))
		if err = ignoreNotFound(err); err != nil {
			return had, fmt.Errorf("delete backend service %s: %w", name, err)
		}
	}
	return had, nil
}

// deleteBackendServices deletes all the Service's backend services.
func (l *loadBalancers) deleteBackendServices(ctx context.Context, base, svcKey string) (bool, error) {
	return l.deleteBackendServicesExcept(ctx, base, svcKey, nil)
}

// internalPorts are an internal forwarding rule's ports for protocol, or
// nil when there are more than it lists (the rule takes all ports).
func internalPorts(ports []v1.ServicePort, protocol v1.Protocol) []string {
	var out []string
	for _, p := range ports {
		if p.Protocol == protocol {
			out = append(out, strconv.Itoa(int(p.Port)))
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > maxInternalPorts {
		return nil
	}
	return out
}

// internalRuleAsWanted says the internal forwarding rule cur, named
// name, forwards protocol's ports at ip to its backend service in the
// Service's subnetwork with its global access: nothing to make again.
func (l *loadBalancers) internalRuleAsWanted(cur *computepb.ForwardingRule, name, ip string, protocol v1.Protocol, sp *lbSpec) bool {
	ports := internalPorts(sp.ports, protocol)
	curPorts := slices.Sorted(slices.Values(cur.GetPorts()))
	return cur.GetLoadBalancingScheme() == schemeInternal && cur.GetIPAddress() == ip && cur.GetIPProtocol() == string(protocol) &&
		slices.Equal(curPorts, ports) && cur.GetAllPorts() == (ports == nil) &&
		sameLink(cur.GetBackendService(), l.regionLink("backendServices", name)) && sameLink(cur.GetSubnetwork(), l.subnetworkLink(sp.subnet)) &&
		cur.GetAllowGlobalAccess() == sp.globalAccess
}

// ensureInternalForwardingRule makes the rule forward protocol's ports at
// ip to the backend service of its name; cur is the rule as it is, nil
// if missing. A rule that differs is made again: the IP is reserved, so
// it stays.
func (l *loadBalancers) ensureInternalForwardingRule(ctx context.Context, name, svcKey, ip string, protocol v1.Protocol, sp *lbSpec, cur *computepb.ForwardingRule) error {
	ports := internalPorts(sp.ports, protocol)
	bs := l.regionLink("backendServices", name)
	subnet := l.subnetworkLink(sp.subnet)
	want := &computepb.ForwardingRule{
		Name: proto.String(name), Description: proto.String(l.describe(ctx, svcKey).String()),
		IPAddress: proto.String(ip), IPProtocol: proto.String(string(protocol)), LoadBalancingScheme: proto.String(schemeInternal),
		BackendService: proto.String(bs), Network: proto.String(l.cfg.networkURL()), Subnetwork: proto.String(subnet),
		Ports: ports, AllowGlobalAccess: proto.Bool(sp.globalAccess),
	}
	if ports == nil {
		want.AllPorts = proto.Bool(true)
	}
	if cur != nil {
		if l.internalRuleAsWanted(cur, name, ip, protocol, sp) {
			return nil
		}
		if err := l.deleteForwardingRule(ctx, name); err != nil {
			return err
		}
	}
	return l.createForwardingRule(ctx, want)
}
