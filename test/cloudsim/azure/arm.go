package azure

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The generic half of Azure Resource Manager: paths, resource types,
// api-versions, the error envelope, ETags, long-running operations and
// paging. Each resource type (a kind) plugs in with hooks for what is
// particular to it (compute.go, network*.go).

// armPath is a parsed ARM request path:
//
//	/subscriptions/{sub}/resourceGroups/{rg}/providers/{ns}/{type}/{name}[/{type}/{name}...][/{type}]
//	/subscriptions/{sub}/providers/{ns}/{type}                      (a subscription-wide list)
//	/subscriptions/{sub}/providers/{ns}/locations/{loc}/operations/{id}  (an async operation)
//
// An item path has as many names as types; a collection (list) path, or
// an action on an item, has one name fewer.
type armPath struct {
	Sub, RG, NS string
	Types       []string
	Names       []string
}

func (p armPath) isCollection() bool { return len(p.Names) == len(p.Types)-1 }

// typeKey is the lower-cased "<ns>/<type>/<type>" the kind table is
// keyed by.
func typeKey(ns string, types []string) string {
	return strings.ToLower(ns + "/" + strings.Join(types, "/"))
}

func parseARMPath(path string) (armPath, error) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	var p armPath
	if len(segs) < 2 || !strings.EqualFold(segs[0], "subscriptions") || segs[1] == "" {
		return p, fmt.Errorf("not an ARM path: %s", path)
	}
	p.Sub, segs = segs[1], segs[2:]
	if len(segs) >= 2 && strings.EqualFold(segs[0], "resourceGroups") {
		p.RG, segs = segs[1], segs[2:]
	}
	if len(segs) == 2 && p.RG == "" && strings.EqualFold(segs[0], "providers") && segs[1] != "" {
		// /subscriptions/{id}/providers/{namespace}: the provider itself.
		p.NS = segs[1]
		return p, nil
	}
	if len(segs) < 3 || !strings.EqualFold(segs[0], "providers") {
		return p, fmt.Errorf("not an ARM resource path: %s", path)
	}
	p.NS, segs = segs[1], segs[2:]
	for i, s := range segs {
		if s == "" {
			return p, fmt.Errorf("empty segment in %s", path)
		}
		if i%2 == 0 {
			p.Types = append(p.Types, s)
		} else {
			p.Names = append(p.Names, s)
		}
	}
	return p, nil
}

// armError is ARM's error envelope: {"error":{"code","message"}}.
type armError struct {
	Status  int
	Code    string
	Message string
	// Details are inner errors, as the network provider nests them
	// (InvalidRequestFormat, RetryableError).
	Details []*armError
}

func (e *armError) Error() string { return e.Code + ": " + e.Message }

func writeARMError(w http.ResponseWriter, e *armError) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("x-ms-failure-cause", "gateway")
	w.WriteHeader(e.Status)
	body := map[string]any{"code": e.Code, "message": e.Message}
	if len(e.Details) > 0 {
		details := make([]map[string]string, 0, len(e.Details))
		for _, d := range e.Details {
			details = append(details, map[string]string{"code": d.Code, "message": d.Message})
		}
		body["details"] = details
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"error": body})
}

func writeARMJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Errors every kind uses, worded as ARM and the resource providers word
// them.

func errResourceNotFound(k *kind, p armPath) *armError {
	return &armError{Status: http.StatusNotFound, Code: "ResourceNotFound",
		Message: fmt.Sprintf("The Resource '%s/%s' under resource group '%s' was not found. For more details please go to https://aka.ms/ARMResourceNotFoundFix",
			k.ns, strings.Join(interleave(k.types(), p.Names), "/"), p.RG)}
}

func errGroupNotFound(rg string) *armError {
	return &armError{Status: http.StatusNotFound, Code: "ResourceGroupNotFound", Message: fmt.Sprintf("Resource group '%s' could not be found.", rg)}
}

func errParentNotFound(parentID string) *armError {
	return &armError{Status: http.StatusNotFound, Code: "ParentResourceNotFound",
		Message: fmt.Sprintf("Can not perform requested operation on nested resource. Parent resource '%s' not found.", parentID)}
}

func errInvalidContent(err error) *armError {
	return &armError{Status: http.StatusBadRequest, Code: "InvalidRequestContent",
		Message: "The request content was invalid and could not be deserialized: '" + err.Error() + "'."}
}

func errPrecondition() *armError {
	return &armError{Status: http.StatusPreconditionFailed, Code: "PreconditionFailed",
		Message: "Operation failed. The resource has been modified since it was last read (ETag mismatch); read it again and retry."}
}

// interleave pairs types with names: [a b] [x y] -> [a x b y].
func interleave(types, names []string) []string {
	var out []string
	for i, t := range types {
		out = append(out, t)
		if i < len(names) {
			out = append(out, names[i])
		}
	}
	return out
}

// kind is one resource type. Hooks run with the emulator's lock held and
// may read and change any state.
type kind struct {
	// service prefixes operation names: "compute" or "network".
	service string
	// ns is the resource provider namespace, e.g. "Microsoft.Network".
	ns string
	// typ is the type path as the provider spells it, e.g.
	// "loadBalancers" or "virtualNetworks/subnets".
	typ string
	// group is the operation group, e.g. "LoadBalancers": operations are
	// <group>_Get, _CreateOrUpdate, _Delete, _List, _ListAll.
	group string
	// apiVersions the provider accepts for the type.
	apiVersions []string
	// lro: PUT and DELETE are long-running operations.
	lro bool
	// etag: the resource carries an etag and honours If-Match.
	etag bool
	// etagSeq: the ETag is a quoted counter ("1", "2", ...) that moves
	// only when the resource changes, as Compute writes them; otherwise a
	// fresh weak GUID on every write, as the network provider does.
	etagSeq bool
	// preconditionFailed words the 412 for an If-Match or If-None-Match
	// that does not hold (sent is the header's value, have the resource's
	// ETag, "" when there is none); nil gives errPrecondition.
	preconditionFailed func(header, sent, have string) *armError
	// tracked: a top-level resource with a location (required on PUT).
	tracked bool
	// readOnly: no PUT or DELETE through the API (admin-made things such
	// as scale set VMs are changed only by the emulator).
	readOnly bool

	// update serves PUT and PATCH for a provider that merges the body
	// into the stored resource instead of replacing it (Compute): it
	// validates c.Body, applies it to c.Old (nil when the resource does
	// not exist; a kind that can be created stores the new object itself)
	// and says whether anything changed. The generic code
	// applies If-Match and If-None-Match before, and answers with the
	// ETag and the long-running operation after (serveUpdate). A kind
	// with update takes no put.
	update func(e *Emulator, c *putCall) (changed bool, aerr *armError)
	// put completes a PUT: it validates c.Body, fills in what the
	// provider computes (IDs of sub-resources, addresses) and updates
	// other resources' back-references. The generic code then sets id,
	// name, type, etag and provisioningState.
	put func(e *Emulator, c *putCall) *armError
	// del is asked before a DELETE is accepted; an error refuses it
	// (e.g. a public IP still in use).
	del func(e *Emulator, o *object) *armError
	// removed is told when the object is gone, to unlink back-references.
	removed func(e *Emulator, o *object)
	// view renders the object for a GET or a list (e.g. with the instance
	// view when $expand=instanceView); nil serves the stored body.
	view func(e *Emulator, o *object, q url.Values) (map[string]any, *armError)
	// list overrides the generic listing of a collection path (lists that
	// span types, such as a scale set's network interfaces).
	list func(e *Emulator, p armPath, q url.Values) ([]map[string]any, *armError)
	// listFilter decides per object whether a list with q (its $filter)
	// includes it; an error refuses the query.
	listFilter func(e *Emulator, o *object, q url.Values) (bool, *armError)
	// actions are the operations on an item: "instanceView" (GET),
	// "start" (POST), ...
	actions map[string]action
	// listAll names the subscription-wide list "<group>_ListAll";
	// false leaves it unsupported.
	listAll bool
	// ops overrides operationIds that "<group>_<op>" cannot spell, by
	// op ("Get", "List", ...): e.g. "Get" ->
	// "NetworkInterfaces_GetVirtualMachineScaleSetNetworkInterface".
	ops map[string]string
	// notFound words the 404 of a GET of an item that does not exist
	// (nested network resources answer NotFound, not ARM's
	// ResourceNotFound); nil gives errResourceNotFound.
	notFound func(e *Emulator, p armPath) *armError
}

// action is an operation on an item beyond GET, PUT and DELETE.
type action struct {
	method string
	// op is the operationId, e.g. "VirtualMachines_InstanceView".
	op    string
	serve func(e *Emulator, w http.ResponseWriter, r *http.Request, o *object)
}

func (k *kind) types() []string { return strings.Split(k.typ, "/") }

// fullType is the "type" property: "Microsoft.Network/loadBalancers".
func (k *kind) fullType() string { return k.ns + "/" + k.typ }

func (k *kind) opName(op string) string {
	if id, ok := k.ops[op]; ok {
		return k.service + ":" + id
	}
	return k.service + ":" + k.group + "_" + op
}

// putCall is one PUT as a kind's hook sees it.
type putCall struct {
	// ID is the resource's ID as it will be stored.
	ID string
	// Path is the request path parsed.
	Path armPath
	// Body is the request body, to be completed in place.
	Body map[string]any
	// Old is the object being replaced, nil on create.
	Old *object
	// Host is the request's host, for links.
	Host string
	// Method is PUT or PATCH (an update hook's call).
	Method string
}

// object is one stored resource.
type object struct {
	kind *kind
	// id as first created; lookups go by its lower-cased form.
	id string
	// rg is the resource group name as created, "" for none.
	rg string
	// names are the path names, outermost first.
	names []string
	body  map[string]any
	// pending is the long-running operation the object is in, if any.
	pending *asyncOp
}

func (o *object) name() string { return o.names[len(o.names)-1] }

// props is the object's properties map, created if missing.
func (o *object) props() map[string]any { return propsOf(o.body) }

func propsOf(body map[string]any) map[string]any {
	p, ok := body["properties"].(map[string]any)
	if !ok {
		p = map[string]any{}
		body["properties"] = p
	}
	return p
}

// kindTable holds the kinds by type key.
type kindTable struct {
	byKey map[string]*kind
}

func newKindTable() *kindTable { return &kindTable{byKey: map[string]*kind{}} }

func (t *kindTable) add(k *kind) {
	key := typeKey(k.ns, k.types())
	if t.byKey[key] != nil {
		panic("kind registered twice: " + key)
	}
	t.byKey[key] = k
}

// resolve finds what a path addresses: a kind (item or collection), or an
// action on an item of a kind.
func (t *kindTable) resolve(p armPath) (k *kind, act *action, ok bool) {
	if k := t.byKey[typeKey(p.NS, p.Types)]; k != nil {
		return k, nil, true
	}
	if len(p.Types) >= 2 && p.isCollection() {
		parent := t.byKey[typeKey(p.NS, p.Types[:len(p.Types)-1])]
		if parent != nil {
			for name, a := range parent.actions {
				if strings.EqualFold(name, p.Types[len(p.Types)-1]) {
					return parent, &a, true
				}
			}
		}
	}
	return nil, nil, false
}

// isAsyncOpPath says p is .../locations/{loc}/operations/{id} or
// .../operationResults/{id}.
func isAsyncOpPath(p armPath) bool {
	return len(p.Types) == 2 && strings.EqualFold(p.Types[0], "locations") && len(p.Names) == 2 &&
		(strings.EqualFold(p.Types[1], "operations") || strings.EqualFold(p.Types[1], "operationResults"))
}

func serviceOf(ns string) string {
	switch strings.ToLower(ns) {
	case "microsoft.compute":
		return "compute"
	case "microsoft.network":
		return "network"
	}
	return "arm"
}

// operation names the API operation of a request.
func (t *kindTable) operation(method string, p armPath) string {
	if len(p.Types) == 0 {
		return "arm:Providers_Get"
	}
	if isAsyncOpPath(p) {
		if strings.EqualFold(p.Types[1], "operations") {
			return serviceOf(p.NS) + ":AsyncOperation_Get"
		}
		return serviceOf(p.NS) + ":OperationResult_Get"
	}
	k, act, ok := t.resolve(p)
	if !ok {
		return serviceOf(p.NS) + ":Unsupported"
	}
	if act != nil {
		return k.service + ":" + act.op
	}
	if p.isCollection() {
		if p.RG == "" && len(p.Types) == 1 {
			return k.opName("ListAll")
		}
		return k.opName("List")
	}
	switch method {
	case http.MethodGet, http.MethodHead:
		return k.opName("Get")
	case http.MethodPut:
		return k.opName("CreateOrUpdate")
	case http.MethodDelete:
		return k.opName("Delete")
	case http.MethodPatch:
		return k.opName("UpdateTags")
	}
	return k.service + ":Unsupported"
}

// resourceID builds the canonical ID of an item of k.
func resourceID(sub, rg string, k *kind, names []string) string {
	return "/subscriptions/" + sub + "/resourceGroups/" + rg + "/providers/" + k.ns + "/" + strings.Join(interleave(k.types(), names), "/")
}

// objectAt returns the object an item path names, if any.
func (e *Emulator) objectAt(k *kind, p armPath) *object {
	return e.objs[strings.ToLower(resourceID(p.Sub, p.RG, k, p.Names))]
}

// lookup returns the object with id (any case), if any.
func (e *Emulator) lookup(id string) *object { return e.objs[strings.ToLower(id)] }

// serveARM answers one ARM call.
func (e *Emulator) serveARM(w http.ResponseWriter, r *http.Request, op string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.cfg.Now()
	e.settle(now)
	if aerr := e.authenticate(r, now); aerr != nil {
		w.Header().Set("WWW-Authenticate", `Bearer authorization_uri="https://login.microsoftonline.com/`+e.cfg.TenantID+`", error="invalid_token", error_description="`+aerr.Message+`"`)
		writeARMError(w, aerr)
		return
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		e.reads++
		w.Header().Set("x-ms-ratelimit-remaining-subscription-reads", strconv.Itoa(max(0, 12000-e.reads%12000)))
	} else {
		e.writes++
		e.generation++
		w.Header().Set("x-ms-ratelimit-remaining-subscription-writes", strconv.Itoa(max(0, 1200-e.writes%1200)))
	}
	w.Header().Set("x-ms-request-id", e.newGUID())
	p, err := parseARMPath(r.URL.Path)
	if err != nil {
		writeARMError(w, &armError{Status: http.StatusBadRequest, Code: "InvalidRequestUri", Message: err.Error()})
		return
	}
	if !strings.EqualFold(p.Sub, e.cfg.SubscriptionID) {
		writeARMError(w, &armError{Status: http.StatusNotFound, Code: "SubscriptionNotFound", Message: fmt.Sprintf("The subscription '%s' could not be found.", p.Sub)})
		return
	}
	q := r.URL.Query()
	if q.Get("api-version") == "" {
		writeARMError(w, &armError{Status: http.StatusBadRequest, Code: "MissingApiVersionParameter", Message: "The api-version query parameter (?api-version=) is required for all requests."})
		return
	}
	if len(p.Types) == 0 {
		e.serveProvider(w, r, p)
		return
	}
	if isAsyncOpPath(p) {
		e.serveAsyncOp(w, p)
		return
	}
	k, act, ok := e.kinds.resolve(p)
	if !ok {
		writeARMError(w, &armError{Status: http.StatusNotFound, Code: "InvalidResourceType",
			Message: fmt.Sprintf("The resource type '%s' could not be found in the namespace '%s' for api version '%s'.", strings.Join(p.Types, "/"), p.NS, q.Get("api-version"))})
		return
	}
	if !slices.Contains(k.apiVersions, q.Get("api-version")) {
		writeARMError(w, &armError{Status: http.StatusBadRequest, Code: "NoRegisteredProviderFound",
			Message: fmt.Sprintf("No registered resource provider found for location '%s' and API version '%s' for type '%s'. The supported api-versions are '%s'. The supported locations are '%s'.",
				e.cfg.Location, q.Get("api-version"), k.typ, strings.Join(k.apiVersions, ", "), e.cfg.Location)})
		return
	}
	if p.RG != "" && e.groups[strings.ToLower(p.RG)] == "" {
		writeARMError(w, errGroupNotFound(p.RG))
		return
	}
	if p.RG != "" {
		p.RG = e.groups[strings.ToLower(p.RG)]
	}
	switch {
	case act != nil:
		itemPath := p
		itemPath.Types = p.Types[:len(p.Types)-1]
		o := e.objectAt(k, itemPath)
		if o == nil {
			if k.notFound != nil {
				writeARMError(w, k.notFound(e, itemPath))
				return
			}
			writeARMError(w, errResourceNotFound(k, itemPath))
			return
		}
		if !strings.EqualFold(r.Method, act.method) {
			writeARMError(w, &armError{Status: http.StatusMethodNotAllowed, Code: "MethodNotAllowed", Message: "The requested resource does not support http method '" + r.Method + "'."})
			return
		}
		act.serve(e, w, r, o)
	case p.isCollection():
		if r.Method != http.MethodGet {
			writeARMError(w, &armError{Status: http.StatusMethodNotAllowed, Code: "MethodNotAllowed", Message: "The requested resource does not support http method '" + r.Method + "'."})
			return
		}
		e.serveList(w, r, k, p)
	case r.Method == http.MethodGet:
		o := e.objectAt(k, p)
		if o == nil {
			if k.notFound != nil {
				writeARMError(w, k.notFound(e, p))
				return
			}
			writeARMError(w, errResourceNotFound(k, p))
			return
		}
		body, aerr := e.render(o, q)
		if aerr != nil {
			writeARMError(w, aerr)
			return
		}
		writeARMJSON(w, http.StatusOK, body)
	case (r.Method == http.MethodPut || r.Method == http.MethodPatch) && k.update != nil:
		e.serveUpdate(w, r, k, p)
	case r.Method == http.MethodPut && !k.readOnly:
		e.servePut(w, r, k, p)
	case r.Method == http.MethodDelete && !k.readOnly:
		e.serveDelete(w, r, k, p)
	default:
		writeARMError(w, &armError{Status: http.StatusMethodNotAllowed, Code: "MethodNotAllowed", Message: "The requested resource does not support http method '" + r.Method + "'."})
	}
}

// render is the object as a GET shows it.
func (e *Emulator) render(o *object, q url.Values) (map[string]any, *armError) {
	if o.kind.view != nil {
		return o.kind.view(e, o, q)
	}
	return o.body, nil
}

func (e *Emulator) serveList(w http.ResponseWriter, r *http.Request, k *kind, p armPath) {
	q := r.URL.Query()
	var items []map[string]any
	if k.list != nil {
		var aerr *armError
		if items, aerr = k.list(e, p, q); aerr != nil {
			writeARMError(w, aerr)
			return
		}
	} else {
		if p.RG == "" && (len(p.Types) > 1 || !k.listAll) {
			writeARMError(w, &armError{Status: http.StatusNotFound, Code: "InvalidResourceType", Message: "The resource type '" + k.typ + "' cannot be listed at subscription scope."})
			return
		}
		var parent string
		if len(p.Names) > 0 {
			pk := e.kinds.byKey[typeKey(p.NS, p.Types[:len(p.Types)-1])]
			if pk == nil {
				writeARMError(w, &armError{Status: http.StatusNotFound, Code: "InvalidResourceType", Message: "no parent type for " + k.typ})
				return
			}
			parent = strings.ToLower(resourceID(p.Sub, p.RG, pk, p.Names))
			if e.objs[parent] == nil {
				writeARMError(w, errParentNotFound(resourceID(p.Sub, p.RG, pk, p.Names)))
				return
			}
		}
		for _, o := range e.objectsOf(k) {
			if p.RG != "" && !strings.EqualFold(o.rg, p.RG) {
				continue
			}
			if parent != "" && !strings.HasPrefix(strings.ToLower(o.id), parent+"/") {
				continue
			}
			if k.listFilter != nil {
				keep, aerr := k.listFilter(e, o, q)
				if aerr != nil {
					writeARMError(w, aerr)
					return
				}
				if !keep {
					continue
				}
			}
			body, aerr := e.render(o, q)
			if aerr != nil {
				writeARMError(w, aerr)
				return
			}
			items = append(items, body)
		}
	}
	e.writePage(w, r, items)
}

// writePage answers a list with one page of items and a nextLink to the
// rest. The skip token is opaque to clients; here it is the offset.
func (e *Emulator) writePage(w http.ResponseWriter, r *http.Request, items []map[string]any) {
	q := r.URL.Query()
	start := 0
	if tok := q.Get("$skiptoken"); tok != "" {
		n, err := strconv.Atoi(tok)
		if err != nil || n < 0 {
			writeARMError(w, &armError{Status: http.StatusBadRequest, Code: "InvalidSkipToken", Message: "The skip token '" + tok + "' is not valid."})
			return
		}
		start = min(n, len(items))
	}
	end := min(start+e.cfg.PageSize, len(items))
	page := items[start:end]
	if page == nil {
		page = []map[string]any{}
	}
	out := map[string]any{"value": page}
	if end < len(items) {
		q.Set("$skiptoken", strconv.Itoa(end))
		out["nextLink"] = "https://" + r.Host + r.URL.Path + "?" + q.Encode()
	}
	writeARMJSON(w, http.StatusOK, out)
}

// objectsOf lists k's objects in ID order.
func (e *Emulator) objectsOf(k *kind) []*object {
	var out []*object
	for _, o := range e.objs {
		if o.kind == k {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b *object) int { return strings.Compare(strings.ToLower(a.id), strings.ToLower(b.id)) })
	return out
}

// readBody decodes a PUT or PATCH body (none is an empty object), or
// answers ARM's InvalidRequestContent.
func readBody(w http.ResponseWriter, r *http.Request) (map[string]any, bool) {
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeARMError(w, errInvalidContent(err))
		return nil, false
	}
	if body == nil {
		body = map[string]any{}
	}
	return body, true
}

func (e *Emulator) servePut(w http.ResponseWriter, r *http.Request, k *kind, p armPath) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	id := resourceID(p.Sub, p.RG, k, p.Names)
	old := e.lookup(id)
	if old != nil {
		id = old.id
	}
	if aerr := checkPreconditions(r, k, old); aerr != nil {
		writeARMError(w, aerr)
		return
	}
	// A write racing the resource's own deletion: ARM refuses it as a
	// conflicting concurrent request.
	if old != nil && old.pending != nil && old.pending.method == http.MethodDelete {
		writeARMError(w, errConflict())
		return
	}
	if len(p.Names) > 1 {
		pk := e.kinds.byKey[typeKey(p.NS, p.Types[:len(p.Types)-1])]
		parentID := resourceID(p.Sub, p.RG, pk, p.Names[:len(p.Names)-1])
		if e.lookup(parentID) == nil {
			writeARMError(w, errParentNotFound(parentID))
			return
		}
	}
	if aerr := e.checkLocation(k, body); aerr != nil {
		writeARMError(w, aerr)
		return
	}
	c := &putCall{ID: id, Path: p, Body: body, Old: old, Host: r.Host, Method: r.Method}
	if k.put != nil {
		if aerr := k.put(e, c); aerr != nil {
			writeARMError(w, aerr)
			return
		}
	}
	o := old
	if o == nil {
		o = &object{kind: k, id: id, rg: p.RG, names: slices.Clone(p.Names)}
		e.objs[strings.ToLower(id)] = o
	}
	body["id"], body["name"], body["type"] = id, o.name(), k.fullType()
	if k.etag {
		body["etag"] = e.newETag()
	}
	o.body = body
	status := http.StatusOK
	if old == nil {
		status = http.StatusCreated
	}
	e.answerWrite(w, r, o, status)
}

// checkLocation applies a tracked resource's location rules to a PUT
// body: required, and the emulated region.
func (e *Emulator) checkLocation(k *kind, body map[string]any) *armError {
	if !k.tracked {
		return nil
	}
	loc, _ := body["location"].(string)
	switch {
	case loc == "":
		return &armError{Status: http.StatusBadRequest, Code: "LocationRequired", Message: "The location property is required for this definition."}
	case !strings.EqualFold(strings.ReplaceAll(loc, " ", ""), e.cfg.Location):
		return &armError{Status: http.StatusBadRequest, Code: "LocationNotAvailableForResourceType",
			Message: fmt.Sprintf("The provided location '%s' is not available for resource type '%s'. List of available regions for the resource type is '%s'.", loc, k.fullType(), e.cfg.Location)}
	}
	body["location"] = e.cfg.Location
	return nil
}

// answerWrite answers a PUT or PATCH that has been applied to o: for a
// long-running kind, an operation that completes after the operation
// delay, with provisioningState Updating until then.
func (e *Emulator) answerWrite(w http.ResponseWriter, r *http.Request, o *object, status int) {
	k := o.kind
	if k.lro {
		op := e.startOp(o, http.MethodPut, r)
		propsOf(o.body)["provisioningState"] = "Updating"
		if op.done {
			propsOf(o.body)["provisioningState"] = "Succeeded"
		}
		w.Header().Set("Azure-AsyncOperation", op.url(r.Host, "operations"))
		// Retry-After only while there is something to wait for: azcore
		// sleeps it before its first poll.
		if !op.done {
			w.Header().Set("Retry-After", strconv.Itoa(e.cfg.RetryAfter))
		}
		// The answer says the operation is under way even when it will be
		// done at the first poll, as the network and compute providers'
		// answers do.
		rendered, aerr := e.render(o, url.Values{})
		if aerr != nil {
			writeARMError(w, aerr)
			return
		}
		out := cloneJSON(rendered)
		propsOf(out)["provisioningState"] = "Updating"
		writeARMJSON(w, status, out)
		return
	}
	propsOf(o.body)["provisioningState"] = "Succeeded"
	rendered, aerr := e.render(o, url.Values{})
	if aerr != nil {
		writeARMError(w, aerr)
		return
	}
	writeARMJSON(w, status, rendered)
}

// serveUpdate serves a PUT or PATCH of a kind with an update hook.
func (e *Emulator) serveUpdate(w http.ResponseWriter, r *http.Request, k *kind, p armPath) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	o := e.objectAt(k, p)
	if aerr := checkPreconditions(r, k, o); aerr != nil {
		writeARMError(w, aerr)
		return
	}
	if o != nil && o.pending != nil && o.pending.method == http.MethodDelete {
		writeARMError(w, errConflict())
		return
	}
	if r.Method == http.MethodPut {
		if aerr := e.checkLocation(k, body); aerr != nil {
			writeARMError(w, aerr)
			return
		}
	}
	id := resourceID(p.Sub, p.RG, k, p.Names)
	if o != nil {
		id = o.id
	}
	changed, aerr := k.update(e, &putCall{ID: id, Path: p, Body: body, Old: o, Host: r.Host, Method: r.Method})
	if aerr != nil {
		writeARMError(w, aerr)
		return
	}
	if o == nil {
		// A kind that can be created through ARM (availability sets) has
		// its hook store the new object; one whose hook made nothing cannot
		// be created here. Compute answers a create with 200 as it does an
		// update (AvailabilitySets_CreateOrUpdate knows no 201).
		if o = e.objectAt(k, p); o == nil {
			writeARMError(w, errResourceNotFound(k, p))
			return
		}
	}
	if changed {
		e.renewETag(o)
	}
	if etag, ok := o.body["etag"].(string); ok && k.etag {
		w.Header().Set("ETag", etag)
	}
	e.answerWrite(w, r, o, http.StatusOK)
}

func (e *Emulator) serveDelete(w http.ResponseWriter, r *http.Request, k *kind, p armPath) {
	o := e.objectAt(k, p)
	if o == nil {
		// ARM answers a DELETE of a resource that does not exist with 204.
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if aerr := checkPreconditions(r, k, o); aerr != nil {
		writeARMError(w, aerr)
		return
	}
	if o.pending != nil && o.pending.method == http.MethodDelete {
		e.accepted(w, r, o.pending)
		return
	}
	if k.del != nil {
		if aerr := k.del(e, o); aerr != nil {
			writeARMError(w, aerr)
			return
		}
	}
	if !k.lro {
		e.remove(o)
		w.WriteHeader(http.StatusOK)
		return
	}
	op := e.startOp(o, http.MethodDelete, r)
	if op.done {
		e.remove(o)
	} else {
		o.props()["provisioningState"] = "Deleting"
	}
	e.accepted(w, r, op)
}

// accepted answers 202 for an operation that goes on after the answer (a
// DELETE, a POST action), with both polling headers.
func (e *Emulator) accepted(w http.ResponseWriter, r *http.Request, op *asyncOp) {
	w.Header().Set("Azure-AsyncOperation", op.url(r.Host, "operations"))
	w.Header().Set("Location", op.url(r.Host, "operationResults"))
	if !op.done {
		w.Header().Set("Retry-After", strconv.Itoa(e.cfg.RetryAfter))
	}
	w.WriteHeader(http.StatusAccepted)
}

// errConflict is ARM's answer to a request that races another on the
// same resource.
func errConflict() *armError {
	return &armError{Status: http.StatusConflict, Code: "Conflict", Message: "The request failed due to conflict with a concurrent request."}
}

// checkPreconditions applies If-Match and If-None-Match.
func checkPreconditions(r *http.Request, k *kind, o *object) *armError {
	fail := func(header, sent string) *armError {
		if k.preconditionFailed == nil {
			return errPrecondition()
		}
		have := ""
		if o != nil {
			have, _ = o.body["etag"].(string)
		}
		return k.preconditionFailed(header, sent, have)
	}
	if m := r.Header.Get("If-Match"); m != "" {
		switch {
		case o == nil:
			return fail("if-match", m)
		case m == "*":
		case !k.etag || o.body["etag"] != m:
			return fail("if-match", m)
		}
	}
	if m := r.Header.Get("If-None-Match"); m == "*" && o != nil {
		return fail("if-none-match", m)
	}
	return nil
}

// remove deletes o and everything nested under it.
func (e *Emulator) remove(o *object) {
	e.generation++
	prefix := strings.ToLower(o.id) + "/"
	for key, child := range e.objs {
		if strings.HasPrefix(key, prefix) {
			delete(e.objs, key)
			if child.kind.removed != nil {
				child.kind.removed(e, child)
			}
		}
	}
	delete(e.objs, strings.ToLower(o.id))
	if o.kind.removed != nil {
		o.kind.removed(e, o)
	}
}

// asyncOp is a long-running operation.
type asyncOp struct {
	id         string
	ns         string
	apiVersion string
	method     string
	// obj is the resource the operation was called on: its subscription
	// and location spell the operation's URLs.
	obj *object
	// also are further resources the operation works on (the instances
	// of a scale set's UpdateInstances): each is Updating until the
	// operation completes, unless a later operation took it over.
	also       []*object
	start, due time.Time
	done       bool
}

func (op *asyncOp) url(host, kind string) string {
	return "https://" + host + "/subscriptions/" + op.obj.idSub() + "/providers/" + op.ns + "/locations/" + locationOf(op.obj) + "/" + kind + "/" + op.id + "?api-version=" + op.apiVersion
}

func (o *object) idSub() string {
	parts := strings.Split(o.id, "/")
	return parts[2]
}

func locationOf(o *object) string {
	if loc, ok := o.body["location"].(string); ok && loc != "" {
		return loc
	}
	return DefaultLocation
}

// startOp begins a long-running operation on o, done at once when the
// operation delay is zero.
func (e *Emulator) startOp(o *object, method string, r *http.Request) *asyncOp {
	now := e.cfg.Now()
	op := &asyncOp{id: e.newGUID(), ns: o.kind.ns, apiVersion: r.URL.Query().Get("api-version"), method: method, obj: o, start: now, due: now.Add(e.opDelay)}
	op.done = e.opDelay <= 0
	e.ops[op.id] = op
	o.pending = op
	if op.done {
		o.pending = nil
	}
	return op
}

// settle completes the operations that are due.
func (e *Emulator) settle(now time.Time) {
	for _, op := range e.ops {
		if op.done || now.Before(op.due) {
			continue
		}
		op.done = true
		for _, x := range op.also {
			if x.pending == op {
				x.pending = nil
				x.props()["provisioningState"] = "Succeeded"
			}
		}
		o := op.obj
		if o.pending != op {
			continue
		}
		o.pending = nil
		if op.method == http.MethodDelete {
			if e.objs[strings.ToLower(o.id)] == o {
				e.remove(o)
			}
			continue
		}
		o.props()["provisioningState"] = "Succeeded"
	}
	// Forget operations long done, so a long run does not grow without
	// bound; clients poll within seconds.
	for id, op := range e.ops {
		if op.done && now.Sub(op.due) > 10*time.Minute {
			delete(e.ops, id)
		}
	}
}

func (e *Emulator) serveAsyncOp(w http.ResponseWriter, p armPath) {
	op := e.ops[p.Names[1]]
	if op == nil {
		writeARMError(w, &armError{Status: http.StatusNotFound, Code: "NotFound", Message: "The operation '" + p.Names[1] + "' was not found."})
		return
	}
	if strings.EqualFold(p.Types[1], "operationResults") {
		if !op.done {
			w.Header().Set("Retry-After", strconv.Itoa(e.cfg.RetryAfter))
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	out := map[string]any{"name": op.id, "startTime": op.start.UTC().Format(time.RFC3339Nano)}
	if op.done {
		out["status"] = "Succeeded"
		out["endTime"] = op.due.UTC().Format(time.RFC3339Nano)
	} else {
		out["status"] = "InProgress"
		w.Header().Set("Retry-After", strconv.Itoa(e.cfg.RetryAfter))
	}
	writeARMJSON(w, http.StatusOK, out)
}

// newGUID returns a deterministic GUID-shaped ID.
func (e *Emulator) newGUID() string {
	e.seq++
	n := e.cfg.Seed*1_000_003 + e.seq
	return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", uint32(n*2654435761), uint16(n>>3), uint16(n)&0xfff, uint16(n>>7)&0xfff, n)
}

// newETag returns a fresh weak ETag, as the network provider writes them.
func (e *Emulator) newETag() string { return `W/"` + e.newGUID() + `"` }

// firstETag is the ETag a new resource of k gets.
func (e *Emulator) firstETag(k *kind) string {
	if k.etagSeq {
		return strconv.Quote("1")
	}
	return e.newETag()
}

// renewETag gives o its next ETag, as its provider spells them: the
// counter moved on, or a fresh weak GUID.
func (e *Emulator) renewETag(o *object) {
	if !o.kind.etag {
		return
	}
	if !o.kind.etagSeq {
		o.body["etag"] = e.newETag()
		return
	}
	cur, _ := o.body["etag"].(string)
	n, _ := strconv.Atoi(strings.Trim(cur, `"`))
	o.body["etag"] = strconv.Quote(strconv.Itoa(n + 1))
}

// cloneJSON deep-copies a JSON object.
func cloneJSON(m map[string]any) map[string]any {
	b, _ := json.Marshal(m)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

// decodeAs converts a JSON object to a typed model (an SDK type with its
// own UnmarshalJSON), for hooks that prefer fields to map keys.
func decodeAs[T any](m map[string]any) (T, error) {
	var out T
	b, err := json.Marshal(m)
	if err != nil {
		return out, err
	}
	err = json.Unmarshal(b, &out)
	return out, err
}

// encodeJSON converts a typed model back to a JSON object.
func encodeJSON(v any) map[string]any {
	b, _ := json.Marshal(v)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

// insert stores a new object of k made by the emulator itself (the
// fixture, the admin API), with no hooks run: the caller builds a body
// as the provider would have completed it.
func (e *Emulator) insert(k *kind, rg string, names []string, body map[string]any) *object {
	e.generation++
	id := resourceID(e.cfg.SubscriptionID, rg, k, names)
	o := &object{kind: k, id: id, rg: rg, names: slices.Clone(names), body: body}
	body["id"], body["name"], body["type"] = id, o.name(), k.fullType()
	if k.tracked && body["location"] == nil {
		body["location"] = e.cfg.Location
	}
	if k.etag {
		body["etag"] = e.firstETag(k)
	}
	if _, ok := o.props()["provisioningState"]; !ok {
		o.props()["provisioningState"] = "Succeeded"
	}
	e.objs[strings.ToLower(id)] = o
	return o
}

// kindOf returns the registered kind for a namespace and type path
// ("Microsoft.Network", "loadBalancers"); it panics on a typo.
func (e *Emulator) kindOf(ns, typ string) *kind {
	k := e.kinds.byKey[typeKey(ns, strings.Split(typ, "/"))]
	if k == nil {
		panic("unknown kind " + ns + "/" + typ)
	}
	return k
}

// addGroup creates a resource group.
func (e *Emulator) addGroup(name string) { e.groups[strings.ToLower(name)] = name }
