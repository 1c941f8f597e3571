package openstack

import (
	"net/http"
	"regexp"
	"slices"
)

// Pools: /v2/lbaas/pools (octavia/api/v2/controllers/pool.py).

// Pool TLS defaults ([api_settings] default_pool_*).
const poolCiphersDefault = "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:" +
	"ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:" +
	"ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:" +
	"DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384:DHE-RSA-CHACHA20-POLY1305"

var (
	poolTLSVersionsDefault = []string{"TLSv1.2", "TLSv1.3"}
	poolALPNDefault        = []string{"h2", "http/1.1", "http/1.0"}
	cookieNamePattern      = regexp.MustCompile(`^[^\s,;\\]+$`)
)

func (e *Emulator) poolProtocols() []string {
	p := []string{"TCP", "HTTP", "HTTPS", "PROXY"}
	if e.octaviaAt(22) {
		p = append(p, "PROXYV2")
	}
	p = append(p, "UDP")
	if e.octaviaAt(23) {
		p = append(p, "SCTP")
	}
	return p
}

func (e *Emulator) lbAlgorithms() []string {
	a := []string{"LEAST_CONNECTIONS", "ROUND_ROBIN", "SOURCE_IP"}
	if e.octaviaAt(13) {
		a = append(a, "SOURCE_IP_PORT")
	}
	return a
}

func persistenceSchema(put bool) ovSchema {
	typ := ovEnumF("type", "SOURCE_IP", "HTTP_COOKIE", "APP_COOKIE")
	if !put {
		typ = typ.req()
	}
	cookie := ovStr("cookie_name", 255)
	cookie.pattern = cookieNamePattern
	return ovSchema{typ, cookie, ovIntF("persistence_timeout", nil, nil), ovIPF("persistence_granularity")}
}

// poolSchema is PoolPOST, PoolSingleCreate or PoolPUT.
func (e *Emulator) poolSchema(use ovSchemaUse) ovSchema {
	s := ovSchema{ovStr("name", 255), ovStr("description", 255)}
	switch use {
	case ovPUT:
		s = append(s, ovBoolF("admin_state_up"), ovEnumF("lb_algorithm", e.lbAlgorithms()...),
			ovField{name: "session_persistence", kind: ovObject, sub: persistenceSchema(true)})
	case ovPOST:
		s = append(s, ovBoolF("admin_state_up").dflt(true), ovUUIDF("listener_id"), ovUUIDF("loadbalancer_id"),
			ovEnumF("protocol", e.poolProtocols()...).req(), ovEnumF("lb_algorithm", e.lbAlgorithms()...).req(),
			ovField{name: "session_persistence", kind: ovObject, sub: persistenceSchema(false)},
			ovStr("project_id", 36), ovStr("tenant_id", 36),
			ovField{name: "healthmonitor", kind: ovObject, sub: e.monitorSchema(ovSingle)},
			ovField{name: "members", kind: ovObjectList, sub: e.memberSchema(ovSingle)})
	case ovSingle:
		s = append(s, ovBoolF("admin_state_up").dflt(true),
			ovEnumF("protocol", e.poolProtocols()...), ovEnumF("lb_algorithm", e.lbAlgorithms()...),
			ovField{name: "session_persistence", kind: ovObject, sub: persistenceSchema(false)},
			ovField{name: "healthmonitor", kind: ovObject, sub: e.monitorSchema(ovSingle)},
			ovField{name: "members", kind: ovObjectList, sub: e.memberSchema(ovSingle)})
	}
	tlsEnabled := ovBoolF("tls_enabled").from(8)
	if use != ovPUT {
		tlsEnabled = tlsEnabled.dflt(false)
	}
	return append(s, ovTags(),
		ovStr("tls_container_ref", 255).from(8), ovStr("ca_tls_container_ref", 255).from(8),
		ovStr("crl_container_ref", 255).from(8), tlsEnabled,
		ovStr("tls_ciphers", 2048).from(15),
		ovField{name: "tls_versions", kind: ovStrList, maxLen: 32, since: 18},
		ovField{name: "alpn_protocols", kind: ovStrList, since: 24})
}

// checkPersistence is the pool controller's session persistence checks
// for a pool of protocol (put: the PUT wording).
func checkPersistence(sp ovObj, protocol string, put bool) *apiError {
	if sp == nil {
		return nil
	}
	typ := sp.str("type")
	if protocol == "UDP" || protocol == "SCTP" {
		switch {
		case typ == "SOURCE_IP" && sp.set("cookie_name"):
			return errOctaviaValidation("session_persistence SOURCE_IP type for UDP and SCTP protocols only accepts: " +
				"type, persistence_timeout, persistence_granularity.")
		case sp.set("cookie_name"):
			return errOctaviaValidation("Cookie names are not supported for UDP/SCTP pools.")
		case typ == "HTTP_COOKIE" || typ == "APP_COOKIE":
			return errOctaviaValidation("Session persistence of type %s is not supported for UDP/SCTP protocol pools.", typ)
		}
	} else if sp.set("persistence_timeout") || sp.set("persistence_granularity") {
		if put {
			return errOctaviaValidation("persistence_timeout and persistence_granularity is only for UDP protocol pools.")
		}
		return errOctaviaValidation("persistence_timeout and persistence_granularity is only for UDP and SCTP protocol pools.")
	}
	if sp.set("cookie_name") && typ != "APP_COOKIE" {
		return errOctaviaValidation(`Field "cookie_name" can only be specified with session persistence of type "APP_COOKIE".`)
	}
	if typ == "APP_COOKIE" && !sp.set("cookie_name") {
		return errOctaviaValidation(`Field "cookie_name" must be specified when using the "APP_COOKIE" session persistence type.`)
	}
	return nil
}

// checkPoolTLS is _validate_create_pool's certificate checks: no
// reference resolves without Barbican.
func checkPoolTLS(o ovObj) *apiError {
	if o.set("crl_container_ref") && !o.set("ca_tls_container_ref") {
		return errOctaviaValidation("A CA certificate reference is required to specify a revocation list.")
	}
	if r := o.str("tls_container_ref"); r != "" {
		return errCertificates([]string{r})
	}
	if ca := o.str("ca_tls_container_ref"); ca != "" {
		return errCertificates(append([]string{ca}, ovNonEmpty(o.str("crl_container_ref"))...))
	}
	return nil
}

// newPool builds a PENDING_CREATE pool of lb from a checked spec,
// without storing it.
func (e *Emulator) newPool(lb *octaviaLB, o ovObj) *octaviaPool {
	p := &octaviaPool{
		ovBase:      e.newOctaviaBase(lb.projectID, o.str("name"), o.strs("tags"), o.flag("admin_state_up")),
		description: o.str("description"), lb: lb,
		protocol: o.str("protocol"), algorithm: o.str("lb_algorithm"),
		persistence: newPersistence(o.obj("session_persistence")),
		tlsEnabled:  o.flag("tls_enabled"),
	}
	e.applyPoolTLS(p, o)
	return p
}

func (e *Emulator) applyPoolTLS(p *octaviaPool, o ovObj) {
	if o.has("tls_ciphers") {
		p.tlsCiphers = o.strp("tls_ciphers")
	}
	if o.has("tls_versions") {
		p.tlsVersions = o.strs("tls_versions")
	}
	if o.has("alpn_protocols") {
		p.alpn = o.strs("alpn_protocols")
	}
	if p.tlsEnabled {
		if p.tlsCiphers == nil {
			c := poolCiphersDefault
			p.tlsCiphers = &c
		}
		if p.tlsVersions == nil {
			p.tlsVersions = slices.Clone(poolTLSVersionsDefault)
		}
		if p.alpn == nil && e.octaviaAt(24) {
			p.alpn = slices.Clone(poolALPNDefault)
		}
	}
}

func newPersistence(sp ovObj) *octaviaPersistence {
	if sp == nil {
		return nil
	}
	return &octaviaPersistence{
		typ: sp.str("type"), cookieName: sp.strp("cookie_name"),
		timeout: sp.nump("persistence_timeout"), granularity: sp.strp("persistence_granularity"),
	}
}

func (e *Emulator) storePool(p *octaviaPool) {
	p.lb.pools = append(p.lb.pools, p)
	e.octavia.pools.Put(p)
}

// --- handlers ---

func (e *Emulator) projectPool(c *octaviaCall, id string) (*octaviaPool, *apiError) {
	p, ok := e.octavia.pools.Get(id)
	if !ok {
		return nil, errOctaviaNotFound("Pool", id)
	}
	if p.projectID != c.tok.projectID {
		return nil, errOctaviaPolicy()
	}
	return p, nil
}

func (e *Emulator) createPool(c *octaviaCall) (int, any, *apiError) {
	o, err := e.decodeOctaviaRoot(c, "pool_", "pool", e.poolSchema(ovPOST))
	if err != nil {
		return 0, nil, err
	}
	var (
		lb       *octaviaLB
		listener *octaviaListener
	)
	switch {
	case o.set("loadbalancer_id"):
		if lb, err = e.projectLB(c, o.str("loadbalancer_id")); err != nil {
			return 0, nil, err
		}
		if o.set("listener_id") {
			if listener, err = e.projectListener(c, o.str("listener_id")); err != nil {
				return 0, nil, err
			}
		}
	case o.set("listener_id"):
		if listener, err = e.projectListener(c, o.str("listener_id")); err != nil {
			return 0, nil, err
		}
		lb = listener.lb
	default:
		return 0, nil, errOctaviaValidation("Must provide at least one of: loadbalancer_id, listener_id")
	}
	if err := checkPostProject(c, o); err != nil {
		return 0, nil, err
	}
	if listener != nil && listener.lb != lb {
		return 0, nil, errOctaviaNotFound("Listener", listener.id)
	}
	if listener != nil {
		if listener.protocol == "PROMETHEUS" {
			return 0, nil, octaviaErr(http.StatusBadRequest, "Protocol PROMETHEUS listeners cannot have child objects.")
		}
		if err := checkListenerPoolProtocol(listener.protocol, o.str("protocol")); err != nil {
			return 0, nil, err
		}
	}
	if err := checkPersistence(o.obj("session_persistence"), o.str("protocol"), false); err != nil {
		return 0, nil, err
	}
	if err := e.quota(lb.projectID, KindPool, 1); err != nil {
		return 0, nil, err
	}
	if listener != nil && listener.defaultPool != nil {
		return 0, nil, octaviaErr(http.StatusConflict, "This listener already has a default pool")
	}
	if err := checkChildWrite(lb); err != nil {
		return 0, nil, err
	}
	if err := checkPoolTLS(o); err != nil {
		return 0, nil, err
	}
	if err := driverCheckPool(lb.provider, o.str("protocol"), o.str("lb_algorithm"), o.obj("session_persistence")); err != nil {
		return 0, nil, err
	}
	if o.set("healthmonitor") || len(o.objs("members")) > 0 {
		// PoolPOST takes them, but the controller ignores them outside
		// a fully-populated load balancer create.
		delete(o, "healthmonitor")
		delete(o, "members")
	}
	p := e.newPool(lb, o)
	if listener != nil {
		e.beginChildWrite(lb, listener)
		listener.defaultPool = p
	} else {
		e.beginChildWrite(lb)
	}
	e.storePool(p)
	return http.StatusCreated, map[string]any{"pool": e.poolView(p, false)}, nil
}

func (e *Emulator) getPool(c *octaviaCall) (int, any, *apiError) {
	p, err := e.projectPool(c, c.ids[0])
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"pool": ovFields(c, e.poolView(p, false))}, nil
}

func (e *Emulator) listPools(c *octaviaCall) (int, any, *apiError) {
	cols := ovBaseColumns[*octaviaPool]()
	cols["description"] = func(p *octaviaPool) any { return p.description }
	cols["protocol"] = func(p *octaviaPool) any { return p.protocol }
	cols["lb_algorithm"] = func(p *octaviaPool) any { return p.algorithm }
	cols["loadbalancer_id"] = func(p *octaviaPool) any { return p.lb.id }
	cols["load_balancer_id"] = cols["loadbalancer_id"]
	cols["tls_enabled"] = func(p *octaviaPool) any { return p.tlsEnabled }
	cols["healthmonitor_id"] = func(p *octaviaPool) any {
		if p.monitor == nil {
			return nil
		}
		return p.monitor.id
	}
	return octaviaList(e, c, ovListSpec[*octaviaPool]{
		collection: "pools", columns: cols,
		tags:    func(p *octaviaPool) []string { return p.tags },
		project: func(p *octaviaPool) string { return p.projectID },
		id:      func(p *octaviaPool) string { return p.id },
		marker:  e.octavia.pools.Get,
		render:  func(p *octaviaPool) map[string]any { return e.poolView(p, false) },
	}, e.octavia.pools.All())
}

func (e *Emulator) updatePool(c *octaviaCall) (int, any, *apiError) {
	o, err := e.decodeOctaviaRoot(c, "pool_", "pool", e.poolSchema(ovPUT))
	if err != nil {
		return 0, nil, err
	}
	p, err := e.projectPool(c, c.ids[0])
	if err != nil {
		return 0, nil, err
	}
	sp := o.obj("session_persistence")
	if sp != nil && !sp.set("type") && p.persistence != nil {
		sp["type"] = p.persistence.typ
	}
	if err := checkPersistence(sp, p.protocol, true); err != nil {
		return 0, nil, err
	}
	if o.set("crl_container_ref") && !o.set("ca_tls_container_ref") {
		return 0, nil, errOctaviaValidation("A CA reference is required to specify a certificate revocation list.")
	}
	if err := checkPoolTLS(o); err != nil {
		return 0, nil, err
	}
	if err := checkChildWrite(p.lb); err != nil {
		return 0, nil, err
	}
	if err := driverCheckPool(p.lb.provider, "", o.str("lb_algorithm"), sp); err != nil {
		return 0, nil, err
	}

	if o.has("name") {
		p.name = o.str("name")
	}
	if o.has("description") {
		p.description = o.str("description")
	}
	if o.has("admin_state_up") {
		p.adminUp = o.flag("admin_state_up")
	}
	if o.set("lb_algorithm") {
		p.algorithm = o.str("lb_algorithm")
	}
	if o.has("session_persistence") {
		// update_pool_and_sp: null removes it, an object updates the
		// attributes it names (creating it when there is none).
		switch {
		case sp == nil:
			p.persistence = nil
		case p.persistence == nil:
			p.persistence = newPersistence(sp)
		default:
			if sp.set("type") {
				p.persistence.typ = sp.str("type")
			}
			if sp.has("cookie_name") {
				p.persistence.cookieName = sp.strp("cookie_name")
			}
			if sp.has("persistence_timeout") {
				p.persistence.timeout = sp.nump("persistence_timeout")
			}
			if sp.has("persistence_granularity") {
				p.persistence.granularity = sp.strp("persistence_granularity")
			}
		}
	}
	if o.has("tags") {
		p.tags = slices.Clone(o.strs("tags"))
	}
	if o.has("tls_enabled") {
		p.tlsEnabled = o.flag("tls_enabled")
	}
	e.applyPoolTLS(p, o)
	e.beginPoolChildWrite(p)
	return http.StatusOK, map[string]any{"pool": e.poolView(p, false)}, nil
}

func (e *Emulator) deletePool(c *octaviaCall) (int, any, *apiError) {
	p, err := e.projectPool(c, c.ids[0])
	if err != nil {
		return 0, nil, err
	}
	if err := checkChildWrite(p.lb); err != nil {
		return 0, nil, err
	}
	e.beginChildWrite(p.lb, p.listenersOf()...)
	p.prov = ovPendingDelete
	e.touch(&p.ovBase)
	return http.StatusNoContent, nil, nil
}

// poolView is PoolResponse, or PoolFullResponse (full: members and the
// health monitor in full, no loadbalancers or healthmonitor_id).
func (e *Emulator) poolView(p *octaviaPool, full bool) map[string]any {
	var sp any
	if s := p.persistence; s != nil {
		sp = map[string]any{
			"type": s.typ, "cookie_name": ovNullStr(s.cookieName),
			"persistence_timeout": ovNullInt(s.timeout), "persistence_granularity": ovNullStr(s.granularity),
		}
	}
	var listeners []string
	for _, l := range p.listenersOf() {
		listeners = append(listeners, l.id)
	}
	v := map[string]any{
		"id": p.id, "name": p.name, "description": p.description,
		"provisioning_status": p.prov, "operating_status": p.oper, "admin_state_up": p.adminUp,
		"protocol": p.protocol, "lb_algorithm": p.algorithm, "session_persistence": sp,
		"project_id": p.projectID, "tenant_id": p.projectID,
		"listeners":  ovIDList(listeners...),
		"created_at": ovTime(p.created), "updated_at": ovTimePtr(p.updated),
	}
	if full {
		members := make([]any, 0, len(p.members))
		for _, m := range p.members {
			members = append(members, e.memberView(m))
		}
		v["members"] = members
		if p.monitor != nil {
			v["healthmonitor"] = e.monitorView(p.monitor, true)
		}
	} else {
		v["loadbalancers"] = ovIDList(p.lb.id)
		var ids []string
		for _, m := range p.members {
			ids = append(ids, m.id)
		}
		v["members"] = ovIDList(ids...)
		v["healthmonitor_id"] = nil
		if p.monitor != nil {
			v["healthmonitor_id"] = p.monitor.id
		}
	}
	if e.octaviaAt(5) {
		v["tags"] = ovTagList(p.tags)
	}
	if e.octaviaAt(8) {
		v["tls_container_ref"] = nil
		v["ca_tls_container_ref"] = nil
		v["crl_container_ref"] = nil
		v["tls_enabled"] = p.tlsEnabled
	}
	if e.octaviaAt(15) {
		v["tls_ciphers"] = ovNullStr(p.tlsCiphers)
	}
	if e.octaviaAt(18) {
		v["tls_versions"] = ovNullList(p.tlsVersions)
	}
	if e.octaviaAt(24) {
		v["alpn_protocols"] = ovNullList(p.alpn)
	}
	return v
}
