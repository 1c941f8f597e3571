package openstack

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/multicloud-ccm/multicloud-ccm/providers/inventory"
)

// The inventory (issue 22): every part of this cluster's load balancers,
// from one paged listing per kind whatever the number of Services, for
// drift repair (controllers/lbrepair) and orphan cleanup.
//
// What marks a part as this cluster's, and whose it is:
//   - a load balancer: its name kube_service_<clusterID>_<ns>_<name> (or
//     its tags kube_cluster=<clusterID> and kube_service=<ns>/<name>) says
//     which Service it was made for; its usage tags
//     kube_service_<clusterID>_<ns>_<name> which Services use it. One
//     several Services use (the load-balancer-id annotation) is listed
//     under none, and each Service's use of it is a part of its own
//     ("load balancer use": its usage tag), so an orphan's use goes and
//     the load balancer stays for the others. A use is listed for a
//     load balancer's only user too: a second Service starting or
//     stopping to share it then moves the load balancer (and its address
//     and VIP port) between its first Service and none, which drift
//     repair sees as a move, and adds or removes no part of the first
//     Service's. The last use of a load balancer a CCM made goes with
//     the load balancer (DeleteOrphan). A load balancer a person
//     made (any other name) is Kept, and so is one a CCM of this cluster
//     made and someone renamed. A legacy a<uid> one (the upstream CCM's
//     before 2019) is this cluster's once a sync adopted it (its usage
//     tag).
//   - a listener: the usage tag of the Service it serves; untagged (or
//     tagged with the load balancer's own name, upstream's legacy way) on
//     a load balancer made for a Service, that Service's. Its pool and
//     the pool's health monitor are the listener's Service's. Pools and
//     monitors carry no marks of their own: Octavia's listings cannot be
//     filtered by this cluster, so those listings are the project's.
//   - members are not parts: a node set update (which must never remove
//     a part, lbrepair) replaces them, and deleting a pool deletes its
//     members. Their IDs, inline in the pools listing, are the pool's
//     Detail; their addresses are readable only per pool, so they are not.
//     A member update Octavia accepted and has not carried out (a sync
//     returns once its last write is accepted) still lists the members it
//     removes: every part of a load balancer held PENDING_* is Pending.
//   - a floating IP: described "Floating IP for Kubernetes external
//     service <ns>/<name> from cluster <clusterID>" when a CCM allocated
//     it (fipDescription), or any floating IP on the VIP port of one of
//     this cluster's load balancers (then Kept: spec.loadBalancerIP's, the
//     port-id port's, a person's load balancer's). One allocated for a
//     Service but on no VIP port is Kept too: keep-floatingip left it, or
//     a crash did, and nothing tells which.
//   - a VIP port the user gave (port-id), Kept: one not in the listing of
//     the project's ports owned by Octavia.
//   - with manageSecurityGroups, the cluster's member group (shared by
//     every Service) and its rules, each described kube_service=<ns>/<name>.
//
// UID is never set: the cloud records no Service UID (a legacy a<uid>
// name holds only 31 of the UID's 32 hex digits, cut by
// DefaultLoadBalancerName: a UID made of it would never be the
// Service's, and an orphan check comparing it would delete a live
// Service's load balancer; the name is in Name).

// Kinds of the parts Owned lists.
const (
	kindLoadBalancer = "load balancer"
	kindLBUse        = "load balancer use"
	kindListener     = "listener"
	kindPool         = "pool"
	kindMonitor      = "health monitor"
	kindFloatingIP   = "floating IP"
	kindVIPPort      = "VIP port"
	kindRule         = "security group rule"
	kindGroup        = "security group"
)

// Orders: what depends on a part goes first. The load balancer's cascade
// delete would take its children too; listing them first lets an orphan
// listener of a load balancer that stays go alone.
const (
	orderMonitor = iota
	orderPool
	orderListener
	orderLBUse
	orderLoadBalancer
	orderFloatingIP
	orderRule
	orderVIPPort
	orderGroup
)

// ownerOctavia is the device_owner of the VIP ports Octavia makes.
const ownerOctavia = "Octavia"

// legacyNameRE matches DefaultLoadBalancerName's a<uid>.
var legacyNameRE = regexp.MustCompile(`^a[0-9a-f]{31}$`)

// lbInventory implements inventory.Inventory for the backend's load
// balancers.
type lbInventory struct{ l *loadBalancers }

var _ inventory.Inventory = lbInventory{}

// lbView is a load balancer of this cluster, classified.
type lbView struct {
	lb *loadbalancers.LoadBalancer
	// creator is the Service it was made for, as its name or tags say;
	// zero when they do not (legacy, a person's).
	creator types.NamespacedName
	// users are the Services whose usage tags it carries.
	users []types.NamespacedName
	// holder is the Service the load balancer is listed under: its only
	// user, else (no usage tag) its creator; zero when shared.
	holder types.NamespacedName
	// made: a CCM of this cluster made it (its name says so), so it may
	// go with its last Service.
	made, legacy bool
}

// owner is the Service whose untagged listeners are on it.
func (v *lbView) owner() types.NamespacedName {
	if !v.made {
		return types.NamespacedName{}
	}
	if v.creator != (types.NamespacedName{}) {
		return v.creator
	}
	if len(v.users) == 1 {
		return v.users[0]
	}
	return types.NamespacedName{}
}

// serviceOfUsage is the Service of a usage tag (or load balancer name)
// of this cluster, kube_service_<clusterID>_<namespace>_<name>. Neither
// a namespace nor a Service name has an underscore, so it is exact; a
// name cut at Octavia's 255 characters might not be, and is refused.
func (l *loadBalancers) serviceOfUsage(tag string) (types.NamespacedName, bool) {
	rest, ok := strings.CutPrefix(tag, servicePrefix+l.clusterID+"_")
	if !ok || len(tag) >= 255 {
		return types.NamespacedName{}, false
	}
	ns, name, ok := strings.Cut(rest, "_")
	if !ok || ns == "" || name == "" || strings.Contains(name, "_") {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}

func parseKey(s string) (types.NamespacedName, bool) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}

// classify says whether lb is this cluster's, and whose; nil when not.
func (l *loadBalancers) classify(lb *loadbalancers.LoadBalancer) *lbView {
	v := &lbView{lb: lb, legacy: legacyNameRE.MatchString(lb.Name)}
	if slices.Contains(lb.Tags, clusterTag(l.clusterID)) {
		for _, t := range lb.Tags {
			if s, ok := strings.CutPrefix(t, "kube_service="); ok {
				v.creator, _ = parseKey(s)
			}
		}
	}
	byName, named := l.serviceOfUsage(lb.Name)
	if v.creator == (types.NamespacedName{}) && named {
		v.creator = byName
	}
	for _, t := range lb.Tags {
		if s, ok := l.serviceOfUsage(t); ok && !slices.Contains(v.users, s) {
			v.users = append(v.users, s)
		}
	}
	if v.creator == (types.NamespacedName{}) && len(v.users) == 0 {
		return nil
	}
	v.made = named || v.legacy
	switch len(v.users) {
	case 0:
		v.holder = v.creator
	case 1:
		v.holder = v.users[0]
	}
	return v
}

// listenerService is the Service a listener of v serves.
func (l *loadBalancers) listenerService(lis *listeners.Listener, v *lbView) (types.NamespacedName, bool) {
	for _, t := range lis.Tags {
		if s, ok := l.serviceOfUsage(t); ok {
			return s, true
		}
	}
	if owner := v.owner(); owner != (types.NamespacedName{}) && (len(lis.Tags) == 0 || slices.Contains(lis.Tags, v.lb.Name)) {
		return owner, true
	}
	return types.NamespacedName{}, false
}

// poolServiceByName is the Service a pool without a listener was made
// for, by its name pool_<index>_<load balancer or usage tag>.
func (l *loadBalancers) poolServiceByName(name string, v *lbView) (types.NamespacedName, bool) {
	rest, ok := strings.CutPrefix(name, "pool_")
	if !ok {
		return types.NamespacedName{}, false
	}
	i, rest, ok := strings.Cut(rest, "_")
	if _, err := strconv.Atoi(i); !ok || err != nil {
		return types.NamespacedName{}, false
	}
	if rest == v.lb.Name {
		owner := v.owner()
		return owner, owner != (types.NamespacedName{})
	}
	return l.serviceOfUsage(rest)
}

// octaviaPortsOpts lists the IDs of the project's ports Octavia owns.
type octaviaPortsOpts struct{}

func (octaviaPortsOpts) ToPortListQuery() (string, error) {
	return "?" + url.Values{"device_owner": {ownerOctavia}, "fields": {"id"}}.Encode(), nil
}

// Owned lists every part of this cluster's load balancers: one paged
// listing each of the project's load balancers, listeners, pools, health
// monitors, Octavia's ports and floating IPs, and with
// manageSecurityGroups of the member group (by name) and its rules.
// Without a load balancer of this cluster only the floating IPs (and
// the group) are listed.
func (v lbInventory) Owned(ctx context.Context) ([]inventory.Owned, error) {
	l := v.l
	lbPages, err := loadbalancers.List(l.api.lb, loadbalancers.ListOpts{}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list load balancers: %w", err)
	}
	all, err := loadbalancers.ExtractLoadBalancers(lbPages)
	if err != nil {
		return nil, err
	}
	var out []inventory.Owned
	views := map[string]*lbView{}
	byVIP := map[string]*lbView{}
	for i := range all {
		lb := &all[i]
		if lb.ProvisioningStatus == statusPendingDelete || lb.ProvisioningStatus == "DELETED" {
			continue
		}
		if lv := l.classify(lb); lv != nil {
			views[lb.ID] = lv
			if lb.VipPortID != "" {
				byVIP[lb.VipPortID] = lv
			}
		}
	}
	if len(views) > 0 {
		parts, err := v.octaviaParts(ctx, views)
		if err != nil {
			return nil, err
		}
		out = append(out, parts...)
	}

	fipPages, err := floatingips.List(l.api.network, floatingips.ListOpts{}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list floating IPs: %w", err)
	}
	fips, err := floatingips.ExtractFloatingIPs(fipPages)
	if err != nil {
		return nil, err
	}
	for _, f := range fips {
		if o, ok := l.floatingIPPart(&f, byVIP); ok {
			out = append(out, o)
		}
	}

	if l.groups != nil {
		parts, err := v.groupParts(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, parts...)
	}
	slices.SortFunc(out, func(a, b inventory.Owned) int {
		if a.Order != b.Order {
			return a.Order - b.Order
		}
		if c := strings.Compare(a.Service.String(), b.Service.String()); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// octaviaParts are the load balancers of views with their uses,
// listeners, pools, monitors and user VIP ports.
func (v lbInventory) octaviaParts(ctx context.Context, views map[string]*lbView) ([]inventory.Owned, error) {
	l := v.l
	lisPages, err := listeners.List(l.api.lb, listeners.ListOpts{}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list listeners: %w", err)
	}
	lss, err := listeners.ExtractListeners(lisPages)
	if err != nil {
		return nil, err
	}
	plPages, err := pools.List(l.api.lb, pools.ListOpts{}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list pools: %w", err)
	}
	pls, err := pools.ExtractPools(plPages)
	if err != nil {
		return nil, err
	}
	monPages, err := monitors.List(l.api.lb, monitors.ListOpts{}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list health monitors: %w", err)
	}
	mons, err := monitors.ExtractMonitors(monPages)
	if err != nil {
		return nil, err
	}
	portPages, err := ports.List(l.api.network, octaviaPortsOpts{}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list Octavia's ports: %w", err)
	}
	octaviaPorts, err := ports.ExtractPorts(portPages)
	if err != nil {
		return nil, err
	}
	madeByOctavia := map[string]bool{}
	for _, p := range octaviaPorts {
		madeByOctavia[p.ID] = true
	}

	var out []inventory.Owned
	for _, lv := range views {
		lb := lv.lb
		out = append(out, inventory.Owned{
			Kind: kindLoadBalancer, ID: lb.ID, Name: lb.Name, Service: lv.holder,
			Detail: "VIP " + lb.VipAddress, Kept: !lv.made, Order: orderLoadBalancer, Pending: pending(lb.ProvisioningStatus),
		})
		// Every user's use, its only user's too, so that sharing
		// starting or stopping adds no part to the first Service.
		for _, u := range lv.users {
			tag := usageTag(l.clusterID, keyService(u))
			out = append(out, inventory.Owned{
				Kind: kindLBUse, ID: lb.ID + "/" + tag, Name: tag, Service: u,
				Detail: "uses load balancer " + lb.ID, Order: orderLBUse, Pending: pending(lb.ProvisioningStatus),
			})
		}
		// The ovn provider's VIP ports are not Octavia's own (its
		// driver makes them, without an owner), so one can't tell the
		// user's from them.
		if lb.VipPortID != "" && !madeByOctavia[lb.VipPortID] && lb.Provider != "ovn" {
			out = append(out, inventory.Owned{
				Kind: kindVIPPort, ID: lb.VipPortID, Service: lv.holder,
				Detail: "VIP " + lb.VipAddress + " of load balancer " + lb.ID, Kept: true, Order: orderVIPPort,
			})
		}
	}

	type owned struct {
		svc types.NamespacedName
		lv  *lbView
	}
	byListener := map[string]owned{}
	byPool := map[string]owned{}
	for i := range lss {
		lis := &lss[i]
		if len(lis.Loadbalancers) == 0 || lis.ProvisioningStatus == statusPendingDelete {
			continue
		}
		lv := views[lis.Loadbalancers[0].ID]
		if lv == nil {
			continue
		}
		svc, ok := l.listenerService(lis, lv)
		if !ok {
			continue
		}
		byListener[lis.ID] = owned{svc, lv}
		if lis.DefaultPoolID != "" {
			byPool[lis.DefaultPoolID] = owned{svc, lv}
		}
		out = append(out, inventory.Owned{
			Kind: kindListener, ID: lis.ID, Name: lis.Name, Service: svc,
			Detail: listenerDetail(lis), Order: orderListener, Pending: pending(lis.ProvisioningStatus, lv.lb.ProvisioningStatus),
		})
	}
	for i := range pls {
		p := &pls[i]
		if len(p.Loadbalancers) == 0 || p.ProvisioningStatus == statusPendingDelete {
			continue
		}
		lv := views[p.Loadbalancers[0].ID]
		if lv == nil {
			continue
		}
		o, ok := byPool[p.ID]
		for _, lis := range p.Listeners {
			if !ok {
				o, ok = byListener[lis.ID]
			}
		}
		if !ok && len(p.Listeners) == 0 {
			// Its listener was deleted (outside Kubernetes, or a crash
			// between removeListener's two deletions): its name says
			// whose it is.
			var svc types.NamespacedName
			if svc, ok = l.poolServiceByName(p.Name, lv); ok {
				o = owned{svc, lv}
			}
		}
		if !ok {
			continue
		}
		byPool[p.ID] = o
		out = append(out, inventory.Owned{
			Kind: kindPool, ID: p.ID, Name: p.Name, Service: o.svc,
			Detail: poolDetail(p), Order: orderPool, Pending: pending(p.ProvisioningStatus, lv.lb.ProvisioningStatus),
		})
	}
	for i := range mons {
		m := &mons[i]
		if len(m.Pools) == 0 || m.ProvisioningStatus == statusPendingDelete {
			continue
		}
		o, ok := byPool[m.Pools[0].ID]
		if !ok {
			continue
		}
		out = append(out, inventory.Owned{
			Kind: kindMonitor, ID: m.ID, Name: m.Name, Service: o.svc,
			Detail: monitorDetail(m), Order: orderMonitor, Pending: pending(m.ProvisioningStatus, o.lv.lb.ProvisioningStatus),
		})
	}
	return out, nil
}

// pending says Octavia is still carrying out a write it accepted on a
// part or its load balancer (which it holds PENDING_* for a write to any
// part of its tree): what the listing shows may be from before it, such
// as the members a batch update removes. A sync returns once its last
// write is accepted, so the listing after it can see that.
func pending(statuses ...string) bool {
	return slices.ContainsFunc(statuses, func(s string) bool { return strings.HasPrefix(s, "PENDING_") })
}

// floatingIPPart is f as a part, if it is one: on the VIP port of one of
// this cluster's load balancers (the load balancer's holder's; Kept
// unless a CCM allocated it), or allocated by a CCM of this cluster
// (described so) and on no such port (Kept).
func (l *loadBalancers) floatingIPPart(f *floatingips.FloatingIP, byVIP map[string]*lbView) (inventory.Owned, bool) {
	o := inventory.Owned{Kind: kindFloatingIP, ID: f.ID, Name: f.FloatingIP, Detail: fipDetail(f), Order: orderFloatingIP}
	described, allocated := l.allocatedFor(f.Description)
	if lv := byVIP[f.PortID]; f.PortID != "" && lv != nil {
		o.Service = lv.holder
		o.Kept = !allocated && !(lv.made && f.Description == creatorFloatingIP(lv.lb))
		return o, true
	}
	if !allocated {
		return o, false
	}
	o.Service, o.Kept = described, true
	return o, true
}

// allocatedFor reads a floating IP's description: allocated by a CCM of
// this cluster, and for which Service (zero for a legacy a<uid> one).
func (l *loadBalancers) allocatedFor(desc string) (types.NamespacedName, bool) {
	rest, ok := strings.CutPrefix(desc, "Floating IP for Kubernetes external service ")
	if !ok {
		return types.NamespacedName{}, false
	}
	svc, ok := strings.CutSuffix(rest, " from cluster "+l.clusterID)
	if !ok {
		return types.NamespacedName{}, false
	}
	if key, ok := parseKey(svc); ok {
		return key, true
	}
	return types.NamespacedName{}, legacyNameRE.MatchString(svc)
}

// groupParts are the member security group (shared: no Service) and the
// Services' rules in it.
func (v lbInventory) groupParts(ctx context.Context) ([]inventory.Owned, error) {
	l := v.l
	name := memberGroupName(l.clusterID)
	pages, err := groups.List(l.api.network, groups.ListOpts{Name: name}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list security groups named %s: %w", name, err)
	}
	gs, err := groups.ExtractGroups(pages)
	if err != nil {
		return nil, err
	}
	var out []inventory.Owned
	for _, g := range gs {
		group := len(out)
		out = append(out, inventory.Owned{Kind: kindGroup, ID: g.ID, Name: g.Name, Detail: "member security group", Order: orderGroup})
		pages, err := rules.List(l.api.network, rules.ListOpts{SecGroupID: g.ID}).AllPages(ctx)
		if err != nil {
			return nil, fmt.Errorf("list rules of security group %s: %w", g.ID, err)
		}
		rs, err := rules.ExtractRules(pages)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			s, ok := strings.CutPrefix(r.Description, "kube_service=")
			if !ok {
				continue
			}
			svc, ok := parseKey(s)
			if !ok {
				continue
			}
			out = append(out, inventory.Owned{Kind: kindRule, ID: r.ID, Service: svc, Detail: ruleDetail(&r), Order: orderRule})
		}
		// No Service's rule left: no Service needs it (the last
		// Service's deletion deletes it, memberGroup.release; one left
		// by a crash or by hand is an orphan by itself).
		out[group].Unneeded = !slices.ContainsFunc(rs, func(r rules.SecGroupRule) bool { return strings.HasPrefix(r.Description, "kube_service=") })
	}
	return out, nil
}

// deleteUnneededGroup deletes the cluster's member security group if,
// read again under the group's lock (which every Service's rule write
// holds), it is still the cluster's and holds no Service's rule:
// detached from every port first, as at the last Service's deletion
// (memberGroup.release).
func (v lbInventory) deleteUnneededGroup(ctx context.Context, o inventory.Owned) error {
	g := v.l.groups
	if g == nil {
		return fmt.Errorf("security group %s: manageSecurityGroups is off: never deleted", o.ID)
	}
	defer g.lock()()
	cur, err := groups.Get(ctx, v.l.api.network, o.ID).Extract()
	if err != nil {
		return ignoreNotFound(err)
	}
	if cur.Name != memberGroupName(v.l.clusterID) {
		return fmt.Errorf("security group %s (%s) is not the cluster's member group: never deleted", cur.ID, cur.Name)
	}
	for _, r := range cur.Rules {
		if strings.HasPrefix(r.Description, "kube_service=") {
			return fmt.Errorf("security group %s: %w (%s), not deleted", cur.ID, errNeededAgain, r.Description)
		}
	}
	if err := detachAndDelete(ctx, v.l.api.network, cur.ID); err != nil {
		return err
	}
	g.forget()
	klog.FromContext(ctx).Info("Deleted the cluster's member security group: no Service needs it", "id", cur.ID, "name", cur.Name)
	return nil
}

// errNeededAgain is a shared part listed unneeded that a Service needs
// again when DeleteOrphan reads it.
var errNeededAgain = errors.New("a Service needs it again")

func listenerDetail(lis *listeners.Listener) string {
	var b strings.Builder
	pool := lis.DefaultPoolID
	if pool == "" {
		pool = "none"
	}
	fmt.Fprintf(&b, "%s:%d -> pool %s, connection limit %d, timeouts client-data/member-connect/member-data/tcp-inspect %d/%d/%d/%d ms",
		lis.Protocol, lis.ProtocolPort, pool, lis.ConnLimit,
		lis.TimeoutClientData, lis.TimeoutMemberConnect, lis.TimeoutMemberData, lis.TimeoutTCPInspect)
	cidrs := slices.Sorted(slices.Values(lis.AllowedCIDRs))
	if len(cidrs) == 1 && (cidrs[0] == "0.0.0.0/0" || cidrs[0] == "::/0") {
		cidrs = nil
	}
	if len(cidrs) > 0 {
		fmt.Fprintf(&b, ", allowed %s", strings.Join(cidrs, ","))
	}
	if len(lis.InsertHeaders) > 0 {
		var h []string
		for k, v := range lis.InsertHeaders {
			h = append(h, k+"="+v)
		}
		slices.Sort(h)
		fmt.Fprintf(&b, ", headers %s", strings.Join(h, ","))
	}
	return b.String()
}

func poolDetail(p *pools.Pool) string {
	ids := make([]string, 0, len(p.Members))
	for _, m := range p.Members {
		ids = append(ids, m.ID)
	}
	slices.Sort(ids)
	members := strings.Join(ids, ",")
	if members == "" {
		members = "none"
	}
	return fmt.Sprintf("%s %s, members %s", p.Protocol, p.LBMethod, members)
}

func monitorDetail(m *monitors.Monitor) string {
	d := fmt.Sprintf("%s every %ds, timeout %ds, retries %d up %d down", m.Type, m.Delay, m.Timeout, m.MaxRetries, m.MaxRetriesDown)
	if m.URLPath != "" {
		d += ", " + m.HTTPMethod + " " + m.URLPath
	}
	return d
}

func fipDetail(f *floatingips.FloatingIP) string {
	if f.PortID == "" {
		return f.FloatingIP + " unassociated"
	}
	return f.FloatingIP + " on port " + f.PortID
}

func ruleDetail(r *rules.SecGroupRule) string {
	proto := r.Protocol
	if proto == "" {
		proto = "any"
	}
	ports := "any port"
	switch {
	case r.PortRangeMin != 0 && r.PortRangeMin == r.PortRangeMax:
		ports = "port " + strconv.Itoa(r.PortRangeMin)
	case r.PortRangeMin != 0:
		ports = fmt.Sprintf("ports %d-%d", r.PortRangeMin, r.PortRangeMax)
	}
	from := r.RemoteIPPrefix
	switch {
	case r.RemoteGroupID != "":
		from = "group " + r.RemoteGroupID
	case from == "":
		from = "anywhere"
	}
	return fmt.Sprintf("%s %s %s %s from %s", r.Direction, r.EtherType, proto, ports, from)
}

// keyService is a Service object with only the key, for the name and tag
// functions.
func keyService(key types.NamespacedName) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
}

// Forget drops the Service's record of its last full sync (its pools
// and members), so the next update reads the cloud, and the member
// group's cached ID and attached ports (a group deleted outside
// Kubernetes is found or made again). An ensure reads the load balancer
// whole anyway. What this process learned of the Service's own load
// balancer's ID stays: it is what lets the next ensure make a deleted
// one again although the Service's annotation names it.
func (v lbInventory) Forget(svc types.NamespacedName) {
	v.l.records.Forget(svc.Namespace + "/" + svc.Name)
	if v.l.groups != nil {
		v.l.groups.forget()
	}
}

// DeleteOrphan deletes one part Owned listed, waiting for Octavia's
// PENDING states as the syncs do; gone already is success. A load
// balancer other Services (or a person's listeners) still use is not
// deleted: only the Service's listeners and usage tag go, as at the
// Service's deletion. A floating IP on the VIP port of a load balancer
// that stays is its other Services' address, and stays.
func (v lbInventory) DeleteOrphan(ctx context.Context, o inventory.Owned) error {
	l := v.l
	if o.Kept {
		return fmt.Errorf("%s %s is not the manager's to delete (kept)", o.Kind, o.ID)
	}
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("kind", o.Kind, "id", o.ID, "service", o.Service))
	switch o.Kind {
	case kindMonitor:
		m, err := monitors.Get(ctx, l.api.lb, o.ID).Extract()
		if err != nil || len(m.Pools) == 0 {
			return ignoreNotFound(err)
		}
		return v.inPool(ctx, m.Pools[0].ID, "delete health monitor "+o.ID, func() error {
			return ignoreNotFound(monitors.Delete(ctx, l.api.lb, o.ID).Err)
		})
	case kindPool:
		return v.inPool(ctx, o.ID, "delete pool "+o.ID, func() error {
			return ignoreNotFound(pools.Delete(ctx, l.api.lb, o.ID).Err)
		})
	case kindListener:
		lis, err := listeners.Get(ctx, l.api.lb, o.ID).Extract()
		if err != nil || len(lis.Loadbalancers) == 0 {
			return ignoreNotFound(err)
		}
		lbID := lis.Loadbalancers[0].ID
		return v.locked(ctx, lbID, func() error { return l.removeListener(ctx, lbID, lis) })
	case kindLBUse:
		lbID, tag, _ := strings.Cut(o.ID, "/")
		return v.locked(ctx, lbID, func() error {
			lb, err := l.waitActive(ctx, lbID)
			if err != nil {
				return ignoreNotFound(err)
			}
			// The only use of a load balancer a CCM made: the load
			// balancer is listed under the same Service, an orphan too,
			// and goes whole (deleteLoadBalancer). Its tag stays till
			// then: on an adopted legacy a<uid> one it is the only mark
			// that the load balancer is this cluster's, and without it
			// a failed deletion would leave it unlisted for ever.
			if lv := l.classify(lb); lv != nil && lv.made && len(otherUsers(lb.Tags, tag)) == 0 {
				klog.FromContext(ctx).V(2).Info("Left the load balancer's last usage tag to go with it")
				return nil
			}
			return l.setUsage(ctx, lb, tag, false)
		})
	case kindLoadBalancer:
		return v.deleteLoadBalancer(ctx, o)
	case kindFloatingIP:
		return v.deleteFloatingIP(ctx, o)
	case kindRule:
		if err := ignoreNotFound(rules.Delete(ctx, l.api.network, o.ID).Err); err != nil {
			return fmt.Errorf("delete security group rule %s: %w", o.ID, err)
		}
		return nil
	case kindGroup:
		return v.deleteUnneededGroup(ctx, o)
	}
	return fmt.Errorf("%s %s is shared or not the manager's: never deleted as an orphan", o.Kind, o.ID)
}

// locked runs f holding the load balancer's lock, as the syncs of the
// Services on it do.
func (v lbInventory) locked(ctx context.Context, lbID string, f func() error) error {
	unlock, _, err := v.l.locks.lock(ctx, lbID)
	if err != nil {
		return err
	}
	defer unlock()
	return f()
}

// inPool makes one write on the load balancer of the pool, waiting for
// it as the syncs do; a pool gone is success.
func (v lbInventory) inPool(ctx context.Context, poolID, what string, call func() error) error {
	l := v.l
	p, err := pools.Get(ctx, l.api.lb, poolID).Extract()
	if err != nil || len(p.Loadbalancers) == 0 {
		return ignoreNotFound(err)
	}
	lbID := p.Loadbalancers[0].ID
	return v.locked(ctx, lbID, func() error {
		err := l.write(ctx, lbID, what, call)
		if isNotFound(err) {
			return nil
		}
		return err
	})
}

// deleteLoadBalancer deletes an orphan load balancer whole (cascade),
// unless, read again now, others use it: then only the Service's
// listeners and usage tag go (EnsureLoadBalancerDeleted's plan).
func (v lbInventory) deleteLoadBalancer(ctx context.Context, o inventory.Owned) error {
	l := v.l
	if o.Service == (types.NamespacedName{}) {
		return fmt.Errorf("load balancer %s is shared by several Services: never deleted as an orphan by itself", o.ID)
	}
	return v.locked(ctx, o.ID, func() error {
		lb, err := loadbalancers.Get(ctx, l.api.lb, o.ID).Extract()
		if err != nil {
			return ignoreNotFound(err)
		}
		if lb.ProvisioningStatus == statusPendingDelete || lb.ProvisioningStatus == "DELETED" {
			return l.waitGone(ctx, lb.ID)
		}
		lv := l.classify(lb)
		if lv == nil || !lv.made {
			return fmt.Errorf("load balancer %s (%s) is not one this cluster made: never deleted", lb.ID, lb.Name)
		}
		svc := keyService(o.Service)
		tag := usageTag(l.clusterID, svc)
		all, err := l.listeners(ctx, lb.ID)
		if err != nil {
			return err
		}
		p := deletePlan{lb: lb}
		foreign := 0
		for _, lis := range all {
			if s, ok := l.listenerService(&lis, lv); ok && s == o.Service {
				p.mine = append(p.mine, lis)
			} else {
				foreign++
			}
		}
		if others := otherUsers(lb.Tags, tag); len(others) > 0 || foreign > 0 {
			klog.FromContext(ctx).Info("Other Services use the orphan's load balancer: removing only its listeners and usage tag", "otherServices", others, "otherListeners", foreign)
			return l.leave(ctx, p, tag)
		}
		return l.deleteWhole(ctx, lb)
	})
}

// deleteFloatingIP releases an orphan floating IP, unless it is the
// address of a load balancer that stays.
func (v lbInventory) deleteFloatingIP(ctx context.Context, o inventory.Owned) error {
	l := v.l
	f, err := floatingips.Get(ctx, l.api.network, o.ID).Extract()
	if err != nil {
		return ignoreNotFound(err)
	}
	if f.PortID != "" {
		pages, err := loadbalancers.List(l.api.lb, loadbalancers.ListOpts{VipPortID: f.PortID}).AllPages(ctx)
		if err != nil {
			return fmt.Errorf("list load balancers on port %s: %w", f.PortID, err)
		}
		lbs, err := loadbalancers.ExtractLoadBalancers(pages)
		if err != nil {
			return err
		}
		for _, lb := range lbs {
			if lb.ProvisioningStatus != statusPendingDelete && lb.ProvisioningStatus != "DELETED" {
				klog.FromContext(ctx).Info("Kept the floating IP: it is the address of a load balancer that stays", "floatingIP", f.FloatingIP, "loadBalancer", lb.ID)
				return nil
			}
		}
	}
	if err := ignoreNotFound(floatingips.Delete(ctx, l.api.network, f.ID).Err); err != nil {
		return fmt.Errorf("release floating IP %s: %w", f.FloatingIP, err)
	}
	klog.FromContext(ctx).Info("Released orphan floating IP", "floatingIP", f.FloatingIP)
	return nil
}
