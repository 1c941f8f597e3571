package aws

import (
	"context"
	"sync"
)

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
