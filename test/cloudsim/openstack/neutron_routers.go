package openstack

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Neutron routers: GET /v2.0/routers[/{id}], PUT /v2.0/routers/{id}
// (name, description, admin_state_up, routes) and, with
// extraroute-atomic, PUT .../add_extraroutes and .../remove_extraroutes.
// Routers are made by the fixture or CreateRouter, with a gateway on an
// external network and interfaces on subnets, whose ports (device_owner
// network:router_interface) the project sees; the gateway port belongs
// to no project, as in Neutron.

type router struct {
	id, name, projectID string
	adminStateUp        bool
	gwNetworkID         string // "" without a gateway
	gwPortID            string
	routes              []extraRoute
	std                 stdAttrs
}

// extraRoute is one of a router's routes, both halves as Neutron
// writes them: the destination's text as the client gave it, the next
// hop canonical.
type extraRoute struct {
	destination, nexthop string
}

func routerNotFound(id string) *apiError {
	return neutronNotFound("RouterNotFound", "Router "+id+" could not be found")
}

func (e *Emulator) visibleRouter(c *neutronCall, id string) (*router, *apiError) {
	r, ok := e.neutron.routers.Get(id)
	if !ok || r.projectID != c.project {
		return nil, routerNotFound(id)
	}
	return r, nil
}

// routerPorts are the ports whose device is the router: its gateway and
// interfaces.
func (e *Emulator) routerPorts(r *router) []*port {
	var out []*port
	for _, p := range e.ports.All() {
		if p.deviceID == r.id && (p.deviceOwner == ownerRouterInterface || p.deviceOwner == ownerRouterGateway) {
			out = append(out, p)
		}
	}
	return out
}

// createRouter makes a router of projectID with its gateway on the
// external network extNetworkID ("" for none) and an interface on each
// subnet, the interface taking the subnet's gateway address. Callers
// hold e.mu.
func (e *Emulator) createRouter(name, projectID, extNetworkID string, subnetIDs ...string) (*router, error) {
	r := &router{id: e.ids.uuid(), name: name, projectID: projectID, adminStateUp: true, std: newStdAttrs(e.now())}
	if extNetworkID != "" {
		n, ok := e.networks.Get(extNetworkID)
		if !ok || !n.external || len(n.subnetIDs) == 0 {
			return nil, fmt.Errorf("no external network %q with a subnet", extNetworkID)
		}
		s, _ := e.subnets.Get(n.subnetIDs[0])
		ip, err := e.allocateIP(s)
		if err != nil {
			return nil, err
		}
		gw := e.newPort(s, ip, "", r.id, ownerRouterGateway)
		e.ports.Put(gw)
		r.gwNetworkID, r.gwPortID = n.id, gw.id
	}
	for _, sid := range subnetIDs {
		if err := e.addRouterInterface(r, sid); err != nil {
			return nil, err
		}
	}
	e.neutron.routers.Put(r)
	return r, nil
}

// addRouterInterface gives r an interface on subnet sid, on the
// subnet's gateway address when it is free. Callers hold e.mu and bump
// r's revision when r existed before.
func (e *Emulator) addRouterInterface(r *router, sid string) error {
	s, ok := e.subnets.Get(sid)
	if !ok {
		return fmt.Errorf("unknown subnet %q", sid)
	}
	// l3_db._validate_subnet_address_mode (neutron/db/l3_db.py:137-144).
	if s.ipVersion() == 6 && s.ipv6RAMode == "" && s.ipv6AddressMode != "" {
		return fmt.Errorf("Bad router request: IPv6 subnet %s configured to receive RAs from an external router cannot be added to Neutron Router.", s.id)
	}
	for _, p := range e.routerPorts(r) {
		if p.deviceOwner == ownerRouterInterface && p.subnetID == s.id {
			return fmt.Errorf("Router already has a port on subnet %s", s.id)
		}
	}
	ip := s.gateway
	if s.used[ip] {
		var err error
		if ip, err = e.allocateIP(s); err != nil {
			return err
		}
	}
	s.used[ip] = true
	e.ports.Put(e.newPort(s, ip, r.projectID, r.id, ownerRouterInterface))
	return nil
}

// routerForFloatingIP is get_router_for_floatingip: a router with an
// interface on the subnet of the port's fixed IP and its gateway on the
// floating IP's network, preferring the one whose interface is the
// subnet's gateway. Nil when there is none. Callers hold e.mu.
func (e *Emulator) routerForFloatingIP(subnetID, extNetworkID string) *router {
	var first *router
	for _, r := range e.neutron.routers.All() {
		if r.gwNetworkID != extNetworkID {
			continue
		}
		for _, rp := range e.routerPorts(r) {
			if rp.deviceOwner != ownerRouterInterface || rp.subnetID != subnetID {
				continue
			}
			if s, ok := e.subnets.Get(rp.subnetID); ok && rp.fixedIP == s.gateway {
				return r
			}
			if first == nil {
				first = r
			}
		}
	}
	return first
}

func (e *Emulator) routerView(r *router) ntView {
	v := ntView{
		"id": r.id, "name": r.name, "admin_state_up": r.adminStateUp, "status": "ACTIVE",
		"external_gateway_info": nil,
	}
	if gw, ok := e.ports.Get(r.gwPortID); ok && r.gwNetworkID != "" {
		info := map[string]any{
			"network_id":         r.gwNetworkID,
			"external_fixed_ips": []any{map[string]any{"subnet_id": gw.subnetID, "ip_address": gw.fixedIP.String()}},
		}
		if e.hasExt(extExtGWMode) {
			info["enable_snat"] = true
		}
		v["external_gateway_info"] = info
	}
	if e.hasExt(extExtraRoute) {
		routes := []any{}
		for _, rt := range r.routes {
			routes = append(routes, map[string]any{"destination": rt.destination, "nexthop": rt.nexthop})
		}
		v["routes"] = routes
	}
	return e.stdView(v, &r.std, r.projectID)
}

func (e *Emulator) routerListSpec() ntListSpec {
	own := map[string]ntFilter{"name": ntEqual, "admin_state_up": ntBoolFilter}
	return ntListSpec{
		collection: "routers", filters: e.withStdFilters(own),
		sortKeys: []string{"id", "name", "admin_state_up", "status", "project_id", "tenant_id"},
	}
}

func (e *Emulator) listRouters(c *neutronCall) (*neutronResponse, *apiError) {
	return ntList(e, c, e.routerListSpec(), e.neutron.routers.All(), func(r *router) bool { return r.projectID == c.project }, e.routerView, e.visibleRouter)
}

func (e *Emulator) getRouter(c *neutronCall) (*neutronResponse, *apiError) {
	return ntShow(c, "router", e.visibleRouter, e.routerView)
}

func (e *Emulator) routerAttrs() map[string]ntAttr {
	a := map[string]ntAttr{
		"name": {post: true, put: true}, "admin_state_up": {post: true, put: true}, "status": {},
		"external_gateway_info": {post: true, put: true},
	}
	if e.hasExt(extExtraRoute) {
		a["routes"] = ntAttr{put: true}
	}
	return e.stdAttrSpecs(a, false)
}

// parseRoutes reads routes as the hostroutes validator does (null is
// no routes).
func parseRoutes(v any) ([]extraRoute, *apiError) {
	if v == nil {
		return []extraRoute{}, nil
	}
	bad := func(msg string) *apiError { return ntHTTPBadRequest("Invalid input for routes. Reason: " + msg + ".") }
	l, ok := v.([]any)
	if !ok {
		return nil, bad("Invalid data format for hostroute: '" + pyStr(v) + "'")
	}
	out := []extraRoute{}
	for _, it := range l {
		d, ok := it.(map[string]any)
		if !ok {
			return nil, bad("Invalid input. '" + pyStr(it) + "' must be a dictionary with keys: ['destination', 'nexthop']")
		}
		_, hasDst := d["destination"]
		_, hasHop := d["nexthop"]
		if len(d) != 2 || !hasDst || !hasHop {
			keys := make([]string, 0, len(d))
			for k := range d {
				keys = append(keys, pyRepr(k))
			}
			slices.Sort(keys)
			return nil, bad("Validation of dictionary's keys failed. Expected keys: {'destination', 'nexthop'} Provided keys: {" + strings.Join(keys, ", ") + "}")
		}
		dst, _ := d["destination"].(string)
		p, err := netip.ParsePrefix(dst)
		if err != nil || p.Masked() != p {
			return nil, bad("'" + pyStr(d["destination"]) + "' is not a valid CIDR")
		}
		if p.Addr().IsLoopback() {
			return nil, bad("'" + dst + "' is not a routable CIDR")
		}
		if msg := ntValidateIP(d["nexthop"]); msg != "" {
			return nil, bad(msg)
		}
		hop := netip.MustParseAddr(d["nexthop"].(string))
		// Neutron keeps the destination's text as given (a RouterRoute's
		// destination is an AuthenticIPNetwork, neutron/objects/router.py:
		// 46-67), so "fd00:244:0::/64" stays so and is another route than
		// "fd00:244::/64"; the next hop is stored as netaddr prints it
		// (RFC 5952, as Go does).
		rt := extraRoute{destination: dst, nexthop: hop.String()}
		if slices.Contains(out, rt) {
			return nil, bad("Duplicate hostroute '" + routeRepr(rt) + "'")
		}
		out = append(out, rt)
	}
	return out, nil
}

// routeRepr is a route as Python prints its dict.
func routeRepr(r extraRoute) string {
	return "{'destination': '" + r.destination + "', 'nexthop': '" + r.nexthop + "'}"
}

func routesRepr(rs []extraRoute) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = routeRepr(r)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// setRoutes replaces a router's routes after _validate_routes (every
// nexthop on a subnet of one of the router's ports' fixed IPs, none of
// them the router's own address; neutron/db/extraroute_db.py:83-124,
// either family) and the router_route quota.
func (e *Emulator) setRoutes(r *router, routes []extraRoute) *apiError {
	var cidrs []netip.Prefix
	var ips []netip.Addr
	for _, p := range e.routerPorts(r) {
		for _, a := range p.allocations() {
			if s, ok := e.subnets.Get(a.subnetID); ok {
				cidrs = append(cidrs, s.cidr)
			}
			ips = append(ips, a.ip)
		}
	}
	for _, rt := range routes {
		hop := netip.MustParseAddr(rt.nexthop)
		if !slices.ContainsFunc(cidrs, func(p netip.Prefix) bool { return p.Contains(hop) }) {
			return neutronBadRequest("InvalidRoutes", "Invalid format for routes: "+routesRepr(routes)+", the nexthop is not connected with router")
		}
		if slices.Contains(ips, hop) {
			return neutronBadRequest("InvalidRoutes", "Invalid format for routes: "+routesRepr(routes)+", the nexthop is used by router")
		}
	}
	if q := e.cfg.Neutron.RouterRouteQuota; q >= 0 && len(routes) > q {
		return ntOverQuota("router_route")
	}
	if !sameRoutes(r.routes, routes) {
		// Routes still there keep their place; new ones go last, as rows
		// in the routerroutes table.
		var next []extraRoute
		for _, old := range r.routes {
			if slices.Contains(routes, old) {
				next = append(next, old)
			}
		}
		for _, rt := range routes {
			if !slices.Contains(next, rt) {
				next = append(next, rt)
			}
		}
		r.routes = next
		r.std.bump(e.now())
	}
	return nil
}

func sameRoutes(a, b []extraRoute) bool {
	if len(a) != len(b) {
		return false
	}
	for _, r := range a {
		if !slices.Contains(b, r) {
			return false
		}
	}
	return true
}

func (e *Emulator) updateRouter(c *neutronCall) (*neutronResponse, *apiError) {
	items, err := c.parseBody("router", e.routerAttrs(), false, false)
	if err != nil {
		return nil, err
	}
	m := items[0]
	name, hasName, err := ntAttrString(m, "name", nameFieldSize)
	if err != nil {
		return nil, err
	}
	up, hasUp, err := ntAttrBool(m, "admin_state_up")
	if err != nil {
		return nil, err
	}
	desc, hasDesc, err := ntAttrString(m, "description", descriptionFieldSize)
	if err != nil {
		return nil, err
	}
	var routes []extraRoute
	rv, hasRoutes := m["routes"]
	if hasRoutes {
		if routes, err = parseRoutes(rv); err != nil {
			return nil, err
		}
	}
	r, err := e.visibleRouter(c, c.id)
	if err != nil {
		return nil, err
	}
	if gw, ok := m["external_gateway_info"]; ok && !e.sameGateway(r, gw) {
		return nil, ntHTTPBadRequest("cloudsim: changing a router's external_gateway_info is not emulated")
	}
	if err := c.checkRevision(&r.std); err != nil {
		return nil, err
	}
	if hasRoutes {
		if err := e.setRoutes(r, routes); err != nil {
			return nil, err
		}
	}
	changed := false
	if hasName && name != r.name {
		r.name, changed = name, true
	}
	if hasUp && up != r.adminStateUp {
		r.adminStateUp, changed = up, true
	}
	if hasDesc && desc != r.std.description {
		r.std.description, changed = desc, true
	}
	if changed {
		r.std.bump(e.now())
	}
	return neutronOK(map[string]any{"router": e.routerView(r)}), nil
}

// sameGateway reports whether an external_gateway_info in a request
// asks for the gateway the router has.
func (e *Emulator) sameGateway(r *router, v any) bool {
	d, ok := v.(map[string]any)
	if !ok {
		return v == nil && r.gwNetworkID == ""
	}
	id, _ := d["network_id"].(string)
	return id == r.gwNetworkID
}

// addExtraRoutes and removeExtraRoutes are extraroute-atomic's member
// actions: the body's routes merged into (or taken out of) the router's
// under one lock, then validated as a whole, as update_router does.
// Adding a route the router has, or removing one it lacks, changes
// nothing.
func (e *Emulator) addExtraRoutes(c *neutronCall) (*neutronResponse, *apiError) {
	return e.editExtraRoutes(c, func(old, req []extraRoute) []extraRoute {
		out := slices.Clone(old)
		for _, rt := range req {
			if !slices.Contains(out, rt) {
				out = append(out, rt)
			}
		}
		return out
	})
}

func (e *Emulator) removeExtraRoutes(c *neutronCall) (*neutronResponse, *apiError) {
	return e.editExtraRoutes(c, func(old, req []extraRoute) []extraRoute {
		return slices.DeleteFunc(slices.Clone(old), func(rt extraRoute) bool { return slices.Contains(req, rt) })
	})
}

func (e *Emulator) editExtraRoutes(c *neutronCall, edit func(old, req []extraRoute) []extraRoute) (*neutronResponse, *apiError) {
	items, err := c.parseBody("router", map[string]ntAttr{"routes": {put: true}}, false, false)
	if err != nil {
		return nil, err
	}
	rv, ok := items[0]["routes"]
	if !ok {
		return nil, ntHTTPBadRequest("Invalid input for routes. Reason: Invalid data format for hostroute: 'None'.")
	}
	routes, err := parseRoutes(rv)
	if err != nil {
		return nil, err
	}
	r, err := e.visibleRouter(c, c.id)
	if err != nil {
		return nil, err
	}
	if err := c.checkRevision(&r.std); err != nil {
		return nil, err
	}
	if err := e.setRoutes(r, edit(r.routes, routes)); err != nil {
		return nil, err
	}
	return neutronOK(map[string]any{"router": e.routerView(r)}), nil
}
