package openstack

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
)

// Health monitors: /v2/lbaas/healthmonitors
// (octavia/api/v2/controllers/health_monitor.py), one per pool. Octavia's
// API reference says timeout must be less than delay, but neither the
// API nor the drivers check it, so the emulator accepts it too.

var (
	ovRetriesMin, ovRetriesMax = ovIntPtr(1), ovIntPtr(10)
	expectedCodesPattern       = regexp.MustCompile(`^(\d{3}(\s*,\s*\d{3})*)$|^(\d{3}-\d{3})$`)
	domainLabelChars           = regexp.MustCompile(`^[A-Za-z0-9_-]{1,63}$`)
)

// domainNamePattern is DOMAIN_NAME_REGEX, which needs look-arounds RE2
// lacks; ovValidDomainName checks the same.
const domainNamePattern = `^(?=.{1,253}\.?$)(?:(?!-|[^.]+_)[A-Za-z0-9-_]{1,63}(?<!-)(?:\.|$))+$`

func ovValidDomainName(s string) bool {
	name := strings.TrimSuffix(s, ".")
	if len(name) < 1 || len(name) > 253 {
		return false
	}
	for _, label := range strings.Split(name, ".") {
		if !domainLabelChars.MatchString(label) || label[0] == '-' || label[len(label)-1] == '-' ||
			strings.Contains(label[1:], "_") {
			return false
		}
	}
	return true
}

// ovValidURLPath is validate.url_path: an absolute path without
// whitespace, scheme or authority.
func ovValidURLPath(s string) bool {
	return strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "//") && !strings.ContainsAny(s, " \t\r\n\f\v")
}

func (e *Emulator) monitorTypes() []string {
	t := []string{"HTTP", "HTTPS", "PING", "TCP", "TLS-HELLO", "UDP-CONNECT"}
	if e.octaviaAt(23) {
		t = append(t, "SCTP")
	}
	return t
}

// monitorSchema is HealthMonitorPOST, HealthMonitorSingleCreate or
// HealthMonitorPUT.
func (e *Emulator) monitorSchema(use ovSchemaUse) ovSchema {
	urlPath := ovField{name: "url_path", kind: ovString, check: ovValidURLPath, checkMsg: "Value must be a valid URL Path string"}
	codes := ovField{name: "expected_codes", kind: ovString, pattern: expectedCodesPattern}
	domain := ovField{name: "domain_name", kind: ovString, minLen: 1, maxLen: 255, since: 10,
		check: ovValidDomainName, checkMsg: "Value should match the pattern " + domainNamePattern}
	httpVersion := ovField{name: "http_version", kind: ovFloatEnum, enum: []string{"1.0", "1.1"}, since: 10}
	methods := ovEnumF("http_method", "GET", "HEAD", "POST", "PUT", "DELETE", "TRACE", "OPTIONS", "CONNECT", "PATCH")
	zero := ovIntPtr(0)
	if use == ovPUT {
		return ovSchema{
			ovStr("name", 255), ovIntF("delay", zero, nil), ovIntF("timeout", zero, nil),
			ovIntF("max_retries_down", ovRetriesMin, ovRetriesMax), ovIntF("max_retries", ovRetriesMin, ovRetriesMax),
			methods, urlPath, codes, ovBoolF("admin_state_up"), ovTags(), httpVersion, domain,
		}
	}
	s := ovSchema{
		ovStr("name", 255), ovEnumF("type", e.monitorTypes()...).req(),
		ovIntF("delay", zero, nil).req(), ovIntF("timeout", zero, nil).req(),
		ovIntF("max_retries_down", ovRetriesMin, ovRetriesMax).dflt(3),
		ovIntF("max_retries", ovRetriesMin, ovRetriesMax).req(),
		methods, urlPath, codes, ovBoolF("admin_state_up").dflt(true),
	}
	if use == ovPOST {
		s = append(s, ovStr("project_id", 36), ovStr("tenant_id", 36), ovUUIDF("pool_id").req())
	}
	return append(s, ovTags(), httpVersion, domain)
}

// udpConnectMinDelay is [api_settings]
// udp_connect_min_interval_health_monitor.
const udpConnectMinDelay = 3

// checkMonitorForPool is the protocol checks of a monitor on a pool.
func checkMonitorForPool(typ string, delay int, poolProtocol string) *apiError {
	if poolProtocol == "UDP" || poolProtocol == "SCTP" {
		if !slices.Contains([]string{"UDP-CONNECT", "SCTP", "TCP", "HTTP"}, typ) {
			return errOctaviaValidation("The associated pool protocol is %s, so only a UDP-CONNECT/SCTP/TCP/HTTP "+
				"health monitor is supported.", poolProtocol)
		}
		if typ == "UDP-CONNECT" && delay < udpConnectMinDelay {
			return errOctaviaValidation("The request delay value %d should be larger than %d for UDP-CONNECT health monitor type.",
				delay, udpConnectMinDelay)
		}
		return nil
	}
	if typ == "UDP-CONNECT" || typ == "SCTP" {
		return errOctaviaValidation("The %s type is only supported for pools of type UDP/SCTP.", typ)
	}
	return nil
}

// checkMonitorCreate is _validate_create_hm: HTTP options only on HTTP
// monitors (which get defaults for them), and a domain name only with
// HTTP/1.1.
func checkMonitorCreate(o ovObj) *apiError {
	typ := o.str("type")
	if typ != "HTTP" && typ != "HTTPS" {
		for _, k := range []string{"http_method", "url_path", "expected_codes"} {
			if o.str(k) != "" {
				return errOctaviaInvalidOption(k, "health monitors of type "+typ)
			}
		}
	} else {
		for k, d := range map[string]string{"http_method": "GET", "url_path": "/", "expected_codes": "200"} {
			if o.str(k) == "" {
				o[k] = d
			}
		}
	}
	v, hasVersion := o["http_version"].(float64)
	if o.str("domain_name") != "" && !hasVersion {
		return errOctaviaValidation("'http_version' must be specified when 'domain_name' is provided.")
	}
	if hasVersion && o.str("domain_name") != "" && v < 1.1 {
		return errOctaviaInvalidOption("http_version "+pyStr(v), "health monitors HTTP 1.1 domain name health check")
	}
	return nil
}

// newMonitor builds a PENDING_CREATE monitor of p.
func (e *Emulator) newMonitor(p *octaviaPool, o ovObj) *octaviaMonitor {
	h := &octaviaMonitor{
		ovBase: e.newOctaviaBase(p.projectID, o.str("name"), o.strs("tags"), o.flag("admin_state_up")),
		pool:   p, typ: o.str("type"), delay: o.num("delay"), timeout: o.num("timeout"),
		maxRetries: o.num("max_retries"), maxRetriesDown: o.num("max_retries_down"),
		httpMethod: o.strp("http_method"), urlPath: o.strp("url_path"), expectedCodes: o.strp("expected_codes"),
		domainName: o.strp("domain_name"),
	}
	if v, ok := o["http_version"].(float64); ok {
		h.httpVersion = &v
	}
	return h
}

func (e *Emulator) storeMonitor(h *octaviaMonitor) {
	h.pool.monitor = h
	e.octavia.monitors.Put(h)
}

// --- handlers ---

func (e *Emulator) projectMonitor(c *octaviaCall, id string) (*octaviaMonitor, *apiError) {
	h, ok := e.octavia.monitors.Get(id)
	if !ok {
		return nil, errOctaviaNotFound("Health Monitor", id)
	}
	if h.projectID != c.tok.projectID {
		return nil, errOctaviaPolicy()
	}
	return h, nil
}

func (e *Emulator) createHealthMonitor(c *octaviaCall) (int, any, *apiError) {
	o, err := e.decodeOctaviaRoot(c, "health_monitor_", "healthmonitor", e.monitorSchema(ovPOST))
	if err != nil {
		return 0, nil, err
	}
	p, err := e.projectPool(c, o.str("pool_id"))
	if err != nil {
		return 0, nil, err
	}
	if err := checkPostProject(c, o); err != nil {
		return 0, nil, err
	}
	if err := checkMonitorForPool(o.str("type"), o.num("delay"), p.protocol); err != nil {
		return 0, nil, err
	}
	if err := e.quota(p.projectID, KindHealthMonitor, 1); err != nil {
		return 0, nil, err
	}
	if err := checkPoolChildWrite(p); err != nil {
		return 0, nil, err
	}
	if err := checkMonitorCreate(o); err != nil {
		return 0, nil, err
	}
	if p.monitor != nil {
		return 0, nil, octaviaErr(http.StatusConflict, "This pool already has a health monitor")
	}
	if err := driverCheckMonitor(p.lb.provider, o.str("type")); err != nil {
		return 0, nil, err
	}
	h := e.newMonitor(p, o)
	e.beginPoolChildWrite(p)
	e.storeMonitor(h)
	return http.StatusCreated, map[string]any{"healthmonitor": e.monitorView(h, false)}, nil
}

func (e *Emulator) getHealthMonitor(c *octaviaCall) (int, any, *apiError) {
	h, err := e.projectMonitor(c, c.ids[0])
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"healthmonitor": ovFields(c, e.monitorView(h, false))}, nil
}

func (e *Emulator) listHealthMonitors(c *octaviaCall) (int, any, *apiError) {
	cols := ovBaseColumns[*octaviaMonitor]()
	cols["pool_id"] = func(h *octaviaMonitor) any { return h.pool.id }
	cols["type"] = func(h *octaviaMonitor) any { return h.typ }
	cols["delay"] = func(h *octaviaMonitor) any { return h.delay }
	cols["timeout"] = func(h *octaviaMonitor) any { return h.timeout }
	cols["max_retries"] = func(h *octaviaMonitor) any { return h.maxRetries }
	cols["max_retries_down"] = func(h *octaviaMonitor) any { return h.maxRetriesDown }
	cols["http_method"] = func(h *octaviaMonitor) any { return ovStrPtr(h.httpMethod) }
	cols["url_path"] = func(h *octaviaMonitor) any { return ovStrPtr(h.urlPath) }
	cols["expected_codes"] = func(h *octaviaMonitor) any { return ovStrPtr(h.expectedCodes) }
	cols["domain_name"] = func(h *octaviaMonitor) any { return ovStrPtr(h.domainName) }
	cols["http_version"] = func(h *octaviaMonitor) any {
		if h.httpVersion == nil {
			return nil
		}
		return *h.httpVersion
	}
	return octaviaList(e, c, ovListSpec[*octaviaMonitor]{
		collection: "healthmonitors", columns: cols,
		tags:    func(h *octaviaMonitor) []string { return h.tags },
		project: func(h *octaviaMonitor) string { return h.projectID },
		id:      func(h *octaviaMonitor) string { return h.id },
		marker:  e.octavia.monitors.Get,
		render:  func(h *octaviaMonitor) map[string]any { return e.monitorView(h, false) },
	}, e.octavia.monitors.All())
}

func (e *Emulator) updateHealthMonitor(c *octaviaCall) (int, any, *apiError) {
	o, err := e.decodeOctaviaRoot(c, "health_monitor_", "healthmonitor", e.monitorSchema(ovPUT))
	if err != nil {
		return 0, nil, err
	}
	h, err := e.projectMonitor(c, c.ids[0])
	if err != nil {
		return 0, nil, err
	}
	// _validate_update_hm
	if h.typ != "HTTP" && h.typ != "HTTPS" {
		for _, k := range []string{"http_method", "url_path", "expected_codes"} {
			if o.has(k) {
				return 0, nil, errOctaviaInvalidOption(k, "health monitors of type "+h.typ)
			}
		}
	}
	for _, k := range []string{"delay", "max_retries", "timeout"} {
		if o.has(k) && !o.set(k) {
			return 0, nil, errOctaviaInvalidOption("None", k)
		}
	}
	version := h.httpVersion
	if v, ok := o["http_version"].(float64); ok {
		version = &v
	}
	domain := o.str("domain_name")
	if o.str("domain_name") != "" && version == nil {
		return 0, nil, errOctaviaValidation("'http_version' must be specified when 'domain_name' is provided.")
	}
	if version != nil && (domain != "" || h.domainName != nil) && *version < 1.1 {
		return 0, nil, errOctaviaInvalidOption("http_version "+pyStr(*version), "health monitors HTTP 1.1 domain name health check")
	}
	p := h.pool
	if p.protocol == "UDP" || p.protocol == "SCTP" {
		delay := h.delay
		if o.set("delay") {
			delay = o.num("delay")
		}
		if err := checkMonitorForPool(h.typ, delay, p.protocol); err != nil {
			return 0, nil, err
		}
	}
	if err := checkPoolChildWrite(p); err != nil {
		return 0, nil, err
	}

	if o.has("name") {
		h.name = o.str("name")
	}
	for k, dst := range map[string]*int{"delay": &h.delay, "timeout": &h.timeout, "max_retries": &h.maxRetries} {
		if o.set(k) {
			*dst = o.num(k)
		}
	}
	if o.has("max_retries_down") {
		h.maxRetriesDown = 3 // _set_default_on_none
		if n, ok := o["max_retries_down"].(int); ok {
			h.maxRetriesDown = n
		}
	}
	for k, v := range map[string]struct {
		dst  **string
		dflt string
	}{"http_method": {&h.httpMethod, "GET"}, "url_path": {&h.urlPath, "/"}, "expected_codes": {&h.expectedCodes, "200"}} {
		if o.has(k) {
			s := v.dflt
			if o.set(k) {
				s = o.str(k)
			}
			*v.dst = &s
		}
	}
	if o.has("admin_state_up") {
		h.adminUp = o.flag("admin_state_up")
	}
	if o.has("tags") {
		h.tags = slices.Clone(o.strs("tags"))
	}
	if o.has("http_version") {
		h.httpVersion = nil
		if v, ok := o["http_version"].(float64); ok {
			h.httpVersion = &v
		}
	}
	if o.has("domain_name") {
		h.domainName = o.strp("domain_name")
	}
	e.beginPoolChildWrite(p)
	h.prov = ovPendingUpdate
	e.touch(&h.ovBase)
	return http.StatusOK, map[string]any{"healthmonitor": e.monitorView(h, false)}, nil
}

func (e *Emulator) deleteHealthMonitor(c *octaviaCall) (int, any, *apiError) {
	h, err := e.projectMonitor(c, c.ids[0])
	if err != nil {
		return 0, nil, err
	}
	if err := checkPoolChildWrite(h.pool); err != nil {
		return 0, nil, err
	}
	e.beginPoolChildWrite(h.pool)
	h.prov = ovPendingDelete
	e.touch(&h.ovBase)
	return http.StatusNoContent, nil, nil
}

// monitorView is HealthMonitorResponse, or the full response (without
// pools) of a fully-populated create.
func (e *Emulator) monitorView(h *octaviaMonitor, full bool) map[string]any {
	v := map[string]any{
		"id": h.id, "name": h.name, "type": h.typ, "delay": h.delay, "timeout": h.timeout,
		"max_retries": h.maxRetries, "max_retries_down": h.maxRetriesDown,
		"http_method": ovNullStr(h.httpMethod), "url_path": ovNullStr(h.urlPath), "expected_codes": ovNullStr(h.expectedCodes),
		"admin_state_up": h.adminUp, "project_id": h.projectID, "tenant_id": h.projectID,
		"provisioning_status": h.prov, "operating_status": h.oper,
		"created_at": ovTime(h.created), "updated_at": ovTimePtr(h.updated),
	}
	if !full {
		v["pools"] = ovIDList(h.pool.id)
	}
	if e.octaviaAt(5) {
		v["tags"] = ovTagList(h.tags)
	}
	if e.octaviaAt(10) {
		v["http_version"] = nil
		if h.httpVersion != nil {
			v["http_version"] = *h.httpVersion
		}
		v["domain_name"] = ovNullStr(h.domainName)
	}
	return v
}
