package openstack

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Nova (compute API v2.1): version discovery, microversion negotiation,
// routing and what the servers and flavors handlers share (query
// validation, links, pagination). The emulated Nova is 2024.1 (Caracal):
// microversions 2.1 to 2.96. The caller is a project member, not an
// admin, so admin-only fields and filters are absent, as they are for a
// CCM's credentials.

const (
	novaPrefix    = "/compute"
	novaPrefixV21 = "/v2.1"
	novaOp        = "nova:"

	opNovaVersions      = novaOp + "GetVersions"
	opNovaVersion       = novaOp + "GetVersion"
	opListServers       = novaOp + "ListServers"
	opListServersDetail = novaOp + "ListServersDetail"
	opGetServer         = novaOp + "GetServer"
	opDeleteServer      = novaOp + "DeleteServer"
	opStartServer       = novaOp + "StartServer"
	opStopServer        = novaOp + "StopServer"
	opServerAction      = novaOp + "ServerAction"
	opListFlavors       = novaOp + "ListFlavors"
	opListFlavorsDetail = novaOp + "ListFlavorsDetail"
	opGetFlavor         = novaOp + "GetFlavor"
	opNovaUnsupported   = novaOp + "Unsupported"
)

func init() {
	registerMutating(opDeleteServer, opStartServer, opStopServer, opServerAction)
}

// --- microversions ---

type microversion struct{ major, minor int }

var (
	novaMinVersion = microversion{2, 1}
	novaMaxVersion = microversion{2, 96}
)

func (v microversion) String() string { return fmt.Sprintf("%d.%d", v.major, v.minor) }

func (v microversion) less(o microversion) bool {
	return v.major < o.major || (v.major == o.major && v.minor < o.minor)
}

// atLeast reports v >= "X.Y"; it panics on a malformed constant.
func (v microversion) atLeast(s string) bool {
	o, ok := parseMicroversion(s)
	if !ok {
		panic("openstack: bad microversion constant " + s)
	}
	return !v.less(o)
}

var microversionPattern = regexp.MustCompile(`^([1-9]\d*)\.([1-9]\d*|0)$`)

func parseMicroversion(s string) (microversion, bool) {
	m := microversionPattern.FindStringSubmatch(s)
	if m == nil {
		return microversion{}, false
	}
	major, err1 := strconv.Atoi(m[1])
	minor, err2 := strconv.Atoi(m[2])
	if err1 != nil || err2 != nil {
		return microversion{}, false
	}
	return microversion{major, minor}, true
}

// requestedMicroversion reads the version the way microversion_parse
// does for Nova: "OpenStack-API-Version: compute X.Y" (among other
// services' entries) wins, then the legacy X-OpenStack-Nova-API-Version.
// "" means none was asked for.
func requestedMicroversion(h http.Header) string {
	for _, v := range h.Values("OpenStack-API-Version") {
		for _, entry := range strings.Split(v, ",") {
			fields := strings.Fields(entry)
			if len(fields) == 2 && strings.EqualFold(fields[0], "compute") {
				return fields[1]
			}
		}
	}
	return strings.TrimSpace(h.Get("X-OpenStack-Nova-API-Version"))
}

// negotiateMicroversion picks the request's version: the minimum when
// none is asked for, the maximum for "latest"; a malformed one is a 400
// and one out of range a 406 (which still echoes the version asked for,
// as Nova's does).
func negotiateMicroversion(h http.Header) (microversion, bool, *apiError) {
	s := requestedMicroversion(h)
	switch {
	case s == "":
		return novaMinVersion, true, nil
	case strings.EqualFold(s, "latest"):
		return novaMaxVersion, true, nil
	}
	v, ok := parseMicroversion(s)
	if !ok {
		return microversion{}, false, novaFault(http.StatusBadRequest,
			"API Version String "+s+" is of invalid format. Must be of format MajorNum.MinorNum.")
	}
	if v.less(novaMinVersion) || novaMaxVersion.less(v) {
		return v, true, novaFault(http.StatusNotAcceptable, fmt.Sprintf(
			"Version %s is not supported by the API. Minimum is %s and maximum is %s.", v, novaMinVersion, novaMaxVersion))
	}
	return v, true, nil
}

// setMicroversionHeaders echoes the version as Nova does on every answer
// of the versioned API, errors included.
func setMicroversionHeaders(h http.Header, v microversion) {
	h.Set("OpenStack-API-Version", "compute "+v.String())
	h.Set("X-OpenStack-Nova-API-Version", v.String())
	h.Add("Vary", "OpenStack-API-Version")
	h.Add("Vary", "X-OpenStack-Nova-API-Version")
}

// --- the service ---

type novaService struct{ e *Emulator }

func (novaService) name() string   { return "nova" }
func (novaService) prefix() string { return novaPrefix }

// novaCall is one request to the versioned API.
type novaCall struct {
	r       *http.Request
	ver     microversion
	tok     *token
	base    string // scheme://host
	query   query
	id      string // the {id} path parameter
	appURL  string // the API root, base + "/compute/v2.1"
	bookURL string // the version-less root bookmark links use
}

func (c *novaCall) at(v string) bool { return c.ver.atLeast(v) }

// novaResponse is a handler's success.
type novaResponse struct {
	status int
	body   any // nil: no body
}

type novaHandler func(e *Emulator, c *novaCall) (*novaResponse, *apiError)

func (n novaService) route(r *http.Request, rest string) route {
	e := n.e
	api := func(op string, h novaHandler, id string) route {
		return route{op: op, serve: func(w http.ResponseWriter, r *http.Request) { e.serveNova(w, r, h, id, false) }}
	}
	notFound := func(op string) route {
		return api(op, func(*Emulator, *novaCall) (*novaResponse, *apiError) {
			return nil, novaFault(http.StatusNotFound, msgNotFound)
		}, "")
	}
	get := r.Method == http.MethodGet || r.Method == http.MethodHead
	switch rest {
	case "", "/":
		if !get {
			return notFound(opNovaUnsupported)
		}
		return route{op: opNovaVersions, public: true, serve: e.novaVersions}
	case novaPrefixV21, novaPrefixV21 + "/":
		if !get {
			return notFound(opNovaUnsupported)
		}
		return route{op: opNovaVersion, public: true, serve: func(w http.ResponseWriter, r *http.Request) {
			e.serveNova(w, r, (*Emulator).novaVersion, "", true)
		}}
	}
	sub, ok := strings.CutPrefix(rest, novaPrefixV21+"/")
	if !ok {
		if strings.HasPrefix(rest, "/v2/") || rest == "/v2" {
			return notFound(opNovaUnsupported) // the legacy v2 API is not emulated
		}
		// Nova's root app answers every other path with its choices.
		return route{op: opNovaVersions, public: true, serve: e.novaChoices}
	}
	parts := strings.Split(sub, "/")
	switch {
	case len(parts) == 1 && parts[0] == "servers" && get:
		return api(opListServers, (*Emulator).listServers, "")
	case len(parts) == 2 && parts[0] == "servers" && parts[1] == "detail" && get:
		return api(opListServersDetail, (*Emulator).listServersDetail, "")
	case len(parts) == 2 && parts[0] == "servers" && parts[1] != "" && get:
		return api(opGetServer, (*Emulator).getServer, parts[1])
	case len(parts) == 2 && parts[0] == "servers" && parts[1] != "" && r.Method == http.MethodDelete:
		return api(opDeleteServer, (*Emulator).deleteServer, parts[1])
	case len(parts) == 3 && parts[0] == "servers" && parts[1] != "" && parts[2] == "action" && r.Method == http.MethodPost:
		op := opServerAction
		switch actionKey(r) {
		case "os-stop":
			op = opStopServer
		case "os-start":
			op = opStartServer
		}
		return api(op, (*Emulator).serverAction, parts[1])
	case len(parts) == 1 && parts[0] == "flavors" && get:
		return api(opListFlavors, (*Emulator).listFlavors, "")
	case len(parts) == 2 && parts[0] == "flavors" && parts[1] == "detail" && get:
		return api(opListFlavorsDetail, (*Emulator).listFlavorsDetail, "")
	case len(parts) == 2 && parts[0] == "flavors" && parts[1] != "" && get:
		return api(opGetFlavor, (*Emulator).getFlavor, parts[1])
	}
	return notFound(opNovaUnsupported)
}

// writeThrottle answers as Nova's Fault does for a 429 (or, with
// LegacyOverLimit, the 413 of Nova's old rate-limiting middleware): an
// overLimit body carrying the Retry-After value.
func (n novaService) writeThrottle(w http.ResponseWriter, r *http.Request, rt route) {
	status := http.StatusTooManyRequests
	if n.e.cfg.LegacyOverLimit {
		status = http.StatusRequestEntityTooLarge
	}
	retry := strconv.Itoa(n.e.cfg.RetryAfter)
	w.Header().Set("Retry-After", retry)
	n.writeFault(w, r, rt, &apiError{status: status, body: map[string]any{"overLimit": map[string]any{
		"code": status, "message": msgRateLimited, "retryAfter": retry,
	}}})
}

// writeUnauthenticated is keystonemiddleware's 401.
func (novaService) writeUnauthenticated(w http.ResponseWriter, r *http.Request) {
	writeAuthRequired(w, r)
}

func (n novaService) writeServerError(w http.ResponseWriter, r *http.Request, rt route) {
	n.writeFault(w, r, rt, novaFault(http.StatusInternalServerError, msgComputeFault))
}

// writeFault adds the microversion headers when the request's version
// is valid and the route is the versioned API.
func (n novaService) writeFault(w http.ResponseWriter, r *http.Request, rt route, err *apiError) {
	if rt.op != opNovaVersions {
		if v, ok, _ := negotiateMicroversion(r.Header); ok {
			setMicroversionHeaders(w.Header(), v)
		}
	}
	writeError(w, err)
}

// serveNova runs a versioned-API handler: negotiates the microversion,
// checks the token's scope, runs h under the lock and writes the answer
// with the version headers. Serve has already refused calls without a
// valid token unless public.
func (e *Emulator) serveNova(w http.ResponseWriter, r *http.Request, h novaHandler, id string, public bool) {
	v, echo, verr := negotiateMicroversion(r.Header)
	if echo {
		setMicroversionHeaders(w.Header(), v)
	}
	if verr != nil {
		writeError(w, verr)
		return
	}
	q, qerr := parseQuery(r.URL.RawQuery)
	if qerr != nil {
		writeError(w, novaFault(http.StatusBadRequest, qerr.Error()))
		return
	}
	base := baseURL(r)
	c := &novaCall{
		r: r, ver: v, base: base, query: q, id: id,
		appURL: base + novaPrefix + novaPrefixV21, bookURL: base + novaPrefix,
	}
	e.mu.Lock()
	var (
		resp *novaResponse
		err  *apiError
	)
	c.tok, _ = e.validToken(r.Header.Get("X-Auth-Token"))
	switch {
	case !public && c.tok == nil:
		// The token expired between Serve's check and now.
		err = keystoneError(http.StatusUnauthorized, msgUnauthorized)
	case !public && c.tok.projectID == "":
		// Nova's policies need a project: an unscoped token can do
		// nothing.
		err = novaFault(http.StatusForbidden, "Policy doesn't allow "+policyOf(r)+" to be performed.")
	default:
		resp, err = h(e, c)
	}
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

// policyOf names the Nova policy rule a request is checked against, for
// the 403 an unscoped token gets.
func policyOf(r *http.Request) string {
	p := r.URL.Path
	switch {
	case strings.HasSuffix(p, "/servers/detail"):
		return "os_compute_api:servers:detail"
	case strings.HasSuffix(p, "/servers"):
		return "os_compute_api:servers:index"
	case strings.Contains(p, "/servers/") && r.Method == http.MethodDelete:
		return "os_compute_api:servers:delete"
	case strings.Contains(p, "/servers/") && strings.HasSuffix(p, "/action"):
		return "os_compute_api:servers:" + strings.TrimPrefix(actionKey(r), "os-")
	case strings.Contains(p, "/servers/"):
		return "os_compute_api:servers:show"
	}
	return "os_compute_api:os-flavor-manage"
}

// --- version documents ---

const (
	novaV21Updated  = "2013-07-23T11:33:21Z"
	novaV20Updated  = "2011-01-21T11:33:21Z"
	novaDescribedBy = "http://docs.openstack.org/"
)

func novaMediaTypes(v string) []any {
	return []any{map[string]any{"base": "application/json", "type": "application/vnd.openstack.compute+json;version=" + v}}
}

// novaVersions answers GET /compute/ (no microversion: the root is
// outside microversion control).
func (e *Emulator) novaVersions(w http.ResponseWriter, r *http.Request) {
	root := baseURL(r) + novaPrefix
	writeJSON(w, http.StatusOK, map[string]any{"versions": []any{
		map[string]any{
			"id": "v2.0", "status": "SUPPORTED", "version": "", "min_version": "", "updated": novaV20Updated,
			"links": []any{map[string]any{"rel": "self", "href": root + "/v2/"}},
		},
		map[string]any{
			"id": "v2.1", "status": "CURRENT", "version": novaMaxVersion.String(), "min_version": novaMinVersion.String(),
			"updated": novaV21Updated,
			"links":   []any{map[string]any{"rel": "self", "href": root + "/v2.1/"}},
		},
	}})
}

// novaChoices answers any other path outside the versioned APIs with
// 300 Multiple Choices, as Nova's root application does.
func (e *Emulator) novaChoices(w http.ResponseWriter, r *http.Request) {
	root := baseURL(r) + novaPrefix
	rest := strings.TrimPrefix(r.URL.Path, novaPrefix)
	writeJSON(w, http.StatusMultipleChoices, map[string]any{"choices": []any{
		map[string]any{
			"id": "v2.0", "status": "SUPPORTED", "media-types": novaMediaTypes("2"),
			"links": []any{map[string]any{"rel": "self", "href": root + "/v2" + rest}},
		},
		map[string]any{
			"id": "v2.1", "status": "CURRENT", "media-types": novaMediaTypes("2.1"),
			"links": []any{map[string]any{"rel": "self", "href": root + "/v2.1" + rest}},
		},
	}})
}

// novaVersion answers GET /compute/v2.1/, which gophercloud's
// GetSupportedMicroversions reads; it needs no token.
func (e *Emulator) novaVersion(c *novaCall) (*novaResponse, *apiError) {
	return &novaResponse{status: http.StatusOK, body: map[string]any{"version": map[string]any{
		"id": "v2.1", "status": "CURRENT", "version": novaMaxVersion.String(), "min_version": novaMinVersion.String(),
		"updated": novaV21Updated,
		"links": []any{
			map[string]any{"rel": "self", "href": c.appURL + "/"},
			map[string]any{"rel": "describedby", "type": "text/html", "href": novaDescribedBy},
		},
		"media-types": novaMediaTypes("2.1"),
	}}}, nil
}

// --- query strings ---

type queryParam struct{ key, value string }

// query is a parsed query string in its original order (Nova's error
// messages and next links depend on it).
type query []queryParam

func parseQuery(raw string) (query, error) {
	var q query
	for _, part := range strings.Split(raw, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		key, err := url.QueryUnescape(k)
		if err != nil {
			return nil, fmt.Errorf("Invalid query string: %v", err)
		}
		value, err := url.QueryUnescape(v)
		if err != nil {
			return nil, fmt.Errorf("Invalid query string: %v", err)
		}
		q = append(q, queryParam{key, value})
	}
	return q, nil
}

// last is the value webob's MultiDict gives for key: the last one.
func (q query) last(key string) (string, bool) {
	for i := len(q) - 1; i >= 0; i-- {
		if q[i].key == key {
			return q[i].value, true
		}
	}
	return "", false
}

func (q query) all(key string) []string {
	var out []string
	for _, p := range q {
		if p.key == key {
			out = append(out, p.value)
		}
	}
	return out
}

// keys lists each key once, in first-seen order.
func (q query) keys() []string {
	var out []string
	for _, p := range q {
		if !slices.Contains(out, p.key) {
			out = append(out, p.key)
		}
	}
	return out
}

func (q query) without(drop func(key string) bool) query {
	var out query
	for _, p := range q {
		if !drop(p.key) {
			out = append(out, p)
		}
	}
	return out
}

// paramKind is the JSON-schema type of a Nova query parameter.
type paramKind int

const (
	pString   paramKind = iota // common_query_param: anything
	pRegex                     // common_query_regex_param: a valid regex
	pNonNeg                    // non_negative_integer
	pDateTime                  // format date-time
	pEnum                      // one of enum
)

type paramSpec struct {
	key  string
	kind paramKind
	enum []string
}

// querySchema is a Nova request query schema: the properties in schema
// order, and whether others are refused (additionalProperties false,
// from 2.75) or silently stripped.
type querySchema struct {
	props  []paramSpec
	strict bool
	// underscore keeps "^_" parameters (patternProperties), which the
	// servers API then refuses itself.
	underscore bool
}

func (s querySchema) spec(key string) (paramSpec, bool) {
	for _, p := range s.props {
		if p.key == key {
			return p, true
		}
	}
	return paramSpec{}, false
}

// validate checks q as Nova's query validator does, with its messages,
// and returns q without the parameters the schema strips.
func (s querySchema) validate(q query) (query, *apiError) {
	for _, ps := range s.props {
		for _, v := range q.all(ps.key) {
			if msg := ps.check(v); msg != "" {
				return nil, novaFault(http.StatusBadRequest, fmt.Sprintf(
					"Invalid input for query parameters %s. Value: %s. %s", ps.key, v, msg))
			}
		}
	}
	var extra []string
	for _, k := range q.keys() {
		if _, ok := s.spec(k); ok || (s.underscore && strings.HasPrefix(k, "_")) {
			continue
		}
		extra = append(extra, k)
	}
	if len(extra) == 0 {
		return q, nil
	}
	if s.strict {
		quoted := make([]string, len(extra))
		for i, k := range extra {
			quoted[i] = pyRepr(k)
		}
		verb := "was"
		if len(extra) > 1 {
			verb = "were"
		}
		return nil, novaFault(http.StatusBadRequest, fmt.Sprintf(
			"Additional properties are not allowed (%s %s unexpected)", strings.Join(quoted, ", "), verb))
	}
	return q.without(func(k string) bool { return slices.Contains(extra, k) }), nil
}

func (ps paramSpec) check(v string) string {
	switch ps.kind {
	case pRegex:
		if _, err := regexp.Compile(v); err != nil {
			return pyRepr(v) + " is not a 'regex'"
		}
	case pNonNeg:
		if v == "" {
			return pyRepr(v) + " is too short"
		}
		if strings.Trim(v, "0123456789") != "" {
			return pyRepr(v) + " does not match '^[0-9]*$'"
		}
	case pDateTime:
		if _, ok := parseISOTime(v); !ok {
			return pyRepr(v) + " is not a 'date-time'"
		}
	case pEnum:
		if !slices.Contains(ps.enum, v) {
			quoted := make([]string, len(ps.enum))
			for i, e := range ps.enum {
				quoted[i] = pyRepr(e)
			}
			return pyRepr(v) + " is not one of [" + strings.Join(quoted, ", ") + "]"
		}
	}
	return ""
}

// pyRepr quotes s as Python's repr does for a plain string.
func pyRepr(s string) string {
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		return `"` + s + `"`
	}
	return "'" + strings.ReplaceAll(s, "'", `\'`) + "'"
}

// parseISOTime accepts what oslo's parse_isotime (iso8601) does for the
// usual forms.
func parseISOTime(s string) (time.Time, bool) {
	for _, layout := range []string{
		time.RFC3339Nano, "2006-01-02T15:04:05Z0700", "2006-01-02T15:04:05.999999999",
		"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02", "2006-01-02 15:04:05Z07:00", "2006-01-02 15:04:05",
	} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// --- pagination and links ---

// limitAndMarker reads limit and marker as common.get_limit_and_marker
// does: the last value of each, the limit capped at max_limit.
func (e *Emulator) limitAndMarker(q query) (limit int, marker string, hasMarker bool) {
	limit = e.cfg.MaxLimit
	if v, ok := q.last("limit"); ok {
		if n, err := strconv.Atoi(v); err == nil && n < limit {
			limit = n
		}
	}
	marker, hasMarker = q.last("marker")
	return limit, marker, hasMarker
}

// collectionLinks is Nova's _get_collection_links: a "next" link when
// the page is as long as the limit asked for (or max_limit), pointing at
// the collection with the request's parameters, sorted, and the last
// item as the marker.
func (e *Emulator) collectionLinks(c *novaCall, q query, n int, lastID, collection string) []any {
	maxItems := e.cfg.MaxLimit
	if v, ok := q.last("limit"); ok {
		if l, err := strconv.Atoi(v); err == nil && l < maxItems {
			maxItems = l
		}
	}
	if maxItems == 0 || maxItems != n {
		return nil
	}
	return []any{map[string]any{"rel": "next", "href": c.appURL + "/" + collection + "?" + nextQuery(q, lastID)}}
}

// nextQuery renders collections.OrderedDict(sorted(params.items())) with
// the marker replaced or appended, urlencoded like Python's urlencode.
func nextQuery(q query, marker string) string {
	pairs := slices.Clone(q)
	sort.SliceStable(pairs, func(i, j int) bool {
		if pairs[i].key != pairs[j].key {
			return pairs[i].key < pairs[j].key
		}
		return pairs[i].value < pairs[j].value
	})
	// The OrderedDict keeps each key at its first position with its last
	// (largest) value.
	var keys []string
	vals := map[string]string{}
	for _, p := range pairs {
		if _, ok := vals[p.key]; !ok {
			keys = append(keys, p.key)
		}
		vals[p.key] = p.value
	}
	if _, ok := vals["marker"]; !ok {
		keys = append(keys, "marker")
	}
	vals["marker"] = marker
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = url.QueryEscape(k) + "=" + url.QueryEscape(vals[k])
	}
	return strings.Join(parts, "&")
}

// links are a resource's self and bookmark links.
func links(c *novaCall, collection, id string) []any {
	return []any{
		map[string]any{"rel": "self", "href": c.appURL + "/" + collection + "/" + id},
		map[string]any{"rel": "bookmark", "href": c.bookURL + "/" + collection + "/" + id},
	}
}

// novaTime is Nova's isotime: seconds and a Z.
func novaTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

// novaNaiveTime is how Nova serialises OS-SRV-USG timestamps: a naive
// datetime with microseconds and no zone.
func novaNaiveTime(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UTC().Format("2006-01-02T15:04:05.000000")
}
