package openstack

import (
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

// Octavia (load-balancing API v2), mounted at /load-balancer: the
// version document, providers, load balancers with their listeners,
// pools, members and health monitors, their provisioning lifecycle and
// status tree, as Octavia's API (octavia/api/v2/controllers) and its
// amphora and OVN provider drivers answer a project member. The v2 API
// is served under /v2 and /v2.0, with or without the legacy /lbaas
// segment, as Octavia's root controller does; gophercloud calls
// /v2.0/lbaas/... .
//
// Provisioning is asynchronous in Octavia: a write answers at once with
// the objects PENDING_*, and the controller worker makes them ACTIVE
// (or removes them) later. The emulator settles that lazily from the
// clock, as the AWS emulator does: every call first completes the
// operations whose ProvisioningDelay has passed (octavia_status.go).

const octaviaPrefix = "/load-balancer"

const (
	octaviaOp = "octavia:"

	opOctaviaVersions    = octaviaOp + "ListVersions"
	opOctaviaVersion     = octaviaOp + "GetVersion"
	opOctaviaUnsupported = octaviaOp + "Unsupported"

	opListProviders = octaviaOp + "ListProviders"

	opCreateLoadBalancer    = octaviaOp + "CreateLoadBalancer"
	opListLoadBalancers     = octaviaOp + "ListLoadBalancers"
	opGetLoadBalancer       = octaviaOp + "GetLoadBalancer"
	opUpdateLoadBalancer    = octaviaOp + "UpdateLoadBalancer"
	opDeleteLoadBalancer    = octaviaOp + "DeleteLoadBalancer"
	opGetLoadBalancerStatus = octaviaOp + "GetLoadBalancerStatus"
	opGetLoadBalancerStats  = octaviaOp + "GetLoadBalancerStats"
	opFailoverLoadBalancer  = octaviaOp + "FailoverLoadBalancer"

	opCreateListener   = octaviaOp + "CreateListener"
	opListListeners    = octaviaOp + "ListListeners"
	opGetListener      = octaviaOp + "GetListener"
	opUpdateListener   = octaviaOp + "UpdateListener"
	opDeleteListener   = octaviaOp + "DeleteListener"
	opGetListenerStats = octaviaOp + "GetListenerStats"

	opCreatePool = octaviaOp + "CreatePool"
	opListPools  = octaviaOp + "ListPools"
	opGetPool    = octaviaOp + "GetPool"
	opUpdatePool = octaviaOp + "UpdatePool"
	opDeletePool = octaviaOp + "DeletePool"

	opCreateMember       = octaviaOp + "CreateMember"
	opListMembers        = octaviaOp + "ListMembers"
	opGetMember          = octaviaOp + "GetMember"
	opUpdateMember       = octaviaOp + "UpdateMember"
	opDeleteMember       = octaviaOp + "DeleteMember"
	opBatchUpdateMembers = octaviaOp + "BatchUpdateMembers"

	opListLBFlavors         = octaviaOp + "ListFlavors"
	opGetLBFlavor           = octaviaOp + "GetFlavor"
	opListAvailabilityZones = octaviaOp + "ListAvailabilityZones"
	opGetAvailabilityZone   = octaviaOp + "GetAvailabilityZone"
	// opOctaviaOperatorOnly is a write of a flavor or availability zone,
	// or any call on their profiles: a member gets 403.
	opOctaviaOperatorOnly = octaviaOp + "OperatorOnly"

	opCreateHealthMonitor = octaviaOp + "CreateHealthMonitor"
	opListHealthMonitors  = octaviaOp + "ListHealthMonitors"
	opGetHealthMonitor    = octaviaOp + "GetHealthMonitor"
	opUpdateHealthMonitor = octaviaOp + "UpdateHealthMonitor"
	opDeleteHealthMonitor = octaviaOp + "DeleteHealthMonitor"
)

func init() {
	registerMutating(
		opCreateLoadBalancer, opUpdateLoadBalancer, opDeleteLoadBalancer, opFailoverLoadBalancer,
		opCreateListener, opUpdateListener, opDeleteListener,
		opCreatePool, opUpdatePool, opDeletePool,
		opCreateMember, opUpdateMember, opDeleteMember, opBatchUpdateMembers,
		opCreateHealthMonitor, opUpdateHealthMonitor, opDeleteHealthMonitor,
	)
}

type octaviaService struct{ e *Emulator }

func (octaviaService) name() string   { return "octavia" }
func (octaviaService) prefix() string { return octaviaPrefix }

// octaviaHandler answers one API call under e.mu. A nil body with a
// success status is an answer without a body (204, 202).
type octaviaHandler func(e *Emulator, c *octaviaCall) (int, any, *apiError)

// octaviaCall is one request to the v2 API.
type octaviaCall struct {
	r     *http.Request
	tok   *token
	query query
	// pathURL is the request URL without its query, which Octavia's
	// pagination links are built on (pecan's request.path_url).
	pathURL string
	ids     []string // the path's IDs, outermost first
}

func (o octaviaService) route(r *http.Request, rest string) route {
	e := o.e
	get := r.Method == http.MethodGet || r.Method == http.MethodHead
	if rest == "" || rest == "/" {
		if !get {
			return e.octaviaRoute(opOctaviaUnsupported, octaviaMethodNotAllowed)
		}
		return route{op: opOctaviaVersions, public: true, serve: e.octaviaVersions}
	}
	var sub string
	for _, v := range []string{"/v2.0", "/v2"} {
		if s, ok := strings.CutPrefix(rest, v); ok && (s == "" || s[0] == '/') {
			sub = strings.Trim(s, "/")
			break
		}
		if v == "/v2" {
			return e.octaviaRoute(opOctaviaUnsupported, octaviaNotFound)
		}
	}
	if sub == "" {
		if !get {
			return e.octaviaRoute(opOctaviaUnsupported, octaviaMethodNotAllowed)
		}
		return e.octaviaRoute(opOctaviaVersion, func(*Emulator, *octaviaCall) (int, any, *apiError) {
			return http.StatusOK, "v2", nil
		})
	}
	parts := strings.Split(sub, "/")
	if parts[0] == "lbaas" {
		parts = parts[1:]
		if len(parts) == 0 && get {
			return e.octaviaRoute(opOctaviaVersion, func(*Emulator, *octaviaCall) (int, any, *apiError) {
				return http.StatusOK, "v2", nil
			})
		}
	}
	return e.octaviaAPIRoute(r.Method, parts)
}

// octaviaAPIRoute names the operation of a v2 API path (below /v2 and
// the optional /lbaas).
func (e *Emulator) octaviaAPIRoute(method string, parts []string) route {
	if method == http.MethodHead {
		method = http.MethodGet
	}
	type endpoint struct {
		op string
		h  octaviaHandler
	}
	// pick routes by method; nil answers 405 for a path that exists.
	pick := func(byMethod map[string]endpoint, ids ...string) route {
		ep, ok := byMethod[method]
		if !ok {
			return e.octaviaRoute(opOctaviaUnsupported, octaviaMethodNotAllowed)
		}
		return e.octaviaRoute(ep.op, ep.h, ids...)
	}
	n := len(parts)
	if n == 0 || slices.Contains(parts, "") {
		return e.octaviaRoute(opOctaviaUnsupported, octaviaNotFound)
	}
	switch parts[0] {
	case "providers":
		if n == 1 {
			return pick(map[string]endpoint{http.MethodGet: {opListProviders, (*Emulator).listProviders}})
		}
	case "loadbalancers":
		switch {
		case n == 1:
			return pick(map[string]endpoint{
				http.MethodGet:  {opListLoadBalancers, (*Emulator).listLoadBalancers},
				http.MethodPost: {opCreateLoadBalancer, (*Emulator).createLoadBalancer},
			})
		case n == 2:
			return pick(map[string]endpoint{
				http.MethodGet:    {opGetLoadBalancer, (*Emulator).getLoadBalancer},
				http.MethodPut:    {opUpdateLoadBalancer, (*Emulator).updateLoadBalancer},
				http.MethodDelete: {opDeleteLoadBalancer, (*Emulator).deleteLoadBalancer},
			}, parts[1])
		case n == 3 && (parts[2] == "status" || parts[2] == "statuses"):
			return pick(map[string]endpoint{http.MethodGet: {opGetLoadBalancerStatus, (*Emulator).getLoadBalancerStatus}}, parts[1])
		case n == 3 && parts[2] == "stats":
			return pick(map[string]endpoint{http.MethodGet: {opGetLoadBalancerStats, (*Emulator).getLoadBalancerStats}}, parts[1])
		case n == 3 && parts[2] == "failover":
			return pick(map[string]endpoint{http.MethodPut: {opFailoverLoadBalancer, (*Emulator).failoverLoadBalancer}}, parts[1])
		}
	case "listeners":
		switch {
		case n == 1:
			return pick(map[string]endpoint{
				http.MethodGet:  {opListListeners, (*Emulator).listListeners},
				http.MethodPost: {opCreateListener, (*Emulator).createListener},
			})
		case n == 2:
			return pick(map[string]endpoint{
				http.MethodGet:    {opGetListener, (*Emulator).getListener},
				http.MethodPut:    {opUpdateListener, (*Emulator).updateListener},
				http.MethodDelete: {opDeleteListener, (*Emulator).deleteListener},
			}, parts[1])
		case n == 3 && parts[2] == "stats":
			return pick(map[string]endpoint{http.MethodGet: {opGetListenerStats, (*Emulator).getListenerStats}}, parts[1])
		}
	case "pools":
		switch {
		case n == 1:
			return pick(map[string]endpoint{
				http.MethodGet:  {opListPools, (*Emulator).listPools},
				http.MethodPost: {opCreatePool, (*Emulator).createPool},
			})
		case n == 2:
			return pick(map[string]endpoint{
				http.MethodGet:    {opGetPool, (*Emulator).getPool},
				http.MethodPut:    {opUpdatePool, (*Emulator).updatePool},
				http.MethodDelete: {opDeletePool, (*Emulator).deletePool},
			}, parts[1])
		case n == 3 && parts[2] == "members":
			return pick(map[string]endpoint{
				http.MethodGet:  {opListMembers, (*Emulator).listMembers},
				http.MethodPost: {opCreateMember, (*Emulator).createMember},
				http.MethodPut:  {opBatchUpdateMembers, (*Emulator).batchUpdateMembers},
			}, parts[1])
		case n == 4 && parts[2] == "members":
			return pick(map[string]endpoint{
				http.MethodGet:    {opGetMember, (*Emulator).getMember},
				http.MethodPut:    {opUpdateMember, (*Emulator).updateMember},
				http.MethodDelete: {opDeleteMember, (*Emulator).deleteMember},
			}, parts[1], parts[3])
		}
	case "flavors", "availabilityzones":
		// Octavia 2.6 and 2.14 added them.
		if (parts[0] == "flavors" && !e.octaviaAt(6)) || (parts[0] == "availabilityzones" && !e.octaviaAt(14)) {
			break
		}
		list, get := endpoint{opListLBFlavors, (*Emulator).listLBFlavors}, endpoint{opGetLBFlavor, (*Emulator).getLBFlavor}
		if parts[0] == "availabilityzones" {
			list, get = endpoint{opListAvailabilityZones, (*Emulator).listAvailabilityZones}, endpoint{opGetAvailabilityZone, (*Emulator).getAvailabilityZone}
		}
		operator := endpoint{opOctaviaOperatorOnly, octaviaForbidden}
		switch n {
		case 1:
			return pick(map[string]endpoint{http.MethodGet: list, http.MethodPost: operator})
		case 2:
			return pick(map[string]endpoint{http.MethodGet: get, http.MethodPut: operator, http.MethodDelete: operator}, parts[1])
		}
	case "flavorprofiles", "availabilityzoneprofiles":
		if (parts[0] == "flavorprofiles" && !e.octaviaAt(6)) || (parts[0] == "availabilityzoneprofiles" && !e.octaviaAt(14)) {
			break
		}
		if n <= 2 {
			operator := endpoint{opOctaviaOperatorOnly, octaviaForbidden}
			return pick(map[string]endpoint{http.MethodGet: operator, http.MethodPost: operator, http.MethodPut: operator, http.MethodDelete: operator})
		}
	case "healthmonitors":
		switch {
		case n == 1:
			return pick(map[string]endpoint{
				http.MethodGet:  {opListHealthMonitors, (*Emulator).listHealthMonitors},
				http.MethodPost: {opCreateHealthMonitor, (*Emulator).createHealthMonitor},
			})
		case n == 2:
			return pick(map[string]endpoint{
				http.MethodGet:    {opGetHealthMonitor, (*Emulator).getHealthMonitor},
				http.MethodPut:    {opUpdateHealthMonitor, (*Emulator).updateHealthMonitor},
				http.MethodDelete: {opDeleteHealthMonitor, (*Emulator).deleteHealthMonitor},
			}, parts[1])
		}
	}
	return e.octaviaRoute(opOctaviaUnsupported, octaviaNotFound)
}

func octaviaNotFound(*Emulator, *octaviaCall) (int, any, *apiError) {
	return 0, nil, octaviaFault(http.StatusNotFound, "Client", "The resource could not be found.")
}

func octaviaMethodNotAllowed(*Emulator, *octaviaCall) (int, any, *apiError) {
	return 0, nil, octaviaFault(http.StatusMethodNotAllowed, "Client", "The method specified is not allowed for this resource.")
}

func (e *Emulator) octaviaRoute(op string, h octaviaHandler, ids ...string) route {
	return route{op: op, serve: func(w http.ResponseWriter, r *http.Request) { e.serveOctavia(w, r, h, ids) }}
}

// serveOctavia runs a v2 handler under the lock, after settling the
// provisioning operations that are due. Serve has already refused calls
// without a valid token.
func (e *Emulator) serveOctavia(w http.ResponseWriter, r *http.Request, h octaviaHandler, ids []string) {
	q, qerr := parseQuery(r.URL.RawQuery)
	if qerr != nil {
		writeError(w, octaviaFault(http.StatusBadRequest, "Client", qerr.Error()))
		return
	}
	c := &octaviaCall{r: r, query: q, pathURL: baseURL(r) + r.URL.Path, ids: ids}
	e.mu.Lock()
	var (
		status int
		body   any
		err    *apiError
	)
	c.tok, _ = e.validToken(r.Header.Get("X-Auth-Token"))
	switch {
	case c.tok == nil:
		err = keystoneError(http.StatusUnauthorized, msgUnauthorized)
	case c.tok.projectID == "":
		// Octavia's policies need a project (load-balancer:read and
		// :write are "owner" rules); an unscoped token can do nothing.
		err = errOctaviaPolicy()
	default:
		e.settleOctavia()
		status, body, err = h(e, c)
	}
	e.mu.Unlock()
	if err != nil {
		writeError(w, err)
		return
	}
	if body == nil || r.Method == http.MethodHead {
		w.WriteHeader(status)
		return
	}
	writeJSON(w, status, body)
}

// --- version document ---

// octaviaVersionDates are the API versions of Octavia's root document
// (root_controller.py) with their dates; each adds a feature, and a
// deployment lists those up to its release's.
var octaviaVersionDates = []string{
	"2016-12-11T00:00:00Z", // 2.0
	"2018-04-20T00:00:00Z", // 2.1 listener timeouts
	"2018-07-31T00:00:00Z", // 2.2
	"2018-12-18T00:00:00Z", // 2.3
	"2018-12-19T00:00:00Z", // 2.4 amphora statistics
	"2019-01-21T00:00:00Z", // 2.5 tags
	"2019-01-25T00:00:00Z", // 2.6 flavors
	"2018-01-25T12:00:00Z", // 2.7 amphora config update (sic)
	"2019-02-12T00:00:00Z", // 2.8 TLS client authentication
	"2019-03-04T00:00:00Z", // 2.9 HTTP redirect code
	"2019-03-05T00:00:00Z", // 2.10 health monitor host header
	"2019-06-24T00:00:00Z", // 2.11 additive batch member update
	"2019-09-11T00:00:00Z", // 2.12 VIP ACL (allowed_cidrs)
	"2019-09-13T00:00:00Z", // 2.13 SOURCE_IP_PORT
	"2019-11-10T00:00:00Z", // 2.14 availability zones
	"2020-03-10T00:00:00Z", // 2.15 TLS cipher options
	"2020-03-15T00:00:00Z", // 2.16 HTTP/TCP health monitors for UDP pools
	"2020-04-29T00:00:00Z", // 2.17 listener TLS versions
	"2020-04-29T01:00:00Z", // 2.18 pool TLS versions
	"2020-05-12T00:00:00Z", // 2.19 L7 quotas
	"2020-08-02T00:00:00Z", // 2.20 listener ALPN
	"2020-09-03T00:00:00Z", // 2.21 amphora delete
	"2020-09-04T00:00:00Z", // 2.22 PROXYV2 pools
	"2020-09-07T00:00:00Z", // 2.23 SCTP
	"2020-10-15T00:00:00Z", // 2.24 pool ALPN
	"2021-10-02T00:00:00Z", // 2.25 PROMETHEUS listeners
	"2022-08-29T00:00:00Z", // 2.26 additional VIPs (Zed)
	"2023-05-05T00:00:00Z", // 2.27 HSTS
	"2023-11-08T00:00:00Z", // 2.28 VIP vnic_type
	"2024-10-15T00:00:00Z", // 2.29 VIP security groups
	"2025-02-26T00:00:00Z", // 2.30 member SR-IOV
}

// parseOctaviaVersion reads "v2.N" (or "2.N") into N.
func parseOctaviaVersion(s string) (int, bool) {
	s = strings.TrimPrefix(s, "v")
	minor, ok := strings.CutPrefix(s, "2.")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(minor)
	if err != nil || n < 0 || n >= len(octaviaVersionDates) || strconv.Itoa(n) != minor {
		return 0, false
	}
	return n, true
}

// octaviaVersions answers GET /load-balancer/ as the root controller
// does: every version up to the deployment's, the newest CURRENT, each
// linking to /v2 (which serves them all).
func (e *Emulator) octaviaVersions(w http.ResponseWriter, r *http.Request) {
	href := baseURL(r) + octaviaPrefix + "/v2"
	var vs []any
	for i := 0; i <= e.octavia.maxMinor; i++ {
		status := "SUPPORTED"
		if i == e.octavia.maxMinor {
			status = "CURRENT"
		}
		vs = append(vs, map[string]any{
			"id": fmt.Sprintf("v2.%d", i), "status": status, "updated": octaviaVersionDates[i],
			"links": []any{map[string]string{"href": href, "rel": "self"}},
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"versions": vs})
}

// --- errors ---

// octaviaFault is Octavia's (WSME) error body: faultcode "Client" for
// 4xx answers, "Server" for the rest.
func octaviaFault(status int, code, message string) *apiError {
	return &apiError{status: status, body: map[string]any{"faultcode": code, "faultstring": message, "debuginfo": nil}}
}

// octaviaErr is an Octavia APIException: its status and message, the
// faultcode following from the status as WSME's format_exception does.
func octaviaErr(status int, format string, args ...any) *apiError {
	code := "Client"
	if status >= 500 {
		code = "Server"
	}
	return octaviaFault(status, code, fmt.Sprintf(format, args...))
}

// Octavia's exceptions (octavia/common/exceptions.py), by name.
func errOctaviaNotFound(resource, id string) *apiError {
	return octaviaErr(http.StatusNotFound, "%s %s not found.", resource, id)
}

func errOctaviaPolicy() *apiError {
	return octaviaErr(http.StatusForbidden, "Policy does not allow this request to be performed.")
}

func errOctaviaValidation(format string, args ...any) *apiError {
	return octaviaErr(http.StatusBadRequest, "Validation failure: "+format, args...)
}

func errOctaviaInvalidOption(value, option string) *apiError {
	return octaviaErr(http.StatusBadRequest, "%s is not a valid option for %s", value, option)
}

func errOctaviaInvalidSubresource(resource, id string) *apiError {
	return octaviaErr(http.StatusBadRequest, "%s %s not found.", resource, id)
}

func errOctaviaImmutable(resource, id string) *apiError {
	return octaviaErr(http.StatusConflict, "%s %s is immutable and cannot be updated.", resource, id)
}

func errOctaviaPendingState(state, id string) *apiError {
	return octaviaErr(http.StatusConflict, "Invalid state %s of loadbalancer resource %s", state, id)
}

func errOctaviaQuota(resource string) *apiError {
	return octaviaErr(http.StatusForbidden, "Quota has been met for resources: %s", resource)
}

// errOctaviaUnsupported is ProviderUnsupportedOptionError, what a
// provider driver's UnsupportedOptionError becomes.
func errOctaviaUnsupported(provider, format string, args ...any) *apiError {
	return octaviaErr(http.StatusNotImplemented, "Provider '%s' does not support a requested option: %s",
		provider, fmt.Sprintf(format, args...))
}

// errOctaviaDriver is ProviderDriverError, what a driver's DriverError
// becomes: a 500.
func errOctaviaDriver(provider, msg string) *apiError {
	return octaviaErr(http.StatusInternalServerError, "Provider '%s' reports error: %s", provider, msg)
}

func (octaviaService) writeUnauthenticated(w http.ResponseWriter, r *http.Request) {
	writeAuthRequired(w, r)
}

// writeThrottle: Octavia has no rate limiting of its own; a proxy in
// front answers 429 with Retry-After.
func (o octaviaService) writeThrottle(w http.ResponseWriter, r *http.Request, rt route) {
	w.Header().Set("Retry-After", strconv.Itoa(o.e.cfg.RetryAfter))
	writeError(w, octaviaFault(http.StatusTooManyRequests, "Client", "Too Many Requests"))
}

func (octaviaService) writeServerError(w http.ResponseWriter, r *http.Request, rt route) {
	writeError(w, octaviaFault(http.StatusInternalServerError, "Server", "Internal Server Error"))
}

// --- request bodies ---

// readOctaviaBody reads the JSON object of a POST or PUT as WSME does:
// an empty body misses the argument, anything but JSON is refused.
func readOctaviaBody(c *octaviaCall, argName string) (map[string]json.RawMessage, *apiError) {
	data, err := io.ReadAll(io.LimitReader(c.r.Body, 8<<20))
	if err != nil {
		return nil, octaviaErr(http.StatusBadRequest, "Request is not in valid JSON format")
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil, octaviaErr(http.StatusBadRequest, "Missing argument: %q", argName)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, octaviaErr(http.StatusBadRequest, "Request is not in valid JSON format")
	}
	return m, nil
}

// --- config, state, resources ---

// OctaviaConfig configures Octavia.
type OctaviaConfig struct {
	// MaxVersion is the newest API version the deployment serves
	// ("v2.0" to "v2.30"), default "v2.26" (Zed). The root document
	// lists every version up to it, and features added after it are
	// absent: their attributes are unknown to the API.
	MaxVersion string
	// Providers are the enabled provider drivers ([api_settings]
	// enabled_provider_drivers), default amphora, octavia (the amphora
	// driver under its deprecated alias) and ovn. Other names behave as
	// amphora.
	Providers []string
	// DefaultProvider is [api_settings] default_provider_driver,
	// default "amphora".
	DefaultProvider string
	// ProvisioningDelay is how long the controller worker takes to carry
	// out a write: for this long after it the objects are PENDING_* and
	// the load balancer is immutable. Default 100ms; negative means 0:
	// the next call already sees the result.
	ProvisioningDelay time.Duration
	// PaginationMaxLimit is [api_settings] pagination_max_limit, the most
	// items a list returns, default 1000.
	PaginationMaxLimit int
	// Flavors are the Octavia flavors (with their profiles) a load
	// balancer may name, default none.
	Flavors []OctaviaFlavor
	// AvailabilityZones are the Octavia availability zones (with their
	// profiles) a load balancer may name, default none.
	AvailabilityZones []OctaviaAvailabilityZone
	// Quotas are the per-project quotas, default unlimited.
	Quotas OctaviaQuotas
}

// OctaviaQuotas are per-project object quotas. Unlike Octavia, where 0
// allows none, 0 (the zero value) or a negative number means unlimited.
type OctaviaQuotas struct {
	LoadBalancers  int
	Listeners      int
	Pools          int
	Members        int
	HealthMonitors int
}

func (c *OctaviaConfig) setDefaults() {
	if c.MaxVersion == "" {
		c.MaxVersion = "v2.26"
	}
	if len(c.Providers) == 0 {
		c.Providers = []string{"amphora", "octavia", "ovn"}
	}
	c.Providers = slices.Clone(c.Providers)
	if c.DefaultProvider == "" {
		c.DefaultProvider = "amphora"
	}
	if c.ProvisioningDelay == 0 {
		c.ProvisioningDelay = 100 * time.Millisecond
	}
	if c.ProvisioningDelay < 0 {
		c.ProvisioningDelay = 0
	}
	if c.PaginationMaxLimit <= 0 {
		c.PaginationMaxLimit = 1000
	}
	c.Flavors = slices.Clone(c.Flavors)
	c.AvailabilityZones = slices.Clone(c.AvailabilityZones)
}

// octaviaState is Octavia's own state. Callers hold e.mu.
type octaviaState struct {
	maxMinor int // MaxVersion's minor number
	delay    time.Duration

	lbs       *cloudsim.Store[*octaviaLB]
	listeners *cloudsim.Store[*octaviaListener]
	pools     *cloudsim.Store[*octaviaPool]
	members   *cloudsim.Store[*octaviaMember]
	monitors  *cloudsim.Store[*octaviaMonitor]
	// deletedLBs keeps deleted load balancers, as Octavia keeps their
	// rows (provisioning_status DELETED) until housekeeping purges them:
	// they still work as list markers but are never shown.
	deletedLBs map[string]*octaviaLB
	// flavors by ID and zones by name, from OctaviaConfig, each also
	// in configuration order.
	flavors     map[string]*octaviaFlavor
	flavorOrder []string
	zones       map[string]*octaviaZone
	zoneOrder   []string
}

// initOctavia sets up Octavia's state; New calls it. It panics on a
// MaxVersion it does not know, as New does on any broken fixture.
func (e *Emulator) initOctavia() {
	n, ok := parseOctaviaVersion(e.cfg.Octavia.MaxVersion)
	if !ok {
		panic(fmt.Sprintf("cloudsim/openstack: Octavia MaxVersion %q is not one of v2.0 to v2.%d",
			e.cfg.Octavia.MaxVersion, len(octaviaVersionDates)-1))
	}
	e.octavia = octaviaState{
		maxMinor:   n,
		delay:      e.cfg.Octavia.ProvisioningDelay,
		lbs:        cloudsim.NewStore("octavia:loadbalancer", func(l *octaviaLB) string { return l.id }),
		listeners:  cloudsim.NewStore("octavia:listener", func(l *octaviaListener) string { return l.id }),
		pools:      cloudsim.NewStore("octavia:pool", func(p *octaviaPool) string { return p.id }),
		members:    cloudsim.NewStore("octavia:member", func(m *octaviaMember) string { return m.id }),
		monitors:   cloudsim.NewStore("octavia:healthmonitor", func(h *octaviaMonitor) string { return h.id }),
		deletedLBs: map[string]*octaviaLB{},
	}
	e.initOctaviaCatalog()
}

// octaviaAt reports whether the deployment serves API version 2.minor.
func (e *Emulator) octaviaAt(minor int) bool { return e.octavia.maxMinor >= minor }

// octaviaResources adds Octavia's resources to Resources, after settling
// what is due, so a test that advanced the clock sees deleted trees gone.
// Tags are the objects' tags as keys with empty values. Callers hold
// e.mu.
func (e *Emulator) octaviaResources(add func(kind, id, name, parent string, tags map[string]string)) {
	e.settleOctavia()
	tagMap := func(tags []string) map[string]string {
		if len(tags) == 0 {
			return nil
		}
		m := map[string]string{}
		for _, t := range tags {
			m[t] = ""
		}
		return m
	}
	for _, lb := range e.octavia.lbs.All() {
		add(KindLoadBalancer, lb.id, lb.name, lb.projectID, tagMap(lb.tags))
	}
	for _, l := range e.octavia.listeners.All() {
		add(KindListener, l.id, l.name, l.lb.id, tagMap(l.tags))
	}
	for _, p := range e.octavia.pools.All() {
		add(KindPool, p.id, p.name, p.lb.id, tagMap(p.tags))
	}
	for _, m := range e.octavia.members.All() {
		add(KindMember, m.id, m.name, m.pool.id, tagMap(m.tags))
	}
	for _, h := range e.octavia.monitors.All() {
		add(KindHealthMonitor, h.id, h.name, h.pool.id, tagMap(h.tags))
	}
}
