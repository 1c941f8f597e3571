package openstack

import (
	"slices"
	"strings"
	"time"
)

// Octavia's objects and their provisioning lifecycle.
//
// A write is accepted at once and carried out later by the controller
// worker. Octavia serialises writes per load balancer: the API moves the
// load balancer (and the objects the write touches) to PENDING_* and
// refuses every other write on the tree until the worker is done. The
// emulator records when the worker will be done (readyAt, now plus
// ProvisioningDelay) and completes the operation on the first call that
// comes after it (settleOctavia), so the clock alone drives it: no
// goroutines, and a fake clock makes tests exact. An admin hold keeps an
// operation pending until it is released; an admin failure makes it end
// in ERROR.

// Provisioning and operating statuses.
const (
	ovActive        = "ACTIVE"
	ovPendingCreate = "PENDING_CREATE"
	ovPendingUpdate = "PENDING_UPDATE"
	ovPendingDelete = "PENDING_DELETE"
	ovError         = "ERROR"
	ovDeleted       = "DELETED"

	ovOnline    = "ONLINE"
	ovOffline   = "OFFLINE"
	ovDegraded  = "DEGRADED"
	ovNoMonitor = "NO_MONITOR"
	ovDraining  = "DRAINING"
)

func ovPending(status string) bool { return strings.HasPrefix(status, "PENDING_") }

// ovBase is what every Octavia object has.
type ovBase struct {
	seq       uint64
	id        string
	name      string
	projectID string
	tags      []string
	adminUp   bool
	prov      string
	oper      string
	created   time.Time
	updated   *time.Time
}

func (b *ovBase) base() *ovBase { return b }

type octaviaLB struct {
	ovBase
	description  string
	provider     string
	vipAddress   string
	vipPortID    string
	vipSubnetID  string
	vipNetworkID string
	vipQoSPolicy *string
	vipSGIDs     []string
	// additionalVIPs are the further VIPs of a load balancer created
	// with additional_vips (API 2.26): further fixed IPs of the one VIP
	// port, fixed at creation.
	additionalVIPs []additionalVIP
	// ownsPort: the VIP port was created by Octavia (not given as
	// vip_port_id), so deleting the load balancer deletes it.
	ownsPort bool
	flavorID *string
	zone     *string
	// topology is SINGLE, or what the flavor sets.
	topology  string
	listeners []*octaviaListener // in creation order
	pools     []*octaviaPool

	// readyAt is when the pending operation completes.
	readyAt time.Time
	// held keeps a pending operation pending (admin).
	held bool
	// failNext makes the pending (or next) operation end in ERROR (admin).
	failNext bool
}

// additionalVIP is one of a load balancer's additional VIPs: a fixed IP
// of its VIP port on another subnet of the VIP's network (Octavia's
// AdditionalVip: octavia/network/drivers/neutron/base.py:75-109).
type additionalVIP struct {
	subnetID  string
	ipAddress string
}

type octaviaListener struct {
	ovBase
	description    string
	lb             *octaviaLB
	protocol       string
	port           int
	connLimit      int
	defaultPool    *octaviaPool
	insertHeaders  map[string]string
	timeoutClient  int
	timeoutConnect int
	timeoutMember  int
	timeoutTCP     int
	allowedCIDRs   []string // nil is None
	hstsMaxAge     *int
	hstsSubdomains bool
	hstsPreload    bool
}

type octaviaPool struct {
	ovBase
	description string
	lb          *octaviaLB
	protocol    string
	algorithm   string
	persistence *octaviaPersistence
	members     []*octaviaMember
	monitor     *octaviaMonitor
	tlsEnabled  bool
	tlsCiphers  *string
	tlsVersions []string
	alpn        []string
}

type octaviaPersistence struct {
	typ         string
	cookieName  *string
	timeout     *int
	granularity *string
}

type octaviaMember struct {
	ovBase
	pool           *octaviaPool
	address        string
	port           int
	weight         int
	backup         bool
	subnetID       *string
	monitorAddress *string
	monitorPort    *int
	// health is the admin-set health of a monitored member ("" healthy):
	// what the health manager would report from the amphora.
	health string
}

type octaviaMonitor struct {
	ovBase
	pool           *octaviaPool
	typ            string
	delay          int
	timeout        int
	maxRetries     int
	maxRetriesDown int
	httpMethod     *string
	urlPath        *string
	expectedCodes  *string
	httpVersion    *float64
	domainName     *string
}

// listenersOf are the listeners whose default pool p is.
func (p *octaviaPool) listenersOf() []*octaviaListener {
	var out []*octaviaListener
	for _, l := range p.lb.listeners {
		if l.defaultPool == p {
			out = append(out, l)
		}
	}
	return out
}

// newOctaviaBase starts an object: created now (at the database's
// second resolution), PENDING_CREATE and OFFLINE. Callers hold e.mu.
func (e *Emulator) newOctaviaBase(projectID, name string, tags []string, adminUp bool) ovBase {
	return ovBase{
		seq: e.nextSeq(), id: e.ids.uuid(), name: name, projectID: projectID, tags: slices.Clone(tags),
		adminUp: adminUp, prov: ovPendingCreate, oper: ovOffline, created: e.now().Truncate(time.Second),
	}
}

// touch records an update of b now.
func (e *Emulator) touch(b *ovBase) {
	t := e.now().Truncate(time.Second)
	b.updated = &t
}

// startOperation moves lb to status and schedules the operation's end.
// Callers hold e.mu.
func (e *Emulator) startOperation(lb *octaviaLB, status string) {
	lb.prov = status
	lb.readyAt = e.now().Add(e.octavia.delay)
	if status != ovPendingCreate {
		e.touch(&lb.ovBase)
	}
}

// settleOctavia completes every pending operation that is due. Callers
// hold e.mu.
func (e *Emulator) settleOctavia() {
	now := e.now()
	for _, lb := range e.octavia.lbs.All() {
		if ovPending(lb.prov) && !lb.held && !now.Before(lb.readyAt) {
			e.completeOperation(lb, lb.readyAt)
		}
	}
}

// completeOperation ends lb's pending operation at t, as the controller
// worker does: created and updated objects become ACTIVE, deleted ones
// go. With failNext set it ends in ERROR instead.
func (e *Emulator) completeOperation(lb *octaviaLB, t time.Time) {
	t = t.UTC().Truncate(time.Second)
	if lb.failNext {
		lb.failNext = false
		e.failOperation(lb, t)
		return
	}
	if lb.prov == ovPendingDelete {
		e.removeLB(lb)
		return
	}
	done := func(b *ovBase) bool {
		if !ovPending(b.prov) {
			return false
		}
		b.prov = ovActive
		b.updated = &t
		return true
	}
	for _, l := range slices.Clone(lb.listeners) {
		if l.prov == ovPendingDelete {
			e.removeListener(l)
			continue
		}
		done(&l.ovBase)
	}
	for _, p := range slices.Clone(lb.pools) {
		if p.prov == ovPendingDelete {
			e.removePool(p)
			continue
		}
		if p.monitor != nil {
			if p.monitor.prov == ovPendingDelete {
				e.removeMonitor(p.monitor)
			} else {
				done(&p.monitor.ovBase)
			}
		}
		for _, m := range slices.Clone(p.members) {
			if m.prov == ovPendingDelete {
				e.removeMember(m)
				continue
			}
			done(&m.ovBase)
		}
		done(&p.ovBase)
	}
	lb.prov = ovActive
	lb.updated = &t
	e.refreshOperating(lb)
}

// failOperation ends lb's pending operation in ERROR, as a failed flow
// does: the load balancer and the objects the operation touched are
// ERROR, deleted ones stay.
func (e *Emulator) failOperation(lb *octaviaLB, t time.Time) {
	fail := func(b *ovBase) {
		if ovPending(b.prov) {
			b.prov = ovError
			b.updated = &t
		}
	}
	for _, l := range lb.listeners {
		fail(&l.ovBase)
	}
	for _, p := range lb.pools {
		fail(&p.ovBase)
		if p.monitor != nil {
			fail(&p.monitor.ovBase)
		}
		for _, m := range p.members {
			fail(&m.ovBase)
		}
	}
	lb.prov = ovError
	lb.updated = &t
}

// refreshOperating recomputes the operating statuses of lb's settled
// objects as the health manager reports them: admin-down objects are
// OFFLINE, members NO_MONITOR without a health monitor and otherwise
// ONLINE (or their admin-set health), and a pool with unhealthy members
// DEGRADED or ERROR, which degrades its listeners and the load balancer.
func (e *Emulator) refreshOperating(lb *octaviaLB) {
	settled := func(b *ovBase) bool { return b.prov == ovActive }
	for _, p := range lb.pools {
		monitored := p.monitor != nil && p.monitor.adminUp && p.monitor.prov != ovPendingCreate
		bad := 0
		for _, m := range p.members {
			if !settled(&m.ovBase) {
				continue
			}
			switch {
			case !m.adminUp:
				m.oper = ovOffline
			case !monitored:
				m.oper = ovNoMonitor
			case m.health != "":
				m.oper = m.health
			default:
				m.oper = ovOnline
			}
			if m.oper == ovError {
				bad++
			}
		}
		if p.monitor != nil && settled(&p.monitor.ovBase) {
			p.monitor.oper = ovOnlineIf(p.monitor.adminUp)
		}
		if settled(&p.ovBase) {
			switch {
			case !p.adminUp:
				p.oper = ovOffline
			case bad > 0 && bad == len(p.members):
				p.oper = ovError
			case bad > 0:
				p.oper = ovDegraded
			default:
				p.oper = ovOnline
			}
		}
	}
	degraded := false
	for _, l := range lb.listeners {
		if !settled(&l.ovBase) {
			continue
		}
		l.oper = ovOnlineIf(l.adminUp)
		if p := l.defaultPool; l.adminUp && p != nil && (p.oper == ovError || p.oper == ovDegraded) {
			l.oper = ovDegraded
		}
		if l.oper == ovDegraded {
			degraded = true
		}
	}
	if settled(&lb.ovBase) {
		switch {
		case !lb.adminUp:
			lb.oper = ovOffline
		case degraded:
			lb.oper = ovDegraded
		default:
			lb.oper = ovOnline
		}
	}
}

func ovOnlineIf(up bool) string {
	if up {
		return ovOnline
	}
	return ovOffline
}

// removeLB deletes lb and its whole tree; the row is kept (DELETED) for
// list markers. Its VIP port went when the delete was accepted.
func (e *Emulator) removeLB(lb *octaviaLB) {
	for _, p := range slices.Clone(lb.pools) {
		e.removePool(p)
	}
	for _, l := range slices.Clone(lb.listeners) {
		e.removeListener(l)
	}
	e.octavia.lbs.Delete(lb.id)
	lb.prov = ovDeleted
	lb.oper = ovOffline
	e.octavia.deletedLBs[lb.id] = lb
}

func (e *Emulator) removeListener(l *octaviaListener) {
	l.lb.listeners = slices.DeleteFunc(l.lb.listeners, func(x *octaviaListener) bool { return x == l })
	e.octavia.listeners.Delete(l.id)
}

// removePool deletes p with its members and health monitor, and unsets
// it as any listener's default pool.
func (e *Emulator) removePool(p *octaviaPool) {
	for _, m := range slices.Clone(p.members) {
		e.removeMember(m)
	}
	if p.monitor != nil {
		e.removeMonitor(p.monitor)
	}
	for _, l := range p.listenersOf() {
		l.defaultPool = nil
	}
	p.lb.pools = slices.DeleteFunc(p.lb.pools, func(x *octaviaPool) bool { return x == p })
	e.octavia.pools.Delete(p.id)
}

func (e *Emulator) removeMember(m *octaviaMember) {
	m.pool.members = slices.DeleteFunc(m.pool.members, func(x *octaviaMember) bool { return x == m })
	e.octavia.members.Delete(m.id)
}

func (e *Emulator) removeMonitor(h *octaviaMonitor) {
	h.pool.monitor = nil
	e.octavia.monitors.Delete(h.id)
}

// --- the API's status checks (repositories.test_and_set_*) ---

// checkChildWrite is the test half of Octavia's
// test_and_set_lb_and_listeners_prov_status for a write on a child of
// lb: the load balancer must be ACTIVE. Handlers run every check before
// changing anything, as Octavia's rolled-back transaction leaves nothing
// changed when a later check (the provider's) fails.
func checkChildWrite(lb *octaviaLB) *apiError {
	if lb.prov != ovActive {
		return errOctaviaImmutable("Load Balancer", lb.id)
	}
	return nil
}

// checkPoolChildWrite adds the pool check of member and health monitor
// writes: the pool must itself be ACTIVE.
func checkPoolChildWrite(p *octaviaPool) *apiError {
	if p.prov != ovActive {
		return errOctaviaImmutable("Pool", p.id)
	}
	return checkChildWrite(p.lb)
}

// beginChildWrite is the set half: the load balancer becomes
// PENDING_UPDATE with the listeners the write affects.
func (e *Emulator) beginChildWrite(lb *octaviaLB, listeners ...*octaviaListener) {
	e.startOperation(lb, ovPendingUpdate)
	for _, l := range listeners {
		l.prov = ovPendingUpdate
		e.touch(&l.ovBase)
	}
}

// beginPoolChildWrite also makes the pool PENDING_UPDATE.
func (e *Emulator) beginPoolChildWrite(p *octaviaPool) {
	e.beginChildWrite(p.lb, p.listenersOf()...)
	p.prov = ovPendingUpdate
	e.touch(&p.ovBase)
}

// --- quotas ---

// ovCheckQuota is check_quota_met: whether the project may have count
// more objects of a kind, given how many it has.
func ovCheckQuota(quota, have, count int, resource string) *apiError {
	if quota > 0 && have+count > quota {
		return errOctaviaQuota(resource)
	}
	return nil
}

func (e *Emulator) projectCount(projectID string, kind string) int {
	n := 0
	switch kind {
	case KindLoadBalancer:
		for _, x := range e.octavia.lbs.All() {
			if x.projectID == projectID {
				n++
			}
		}
	case KindListener:
		for _, x := range e.octavia.listeners.All() {
			if x.projectID == projectID {
				n++
			}
		}
	case KindPool:
		for _, x := range e.octavia.pools.All() {
			if x.projectID == projectID {
				n++
			}
		}
	case KindMember:
		for _, x := range e.octavia.members.All() {
			if x.projectID == projectID {
				n++
			}
		}
	case KindHealthMonitor:
		for _, x := range e.octavia.monitors.All() {
			if x.projectID == projectID {
				n++
			}
		}
	}
	return n
}

// quota checks the project's quota for count more objects of kind.
func (e *Emulator) quota(projectID, kind string, count int) *apiError {
	q := e.cfg.Octavia.Quotas
	have := e.projectCount(projectID, kind)
	switch kind {
	case KindLoadBalancer:
		return ovCheckQuota(q.LoadBalancers, have, count, "Load Balancer")
	case KindListener:
		return ovCheckQuota(q.Listeners, have, count, "Listener")
	case KindPool:
		return ovCheckQuota(q.Pools, have, count, "Pool")
	case KindMember:
		return ovCheckQuota(q.Members, have, count, "Member")
	case KindHealthMonitor:
		return ovCheckQuota(q.HealthMonitors, have, count, "Health Monitor")
	}
	return nil
}

// --- rendering helpers ---

// ovTime is how Octavia renders its DATETIME columns: naive ISO 8601.
func ovTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05") }

func ovTimePtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return ovTime(*t)
}

func ovTagList(tags []string) []string {
	if tags == nil {
		return []string{}
	}
	return slices.Clone(tags)
}

func ovNullStr(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

func ovNullInt(n *int) any {
	if n == nil {
		return nil
	}
	return *n
}

func ovNullList(s []string) any {
	if s == nil {
		return nil
	}
	return slices.Clone(s)
}

func ovIDList(ids ...string) []any {
	out := make([]any, 0, len(ids))
	for _, id := range ids {
		out = append(out, map[string]any{"id": id})
	}
	return out
}
