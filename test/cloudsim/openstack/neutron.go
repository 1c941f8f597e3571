package openstack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// Neutron (networking API v2.0), mounted at /network: version document,
// extensions, networks and subnets (read-only: the fixture makes them),
// ports, floating IPs, security groups and their rules, routers with
// their extra routes, and tags, with Neutron's filters, sorting,
// pagination links, If-Match revision constraints and NeutronError
// bodies. The emulated Neutron is ML2/OVN as devstack sets it up (2025.x)
// seen by a project member: admin-only fields (binding:host_id,
// distributed, ha) are absent, and only the caller's project's resources
// (plus external networks and their subnets) exist for it.
//
// Operation names are "neutron:<Verb><Resource>" ("neutron:ListPorts",
// "neutron:AddExtraRoutes"); every path the emulator does not serve is
// "neutron:Unsupported" and Neutron's 404.

const (
	neutronPrefix = "/network"
	neutronV2     = "/v2.0"
	neutronOp     = "neutron:"

	opNeutronVersions    = neutronOp + "ListVersions"
	opNeutronUnsupported = neutronOp + "Unsupported"

	opListExtensions = neutronOp + "ListExtensions"
	opGetExtension   = neutronOp + "GetExtension"

	opListNetworks = neutronOp + "ListNetworks"
	opGetNetwork   = neutronOp + "GetNetwork"
	opListSubnets  = neutronOp + "ListSubnets"
	opGetSubnet    = neutronOp + "GetSubnet"

	opListPorts  = neutronOp + "ListPorts"
	opGetPort    = neutronOp + "GetPort"
	opCreatePort = neutronOp + "CreatePort"
	opUpdatePort = neutronOp + "UpdatePort"
	opDeletePort = neutronOp + "DeletePort"

	opListFloatingIPs  = neutronOp + "ListFloatingIPs"
	opGetFloatingIP    = neutronOp + "GetFloatingIP"
	opCreateFloatingIP = neutronOp + "CreateFloatingIP"
	opUpdateFloatingIP = neutronOp + "UpdateFloatingIP"
	opDeleteFloatingIP = neutronOp + "DeleteFloatingIP"

	opListSecurityGroups  = neutronOp + "ListSecurityGroups"
	opGetSecurityGroup    = neutronOp + "GetSecurityGroup"
	opCreateSecurityGroup = neutronOp + "CreateSecurityGroup"
	opUpdateSecurityGroup = neutronOp + "UpdateSecurityGroup"
	opDeleteSecurityGroup = neutronOp + "DeleteSecurityGroup"

	opListSecurityGroupRules       = neutronOp + "ListSecurityGroupRules"
	opGetSecurityGroupRule         = neutronOp + "GetSecurityGroupRule"
	opCreateSecurityGroupRule      = neutronOp + "CreateSecurityGroupRule"
	opBulkCreateSecurityGroupRules = neutronOp + "BulkCreateSecurityGroupRules"
	opDeleteSecurityGroupRule      = neutronOp + "DeleteSecurityGroupRule"

	opListRouters       = neutronOp + "ListRouters"
	opGetRouter         = neutronOp + "GetRouter"
	opUpdateRouter      = neutronOp + "UpdateRouter"
	opAddExtraRoutes    = neutronOp + "AddExtraRoutes"
	opRemoveExtraRoutes = neutronOp + "RemoveExtraRoutes"

	opListTags      = neutronOp + "ListTags"
	opGetTag        = neutronOp + "GetTag"
	opAddTag        = neutronOp + "AddTag"
	opAddTags       = neutronOp + "AddTags"
	opReplaceTags   = neutronOp + "ReplaceTags"
	opDeleteTag     = neutronOp + "DeleteTag"
	opDeleteAllTags = neutronOp + "DeleteAllTags"
)

func init() {
	registerMutating(
		opCreatePort, opUpdatePort, opDeletePort,
		opCreateFloatingIP, opUpdateFloatingIP, opDeleteFloatingIP,
		opCreateSecurityGroup, opUpdateSecurityGroup, opDeleteSecurityGroup,
		opCreateSecurityGroupRule, opBulkCreateSecurityGroupRules, opDeleteSecurityGroupRule,
		opUpdateRouter, opAddExtraRoutes, opRemoveExtraRoutes,
		opAddTag, opAddTags, opReplaceTags, opDeleteTag, opDeleteAllTags,
	)
}

// NeutronConfig configures Neutron. Zero values get Neutron's defaults.
type NeutronConfig struct {
	// DisabledExtensions are extension aliases (see DefaultNeutronExtensions)
	// this Neutron does not have, as a cloud whose operator left a
	// service plugin out: their attributes, filters and routes are gone,
	// e.g. without "extraroute-atomic" add_extraroutes is a 404, without
	// "revision-if-match" an If-Match header is a 400. Unknown aliases
	// are an error of New (a typo would silently test nothing).
	DisabledExtensions []string
	// PaginationMaxLimit is [DEFAULT] pagination_max_limit: the most
	// items a list returns per page, and the page size of lists that ask
	// for none. Zero or negative: unlimited ("-1", Neutron's default).
	PaginationMaxLimit int
	// MaxAllowedAddressPairs is [DEFAULT] max_allowed_address_pair,
	// default 10.
	MaxAllowedAddressPairs int
	// RouterRouteQuota is [quotas] quota_router_route, the most extra
	// routes a router may have, default 30; negative is unlimited.
	RouterRouteQuota int
	// SecurityGroupQuota and SecurityGroupRuleQuota are [quotas]
	// quota_security_group and quota_security_group_rule per project.
	// Neutron's defaults are 10 and 100; here zero means unlimited, so
	// tests that make many groups need not raise them.
	SecurityGroupQuota     int
	SecurityGroupRuleQuota int
}

func (c *NeutronConfig) setDefaults() {
	c.DisabledExtensions = slices.Clone(c.DisabledExtensions)
	if c.MaxAllowedAddressPairs <= 0 {
		c.MaxAllowedAddressPairs = 10
	}
	if c.RouterRouteQuota == 0 {
		c.RouterRouteQuota = 30
	}
}

// neutronState is Neutron's own state. Callers hold e.mu.
type neutronState struct {
	extensions map[string]bool // enabled aliases
	secGroups  *cloudsim.Store[*securityGroup]
	sgRules    *cloudsim.Store[*sgRule]
	routers    *cloudsim.Store[*router]
	// defaultSG is each project's default security group, which Neutron
	// makes the first time the project needs one.
	defaultSG map[string]string
}

// initNeutron sets up Neutron's state; New calls it.
func (e *Emulator) initNeutron() {
	exts := map[string]bool{}
	for _, x := range neutronExtensions {
		exts[x.alias] = true
	}
	for _, alias := range e.cfg.Neutron.DisabledExtensions {
		if !exts[alias] {
			panic(fmt.Sprintf("cloudsim/openstack: NeutronConfig.DisabledExtensions: unknown extension %q; have %s",
				alias, strings.Join(DefaultNeutronExtensions(), ", ")))
		}
		delete(exts, alias)
	}
	// Neutron does not load an extension whose required extensions are
	// missing.
	for changed := true; changed; {
		changed = false
		for alias, needs := range extensionRequires {
			for _, n := range needs {
				if exts[alias] && !exts[n] {
					delete(exts, alias)
					changed = true
				}
			}
		}
	}
	e.neutron = neutronState{
		extensions: exts,
		secGroups:  cloudsim.NewStore("neutron:security-group", func(g *securityGroup) string { return g.id }),
		sgRules:    cloudsim.NewStore("neutron:security-group-rule", func(r *sgRule) string { return r.id }),
		routers:    cloudsim.NewStore("neutron:router", func(r *router) string { return r.id }),
		defaultSG:  map[string]string{},
	}
}

// hasExt reports whether the extension alias is enabled.
func (e *Emulator) hasExt(alias string) bool { return e.neutron.extensions[alias] }

// neutronResources adds Neutron's resources to Resources: security
// groups (parent: project), their rules (parent: group) and routers
// (parent: project). Tags show as keys with empty values. Callers hold
// e.mu.
func (e *Emulator) neutronResources(add func(kind, id, name, parent string, tags map[string]string)) {
	for _, g := range e.neutron.secGroups.All() {
		add(KindSecurityGroup, g.id, g.name, g.projectID, ntTagMap(g.std.tags))
	}
	for _, r := range e.neutron.sgRules.All() {
		add(KindSecurityGroupRule, r.id, r.summary(), r.sgID, nil)
	}
	for _, r := range e.neutron.routers.All() {
		add(KindRouter, r.id, r.name, r.projectID, ntTagMap(r.std.tags))
	}
}

// ntTagMap is a tag list as cloudsim.Resource tags: each tag a key.
func ntTagMap(tags []string) map[string]string {
	if len(tags) == 0 {
		return nil
	}
	m := make(map[string]string, len(tags))
	for _, t := range tags {
		m[t] = ""
	}
	return m
}

// --- the service ---

type neutronService struct{ e *Emulator }

func (neutronService) name() string   { return "neutron" }
func (neutronService) prefix() string { return neutronPrefix }

// neutronCall is one request to the v2.0 API.
type neutronCall struct {
	r       *http.Request
	tok     *token
	project string // the token's project: every resource a call sees is its
	query   query
	body    []byte
	// id is the member's ID, tag the tag of /tags/{tag} routes; tagged is
	// the collection path of tag routes ("security-groups").
	id, tag, tagged string
	// ifMatch is the If-Match revision constraint, nil when none.
	ifMatch *int
	// self is the request URL without its query, for pagination links.
	self string
}

// neutronResponse is a handler's success; a nil body is a bodiless
// answer (204, or the 201 of adding a tag).
type neutronResponse struct {
	status int
	body   any
}

func neutronOK(body any) *neutronResponse { return &neutronResponse{status: http.StatusOK, body: body} }

type neutronHandler func(e *Emulator, c *neutronCall) (*neutronResponse, *apiError)

// ntTaggable maps the collection paths tags work on to their resource
// kinds (neutron.extensions.tagging's TAG_SUPPORTED_RESOURCES that are
// emulated).
var ntTaggable = []string{"networks", "subnets", "ports", "floatingips", "security-groups", "routers"}

func (n neutronService) route(r *http.Request, rest string) route {
	e := n.e
	api := func(op string, h neutronHandler, parts ...string) route {
		return route{op: op, serve: func(w http.ResponseWriter, r *http.Request) { e.serveNeutron(w, r, h, parts) }}
	}
	unsupported := api(opNeutronUnsupported, func(*Emulator, *neutronCall) (*neutronResponse, *apiError) {
		return nil, neutronError(http.StatusNotFound, "HTTPNotFound", msgNotFound)
	})
	get := r.Method == http.MethodGet || r.Method == http.MethodHead
	if rest == "" || rest == "/" {
		if !get {
			return unsupported
		}
		return route{op: opNeutronVersions, public: true, serve: func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, http.StatusOK, map[string]any{"versions": []any{map[string]any{
				"id": "v2.0", "status": "CURRENT",
				"links": []any{map[string]string{"href": baseURL(r) + neutronPrefix + neutronV2 + "/", "rel": "self"}},
			}}})
		}}
	}
	sub, ok := strings.CutPrefix(rest, neutronV2+"/")
	if !ok {
		return unsupported
	}
	parts := strings.Split(strings.TrimSuffix(sub, "/"), "/")
	for _, p := range parts {
		if p == "" {
			return unsupported
		}
	}
	coll, n2 := parts[0], len(parts)
	m := r.Method
	switch {
	case get && coll == "extensions" && n2 == 1:
		return api(opListExtensions, (*Emulator).listExtensions)
	case get && coll == "extensions" && n2 == 2:
		return api(opGetExtension, (*Emulator).getExtension, parts[1])
	case n2 >= 3 && parts[2] == "tags" && slices.Contains(ntTaggable, coll):
		return n.tagRoute(m, parts, api, unsupported)
	}
	type ops struct {
		list, get, create, update, del      string
		hList, hGet, hCreate, hUpdate, hDel neutronHandler
	}
	var t ops
	switch coll {
	case "networks":
		t = ops{list: opListNetworks, get: opGetNetwork, hList: (*Emulator).listNetworks, hGet: (*Emulator).getNetwork}
	case "subnets":
		t = ops{list: opListSubnets, get: opGetSubnet, hList: (*Emulator).listSubnets, hGet: (*Emulator).getSubnet}
	case "ports":
		t = ops{
			opListPorts, opGetPort, opCreatePort, opUpdatePort, opDeletePort,
			(*Emulator).listPorts, (*Emulator).getPort, (*Emulator).createPortAPI, (*Emulator).updatePort, (*Emulator).deletePortAPI,
		}
	case "floatingips":
		if !e.hasExt(extRouter) {
			return unsupported
		}
		t = ops{
			opListFloatingIPs, opGetFloatingIP, opCreateFloatingIP, opUpdateFloatingIP, opDeleteFloatingIP,
			(*Emulator).listFloatingIPs, (*Emulator).getFloatingIP, (*Emulator).createFloatingIPAPI,
			(*Emulator).updateFloatingIP, (*Emulator).deleteFloatingIPAPI,
		}
	case "security-groups":
		if !e.hasExt(extSecurityGroup) {
			return unsupported
		}
		t = ops{
			opListSecurityGroups, opGetSecurityGroup, opCreateSecurityGroup, opUpdateSecurityGroup, opDeleteSecurityGroup,
			(*Emulator).listSecurityGroups, (*Emulator).getSecurityGroup, (*Emulator).createSecurityGroup,
			(*Emulator).updateSecurityGroup, (*Emulator).deleteSecurityGroup,
		}
	case "security-group-rules":
		if !e.hasExt(extSecurityGroup) {
			return unsupported
		}
		create := opCreateSecurityGroupRule
		if m == http.MethodPost && ntTopKey(r) == "security_group_rules" {
			create = opBulkCreateSecurityGroupRules
		}
		t = ops{
			list: opListSecurityGroupRules, get: opGetSecurityGroupRule, create: create, del: opDeleteSecurityGroupRule,
			hList: (*Emulator).listSecurityGroupRules, hGet: (*Emulator).getSecurityGroupRule,
			hCreate: (*Emulator).createSecurityGroupRules, hDel: (*Emulator).deleteSecurityGroupRule,
		}
	case "routers":
		if !e.hasExt(extRouter) {
			return unsupported
		}
		if n2 == 3 && m == http.MethodPut {
			switch {
			case parts[2] == "add_extraroutes" && e.hasExt(extExtraRouteAtomic):
				return api(opAddExtraRoutes, (*Emulator).addExtraRoutes, parts[1])
			case parts[2] == "remove_extraroutes" && e.hasExt(extExtraRouteAtomic):
				return api(opRemoveExtraRoutes, (*Emulator).removeExtraRoutes, parts[1])
			}
			return unsupported
		}
		t = ops{
			list: opListRouters, get: opGetRouter, update: opUpdateRouter,
			hList: (*Emulator).listRouters, hGet: (*Emulator).getRouter, hUpdate: (*Emulator).updateRouter,
		}
	default:
		return unsupported
	}
	switch {
	case n2 == 1 && get && t.list != "":
		return api(t.list, t.hList)
	case n2 == 1 && m == http.MethodPost && t.create != "":
		return api(t.create, t.hCreate)
	case n2 == 2 && get && t.get != "":
		return api(t.get, t.hGet, parts[1])
	case n2 == 2 && m == http.MethodPut && t.update != "":
		return api(t.update, t.hUpdate, parts[1])
	case n2 == 2 && m == http.MethodDelete && t.del != "":
		return api(t.del, t.hDel, parts[1])
	}
	return unsupported
}

// tagRoute routes /v2.0/{collection}/{id}/tags[/{tag}].
func (n neutronService) tagRoute(m string, parts []string, api func(string, neutronHandler, ...string) route, unsupported route) route {
	e := n.e
	if !e.hasExt(extStandardAttrTag) || len(parts) > 4 {
		return unsupported
	}
	get := m == http.MethodGet || m == http.MethodHead
	if len(parts) == 3 {
		switch {
		case get:
			return api(opListTags, (*Emulator).listTags, parts...)
		case m == http.MethodPut:
			return api(opReplaceTags, (*Emulator).replaceTags, parts...)
		case m == http.MethodPost && e.hasExt(extTagCreation):
			return api(opAddTags, (*Emulator).addTags, parts...)
		case m == http.MethodDelete:
			return api(opDeleteAllTags, (*Emulator).deleteAllTags, parts...)
		}
		return unsupported
	}
	switch {
	case get:
		return api(opGetTag, (*Emulator).getTag, parts...)
	case m == http.MethodPut:
		return api(opAddTag, (*Emulator).addTag, parts...)
	case m == http.MethodDelete:
		return api(opDeleteTag, (*Emulator).deleteTag, parts...)
	}
	return unsupported
}

// ntTopKey peeks at the single top-level key of a JSON request body and
// puts the body back, so the operation name can tell a bulk create from
// a single one.
func ntTopKey(r *http.Request) string {
	if r.Body == nil {
		return ""
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	return ntBodyTopKey(body)
}

// ntBodyTopKey is the single top-level key of a JSON object, "" when the
// body is not an object with one key.
func ntBodyTopKey(body []byte) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil || len(m) != 1 {
		return ""
	}
	for k := range m {
		return k
	}
	return ""
}

// neutronError is Neutron's error body.
func neutronError(status int, typ, message string) *apiError {
	return &apiError{status: status, body: map[string]any{"NeutronError": map[string]string{"type": typ, "message": message, "detail": ""}}}
}

// Neutron's exception families, by the status FAULT_MAP gives them.
func neutronBadRequest(typ, msg string) *apiError {
	return neutronError(http.StatusBadRequest, typ, msg)
}
func neutronNotFound(typ, msg string) *apiError { return neutronError(http.StatusNotFound, typ, msg) }
func neutronConflict(typ, msg string) *apiError { return neutronError(http.StatusConflict, typ, msg) }

// ntHTTPBadRequest is a webob HTTPBadRequest raised with a message, as the
// API layer raises for malformed bodies and queries.
func ntHTTPBadRequest(msg string) *apiError { return neutronBadRequest("HTTPBadRequest", msg) }

// ntBadRequest is neutron_lib's BadRequest: "Bad <resource> request: <msg>."
func ntBadRequest(resource, msg string) *apiError {
	return neutronBadRequest("BadRequest", "Bad "+resource+" request: "+msg+".")
}

// ntInvalidInput is neutron_lib's InvalidInput.
func ntInvalidInput(msg string) *apiError {
	return neutronBadRequest("InvalidInput", "Invalid input for operation: "+msg+".")
}

func (neutronService) writeUnauthenticated(w http.ResponseWriter, r *http.Request) {
	writeAuthRequired(w, r)
}

// writeThrottle: Neutron has no rate limiting of its own; clouds put it in
// front (a proxy or the rate-limit middleware), answering 429 with
// Retry-After.
func (n neutronService) writeThrottle(w http.ResponseWriter, r *http.Request, rt route) {
	w.Header().Set("Retry-After", strconv.Itoa(n.e.cfg.RetryAfter))
	writeError(w, neutronError(http.StatusTooManyRequests, "OverLimit", "Too Many Requests"))
}

func (neutronService) writeServerError(w http.ResponseWriter, r *http.Request, rt route) {
	writeError(w, neutronError(http.StatusInternalServerError, "HTTPInternalServerError", "Request Failed: internal server error while processing your request."))
}

// serveNeutron runs a v2.0 handler under the lock. parts are the path
// parameters: the member ID, or for tag routes the collection, the
// member ID, "tags" and the tag.
func (e *Emulator) serveNeutron(w http.ResponseWriter, r *http.Request, h neutronHandler, parts []string) {
	q, qerr := parseQuery(r.URL.RawQuery)
	if qerr != nil {
		writeError(w, ntHTTPBadRequest(qerr.Error()))
		return
	}
	var body []byte
	if r.Body != nil && (r.Method == http.MethodPost || r.Method == http.MethodPut) {
		body, _ = io.ReadAll(r.Body)
	}
	c := &neutronCall{r: r, query: q, body: body, self: baseURL(r) + r.URL.Path}
	switch len(parts) {
	case 1:
		c.id = parts[0]
	case 3, 4:
		c.tagged, c.id = parts[0], parts[1]
		if len(parts) == 4 {
			c.tag = parts[3]
		}
	}
	e.mu.Lock()
	resp, err := e.runNeutron(c, h)
	e.mu.Unlock()
	if err != nil {
		writeError(w, err)
		return
	}
	if resp.body == nil || r.Method == http.MethodHead {
		w.WriteHeader(resp.status)
		return
	}
	writeJSON(w, resp.status, resp.body)
}

func (e *Emulator) runNeutron(c *neutronCall, h neutronHandler) (*neutronResponse, *apiError) {
	var ok bool
	c.tok, ok = e.validToken(c.r.Header.Get("X-Auth-Token"))
	switch {
	case !ok:
		// The token expired between Serve's check and now.
		return nil, keystoneError(http.StatusUnauthorized, msgUnauthorized)
	case c.tok.projectID == "":
		// Neutron's policies need a project; an unscoped token has none.
		return nil, neutronError(http.StatusForbidden, "PolicyNotAuthorized", "Not authorized.")
	}
	c.project = c.tok.projectID
	if c.id != "" && c.tagged == "" && (c.r.Method == http.MethodPut || c.r.Method == http.MethodDelete) {
		rev, err := e.revisionConstraint(c.r.Header)
		if err != nil {
			return nil, err
		}
		c.ifMatch = rev
	}
	return h(e, c)
}

// revisionConstraint parses If-Match: revision_number=<n> as
// api_common.check_request_for_revision_constraint does. Other entity
// tags are ignored, as Neutron ignores them.
func (e *Emulator) revisionConstraint(h http.Header) (*int, *apiError) {
	var rev *int
	for _, v := range h.Values("If-Match") {
		for _, tag := range strings.Split(v, ",") {
			tag = strings.Trim(strings.TrimPrefix(strings.TrimSpace(tag), "W/"), `"`)
			n, ok := strings.CutPrefix(tag, "revision_number=")
			if !ok {
				continue
			}
			if rev != nil {
				return nil, ntBadRequest("if-match", "Multiple revision_number etags are not supported.")
			}
			if !e.hasExt(extRevisionIfMatch) {
				return nil, ntBadRequest("if-match", "This server does not support constraining operations based on revision numbers")
			}
			i, err := strconv.Atoi(n)
			if err != nil {
				return nil, ntBadRequest("if-match", "Revision number etag must be in the format of revision_number=<int>")
			}
			rev = &i
		}
	}
	return rev, nil
}

// checkRevision enforces the call's If-Match constraint on a resource
// about to change: RevisionNumberConstraintFailed, a 412.
func (c *neutronCall) checkRevision(s *stdAttrs) *apiError {
	if c.ifMatch == nil || *c.ifMatch == s.revision {
		return nil
	}
	return neutronError(http.StatusPreconditionFailed, "RevisionNumberConstraintFailed",
		fmt.Sprintf("Constrained to %d, but current revision is %d", *c.ifMatch, s.revision))
}

// --- request bodies ---

// ntAttr is one attribute of a resource's attribute map: whether POST
// and PUT may set it and whether POST must.
type ntAttr struct {
	post, put, required bool
}

// parseBody decodes {"<resource>": {...}} (or, with bulk, also
// {"<resource>s": [...]}) and checks the attributes against attrs as
// Controller.prepare_request_body does: unknown ones, ones the method
// may not set, missing required ones, and a project other than the
// caller's.
func (c *neutronCall) parseBody(resource string, attrs map[string]ntAttr, create, bulk bool) ([]map[string]any, *apiError) {
	if len(bytes.TrimSpace(c.body)) == 0 {
		return nil, ntHTTPBadRequest("Resource body required")
	}
	dec := json.NewDecoder(bytes.NewReader(c.body))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, ntHTTPBadRequest("Body contains invalid data")
	}
	top, ok := doc.(map[string]any)
	if !ok {
		return nil, ntHTTPBadRequest("Body contains invalid data")
	}
	var items []any
	if list, ok := top[resource+"s"]; ok {
		if !bulk {
			return nil, ntHTTPBadRequest("Bulk operation not supported")
		}
		l, ok := list.([]any)
		if !ok {
			return nil, ntHTTPBadRequest("Body contains invalid data")
		}
		if len(l) == 0 {
			return nil, ntHTTPBadRequest("Resources required")
		}
		for _, it := range l {
			if m, ok := it.(map[string]any); ok {
				if inner, ok := m[resource]; ok {
					it = inner
				}
			}
			items = append(items, it)
		}
	} else {
		item, ok := top[resource]
		if !ok || item == nil {
			return nil, ntHTTPBadRequest("Unable to find '" + resource + "' in request body")
		}
		items = []any{item}
	}
	var out []map[string]any
	for _, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			return nil, ntHTTPBadRequest("Object '" + resource + "' contains invalid data")
		}
		if err := c.checkAttributes(m, attrs, create); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

func (c *neutronCall) checkAttributes(m map[string]any, attrs map[string]ntAttr, create bool) *apiError {
	// populate_project_id and _validate_privileges
	pid, hasPID := m["project_id"]
	tid, hasTID := m["tenant_id"]
	if hasPID && hasTID && pid != tid {
		return ntHTTPBadRequest("'project_id' and 'tenant_id' do not match")
	}
	for _, v := range []any{pid, tid} {
		if s, ok := v.(string); ok && s != c.project {
			return ntHTTPBadRequest("Specifying 'project_id' or 'tenant_id' other than the authenticated project in request requires admin privileges")
		}
	}
	var unknown []string
	for k := range m {
		if k == "project_id" || k == "tenant_id" {
			continue
		}
		if _, ok := attrs[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return ntHTTPBadRequest("Unrecognized attribute(s) '" + strings.Join(unknown, ", ") + "'")
	}
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		a := attrs[k]
		_, set := m[k]
		switch {
		case create && a.required && !set:
			return ntHTTPBadRequest("Failed to parse request. Required attribute '" + k + "' not specified")
		case create && set && !a.post:
			return ntHTTPBadRequest("Attribute '" + k + "' not allowed in POST")
		case !create && set && !a.put:
			return ntHTTPBadRequest("Cannot update read-only attribute " + k)
		}
	}
	if !create {
		for _, k := range []string{"project_id", "tenant_id"} {
			if _, ok := m[k]; ok {
				return ntHTTPBadRequest("Cannot update read-only attribute " + k)
			}
		}
	}
	return nil
}

// ntAttrString reads a string attribute (validators.validate_string).
func ntAttrString(m map[string]any, key string, maxLen int) (string, bool, *apiError) {
	v, ok := m[key]
	if !ok {
		return "", false, nil
	}
	s, isStr := v.(string)
	if !isStr {
		return "", true, ntHTTPBadRequest("Invalid input for " + key + ". Reason: '" + pyStr(v) + "' is not a valid string.")
	}
	if maxLen > 0 && len([]rune(s)) > maxLen {
		return "", true, ntHTTPBadRequest(fmt.Sprintf("Invalid input for %s. Reason: '%s' exceeds maximum length of %d.", key, s, maxLen))
	}
	return s, true, nil
}

// ntAttrBool reads a boolean attribute (converters.convert_to_boolean).
func ntAttrBool(m map[string]any, key string) (bool, bool, *apiError) {
	v, ok := m[key]
	if !ok {
		return false, false, nil
	}
	b, err := ntBool(v)
	return b, true, err
}

func ntBool(v any) (bool, *apiError) {
	switch x := v.(type) {
	case bool:
		return x, nil
	case string, json.Number:
		switch strings.ToLower(strings.TrimSpace(pyStr(x))) {
		case "1", "t", "true", "on", "y", "yes":
			return true, nil
		case "0", "f", "false", "off", "n", "no":
			return false, nil
		}
	}
	return false, ntInvalidInput("'" + pyStr(v) + "' cannot be converted to boolean")
}

// Attribute lengths from neutron_lib.db.constants.
const (
	nameFieldSize        = 255
	descriptionFieldSize = 255
	deviceIDFieldSize    = 255
	deviceOwnerFieldSize = 255
	maxTagLen            = 255
	maxTagsCount         = 50
)

// applyStd reads the standard attributes of a create or update body
// into s: description (standard-attr-description) and, on create where
// the resource takes them, tags.
func (e *Emulator) applyStd(m map[string]any, s *stdAttrs) *apiError {
	if d, ok, err := ntAttrString(m, "description", descriptionFieldSize); err != nil {
		return err
	} else if ok {
		s.description = d
	}
	if v, ok := m["tags"]; ok {
		tags, err := ntValidateTagList(v, "tags")
		if err != nil {
			return err
		}
		s.tags = tags
	}
	return nil
}

// stdAttrSpecs adds the attributes of the standard-attribute extensions
// to a resource's attribute map.
func (e *Emulator) stdAttrSpecs(attrs map[string]ntAttr, tagsOnPost bool) map[string]ntAttr {
	if e.hasExt(extStandardAttrDescription) {
		attrs["description"] = ntAttr{post: true, put: true}
	}
	if e.hasExt(extStandardAttrTag) {
		attrs["tags"] = ntAttr{post: tagsOnPost}
	}
	for _, k := range []string{"id", "revision_number", "created_at", "updated_at"} {
		if _, ok := attrs[k]; !ok {
			attrs[k] = ntAttr{}
		}
	}
	return attrs
}

// stdView adds a resource's standard attributes to its view, those of
// enabled extensions only.
func (e *Emulator) stdView(v map[string]any, s *stdAttrs, projectID string) map[string]any {
	v["project_id"], v["tenant_id"] = projectID, projectID
	if e.hasExt(extStandardAttrDescription) {
		v["description"] = s.description
	}
	if e.hasExt(extStandardAttrTag) {
		v["tags"] = ntStrings(s.tags)
	}
	if e.hasExt(extStandardAttrRevisions) {
		v["revision_number"] = s.revision
	}
	if e.hasExt(extStandardAttrTimestamp) {
		v["created_at"], v["updated_at"] = neutronTime(s.created), neutronTime(s.updated)
	}
	return v
}

func ntStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return slices.Clone(s)
}

// neutronTime is how standard-attr-timestamp shows times.
func neutronTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

// ntFields projects a view onto the fields= the request asked for, as
// db_utils.resource_fields does; no fields keeps all.
func ntFields(v map[string]any, fields []string) map[string]any {
	if len(fields) == 0 {
		return v
	}
	out := make(map[string]any, len(fields))
	for _, f := range fields {
		if x, ok := v[f]; ok {
			out[f] = x
		}
	}
	return out
}

// show answers GET of one resource: {"<resource>": view}, with fields=.
func (c *neutronCall) show(resource string, v map[string]any) *neutronResponse {
	return neutronOK(map[string]any{resource: ntFields(v, ntNonEmpty(c.query.all("fields")))})
}

func ntNonEmpty(vs []string) []string {
	var out []string
	for _, v := range vs {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}
