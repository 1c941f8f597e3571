// Package ttlcache is a typed map whose entries expire, for what a backend
// keeps only to save a cloud read: losing it (a restart) costs calls, never
// correctness. It wraps k8s.io/apimachinery/pkg/util/cache.Expiring, which
// expires entries on read and collects them on write, so keys of deleted
// Services never accumulate.
package ttlcache

import (
	"time"

	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/utils/clock"
)

// Cache maps string keys to values of type V for at most TTL each.
type Cache[V any] struct {
	ttl time.Duration
	m   *cache.Expiring
}

// New returns a cache whose entries live for ttl on clk.
func New[V any](ttl time.Duration, clk clock.Clock) *Cache[V] {
	return &Cache[V]{ttl: ttl, m: cache.NewExpiringWithClock(clk)}
}

// Get returns the value for key if it was set less than TTL ago.
func (c *Cache[V]) Get(key string) (V, bool) {
	v, ok := c.m.Get(key)
	if !ok {
		var zero V
		return zero, false
	}
	return v.(V), true
}

// Set stores v for key for the cache's TTL.
func (c *Cache[V]) Set(key string, v V) { c.m.Set(key, v, c.ttl) }

// Delete forgets key.
func (c *Cache[V]) Delete(key string) { c.m.Delete(key) }

// Len is the number of entries held, expired or not yet collected
// included; for tests and metrics.
func (c *Cache[V]) Len() int { return c.m.Len() }
