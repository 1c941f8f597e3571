// Package keylock serializes work per key: one mutex per key in use.
//
// A backend's service-controller workers run in parallel (one per
// --concurrent-service-syncs), and some cloud parts are shared by several
// Services' load balancers (a rule in a node security group, a backend
// pool, a health check). Deciding such a part from one read and writing it
// later lets two workers each decide from the state before the other's
// write (two deletions each keep a shared rule the other still seemed to
// need, and it is left behind). Taking the part's key, then reading the
// cloud, deciding and writing under it, makes every decision see the
// other workers' writes. Only one manager acts at a time (leader
// election), so a lock in this process is enough.
//
// Neither sync.Map of mutexes (never shrinks) nor singleflight (shares a
// result, does not serialize) has these semantics; this is a dozen lines.
package keylock

import "sync"

// Locks is a set of mutexes by key; the zero value is ready to use.
// Entries exist only while a key is held or waited for.
type Locks struct {
	mu   sync.Mutex
	keys map[string]*entry
}

type entry struct {
	mu    sync.Mutex
	users int
}

// Lock takes key's mutex and returns its unlock.
func (l *Locks) Lock(key string) (unlock func()) {
	l.mu.Lock()
	if l.keys == nil {
		l.keys = map[string]*entry{}
	}
	e := l.keys[key]
	if e == nil {
		e = &entry{}
		l.keys[key] = e
	}
	e.users++
	l.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		l.mu.Lock()
		if e.users--; e.users == 0 {
			delete(l.keys, key)
		}
		l.mu.Unlock()
	}
}

// held is how many keys are held or waited for, for tests.
func (l *Locks) held() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys)
}
