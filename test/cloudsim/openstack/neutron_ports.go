package openstack

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"strings"
)

// Neutron ports: GET, POST /v2.0/ports and GET, PUT, DELETE
// /v2.0/ports/{id}, as ML2 answers a project member. A port is made with
// one fixed IP on the subnet asked for (with no fixed_ips, Neutron's
// choice: one IPv4 and one stateful IPv6 address), plus, as Neutron adds
// them whatever was asked, its EUI-64 address on every SLAAC or
// DHCPv6-stateless subnet of its network; creating one with several
// fixed_ips entries is refused with a message saying so.

func portNotFound(id string) *apiError {
	return neutronNotFound("PortNotFound", "Port "+id+" could not be found.")
}

// visiblePort is a port of the caller's project, or PortNotFound.
func (e *Emulator) visiblePort(c *neutronCall, id string) (*port, *apiError) {
	p, ok := e.ports.Get(id)
	if !ok || p.projectID != c.project {
		return nil, portNotFound(id)
	}
	return p, nil
}

// status is what ML2/OVN reports: ACTIVE once a device has the port,
// DOWN while nothing does.
func (p *port) status() string {
	if p.deviceID == "" || !p.adminStateUp {
		return "DOWN"
	}
	return "ACTIVE"
}

func (e *Emulator) portView(p *port) ntView {
	v := ntView{
		"id": p.id, "name": p.name, "network_id": p.networkID, "mac_address": p.mac,
		"admin_state_up": p.adminStateUp, "status": p.status(),
		"device_id": p.deviceID, "device_owner": p.deviceOwner,
		"fixed_ips": fixedIPsView(p),
	}
	if e.hasExt(extSecurityGroup) {
		v["security_groups"] = ntStrings(p.securityGroups)
	}
	if e.hasExt(extPortSecurity) {
		v["port_security_enabled"] = p.portSecurity
	}
	if e.hasExt(extAllowedAddressPairs) {
		pairs := []any{}
		for _, a := range p.addressPairs {
			pairs = append(pairs, map[string]any{"ip_address": a.ip, "mac_address": a.mac})
		}
		v["allowed_address_pairs"] = pairs
	}
	return e.stdView(v, &p.std, p.projectID)
}

// fixedIPsView is a port's fixed_ips, in Neutron's order.
func fixedIPsView(p *port) []any {
	out := []any{}
	for _, a := range p.fixedIPs() {
		out = append(out, map[string]any{"subnet_id": a.subnetID, "ip_address": a.ip.String()})
	}
	return out
}

// fixedIPFilter is the fixed_ips filter: "ip_address=...",
// "subnet_id=..." and (ip-substring-filtering) "ip_address_substr=..."
// values, all of which the port's address must match
// (convert_kvp_list_to_dict, then the ports query).
func (e *Emulator) fixedIPFilter(_ string, vals []string) (func(ntView) bool, *apiError) {
	kv := map[string][]string{}
	for _, s := range vals {
		k, v, ok := strings.Cut(s, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" {
			return nil, ntInvalidInput("'" + s + "' is not of the form <key>=[value]")
		}
		kv[k] = append(kv[k], v)
	}
	substr := kv["ip_address_substr"]
	if !e.hasExt(extIPSubstringFilter) {
		substr = nil
	}
	return func(v ntView) bool {
		for _, f := range v["fixed_ips"].([]any) {
			ip := f.(map[string]any)
			if ips, ok := kv["ip_address"]; ok && !slices.Contains(ips, ip["ip_address"].(string)) {
				continue
			}
			if sids, ok := kv["subnet_id"]; ok && !slices.Contains(sids, ip["subnet_id"].(string)) {
				continue
			}
			if len(substr) > 0 && !slices.ContainsFunc(substr, func(s string) bool { return strings.Contains(ip["ip_address"].(string), s) }) {
				continue
			}
			return true
		}
		return false
	}, nil
}

func (e *Emulator) portListSpec() ntListSpec {
	own := map[string]ntFilter{
		"name": ntEqual, "network_id": ntEqual, "admin_state_up": ntBoolFilter, "mac_address": ntEqual,
		"device_id": ntEqual, "device_owner": ntEqual, "status": ntEqual, "fixed_ips": e.fixedIPFilter,
	}
	if e.hasExt(extSecurityGroup) && e.hasExt(extPortSecurityGroupFilter) {
		own["security_groups"] = func(_ string, vals []string) (func(ntView) bool, *apiError) {
			return func(v ntView) bool { return containsAny(v["security_groups"].([]string), vals) }, nil
		}
	}
	keys := []string{"id", "name", "network_id", "admin_state_up", "mac_address", "device_id", "device_owner", "project_id", "tenant_id", "status"}
	return ntListSpec{collection: "ports", filters: e.withStdFilters(own), sortKeys: keys}
}

func (e *Emulator) listPorts(c *neutronCall) (*neutronResponse, *apiError) {
	return ntList(e, c, e.portListSpec(), e.ports.All(), func(p *port) bool { return p.projectID == c.project }, e.portView, e.visiblePort)
}

func (e *Emulator) getPort(c *neutronCall) (*neutronResponse, *apiError) {
	return ntShow(c, "port", e.visiblePort, e.portView)
}

// portAttrs is the ports attribute map with the enabled extensions'.
func (e *Emulator) portAttrs() map[string]ntAttr {
	a := map[string]ntAttr{
		"name": {post: true, put: true}, "network_id": {post: true, required: true},
		"admin_state_up": {post: true, put: true}, "mac_address": {post: true, put: true},
		"fixed_ips": {post: true, put: true}, "device_id": {post: true, put: true},
		"device_owner": {post: true, put: true}, "status": {},
	}
	if e.hasExt(extSecurityGroup) {
		a["security_groups"] = ntAttr{post: true, put: true}
	}
	if e.hasExt(extPortSecurity) {
		a["port_security_enabled"] = ntAttr{post: true, put: true}
	}
	if e.hasExt(extAllowedAddressPairs) {
		a["allowed_address_pairs"] = ntAttr{post: true, put: true}
	}
	return e.stdAttrSpecs(a, true)
}

var (
	ntUUIDPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$`)
)

// ntMAC is validators.validate_mac_address: an EUI-48 other than all
// zeros or all ones, in Neutron's lower-case colon form.
func ntMAC(s string) (string, bool) {
	hw, err := net.ParseMAC(s)
	if err != nil || len(hw) != 6 {
		return "", false
	}
	m := hw.String()
	return m, m != "00:00:00:00:00:00" && m != "ff:ff:ff:ff:ff:ff"
}

// ntUUIDList reads a list of UUIDs (type:uuid_list); null is the empty
// list (convert_none_to_empty_list).
func ntUUIDList(m map[string]any, key string) ([]string, bool, *apiError) {
	v, ok := m[key]
	if !ok {
		return nil, false, nil
	}
	if v == nil {
		return []string{}, true, nil
	}
	l, isList := v.([]any)
	if !isList {
		return nil, true, ntHTTPBadRequest("Invalid input for " + key + ". Reason: '" + pyStr(v) + "' is not a list.")
	}
	out := []string{}
	for _, it := range l {
		s, isStr := it.(string)
		if !isStr || !ntUUIDPattern.MatchString(s) {
			return nil, true, ntHTTPBadRequest("Invalid input for " + key + ". Reason: '" + pyStr(it) + "' is not a valid UUID.")
		}
		if slices.Contains(out, s) {
			return nil, true, ntHTTPBadRequest("Invalid input for " + key + ". Reason: Duplicate items in the list: '" + s + "'.")
		}
		out = append(out, s)
	}
	return out, true, nil
}

// addressPairs reads allowed_address_pairs as
// _validate_allowed_address_pairs does; pairs without a MAC get mac.
func (e *Emulator) addressPairs(v any, mac string) ([]addressPair, *apiError) {
	if v == nil {
		return nil, nil
	}
	l, ok := v.([]any)
	if !ok {
		return nil, ntHTTPBadRequest("Allowed address pairs must be a list.")
	}
	if len(l) > e.cfg.Neutron.MaxAllowedAddressPairs {
		return nil, neutronBadRequest("AllowedAddressPairExhausted",
			fmt.Sprintf("The number of allowed address pair exceeds the maximum %d.", e.cfg.Neutron.MaxAllowedAddressPairs))
	}
	var out []addressPair
	seen := map[[2]string]bool{}
	for _, it := range l {
		d, ok := it.(map[string]any)
		if !ok {
			return nil, ntHTTPBadRequest("Invalid input for allowed_address_pairs. Reason: '" + pyStr(it) + "' is not a dictionary.")
		}
		pairMAC := ""
		if m, ok := d["mac_address"]; ok {
			s, isStr := m.(string)
			mac, ok := ntMAC(s)
			if !isStr || !ok {
				return nil, ntHTTPBadRequest("'" + pyStr(m) + "' is not a valid MAC address")
			}
			pairMAC = mac
		}
		ipv, ok := d["ip_address"]
		if !ok {
			return nil, neutronBadRequest("AllowedAddressPairsMissingIP", "AllowedAddressPair must contain ip_address")
		}
		ip, _ := ipv.(string)
		macKey := "None"
		if pairMAC != "" {
			macKey = pairMAC
		}
		if seen[[2]string{macKey, ip}] {
			return nil, neutronBadRequest("DuplicateAddressPairInRequest",
				"Request contains duplicate address pair: mac_address "+macKey+" ip_address "+pyStr(ipv)+".")
		}
		seen[[2]string{macKey, ip}] = true
		var extra []string
		for k := range d {
			if k != "mac_address" && k != "ip_address" {
				extra = append(extra, k)
			}
		}
		if len(extra) > 0 {
			slices.Sort(extra)
			return nil, ntHTTPBadRequest("Unrecognized attribute(s) '" + strings.Join(extra, ", ") + "'")
		}
		if strings.Contains(ip, "/") {
			if msg := ntValidateSubnet(ip); msg != "" {
				return nil, ntHTTPBadRequest(msg)
			}
		} else if msg := ntValidateIP(ipv); msg != "" {
			return nil, ntHTTPBadRequest(msg)
		}
		if pairMAC == "" {
			pairMAC = mac
		}
		out = append(out, addressPair{ip: ip, mac: pairMAC})
	}
	return out, nil
}

// ntValidateIP is validators.validate_ip_address: "" when v is an
// IP address as Neutron writes it.
func ntValidateIP(v any) string {
	s, ok := v.(string)
	if !ok {
		return "'" + pyStr(v) + "' is not a valid IP address"
	}
	a, err := netip.ParseAddr(s)
	if err != nil || (!strings.Contains(s, ":") && strings.Count(s, ".") != 3) {
		return "'" + s + "' is not a valid IP address"
	}
	if a.Is4() && a.String() != s {
		return "'" + s + "' is not an accepted IP address, '" + a.String() + "' is recommended"
	}
	return ""
}

// ntValidateSubnet is validators.validate_subnet: an address with a
// prefix length, written as Neutron writes it (host bits may be set).
func ntValidateSubnet(s string) string {
	p, err := netip.ParsePrefix(s)
	if err != nil || (p.Addr().Is4() && p.String() != s) {
		return "'" + s + "' is not a valid IP subnet"
	}
	return ""
}

// portSecurityGroups resolves the security_groups of a port request:
// every one must be the caller's (SecurityGroupNotFound naming the
// missing ones), and stateful and stateless groups do not mix.
func (e *Emulator) portSecurityGroups(c *neutronCall, ids []string) *apiError {
	var missing []string
	stateful := map[bool]bool{}
	for _, id := range ids {
		g, ok := e.neutron.secGroups.Get(id)
		if !ok || g.projectID != c.project {
			missing = append(missing, id)
			continue
		}
		stateful[g.stateful] = true
	}
	if len(missing) > 0 {
		return securityGroupNotFound(strings.Join(missing, ", "))
	}
	if len(stateful) > 1 {
		return neutronConflict("SecurityGroupConflict",
			"Error Cannot apply both stateful and stateless security groups on the same port at the same time while attempting the operation.")
	}
	return nil
}

// allocateFixedIP takes the address a port request's fixed_ips ask for
// on network n (one entry: subnet_id, ip_address or both), or, when it
// names none, the next free address of the network's first IPv4 subnet
// (else its first stateful IPv6 one). On a SLAAC or DHCPv6-stateless
// subnet it returns no address: the port's EUI-64 one, which its MAC
// gives, is taken by addAutoAddresses.
func (e *Emulator) allocateFixedIP(n *network, v any, hasFixed bool) (*subnet, netip.Addr, *apiError) {
	var entry map[string]any
	if hasFixed {
		l, ok := v.([]any)
		if !ok {
			return nil, netip.Addr{}, ntHTTPBadRequest("Invalid input for fixed_ips. Reason: Invalid data format for fixed IP: '" + pyStr(v) + "'.")
		}
		if len(l) != 1 {
			return nil, netip.Addr{}, ntHTTPBadRequest(fmt.Sprintf(
				"cloudsim: a port request names exactly one fixed IP in the emulated Neutron (which adds the EUI-64 ones itself); fixed_ips has %d", len(l)))
		}
		entry, ok = l[0].(map[string]any)
		if !ok {
			return nil, netip.Addr{}, ntHTTPBadRequest("Invalid input for fixed_ips. Reason: Invalid data format for fixed IP: '" + pyStr(l[0]) + "'.")
		}
		if ipv, ok := entry["ip_address"]; ok {
			if msg := ntValidateIP(ipv); msg != "" {
				return nil, netip.Addr{}, ntHTTPBadRequest("Invalid input for fixed_ips. Reason: " + msg + ".")
			}
		}
		if sid, ok := entry["subnet_id"]; ok {
			if s, isStr := sid.(string); !isStr || !ntUUIDPattern.MatchString(s) {
				return nil, netip.Addr{}, ntHTTPBadRequest("Invalid input for fixed_ips. Reason: '" + pyStr(sid) + "' is not a valid UUID.")
			}
		}
	}
	if len(n.subnetIDs) == 0 {
		return nil, netip.Addr{}, ntInvalidInput("IP allocation requires subnets for network")
	}
	sid, hasSubnet := entry["subnet_id"].(string)
	ipStr, hasIP := entry["ip_address"].(string)
	var s *subnet
	switch {
	case hasSubnet:
		if !slices.Contains(n.subnetIDs, sid) {
			if !e.subnets.Has(sid) {
				return nil, netip.Addr{}, subnetNotFound(sid)
			}
			return nil, netip.Addr{}, ntInvalidInput("Failed to create port on network " + n.id + ", because fixed_ips included invalid subnet " + sid)
		}
		s, _ = e.subnets.Get(sid)
		if hasIP && !s.hostAddress(netip.MustParseAddr(ipStr)) {
			return nil, netip.Addr{}, neutronBadRequest("InvalidIpForSubnet", "IP address "+ipStr+" is not a valid IP for the specified subnet.")
		}
	case hasIP:
		a := netip.MustParseAddr(ipStr)
		for _, id := range n.subnetIDs {
			if cand, ok := e.subnets.Get(id); ok && cand.hostAddress(a) {
				s = cand
				break
			}
		}
		if s == nil {
			return nil, netip.Addr{}, neutronBadRequest("InvalidIpForNetwork", "IP address "+ipStr+" is not a valid IP for any of the subnets on the specified network.")
		}
	case hasFixed:
		return nil, netip.Addr{}, ntInvalidInput("IP allocation requires subnet_id or ip_address")
	default:
		s = e.defaultSubnet(n)
	}
	if s.autoAddress() {
		if hasIP {
			// Neutron takes an address that is the port's own EUI-64
			// one; the emulator refuses that too.
			return nil, netip.Addr{}, neutronBadRequest("AllocationOnAutoAddressSubnet", "IPv6 address "+ipStr+
				" cannot be directly assigned to a port on subnet "+s.id+" as the subnet is configured for automatic addresses")
		}
		return s, netip.Addr{}, nil
	}
	if hasIP {
		a := netip.MustParseAddr(ipStr)
		if s.used[a] {
			return nil, netip.Addr{}, neutronConflict("IpAddressAlreadyAllocated", "IP address "+ipStr+" already allocated in subnet "+s.id)
		}
		s.used[a] = true
		return s, a, nil
	}
	a, err := e.allocateIP(s)
	if err != nil {
		return nil, netip.Addr{}, neutronConflict("IpAddressGenerationFailure", "No more IP addresses available on network "+n.id+".")
	}
	return s, a, nil
}

// defaultSubnet is where a port made without fixed_ips takes its first
// address: the network's first IPv4 subnet, else its first stateful
// IPv6 one, else its first (ipam_pluggable_backend._allocate_ips_for_port
// takes one of each family and every auto-address one).
func (e *Emulator) defaultSubnet(n *network) *subnet {
	for _, want := range []func(*subnet) bool{
		func(s *subnet) bool { return s.ipVersion() == 4 },
		func(s *subnet) bool { return !s.autoAddress() },
		func(*subnet) bool { return true },
	} {
		for _, id := range n.subnetIDs {
			if s, ok := e.subnets.Get(id); ok && want(s) {
				return s
			}
		}
	}
	return nil
}

// statefulIPv6Subnet is the network's first IPv6 subnet without
// automatic addresses, nil when it has none.
func (e *Emulator) statefulIPv6Subnet(n *network) *subnet {
	for _, id := range n.subnetIDs {
		if s, ok := e.subnets.Get(id); ok && s.ipVersion() == 6 && !s.autoAddress() {
			return s
		}
	}
	return nil
}

func (e *Emulator) createPortAPI(c *neutronCall) (*neutronResponse, *apiError) {
	items, err := c.parseBody("port", e.portAttrs(), true, false)
	if err != nil {
		return nil, err
	}
	m := items[0]
	name, _, err := ntAttrString(m, "name", nameFieldSize)
	if err != nil {
		return nil, err
	}
	netID, _, err := ntAttrString(m, "network_id", 0)
	if err != nil {
		return nil, err
	}
	deviceID, _, err := ntAttrString(m, "device_id", deviceIDFieldSize)
	if err != nil {
		return nil, err
	}
	owner, _, err := ntAttrString(m, "device_owner", deviceOwnerFieldSize)
	if err != nil {
		return nil, err
	}
	adminUp, hasAdmin, err := ntAttrBool(m, "admin_state_up")
	if err != nil {
		return nil, err
	}
	mac, hasMAC, err := ntAttrString(m, "mac_address", 0)
	if err != nil {
		return nil, err
	}
	if hasMAC {
		m, ok := ntMAC(mac)
		if !ok {
			return nil, ntHTTPBadRequest("Invalid input for mac_address. Reason: '" + mac + "' is not a valid MAC address.")
		}
		mac = m
	}
	sgs, hasSGs, err := ntUUIDList(m, "security_groups")
	if err != nil {
		return nil, err
	}
	psec, hasPsec, err := ntAttrBool(m, "port_security_enabled")
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
	if n.projectID != c.project {
		// _validate_network_project_ownership hides networks the
		// project may see but not plug into.
		return nil, neutronError(http.StatusNotFound, "HTTPNotFound", msgNotFound)
	}
	if !hasPsec {
		psec = n.portSecurity
	}
	if !hasAdmin {
		adminUp = true
	}
	pairsV, hasPairs := m["allowed_address_pairs"]
	if hasPairs && pairsV != nil {
		if l, ok := pairsV.([]any); ok && len(l) > 0 && !psec {
			return nil, neutronConflict("AddressPairAndPortSecurityRequired",
				"Port Security must be enabled in order to have allowed address pairs on a port.")
		}
	}
	switch {
	case trustedOwner(owner):
		sgs = nil
	case hasSGs && len(sgs) > 0 && !psec:
		return nil, neutronBadRequest("PortSecurityAndIPRequiredForSecurityGroups",
			"Port security must be enabled and port must have an IP address in order to use security groups.")
	case hasSGs:
		if err := e.portSecurityGroups(c, sgs); err != nil {
			return nil, err
		}
	case psec && e.hasExt(extSecurityGroup):
		if g := e.ensureDefaultSecurityGroup(c.project); g != nil {
			sgs = []string{g.id}
		}
	}
	// Pairs without a MAC get the port's, which is not known yet.
	pairs, err := e.addressPairs(pairsV, "")
	if err != nil {
		return nil, err
	}
	fixed, hasFixed := m["fixed_ips"]
	s, ip, err := e.allocateFixedIP(n, fixed, hasFixed)
	if err != nil {
		return nil, err
	}
	p := e.newPort(s, ip, c.project, deviceID, owner)
	if hasMAC {
		p.mac = mac
	}
	if s6 := e.statefulIPv6Subnet(n); !hasFixed && s.ipVersion() == 4 && s6 != nil {
		if err := e.addFixedIP(p, s6.id); err != nil {
			e.releasePort(p)
			return nil, neutronConflict("IpAddressGenerationFailure", "No more IP addresses available on network "+n.id+".")
		}
	}
	if err := e.addAutoAddresses(p); err != nil {
		e.releasePort(p)
		return nil, neutronConflict("MacAddressInUse", "Unable to complete operation for network "+n.id+". The mac address "+p.mac+" is in use.")
	}
	for i := range pairs {
		if pairs[i].mac == "" {
			pairs[i].mac = p.mac
		}
	}
	p.name, p.adminStateUp, p.portSecurity, p.securityGroups, p.addressPairs = name, adminUp, psec, sgs, pairs
	p.std.description, p.std.tags = std.description, std.tags
	e.ports.Put(p)
	return &neutronResponse{status: http.StatusCreated, body: map[string]any{"port": e.portView(p)}}, nil
}

func (e *Emulator) updatePort(c *neutronCall) (*neutronResponse, *apiError) {
	items, err := c.parseBody("port", e.portAttrs(), false, false)
	if err != nil {
		return nil, err
	}
	m := items[0]
	p, err := e.visiblePort(c, c.id)
	if err != nil {
		return nil, err
	}
	if err := c.checkRevision(&p.std); err != nil {
		return nil, err
	}
	if _, ok := m["mac_address"]; ok {
		return nil, neutronError(http.StatusForbidden, "PolicyNotAuthorized",
			"(rule:update_port and rule:update_port:mac_address) is disallowed by policy")
	}
	if v, ok := m["fixed_ips"]; ok {
		if l, isList := v.([]any); !isList || !sameFixedIPs(l, p) {
			return nil, ntHTTPBadRequest("cloudsim: changing a port's fixed_ips is not emulated")
		}
	}
	next := *p
	if s, ok, err := ntAttrString(m, "name", nameFieldSize); err != nil {
		return nil, err
	} else if ok {
		next.name = s
	}
	if s, ok, err := ntAttrString(m, "device_id", deviceIDFieldSize); err != nil {
		return nil, err
	} else if ok {
		next.deviceID = s
	}
	if s, ok, err := ntAttrString(m, "device_owner", deviceOwnerFieldSize); err != nil {
		return nil, err
	} else if ok {
		next.deviceOwner = s
	}
	if b, ok, err := ntAttrBool(m, "admin_state_up"); err != nil {
		return nil, err
	} else if ok {
		next.adminStateUp = b
	}
	if b, ok, err := ntAttrBool(m, "port_security_enabled"); err != nil {
		return nil, err
	} else if ok {
		next.portSecurity = b
	}
	sgs, hasSGs, err := ntUUIDList(m, "security_groups")
	if err != nil {
		return nil, err
	}
	pairsV, hasPairs := m["allowed_address_pairs"]
	var pairs []addressPair
	if hasPairs {
		if pairs, err = e.addressPairs(pairsV, p.mac); err != nil {
			return nil, err
		}
		next.addressPairs = pairs
	}
	if d, ok, err := ntAttrString(m, "description", descriptionFieldSize); err != nil {
		return nil, err
	} else if ok {
		next.std.description = d
	}
	// _portsec_ext_port_update_processing
	if !next.portSecurity {
		if hasPairs && len(pairs) > 0 || !hasPairs && len(p.addressPairs) > 0 {
			return nil, neutronConflict("AddressPairAndPortSecurityRequired",
				"Port Security must be enabled in order to have allowed address pairs on a port.")
		}
		if hasSGs && len(sgs) > 0 {
			return nil, neutronBadRequest("PortSecurityAndIPRequiredForSecurityGroups",
				"Port security must be enabled and port must have an IP address in order to use security groups.")
		}
		if !hasSGs && len(p.securityGroups) > 0 {
			return nil, neutronError(http.StatusConflict, "PortSecurityPortHasSecurityGroup",
				"Port has security group associated. Cannot disable port security or IP address until security group is removed.")
		}
	}
	if hasSGs && !slices.Equal(ntSorted(sgs), ntSorted(p.securityGroups)) {
		if trustedOwner(next.deviceOwner) {
			sgs = []string{}
		} else if err := e.portSecurityGroups(c, sgs); err != nil {
			return nil, err
		}
		next.securityGroups = sgs
	}
	if portChanged(p, &next) {
		next.std.bump(e.now())
		*p = next
	}
	return neutronOK(map[string]any{"port": e.portView(p)}), nil
}

// sameFixedIPs reports whether fixed_ips in a request names each of the
// port's fixed IPs once, and nothing else.
func sameFixedIPs(l []any, p *port) bool {
	have := p.allocations()
	if len(l) != len(have) {
		return false
	}
	matched := make([]bool, len(have))
	for _, v := range l {
		d, ok := v.(map[string]any)
		if !ok {
			return false
		}
		ip, hasIP := d["ip_address"]
		sid, hasSID := d["subnet_id"]
		i := slices.IndexFunc(have, func(a ipAlloc) bool {
			return (!hasIP || ip == a.ip.String()) && (!hasSID || sid == a.subnetID) && (hasIP || hasSID)
		})
		if i < 0 || matched[i] {
			return false
		}
		matched[i] = true
	}
	return true
}

func ntSorted(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// portChanged reports whether an update changes anything, which is when
// Neutron's revision goes up.
func portChanged(a, b *port) bool {
	return a.name != b.name || a.deviceID != b.deviceID || a.deviceOwner != b.deviceOwner ||
		a.adminStateUp != b.adminStateUp || a.portSecurity != b.portSecurity ||
		!slices.Equal(a.securityGroups, b.securityGroups) || !slices.Equal(a.addressPairs, b.addressPairs) ||
		a.std.description != b.std.description
}

func (e *Emulator) deletePortAPI(c *neutronCall) (*neutronResponse, *apiError) {
	p, err := e.visiblePort(c, c.id)
	if err != nil {
		return nil, err
	}
	if err := c.checkRevision(&p.std); err != nil {
		return nil, err
	}
	// prevent_l3_port_deletion: ports of live routers go with the router.
	if (p.deviceOwner == ownerRouterInterface || p.deviceOwner == ownerRouterGateway) && e.neutron.routers.Has(p.deviceID) {
		return nil, neutronConflict("ServicePortInUse",
			"Port "+p.id+" cannot be deleted directly via the port API: has device owner "+p.deviceOwner+".")
	}
	e.deletePort(p.id)
	return &neutronResponse{status: http.StatusNoContent}, nil
}
