package openstack

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// member is one node behind a pool.
type member struct {
	name    string
	address string
	// subnetID is its family's member subnet, "" for Octavia's choice.
	subnetID string
}

// lbRecord is what a full sync established: the pools by port key, with
// the members each holds, for node set changes.
type lbRecord struct {
	lbID string
	// family is the IP family the load balancer serves (its VIP's).
	family v1.IPFamily
	// also and other are the second family of a load balancer with a
	// VIP of each and its subnets; "" and nil for one family.
	also  v1.IPFamily
	other *lbSubnets
	// sig is the options the sync applied (lbOptions.signature).
	sig   string
	pools map[string]poolRecord
}

type poolRecord struct {
	id string
	// members is the sorted, joined member addresses.
	members string
}

// signature identifies the options that shape pools and members; a record
// made under other options is not used.
func (o *lbOptions) signature() string {
	var b strings.Builder
	for _, p := range o.ports {
		fmt.Fprintf(&b, "%s>%d/%s/%s,", p.key(), p.nodePort, p.listenerProtocol, p.poolProtocol)
	}
	fmt.Fprintf(&b, "|%s|%s|%v|", o.memberSubnetID, o.lbMethod, o.families)
	if o.monitor != nil {
		fmt.Fprintf(&b, "%s:%d", o.monitor.typ, o.monitor.port)
	}
	return b.String()
}

// ensure brings the Service's load balancer in line with its spec and
// nodes. A missing load balancer is created whole in one fully-populated
// call; an existing one is read (listeners, pools, members, monitors) and
// only what differs is written, one change at a time since Octavia takes
// one per load balancer. On a load balancer shared with other Services
// (loadbalancer_shared.go) only the Service's own listeners are touched.
// It returns the status, a record of what it established, and the load
// balancer's ID once it is known (even on a later error).
//
// An update (create false) never creates: a load balancer that is gone
// was deleted with its Service (an update can wait behind that deletion)
// or is EnsureLoadBalancer's to make.
func (l *loadBalancers) ensure(ctx context.Context, svc *v1.Service, opts *lbOptions, nodes []*v1.Node, create bool) (*v1.LoadBalancerStatus, *lbRecord, string, error) {
	logger := klog.FromContext(ctx)
	lb, owner, err := l.resolve(ctx, svc)
	if err != nil {
		return nil, nil, "", err
	}
	if lb == nil && !create {
		logger.V(2).Info("No load balancer to update")
		return nil, nil, "", nil
	}
	id := ""
	if lb != nil {
		id = lb.ID
		unlock, _, err := l.locks.lock(ctx, lb.ID)
		if err != nil {
			return nil, nil, id, err
		}
		defer unlock()
		if !owner {
			// Read again now that no other Service of ours changes
			// it: its tags say who uses it.
			if lb, err = l.waitActive(ctx, lb.ID); err != nil {
				return nil, nil, id, err
			}
			if err := l.checkShare(svc, opts, lb); err != nil {
				return nil, nil, id, err
			}
			logger = logger.WithValues("sharedLoadBalancer", lb.ID)
			ctx = klog.NewContext(ctx, logger)
		} else if err := l.checkOwnerInternal(svc, opts, lb); err != nil {
			return nil, nil, id, err
		}
	}
	fam, err := l.serveFamily(ctx, opts, lb)
	if err != nil {
		return nil, nil, id, err
	}
	if err := opts.setFamily(fam); err != nil {
		return nil, nil, id, err
	}
	subnets, err := l.resolveSubnets(ctx, opts, nodes)
	if err != nil {
		return nil, nil, id, err
	}
	other, whyOne, err := l.planSecondFamily(ctx, opts, lb, subnets, nodes)
	if err != nil {
		return nil, nil, id, err
	}
	if other != nil {
		subnets.other = other
		opts.widen(otherFamily(opts.families, opts.family))
	}
	members, err := l.familyMembers(ctx, nodes, subnets)
	if err != nil {
		return nil, nil, id, err
	}
	created := lb == nil
	if created {
		if lb, err = l.create(ctx, svc, opts, subnets, members); err != nil {
			return nil, nil, "", err
		}
		id = lb.ID
		logger.Info("Created load balancer", "id", lb.ID, "vip", lb.VipAddress, "additionalVIPs", lb.AdditionalVips, "members", len(members))
	}
	if owner || created {
		l.own.set(serviceKey(svc), lb.ID)
	}
	if subnets, err = l.withVIPSubnet(ctx, subnets, lb); err != nil {
		return nil, nil, id, err
	}
	// The floating IP needs only the VIP port, not an ACTIVE load
	// balancer: associate it while Octavia provisions. Only the
	// Service the load balancer was made for manages it.
	var fip string
	switch {
	case !opts.internal && !slices.Contains(opts.served(), v1.IPv4Protocol):
		// No floating IP: the VIP is the address (below).
		if create {
			l.warnNoFloatingIP(ctx, svc, lb.VipAddress)
		}
		if !owner && !created && opts.loadBalancerIP != "" && opts.loadBalancerIP != lb.VipAddress {
			err = fmt.Errorf("spec.loadBalancerIP %s is not the address of load balancer %s named by annotation %s, %s: a shared load balancer has one address; clear spec.loadBalancerIP",
				opts.loadBalancerIP, lb.ID, annotationLoadBalancerID, lb.VipAddress)
		}
	case owner || created:
		// The user's VIP port (port-id) may carry its floating IP
		// already.
		fip, err = l.ensureFloatingIP(ctx, svc, opts, lb, created && opts.vipPortID == "")
	default:
		fip, err = l.sharedFloatingIP(ctx, opts, lb)
	}
	if err != nil {
		return nil, nil, id, err
	}
	if create && whyOne != "" {
		l.warnFirstFamilyOnly(svc, opts, whyOne)
	}
	if l.groups != nil {
		if err := l.groups.ensureRules(ctx, svc, opts, subnets, members); err != nil {
			return nil, nil, id, err
		}
		// Now that the manager's rules admit the Service's traffic, the
		// upstream CCM's group of the Service can go. Without
		// manageSecurityGroups it stays till the Service's deletion:
		// nothing else would admit the traffic it admits.
		if err := l.takeOverUpstreamGroup(ctx, svc, l.groups.wantedRules(opts, subnets), false); err != nil {
			return nil, nil, id, err
		}
	}
	active, err := l.waitActive(ctx, lb.ID)
	if err != nil {
		return nil, nil, id, err
	}
	// A tree just created whole is what the Service wants: no read.
	var rec *lbRecord
	if created {
		rec = createdRecord(lb, opts, members)
	}
	if rec == nil {
		if rec, err = l.reconcile(ctx, svc, opts, active, owner || created, subnets, members); err != nil {
			return nil, nil, id, err
		}
	}
	addrs := familyAddresses(opts.families, opts.served(), active, fip)
	if len(addrs) == 0 {
		addrs = []string{cmp.Or(fip, active.VipAddress)}
	}
	st := l.ingress(opts.hostname, opts.proxyProtocol != "", addrs...)
	rec.sig, rec.family, rec.also, rec.other = opts.signature(), opts.family, opts.also, subnets.other
	return st, rec, id, nil
}

// createdRecord is the record of a fully-populated create, from the
// listeners (with their default pools) Octavia returned; nil if the
// answer lacks one.
func createdRecord(lb *loadbalancers.LoadBalancer, opts *lbOptions, members []member) *lbRecord {
	rec := &lbRecord{lbID: lb.ID, pools: map[string]poolRecord{}}
	for _, p := range opts.ports {
		i := slices.IndexFunc(lb.Listeners, func(l listeners.Listener) bool {
			return l.Protocol == p.listenerProtocol && l.ProtocolPort == p.port && l.DefaultPoolID != ""
		})
		if i < 0 {
			return nil
		}
		rec.pools[p.key()] = poolRecord{id: lb.Listeners[i].DefaultPoolID, members: membersKey(members)}
	}
	return rec
}

// members are the nodes' addresses in the member subnet: each node's
// first InternalIP inside it (any InternalIP when the subnet is not
// known), sorted. A Node the node controller has not initialised yet has
// no addresses, and the service controller does not sync again when it
// gets them; its server's fixed address (from the instance snapshot, no
// call per node) stands in. A node without either is left out.
func (l *loadBalancers) members(ctx context.Context, nodes []*v1.Node, cidr netip.Prefix) ([]member, error) {
	out := make([]member, 0, len(nodes))
	var pending []*v1.Node
	for _, n := range nodes {
		if a := memberAddress(n.Status.Addresses, cidr); a != "" {
			out = append(out, member{name: n.Name, address: a})
		} else {
			pending = append(pending, n)
		}
	}
	if len(pending) > 0 && l.in != nil {
		found, err := l.serverAddresses(ctx, pending, cidr)
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	}
	if left := len(nodes) - len(out); left > 0 {
		// As upstream (loadbalancer.go:1019-1029), which warns per node.
		klog.FromContext(ctx).Info("Nodes without an InternalIP in the member subnet are left out of the pools", "count", left, "memberSubnet", cidr)
	}
	slices.SortFunc(out, func(a, b member) int { return strings.Compare(a.address, b.address) })
	return slices.CompactFunc(out, func(a, b member) bool { return a.address == b.address }), nil
}

// serverAddresses finds the fixed addresses of nodes without addresses
// through their servers.
func (l *loadBalancers) serverAddresses(ctx context.Context, nodes []*v1.Node, cidr netip.Prefix) ([]member, error) {
	ids := make([]string, 0, len(nodes))
	names := map[string]string{}
	for _, n := range nodes {
		id, err := l.in.KeyForNode(ctx, n)
		if err != nil {
			klog.FromContext(ctx).V(2).Info("Node has no address and no server yet; left out of the pools", "node", n.Name, "err", err)
			continue
		}
		ids = append(ids, id)
		names[id] = n.Name
	}
	servers, err := l.in.Snap.ByIDs(ctx, ids)
	if err != nil {
		return nil, err
	}
	var out []member
	for id, s := range servers {
		if a := memberAddress(s.addresses, cidr); a != "" {
			out = append(out, member{name: names[id], address: a})
		}
	}
	return out, nil
}

// memberAddress is the first InternalIP of addrs in cidr (any InternalIP
// when cidr is not known).
func memberAddress(addrs []v1.NodeAddress, cidr netip.Prefix) string {
	for _, a := range addrs {
		if a.Type != v1.NodeInternalIP {
			continue
		}
		ip, err := netip.ParseAddr(a.Address)
		if err != nil {
			continue
		}
		if !cidr.IsValid() || cidr.Contains(ip) {
			return ip.String()
		}
	}
	return ""
}

func membersKey(ms []member) string {
	s := make([]string, len(ms))
	for i, m := range ms {
		s[i] = m.address
	}
	return strings.Join(s, ",")
}

// poolOpts is a pool as the Service wants it, with its members and
// monitor, for the fully-populated create and for new ports alike.
func (l *loadBalancers) poolOpts(opts *lbOptions, p portSpec, index int, name string, subnets lbSubnets, members []member) pools.CreateOpts {
	po := pools.CreateOpts{
		Name:     childName("pool", index, name),
		Protocol: pools.Protocol(p.poolProtocol),
		LBMethod: pools.LBMethod(opts.lbMethod),
		Members:  make([]pools.CreateMemberOpts, 0, len(members)),
	}
	for _, m := range members {
		po.Members = append(po.Members, pools.CreateMemberOpts{
			Name: cut(m.name, 255), Address: m.address, ProtocolPort: p.nodePort,
			SubnetID: cmp.Or(m.subnetID, subnets.memberSubnetID), MonitorPort: monitorPort(opts),
		})
	}
	if opts.monitor != nil {
		po.Monitor = l.monitorOpts(opts, p, index, name)
	}
	return po
}

func (l *loadBalancers) monitorOpts(opts *lbOptions, p portSpec, index int, name string) monitors.CreateOpts {
	m := opts.monitor
	mo := monitors.CreateOpts{
		Name: childName("monitor", index, name), Type: m.typeFor(p.protocol),
		Delay: m.delay, Timeout: m.timeout, MaxRetries: m.maxRetries, MaxRetriesDown: m.maxRetriesDown,
	}
	if mo.Type == "HTTP" {
		mo.URLPath, mo.HTTPMethod, mo.ExpectedCodes = m.path, "GET", "200"
	}
	return mo
}

// monitorPort is the members' monitor_port: kube-proxy's health check
// port for externalTrafficPolicy Local, else none (the traffic port).
func monitorPort(opts *lbOptions) *int {
	if opts.monitor != nil && opts.monitor.port != 0 {
		p := opts.monitor.port
		return &p
	}
	return nil
}

// listenerOpts is a listener as the Service wants it. Like upstream's
// buildListenerCreateOpt (loadbalancer.go:1171-1213), it sets the
// connection limit and timeouts even at their defaults.
func (l *loadBalancers) listenerOpts(opts *lbOptions, p portSpec, index int, name string) listeners.CreateOpts {
	lo := listeners.CreateOpts{
		Name: childName("listener", index, name), Protocol: listeners.Protocol(p.listenerProtocol), ProtocolPort: p.port,
		AllowedCIDRs: l.allowedCIDRs(opts), ConnLimit: &opts.connLimit,
	}
	if t := opts.timeouts; t != nil {
		lo.TimeoutClientData, lo.TimeoutMemberConnect = &t.clientData, &t.memberConnect
		lo.TimeoutMemberData, lo.TimeoutTCPInspect = &t.memberData, &t.tcpInspect
	}
	if opts.xForwardedFor {
		lo.InsertHeaders = map[string]string{headerXForwardedFor: "true"}
	}
	return lo
}

// listenerUpdate is the one PUT that brings an existing listener in line
// with the Service (upstream: ensureOctaviaListener,
// loadbalancer.go:1079-1168), and whether it changes anything. A listener
// made before tags gets the Service's usage tag (:1101-1108).
func (l *loadBalancers) listenerUpdate(opts *lbOptions, lis *listeners.Listener, tag string) (listeners.UpdateOpts, bool) {
	var u listeners.UpdateOpts
	changed := false
	if !slices.Contains(lis.Tags, tag) {
		tags := append(slices.Clone(lis.Tags), tag)
		u.Tags, changed = &tags, true
	}
	if !sameCIDRs(lis.AllowedCIDRs, l.allowedCIDRs(opts)) {
		cidrs := l.allowedCIDRs(opts)
		if cidrs == nil {
			cidrs = []string{}
		}
		u.AllowedCIDRs, changed = &cidrs, true
	}
	if lis.ConnLimit != opts.connLimit {
		u.ConnLimit, changed = &opts.connLimit, true
	}
	if t := opts.timeouts; t != nil {
		for _, f := range []struct {
			have, want int
			dst        **int
		}{
			{lis.TimeoutClientData, t.clientData, &u.TimeoutClientData},
			{lis.TimeoutMemberConnect, t.memberConnect, &u.TimeoutMemberConnect},
			{lis.TimeoutMemberData, t.memberData, &u.TimeoutMemberData},
			{lis.TimeoutTCPInspect, t.tcpInspect, &u.TimeoutTCPInspect},
		} {
			if f.have != f.want {
				want := f.want
				*f.dst, changed = &want, true
			}
		}
	}
	if (lis.InsertHeaders[headerXForwardedFor] == "true") != opts.xForwardedFor {
		// Other headers someone added stay.
		h := maps.Clone(lis.InsertHeaders)
		if h == nil {
			h = map[string]string{}
		}
		delete(h, headerXForwardedFor)
		if opts.xForwardedFor {
			h[headerXForwardedFor] = "true"
		}
		u.InsertHeaders, changed = &h, true
	}
	return u, changed
}

// allowedCIDRs are the listeners' allowed_cidrs: the source ranges, or
// nil for everyone. The ovn provider has none (it refuses the field); the
// member security group admits its source ranges instead.
func (l *loadBalancers) allowedCIDRs(opts *lbOptions) []string {
	if l.cfg.LoadBalancer.Provider == "ovn" {
		return nil
	}
	return opts.sourceRanges
}

// create makes the whole load balancer in one fully-populated call:
// listeners, their default pools, members and monitors.
func (l *loadBalancers) create(ctx context.Context, svc *v1.Service, opts *lbOptions, subnets lbSubnets, members []member) (*loadbalancers.LoadBalancer, error) {
	name := lbName(l.clusterID, svc)
	co := loadbalancers.CreateOpts{
		Name:         name,
		Description:  lbDescription(l.clusterID, svc),
		VipSubnetID:  subnets.vipSubnetID,
		VipNetworkID: opts.vipNetworkID,
		Provider:     l.cfg.LoadBalancer.Provider,
		Tags:         []string{clusterTag(l.clusterID), serviceTag(svc), usageTag(l.clusterID, svc)},
		// Only at creation: Octavia cannot change either later.
		FlavorID:         opts.flavorID,
		AvailabilityZone: opts.availabilityZone,
	}
	co.VipAddress = opts.vipAddress()
	if subnets.other != nil {
		// Only at creation too (octavia/api/v2/types/load_balancer.py:
		// 151, absent from LoadBalancerPUT).
		co.AdditionalVips = []loadbalancers.AdditionalVip{{SubnetID: subnets.other.vipSubnetID}}
	}
	if opts.vipPortID != "" {
		// The port places the VIP (upstream: loadbalancer.go:249-253);
		// Octavia checks a VipAddress against it.
		co.VipPortID, co.VipSubnetID, co.VipNetworkID = opts.vipPortID, "", ""
	}
	for i, p := range opts.ports {
		lo := l.listenerOpts(opts, p, i, name)
		lo.Tags = []string{usageTag(l.clusterID, svc)}
		po := l.poolOpts(opts, p, i, name, subnets, members)
		lo.DefaultPool = &po
		co.Listeners = append(co.Listeners, lo)
	}
	lb, err := loadbalancers.Create(ctx, l.api.lb, co).Extract()
	if err != nil {
		return nil, fmt.Errorf("create load balancer %s: %w", name, refusal(err))
	}
	return lb, nil
}

// reconcile reads the load balancer's listeners, pools, members and
// monitors and writes what differs from the Service, one change at a
// time. It returns the record of the pools it leaves.
//
// Only the Service's listeners (servesListener) are its to change or
// remove. A port another's listener holds is an error before any write
// (upstream: checkListenerPorts, loadbalancer.go:1611-1627); then the
// load balancer gets the Service's usage tag, before its listeners, so a
// crash never leaves listeners of a Service the tags do not name.
// owner says the load balancer was made for the Service; the parts it
// adds to another's are named after the Service (upstream
// loadbalancer.go:1786-1797).
func (l *loadBalancers) reconcile(ctx context.Context, svc *v1.Service, opts *lbOptions, lb *loadbalancers.LoadBalancer, owner bool, subnets lbSubnets, members []member) (*lbRecord, error) {
	logger := klog.FromContext(ctx)
	tag := usageTag(l.clusterID, svc)
	all, err := l.listeners(ctx, lb.ID)
	if err != nil {
		return nil, err
	}
	var ls []listeners.Listener
	for _, lis := range all {
		if servesListener(&lis, tag, owner, lb.Name) {
			ls = append(ls, lis)
			continue
		}
		for _, p := range opts.ports {
			if listenerKey(lis.Protocol, lis.ProtocolPort) == p.key() {
				return nil, fmt.Errorf("port %d/%s of load balancer %s is taken by listener %s of another Service (tags %q): give this Service another port, or another load balancer",
					p.port, p.protocol, lb.ID, lis.ID, lis.Tags)
			}
		}
	}
	if err := l.setUsage(ctx, lb, tag, true); err != nil {
		return nil, err
	}
	if !owner {
		named := *lb
		named.Name = tag
		lb = &named
	}
	plPages, err := pools.List(l.api.lb, pools.ListOpts{LoadbalancerID: lb.ID}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list pools of %s: %w", lb.ID, err)
	}
	pls, err := pools.ExtractPools(plPages)
	if err != nil {
		return nil, err
	}
	poolByID := map[string]*pools.Pool{}
	for i := range pls {
		poolByID[pls[i].ID] = &pls[i]
	}

	rec := &lbRecord{lbID: lb.ID, pools: map[string]poolRecord{}}
	wanted := map[string]bool{}
	for i, p := range opts.ports {
		wanted[p.key()] = true
		var lis *listeners.Listener
		for j := range ls {
			if listenerKey(ls[j].Protocol, ls[j].ProtocolPort) == p.key() {
				lis = &ls[j]
			}
		}
		if lis != nil && lis.Protocol != p.listenerProtocol {
			// x-forwarded-for changed (or the upstream CCM made it
			// another protocol): Octavia cannot change a listener's
			// protocol, and refuses a second listener on the port.
			if err := l.removeListener(ctx, lb.ID, lis); err != nil {
				return nil, err
			}
			logger.Info("Replacing listener: its protocol changed", "listener", lis.ID, "port", p.port, "from", lis.Protocol, "to", p.listenerProtocol)
			lis = nil
		}
		if lis == nil {
			if stray := strayPool(pls, childName("pool", i, lb.Name), p.poolProtocol); stray != nil {
				// The port's listener was deleted outside Kubernetes,
				// and Octavia kept its pool: the pool gets a new
				// listener rather than a twin.
				if _, err := l.addListener(ctx, opts, lb, tag, p, i, stray.ID); err != nil {
					return nil, err
				}
				logger.Info("Made the listener of a port again, on its pool left", "port", p.port, "pool", stray.ID)
				if err := l.reconcilePool(ctx, opts, lb, stray, p, i, subnets, members); err != nil {
					return nil, err
				}
				rec.pools[p.key()] = poolRecord{id: stray.ID, members: membersKey(members)}
				continue
			}
			id, err := l.addPort(ctx, opts, lb, tag, p, i, subnets, members)
			if err != nil {
				return nil, err
			}
			rec.pools[p.key()] = poolRecord{id: id, members: membersKey(members)}
			continue
		}
		if u, changed := l.listenerUpdate(opts, lis, tag); changed {
			if err := l.write(ctx, lb.ID, "update listener "+lis.ID, func() error {
				return listeners.Update(ctx, l.api.lb, lis.ID, u).Err
			}); err != nil {
				return nil, err
			}
			logger.Info("Updated listener", "listener", lis.ID, "port", p.port)
		}
		pool := poolByID[lis.DefaultPoolID]
		if pool != nil && pool.Protocol != p.poolProtocol {
			// proxy-protocol changed: Octavia cannot change a pool's
			// protocol either (upstream: loadbalancer.go:894-905).
			// Deleting it takes its members and monitor.
			if err := l.write(ctx, lb.ID, "delete pool "+pool.ID, func() error {
				return ignoreNotFound(pools.Delete(ctx, l.api.lb, pool.ID).Err)
			}); err != nil {
				return nil, err
			}
			logger.Info("Replacing pool: its protocol changed", "pool", pool.ID, "port", p.port, "from", pool.Protocol, "to", p.poolProtocol)
			pool = nil
		}
		if pool == nil {
			id, err := l.addPool(ctx, opts, lb, lis.ID, p, i, subnets, members)
			if err != nil {
				return nil, err
			}
			rec.pools[p.key()] = poolRecord{id: id, members: membersKey(members)}
			continue
		}
		if err := l.reconcilePool(ctx, opts, lb, pool, p, i, subnets, members); err != nil {
			return nil, err
		}
		rec.pools[p.key()] = poolRecord{id: pool.ID, members: membersKey(members)}
	}
	// Ports the Service no longer has: the pool (with its members and
	// monitor), then the listener; another Service's stay.
	for _, lis := range ls {
		if wanted[listenerKey(lis.Protocol, lis.ProtocolPort)] {
			continue
		}
		if err := l.removeListener(ctx, lb.ID, &lis); err != nil {
			return nil, err
		}
		logger.Info("Removed listener of a port the Service no longer has", "listener", lis.ID, "port", lis.ProtocolPort)
	}
	return rec, nil
}

// listeners are the load balancer's listeners.
func (l *loadBalancers) listeners(ctx context.Context, lbID string) ([]listeners.Listener, error) {
	pages, err := listeners.List(l.api.lb, listeners.ListOpts{LoadbalancerID: lbID}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list listeners of %s: %w", lbID, err)
	}
	return listeners.ExtractListeners(pages)
}

// removeListener deletes a listener's default pool (with its members and
// monitor), then the listener. Pool first: Octavia keeps a pool whose
// listener is deleted, so the other order could leave a pool no sync
// finds after a crash; this one leaves at most a listener without a
// pool, which the next sync replaces or removes.
func (l *loadBalancers) removeListener(ctx context.Context, lbID string, lis *listeners.Listener) error {
	if lis.DefaultPoolID != "" {
		if err := l.write(ctx, lbID, "delete pool "+lis.DefaultPoolID, func() error {
			return ignoreNotFound(pools.Delete(ctx, l.api.lb, lis.DefaultPoolID).Err)
		}); err != nil {
			return err
		}
	}
	return l.write(ctx, lbID, "delete listener "+lis.ID, func() error {
		return ignoreNotFound(listeners.Delete(ctx, l.api.lb, lis.ID).Err)
	})
}

// addPort adds a listener, with the Service's usage tag, and its pool for
// a new Service port.
func (l *loadBalancers) addPort(ctx context.Context, opts *lbOptions, lb *loadbalancers.LoadBalancer, tag string, p portSpec, index int, subnets lbSubnets, members []member) (string, error) {
	lis, err := l.addListener(ctx, opts, lb, tag, p, index, "")
	if err != nil {
		return "", err
	}
	return l.addPool(ctx, opts, lb, lis.ID, p, index, subnets, members)
}

// addListener creates a port's listener, with the Service's usage tag,
// on the existing pool poolID ("" for none yet).
func (l *loadBalancers) addListener(ctx context.Context, opts *lbOptions, lb *loadbalancers.LoadBalancer, tag string, p portSpec, index int, poolID string) (*listeners.Listener, error) {
	var lis *listeners.Listener
	if err := l.write(ctx, lb.ID, "create listener for port "+p.key(), func() error {
		var err error
		lo := withLB(l.listenerOpts(opts, p, index, lb.Name), lb.ID)
		lo.Tags = []string{tag}
		lo.DefaultPoolID = poolID
		lis, err = listeners.Create(ctx, l.api.lb, lo).Extract()
		return err
	}); err != nil {
		return nil, err
	}
	return lis, nil
}

// strayPool is the pool the Service made for a port (named name, of the
// protocol) that no listener uses any more, nil if none.
func strayPool(pls []pools.Pool, name, protocol string) *pools.Pool {
	for i := range pls {
		p := &pls[i]
		if p.Name == name && p.Protocol == protocol && len(p.Listeners) == 0 && p.ProvisioningStatus != statusPendingDelete {
			return p
		}
	}
	return nil
}

func withLB(o listeners.CreateOpts, lbID string) listeners.CreateOpts {
	o.LoadbalancerID = lbID
	return o
}

// addPool creates a listener's default pool, then its members in one
// batch and its monitor: Octavia takes members and a monitor inside a
// pool only in a fully-populated load balancer create.
func (l *loadBalancers) addPool(ctx context.Context, opts *lbOptions, lb *loadbalancers.LoadBalancer, listenerID string, p portSpec, index int, subnets lbSubnets, members []member) (string, error) {
	po := l.poolOpts(opts, p, index, lb.Name, subnets, nil)
	po.ListenerID = listenerID
	po.Monitor = nil
	var pool *pools.Pool
	if err := l.write(ctx, lb.ID, "create pool for port "+p.key(), func() error {
		var err error
		pool, err = pools.Create(ctx, l.api.lb, po).Extract()
		return err
	}); err != nil {
		return "", err
	}
	if len(members) > 0 {
		if err := l.setMembers(ctx, lb.ID, pool.ID, p.nodePort, subnets.memberSubnetID, monitorPort(opts), members, true); err != nil {
			return "", err
		}
	}
	if opts.monitor != nil {
		mo := l.monitorOpts(opts, p, index, lb.Name)
		mo.PoolID = pool.ID
		if err := l.write(ctx, lb.ID, "create monitor for pool "+pool.ID, func() error {
			return monitors.Create(ctx, l.api.lb, mo).Err
		}); err != nil {
			return "", err
		}
	}
	return pool.ID, nil
}

// reconcilePool brings a pool's algorithm, members and monitor in line.
func (l *loadBalancers) reconcilePool(ctx context.Context, opts *lbOptions, lb *loadbalancers.LoadBalancer, pool *pools.Pool, p portSpec, index int, subnets lbSubnets, members []member) error {
	if pool.LBMethod != opts.lbMethod {
		if err := l.write(ctx, lb.ID, "update algorithm of pool "+pool.ID, func() error {
			return pools.Update(ctx, l.api.lb, pool.ID, pools.UpdateOpts{LBMethod: pools.LBMethod(opts.lbMethod)}).Err
		}); err != nil {
			return err
		}
	}
	pages, err := pools.ListMembers(l.api.lb, pool.ID, pools.ListMembersOpts{}).AllPages(ctx)
	if err != nil {
		return fmt.Errorf("list members of pool %s: %w", pool.ID, err)
	}
	have, err := pools.ExtractMembers(pages)
	if err != nil {
		return err
	}
	if !sameMembers(have, members, p.nodePort, monitorPort(opts)) {
		if err := l.setMembers(ctx, lb.ID, pool.ID, p.nodePort, subnets.memberSubnetID, monitorPort(opts), members, true); err != nil {
			return err
		}
	}
	return l.reconcileMonitor(ctx, opts, lb, pool, p, index)
}

// reconcileMonitor creates, updates, replaces or deletes the pool's
// monitor. As upstream's ensureOctaviaHealthMonitor
// (loadbalancer.go:773-828), only a new type (which Octavia cannot
// change) replaces it; its timings are updated in place.
func (l *loadBalancers) reconcileMonitor(ctx context.Context, opts *lbOptions, lb *loadbalancers.LoadBalancer, pool *pools.Pool, p portSpec, index int) error {
	var have *monitors.Monitor
	if pool.MonitorID != "" {
		m, err := monitors.Get(ctx, l.api.lb, pool.MonitorID).Extract()
		if err != nil && !isNotFound(err) {
			return fmt.Errorf("get monitor %s: %w", pool.MonitorID, err)
		}
		have = m
	}
	if have != nil && opts.monitor != nil {
		want := l.monitorOpts(opts, p, index, lb.Name)
		if have.Type == want.Type {
			if have.Name == want.Name && have.URLPath == want.URLPath && have.Delay == want.Delay && have.Timeout == want.Timeout &&
				have.MaxRetries == want.MaxRetries && have.MaxRetriesDown == want.MaxRetriesDown {
				return nil
			}
			u := monitors.UpdateOpts{
				Name: &want.Name, Delay: want.Delay, Timeout: want.Timeout,
				MaxRetries: want.MaxRetries, MaxRetriesDown: want.MaxRetriesDown, URLPath: want.URLPath,
			}
			return l.write(ctx, lb.ID, "update monitor "+have.ID, func() error {
				return monitors.Update(ctx, l.api.lb, have.ID, u).Err
			})
		}
	}
	if have != nil {
		if err := l.write(ctx, lb.ID, "delete monitor "+have.ID, func() error {
			return ignoreNotFound(monitors.Delete(ctx, l.api.lb, have.ID).Err)
		}); err != nil {
			return err
		}
	}
	if opts.monitor == nil {
		return nil
	}
	mo := l.monitorOpts(opts, p, index, lb.Name)
	mo.PoolID = pool.ID
	return l.write(ctx, lb.ID, "create monitor for pool "+pool.ID, func() error {
		return monitors.Create(ctx, l.api.lb, mo).Err
	})
}

// setMembers replaces a pool's members in one batch update.
//
// Without wait it returns once Octavia accepted the change: a node set
// change's last update, after which the service controller has nothing
// more to do for the Service, so waiting would only hold a worker for
// each of many load balancers. A later write meets the 409 and waits.
func (l *loadBalancers) setMembers(ctx context.Context, lbID, poolID string, nodePort int, subnetID string, monitorPort *int, members []member, wait bool) error {
	batch := make([]pools.BatchUpdateMemberOpts, len(members))
	for i, m := range members {
		name := cut(m.name, 255)
		batch[i] = pools.BatchUpdateMemberOpts{Name: &name, Address: m.address, ProtocolPort: nodePort, MonitorPort: monitorPort}
		if sid := cmp.Or(m.subnetID, subnetID); sid != "" {
			batch[i].SubnetID = &sid
		}
	}
	send := l.send
	if wait {
		send = l.write
	}
	err := send(ctx, lbID, "update members of pool "+poolID, func() error {
		return pools.BatchUpdateMembers(ctx, l.api.lb, poolID, batch).Err
	})
	if err == nil {
		klog.FromContext(ctx).V(2).Info("Updated pool members", "pool", poolID, "members", len(members))
	}
	return err
}

// updateFromRecord applies a node set change to the pools the record
// names: one batch member update per pool whose members changed, and no
// read. A conflict or a missing pool means the record is stale.
func (l *loadBalancers) updateFromRecord(ctx context.Context, opts *lbOptions, nodes []*v1.Node, rec *lbRecord) error {
	opts.family = rec.family
	subnets, err := l.resolveSubnets(ctx, opts, nodes)
	if err != nil {
		return err
	}
	if rec.also != "" {
		opts.widen(rec.also)
		subnets.other = rec.other
	}
	members, err := l.familyMembers(ctx, nodes, subnets)
	if err != nil {
		return err
	}
	key := membersKey(members)
	if l.groups != nil {
		if err := l.groups.attach(ctx, subnets, members); err != nil {
			return err
		}
	}
	type change struct {
		key string
		pr  poolRecord
		p   portSpec
	}
	var changes []change
	for _, p := range opts.ports {
		pr, ok := rec.pools[p.key()]
		if !ok {
			return errStaleRecord
		}
		if pr.members != key {
			changes = append(changes, change{p.key(), pr, p})
		}
	}
	for i, c := range changes {
		// Every update but the last waits for Octavia to apply it, so
		// the next is not refused; the last returns once accepted.
		last := i == len(changes)-1
		if err := l.setMembers(ctx, rec.lbID, c.pr.id, c.p.nodePort, subnets.memberSubnetID, monitorPort(opts), members, !last); err != nil {
			return err
		}
		c.pr.members = key
		rec.pools[c.key] = c.pr
	}
	return nil
}

// sameMembers reports whether a pool's members are exactly the wanted
// addresses on the node port (and monitor port).
func sameMembers(have []pools.Member, want []member, nodePort int, monitorPort *int) bool {
	if len(have) != len(want) {
		return false
	}
	mp := 0
	if monitorPort != nil {
		mp = *monitorPort
	}
	addrs := make(map[string]bool, len(have))
	for _, m := range have {
		if m.ProtocolPort != nodePort || m.MonitorPort != mp {
			return false
		}
		addrs[m.Address] = true
	}
	for _, m := range want {
		if !addrs[m.address] {
			return false
		}
	}
	return true
}

func sameCIDRs(have, want []string) bool {
	h := slices.Clone(have)
	w := slices.Clone(want)
	slices.Sort(h)
	slices.Sort(w)
	if len(h) == 1 && (h[0] == "0.0.0.0/0" || h[0] == "::/0") {
		h = nil
	}
	return slices.Equal(h, w)
}
