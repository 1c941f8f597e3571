package openstack

// Neutron networks and subnets, read-only: GET /v2.0/networks[/{id}] and
// /v2.0/subnets[/{id}]. The fixture (and Config) makes them. A project
// sees its own networks and the external ones (shared with every
// project as external, through RBAC), with their subnets.

func networkNotFound(id string) *apiError {
	return neutronNotFound("NetworkNotFound", "Network "+id+" could not be found.")
}

func subnetNotFound(id string) *apiError {
	return neutronNotFound("SubnetNotFound", "Subnet "+id+" could not be found.")
}

func (e *Emulator) networkVisible(c *neutronCall, n *network) bool {
	return n.projectID == c.project || (n.external && e.hasExt(extExternalNet))
}

// visibleNetwork is a network the caller may see, or NetworkNotFound.
func (e *Emulator) visibleNetwork(c *neutronCall, id string) (*network, *apiError) {
	n, ok := e.networks.Get(id)
	if !ok || !e.networkVisible(c, n) {
		return nil, networkNotFound(id)
	}
	return n, nil
}

func (e *Emulator) networkView(n *network) ntView {
	v := ntView{
		"id": n.id, "name": n.name, "admin_state_up": true, "status": "ACTIVE",
		"subnets": ntStrings(n.subnetIDs), "shared": false,
	}
	if e.hasExt(extExternalNet) {
		v["router:external"] = n.external
	}
	if e.hasExt(extNetMTU) {
		v["mtu"] = n.mtu
	}
	if e.hasExt(extPortSecurity) {
		v["port_security_enabled"] = n.portSecurity
	}
	return e.stdView(v, &n.std, n.projectID)
}

func (e *Emulator) networkListSpec() ntListSpec {
	own := map[string]ntFilter{
		"name": ntEqual, "status": ntEqual, "admin_state_up": ntBoolFilter, "shared": ntBoolFilter,
	}
	if e.hasExt(extExternalNet) {
		own["router:external"] = ntBoolFilter
	}
	if e.hasExt(extNetMTU) {
		own["mtu"] = ntIntFilter
	}
	if e.hasExt(extPortSecurity) {
		own["port_security_enabled"] = ntBoolFilter
	}
	keys := []string{"id", "name", "admin_state_up", "status", "project_id", "tenant_id"}
	if e.hasExt(extNetMTU) {
		keys = append(keys, "mtu")
	}
	return ntListSpec{collection: "networks", filters: e.withStdFilters(own), sortKeys: keys}
}

func (e *Emulator) listNetworks(c *neutronCall) (*neutronResponse, *apiError) {
	return ntList(e, c, e.networkListSpec(), e.networks.All(), func(n *network) bool { return e.networkVisible(c, n) }, e.networkView, e.visibleNetwork)
}

func (e *Emulator) getNetwork(c *neutronCall) (*neutronResponse, *apiError) {
	return ntShow(c, "network", e.visibleNetwork, e.networkView)
}

// --- subnets ---

func (e *Emulator) subnetVisible(c *neutronCall, s *subnet) bool {
	if s.projectID == c.project {
		return true
	}
	n, ok := e.networks.Get(s.networkID)
	return ok && e.networkVisible(c, n)
}

func (e *Emulator) visibleSubnet(c *neutronCall, id string) (*subnet, *apiError) {
	s, ok := e.subnets.Get(id)
	if !ok || !e.subnetVisible(c, s) {
		return nil, subnetNotFound(id)
	}
	return s, nil
}

func (e *Emulator) subnetView(s *subnet) ntView {
	v := ntView{
		"id": s.id, "name": s.name, "network_id": s.networkID, "ip_version": s.ipVersion(),
		"cidr": s.cidr.String(), "gateway_ip": s.gateway.String(),
		// generate_pools (neutron/ipam/utils.py:50-78): the subnet
		// without its network and gateway addresses, and in IPv4 its
		// broadcast one.
		"allocation_pools": []any{map[string]any{"start": addrAt(s.cidr, 2).String(), "end": s.lastAddr().String()}},
		"enable_dhcp":      true, "dns_nameservers": []string{}, "host_routes": []any{},
		"ipv6_address_mode": ntNullStr(s.ipv6AddressMode), "ipv6_ra_mode": ntNullStr(s.ipv6RAMode),
		"subnetpool_id": nil, "shared": false,
	}
	return e.stdView(v, &s.std, s.projectID)
}

// ntNullStr is a string attribute that is None when empty.
func ntNullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (e *Emulator) subnetListSpec() ntListSpec {
	own := map[string]ntFilter{
		"name": ntEqual, "network_id": ntEqual, "cidr": ntEqual, "gateway_ip": ntEqual, "ip_version": ntIntFilter,
		"enable_dhcp": ntBoolFilter, "subnetpool_id": ntEqual, "ipv6_address_mode": ntEqual,
		"ipv6_ra_mode": ntEqual, "shared": ntBoolFilter,
	}
	keys := []string{"id", "name", "ip_version", "network_id", "subnetpool_id", "cidr", "gateway_ip", "project_id", "tenant_id", "enable_dhcp", "ipv6_ra_mode", "ipv6_address_mode"}
	return ntListSpec{collection: "subnets", filters: e.withStdFilters(own), sortKeys: keys}
}

func (e *Emulator) listSubnets(c *neutronCall) (*neutronResponse, *apiError) {
	return ntList(e, c, e.subnetListSpec(), e.subnets.All(), func(s *subnet) bool { return e.subnetVisible(c, s) }, e.subnetView, e.visibleSubnet)
}

func (e *Emulator) getSubnet(c *neutronCall) (*neutronResponse, *apiError) {
	return ntShow(c, "subnet", e.visibleSubnet, e.subnetView)
}
