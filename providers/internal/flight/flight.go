// Package flight shares one call among concurrent callers with the same
// key (single-flight) and runs that call detached from any one caller's
// cancellation. It wraps golang.org/x/sync/singleflight, which does the
// sharing and forgets a key as soon as its call returns, so keys never
// accumulate.
package flight

import (
	"context"

	"golang.org/x/sync/singleflight"
)

// Group runs at most one call per key at a time; callers arriving while it
// runs share its result. The zero value is ready to use.
//
// The call runs with context.WithoutCancel of the first caller's context:
// others may be waiting on it, so one caller giving up must not fail them
// all. Each caller still stops waiting when its own context ends. The
// call itself is bounded by the SDK's request timeout and attempt limit.
type Group[T any] struct {
	g singleflight.Group
}

// Do runs fn for key, or joins the call already running for key.
func (g *Group[T]) Do(ctx context.Context, key string, fn func(context.Context) (T, error)) (T, error) {
	detached := context.WithoutCancel(ctx)
	ch := g.g.DoChan(key, func() (any, error) { return fn(detached) })
	select {
	case r := <-ch:
		v, _ := r.Val.(T)
		return v, r.Err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// Forget makes the next Do for key start a new call even if one is
// running; callers already waiting keep waiting for the old one.
func (g *Group[T]) Forget(key string) { g.g.Forget(key) }
