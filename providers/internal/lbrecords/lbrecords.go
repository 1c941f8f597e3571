// Package lbrecords keeps, per Service load balancer, a record of what the
// last successful full sync established, so that a node-set change can
// cost only the calls its diff needs instead of re-reading the cloud. What
// a record holds is the backend's business (target groups, pools, backend
// pool IDs); this package decides when a record may be trusted.
//
// Records live only in memory: losing them (a restart) costs reads, never
// correctness. A record is kept only after success, is dropped on any
// doubt, and is trusted for at most the store's TTL, so drift made outside
// the controller is repaired within it.
package lbrecords

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Store holds one record per key. Its lock is held only to read or write
// the maps, never across a cloud call, so Services never wait on each
// other.
//
// An operation takes its key's record out of the store when it begins and
// puts a new one back only when it succeeds. If two operations on the same
// key overlap, neither result is kept: their calls may have interleaved,
// so only a full read can say what the cloud holds.
type Store[R any] struct {
	ttl   time.Duration
	clock clock.PassiveClock

	mu sync.Mutex
	m  map[string]entry[R]
	// busy counts running operations per key; dirty marks keys whose
	// operations overlapped (or were invalidated) while running.
	busy      map[string]int
	dirty     map[string]bool
	lastSweep time.Time
}

type entry[R any] struct {
	// at is when the full read the record rests on began.
	at  time.Time
	rec *R
}

// New returns a store whose records are trusted for ttl.
func New[R any](ttl time.Duration, clk clock.PassiveClock) *Store[R] {
	return &Store[R]{ttl: ttl, clock: clk, m: map[string]entry[R]{}, busy: map[string]int{}, dirty: map[string]bool{}}
}

// Op is one operation on a key's record, from Begin to End.
type Op[R any] struct {
	Key string
	// Start is when the operation began; a full read made by it rests on
	// no older state.
	Start time.Time
	// Rec is the record as the operation found it, nil if there was none
	// or it had expired. The operation owns it: it is no longer in the
	// store.
	Rec *R
	// RecAt is when the full read Rec rests on began.
	RecAt time.Time

	s    *Store[R]
	done bool
}

// Begin starts an operation on key and hands it the key's record.
func (s *Store[R]) Begin(key string) *Op[R] {
	s.mu.Lock()
	defer s.mu.Unlock()
	op := &Op[R]{Key: key, Start: s.clock.Now(), s: s}
	if e, ok := s.m[key]; ok {
		delete(s.m, key)
		if op.Start.Sub(e.at) <= s.ttl {
			op.Rec, op.RecAt = e.rec, e.at
		}
	}
	s.busy[key]++
	if s.busy[key] > 1 {
		s.dirty[key] = true
	}
	return op
}

// End finishes the operation and keeps rec, resting on a full read that
// began at at, unless rec is nil, too old, or another operation on the
// same key ran meanwhile. Calling End again does nothing.
func (op *Op[R]) End(rec *R, at time.Time) {
	s := op.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if op.done {
		return
	}
	op.done = true
	now := s.clock.Now()
	if rec != nil && !s.dirty[op.Key] && now.Sub(at) <= s.ttl {
		// Sweep expired records now and then, so Services that vanished
		// without a delete don't accumulate.
		if now.Sub(s.lastSweep) > s.ttl {
			for k, e := range s.m {
				if now.Sub(e.at) > s.ttl {
					delete(s.m, k)
				}
			}
			s.lastSweep = now
		}
		s.m[op.Key] = entry[R]{at: at, rec: rec}
	}
	if s.busy[op.Key]--; s.busy[op.Key] <= 0 {
		delete(s.busy, op.Key)
		delete(s.dirty, op.Key)
	}
}

// Forget drops key's record, and any record a running operation would
// keep.
func (s *Store[R]) Forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
	if s.busy[key] > 0 {
		s.dirty[key] = true
	}
}

// Len is the number of records held.
func (s *Store[R]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}
