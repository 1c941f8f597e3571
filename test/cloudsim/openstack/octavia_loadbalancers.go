package openstack

import (
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"sort"
)

// Load balancers: /v2/lbaas/loadbalancers
// (octavia/api/v2/controllers/load_balancer.py), the fully-populated
// create with its listeners, pools, members and health monitors, the
// cascade delete, the status tree, statistics and failover.
//
// The VIP port is created on the VIP subnet when the load balancer is
// (Octavia's API allocates it synchronously, device_id "lb-<id>",
// device_owner "Octavia"; the port model has no name yet for Octavia's
// "octavia-lb-<id>") and deleted when its delete is accepted, so
// Resources never shows a load balancer's port without it; a port the
// user gave as vip_port_id is left alone. Floating IPs are the client's
// business, through Neutron.

// lbSchema is LoadBalancerPOST or LoadBalancerPUT.
func (e *Emulator) lbSchema(use ovSchemaUse) ovSchema {
	sgIDs := ovField{name: "vip_sg_ids", kind: ovStrList, since: 29}
	if use == ovPUT {
		return ovSchema{
			ovStr("name", 255), ovStr("description", 255), ovUUIDF("vip_qos_policy_id"),
			ovBoolF("admin_state_up"), sgIDs, ovTags(),
		}
	}
	additional := ovSchema{ovUUIDF("subnet_id").req(), ovIPF("ip_address"), ovUUIDF("port_id")}
	return ovSchema{
		ovStr("name", 255), ovStr("description", 255), ovBoolF("admin_state_up").dflt(true),
		ovIPF("vip_address"), ovUUIDF("vip_port_id"), ovUUIDF("vip_subnet_id"), ovUUIDF("vip_network_id"),
		ovUUIDF("vip_qos_policy_id"), sgIDs,
		ovField{name: "additional_vips", kind: ovObjectList, sub: additional, def: []ovObj{}, since: 26},
		ovStr("project_id", 36), ovStr("tenant_id", 36),
		ovField{name: "listeners", kind: ovObjectList, sub: e.listenerSchema(ovSingle), def: []ovObj{}},
		ovField{name: "pools", kind: ovObjectList, sub: e.poolSchema(ovSingle), def: []ovObj{}},
		ovStr("provider", 64), ovTags(), ovUUIDF("flavor_id").from(6), ovStr("availability_zone", 255).from(14),
	}
}

// vipPlan is where a load balancer's VIP goes.
type vipPlan struct {
	subnet    *subnet
	networkID string
	address   string // requested, "" to allocate
	port      *port  // the user's vip_port_id
	// additional are the additional VIPs asked for (API 2.26).
	additional []additionalVIPPlan
}

// additionalVIPPlan is one additional VIP asked for.
type additionalVIPPlan struct {
	subnet  *subnet
	address string // requested, "" to allocate
}

// resolveAdditionalVIPs is _validate_subnets_share_network_but_no_duplicates
// (octavia/api/v2/controllers/load_balancer.py:249-277, called at :334
// once the primary VIP's subnet is known): every VIP subnet once, each
// one Neutron has, all on one network; each failure a
// ValidationException (400, "Validation failure: %(detail)s",
// octavia/common/exceptions.py:338-340). Octavia does not check that an
// additional VIP is of the other IP family.
func (e *Emulator) resolveAdditionalVIPs(o ovObj, plan *vipPlan) *apiError {
	add := o.objs("additional_vips")
	if len(add) == 0 {
		return nil
	}
	if plan.port != nil {
		// Octavia would take the user's port's further fixed IPs
		// (network/drivers/neutron/base.py:75-109); not emulated.
		return octaviaErr(http.StatusNotImplemented, "Additional VIPs with a vip_port_id are not emulated")
	}
	order := []string{plan.subnet.id}
	seen := map[string]bool{plan.subnet.id: true}
	for _, v := range add {
		id := v.str("subnet_id")
		if seen[id] {
			return errOctaviaValidation("Duplicate VIP subnet(s) specified. Only one IP can be bound per subnet.")
		}
		seen[id] = true
		order = append(order, id)
	}
	nets := map[string]bool{}
	for _, id := range order {
		s, ok := e.subnets.Get(id)
		if !ok {
			return errOctaviaValidation("Subnet %s not found", id)
		}
		nets[s.networkID] = true
	}
	if len(nets) > 1 {
		return errOctaviaValidation("All VIP subnets must belong to the same network.")
	}
	for _, v := range add {
		s, _ := e.subnets.Get(v.str("subnet_id"))
		plan.additional = append(plan.additional, additionalVIPPlan{subnet: s, address: v.str("ip_address")})
	}
	return nil
}

// resolveVIP is _validate_vip_request_object.
func (e *Emulator) resolveVIP(o ovObj) (vipPlan, *apiError) {
	portID, networkID, subnetID, addr := o.str("vip_port_id"), o.str("vip_network_id"), o.str("vip_subnet_id"), o.str("vip_address")
	if portID == "" && networkID == "" && subnetID == "" {
		return vipPlan{}, octaviaErr(http.StatusBadRequest,
			"Validation failure: VIP must contain one of: vip_port_id, vip_network_id, vip_subnet_id.")
	}
	var plan vipPlan
	switch {
	case portID != "":
		p, ok := e.ports.Get(portID)
		if !ok {
			return plan, errOctaviaInvalidSubresource("Port", portID)
		}
		if p.deviceID != "" {
			return plan, errOctaviaValidation("Port %s is already used by device %s ", p.id, p.deviceID)
		}
		plan.port, plan.networkID = p, p.networkID
		switch {
		case subnetID != "":
			if !e.subnets.Has(subnetID) {
				return plan, errOctaviaInvalidSubresource("Subnet", subnetID)
			}
			if p.subnetID != subnetID {
				return plan, errOctaviaValidation("No VIP address found on the specified VIP port within the specified subnet.")
			}
		case addr != "":
			if a, err := netip.ParseAddr(addr); err != nil || a != p.fixedIP {
				return plan, errOctaviaValidation("Specified VIP address not found on the specified VIP port.")
			}
		}
		plan.subnet, _ = e.subnets.Get(p.subnetID)
		plan.address = p.fixedIP.String()
	case networkID != "":
		n, ok := e.networks.Get(networkID)
		if !ok {
			return plan, errOctaviaInvalidSubresource("Network", networkID)
		}
		plan.networkID = n.id
		if subnetID != "" {
			if !slices.Contains(n.subnetIDs, subnetID) {
				return plan, errOctaviaInvalidSubresource("Subnet", subnetID)
			}
			plan.subnet, _ = e.subnets.Get(subnetID)
			break
		}
		if addr != "" {
			a, _ := netip.ParseAddr(addr)
			for _, id := range n.subnetIDs {
				if s, ok := e.subnets.Get(id); ok && s.cidr.Contains(a) {
					plan.subnet = s
					break
				}
			}
			if plan.subnet == nil {
				return plan, errOctaviaValidation("Supplied network does not contain a subnet for VIP address specified.")
			}
			break
		}
		if len(n.subnetIDs) == 0 {
			return plan, errOctaviaValidation("Supplied network does not contain a subnet.")
		}
		// Of the subnets with room for the VIP and an amphora, the
		// first IPv4 one, else the first: "pick the first subnet with
		// enough available IPs, preferring ipv4"
		// (octavia/api/v2/controllers/load_balancer.py:160-196).
		for _, id := range n.subnetIDs {
			s, ok := e.subnets.Get(id)
			if !ok || ovSubnetFree(s) < 2 {
				continue
			}
			if plan.subnet == nil {
				plan.subnet = s
			}
			if s.ipVersion() == 4 {
				plan.subnet = s
				break
			}
		}
		if plan.subnet == nil {
			return plan, errOctaviaValidation("Subnet(s) in the supplied network do not contain enough available IPs.")
		}
	default:
		s, ok := e.subnets.Get(subnetID)
		if !ok {
			return plan, errOctaviaInvalidSubresource("Subnet", subnetID)
		}
		plan.subnet, plan.networkID = s, s.networkID
	}
	if plan.port == nil {
		plan.address = addr
	}
	if err := e.resolveAdditionalVIPs(o, &plan); err != nil {
		return plan, err
	}
	if o.set("vip_qos_policy_id") {
		// The emulated Neutron has no QoS extension.
		return plan, errOctaviaValidation("VIP QoS policy is not allowed in this deployment.")
	}
	return plan, nil
}

// ovSubnetFree counts a subnet's unallocated host addresses.
func ovSubnetFree(s *subnet) int {
	return s.free()
}

// allocateVIP is the provider's create_vip_port: a new port on the
// subnet, at the requested address when there is one. Neutron's errors
// come back as Octavia turns them: an address in use (or no address
// left) is a 409 VIPAddressConflict, anything else a 500 from the
// driver.
func (e *Emulator) allocateVIP(lb *octaviaLB, plan vipPlan) *apiError {
	if plan.port != nil {
		lb.vipPortID, lb.vipAddress, lb.vipSubnetID, lb.vipNetworkID = plan.port.id, plan.address, plan.subnet.id, plan.networkID
		return nil
	}
	s := plan.subnet
	var want netip.Addr
	if plan.address != "" {
		a, err := netip.ParseAddr(plan.address)
		if err != nil || !s.hostAddress(a) {
			return errOctaviaDriver(lb.provider, fmt.Sprintf("IP address %s is not a valid IP for the specified subnet.", plan.address))
		}
		if s.used[a] || a == s.gateway {
			return octaviaErr(http.StatusConflict, "The VIP IP address is already in use: IP address %s already allocated in subnet %s", a, s.id)
		}
		want = a
	}
	p, err := e.createPort(s.id, lb.projectID, "lb-"+lb.id, "Octavia")
	if err != nil {
		return octaviaErr(http.StatusConflict, "The VIP IP address is already in use: No more IP addresses available on network %s.", s.networkID)
	}
	if want.IsValid() {
		// Neutron gives the port the fixed IP asked for.
		e.releaseIP(s.id, p.fixedIP)
		s.used[want] = true
		p.fixedIP = want
	}
	lb.vipPortID, lb.vipAddress, lb.vipSubnetID, lb.vipNetworkID, lb.ownsPort = p.id, p.fixedIP.String(), s.id, s.networkID, true
	for _, a := range plan.additional {
		ip, err := e.addVIPFixedIP(lb, p, a)
		if err != nil {
			e.deletePort(p.id)
			return err
		}
		lb.additionalVIPs = append(lb.additionalVIPs, additionalVIP{subnetID: a.subnet.id, ipAddress: ip.String()})
	}
	return nil
}

// addVIPFixedIP gives the VIP port its fixed IP on an additional VIP's
// subnet: the amphora driver makes one port with a fixed IP per VIP
// (octavia/network/drivers/neutron/allowed_address_pairs.py:550-591), and
// Neutron answers an address outside the subnet or in use as it does
// for the primary VIP (allocateVIP). On an auto-address (SLAAC) subnet
// the port already has its EUI-64 address there, which is the VIP.
func (e *Emulator) addVIPFixedIP(lb *octaviaLB, p *port, a additionalVIPPlan) (netip.Addr, *apiError) {
	s := a.subnet
	for _, x := range p.allocations() {
		if x.subnetID == s.id && x.ip.IsValid() {
			if a.address != "" && a.address != x.ip.String() {
				return netip.Addr{}, errOctaviaDriver(lb.provider, fmt.Sprintf("IP address %s is not a valid IP for the specified subnet.", a.address))
			}
			return x.ip, nil
		}
	}
	if a.address == "" {
		ip, err := e.allocateIP(s)
		if err != nil {
			return netip.Addr{}, octaviaErr(http.StatusConflict, "The VIP IP address is already in use: No more IP addresses available on network %s.", s.networkID)
		}
		p.moreIPs = append(p.moreIPs, ipAlloc{s.id, ip})
		return ip, nil
	}
	ip, err := netip.ParseAddr(a.address)
	if err != nil || !s.hostAddress(ip) {
		return netip.Addr{}, errOctaviaDriver(lb.provider, fmt.Sprintf("IP address %s is not a valid IP for the specified subnet.", a.address))
	}
	if s.used[ip] || ip == s.gateway {
		return netip.Addr{}, octaviaErr(http.StatusConflict, "The VIP IP address is already in use: IP address %s already allocated in subnet %s", ip, s.id)
	}
	s.used[ip] = true
	p.moreIPs = append(p.moreIPs, ipAlloc{s.id, ip})
	return ip, nil
}

// vipAddresses are the load balancer's VIP and additional VIPs, which
// listener allowed_cidrs are checked against
// (octavia/api/v2/controllers/listener.py:336-339, :555-560).
func (lb *octaviaLB) vipAddresses() []string {
	out := []string{lb.vipAddress}
	for _, v := range lb.additionalVIPs {
		out = append(out, v.ipAddress)
	}
	return out
}

// fullPoolSpec: a listener's default_pool with more than a name (and
// the defaults WSME fills in) defines the pool instead of naming one.
func fullPoolSpec(p ovObj) bool {
	for k := range p {
		if k != "name" && k != "admin_state_up" && k != "tls_enabled" {
			return true
		}
	}
	return false
}

// lbGraph is what a fully-populated create builds.
type lbGraph struct {
	listeners []*octaviaListener
	pools     []*octaviaPool
	// specs keep each object's request for the driver checks.
	poolSpecs    map[*octaviaPool]ovObj
	memberSpecs  map[*octaviaMember]ovObj
	monitorSpecs map[*octaviaMonitor]ovObj
}

// buildGraph is _graph_create: pools first (a listener's full default
// pool among them), then the listeners, all PENDING_CREATE.
func (e *Emulator) buildGraph(lb *octaviaLB, o ovObj) (*lbGraph, *apiError) {
	g := &lbGraph{poolSpecs: map[*octaviaPool]ovObj{}, memberSpecs: map[*octaviaMember]ovObj{}, monitorSpecs: map[*octaviaMonitor]ovObj{}}
	listenerSpecs := o.objs("listeners")
	poolSpecs := slices.Clone(o.objs("pools"))
	required := map[string]bool{}
	defaultPools := make([]string, len(listenerSpecs))
	for i, li := range listenerSpecs {
		if len(li.objs("l7policies")) > 0 {
			return nil, errL7NotEmulated()
		}
		dp := li.obj("default_pool")
		if dp == nil {
			continue
		}
		name := dp.str("name")
		if name == "" {
			return nil, errOctaviaValidation("Pools must be named when creating a fully populated loadbalancer.")
		}
		if fullPoolSpec(dp) {
			poolSpecs = append(poolSpecs, dp)
		} else {
			required[name] = true
		}
		defaultPools[i] = name
	}
	names := map[any]bool{}
	for _, p := range poolSpecs {
		var name any
		if p.set("name") {
			name = p.str("name")
		}
		if names[name] {
			return nil, errOctaviaValidation("Pool names must be unique when creating a fully populated loadbalancer.")
		}
		names[name] = true
	}
	refs := make([]string, 0, len(required))
	for r := range required {
		refs = append(refs, r)
	}
	sort.Strings(refs)
	for _, r := range refs {
		if !names[r] {
			return nil, errOctaviaValidation("Pool '%s' was referenced but no full definition was found.", r)
		}
	}
	if len(poolSpecs) > 0 {
		if err := e.quota(lb.projectID, KindPool, len(poolSpecs)); err != nil {
			return nil, err
		}
	}
	poolByName := map[string]*octaviaPool{}
	for _, ps := range poolSpecs {
		for _, attr := range []string{"protocol", "lb_algorithm"} {
			if !ps.has(attr) {
				return nil, errOctaviaValidation("Pool definition for '%s' missing required attribute: %s", pyStr(ps["name"]), attr)
			}
		}
		if err := checkPoolTLS(ps); err != nil {
			return nil, err
		}
		p := e.newPool(lb, ps)
		g.poolSpecs[p] = ps
		if hs := ps.obj("healthmonitor"); hs != nil {
			if err := e.quota(lb.projectID, KindHealthMonitor, 1); err != nil {
				return nil, err
			}
			if err := checkMonitorCreate(hs); err != nil {
				return nil, err
			}
			if err := checkMonitorForPool(hs.str("type"), hs.num("delay"), p.protocol); err != nil {
				return nil, err
			}
			h := e.newMonitor(p, hs)
			p.monitor = h
			g.monitorSpecs[h] = hs
		}
		if ms := ps.objs("members"); len(ms) > 0 {
			if err := e.quota(lb.projectID, KindMember, len(ms)); err != nil {
				return nil, err
			}
			for _, mo := range ms {
				if err := checkMemberAddress(mo.str("address")); err != nil {
					return nil, err
				}
				if err := ovCheckSRIOV(mo); err != nil {
					return nil, err
				}
				if ovFindMember(p, mo.str("address"), mo.num("protocol_port")) != nil {
					return nil, errDuplicateMember(mo.str("address"), mo.num("protocol_port"))
				}
				m := e.newMember(p, mo)
				p.members = append(p.members, m)
				g.memberSpecs[m] = mo
			}
		}
		g.pools = append(g.pools, p)
		if ps.set("name") {
			poolByName[ps.str("name")] = p
		}
	}
	if len(listenerSpecs) > 0 {
		if err := e.quota(lb.projectID, KindListener, len(listenerSpecs)); err != nil {
			return nil, err
		}
	}
	for i, li := range listenerSpecs {
		var pool *octaviaPool
		switch {
		case defaultPools[i] != "":
			pool = poolByName[defaultPools[i]]
			if li.str("protocol") == "PROMETHEUS" {
				return nil, octaviaErr(http.StatusBadRequest, "Protocol PROMETHEUS listeners cannot have child objects.")
			}
			if err := checkListenerPoolProtocol(li.str("protocol"), pool.protocol); err != nil {
				return nil, err
			}
		case li.set("default_pool_id"):
			// No pool of the new load balancer has an ID yet.
			return nil, errOctaviaNotFound("Pool", li.str("default_pool_id"))
		}
		if err := checkListenerCreate(li, g.listeners, lb.vipAddresses()); err != nil {
			return nil, err
		}
		l := e.newListener(lb, li)
		l.defaultPool = pool
		g.listeners = append(g.listeners, l)
	}
	return g, nil
}

// driverCheckGraph runs the provider's checks of every object of a
// fully-populated create. The OVN driver's loadbalancer_create checks
// them all; the amphora driver's checks none and lets the worker fail,
// which the emulator does not model: it refuses an amphora pool's
// algorithm up front, as a pool create would.
func (e *Emulator) driverCheckGraph(lb *octaviaLB, g *lbGraph) *apiError {
	for _, l := range g.listeners {
		if err := driverCheckListener(lb.provider, l.protocol, l.allowedCIDRs); err != nil {
			return err
		}
	}
	for _, p := range g.pools {
		ps := g.poolSpecs[p]
		if err := driverCheckPool(lb.provider, p.protocol, p.algorithm, ps.obj("session_persistence")); err != nil {
			return err
		}
		if p.monitor != nil {
			if err := driverCheckMonitor(lb.provider, p.monitor.typ); err != nil {
				return err
			}
		}
		for _, m := range p.members {
			if err := e.driverCheckMember(lb, p, g.memberSpecs[m], false); err != nil {
				return err
			}
		}
	}
	return nil
}

// --- handlers ---

func (e *Emulator) createLoadBalancer(c *octaviaCall) (int, any, *apiError) {
	o, err := e.decodeOctaviaRoot(c, "load_balancer", "loadbalancer", e.lbSchema(ovPOST))
	if err != nil {
		return 0, nil, err
	}
	if err := checkPostProject(c, o); err != nil {
		return 0, nil, err
	}
	plan, err := e.resolveVIP(o)
	if err != nil {
		return 0, nil, err
	}
	placement, err := e.resolvePlacement(o)
	if err != nil {
		return 0, nil, err
	}
	provider := placement.provider
	projectID := c.tok.projectID
	if err := e.quota(projectID, KindLoadBalancer, 1); err != nil {
		return 0, nil, err
	}
	if err := checkPlacementWithDriver(placement); err != nil {
		return 0, nil, err
	}
	if len(plan.additional) > 0 && isOVN(provider) {
		// [unverified] whether ovn-octavia-provider takes them.
		return 0, nil, octaviaErr(http.StatusNotImplemented, "Additional VIPs with the %s provider are not emulated", provider)
	}
	lb := &octaviaLB{
		ovBase:      e.newOctaviaBase(projectID, o.str("name"), o.strs("tags"), o.flag("admin_state_up")),
		description: o.str("description"), provider: provider, vipSGIDs: o.strs("vip_sg_ids"),
		topology: placement.topology(),
	}
	if placement.flavor != nil {
		lb.flavorID = &placement.flavor.ID
	}
	if placement.zone != nil {
		lb.zone = &placement.zone.Name
	}
	if err := e.allocateVIP(lb, plan); err != nil {
		return 0, nil, err
	}
	g, err := e.buildGraph(lb, o)
	if err == nil {
		err = e.driverCheckGraph(lb, g)
	}
	if err != nil {
		// The transaction rolls back; the emulator also takes back the
		// port it made.
		if lb.ownsPort {
			e.deletePort(lb.vipPortID)
		}
		return 0, nil, err
	}
	e.octavia.lbs.Put(lb)
	for _, p := range g.pools {
		e.storePool(p)
		if p.monitor != nil {
			e.octavia.monitors.Put(p.monitor)
		}
		for _, m := range p.members {
			e.octavia.members.Put(m)
		}
	}
	for _, l := range g.listeners {
		e.storeListener(l)
	}
	e.startOperation(lb, ovPendingCreate)
	return http.StatusCreated, map[string]any{"loadbalancer": e.lbView(lb, true)}, nil
}

func (e *Emulator) getLoadBalancer(c *octaviaCall) (int, any, *apiError) {
	lb, err := e.projectLB(c, c.ids[0])
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"loadbalancer": ovFields(c, e.lbView(lb, false))}, nil
}

func (e *Emulator) listLoadBalancers(c *octaviaCall) (int, any, *apiError) {
	cols := ovBaseColumns[*octaviaLB]()
	cols["description"] = func(lb *octaviaLB) any { return lb.description }
	cols["provider"] = func(lb *octaviaLB) any { return lb.provider }
	cols["vip_address"] = func(lb *octaviaLB) any { return lb.vipAddress }
	cols["vip_port_id"] = func(lb *octaviaLB) any { return lb.vipPortID }
	cols["vip_subnet_id"] = func(lb *octaviaLB) any { return lb.vipSubnetID }
	cols["vip_network_id"] = func(lb *octaviaLB) any { return lb.vipNetworkID }
	cols["vip_qos_policy_id"] = func(lb *octaviaLB) any { return ovStrPtr(lb.vipQoSPolicy) }
	cols["flavor_id"] = func(lb *octaviaLB) any { return ovStrPtr(lb.flavorID) }
	cols["availability_zone"] = func(lb *octaviaLB) any { return ovStrPtr(lb.zone) }
	cols["topology"] = func(lb *octaviaLB) any { return lb.topology }
	return octaviaList(e, c, ovListSpec[*octaviaLB]{
		collection: "loadbalancers", columns: cols,
		tags:    func(lb *octaviaLB) []string { return lb.tags },
		project: func(lb *octaviaLB) string { return lb.projectID },
		id:      func(lb *octaviaLB) string { return lb.id },
		marker: func(id string) (*octaviaLB, bool) {
			if lb, ok := e.octavia.lbs.Get(id); ok {
				return lb, true
			}
			lb, ok := e.octavia.deletedLBs[id]
			return lb, ok
		},
		render: func(lb *octaviaLB) map[string]any { return e.lbView(lb, false) },
	}, e.octavia.lbs.All())
}

func (e *Emulator) updateLoadBalancer(c *octaviaCall) (int, any, *apiError) {
	o, err := e.decodeOctaviaRoot(c, "load_balancer", "loadbalancer", e.lbSchema(ovPUT))
	if err != nil {
		return 0, nil, err
	}
	lb, err := e.projectLB(c, c.ids[0])
	if err != nil {
		return 0, nil, err
	}
	if o.set("vip_qos_policy_id") {
		return 0, nil, errOctaviaValidation("VIP QoS policy is not allowed in this deployment.")
	}
	if lb.prov != ovActive {
		return 0, nil, errOctaviaPendingState(lb.prov, lb.id)
	}
	if o.has("name") {
		lb.name = o.str("name")
	}
	if o.has("description") {
		lb.description = o.str("description")
	}
	if o.has("admin_state_up") {
		lb.adminUp = o.flag("admin_state_up")
	}
	if o.has("tags") {
		lb.tags = slices.Clone(o.strs("tags"))
	}
	if o.has("vip_sg_ids") {
		lb.vipSGIDs = o.strs("vip_sg_ids")
	}
	e.startOperation(lb, ovPendingUpdate)
	return http.StatusOK, map[string]any{"loadbalancer": e.lbView(lb, false)}, nil
}

func (e *Emulator) deleteLoadBalancer(c *octaviaCall) (int, any, *apiError) {
	lb, err := e.projectLB(c, c.ids[0])
	if err != nil {
		return 0, nil, err
	}
	cascade := false
	if v, ok := c.query.last("cascade"); ok {
		cascade = ovPyBool(v)
	}
	if (len(lb.listeners) > 0 || len(lb.pools) > 0) && !cascade {
		return 0, nil, errOctaviaValidation("Cannot delete Load Balancer %s - it has children", lb.id)
	}
	if lb.prov != ovActive && lb.prov != ovError {
		return 0, nil, errOctaviaPendingState(lb.prov, lb.id)
	}
	if lb.ownsPort {
		e.deletePort(lb.vipPortID)
	}
	e.startOperation(lb, ovPendingDelete)
	return http.StatusNoContent, nil, nil
}

func (e *Emulator) failoverLoadBalancer(c *octaviaCall) (int, any, *apiError) {
	lb, err := e.projectLB(c, c.ids[0])
	if err != nil {
		return 0, nil, err
	}
	if lb.prov != ovActive && lb.prov != ovError {
		return 0, nil, errOctaviaPendingState(lb.prov, lb.id)
	}
	if err := driverCheckFailover(lb.provider); err != nil {
		return 0, nil, err
	}
	e.startOperation(lb, ovPendingUpdate)
	return http.StatusAccepted, nil, nil
}

func (e *Emulator) getLoadBalancerStats(c *octaviaCall) (int, any, *apiError) {
	if _, err := e.projectLB(c, c.ids[0]); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"stats": ovZeroStats()}, nil
}

// getLoadBalancerStatus is the status tree: the load balancer, its
// listeners, their pools (the default pool), the pools' health monitor
// and members.
func (e *Emulator) getLoadBalancerStatus(c *octaviaCall) (int, any, *apiError) {
	lb, err := e.projectLB(c, c.ids[0])
	if err != nil {
		return 0, nil, err
	}
	listeners := []any{}
	for _, l := range lb.listeners {
		pools := []any{}
		if p := l.defaultPool; p != nil {
			members := []any{}
			for _, m := range p.members {
				members = append(members, map[string]any{
					"id": m.id, "name": m.name, "operating_status": m.oper, "provisioning_status": m.prov,
					"address": m.address, "protocol_port": m.port,
				})
			}
			pv := map[string]any{
				"id": p.id, "name": p.name, "provisioning_status": p.prov, "operating_status": p.oper, "members": members,
			}
			if h := p.monitor; h != nil {
				pv["health_monitor"] = map[string]any{
					"id": h.id, "name": h.name, "type": h.typ, "provisioning_status": h.prov, "operating_status": h.oper,
				}
			}
			pools = append(pools, pv)
		}
		listeners = append(listeners, map[string]any{
			"id": l.id, "name": l.name, "operating_status": l.oper, "provisioning_status": l.prov, "pools": pools,
		})
	}
	return http.StatusOK, map[string]any{"statuses": map[string]any{"loadbalancer": map[string]any{
		"id": lb.id, "name": lb.name, "operating_status": lb.oper, "provisioning_status": lb.prov, "listeners": listeners,
	}}}, nil
}

// lbView is LoadBalancerResponse, or LoadBalancerFullResponse (full:
// listeners and pools in full, as a create answers).
func (e *Emulator) lbView(lb *octaviaLB, full bool) map[string]any {
	v := map[string]any{
		"id": lb.id, "name": lb.name, "description": lb.description,
		"provisioning_status": lb.prov, "operating_status": lb.oper, "admin_state_up": lb.adminUp,
		"project_id": lb.projectID, "tenant_id": lb.projectID,
		"created_at": ovTime(lb.created), "updated_at": ovTimePtr(lb.updated),
		"vip_address": lb.vipAddress, "vip_port_id": lb.vipPortID, "vip_subnet_id": lb.vipSubnetID,
		"vip_network_id": lb.vipNetworkID, "vip_qos_policy_id": ovNullStr(lb.vipQoSPolicy),
		"provider": lb.provider,
	}
	listeners, pools := []any{}, []any{}
	for _, l := range lb.listeners {
		if full {
			listeners = append(listeners, e.listenerView(l, true))
		} else {
			listeners = append(listeners, map[string]any{"id": l.id})
		}
	}
	for _, p := range lb.pools {
		if full {
			pools = append(pools, e.poolView(p, true))
		} else {
			pools = append(pools, map[string]any{"id": p.id})
		}
	}
	v["listeners"], v["pools"] = listeners, pools
	if e.octaviaAt(5) {
		v["tags"] = ovTagList(lb.tags)
	}
	if e.octaviaAt(6) {
		v["flavor_id"] = ovNullStr(lb.flavorID)
	}
	if e.octaviaAt(14) {
		v["availability_zone"] = ovNullStr(lb.zone)
	}
	if e.octaviaAt(26) {
		// AdditionalVipsType (octavia/api/v2/types/load_balancer.py:56-60,
		// 87-90): each on the VIP port.
		add := []any{}
		for _, a := range lb.additionalVIPs {
			add = append(add, map[string]any{"subnet_id": a.subnetID, "ip_address": a.ipAddress, "port_id": lb.vipPortID})
		}
		v["additional_vips"] = add
	}
	if e.octaviaAt(28) {
		v["vip_vnic_type"] = "normal"
	}
	if e.octaviaAt(29) {
		v["vip_sg_ids"] = ovTagList(lb.vipSGIDs)
	}
	return v
}
