package aws

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// ttlCache is a small map whose entries expire after ttl. It holds only
// what saves a read; losing it (a restart) costs calls, never correctness.
type ttlCache[V any] struct {
	ttl   time.Duration
	clock clock.PassiveClock

	mu        sync.Mutex
	m         map[string]ttlEntry[V]
	lastSweep time.Time
}

type ttlEntry[V any] struct {
	at  time.Time
	val V
}

func (c *ttlCache[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok || c.clock.Since(e.at) > c.ttl {
		var zero V
		return zero, false
	}
	return e.val, true
}

func (c *ttlCache[V]) put(key string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]ttlEntry[V]{}
	}
	now := c.clock.Now()
	// Sweep expired entries now and then so deleted Services' keys don't
	// accumulate, without making every write cost O(entries).
	if now.Sub(c.lastSweep) > c.ttl {
		for k, e := range c.m {
			if now.Sub(e.at) > c.ttl {
				delete(c.m, k)
			}
		}
		c.lastSweep = now
	}
	c.m[key] = ttlEntry[V]{at: now, val: v}
}

func (c *ttlCache[V]) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, key)
}
