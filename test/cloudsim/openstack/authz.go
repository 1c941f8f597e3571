package openstack

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// Authorization as the OpenStack services do it. OpenStack has no
// identity policy: each service checks every call against its own
// oslo.policy rules, which the roles of the token's user on the project
// satisfy or not. The emulator names, for every operation it serves, the
// rules the service checks (Permissions), in the order it checks them,
// and answers a call whose rule the policy lacks as that service does
// (WriteDenied). The rule names and the places they are checked are the
// services' own, cited per service below (openstack/nova, neutron,
// neutron-lib and octavia at their 2026 master branches):
//
//   - Nova: nova/policies/servers.py; checked by context.can in
//     nova/api/openstack/compute/servers.py (index :130, detail :160,
//     the all_tenants rules :307-309, show :507, delete :944) and the
//     os-start/os-stop actions. Reading flavors checks no rule
//     (flavors.py checks the extra-specs rules with fatal=False: they only
//     hide extra_specs), nor do the version documents.
//   - Neutron: neutron/conf/policies/*.py (get_port, create_floatingip,
//     add_extraroutes, ...), and for attributes marked enforce_policy in
//     neutron-lib's API definitions (port mac_address, fixed_ips,
//     device_owner, port_security_enabled, allowed_address_pairs;
//     floatingip floating_ip_address; router external_gateway_info) the
//     "<action>:<attribute>" rule and, for the entries of a list or dict
//     attribute, "<action>:<attribute>:<key>" (neutron/policy.py
//     _build_match_rule, _build_subattr_match_rule,
//     _build_list_of_subattrs_rule). Tags: "<verb>_<resource>:tags"
//     (neutron/extensions/tagging.py _get_policy_action). Extensions are
//     listed without a policy check (pecan_wsgi/hooks/policy_enforcement.py
//     after: "extension listing isn't controlled by policy").
//   - Octavia: os_load-balancer_api:<object>:<get_all|get_one|post|put|
//     delete|get_stats|get_status|put_failover> (octavia/common/constants.py
//     RBAC_*; octavia/api/v2/controllers/*.py _auth_validate_action), plus
//     loadbalancer:post:vip_sg_ids and put:vip_sg_ids when vip_sg_ids is
//     given (load_balancer.py post, put), and the batch member update's
//     member:post and member:put, and member:delete unless additive_only
//     (member.py MembersController.put: "Check POST+PUT+DELETE since this
//     operation is all of 'CUD'"). A listing's get_all-global check is
//     done with do_raise=False (base.py _auth_get_all): a project's user
//     needs only get_all.
//   - Keystone: identity:validate_token, identity:check_token and
//     identity:revoke_token for GET, HEAD and DELETE /v3/auth/tokens
//     (keystone/common/policies/token.py); issuing a token checks none.
//
// Attribute rules Neutron would check for attributes the emulator does
// not accept are left out; so is port device_id, marked enforce_policy
// but with no registered rule (oslo.policy then applies the "default"
// rule, which no policy names).

var _ cloudsim.Authorizer = (*Emulator)(nil)

// Principal implements cloudsim.Authorizer: the Keystone user ID of the
// request's X-Auth-Token, as every service learns it from
// keystonemiddleware. A call without a valid token is nobody's: the
// service answers 401 before any policy check.
func (e *Emulator) Principal(r *http.Request) string {
	tok := r.Header.Get("X-Auth-Token")
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.validToken(tok)
	if !ok {
		return ""
	}
	return t.userID
}

// Permissions implements cloudsim.Authorizer: the policy rules the call
// is checked against, in the order the service checks them.
func (e *Emulator) Permissions(r *http.Request, op string) []string {
	return e.policyCheck(r, op).rules()
}

// WriteDenied implements cloudsim.Authorizer with each service's answer
// to a caller whose roles do not satisfy a rule:
//
//   - Nova: 403 {"forbidden": {"code": 403, "message": "Policy doesn't
//     allow <rule> to be performed."}} (nova.exception.PolicyNotAuthorized).
//   - Neutron, as its pecan policy hook does (policy_enforcement.py): a
//     listing hides what the caller may not see, so it answers 200 with
//     an empty collection; a GET of one resource answers 404 with the
//     body {"type": "HTTPNotFound", "message": "The resource could not
//     be found.", "detail": ""} (the after hook sets it unwrapped); a
//     create, an update, a delete, a member action (add_extraroutes) or a
//     tag call answers 403 {"NeutronError": {"type":
//     "PolicyNotAuthorized", "message": "<rule> is disallowed by policy",
//     "detail": ""}}, the rule being the one oslo.policy checked: the
//     action's, joined with its attribute rules as "(rule:a and rule:b)"
//     (oslo.policy's PolicyNotAuthorized and AndCheck). An update or
//     delete is a 404 instead when the caller may not even see the
//     resource; the emulator, which does not know the policy here,
//     assumes it may (a policy granting update_port without get_port is
//     not one the manager declares).
//   - Octavia: 403 {"faultcode": "Client", "faultstring": "Policy does
//     not allow this request to be performed.", "debuginfo": null}
//     (octavia.common.exceptions.PolicyForbidden, through WSME).
//   - Keystone: 403 {"error": {"code": 403, "message": "You are not
//     authorized to perform the requested action: <rule>.", "title":
//     "Forbidden"}} (keystone.exception.ForbiddenAction).
func (e *Emulator) WriteDenied(w http.ResponseWriter, r *http.Request, op, missing string) {
	setRequestIDs(w, op)
	pc := e.policyCheck(r, op)
	switch {
	case strings.HasPrefix(op, novaOp):
		novaService{e}.writeFault(w, r, route{op: op}, novaFault(http.StatusForbidden, "Policy doesn't allow "+missing+" to be performed."))
	case strings.HasPrefix(op, neutronOp):
		switch {
		case pc.collection != "":
			writeJSON(w, http.StatusOK, map[string]any{pc.collection: []any{}})
		case pc.show:
			writeJSON(w, http.StatusNotFound, map[string]string{"type": "HTTPNotFound", "message": "The resource could not be found.", "detail": ""})
		default:
			writeError(w, neutronError(http.StatusForbidden, "PolicyNotAuthorized", pc.match()+" is disallowed by policy"))
		}
	case strings.HasPrefix(op, octaviaOp):
		writeError(w, errOctaviaPolicy())
	default:
		writeKeystoneError(w, r, keystoneError(http.StatusForbidden, "You are not authorized to perform the requested action: "+missing+"."))
	}
}

// policyCheck is what a service checks for one call: the action's rule
// and, for Neutron, the attribute rules it joins to it.
type policyCheck struct {
	action string
	// attrs are Neutron's attribute rules, each with its sub-attribute
	// rules.
	attrs []attrRule
	// extra are further rules checked one after another (Nova's
	// all_tenants rule, Octavia's vip_sg_ids and member rules).
	extra []string
	// collection is the key of a Neutron listing ("ports"), which
	// answers a denial with an empty one; show marks a Neutron GET of
	// one resource.
	collection string
	show       bool
}

type attrRule struct {
	rule string
	subs []string
}

// rules are the rule names in the order they are checked, once each.
func (p policyCheck) rules() []string {
	if p.action == "" {
		return nil
	}
	out := []string{p.action}
	for _, a := range p.attrs {
		out = append(out, a.rule)
		out = append(out, a.subs...)
	}
	out = append(out, p.extra...)
	var uniq []string
	for _, r := range out {
		if !slices.Contains(uniq, r) {
			uniq = append(uniq, r)
		}
	}
	return uniq
}

// match is the rule oslo.policy reports for a Neutron denial: the
// action's RuleCheck, and-ed with each attribute's
// (neutron/policy.py _build_match_rule; AndCheck prints "(a and b)").
func (p policyCheck) match() string {
	m := "rule:" + p.action
	for _, a := range p.attrs {
		attr := "rule:" + a.rule
		if len(a.subs) > 0 {
			subs := make([]string, len(a.subs))
			for i, s := range a.subs {
				subs[i] = "rule:" + s
			}
			attr = "(" + attr + " and (" + strings.Join(subs, " and ") + "))"
		}
		m = "(" + m + " and " + attr + ")"
	}
	return m
}

func (e *Emulator) policyCheck(r *http.Request, op string) policyCheck {
	switch {
	case strings.HasPrefix(op, novaOp):
		return novaPolicy(r, op)
	case strings.HasPrefix(op, neutronOp):
		return neutronPolicy(r, op)
	case strings.HasPrefix(op, octaviaOp):
		return octaviaPolicy(r, op)
	}
	return keystonePolicy(op)
}

// --- Nova ---

const novaServers = "os_compute_api:servers:"

func novaPolicy(r *http.Request, op string) policyCheck {
	var p policyCheck
	switch op {
	case opListServers, opListServersDetail:
		which := "index"
		if op == opListServersDetail {
			which = "detail"
		}
		p.action = novaServers + which
		// servers.py _get_servers: all_tenants (any value but a false
		// one) asks for every project's servers.
		if v, ok := r.URL.Query()["all_tenants"]; ok {
			if all, err := pyBool(v[len(v)-1]); v[len(v)-1] == "" || (err == nil && all) {
				p.extra = []string{novaServers + which + ":get_all_tenants"}
			}
		}
	case opGetServer:
		p.action = novaServers + "show"
	case opDeleteServer:
		p.action = novaServers + "delete"
	case opStartServer:
		p.action = novaServers + "start"
	case opStopServer:
		p.action = novaServers + "stop"
	}
	return p
}

// --- Neutron ---

// neutronCollections are the listing ops' collection keys.
var neutronCollections = map[string]string{
	opListNetworks: "networks", opListSubnets: "subnets", opListPorts: "ports",
	opListFloatingIPs: "floatingips", opListSecurityGroups: "security_groups",
	opListSecurityGroupRules: "security_group_rules", opListRouters: "routers",
}

// neutronRules are the action rules of the other ops.
var neutronRules = map[string]string{
	opGetNetwork: "get_network", opGetSubnet: "get_subnet",
	opGetPort: "get_port", opCreatePort: "create_port", opUpdatePort: "update_port", opDeletePort: "delete_port",
	opGetFloatingIP: "get_floatingip", opCreateFloatingIP: "create_floatingip",
	opUpdateFloatingIP: "update_floatingip", opDeleteFloatingIP: "delete_floatingip",
	opGetSecurityGroup: "get_security_group", opCreateSecurityGroup: "create_security_group",
	opUpdateSecurityGroup: "update_security_group", opDeleteSecurityGroup: "delete_security_group",
	opGetSecurityGroupRule: "get_security_group_rule", opCreateSecurityGroupRule: "create_security_group_rule",
	opBulkCreateSecurityGroupRules: "create_security_group_rule", opDeleteSecurityGroupRule: "delete_security_group_rule",
	opGetRouter: "get_router", opUpdateRouter: "update_router",
	opAddExtraRoutes: "add_extraroutes", opRemoveExtraRoutes: "remove_extraroutes",
}

// neutronListRules are the rules a listing checks on each item.
var neutronListRules = map[string]string{
	opListNetworks: "get_network", opListSubnets: "get_subnet", opListPorts: "get_port",
	opListFloatingIPs: "get_floatingip", opListSecurityGroups: "get_security_group",
	opListSecurityGroupRules: "get_security_group_rule", opListRouters: "get_router",
}

// neutronTagVerbs are the tag ops' verbs (tagging.py: index and show
// "get", create "create", update and update_all "update", delete and
// delete_all "delete").
var neutronTagVerbs = map[string]string{
	opListTags: "get", opGetTag: "get", opAddTags: "create", opAddTag: "update",
	opReplaceTags: "update", opDeleteTag: "delete", opDeleteAllTags: "delete",
}

// neutronPolicyAttrs are the attributes with enforce_policy (neutron-lib
// api/definitions: port.py, port_security.py, allowedaddresspairs.py,
// l3.py) that the emulator accepts, in the order Neutron's attribute map
// lists them, by resource; and whether their value is a list of dicts or
// a dict whose keys have rules of their own.
var neutronPolicyAttrs = map[string][]string{
	"port":       {"mac_address", "fixed_ips", "device_owner", "port_security_enabled", "allowed_address_pairs"},
	"floatingip": {"floating_ip_address"},
	"router":     {"external_gateway_info"},
}

func neutronPolicy(r *http.Request, op string) policyCheck {
	var p policyCheck
	if rule, ok := neutronListRules[op]; ok {
		p.action, p.collection = rule, neutronCollections[op]
		return p
	}
	if verb, ok := neutronTagVerbs[op]; ok {
		// /network/v2.0/{collection}/{id}/tags[/{tag}]
		parts := strings.Split(strings.TrimPrefix(r.URL.Path, neutronPrefix+neutronV2+"/"), "/")
		p.action = verb + "_" + neutronSingular(parts[0]) + ":tags"
		return p
	}
	rule, ok := neutronRules[op]
	if !ok {
		return p
	}
	p.action = rule
	verb, resource, _ := strings.Cut(rule, "_")
	switch verb {
	case "get":
		p.show = true
	case "create", "update":
		p.attrs = neutronAttrRules(r, rule, resource, verb == "update")
	}
	return p
}

// neutronSingular is the resource of a collection path, as tagging.py's
// TAG_SUPPORTED_RESOURCES names it.
func neutronSingular(coll string) string {
	return strings.ReplaceAll(strings.TrimSuffix(coll, "s"), "-", "_")
}

// neutronAttrRules are the attribute rules of a create or update body
// ({"port": {...}} or, bulk, {"ports": [...]}): for an update every
// attribute the body names (ATTRIBUTES_TO_UPDATE), for a create those
// set to something else than their default (_is_attribute_explicitly_set:
// device_owner defaults to "", floating_ip_address to null).
func neutronAttrRules(r *http.Request, action, resource string, update bool) []attrRule {
	names := neutronPolicyAttrs[resource]
	if len(names) == 0 {
		return nil
	}
	body, _ := io.ReadAll(r.Body)
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return nil
	}
	var items []map[string]json.RawMessage
	if raw, ok := top[resource]; ok {
		var one map[string]json.RawMessage
		if json.Unmarshal(raw, &one) == nil {
			items = append(items, one)
		}
	} else if raw, ok := top[resource+"s"]; ok {
		_ = json.Unmarshal(raw, &items)
	}
	var out []attrRule
	for _, item := range items {
		for _, name := range names {
			raw, ok := item[name]
			if !ok {
				continue
			}
			v := strings.TrimSpace(string(raw))
			if !update && (v == "null" || (name == "device_owner" && v == `""`)) {
				continue
			}
			a := attrRule{rule: action + ":" + name}
			// Sub-attributes: the keys of a dict (external_gateway_info,
			// validated as type:dict_or_nodata), or of each dict in a list
			// (fixed_ips, allowed_address_pairs).
			var keys []string
			var dict map[string]json.RawMessage
			var list []map[string]json.RawMessage
			switch {
			case json.Unmarshal(raw, &dict) == nil && dict != nil:
				keys = sortedJSONKeys(dict)
			case json.Unmarshal(raw, &list) == nil:
				for _, d := range list {
					keys = append(keys, sortedJSONKeys(d)...)
				}
			}
			for _, k := range keys {
				a.subs = append(a.subs, action+":"+name+":"+k)
			}
			out = append(out, a)
		}
	}
	return out
}

func sortedJSONKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// --- Octavia ---

const octaviaAPI = "os_load-balancer_api:"

// octaviaRules are the rules of the ops that check one.
var octaviaRules = map[string]string{
	opListProviders:         "provider:get_all",
	opListLoadBalancers:     "loadbalancer:get_all",
	opGetLoadBalancer:       "loadbalancer:get_one",
	opCreateLoadBalancer:    "loadbalancer:post",
	opUpdateLoadBalancer:    "loadbalancer:put",
	opDeleteLoadBalancer:    "loadbalancer:delete",
	opGetLoadBalancerStatus: "loadbalancer:get_status",
	opGetLoadBalancerStats:  "loadbalancer:get_stats",
	opFailoverLoadBalancer:  "loadbalancer:put_failover",
	opListListeners:         "listener:get_all",
	opGetListener:           "listener:get_one",
	opCreateListener:        "listener:post",
	opUpdateListener:        "listener:put",
	opDeleteListener:        "listener:delete",
	opGetListenerStats:      "listener:get_stats",
	opListPools:             "pool:get_all",
	opGetPool:               "pool:get_one",
	opCreatePool:            "pool:post",
	opUpdatePool:            "pool:put",
	opDeletePool:            "pool:delete",
	opListMembers:           "member:get_all",
	opGetMember:             "member:get_one",
	opCreateMember:          "member:post",
	opUpdateMember:          "member:put",
	opDeleteMember:          "member:delete",
	opBatchUpdateMembers:    "member:post",
	opListHealthMonitors:    "healthmonitor:get_all",
	opGetHealthMonitor:      "healthmonitor:get_one",
	opCreateHealthMonitor:   "healthmonitor:post",
	opUpdateHealthMonitor:   "healthmonitor:put",
	opDeleteHealthMonitor:   "healthmonitor:delete",
	opListLBFlavors:         "flavor:get_all",
	opGetLBFlavor:           "flavor:get_one",
	opListAvailabilityZones: "availability-zone:get_all",
	opGetAvailabilityZone:   "availability-zone:get_one",
}

// octaviaOperatorObjects name the RBAC objects of the operator-only
// paths (flavors and availability zones written, their profiles).
var octaviaOperatorObjects = map[string]string{
	"flavors": "flavor", "availabilityzones": "availability-zone",
	"flavorprofiles": "flavor-profile", "availabilityzoneprofiles": "availability-zone-profile",
}

func octaviaPolicy(r *http.Request, op string) policyCheck {
	var p policyCheck
	if op == opOctaviaOperatorOnly {
		parts := octaviaPathParts(r.URL.Path)
		if len(parts) == 0 {
			return p
		}
		verb := map[string]string{http.MethodPost: "post", http.MethodPut: "put", http.MethodDelete: "delete"}[r.Method]
		if verb == "" {
			verb = "get_all"
			if len(parts) > 1 {
				verb = "get_one"
			}
		}
		if obj, ok := octaviaOperatorObjects[parts[0]]; ok {
			p.action = octaviaAPI + obj + ":" + verb
		}
		return p
	}
	rule, ok := octaviaRules[op]
	if !ok {
		return p
	}
	p.action = octaviaAPI + rule
	switch op {
	case opCreateLoadBalancer, opUpdateLoadBalancer:
		body, _ := io.ReadAll(r.Body)
		var top map[string]map[string]json.RawMessage
		if json.Unmarshal(body, &top) == nil {
			if _, ok := top["loadbalancer"]["vip_sg_ids"]; ok {
				p.extra = []string{p.action + ":vip_sg_ids"}
			}
		}
	case opBatchUpdateMembers:
		p.extra = []string{octaviaAPI + "member:put"}
		additive := false
		if v := r.URL.Query()["additive_only"]; len(v) > 0 {
			// strutils.bool_from_string: the same words as Nova's.
			additive, _ = pyBool(v[len(v)-1])
		}
		if !additive {
			p.extra = append(p.extra, octaviaAPI+"member:delete")
		}
	}
	return p
}

// octaviaPathParts are the path's segments below the API version and
// the optional lbaas.
func octaviaPathParts(path string) []string {
	rest := strings.TrimPrefix(path, octaviaPrefix)
	for _, v := range []string{"/v2.0", "/v2"} {
		if s, ok := strings.CutPrefix(rest, v); ok {
			rest = s
			break
		}
	}
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	if len(parts) > 0 && parts[0] == "lbaas" {
		parts = parts[1:]
	}
	return parts
}

// --- Keystone ---

func keystonePolicy(op string) policyCheck {
	var p policyCheck
	switch op {
	case opValidateToken:
		p.action = "identity:validate_token"
	case opCheckToken:
		p.action = "identity:check_token"
	case opRevokeToken:
		p.action = "identity:revoke_token"
	}
	return p
}
