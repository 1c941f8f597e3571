package openstack

import (
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Members: /v2/lbaas/pools/{pool_id}/members
// (octavia/api/v2/controllers/member.py), with the batch update (PUT on
// the collection) that replaces a pool's member set: members are matched
// by (address, protocol_port), keep their IDs and take the new
// attributes, the ones not listed are deleted (unless additive_only),
// the new ones created.

var ovWeightMin, ovWeightMax = ovIntPtr(0), ovIntPtr(256)

// memberSchema is MemberPOST, MemberSingleCreate or MemberPUT.
func (e *Emulator) memberSchema(use ovSchemaUse) ovSchema {
	if use == ovPUT {
		return ovSchema{
			ovStr("name", 255), ovBoolF("admin_state_up"), ovIntF("weight", ovWeightMin, ovWeightMax),
			ovBoolF("backup"), ovIntF("monitor_port", ovPortMin, ovPortMax), ovIPF("monitor_address"), ovTags(),
		}
	}
	s := ovSchema{
		ovStr("name", 255), ovBoolF("admin_state_up").dflt(true), ovIPF("address").req(),
		ovIntF("protocol_port", ovPortMin, ovPortMax).req(),
		ovIntF("weight", ovWeightMin, ovWeightMax).dflt(1), ovBoolF("backup").dflt(false), ovUUIDF("subnet_id"),
	}
	if use == ovPOST {
		s = append(s, ovStr("project_id", 36), ovStr("tenant_id", 36))
	}
	return append(s, ovIntF("monitor_port", ovPortMin, ovPortMax), ovIPF("monitor_address"), ovTags(),
		ovBoolF("request_sriov").dflt(false).from(30))
}

// reservedMemberAddresses is [networking] reserved_ips.
var reservedMemberAddresses = []string{"169.254.169.254"}

// checkMemberAddress is ip_not_reserved.
func checkMemberAddress(addr string) *apiError {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return errOctaviaInvalidOption(addr, "member address")
	}
	if slices.Contains(reservedMemberAddresses, a.String()) {
		return errOctaviaInvalidOption(strings.ToUpper(a.StringExpanded()), "member address")
	}
	return nil
}

func errDuplicateMember(addr string, port int) *apiError {
	return octaviaErr(http.StatusConflict, "Another member on this pool is already using ip %s on protocol_port %d", addr, port)
}

// checkMemberSubnet is the subnet check of member creates: an unknown
// subnet is a 404.
func (e *Emulator) checkMemberSubnet(o ovObj) *apiError {
	if id := o.str("subnet_id"); id != "" && !e.subnets.Has(id) {
		return errOctaviaNotFound("Subnet", id)
	}
	return nil
}

func ovCheckSRIOV(o ovObj) *apiError {
	if o.flag("request_sriov") {
		return octaviaErr(http.StatusBadRequest, "The load balancer flavor does not allow SR-IOV member ports.")
	}
	return nil
}

// newMember builds a PENDING_CREATE member of p, OFFLINE when the pool
// has a health monitor and NO_MONITOR otherwise (db_prepare).
func (e *Emulator) newMember(p *octaviaPool, o ovObj) *octaviaMember {
	m := &octaviaMember{
		ovBase: e.newOctaviaBase(p.projectID, o.str("name"), o.strs("tags"), o.flag("admin_state_up")),
		pool:   p, address: o.str("address"), port: o.num("protocol_port"), weight: o.num("weight"),
		backup: o.flag("backup"), subnetID: o.strp("subnet_id"),
		monitorAddress: o.strp("monitor_address"), monitorPort: o.nump("monitor_port"),
	}
	if p.monitor == nil {
		m.oper = ovNoMonitor
	}
	return m
}

func (e *Emulator) storeMember(m *octaviaMember) {
	m.pool.members = append(m.pool.members, m)
	e.octavia.members.Put(m)
}

func ovFindMember(p *octaviaPool, addr string, port int) *octaviaMember {
	for _, m := range p.members {
		if m.address == addr && m.port == port {
			return m
		}
	}
	return nil
}

// applyMemberUpdate sets what a PUT or a batch entry names.
func applyMemberUpdate(m *octaviaMember, o ovObj) {
	if o.has("name") {
		m.name = o.str("name")
	}
	if o.has("admin_state_up") {
		m.adminUp = o.flag("admin_state_up")
	}
	if o.has("weight") {
		m.weight = 1 // _set_default_on_none
		if n, ok := o["weight"].(int); ok {
			m.weight = n
		}
	}
	if o.has("backup") {
		m.backup = o.flag("backup")
	}
	if o.has("monitor_port") {
		m.monitorPort = o.nump("monitor_port")
	}
	if o.has("monitor_address") {
		m.monitorAddress = o.strp("monitor_address")
	}
	if o.has("tags") {
		m.tags = slices.Clone(o.strs("tags"))
	}
}

// --- handlers ---

// poolOfMembers is the pool of a members URL (the pool controller's
// _lookup): 404 when unknown.
func (e *Emulator) poolOfMembers(c *octaviaCall) (*octaviaPool, *apiError) {
	p, ok := e.octavia.pools.Get(c.ids[0])
	if !ok {
		return nil, errOctaviaNotFound("Pool", c.ids[0])
	}
	return p, nil
}

// projectMember is a member of the URL's pool.
func (e *Emulator) projectMember(c *octaviaCall) (*octaviaMember, *apiError) {
	if _, err := e.poolOfMembers(c); err != nil {
		return nil, err
	}
	id := c.ids[1]
	m, ok := e.octavia.members.Get(id)
	if !ok {
		return nil, errOctaviaNotFound("Member", id)
	}
	if m.projectID != c.tok.projectID {
		return nil, errOctaviaPolicy()
	}
	if m.pool.id != c.ids[0] {
		return nil, errOctaviaNotFound("Member", id)
	}
	return m, nil
}

func (e *Emulator) createMember(c *octaviaCall) (int, any, *apiError) {
	p, err := e.poolOfMembers(c)
	if err != nil {
		return 0, nil, err
	}
	o, err := e.decodeOctaviaRoot(c, "member_", "member", e.memberSchema(ovPOST))
	if err != nil {
		return 0, nil, err
	}
	if p.projectID != c.tok.projectID {
		return 0, nil, errOctaviaPolicy()
	}
	if err := checkPostProject(c, o); err != nil {
		return 0, nil, err
	}
	if err := checkMemberAddress(o.str("address")); err != nil {
		return 0, nil, err
	}
	if err := e.checkMemberSubnet(o); err != nil {
		return 0, nil, err
	}
	if err := e.quota(p.projectID, KindMember, 1); err != nil {
		return 0, nil, err
	}
	if err := ovCheckSRIOV(o); err != nil {
		return 0, nil, err
	}
	if err := checkPoolChildWrite(p); err != nil {
		return 0, nil, err
	}
	if ovFindMember(p, o.str("address"), o.num("protocol_port")) != nil {
		return 0, nil, errDuplicateMember(o.str("address"), o.num("protocol_port"))
	}
	if err := e.driverCheckMember(p.lb, p, o, false); err != nil {
		return 0, nil, err
	}
	m := e.newMember(p, o)
	e.beginPoolChildWrite(p)
	e.storeMember(m)
	return http.StatusCreated, map[string]any{"member": e.memberView(m)}, nil
}

func (e *Emulator) getMember(c *octaviaCall) (int, any, *apiError) {
	m, err := e.projectMember(c)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"member": ovFields(c, e.memberView(m))}, nil
}

func (e *Emulator) listMembers(c *octaviaCall) (int, any, *apiError) {
	p, err := e.poolOfMembers(c)
	if err != nil {
		return 0, nil, err
	}
	if p.projectID != c.tok.projectID {
		return 0, nil, errOctaviaPolicy()
	}
	cols := ovBaseColumns[*octaviaMember]()
	cols["address"] = func(m *octaviaMember) any { return m.address }
	cols["ip_address"] = cols["address"]
	cols["protocol_port"] = func(m *octaviaMember) any { return m.port }
	cols["weight"] = func(m *octaviaMember) any { return m.weight }
	cols["backup"] = func(m *octaviaMember) any { return m.backup }
	cols["subnet_id"] = func(m *octaviaMember) any { return ovStrPtr(m.subnetID) }
	cols["monitor_address"] = func(m *octaviaMember) any { return ovStrPtr(m.monitorAddress) }
	cols["monitor_port"] = func(m *octaviaMember) any {
		if m.monitorPort == nil {
			return nil
		}
		return *m.monitorPort
	}
	cols["pool_id"] = func(m *octaviaMember) any { return m.pool.id }
	cols["vnic_type"] = func(*octaviaMember) any { return "normal" }
	return octaviaList(e, c, ovListSpec[*octaviaMember]{
		collection: "members", columns: cols,
		tags:    func(m *octaviaMember) []string { return m.tags },
		project: func(m *octaviaMember) string { return m.projectID },
		id:      func(m *octaviaMember) string { return m.id },
		marker:  e.octavia.members.Get,
		render:  e.memberView,
	}, slices.Clone(p.members))
}

func (e *Emulator) updateMember(c *octaviaCall) (int, any, *apiError) {
	o, err := e.decodeOctaviaRoot(c, "member_", "member", e.memberSchema(ovPUT))
	if err != nil {
		return 0, nil, err
	}
	m, err := e.projectMember(c)
	if err != nil {
		return 0, nil, err
	}
	if err := checkPoolChildWrite(m.pool); err != nil {
		return 0, nil, err
	}
	applyMemberUpdate(m, o)
	e.beginPoolChildWrite(m.pool)
	m.prov = ovPendingUpdate
	e.touch(&m.ovBase)
	return http.StatusOK, map[string]any{"member": e.memberView(m)}, nil
}

func (e *Emulator) deleteMember(c *octaviaCall) (int, any, *apiError) {
	m, err := e.projectMember(c)
	if err != nil {
		return 0, nil, err
	}
	if err := checkPoolChildWrite(m.pool); err != nil {
		return 0, nil, err
	}
	e.beginPoolChildWrite(m.pool)
	m.prov = ovPendingDelete
	e.touch(&m.ovBase)
	return http.StatusNoContent, nil, nil
}

// batchUpdateMembers is PUT /v2/lbaas/pools/{pool_id}/members with
// {"members": [...]}: 202 and no body. A batch that changes nothing is
// a no-op that leaves the load balancer ACTIVE, as in Octavia.
func (e *Emulator) batchUpdateMembers(c *octaviaCall) (int, any, *apiError) {
	p, err := e.poolOfMembers(c)
	if err != nil {
		return 0, nil, err
	}
	body, err := readOctaviaBody(c, "members_")
	if err != nil {
		return 0, nil, err
	}
	var extra []string
	for k := range body {
		if k != "members" {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		return 0, nil, errOvUnknownAttributes("members_", extra)
	}
	var specs []ovObj
	if raw, ok := body["members"]; ok {
		v, err := e.decodeOctaviaValue(raw, ovField{name: "members", kind: ovObjectList, sub: e.memberSchema(ovPOST)}, "members_")
		if err != nil {
			return 0, nil, err
		}
		specs, _ = v.([]ovObj)
	}
	additive := false
	if v, ok := c.query.last("additive_only"); ok && e.octaviaAt(11) {
		additive = ovPyBool(v)
	}
	if p.projectID != c.tok.projectID {
		return 0, nil, errOctaviaPolicy()
	}
	if err := checkPoolChildWrite(p); err != nil {
		return 0, nil, err
	}

	type update struct {
		m *octaviaMember
		o ovObj
	}
	var (
		created []ovObj
		updated []update
		seen    = map[*octaviaMember]bool{}
	)
	for _, o := range specs {
		if err := checkPostProject(c, o); err != nil {
			return 0, nil, err
		}
		m := ovFindMember(p, o.str("address"), o.num("protocol_port"))
		if m == nil {
			if err := checkMemberAddress(o.str("address")); err != nil {
				return 0, nil, err
			}
			created = append(created, o)
			continue
		}
		if seen[m] {
			return 0, nil, errOctaviaValidation("Member must be updated only once in the same request.")
		}
		seen[m] = true
		updated = append(updated, update{m, o})
	}
	var deleted []*octaviaMember
	for _, m := range p.members {
		if !seen[m] {
			deleted = append(deleted, m)
		}
	}
	if len(created) == 0 && len(updated) == 0 && len(deleted) == 0 {
		return http.StatusAccepted, nil, nil
	}
	grow := len(created)
	if !additive {
		grow -= len(deleted)
	}
	if grow > 0 {
		if err := e.quota(p.projectID, KindMember, grow); err != nil {
			return 0, nil, err
		}
	}
	keys := map[string]bool{}
	for _, o := range created {
		if err := e.checkMemberSubnet(o); err != nil {
			return 0, nil, err
		}
		if err := ovCheckSRIOV(o); err != nil {
			return 0, nil, err
		}
		k := o.str("address") + "\x00" + strconv.Itoa(o.num("protocol_port"))
		if keys[k] {
			return 0, nil, errDuplicateMember(o.str("address"), o.num("protocol_port"))
		}
		keys[k] = true
	}
	for _, o := range specs {
		if err := e.driverCheckMember(p.lb, p, o, true); err != nil {
			return 0, nil, err
		}
	}

	e.beginPoolChildWrite(p)
	for _, o := range created {
		e.storeMember(e.newMember(p, o))
	}
	for _, u := range updated {
		// The batch entries are MemberPOST bodies: their defaults
		// (weight 1, backup false, admin_state_up true, no monitor
		// address or port) apply to the members they update.
		o := u.o
		for k, d := range map[string]any{"monitor_port": nil, "monitor_address": nil} {
			if !o.has(k) {
				o[k] = d
			}
		}
		applyMemberUpdate(u.m, o)
		u.m.prov = ovPendingUpdate
		e.touch(&u.m.ovBase)
	}
	if !additive {
		for _, m := range deleted {
			m.prov = ovPendingDelete
			e.touch(&m.ovBase)
		}
	}
	return http.StatusAccepted, nil, nil
}

// memberView is MemberResponse (the full response is the same).
func (e *Emulator) memberView(m *octaviaMember) map[string]any {
	v := map[string]any{
		"id": m.id, "name": m.name, "operating_status": m.oper, "provisioning_status": m.prov,
		"admin_state_up": m.adminUp, "address": m.address, "protocol_port": m.port, "weight": m.weight,
		"backup": m.backup, "subnet_id": ovNullStr(m.subnetID),
		"project_id": m.projectID, "tenant_id": m.projectID,
		"created_at": ovTime(m.created), "updated_at": ovTimePtr(m.updated),
		"monitor_address": ovNullStr(m.monitorAddress), "monitor_port": ovNullInt(m.monitorPort),
	}
	if e.octaviaAt(5) {
		v["tags"] = ovTagList(m.tags)
	}
	if e.octaviaAt(30) {
		v["vnic_type"] = "normal"
	}
	return v
}
