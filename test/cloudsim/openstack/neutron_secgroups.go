package openstack

import (
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Neutron security groups (/v2.0/security-groups) and their rules
// (/v2.0/security-group-rules), as neutron.db.securitygroups_db answers
// them: the default group each project gets the first time it needs one,
// the default rules of new groups, rule validation and duplicate
// detection, groups in use by ports, and revision numbers that go up
// when a group's rules change.

type securityGroup struct {
	id, name, projectID string
	stateful            bool
	// isDefault marks the project's default group, which its project
	// may neither rename nor delete.
	isDefault bool
	rules     []string // rule IDs in creation order
	std       stdAttrs
}

type sgRule struct {
	id, sgID, projectID string
	direction           string // ingress, egress
	ethertype           string // IPv4, IPv6
	protocol            string // "" is null (any)
	portMin, portMax    *int
	remoteIPPrefix      string // "" is null
	remoteGroupID       string // "" is null
	std                 stdAttrs
}

// summary names a rule in Resources: "ingress IPv4 tcp 80-80 0.0.0.0/0".
func (r *sgRule) summary() string {
	parts := []string{r.direction, r.ethertype}
	if r.protocol != "" {
		parts = append(parts, r.protocol)
	}
	if r.portMin != nil || r.portMax != nil {
		parts = append(parts, ntOptInt(r.portMin)+"-"+ntOptInt(r.portMax))
	}
	switch {
	case r.remoteIPPrefix != "":
		parts = append(parts, r.remoteIPPrefix)
	case r.remoteGroupID != "":
		parts = append(parts, "group:"+r.remoteGroupID)
	}
	return strings.Join(parts, " ")
}

func ntOptInt(p *int) string {
	if p == nil {
		return "*"
	}
	return strconv.Itoa(*p)
}

func securityGroupNotFound(id string) *apiError {
	return neutronNotFound("SecurityGroupNotFound", "Security group "+id+" does not exist")
}

func securityGroupRuleNotFound(id string) *apiError {
	return neutronNotFound("SecurityGroupRuleNotFound", "Security group rule "+id+" does not exist")
}

func ntOverQuota(resource string) *apiError {
	return neutronConflict("OverQuota", "Quota exceeded for resources: ['"+resource+"'].")
}

// Neutron's default security group rule templates (the
// securitygroupdefaultrules table as its migration fills it): both kinds
// of group may send anywhere; the default group also admits its members.
const defaultSGDescription = "Default security group"

// ensureDefaultSecurityGroup returns the project's default security
// group, making it (with its four rules) the first time, as
// _ensure_default_security_group does whenever a project lists groups
// or rules, creates a network, port or group. Nil without the
// security-group extension or a project. Callers hold e.mu.
func (e *Emulator) ensureDefaultSecurityGroup(projectID string) *securityGroup {
	if projectID == "" || !e.hasExt(extSecurityGroup) {
		return nil
	}
	if id, ok := e.neutron.defaultSG[projectID]; ok {
		if g, ok := e.neutron.secGroups.Get(id); ok {
			return g
		}
	}
	g := e.newSecurityGroup(projectID, "default", defaultSGDescription, true, true)
	e.neutron.defaultSG[projectID] = g.id
	return g
}

// newSecurityGroup makes a group with the rules every group (or the
// default group) starts with.
func (e *Emulator) newSecurityGroup(projectID, name, description string, stateful, isDefault bool) *securityGroup {
	g := &securityGroup{id: e.ids.uuid(), name: name, projectID: projectID, stateful: stateful, isDefault: isDefault, std: newStdAttrs(e.now())}
	g.std.description = description
	e.neutron.secGroups.Put(g)
	for _, et := range []string{"IPv4", "IPv6"} {
		e.addRule(g, &sgRule{direction: "egress", ethertype: et})
	}
	if isDefault {
		for _, et := range []string{"IPv4", "IPv6"} {
			e.addRule(g, &sgRule{direction: "ingress", ethertype: et, remoteGroupID: g.id})
		}
	}
	// Rules made with the group are part of its creation.
	g.std.revision, g.std.updated = 1, g.std.created
	return g
}

// addRule stores r in g; the group's revision goes up.
func (e *Emulator) addRule(g *securityGroup, r *sgRule) {
	desc := r.std.description
	r.id, r.sgID, r.projectID, r.std = e.ids.uuid(), g.id, g.projectID, newStdAttrs(e.now())
	r.std.description = desc
	e.neutron.sgRules.Put(r)
	g.rules = append(g.rules, r.id)
	g.std.bump(e.now())
}

// removeRule deletes a rule; its group's revision goes up.
func (e *Emulator) removeRule(r *sgRule) {
	e.neutron.sgRules.Delete(r.id)
	if g, ok := e.neutron.secGroups.Get(r.sgID); ok {
		g.rules = slices.DeleteFunc(g.rules, func(id string) bool { return id == r.id })
		g.std.bump(e.now())
	}
}

func (e *Emulator) visibleSecurityGroup(c *neutronCall, id string) (*securityGroup, *apiError) {
	g, ok := e.neutron.secGroups.Get(id)
	if !ok || g.projectID != c.project {
		return nil, securityGroupNotFound(id)
	}
	return g, nil
}

func (e *Emulator) ruleView(r *sgRule) ntView {
	v := ntView{
		"id": r.id, "security_group_id": r.sgID, "direction": r.direction, "ethertype": r.ethertype,
		"protocol": nil, "port_range_min": nil, "port_range_max": nil,
		"remote_ip_prefix": nil, "normalized_cidr": nil, "remote_group_id": nil, "remote_address_group_id": nil,
		"belongs_to_default_sg": e.neutron.defaultSG[r.projectID] == r.sgID,
	}
	if r.protocol != "" {
		v["protocol"] = r.protocol
	}
	if r.portMin != nil {
		v["port_range_min"] = *r.portMin
	}
	if r.portMax != nil {
		v["port_range_max"] = *r.portMax
	}
	if r.remoteIPPrefix != "" {
		v["remote_ip_prefix"] = r.remoteIPPrefix
		if p, err := netip.ParsePrefix(r.remoteIPPrefix); err == nil {
			v["normalized_cidr"] = p.Masked().String()
		}
	}
	if r.remoteGroupID != "" {
		v["remote_group_id"] = r.remoteGroupID
	}
	v = e.stdView(v, &r.std, r.projectID)
	delete(v, "tags") // rules are not ntTaggable
	return v
}

func (e *Emulator) securityGroupView(g *securityGroup) ntView {
	rules := []any{}
	for _, id := range g.rules {
		if r, ok := e.neutron.sgRules.Get(id); ok {
			rules = append(rules, e.ruleView(r))
		}
	}
	v := ntView{"id": g.id, "name": g.name, "security_group_rules": rules, "shared": false}
	if e.hasExt(extStatefulSecurityGroup) {
		v["stateful"] = g.stateful
	}
	return e.stdView(v, &g.std, g.projectID)
}

func (e *Emulator) securityGroupListSpec() ntListSpec {
	own := map[string]ntFilter{"name": ntEqual}
	if e.hasExt(extStatefulSecurityGroup) {
		own["stateful"] = ntBoolFilter
	}
	return ntListSpec{
		collection: "security_groups", filters: e.withStdFilters(own),
		sortKeys: []string{"id", "name", "project_id", "tenant_id"},
	}
}

func (e *Emulator) listSecurityGroups(c *neutronCall) (*neutronResponse, *apiError) {
	e.ensureDefaultSecurityGroup(c.project)
	return ntList(e, c, e.securityGroupListSpec(), e.neutron.secGroups.All(), func(g *securityGroup) bool { return g.projectID == c.project }, e.securityGroupView, e.visibleSecurityGroup)
}

func (e *Emulator) getSecurityGroup(c *neutronCall) (*neutronResponse, *apiError) {
	return ntShow(c, "security_group", e.visibleSecurityGroup, e.securityGroupView)
}

func (e *Emulator) securityGroupAttrs() map[string]ntAttr {
	a := map[string]ntAttr{"name": {post: true, put: true}, "security_group_rules": {}, "shared": {}}
	if e.hasExt(extStatefulSecurityGroup) {
		a["stateful"] = ntAttr{post: true, put: true}
	}
	return e.stdAttrSpecs(a, false)
}

// securityGroupName reads name, which may not be "default" in any case
// (the name_not_default validator).
func securityGroupName(m map[string]any) (string, bool, *apiError) {
	name, ok, err := ntAttrString(m, "name", nameFieldSize)
	if err == nil && ok && strings.EqualFold(name, "default") {
		err = neutronConflict("SecurityGroupDefaultAlreadyExists", "Default security group already exists.")
	}
	return name, ok, err
}

func (e *Emulator) createSecurityGroup(c *neutronCall) (*neutronResponse, *apiError) {
	items, err := c.parseBody("security_group", e.securityGroupAttrs(), true, false)
	if err != nil {
		return nil, err
	}
	m := items[0]
	name, _, err := securityGroupName(m)
	if err != nil {
		return nil, err
	}
	stateful, hasStateful, err := ntAttrBool(m, "stateful")
	if err != nil {
		return nil, err
	}
	if !hasStateful {
		stateful = true
	}
	var std stdAttrs
	if err := e.applyStd(m, &std); err != nil {
		return nil, err
	}
	e.ensureDefaultSecurityGroup(c.project)
	if q := e.cfg.Neutron.SecurityGroupQuota; q > 0 && e.countSecurityGroups(c.project) >= q {
		return nil, ntOverQuota("security_group")
	}
	if q := e.cfg.Neutron.SecurityGroupRuleQuota; q > 0 && e.countRules(c.project)+2 > q {
		return nil, ntOverQuota("security_group_rule")
	}
	g := e.newSecurityGroup(c.project, name, std.description, stateful, false)
	return &neutronResponse{status: http.StatusCreated, body: map[string]any{"security_group": e.securityGroupView(g)}}, nil
}

func (e *Emulator) countSecurityGroups(project string) int {
	n := 0
	for _, g := range e.neutron.secGroups.All() {
		if g.projectID == project {
			n++
		}
	}
	return n
}

func (e *Emulator) countRules(project string) int {
	n := 0
	for _, r := range e.neutron.sgRules.All() {
		if r.projectID == project {
			n++
		}
	}
	return n
}

// portsUsing lists the ports bound to a security group.
func (e *Emulator) portsUsing(sgID string) []*port {
	var out []*port
	for _, p := range e.ports.All() {
		if slices.Contains(p.securityGroups, sgID) {
			out = append(out, p)
		}
	}
	return out
}

func securityGroupInUse(id string) *apiError {
	return neutronConflict("SecurityGroupInUse", "Security Group "+id+" in use.")
}

func (e *Emulator) updateSecurityGroup(c *neutronCall) (*neutronResponse, *apiError) {
	items, err := c.parseBody("security_group", e.securityGroupAttrs(), false, false)
	if err != nil {
		return nil, err
	}
	m := items[0]
	name, hasName, err := securityGroupName(m)
	if err != nil {
		return nil, err
	}
	stateful, hasStateful, err := ntAttrBool(m, "stateful")
	if err != nil {
		return nil, err
	}
	desc, hasDesc, err := ntAttrString(m, "description", descriptionFieldSize)
	if err != nil {
		return nil, err
	}
	g, err := e.visibleSecurityGroup(c, c.id)
	if err != nil {
		return nil, err
	}
	if hasStateful && stateful != g.stateful && len(e.portsUsing(g.id)) > 0 {
		return nil, securityGroupInUse(g.id)
	}
	if err := c.checkRevision(&g.std); err != nil {
		return nil, err
	}
	if g.isDefault && hasName {
		return nil, neutronConflict("SecurityGroupCannotUpdateDefault", "Updating default security group not allowed.")
	}
	changed := false
	if hasName && name != g.name {
		g.name, changed = name, true
	}
	if hasStateful && stateful != g.stateful {
		g.stateful, changed = stateful, true
	}
	if hasDesc && desc != g.std.description {
		g.std.description, changed = desc, true
	}
	if changed {
		g.std.bump(e.now())
	}
	return neutronOK(map[string]any{"security_group": e.securityGroupView(g)}), nil
}

func (e *Emulator) deleteSecurityGroup(c *neutronCall) (*neutronResponse, *apiError) {
	if len(e.portsUsing(c.id)) > 0 {
		return nil, securityGroupInUse(c.id)
	}
	g, err := e.visibleSecurityGroup(c, c.id)
	if err != nil {
		return nil, err
	}
	if g.isDefault {
		return nil, neutronConflict("SecurityGroupCannotRemoveDefault", "Insufficient rights for removing default security group.")
	}
	if err := c.checkRevision(&g.std); err != nil {
		return nil, err
	}
	e.removeSecurityGroup(g)
	return &neutronResponse{status: http.StatusNoContent}, nil
}

// removeSecurityGroup deletes a group, its rules, and (the foreign key
// cascades) other groups' rules that name it as their remote group.
func (e *Emulator) removeSecurityGroup(g *securityGroup) {
	for _, r := range e.neutron.sgRules.All() {
		if r.sgID == g.id {
			e.neutron.sgRules.Delete(r.id)
		} else if r.remoteGroupID == g.id {
			e.removeRule(r)
		}
	}
	e.neutron.secGroups.Delete(g.id)
	if e.neutron.defaultSG[g.projectID] == g.id {
		delete(e.neutron.defaultSG, g.projectID)
	}
}

// --- rules ---

func (e *Emulator) visibleRule(c *neutronCall, id string) (*sgRule, *apiError) {
	r, ok := e.neutron.sgRules.Get(id)
	if !ok || r.projectID != c.project {
		return nil, securityGroupRuleNotFound(id)
	}
	return r, nil
}

// ruleFilter converts filter values as the attribute's convert_to does
// before comparing them.
func ruleFilter(conv func(any) (any, *apiError)) ntFilter {
	return func(key string, vals []string) (func(ntView) bool, *apiError) {
		var want []any
		for _, s := range vals {
			v, err := conv(s)
			if err != nil {
				return nil, err
			}
			want = append(want, v)
		}
		return func(v ntView) bool { return slices.Contains(want, v[key]) }, nil
	}
}

func (e *Emulator) ruleListSpec() ntListSpec {
	own := map[string]ntFilter{
		"security_group_id": ntEqual, "remote_group_id": ntEqual, "remote_address_group_id": ntEqual,
		"direction": ntEqual,
		"protocol": ruleFilter(func(v any) (any, *apiError) {
			p, err := convertProtocol(v)
			if p == "" {
				return nil, err
			}
			return p, err
		}),
		"port_range_min": ruleFilter(func(v any) (any, *apiError) { p, err := convertPort(v); return ntDeref(p), err }),
		"port_range_max": ruleFilter(func(v any) (any, *apiError) { p, err := convertPort(v); return ntDeref(p), err }),
		"ethertype":      ruleFilter(func(v any) (any, *apiError) { et, err := convertEthertype(v); return et, err }),
		"remote_ip_prefix": ruleFilter(func(v any) (any, *apiError) {
			p, err := convertIPPrefix(v)
			if p == "" {
				return nil, err
			}
			return p, err
		}),
	}
	keys := []string{"id", "security_group_id", "remote_group_id", "direction", "protocol", "port_range_min",
		"port_range_max", "ethertype", "remote_ip_prefix", "project_id", "tenant_id"}
	f := e.withStdFilters(own)
	for _, k := range []string{"tags", "tags-any", "not-tags", "not-tags-any"} {
		delete(f, k)
	}
	return ntListSpec{collection: "security_group_rules", filters: f, sortKeys: keys}
}

func ntDeref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

func (e *Emulator) listSecurityGroupRules(c *neutronCall) (*neutronResponse, *apiError) {
	e.ensureDefaultSecurityGroup(c.project)
	return ntList(e, c, e.ruleListSpec(), e.neutron.sgRules.All(), func(r *sgRule) bool { return r.projectID == c.project }, e.ruleView, e.visibleRule)
}

func (e *Emulator) getSecurityGroupRule(c *neutronCall) (*neutronResponse, *apiError) {
	return ntShow(c, "security_group_rule", e.visibleRule, e.ruleView)
}

func (e *Emulator) ruleAttrs() map[string]ntAttr {
	a := map[string]ntAttr{
		"security_group_id": {post: true, required: true}, "remote_group_id": {post: true},
		"direction": {post: true, required: true}, "protocol": {post: true},
		"port_range_min": {post: true}, "port_range_max": {post: true}, "ethertype": {post: true},
		"remote_ip_prefix": {post: true}, "remote_address_group_id": {post: true},
		"normalized_cidr": {}, "belongs_to_default_sg": {},
	}
	a = e.stdAttrSpecs(a, false)
	delete(a, "tags")
	return a
}

// IP protocols by name (neutron_lib.constants.IP_PROTOCOL_MAP, with the
// legacy "icmpv6"), in the order Neutron lists them.
var ipProtocolNames = []string{
	"ah", "dccp", "egp", "esp", "gre", "hopopt", "icmp", "igmp", "ip", "ipip", "ipv6-encap", "ipv6-frag",
	"ipv6-icmp", "icmpv6", "ipv6-nonxt", "ipv6-opts", "ipv6-route", "ospf", "pgm", "rsvp", "sctp", "tcp", "udp",
	"udplite", "vrrp",
}

var ipProtocolNumbers = map[string]int{
	"ah": 51, "dccp": 33, "egp": 8, "esp": 50, "gre": 47, "hopopt": 0, "icmp": 1, "igmp": 2, "ip": 0, "ipip": 4,
	"ipv6-encap": 41, "ipv6-frag": 44, "ipv6-icmp": 58, "icmpv6": 58, "ipv6-nonxt": 59, "ipv6-opts": 60,
	"ipv6-route": 43, "ospf": 89, "pgm": 113, "rsvp": 46, "sctp": 132, "tcp": 6, "udp": 17, "udplite": 136,
	"vrrp": 112,
}

// ipv6OnlyProtocols may not have ethertype IPv4.
var ipv6OnlyProtocols = []string{
	"ipv6-encap", "ipv6-frag", "ipv6-icmp", "icmpv6", "ipv6-nonxt", "ipv6-opts", "ipv6-route",
	"41", "44", "58", "59", "60", "43",
}

// portProtocols are the protocol numbers rules may give ports for.
var portProtocols = []int{33, 132, 6, 17, 136}

// convertProtocol is securitygroup.convert_protocol: "" (null) for no
// protocol or "any", a name in lower case, or a number 0-255 as given.
func convertProtocol(v any) (string, *apiError) {
	if v == nil || v == "any" {
		return "", nil
	}
	invalid := func() *apiError {
		q := make([]string, len(ipProtocolNames))
		for i, n := range ipProtocolNames {
			q[i] = pyRepr(n)
		}
		return neutronBadRequest("SecurityGroupRuleInvalidProtocol", "Security group rule protocol "+pyStr(v)+
			" not supported. Only protocol values (None, 'any', "+strings.Join(q, ", ")+") and integer representations [0 to 255] are supported.")
	}
	switch x := v.(type) {
	case bool:
		if x {
			return "True", nil
		}
		return "False", nil
	case string, fmt.Stringer:
		s := pyStr(x)
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
			if n < 0 || n > 255 {
				return "", invalid()
			}
			return s, nil
		}
		if slices.Contains(ipProtocolNames, strings.ToLower(s)) {
			return strings.ToLower(s), nil
		}
	}
	return "", invalid()
}

// convertPort is convert_validate_port_value: null, or 0-65535.
func convertPort(v any) (*int, *apiError) {
	if v == nil {
		return nil, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(pyStr(v)))
	if _, isBool := v.(bool); isBool || err != nil || n < 0 || n > 65535 {
		return nil, neutronBadRequest("SecurityGroupInvalidPortValue", "Invalid value for port "+pyStr(v))
	}
	return &n, nil
}

// convertEthertype is convert_ethertype_to_case_insensitive.
func convertEthertype(v any) (string, *apiError) {
	if s, ok := v.(string); ok {
		for _, et := range []string{"IPv4", "IPv6"} {
			if strings.EqualFold(s, et) {
				return et, nil
			}
		}
	}
	return "", neutronBadRequest("SecurityGroupRuleInvalidEtherType",
		"Security group rule for ethertype '"+pyStr(v)+"' not supported. Allowed values are ['IPv4', 'IPv6'].")
}

// convertIPPrefix is convert_ip_prefix_to_cidr: an address becomes a
// host prefix; host bits of a prefix stay as given.
func convertIPPrefix(v any) (string, *apiError) {
	if v == nil || v == "" {
		return "", nil
	}
	s, _ := v.(string)
	if strings.Contains(s, "/") {
		if p, err := netip.ParsePrefix(s); err == nil {
			return p.String(), nil
		}
	} else if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a, a.BitLen()).String(), nil
	}
	return "", neutronBadRequest("InvalidCIDR", "Invalid CIDR "+pyStr(v)+" given as IP prefix.")
}

// parseRule converts and validates one rule of a create request, as
// prepare_request_body and _validate_security_group_rule do.
func (e *Emulator) parseRule(c *neutronCall, m map[string]any) (*sgRule, *apiError) {
	r := &sgRule{ethertype: "IPv4"}
	var err *apiError
	sgID, _, err := ntAttrString(m, "security_group_id", 36)
	if err != nil {
		return nil, err
	}
	if v, ok := m["remote_group_id"]; ok && v != nil {
		s, isStr := v.(string)
		if !isStr {
			return nil, ntHTTPBadRequest("Invalid input for remote_group_id. Reason: '" + pyStr(v) + "' is not a valid string.")
		}
		r.remoteGroupID = s
	}
	dir, _ := m["direction"].(string)
	if dir != "ingress" && dir != "egress" {
		return nil, ntHTTPBadRequest("Invalid input for direction. Reason: " + pyStr(m["direction"]) + " is not in ['ingress', 'egress'].")
	}
	r.direction = dir
	if r.protocol, err = convertProtocol(m["protocol"]); err != nil {
		return nil, err
	}
	if r.portMin, err = convertPort(m["port_range_min"]); err != nil {
		return nil, err
	}
	if r.portMax, err = convertPort(m["port_range_max"]); err != nil {
		return nil, err
	}
	if v, ok := m["ethertype"]; ok {
		if r.ethertype, err = convertEthertype(v); err != nil {
			return nil, err
		}
	}
	if r.remoteIPPrefix, err = convertIPPrefix(m["remote_ip_prefix"]); err != nil {
		return nil, err
	}
	if v, ok := m["remote_address_group_id"]; ok && v != nil {
		return nil, ntHTTPBadRequest("cloudsim: address groups are not emulated")
	}
	if err := e.applyStd(m, &r.std); err != nil {
		return nil, err
	}

	// _make_canonical_ipv6_icmp_protocol
	if r.ethertype == "IPv6" {
		switch r.protocol {
		case "icmp", "icmpv6":
			r.protocol = "ipv6-icmp"
		case "1":
			r.protocol = "58"
		}
	}
	// _make_canonical_port_range
	if r.portMin != nil && r.portMax != nil && *r.portMin == 1 && *r.portMax == 65535 {
		r.portMin, r.portMax = nil, nil
	}
	if err := validatePortRange(r); err != nil {
		return nil, err
	}
	if r.remoteIPPrefix != "" {
		p := netip.MustParsePrefix(r.remoteIPPrefix)
		if (p.Addr().Is4() && r.ethertype != "IPv4") || (!p.Addr().Is4() && r.ethertype != "IPv6") {
			return nil, neutronBadRequest("SecurityGroupRuleParameterConflict",
				"Conflicting value ethertype "+r.ethertype+" for CIDR "+r.remoteIPPrefix)
		}
	}
	if r.ethertype == "IPv4" && slices.Contains(ipv6OnlyProtocols, r.protocol) {
		return nil, neutronBadRequest("SecurityGroupEthertypeConflictWithProtocol",
			"Invalid ethertype IPv4 for protocol "+r.protocol+".")
	}
	if r.remoteIPPrefix != "" && r.remoteGroupID != "" {
		return nil, neutronBadRequest("SecurityGroupMultipleRemoteEntites",
			"Only one of remote_ip_prefix or remote_group_id or remote_address_group_id may be provided.")
	}
	if r.remoteGroupID != "" {
		if _, err := e.visibleSecurityGroup(c, r.remoteGroupID); err != nil {
			return nil, err
		}
	}
	if _, err := e.visibleSecurityGroup(c, sgID); err != nil {
		return nil, err
	}
	r.sgID = sgID
	return r, nil
}

// validatePortRange is _validate_port_range.
func validatePortRange(r *sgRule) *apiError {
	if r.portMin == nil && r.portMax == nil {
		return nil
	}
	if r.protocol == "" {
		return neutronBadRequest("SecurityGroupProtocolRequiredWithPorts", "Must also specify protocol if port range is given.")
	}
	proto, ok := ipProtocolNumbers[r.protocol]
	if !ok {
		proto, _ = strconv.Atoi(r.protocol)
	}
	switch {
	case slices.Contains(portProtocols, proto):
		if (r.portMin != nil && *r.portMin == 0) || (r.portMax != nil && *r.portMax == 0) {
			return neutronBadRequest("SecurityGroupInvalidPortValue", "Invalid value for port 0")
		}
		if r.portMin == nil || r.portMax == nil || *r.portMin > *r.portMax {
			return neutronBadRequest("SecurityGroupInvalidPortRange", "For TCP/UDP protocols, port_range_min must be <= port_range_max")
		}
	case proto == 1 || proto == 58:
		for _, f := range []struct {
			v           *int
			field, attr string
		}{{r.portMin, "type", "port_range_min"}, {r.portMax, "code", "port_range_max"}} {
			if f.v != nil && (*f.v < 0 || *f.v > 255) {
				return neutronBadRequest("SecurityGroupInvalidIcmpValue", fmt.Sprintf(
					"Invalid value for ICMP %s (%s) %d. It must be 0 to 255.", f.field, f.attr, *f.v))
			}
		}
		if r.portMin == nil && r.portMax != nil {
			return neutronBadRequest("SecurityGroupMissingIcmpType", fmt.Sprintf(
				"ICMP code (port-range-max) %d is provided but ICMP type (port-range-min) is missing.", *r.portMax))
		}
	default:
		return neutronBadRequest("SecurityGroupInvalidProtocolForPort", fmt.Sprintf(
			"Ports cannot be specified for protocol %d. Ports are only supported for DCCP, SCTP, TCP, UDP, UDPLITE.", proto))
	}
	return nil
}

// ruleKey is _rule_to_key: what makes two rules the same rule.
func ruleKey(r *sgRule) string {
	none := func(s string) string {
		if s == "" {
			return "+"
		}
		return s
	}
	prefix := r.remoteIPPrefix
	if prefix == "0.0.0.0/0" || prefix == "::/0" {
		prefix = ""
	}
	return strings.Join([]string{
		r.direction, r.ethertype, none(ntOptIntKey(r.portMax)), none(ntOptIntKey(r.portMin)),
		none(protocolKey(r.protocol, r.ethertype)), none(r.remoteGroupID), "+", none(prefix), r.sgID,
	}, "_")
}

func ntOptIntKey(p *int) string {
	if p == nil {
		return ""
	}
	return strconv.Itoa(*p)
}

// protocolKey is _get_ip_proto_name_and_num: a protocol by name and
// number, so "tcp" and "6" are the same.
func protocolKey(p, ethertype string) string {
	if p == "" {
		return ""
	}
	if ethertype == "IPv6" {
		switch p {
		case "icmp", "icmpv6":
			p = "ipv6-icmp"
		case "1":
			p = "58"
		}
	}
	if n, ok := ipProtocolNumbers[p]; ok {
		return p + "/" + strconv.Itoa(n)
	}
	for _, name := range ipProtocolNames {
		if name != "icmpv6" && strconv.Itoa(ipProtocolNumbers[name]) == p {
			return name + "/" + p
		}
	}
	return p + "/" + p
}

// createSecurityGroupRules is POST /v2.0/security-group-rules, one rule
// or (bulk) several, all or none: every rule must be of the same group,
// none a duplicate of another or of one the group has.
func (e *Emulator) createSecurityGroupRules(c *neutronCall) (*neutronResponse, *apiError) {
	items, err := c.parseBody("security_group_rule", e.ruleAttrs(), true, true)
	if err != nil {
		return nil, err
	}
	bulk := ntBodyTopKey(c.body) == "security_group_rules"
	e.ensureDefaultSecurityGroup(c.project)
	if bulk {
		// _validate_single_project_and_group
		first, _ := items[0]["security_group_id"].(string)
		for _, m := range items[1:] {
			if id, _ := m["security_group_id"].(string); id != first {
				return nil, neutronBadRequest("SecurityGroupNotSingleGroupRules", "Only allowed to update rules for one security profile at a time")
			}
		}
	}
	var rules []*sgRule
	for _, m := range items {
		r, err := e.parseRule(c, m)
		if err != nil {
			return nil, err
		}
		rules = append(rules, r)
	}
	seen := map[string]bool{}
	for _, r := range rules {
		k := ruleKey(r)
		if seen[k] {
			return nil, neutronConflict("DuplicateSecurityGroupRuleInPost", "Duplicate Security Group Rule in POST.")
		}
		seen[k] = true
	}
	g, _ := e.neutron.secGroups.Get(rules[0].sgID)
	for _, id := range g.rules {
		if old, ok := e.neutron.sgRules.Get(id); ok && seen[ruleKey(old)] {
			return nil, neutronConflict("SecurityGroupRuleExists", "Security group rule already exists. Rule id is "+old.id+".")
		}
	}
	if q := e.cfg.Neutron.SecurityGroupRuleQuota; q > 0 && e.countRules(c.project)+len(rules) > q {
		return nil, ntOverQuota("security_group_rule")
	}
	var out []any
	for _, r := range rules {
		e.addRule(g, r)
		out = append(out, e.ruleView(r))
	}
	if bulk {
		return &neutronResponse{status: http.StatusCreated, body: map[string]any{"security_group_rules": out}}, nil
	}
	return &neutronResponse{status: http.StatusCreated, body: map[string]any{"security_group_rule": out[0]}}, nil
}

func (e *Emulator) deleteSecurityGroupRule(c *neutronCall) (*neutronResponse, *apiError) {
	r, err := e.visibleRule(c, c.id)
	if err != nil {
		return nil, err
	}
	if err := c.checkRevision(&r.std); err != nil {
		return nil, err
	}
	e.removeRule(r)
	return &neutronResponse{status: http.StatusNoContent}, nil
}
