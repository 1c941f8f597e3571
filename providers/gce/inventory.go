package gce

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"cloud.google.com/go/compute/apiv1/computepb"
	"golang.org/x/sync/errgroup"
	computev1 "google.golang.org/api/compute/v1"
	"google.golang.org/api/iterator"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/types"

	"github.com/multicloud-ccm/multicloud-ccm/providers/inventory"
)

// The backend's inventory (issue 22): every resource of the cluster's
// load balancers, from one listing per resource type, for drift repair
// and orphan cleanup (controllers/lbrepair, controllers/orphans).
//
// A part is the cluster's when its description, as this manager writes
// it (loadbalancer_names.go), names the cluster ID; the cluster's shared
// parts (the node health checks, their firewall rules, the instance
// groups) also when they carry the upstream GCE CCM's marks of the
// cluster (its cluster ID, clusterid.go, in their names or
// descriptions). The lists ask GCE for those descriptions (a regular
// expression filter), so other clusters' resources are not even
// transferred. A Service's parts the upstream CCM made and this manager
// adopted keep upstream's description, which names no cluster: they
// are not listed, as another cluster's parts made by upstream would be
// indistinguishable from them.

var _ inventory.Inventory = (*loadBalancers)(nil)

// Kinds of the parts, in GCE's terms.
const (
	kindForwardingRule    = "forwarding rule"
	kindTargetPool        = "target pool"
	kindBackendService    = "backend service"
	kindHTTPHealthCheck   = "http health check"
	kindHealthCheck       = "health check"
	kindRegionHealthCheck = "region health check"
	kindFirewall          = "firewall rule"
	kindAddress           = "address"
	kindInstanceGroup     = "instance group"
)

// Deletion order: a forwarding rule uses its target pool or backend
// service, which use the health check and instance groups; firewall
// rules and the address depend on nothing, deleted last as deleteParts
// does (the address after the rules that hold its IP).
const (
	orderRule = iota + 1
	orderBackend
	orderCheck
	orderFirewall
	orderAddress
)

// partMark is what a part's name and description say of it.
type partMark struct {
	// ok: the cluster's.
	ok bool
	// shared: the cluster's shared part, of no one Service.
	shared bool
	svc    types.NamespacedName
	uid    types.UID
	// reserved: an address the manager reserved.
	reserved bool
}

// markOf reads a part's owner from its name and description: this
// manager's description naming the cluster (a Service's part, or with no
// Service the cluster's shared part), or the upstream CCM's marks of the
// shared parts: the shared check's firewall rule names the upstream
// cluster ID in its description, the node health checks and instance
// groups are named after it (their description naming the check itself,
// or none).
func (l *loadBalancers) markOf(name, desc string) partMark {
	d := parseDescription(desc)
	sid := l.sharedID()
	switch {
	case d.Cluster == l.clusterID:
		if d.Service == "" {
			return partMark{ok: true, shared: true}
		}
		ns, n, ok := strings.Cut(d.Service, "/")
		if !ok || ns == "" || n == "" {
			return partMark{}
		}
		return partMark{ok: true, svc: types.NamespacedName{Namespace: ns, Name: n}, uid: types.UID(d.UID), reserved: d.Address != ""}
	case d.Cluster == sid && d.Service == "":
		return partMark{ok: true, shared: true}
	case d.Cluster == "" && l.sharedName(name) && (strings.TrimSpace(desc) == "" || d.Service == name):
		return partMark{ok: true, shared: true}
	}
	return partMark{}
}

// sharedName says name is one of the cluster's shared parts' names.
func (l *loadBalancers) sharedName(name string) bool {
	hc := nodeHealthCheckName(l.sharedID())
	return name == hc || name == healthCheckFirewallName(hc, true) || name == internalHealthCheckFirewallName(hc) || name == instanceGroupName(l.sharedID())
}

// idSafe is what may go into a filter's literal unescaped.
var idSafe = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// markFilter is the regular expression filter on description that finds
// the cluster's parts: this manager's descriptions name the cluster ID;
// upstream's shared check firewall rule names the upstream cluster ID,
// its legacy node health check names itself. Everything it lets through
// is checked again (markOf).
func (l *loadBalancers) markFilter() string {
	ids := []string{regexp.QuoteMeta(l.clusterID)}
	alts := []string{}
	if sid := l.sharedID(); sid != l.clusterID && idSafe.MatchString(sid) {
		ids = append(ids, regexp.QuoteMeta(sid))
	}
	alts = append(alts, `cluster-id":"(`+strings.Join(ids, "|")+`)"`,
		`service-name":"`+regexp.QuoteMeta(nodeHealthCheckName(l.sharedID()))+`"`)
	return `description eq '.*"kubernetes\.io/(` + strings.Join(alts, "|") + `).*'`
}

// usersFilter is markFilter widened to every Service's part, upstream's
// too (its description names the Service, no cluster): the target pools
// and backend services it lets through are what says whether a shared
// part is still needed, and an adopted Service's pool keeps upstream's
// description while it uses the cluster's shared health check. Only
// markOf's parts are listed.
func (l *loadBalancers) usersFilter() string {
	f := l.markFilter()
	return strings.TrimSuffix(f, `).*'`) + `|service-name":"[^"/]+/[^"]+").*'`
}

// nextAll drains a paged iterator.
func nextAll[T any](it interface{ Next() (T, error) }) ([]T, error) {
	var out []T
	for {
		v, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
}

// partID is a resource's relative link (projects/<p>/...), its identity
// in Owned.ID.
func partID(selfLink string) string {
	if i := strings.Index(selfLink, "projects/"); i >= 0 {
		return selfLink[i:]
	}
	return selfLink
}

// shortLink is a reference's last two segments ("targetPools/a1b2").
func shortLink(s string) string {
	parts := strings.Split(strings.TrimRight(s, "/"), "/")
	if len(parts) < 2 {
		return s
	}
	return parts[len(parts)-2] + "/" + parts[len(parts)-1]
}

// instanceShort is an instance link as "<zone>/<name>".
func instanceShort(link string) string {
	parts := strings.Split(link, "/")
	if len(parts) >= 3 && parts[len(parts)-2] == "instances" {
		return parts[len(parts)-3] + "/" + parts[len(parts)-1]
	}
	return link
}

func sortedJoin(ss []string) string {
	ss = slices.Clone(ss)
	slices.Sort(ss)
	return strings.Join(ss, ",")
}

// listing is one of Owned's listings: it appends what it found.
type listing func(ctx context.Context, add func(inventory.Owned, string)) error

// Owned lists the cluster's load balancer parts: one listing each of
// forwarding rules, target pools, backend services, legacy, global and
// regional health checks, firewall rules, addresses (unfiltered: the
// user's address a Service names is found by its IP) and one aggregated
// listing of instance groups, all at once; two more (global health
// checks, firewall rules, by name) when the cluster has the upstream
// CCM's cluster ID, whose internal shared parts carry no description.
// Calls: one per page of each, whatever the number of Services.
func (l *loadBalancers) Owned(ctx context.Context) ([]inventory.Owned, error) {
	var (
		mu   sync.Mutex
		out  []inventory.Owned
		seen = map[string]bool{}
		// ruleIPs are the IPs of the cluster's forwarding rules: an
		// address holding one that the manager did not reserve is the
		// user's (spec.loadBalancerIP), kept.
		ruleIPs = map[string]types.NamespacedName{}
		addrs   []*computepb.Address
	)
	add := func(o inventory.Owned, ip string) {
		mu.Lock()
		defer mu.Unlock()
		if seen[o.ID] {
			return
		}
		seen[o.ID] = true
		out = append(out, o)
		if ip != "" && o.Kind == kindForwardingRule && o.Service != (types.NamespacedName{}) {
			ruleIPs[ip] = o.Service
		}
	}
	// used are the parts (by ID) the cluster's target pools and backend
	// services reference: a shared part none references is unneeded.
	used := map[string]bool{}
	use := func(links ...string) {
		mu.Lock()
		defer mu.Unlock()
		for _, link := range links {
			used[partID(link)] = true
		}
	}
	listings := []listing{l.listRules, l.listPools(use), l.listBackendServices(use), l.listHTTPHealthChecks,
		l.listHealthChecks(l.markFilter()), l.listRegionHealthChecks, l.listFirewalls(l.markFilter()), l.listGroups,
		func(ctx context.Context, _ func(inventory.Owned, string)) error {
			it := l.api.addresses.List(ctx, &computepb.ListAddressesRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region}, l.api.retry)
			all, err := nextAll[*computepb.Address](it)
			if err != nil {
				return fmt.Errorf("list addresses: %w", err)
			}
			mu.Lock()
			addrs = all
			mu.Unlock()
			return nil
		}}
	if sid := l.sharedID(); sid != l.clusterID {
		hc := nodeHealthCheckName(sid)
		listings = append(listings, l.listHealthChecks(`name eq "`+hc+`"`), l.listFirewalls(`name eq "`+internalHealthCheckFirewallName(hc)+`"`))
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, list := range listings {
		g.Go(func() error { return list(gctx, add) })
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for _, a := range addrs {
		m := l.markOf(a.GetName(), a.GetDescription())
		o := inventory.Owned{Kind: kindAddress, ID: partID(a.GetSelfLink()), Name: a.GetName(), Order: orderAddress, Detail: addressDetail(a)}
		switch {
		case m.ok && !m.shared:
			o.Service, o.UID, o.Kept = m.svc, m.uid, !m.reserved
		case parseDescription(a.GetDescription()).Cluster == "" && ruleIPs[a.GetAddress()] != (types.NamespacedName{}):
			// The user's address (spec.loadBalancerIP), which the
			// Service's rules hold.
			o.Service, o.Kept = ruleIPs[a.GetAddress()], true
		default:
			continue
		}
		add(o, "")
	}
	l.markUnneeded(out, used)
	slices.SortFunc(out, func(a, b inventory.Owned) int {
		if c := a.Order - b.Order; c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// owned is a part's Owned from its mark; false when not the cluster's.
func (l *loadBalancers) owned(kind, selfLink, name, desc string, order int, detail string) (inventory.Owned, bool) {
	m := l.markOf(name, desc)
	if !m.ok {
		return inventory.Owned{}, false
	}
	return inventory.Owned{Kind: kind, ID: partID(selfLink), Name: name, Service: m.svc, UID: m.uid, Detail: detail, Order: order}, true
}

func (l *loadBalancers) listRules(ctx context.Context, add func(inventory.Owned, string)) error {
	it := l.api.forwardingRules.List(ctx, &computepb.ListForwardingRulesRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, Filter: proto.String(l.markFilter())}, l.api.retry)
	all, err := nextAll[*computepb.ForwardingRule](it)
	if err != nil {
		return fmt.Errorf("list forwarding rules: %w", err)
	}
	for _, fr := range all {
		if o, ok := l.owned(kindForwardingRule, fr.GetSelfLink(), fr.GetName(), fr.GetDescription(), orderRule, ruleDetail(fr)); ok {
			add(o, fr.GetIPAddress())
		}
	}
	return nil
}

// markUnneeded marks the cluster's shared parts that no listed target
// pool or backend service references (used, by ID): the node health
// checks and instance groups none uses, and a check's firewall rule once
// the checks it admits the checkers to are unneeded or gone. What it
// marks, DeleteOrphan checks again from fresh reads (deleteShared).
func (l *loadBalancers) markUnneeded(out []inventory.Owned, used map[string]bool) {
	// neededChecks are the names of the shared checks of each kind still
	// needed.
	neededChecks := map[namedPart]bool{}
	for i, o := range out {
		if o.Service != (types.NamespacedName{}) || o.UID != "" {
			continue
		}
		switch o.Kind {
		case kindHTTPHealthCheck, kindHealthCheck, kindRegionHealthCheck, kindInstanceGroup:
			out[i].Unneeded = !used[o.ID]
			if !out[i].Unneeded && o.Kind != kindInstanceGroup {
				neededChecks[namedPart{o.Kind, o.Name}] = true
			}
		}
	}
	for i, o := range out {
		if o.Service != (types.NamespacedName{}) || o.UID != "" || o.Kind != kindFirewall {
			continue
		}
		if checks, ok := sharedFirewallChecks(o.Name); ok {
			out[i].Unneeded = !slices.ContainsFunc(checks, func(c namedPart) bool { return neededChecks[c] })
		}
	}
}

// namedPart is a part by kind and name.
type namedPart struct{ kind, name string }

// sharedFirewallChecks are the shared health checks a shared firewall
// rule admits Google's checkers to, by its name (healthCheckFirewallName,
// internalHealthCheckFirewallName, ipv6HealthCheckFirewallName): the
// legacy HTTP check's rule also
// served the regional check of before. False for a name of neither form.
func sharedFirewallChecks(name string) ([]namedPart, bool) {
	if hc, ok := strings.CutSuffix(name, "-http-hc"); ok {
		return []namedPart{{kindHTTPHealthCheck, hc}, {kindRegionHealthCheck, hc}}, true
	}
	if hc, ok := strings.CutSuffix(name, "-hc"+ipv6Suffix); ok {
		return []namedPart{{kindHealthCheck, hc}}, true
	}
	if hc, ok := strings.CutSuffix(name, "-hc"); ok {
		return []namedPart{{kindHealthCheck, hc}}, true
	}
	return nil, false
}

func (l *loadBalancers) listPools(use func(...string)) listing {
	return func(ctx context.Context, add func(inventory.Owned, string)) error {
		it := l.api.targetPools.List(ctx, &computepb.ListTargetPoolsRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, Filter: proto.String(l.usersFilter())}, l.api.retry)
		all, err := nextAll[*computepb.TargetPool](it)
		if err != nil {
			return fmt.Errorf("list target pools: %w", err)
		}
		for _, p := range all {
			use(p.GetHealthChecks()...)
			var members, checks []string
			for _, i := range p.GetInstances() {
				members = append(members, instanceShort(i))
			}
			for _, h := range p.GetHealthChecks() {
				checks = append(checks, shortLink(h))
			}
			detail := fmt.Sprintf("instances %s; health check %s; affinity %s", sortedJoin(members), sortedJoin(checks), p.GetSessionAffinity())
			if o, ok := l.owned(kindTargetPool, p.GetSelfLink(), p.GetName(), p.GetDescription(), orderBackend, detail); ok {
				add(o, "")
			}
		}
		return nil
	}
}

func (l *loadBalancers) listBackendServices(use func(...string)) listing {
	return func(ctx context.Context, add func(inventory.Owned, string)) error {
		it := l.api.regionBackendServices.List(ctx, &computepb.ListRegionBackendServicesRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, Filter: proto.String(l.usersFilter())}, l.api.retry)
		all, err := nextAll[*computepb.BackendService](it)
		if err != nil {
			return fmt.Errorf("list backend services: %w", err)
		}
		for _, bs := range all {
			use(bs.GetHealthChecks()...)
			var groups, checks []string
			for _, b := range bs.GetBackends() {
				use(b.GetGroup())
				parts := strings.Split(b.GetGroup(), "/")
				g := b.GetGroup()
				if len(parts) >= 3 {
					g = parts[len(parts)-3] + "/" + parts[len(parts)-1]
				}
				groups = append(groups, g)
			}
			for _, h := range bs.GetHealthChecks() {
				checks = append(checks, shortLink(h))
			}
			detail := fmt.Sprintf("%s %s; groups %s; health check %s; affinity %s", bs.GetLoadBalancingScheme(), bs.GetProtocol(), sortedJoin(groups), sortedJoin(checks), bs.GetSessionAffinity())
			if o, ok := l.owned(kindBackendService, bs.GetSelfLink(), bs.GetName(), bs.GetDescription(), orderBackend, detail); ok {
				add(o, "")
			}
		}
		return nil
	}
}

func (l *loadBalancers) listHTTPHealthChecks(ctx context.Context, add func(inventory.Owned, string)) error {
	err := l.api.httpHealthChecks.List(l.cfg.ProjectID).Filter(l.markFilter()).Pages(ctx, func(page *computev1.HttpHealthCheckList) error {
		for _, hc := range page.Items {
			detail := fmt.Sprintf("HTTP port %d path %s; every %ds, unhealthy after %d", hc.Port, hc.RequestPath, hc.CheckIntervalSec, hc.UnhealthyThreshold)
			if o, ok := l.owned(kindHTTPHealthCheck, hc.SelfLink, hc.Name, hc.Description, orderCheck, detail); ok {
				add(o, "")
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("list http health checks: %w", err)
	}
	return nil
}

func healthCheckDetail(hc *computepb.HealthCheck) string {
	return fmt.Sprintf("%s port %d path %s; every %ds, unhealthy after %d", hc.GetType(), hc.GetHttpHealthCheck().GetPort(), hc.GetHttpHealthCheck().GetRequestPath(), hc.GetCheckIntervalSec(), hc.GetUnhealthyThreshold())
}

func (l *loadBalancers) listHealthChecks(filter string) listing {
	return func(ctx context.Context, add func(inventory.Owned, string)) error {
		it := l.api.healthChecks.List(ctx, &computepb.ListHealthChecksRequest{Project: l.cfg.ProjectID, Filter: proto.String(filter)}, l.api.retry)
		all, err := nextAll[*computepb.HealthCheck](it)
		if err != nil {
			return fmt.Errorf("list health checks: %w", err)
		}
		for _, hc := range all {
			if o, ok := l.owned(kindHealthCheck, hc.GetSelfLink(), hc.GetName(), hc.GetDescription(), orderCheck, healthCheckDetail(hc)); ok {
				add(o, "")
			}
		}
		return nil
	}
}

func (l *loadBalancers) listRegionHealthChecks(ctx context.Context, add func(inventory.Owned, string)) error {
	it := l.api.regionHealthChecks.List(ctx, &computepb.ListRegionHealthChecksRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, Filter: proto.String(l.markFilter())}, l.api.retry)
	all, err := nextAll[*computepb.HealthCheck](it)
	if err != nil {
		return fmt.Errorf("list regional health checks: %w", err)
	}
	for _, hc := range all {
		if o, ok := l.owned(kindRegionHealthCheck, hc.GetSelfLink(), hc.GetName(), hc.GetDescription(), orderCheck, healthCheckDetail(hc)); ok {
			add(o, "")
		}
	}
	return nil
}

func (l *loadBalancers) listFirewalls(filter string) listing {
	return func(ctx context.Context, add func(inventory.Owned, string)) error {
		it := l.api.firewalls.List(ctx, &computepb.ListFirewallsRequest{Project: l.cfg.NetworkProjectID, Filter: proto.String(filter)}, l.api.retry)
		all, err := nextAll[*computepb.Firewall](it)
		if err != nil {
			return fmt.Errorf("list firewall rules: %w", err)
		}
		for _, fw := range all {
			if o, ok := l.owned(kindFirewall, fw.GetSelfLink(), fw.GetName(), fw.GetDescription(), orderFirewall, firewallDetail(fw)); ok {
				add(o, "")
			}
		}
		return nil
	}
}

func (l *loadBalancers) listGroups(ctx context.Context, add func(inventory.Owned, string)) error {
	name := instanceGroupName(l.sharedID())
	it := l.api.instanceGroups.AggregatedList(ctx, &computepb.AggregatedListInstanceGroupsRequest{
		Project: l.cfg.ProjectID, Filter: proto.String(`name eq "` + name + `"`),
	}, l.api.retry)
	for {
		pair, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("list instance groups %s: %w", name, err)
		}
		for _, ig := range pair.Value.GetInstanceGroups() {
			zone := lastSegment(ig.GetZone())
			if ig.GetName() != name || !l.cfg.managesZone(zone) {
				continue
			}
			detail := fmt.Sprintf("zone %s, %d instances", zone, ig.GetSize())
			if o, ok := l.owned(kindInstanceGroup, ig.GetSelfLink(), ig.GetName(), ig.GetDescription(), orderCheck, detail); ok && o.Service == (types.NamespacedName{}) {
				add(o, "")
			}
		}
	}
}

// ruleDetail is what an ensure sets on a forwarding rule, and makes it
// again when it differs.
func ruleDetail(fr *computepb.ForwardingRule) string {
	if fr.GetLoadBalancingScheme() == schemeInternal {
		ports := "all ports"
		if !fr.GetAllPorts() {
			ports = "ports " + sortedJoin(fr.GetPorts())
		}
		return fmt.Sprintf("INTERNAL %s %s %s -> %s; subnetwork %s; global access %v", fr.GetIPAddress(), fr.GetIPProtocol(), ports,
			shortLink(fr.GetBackendService()), lastSegment(fr.GetSubnetwork()), fr.GetAllowGlobalAccess())
	}
	return fmt.Sprintf("%s %s %s %s %s -> %s", fr.GetLoadBalancingScheme(), fr.GetNetworkTier(), fr.GetIPAddress(), fr.GetIPProtocol(), fr.GetPortRange(), shortLink(fr.GetTarget()))
}

// firewallDetail is what firewallSatisfies compares, with the /32 of a
// single address dropped as it does.
func firewallDetail(fw *computepb.Firewall) string {
	var allowed []string
	for _, a := range fw.GetAllowed() {
		allowed = append(allowed, strings.ToLower(a.GetIPProtocol())+":"+sortedJoin(a.GetPorts()))
	}
	ranges := func(rs []string) string {
		var out []string
		for _, r := range rs {
			out = append(out, strings.TrimSuffix(strings.TrimSuffix(r, "/32"), "/128"))
		}
		return sortedJoin(out)
	}
	d := fmt.Sprintf("allow %s from %s to tags %s", sortedJoin(allowed), ranges(fw.GetSourceRanges()), sortedJoin(fw.GetTargetTags()))
	if len(fw.GetDestinationRanges()) > 0 {
		d += " dest " + ranges(fw.GetDestinationRanges())
	}
	return d
}

func addressDetail(a *computepb.Address) string {
	d := a.GetAddress() + " " + a.GetAddressType()
	if a.GetAddressType() == "INTERNAL" {
		return d + " " + a.GetPurpose() + " subnetwork " + lastSegment(a.GetSubnetwork())
	}
	return d + " " + a.GetNetworkTier()
}

// Forget drops what the manager remembers of the Service's load
// balancer: its target pool record, and the record of the cluster's
// instance groups its backend services use (shared, so the next internal
// sync of any Service reads the groups once). The next ensure then reads
// every part from GCE and makes what is missing again.
func (l *loadBalancers) Forget(svc types.NamespacedName) {
	l.pools.Forget(svc.String())
	l.groups.forget()
}

// DeleteOrphan deletes one part Owned listed, after reading it again: a
// part that is gone is success; one that is no longer the cluster's
// part of that Service (and UID, where recorded) is refused. A part
// another still uses (GCE's resourceInUseByAnotherResource) fails: its
// dependents, earlier in Order, go first. A shared part (one listed
// Unneeded) goes only once no load balancer uses it, as deleteShared
// decides again.
func (l *loadBalancers) DeleteOrphan(ctx context.Context, o inventory.Owned) error {
	if o.Kept {
		return fmt.Errorf("%s %s is the user's: it is never deleted", o.Kind, o.Name)
	}
	zone, err := partZone(o)
	if err != nil {
		return err
	}
	desc, found, err := l.readPart(ctx, o.Kind, o.Name, zone)
	if err != nil || !found {
		return err
	}
	m := l.markOf(o.Name, desc)
	if o.Service == (types.NamespacedName{}) {
		if !m.ok || !m.shared {
			return fmt.Errorf("%s %s is not the cluster's shared part (description %q): not deleted", o.Kind, o.Name, desc)
		}
		return l.deleteShared(ctx, o, zone)
	}
	switch {
	case !m.ok || m.shared || m.svc != o.Service:
		return fmt.Errorf("%s %s is not a part of Service %s any more (description %q): not deleted", o.Kind, o.Name, o.Service, desc)
	case o.UID != "" && m.uid != o.UID:
		return fmt.Errorf("%s %s is a part of Service %s UID %q, not %q: not deleted", o.Kind, o.Name, o.Service, m.uid, o.UID)
	case o.Kind == kindAddress && !m.reserved:
		return fmt.Errorf("address %s was not reserved by the manager: not deleted", o.Name)
	}
	err = ignoreNotFound(l.deletePart(ctx, o.Kind, o.Name, zone))
	if inUse(err) {
		return fmt.Errorf("%s %s is still in use (delete what uses it first): %w", o.Kind, o.Name, err)
	}
	if err != nil {
		return fmt.Errorf("delete %s %s: %w", o.Kind, o.Name, err)
	}
	return nil
}

// deleteShared deletes one of the cluster's shared parts if no load
// balancer uses it now, under the lock Services ensure on them with
// (loadBalancers.shared), so none starts using it meanwhile: a health
// check or instance group GCE refuses to delete while a target pool or
// backend service references it (resourceInUseByAnotherResource, the
// cloud's own check at the moment of deletion, which also sees pools no
// listing of ours would), a firewall rule only when the checks it serves
// are gone (read again). Groups go with their instances, as at the last
// internal Service's deletion (instanceGroups.deleteUnused).
func (l *loadBalancers) deleteShared(ctx context.Context, o inventory.Owned, zone string) error {
	l.shared.Lock()
	defer l.shared.Unlock()
	gone := true
	var err error
	switch o.Kind {
	case kindHTTPHealthCheck:
		gone, err = l.deleteHealthCheck(ctx, o.Name, "")
	case kindRegionHealthCheck:
		gone, err = l.deleteRegionHealthCheck(ctx, o.Name, "")
	case kindHealthCheck:
		gone, err = l.deleteGlobalHealthCheck(ctx, o.Name, "")
	case kindInstanceGroup:
		gone, err = l.groups.deleteOne(ctx, zone, o.Name)
	case kindFirewall:
		checks, ok := sharedFirewallChecks(o.Name)
		if !ok {
			return fmt.Errorf("firewall rule %s serves no shared health check: not deleted", o.Name)
		}
		for _, c := range checks {
			if _, found, err := l.readPart(ctx, c.kind, c.name, ""); err != nil || found {
				if err == nil {
					err = fmt.Errorf("firewall rule %s: its %s %s is still there: not deleted", o.Name, c.kind, c.name)
				}
				return err
			}
		}
		err = l.deleteFirewall(ctx, o.Name, "")
	default:
		return fmt.Errorf("%s %s is no shared part kind: not deleted", o.Kind, o.Name)
	}
	if err == nil && !gone {
		err = fmt.Errorf("%s %s is still in use by a load balancer: not deleted", o.Kind, o.Name)
	}
	return err
}

// partZone is an instance group's zone, from its ID
// (projects/<p>/zones/<zone>/instanceGroups/<name>); "" for other kinds.
func partZone(o inventory.Owned) (string, error) {
	if o.Kind != kindInstanceGroup {
		return "", nil
	}
	parts := strings.Split(o.ID, "/")
	for i := 0; i+1 < len(parts); i++ {
		if parts[i] == "zones" {
			return parts[i+1], nil
		}
	}
	return "", fmt.Errorf("instance group %s: no zone in its ID %q", o.Name, o.ID)
}

// readPart reads a part's description; found is false when it is gone.
func (l *loadBalancers) readPart(ctx context.Context, kind, name, zone string) (desc string, found bool, err error) {
	p, r := l.cfg.ProjectID, l.cfg.Region
	var d interface{ GetDescription() string }
	switch kind {
	case kindForwardingRule:
		d, err = l.api.forwardingRules.Get(ctx, &computepb.GetForwardingRuleRequest{Project: p, Region: r, ForwardingRule: name}, l.api.retry)
	case kindTargetPool:
		d, err = l.api.targetPools.Get(ctx, &computepb.GetTargetPoolRequest{Project: p, Region: r, TargetPool: name}, l.api.retry)
	case kindBackendService:
		d, err = l.api.regionBackendServices.Get(ctx, &computepb.GetRegionBackendServiceRequest{Project: p, Region: r, BackendService: name}, l.api.retry)
	case kindHTTPHealthCheck:
		var hc *computev1.HttpHealthCheck
		hc, err = l.api.httpHealthChecks.Get(p, name).Context(ctx).Do()
		if err == nil {
			d = &computepb.HealthCheck{Description: proto.String(hc.Description)}
		}
	case kindHealthCheck:
		d, err = l.api.healthChecks.Get(ctx, &computepb.GetHealthCheckRequest{Project: p, HealthCheck: name}, l.api.retry)
	case kindRegionHealthCheck:
		d, err = l.api.regionHealthChecks.Get(ctx, &computepb.GetRegionHealthCheckRequest{Project: p, Region: r, HealthCheck: name}, l.api.retry)
	case kindFirewall:
		d, err = l.api.firewalls.Get(ctx, &computepb.GetFirewallRequest{Project: l.cfg.NetworkProjectID, Firewall: name}, l.api.retry)
	case kindAddress:
		d, err = l.api.addresses.Get(ctx, &computepb.GetAddressRequest{Project: p, Region: r, Address: name}, l.api.retry)
	case kindInstanceGroup:
		d, err = l.api.instanceGroups.Get(ctx, &computepb.GetInstanceGroupRequest{Project: p, Zone: zone, InstanceGroup: name}, l.api.retry)
	default:
		return "", false, fmt.Errorf("unknown kind %q", kind)
	}
	if isNotFound(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("get %s %s: %w", kind, name, err)
	}
	return d.GetDescription(), true, nil
}

// deletePart deletes a part and waits for its operation.
func (l *loadBalancers) deletePart(ctx context.Context, kind, name, zone string) error {
	p, r := l.cfg.ProjectID, l.cfg.Region
	switch kind {
	case kindForwardingRule:
		return waitOp(ctx)(l.api.forwardingRules.Delete(ctx, &computepb.DeleteForwardingRuleRequest{Project: p, Region: r, ForwardingRule: name}, l.api.retry))
	case kindTargetPool:
		return waitOp(ctx)(l.api.targetPools.Delete(ctx, &computepb.DeleteTargetPoolRequest{Project: p, Region: r, TargetPool: name}, l.api.retry))
	case kindBackendService:
		return waitOp(ctx)(l.api.regionBackendServices.Delete(ctx, &computepb.DeleteRegionBackendServiceRequest{Project: p, Region: r, BackendService: name}, l.api.retry))
	case kindHTTPHealthCheck:
		op, err := l.api.httpHealthChecks.Delete(p, name).Context(ctx).Do()
		return l.waitGlobal(ctx, op, err)
	case kindHealthCheck:
		return waitOp(ctx)(l.api.healthChecks.Delete(ctx, &computepb.DeleteHealthCheckRequest{Project: p, HealthCheck: name}, l.api.retry))
	case kindRegionHealthCheck:
		return waitOp(ctx)(l.api.regionHealthChecks.Delete(ctx, &computepb.DeleteRegionHealthCheckRequest{Project: p, Region: r, HealthCheck: name}, l.api.retry))
	case kindFirewall:
		return waitOp(ctx)(l.api.firewalls.Delete(ctx, &computepb.DeleteFirewallRequest{Project: l.cfg.NetworkProjectID, Firewall: name}, l.api.retry))
	case kindAddress:
		return waitOp(ctx)(l.api.addresses.Delete(ctx, &computepb.DeleteAddressRequest{Project: p, Region: r, Address: name}, l.api.retry))
	case kindInstanceGroup:
		return waitOp(ctx)(l.api.instanceGroups.Delete(ctx, &computepb.DeleteInstanceGroupRequest{Project: p, Zone: zone, InstanceGroup: name}, l.api.retry))
	}
	return fmt.Errorf("unknown kind %q", kind)
}

// deleteOne deletes zone's group name, the cluster's, unless a backend
// service uses it (GCE refuses: gone is false). The caller holds
// loadBalancers.shared.
func (g *instanceGroups) deleteOne(ctx context.Context, zone, name string) (gone bool, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.synced = nil
	err = ignoreNotFound(waitOp(ctx)(g.api.instanceGroups.Delete(ctx, &computepb.DeleteInstanceGroupRequest{Project: g.cfg.ProjectID, Zone: zone, InstanceGroup: name}, g.api.retry)))
	if inUse(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("delete instance group %s in %s: %w", name, zone, err)
	}
	return true, nil
}
