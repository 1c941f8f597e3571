package aws

import (
	"context"
	"sort"
	"strconv"
	"sync"
)

// apiCalls counts the EC2 calls this package makes, by operation. Read
// amplification is the first thing that breaks at scale, so tests assert on
// these counts and debug logs report them.
type apiCalls struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *apiCalls) inc(op string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = make(map[string]int)
	}
	c.n[op]++
}

// count returns how often op was called.
func (c *apiCalls) count(op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[op]
}

// String lists the counts in a stable order, for logs and test failures.
func (c *apiCalls) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	ops := make([]string, 0, len(c.n))
	for op := range c.n {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	s := ""
	for _, op := range ops {
		if s != "" {
			s += " "
		}
		s += op + "=" + strconv.Itoa(c.n[op])
	}
	return s
}

// single runs at most one call of a function at a time; callers arriving
// while it runs share its result (singleflight). The call runs detached from
// any one caller's cancellation, since others may be waiting on it; each
// caller stops waiting when its own context ends. The SDK's request timeout
// and attempt limit bound the call itself.
type single[T any] struct {
	mu sync.Mutex
	f  *flight[T]
}

type flight[T any] struct {
	done chan struct{}
	val  T
	err  error
}

func (s *single[T]) do(ctx context.Context, fn func(context.Context) (T, error)) (T, error) {
	s.mu.Lock()
	f := s.f
	if f == nil {
		f = &flight[T]{done: make(chan struct{})}
		s.f = f
		go func(ctx context.Context) {
			f.val, f.err = fn(ctx)
			s.mu.Lock()
			s.f = nil
			s.mu.Unlock()
			close(f.done)
		}(context.WithoutCancel(ctx))
	}
	s.mu.Unlock()
	select {
	case <-f.done:
		return f.val, f.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// keyedSingle is single per key: concurrent callers with the same key
// share one call, different keys never wait for each other.
type keyedSingle[T any] struct {
	mu sync.Mutex
	m  map[string]*single[T]
}

func (k *keyedSingle[T]) do(ctx context.Context, key string, fn func(context.Context) (T, error)) (T, error) {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*single[T]{}
	}
	s, ok := k.m[key]
	if !ok {
		s = &single[T]{}
		k.m[key] = s
	}
	k.mu.Unlock()
	return s.do(ctx, fn)
}
