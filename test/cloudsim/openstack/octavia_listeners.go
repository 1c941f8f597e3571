package openstack

import (
	"net/http"
	"net/netip"
	"slices"
	"strings"
)

// Listeners: /v2/lbaas/listeners (octavia/api/v2/controllers/listener.py).
// TLS-terminating listeners need certificates from Barbican, which the
// emulated cloud does not have: every container reference fails to
// resolve, as it does on a cloud whose Barbican lacks the secret.

// ovSchemaUse selects a type's variant: the POST body, the nested
// fully-populated create (SingleCreate), or the PUT body.
type ovSchemaUse int

const (
	ovPOST ovSchemaUse = iota
	ovSingle
	ovPUT
)

var (
	ovPortMin, ovPortMax       = ovIntPtr(1), ovIntPtr(65535)
	ovTimeoutMin, ovTimeoutMax = ovIntPtr(0), ovIntPtr(24 * 24 * 60 * 60 * 1000)
)

// Listener defaults ([haproxy_amphora] timeouts).
const (
	defaultTimeoutClientData    = 50000
	defaultTimeoutMemberConnect = 5000
	defaultTimeoutMemberData    = 50000
	defaultTimeoutTCPInspect    = 0
)

// listenerProtocols are the listener protocols at the deployment's
// version.
func (e *Emulator) listenerProtocols() []string {
	p := []string{"TCP", "HTTPS", "HTTP", "TERMINATED_HTTPS", "UDP"}
	if e.octaviaAt(23) {
		p = append(p, "SCTP")
	}
	if e.octaviaAt(25) {
		p = append(p, "PROMETHEUS")
	}
	return p
}

// listenerSchema is ListenerPOST, ListenerSingleCreate or ListenerPUT.
func (e *Emulator) listenerSchema(use ovSchemaUse) ovSchema {
	s := ovSchema{ovStr("name", 255), ovStr("description", 255)}
	if use == ovPUT {
		s = append(s, ovBoolF("admin_state_up"))
	} else {
		s = append(s, ovBoolF("admin_state_up").dflt(true),
			ovEnumF("protocol", e.listenerProtocols()...).req(),
			ovIntF("protocol_port", ovPortMin, ovPortMax).req())
	}
	connLimit := ovIntF("connection_limit", ovIntPtr(-1), nil)
	if use != ovPUT {
		connLimit = connLimit.dflt(-1)
	}
	s = append(s, connLimit, ovStr("default_tls_container_ref", 255),
		ovField{name: "sni_container_refs", kind: ovStrList, maxLen: 255})
	if use == ovPOST {
		s = append(s, ovStr("project_id", 36), ovStr("tenant_id", 36))
	}
	s = append(s, ovUUIDF("default_pool_id"))
	if use != ovPUT {
		s = append(s, ovField{name: "default_pool", kind: ovObject, sub: e.poolSchema(ovSingle)},
			ovField{name: "l7policies", kind: ovObjectList, def: []ovObj{}})
	}
	s = append(s, ovField{name: "insert_headers", kind: ovStrMap, maxLen: 255})
	if use == ovPOST {
		s = append(s, ovUUIDF("loadbalancer_id").req())
	}
	for _, t := range []string{"timeout_client_data", "timeout_member_connect", "timeout_member_data", "timeout_tcp_inspect"} {
		s = append(s, ovIntF(t, ovTimeoutMin, ovTimeoutMax).from(1))
	}
	clientAuth := ovEnumF("client_authentication", "NONE", "OPTIONAL", "MANDATORY").from(8)
	if use != ovPUT {
		clientAuth = clientAuth.dflt("NONE")
	}
	hstsMin := ovIntPtr(0)
	if use == ovSingle {
		hstsMin = nil
	}
	s = append(s, ovTags(), ovStr("client_ca_tls_container_ref", 255).from(8), clientAuth,
		ovStr("client_crl_container_ref", 255).from(8),
		ovField{name: "allowed_cidrs", kind: ovCIDRList, since: 12},
		ovStr("tls_ciphers", 2048).from(15),
		ovField{name: "tls_versions", kind: ovStrList, maxLen: 32, since: 17},
		ovField{name: "alpn_protocols", kind: ovStrList, since: 20},
		ovIntF("hsts_max_age", hstsMin, nil).from(27))
	if use == ovPUT {
		s = append(s, ovBoolF("hsts_include_subdomains").from(27), ovBoolF("hsts_preload").from(27))
	} else {
		s = append(s, ovBoolF("hsts_include_subdomains").dflt(false).from(27), ovBoolF("hsts_preload").dflt(false).from(27))
	}
	return s
}

// validListenerPoolProtocols is VALID_LISTENER_POOL_PROTOCOL_MAP.
var validListenerPoolProtocols = map[string][]string{
	"TCP":              {"HTTP", "HTTPS", "PROXY", "PROXYV2", "TCP"},
	"HTTP":             {"HTTP", "PROXY", "PROXYV2"},
	"HTTPS":            {"HTTPS", "PROXY", "PROXYV2", "TCP"},
	"TERMINATED_HTTPS": {"HTTP", "PROXY", "PROXYV2"},
	"UDP":              {"UDP"},
	"SCTP":             {"SCTP"},
	"PROMETHEUS":       {},
}

// l4Protocol is L4_PROTOCOL_MAP.
func l4Protocol(p string) string {
	switch p {
	case "UDP", "SCTP":
		return p
	}
	return "TCP"
}

func checkListenerPoolProtocol(listenerProtocol, poolProtocol string) *apiError {
	if slices.Contains(validListenerPoolProtocols[listenerProtocol], poolProtocol) {
		return nil
	}
	return errOctaviaValidation("The pool protocol '%s' is invalid while the listener protocol is '%s'.", poolProtocol, listenerProtocol)
}

var (
	supportedHTTPHeaders = []string{"X-Forwarded-For", "X-Forwarded-Port", "X-Forwarded-Proto"}
	supportedSSLHeaders  = []string{"X-SSL-Client-Verify", "X-SSL-Client-Has-Cert", "X-SSL-Client-DN", "X-SSL-Client-CN",
		"X-SSL-Issuer", "X-SSL-Client-SHA1", "X-SSL-Client-Not-Before", "X-SSL-Client-Not-After"}
)

// checkInsertHeaders is _validate_insert_headers. A create passes it the
// dict's keys() and a PUT a list of them, which the unknown-header
// message shows as Python prints each.
func checkInsertHeaders(headers map[string]string, protocol string, create bool) *apiError {
	if protocol != "HTTP" && protocol != "TERMINATED_HTTPS" {
		return errOctaviaInvalidOption("insert-headers", "a "+protocol+" protocol listener.")
	}
	var unknown, ssl []string
	for _, k := range ovSortedKeys(headers) {
		switch {
		case slices.Contains(supportedSSLHeaders, k):
			ssl = append(ssl, k)
		case !slices.Contains(supportedHTTPHeaders, k):
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		keys := pyStr(ovAnyList(ovSortedKeys(headers)))
		if create {
			keys = "dict_keys(" + keys + ")"
		}
		return errOctaviaInvalidOption(keys, "insert_headers")
	}
	if len(ssl) > 0 && protocol != "TERMINATED_HTTPS" {
		return errOctaviaInvalidOption(pyStr(ovAnyList(ssl)), protocol+" protocol listener.")
	}
	return nil
}

func ovSortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// errCertificates is CertificateRetrievalException: no container
// reference resolves without Barbican.
func errCertificates(refs []string) *apiError {
	return octaviaErr(http.StatusBadRequest, "Could not retrieve certificate: %s", pyStr(ovAnyList(refs)))
}

// checkListenerCreate is _validate_create_listener: TLS, header and
// HSTS options, the port not taken by a sibling of the same L4
// protocol, and allowed CIDRs of the VIP's address family.
func checkListenerCreate(o ovObj, siblings []*octaviaListener, vips []string) *apiError {
	protocol := o.str("protocol")
	tlsRef, caRef, crlRef := o.str("default_tls_container_ref"), o.str("client_ca_tls_container_ref"), o.str("client_crl_container_ref")
	sni := o.strs("sni_container_refs")
	hasRefs := tlsRef != "" || caRef != "" || len(sni) > 0
	canTLS := protocol == "TERMINATED_HTTPS" || (protocol == "PROMETHEUS" && hasRefs)
	if headers := o.strMap("insert_headers"); len(headers) > 0 {
		if err := checkInsertHeaders(headers, protocol, true); err != nil {
			return err
		}
	}
	if (protocol == "UDP" || protocol == "SCTP") && (hasRefs || len(o.strMap("insert_headers")) > 0) {
		return errOctaviaValidation("%s protocol listener does not support TLS.", protocol)
	}
	what := protocol
	if protocol == "PROMETHEUS" {
		what = "PROMETHEUS with TLS"
	}
	switch {
	case !canTLS && hasRefs:
		return errOctaviaValidation("Certificate container references are not allowed on %s protocol listeners.", protocol)
	case caRef != "" && tlsRef == "" && len(sni) == 0:
		return errOctaviaValidation("An SNI or default certificate container reference must be provided with a client CA container reference.")
	case canTLS && tlsRef == "" && len(sni) == 0:
		return errOctaviaValidation("An SNI or default certificate container reference must be provided for %s protocol listeners.", what)
	case o.str("client_authentication") != "" && o.str("client_authentication") != "NONE" && caRef == "":
		return errOctaviaValidation("Client authentication setting %s requires a client CA container reference.", o.str("client_authentication"))
	case crlRef != "" && caRef == "":
		return errOctaviaValidation("A client authentication CA reference is required to specify a client authentication revocation list.")
	}
	refs := slices.Clone(sni)
	if tlsRef != "" {
		refs = append(refs, tlsRef)
	}
	if len(refs) > 0 {
		return errCertificates(refs)
	}
	if caRef != "" {
		return errCertificates(append([]string{caRef}, ovNonEmpty(crlRef)...))
	}
	port := o.num("protocol_port")
	for _, l := range siblings {
		if l.port == port && l4Protocol(l.protocol) == l4Protocol(protocol) {
			return octaviaErr(http.StatusConflict, "Another Listener on this Load Balancer is already using protocol %s and protocol_port %d", l.protocol, port)
		}
	}
	if err := checkCIDRsAgainstVIPs(o.strs("allowed_cidrs"), vips); err != nil {
		return err
	}
	_, maxAge := o["hsts_max_age"].(int)
	if (o.flag("hsts_include_subdomains") || o.flag("hsts_preload")) && !maxAge {
		return errOctaviaValidation("HSTS configuration options hsts_include_subdomains and hsts_preload only make sense if hsts_max_age is set as well.")
	}
	if maxAge && protocol != "TERMINATED_HTTPS" {
		return errOctaviaValidation("The HSTS feature can only be used for listeners using the TERMINATED_HTTPS protocol.")
	}
	return nil
}

func ovNonEmpty(s ...string) []string {
	var out []string
	for _, x := range s {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

// checkCIDRsAgainstVIPs: every allowed CIDR needs a VIP of its family
// (_validate_cidr_compatible_with_vip,
// octavia/api/v2/controllers/listener.py:172-191 at 0e6ea11c).
func checkCIDRsAgainstVIPs(cidrs, vips []string) *apiError {
	for _, c := range cidrs {
		p, _ := netip.ParsePrefix(c)
		ok := false
		for _, v := range vips {
			if a, err := netip.ParseAddr(v); err == nil && a.Is6() == p.Addr().Is6() {
				ok = true
				break
			}
		}
		if !ok {
			return errOctaviaValidation("CIDR %s IP version incompatible with all VIPs %s IP version.", c, pyStr(ovAnyList(vips)))
		}
	}
	return nil
}

// newListener builds a PENDING_CREATE listener of lb from a checked
// spec, without storing it.
func (e *Emulator) newListener(lb *octaviaLB, o ovObj) *octaviaListener {
	l := &octaviaListener{
		ovBase:      e.newOctaviaBase(lb.projectID, o.str("name"), o.strs("tags"), o.flag("admin_state_up")),
		description: o.str("description"), lb: lb,
		protocol: o.str("protocol"), port: o.num("protocol_port"), connLimit: o.num("connection_limit"),
		insertHeaders:  map[string]string{},
		timeoutClient:  defaultTimeoutClientData,
		timeoutConnect: defaultTimeoutMemberConnect,
		timeoutMember:  defaultTimeoutMemberData,
		timeoutTCP:     defaultTimeoutTCPInspect,
		hstsMaxAge:     o.nump("hsts_max_age"),
		hstsSubdomains: o.flag("hsts_include_subdomains"), hstsPreload: o.flag("hsts_preload"),
	}
	if h, ok := o["insert_headers"].(map[string]string); ok {
		l.insertHeaders = h
	}
	if c := o.strs("allowed_cidrs"); len(c) > 0 {
		l.allowedCIDRs = c
	}
	e.applyListenerTimeouts(l, o)
	return l
}

func (e *Emulator) applyListenerTimeouts(l *octaviaListener, o ovObj) {
	for k, dst := range map[string]*int{
		"timeout_client_data": &l.timeoutClient, "timeout_member_connect": &l.timeoutConnect,
		"timeout_member_data": &l.timeoutMember, "timeout_tcp_inspect": &l.timeoutTCP,
	} {
		if n, ok := o[k].(int); ok {
			*dst = n
		}
	}
}

func (e *Emulator) storeListener(l *octaviaListener) {
	l.lb.listeners = append(l.lb.listeners, l)
	e.octavia.listeners.Put(l)
}

// --- handlers ---

// projectLB is the load balancer named by a request: 404 when unknown,
// 403 when another project's (Octavia's owner policy).
func (e *Emulator) projectLB(c *octaviaCall, id string) (*octaviaLB, *apiError) {
	lb, ok := e.octavia.lbs.Get(id)
	if !ok {
		return nil, errOctaviaNotFound("Load Balancer", id)
	}
	if lb.projectID != c.tok.projectID {
		return nil, errOctaviaPolicy()
	}
	return lb, nil
}

func (e *Emulator) projectListener(c *octaviaCall, id string) (*octaviaListener, *apiError) {
	l, ok := e.octavia.listeners.Get(id)
	if !ok {
		return nil, errOctaviaNotFound("Listener", id)
	}
	if l.projectID != c.tok.projectID {
		return nil, errOctaviaPolicy()
	}
	return l, nil
}

// checkPostProject is the owner policy on a body's project_id.
func checkPostProject(c *octaviaCall, o ovObj) *apiError {
	for _, k := range []string{"project_id", "tenant_id"} {
		if p := o.str(k); p != "" && p != c.tok.projectID {
			return errOctaviaPolicy()
		}
	}
	return nil
}

// defaultPoolFor is _validate_pool: the pool must be on the listener's
// load balancer and speak a protocol the listener can use.
func (e *Emulator) defaultPoolFor(lb *octaviaLB, poolID, listenerProtocol string) (*octaviaPool, *apiError) {
	if listenerProtocol == "PROMETHEUS" {
		return nil, octaviaErr(http.StatusBadRequest, "Protocol PROMETHEUS listeners cannot have child objects.")
	}
	p, ok := e.octavia.pools.Get(poolID)
	if !ok || p.lb != lb {
		return nil, errOctaviaNotFound("Pool", poolID)
	}
	if err := checkListenerPoolProtocol(listenerProtocol, p.protocol); err != nil {
		return nil, err
	}
	return p, nil
}

func (e *Emulator) createListener(c *octaviaCall) (int, any, *apiError) {
	o, err := e.decodeOctaviaRoot(c, "listener_", "listener", e.listenerSchema(ovPOST))
	if err != nil {
		return 0, nil, err
	}
	lb, err := e.projectLB(c, o.str("loadbalancer_id"))
	if err != nil {
		return 0, nil, err
	}
	if err := checkPostProject(c, o); err != nil {
		return 0, nil, err
	}
	if err := e.quota(lb.projectID, KindListener, 1); err != nil {
		return 0, nil, err
	}
	var pool *octaviaPool
	if id := o.str("default_pool_id"); id != "" {
		if pool, err = e.defaultPoolFor(lb, id, o.str("protocol")); err != nil {
			return 0, nil, err
		}
	}
	if err := checkChildWrite(lb); err != nil {
		return 0, nil, err
	}
	if err := checkListenerCreate(o, lb.listeners, lb.vipAddresses()); err != nil {
		return 0, nil, err
	}
	if err := driverCheckListener(lb.provider, o.str("protocol"), o.strs("allowed_cidrs")); err != nil {
		return 0, nil, err
	}
	if len(o.objs("l7policies")) > 0 {
		return 0, nil, errL7NotEmulated()
	}
	l := e.newListener(lb, o)
	l.defaultPool = pool
	e.beginChildWrite(lb)
	e.storeListener(l)
	return http.StatusCreated, map[string]any{"listener": e.listenerView(l, false)}, nil
}

// errL7NotEmulated answers L7 policies, which the emulator leaves out.
func errL7NotEmulated() *apiError {
	return octaviaErr(http.StatusNotImplemented, "L7 policies are not emulated")
}

func (e *Emulator) getListener(c *octaviaCall) (int, any, *apiError) {
	l, err := e.projectListener(c, c.ids[0])
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"listener": ovFields(c, e.listenerView(l, false))}, nil
}

func (e *Emulator) listListeners(c *octaviaCall) (int, any, *apiError) {
	cols := ovBaseColumns[*octaviaListener]()
	cols["description"] = func(l *octaviaListener) any { return l.description }
	cols["protocol"] = func(l *octaviaListener) any { return l.protocol }
	cols["protocol_port"] = func(l *octaviaListener) any { return l.port }
	cols["connection_limit"] = func(l *octaviaListener) any { return l.connLimit }
	cols["loadbalancer_id"] = func(l *octaviaListener) any { return l.lb.id }
	cols["load_balancer_id"] = cols["loadbalancer_id"]
	cols["default_pool_id"] = func(l *octaviaListener) any {
		if l.defaultPool == nil {
			return nil
		}
		return l.defaultPool.id
	}
	cols["timeout_client_data"] = func(l *octaviaListener) any { return l.timeoutClient }
	cols["timeout_member_connect"] = func(l *octaviaListener) any { return l.timeoutConnect }
	cols["timeout_member_data"] = func(l *octaviaListener) any { return l.timeoutMember }
	cols["timeout_tcp_inspect"] = func(l *octaviaListener) any { return l.timeoutTCP }
	cols["client_authentication"] = func(l *octaviaListener) any { return "NONE" }
	return octaviaList(e, c, ovListSpec[*octaviaListener]{
		collection: "listeners", columns: cols,
		tags:    func(l *octaviaListener) []string { return l.tags },
		project: func(l *octaviaListener) string { return l.projectID },
		id:      func(l *octaviaListener) string { return l.id },
		marker:  e.octavia.listeners.Get,
		render:  func(l *octaviaListener) map[string]any { return e.listenerView(l, false) },
	}, e.octavia.listeners.All())
}

func (e *Emulator) updateListener(c *octaviaCall) (int, any, *apiError) {
	o, err := e.decodeOctaviaRoot(c, "listener_", "listener", e.listenerSchema(ovPUT))
	if err != nil {
		return 0, nil, err
	}
	l, err := e.projectListener(c, c.ids[0])
	if err != nil {
		return 0, nil, err
	}
	lb := l.lb
	// _validate_listener_PUT
	hasRefs := o.str("default_tls_container_ref") != "" || len(o.strs("sni_container_refs")) > 0 || o.str("client_ca_tls_container_ref") != ""
	if (l.protocol == "UDP" || l.protocol == "SCTP") && (hasRefs || len(o.strMap("insert_headers")) > 0) {
		return 0, nil, errOctaviaValidation("%s protocol listener does not support TLS or header insertion.", l.protocol)
	}
	if hasRefs && l.protocol != "TERMINATED_HTTPS" && l.protocol != "PROMETHEUS" {
		return 0, nil, errOctaviaValidation("Certificate container references are not allowed on %s protocol listeners.", l.protocol)
	}
	if a := o.str("client_authentication"); a != "" && a != "NONE" && o.str("client_ca_tls_container_ref") == "" {
		return 0, nil, errOctaviaValidation("Client authentication setting %s requires a client CA container reference.", a)
	}
	if h := o.strMap("insert_headers"); len(h) > 0 {
		if err := checkInsertHeaders(h, l.protocol, false); err != nil {
			return 0, nil, err
		}
	}
	if refs := append(slices.Clone(o.strs("sni_container_refs")), ovNonEmpty(o.str("default_tls_container_ref"))...); len(refs) > 0 {
		return 0, nil, errCertificates(refs)
	}
	if o.str("client_crl_container_ref") != "" && o.str("client_ca_tls_container_ref") == "" {
		return 0, nil, errOctaviaValidation("A client authentication CA reference is required to specify a client authentication revocation list.")
	}
	if ca := o.str("client_ca_tls_container_ref"); ca != "" {
		return 0, nil, errCertificates(append([]string{ca}, ovNonEmpty(o.str("client_crl_container_ref"))...))
	}
	if err := checkCIDRsAgainstVIPs(o.strs("allowed_cidrs"), lb.vipAddresses()); err != nil {
		return 0, nil, err
	}
	if (o.flag("hsts_include_subdomains") || o.flag("hsts_preload")) && l.hstsMaxAge == nil && !o.set("hsts_max_age") {
		return 0, nil, errOctaviaValidation("Cannot enable hsts_include_subdomains or hsts_preload if hsts_max_age was not set as well.")
	}
	if o.set("hsts_max_age") && l.protocol != "TERMINATED_HTTPS" {
		return 0, nil, errOctaviaValidation("The HSTS feature can only be used for listeners using the TERMINATED_HTTPS protocol.")
	}
	var pool *octaviaPool
	if id := o.str("default_pool_id"); id != "" {
		if pool, err = e.defaultPoolFor(lb, id, l.protocol); err != nil {
			return 0, nil, err
		}
	}
	if err := checkChildWrite(lb); err != nil {
		return 0, nil, err
	}
	if err := driverCheckListener(lb.provider, "", o.strs("allowed_cidrs")); err != nil {
		return 0, nil, err
	}

	if o.has("name") {
		l.name = o.str("name")
	}
	if o.has("description") {
		l.description = o.str("description")
	}
	if o.has("admin_state_up") {
		l.adminUp = o.flag("admin_state_up")
	}
	if o.has("connection_limit") {
		l.connLimit = -1
		if n, ok := o["connection_limit"].(int); ok {
			l.connLimit = n
		}
	}
	if o.has("default_pool_id") {
		l.defaultPool = pool
	}
	if o.has("insert_headers") {
		l.insertHeaders = map[string]string{}
		if h, ok := o["insert_headers"].(map[string]string); ok {
			l.insertHeaders = h
		}
	}
	defaults := map[string]int{
		"timeout_client_data": defaultTimeoutClientData, "timeout_member_connect": defaultTimeoutMemberConnect,
		"timeout_member_data": defaultTimeoutMemberData, "timeout_tcp_inspect": defaultTimeoutTCPInspect,
	}
	for k, d := range defaults {
		if o.has(k) && !o.set(k) {
			o[k] = d // _set_default_on_none
		}
	}
	e.applyListenerTimeouts(l, o)
	if o.has("tags") {
		l.tags = slices.Clone(o.strs("tags"))
	}
	if o.has("allowed_cidrs") {
		l.allowedCIDRs = nil
		if c := o.strs("allowed_cidrs"); len(c) > 0 {
			l.allowedCIDRs = c
		}
	}
	if o.has("hsts_max_age") {
		l.hstsMaxAge = o.nump("hsts_max_age")
	}
	e.beginChildWrite(lb, l)
	return http.StatusOK, map[string]any{"listener": e.listenerView(l, false)}, nil
}

func (e *Emulator) deleteListener(c *octaviaCall) (int, any, *apiError) {
	l, err := e.projectListener(c, c.ids[0])
	if err != nil {
		return 0, nil, err
	}
	if err := checkChildWrite(l.lb); err != nil {
		return 0, nil, err
	}
	e.beginChildWrite(l.lb)
	l.prov = ovPendingDelete
	e.touch(&l.ovBase)
	return http.StatusNoContent, nil, nil
}

func (e *Emulator) getListenerStats(c *octaviaCall) (int, any, *apiError) {
	if _, err := e.projectListener(c, c.ids[0]); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"stats": ovZeroStats()}, nil
}

func ovZeroStats() map[string]any {
	return map[string]any{"bytes_in": 0, "bytes_out": 0, "active_connections": 0, "total_connections": 0, "request_errors": 0}
}

// listenerView is ListenerResponse, or ListenerFullResponse (full: in a
// fully-populated create answer, without loadbalancers).
func (e *Emulator) listenerView(l *octaviaListener, full bool) map[string]any {
	v := map[string]any{
		"id": l.id, "name": l.name, "description": l.description,
		"provisioning_status": l.prov, "operating_status": l.oper, "admin_state_up": l.adminUp,
		"protocol": l.protocol, "protocol_port": l.port, "connection_limit": l.connLimit,
		"default_tls_container_ref": nil, "sni_container_refs": []string{},
		"project_id": l.projectID, "tenant_id": l.projectID,
		"default_pool_id": nil, "l7policies": []any{},
		"insert_headers": ovCopyMap(l.insertHeaders),
		"created_at":     ovTime(l.created), "updated_at": ovTimePtr(l.updated),
	}
	if l.defaultPool != nil {
		v["default_pool_id"] = l.defaultPool.id
	}
	if !full {
		v["loadbalancers"] = ovIDList(l.lb.id)
	}
	if e.octaviaAt(1) {
		v["timeout_client_data"] = l.timeoutClient
		v["timeout_member_connect"] = l.timeoutConnect
		v["timeout_member_data"] = l.timeoutMember
		v["timeout_tcp_inspect"] = l.timeoutTCP
	}
	if e.octaviaAt(5) {
		v["tags"] = ovTagList(l.tags)
	}
	if e.octaviaAt(8) {
		v["client_ca_tls_container_ref"] = nil
		v["client_authentication"] = "NONE"
		v["client_crl_container_ref"] = nil
	}
	if e.octaviaAt(12) {
		v["allowed_cidrs"] = ovNullList(l.allowedCIDRs)
	}
	if e.octaviaAt(15) {
		v["tls_ciphers"] = nil
	}
	if e.octaviaAt(17) {
		v["tls_versions"] = nil
	}
	if e.octaviaAt(20) {
		v["alpn_protocols"] = nil
	}
	if e.octaviaAt(27) {
		v["hsts_max_age"] = ovNullInt(l.hstsMaxAge)
		v["hsts_include_subdomains"] = l.hstsSubdomains
		v["hsts_preload"] = l.hstsPreload
	}
	return v
}

func ovCopyMap(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// ovFields keeps the attributes asked for with fields=, as
// _filter_fields does.
func ovFields(c *octaviaCall, v map[string]any) map[string]any {
	fields := c.query.all("fields")
	if len(fields) == 0 {
		return v
	}
	for k := range v {
		if !slices.Contains(fields, k) {
			delete(v, k)
		}
	}
	return v
}

// ovPyBool is oslo's bool_from_string for query flags (cascade,
// additive_only).
func ovPyBool(s string) bool { return ovBoolFromString(strings.TrimSpace(s)) }
