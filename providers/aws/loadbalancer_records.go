package aws

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// lbRecordTTL bounds how long UpdateLoadBalancer trusts what an earlier
// full sync established. A record older than this sends the next update
// down the full read path, so drift made outside the controller (a target
// deregistered by hand, a target group replaced) is repaired within it.
// Updates that use a record do not refresh its age: only a full read does.
const lbRecordTTL = 10 * time.Minute

// lbRecord is what the last successful EnsureLoadBalancer or full
// UpdateLoadBalancer of a Service established, plus the target changes
// made since by updates that used it. It lives only in memory: losing it (a
// restart) costs reads, never correctness.
type lbRecord struct {
	// at is when the full read this record rests on began.
	at    time.Time
	lbARN string
	// vpc is the load balancer's VPC, which backends must be in.
	vpc string
	// lbSG is the security group the node rules reference, "" if none.
	lbSG string
	// nodeRuleSig is nodeRuleSignature of the node rules confirmed for lbSG.
	nodeRuleSig string
	tgs         map[portKey]*tgRecord
}

// tgRecord is one target group and the targets registered with it.
type tgRecord struct {
	arn, name string
	// nodePort is the port targets are registered on.
	nodePort int32
	// registered are the targets registered (not draining).
	registered map[target]bool
}

// matches says the record covers exactly the Service's current ports, each
// target group registering targets on the current NodePort. Anything else
// (the Service changed and EnsureLoadBalancer has not caught up) takes the
// full path, which behaves as it always did.
func (r *lbRecord) matches(opts *lbOptions) bool {
	if len(r.tgs) != len(opts.ports) {
		return false
	}
	for _, p := range opts.ports {
		tg, ok := r.tgs[p.key()]
		if !ok || tg.nodePort != p.nodePort || tg.arn == "" {
			return false
		}
	}
	return true
}

// lbRecords holds one record per Service load balancer. Its lock is held
// only to read or write the map, never across a cloud call, so Services
// never wait on each other.
//
// An operation takes its Service's record out of the map when it begins
// and puts a new one back only when it succeeds. If two operations on the
// same Service overlap, neither result is kept: their calls may have
// interleaved, so only a full read can say what is registered.
type lbRecords struct {
	ttl   time.Duration
	clock clock.PassiveClock

	mu sync.Mutex
	m  map[string]*lbRecord
	// busy counts running operations per key; dirty marks keys whose
	// operations overlapped (or were invalidated) while running.
	busy      map[string]int
	dirty     map[string]bool
	lastSweep time.Time
}

// recordOp is one operation on a Service's record, from begin to end.
type recordOp struct {
	key   string
	start time.Time
	// rec is the record as the operation found it, nil if none or expired.
	// The operation owns it: it is no longer in the map.
	rec *lbRecord
}

// recordKey identifies a Service's load balancer.
func (l *loadBalancers) recordKey(svc *v1.Service) string {
	return serviceKey(svc) + "\x00" + loadBalancerName(l.clusterID, svc)
}

func (s *lbRecords) begin(key string) *recordOp {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m, s.busy, s.dirty = map[string]*lbRecord{}, map[string]int{}, map[string]bool{}
	}
	op := &recordOp{key: key, start: s.clock.Now()}
	if r, ok := s.m[key]; ok {
		delete(s.m, key)
		if op.start.Sub(r.at) <= s.ttl {
			op.rec = r
		}
	}
	s.busy[key]++
	if s.busy[key] > 1 {
		s.dirty[key] = true
	}
	return op
}

// end finishes op and keeps rec (nil keeps nothing), unless another
// operation on the same key ran meanwhile.
func (s *lbRecords) end(op *recordOp, rec *lbRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	if rec != nil && !s.dirty[op.key] && now.Sub(rec.at) <= s.ttl {
		// Sweep expired records now and then, so Services that vanished
		// without a delete don't accumulate.
		if now.Sub(s.lastSweep) > s.ttl {
			for k, r := range s.m {
				if now.Sub(r.at) > s.ttl {
					delete(s.m, k)
				}
			}
			s.lastSweep = now
		}
		s.m[op.key] = rec
	}
	if s.busy[op.key]--; s.busy[op.key] <= 0 {
		delete(s.busy, op.key)
		delete(s.dirty, op.key)
	}
}

// forget drops key's record, and any record a running operation would
// keep.
func (s *lbRecords) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
	if s.busy[key] > 0 {
		s.dirty[key] = true
	}
}

// size is the number of records held, for tests.
func (s *lbRecords) size() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}
