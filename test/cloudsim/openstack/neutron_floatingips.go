package openstack

import (
	"net/http"
	"net/netip"
	"slices"
)

// Neutron floating IPs: GET, POST /v2.0/floatingips and GET, PUT, DELETE
// /v2.0/floatingips/{id}, as neutron.db.l3_db answers a project member.
// A floating IP is ACTIVE while associated with a port and DOWN
// otherwise (what ML2/OVN reports once it has programmed the NAT), and
// with fip-port-details carries the port's details. Associations go
// through associateFloatingIP, so Nova's server addresses follow.

func floatingIPNotFound(id string) *apiError {
	return neutronNotFound("FloatingIPNotFound", "Floating IP "+id+" could not be found")
}

func (e *Emulator) visibleFloatingIP(c *neutronCall, id string) (*floatingIP, *apiError) {
	f, ok := e.floatingIPs.Get(id)
	if !ok || f.projectID != c.project {
		return nil, floatingIPNotFound(id)
	}
	return f, nil
}

func (f *floatingIP) status() string {
	if f.portID == "" {
		return "DOWN"
	}
	return "ACTIVE"
}

func (e *Emulator) floatingIPView(f *floatingIP) ntView {
	v := ntView{
		"id": f.id, "floating_ip_address": f.address.String(), "floating_network_id": f.networkID,
		"router_id": nil, "port_id": nil, "fixed_ip_address": nil, "status": f.status(),
	}
	if f.routerID != "" {
		v["router_id"] = f.routerID
	}
	if f.portID != "" {
		v["port_id"] = f.portID
		if f.fixedIP.IsValid() {
			v["fixed_ip_address"] = f.fixedIP.String()
		}
	}
	if e.hasExt(extFIPPortDetails) {
		v["port_details"] = nil
		if p, ok := e.ports.Get(f.portID); ok {
			v["port_details"] = map[string]any{
				"name": p.name, "network_id": p.networkID, "mac_address": p.mac, "admin_state_up": p.adminStateUp,
				"status": p.status(), "device_id": p.deviceID, "device_owner": p.deviceOwner,
			}
		}
	}
	return e.stdView(v, &f.std, f.projectID)
}

func (e *Emulator) floatingIPListSpec() ntListSpec {
	own := map[string]ntFilter{
		"floating_ip_address": ntEqual, "floating_network_id": ntEqual, "router_id": ntEqual, "port_id": ntEqual,
		"fixed_ip_address": ntEqual, "status": ntEqual,
	}
	return ntListSpec{
		collection: "floatingips", filters: e.withStdFilters(own),
		sortKeys: []string{"id", "floating_ip_address", "floating_network_id", "router_id", "fixed_ip_address", "project_id", "tenant_id", "status"},
	}
}

func (e *Emulator) listFloatingIPs(c *neutronCall) (*neutronResponse, *apiError) {
	return ntList(e, c, e.floatingIPListSpec(), e.floatingIPs.All(), func(f *floatingIP) bool { return f.projectID == c.project }, e.floatingIPView, e.visibleFloatingIP)
}

func (e *Emulator) getFloatingIP(c *neutronCall) (*neutronResponse, *apiError) {
	return ntShow(c, "floatingip", e.visibleFloatingIP, e.floatingIPView)
}

func (e *Emulator) floatingIPAttrs() map[string]ntAttr {
	return e.stdAttrSpecs(map[string]ntAttr{
		"floating_ip_address": {post: true}, "subnet_id": {post: true},
		"floating_network_id": {post: true, required: true}, "router_id": {},
		"port_id": {post: true, put: true}, "fixed_ip_address": {post: true, put: true},
		"status": {}, "port_details": {},
	}, false)
}

// ntOptIP reads an attribute of type ip_address_or_none.
func ntOptIP(m map[string]any, key string) (string, *apiError) {
	v, ok := m[key]
	if !ok || v == nil {
		return "", nil
	}
	if msg := ntValidateIP(v); msg != "" {
		return "", ntHTTPBadRequest("Invalid input for " + key + ". Reason: " + msg + ".")
	}
	return v.(string), nil
}

// ntOptUUID reads an attribute of type uuid_or_none.
func ntOptUUID(m map[string]any, key string) (string, *apiError) {
	v, ok := m[key]
	if !ok || v == nil {
		return "", nil
	}
	s, isStr := v.(string)
	if !isStr || !ntUUIDPattern.MatchString(s) {
		return "", ntHTTPBadRequest("Invalid input for " + key + ". Reason: '" + pyStr(v) + "' is not a valid UUID.")
	}
	return s, nil
}

// fipAssociation resolves the port a floating IP of project on network
// extNetworkID is to be associated with (_internal_fip_assoc_data and
// get_router_for_floatingip): the port, and the router that will serve
// it.
func (e *Emulator) fipAssociation(c *neutronCall, portID, fixedIP, extNetworkID string) (*port, *router, *apiError) {
	p, ok := e.ports.Get(portID)
	if !ok || p.projectID != c.project {
		if ok {
			return nil, nil, ntBadRequest("floatingip", "Cannot process floating IP association with Port "+portID+", since that port is owned by a different project")
		}
		return nil, nil, portNotFound(portID)
	}
	if p.deviceOwner == ownerDHCP {
		// Neutron's message really has the placeholder unfilled.
		return nil, nil, ntBadRequest("floatingip", "Port %(id)s is unable to be assigned a floating IP")
	}
	// _internal_fip_assoc_data (neutron/db/l3_db.py:1365-1392): a
	// floating IP is NAT to an IPv4 fixed IP; Neutron has no IPv6
	// floating IPs.
	var internal ipAlloc
	if fixedIP != "" {
		a := netip.MustParseAddr(fixedIP)
		if !a.Is4() {
			return nil, nil, ntBadRequest("floatingip", "Cannot process floating IP association with "+fixedIP+", since that is not an IPv4 address")
		}
		i := slices.IndexFunc(p.allocations(), func(x ipAlloc) bool { return x.ip == a })
		if i < 0 {
			return nil, nil, ntBadRequest("floatingip", "Port "+p.id+" does not have fixed ip "+fixedIP)
		}
		internal = p.allocations()[i]
	} else {
		v4 := p.ipv4()
		switch {
		case len(v4) == 0:
			return nil, nil, ntBadRequest("floatingip", "Cannot add floating IP to port "+p.id+" that has no fixed IPv4 addresses")
		case len(v4) > 1:
			return nil, nil, ntBadRequest("floatingip", "Port "+p.id+" has multiple fixed IPv4 addresses.  Must provide a specific IPv4 address when assigning a floating IP")
		}
		internal = v4[0]
	}
	r := e.routerForFloatingIP(internal.subnetID, extNetworkID)
	if r == nil {
		return nil, nil, neutronNotFound("ExternalGatewayForFloatingIPNotFound", "External network "+extNetworkID+
			" is not reachable from subnet "+internal.subnetID+".  Therefore, cannot associate Port "+p.id+" with a Floating IP.")
	}
	return p, r, nil
}

// alreadyAssociated is the FloatingIPPortAlreadyAssociated check: the
// port's fixed IP has another floating IP on the same network.
func (e *Emulator) alreadyAssociated(f *floatingIP, p *port) *apiError {
	other := e.floatingIPOf(p.id)
	if other == nil || other == f || other.networkID != f.networkID {
		return nil
	}
	return neutronConflict("FloatingIPPortAlreadyAssociated", "Cannot associate floating IP "+f.address.String()+
		" ("+f.id+") with port "+p.id+" using fixed IP "+other.fixedIP.String()+
		", as that fixed IP already has a floating IP on external network "+f.networkID+".")
}

func (e *Emulator) createFloatingIPAPI(c *neutronCall) (*neutronResponse, *apiError) {
	items, err := c.parseBody("floatingip", e.floatingIPAttrs(), true, false)
	if err != nil {
		return nil, err
	}
	m := items[0]
	address, err := ntOptIP(m, "floating_ip_address")
	if err != nil {
		return nil, err
	}
	subnetID, err := ntOptUUID(m, "subnet_id")
	if err != nil {
		return nil, err
	}
	netID, err := ntOptUUID(m, "floating_network_id")
	if err != nil {
		return nil, err
	}
	portID, err := ntOptUUID(m, "port_id")
	if err != nil {
		return nil, err
	}
	fixedIP, err := ntOptIP(m, "fixed_ip_address")
	if err != nil {
		return nil, err
	}
	var std stdAttrs
	if err := e.applyStd(m, &std); err != nil {
		return nil, err
	}
	n, ok := e.networks.Get(netID)
	if !ok || !e.networkVisible(c, n) {
		return nil, networkNotFound(netID)
	}
	if !n.external {
		return nil, ntBadRequest("floatingip", "Network "+netID+" is not a valid external network")
	}
	if len(n.subnetIDs) == 0 {
		return nil, ntBadRequest("floatingip", "Network "+netID+" does not contain any IPv4 subnet")
	}
	if fixedIP != "" && portID == "" {
		return nil, ntBadRequest("floatingip", "fixed_ip_address cannot be specified without a port_id")
	}
	var fixed []any
	if subnetID != "" || address != "" {
		entry := map[string]any{}
		if subnetID != "" {
			entry["subnet_id"] = subnetID
		}
		if address != "" {
			entry["ip_address"] = address
		}
		fixed = []any{entry}
	}
	s, ip, err := e.allocateFixedIP(n, fixed, fixed != nil)
	if err != nil {
		return nil, err
	}
	f := &floatingIP{id: e.ids.uuid(), address: ip, networkID: n.id, projectID: c.project, std: newStdAttrs(e.now())}
	f.std.description, f.std.tags = std.description, std.tags
	if portID != "" {
		p, _, err := e.fipAssociation(c, portID, fixedIP, n.id)
		if err == nil {
			err = e.alreadyAssociated(f, p)
		}
		if err != nil {
			e.releaseIP(s.id, ip)
			return nil, err
		}
	}
	e.floatingIPs.Put(f)
	e.associateFloatingIP(f, portID)
	return &neutronResponse{status: http.StatusCreated, body: map[string]any{"floatingip": e.floatingIPView(f)}}, nil
}

func (e *Emulator) updateFloatingIP(c *neutronCall) (*neutronResponse, *apiError) {
	items, err := c.parseBody("floatingip", e.floatingIPAttrs(), false, false)
	if err != nil {
		return nil, err
	}
	m := items[0]
	portID, err := ntOptUUID(m, "port_id")
	if err != nil {
		return nil, err
	}
	fixedIP, err := ntOptIP(m, "fixed_ip_address")
	if err != nil {
		return nil, err
	}
	desc, hasDesc, err := ntAttrString(m, "description", descriptionFieldSize)
	if err != nil {
		return nil, err
	}
	f, err := e.visibleFloatingIP(c, c.id)
	if err != nil {
		return nil, err
	}
	if err := c.checkRevision(&f.std); err != nil {
		return nil, err
	}
	// _check_and_get_fip_assoc
	if fixedIP != "" && portID == "" {
		return nil, ntBadRequest("floatingip", "fixed_ip_address cannot be specified without a port_id")
	}
	_, portGiven := m["port_id"]
	target := f.portID
	if portGiven {
		target = portID
	}
	if portID != "" {
		p, _, err := e.fipAssociation(c, portID, fixedIP, f.networkID)
		if err != nil {
			return nil, err
		}
		if err := e.alreadyAssociated(f, p); err != nil {
			return nil, err
		}
	}
	changed := false
	if target != f.portID {
		e.associateFloatingIP(f, target)
		changed = true
	}
	if hasDesc && desc != f.std.description {
		f.std.description, changed = desc, true
	}
	if changed {
		f.std.bump(e.now())
	}
	return neutronOK(map[string]any{"floatingip": e.floatingIPView(f)}), nil
}

func (e *Emulator) deleteFloatingIPAPI(c *neutronCall) (*neutronResponse, *apiError) {
	f, err := e.visibleFloatingIP(c, c.id)
	if err != nil {
		return nil, err
	}
	if err := c.checkRevision(&f.std); err != nil {
		return nil, err
	}
	e.deleteFloatingIP(f.id)
	return &neutronResponse{status: http.StatusNoContent}, nil
}
