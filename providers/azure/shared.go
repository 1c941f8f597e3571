package azure

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"k8s.io/utils/clock"
)

// shared serializes and coalesces the changes many Services make to one
// shared ARM resource (the cluster's load balancer, the network security
// group). Every Service's sync submits a change: a function that edits
// the resource to hold that Service's part. Changes are applied by one
// writer at a time, group-commit style: while a write is in flight, new
// changes queue, and the next write carries every queued change at once.
// So 50 Services synced together cost a few writes, not 50, and one
// Service's sync never overwrites another's part.
//
// Every write carries the ETag of the copy it was computed from
// (If-Match; If-None-Match: * to create). A 412 means someone else wrote
// in between: the writer reads the resource again and re-applies every
// change of the batch to it. The copy the last write returned is kept, so
// a change that turns out to change nothing (a node-set update every
// Service repeats) costs no call at all while the copy is young.
type shared[T any] struct {
	name string
	ops  sharedOps[T]
	clk  clock.PassiveClock
	// maxAge bounds how old the kept copy may be for deciding that
	// nothing needs writing; older, it is read again first.
	maxAge time.Duration

	mu      sync.Mutex
	queue   []*change[T]
	running bool

	// cache is the resource as last read or written (nil: not known,
	// or known not to exist when cacheMissing).
	cache        *T
	cacheMissing bool
	cacheAt      time.Time
}

// sharedOps are the calls on the resource. get returns found=false on
// ARM's 404; put and del send the precondition given and return an error
// wrapping errPrecondition on 412.
type sharedOps[T any] struct {
	get func(ctx context.Context) (v *T, found bool, err error)
	// put writes v; ifMatch is the ETag it was computed from, or "" to
	// create (If-None-Match: *). It returns the resource as written.
	put func(ctx context.Context, v *T, ifMatch string) (*T, error)
	// del deletes the resource if its ETag is still ifMatch.
	del   func(ctx context.Context, ifMatch string) error
	etag  func(v *T) string
	clone func(v *T) *T
	// fresh is the resource to create when it does not exist.
	fresh func() *T
	// empty says nothing of ours is left in v, so it is deleted; nil
	// means never delete.
	empty func(v *T) bool
	// beforeDelete, if set, runs when a batch's changes leave the
	// resource empty, just before its DELETE, with the resource the
	// changes were applied to (as read, or as last written). It runs in
	// the one writer, on the state after every other change's write, so
	// whichever batch empties the resource does it, however many callers
	// removed their parts at once. An error fails the batch.
	beforeDelete func(ctx context.Context, cur *T) error
}

// change is one Service's edit.
type change[T any] struct {
	// apply edits v (never nil) to hold the caller's part and reports
	// whether it changed anything. It must be idempotent, and must
	// validate before it edits: an error leaves v untouched.
	apply func(v *T) (bool, error)
	// create allows creating the resource when it does not exist;
	// without it a missing resource is left missing (apply is not
	// called) and the result is nil.
	create bool

	done   chan struct{}
	result *T
	err    error
}

var errPrecondition = errors.New("the resource changed since it was read (412 Precondition Failed)")

// isPreconditionFailed is ARM's 412.
func isPreconditionFailed(err error) bool {
	var re *azcore.ResponseError
	return errors.Is(err, errPrecondition) || errors.As(err, &re) && re.StatusCode == http.StatusPreconditionFailed
}

// maxConflicts bounds the re-reads of one batch on repeated 412s; each
// lost race means another writer made progress.
const maxConflicts = 8

func newShared[T any](name string, ops sharedOps[T], clk clock.PassiveClock) *shared[T] {
	return &shared[T]{name: name, ops: ops, clk: clk, maxAge: 30 * time.Second}
}

// submit queues apply and waits for the write that carries it. The result
// is the resource as written (or as found, when nothing changed); nil if
// it does not exist.
func (s *shared[T]) submit(ctx context.Context, create bool, apply func(v *T) (bool, error)) (*T, error) {
	c := &change[T]{apply: apply, create: create, done: make(chan struct{})}
	s.mu.Lock()
	s.queue = append(s.queue, c)
	if !s.running {
		s.running = true
		// The writer outlives any one caller's context: other callers'
		// changes ride on the same write.
		go s.run(context.WithoutCancel(ctx))
	}
	s.mu.Unlock()
	select {
	case <-c.done:
		return c.result, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// run writes batches until the queue is empty.
func (s *shared[T]) run(ctx context.Context) {
	for {
		s.mu.Lock()
		batch := s.queue
		s.queue = nil
		if len(batch) == 0 {
			s.running = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		s.write(ctx, batch)
	}
}

// write applies a batch. If the batch's write fails for a reason other
// than a conflict, each change is tried on its own, so one Service's
// invalid part never fails another's sync.
func (s *shared[T]) write(ctx context.Context, batch []*change[T]) {
	err := s.attempt(ctx, batch)
	if err == nil {
		return
	}
	var left []*change[T]
	for _, c := range batch {
		if !c.finished() {
			left = append(left, c)
		}
	}
	if len(left) == 1 {
		finish(left[0], nil, err)
		return
	}
	for _, c := range left {
		if err := s.attempt(ctx, []*change[T]{c}); err != nil && !c.finished() {
			finish(c, nil, err)
		}
	}
}

func (c *change[T]) finished() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func finish[T any](c *change[T], v *T, err error) {
	c.result, c.err = v, err
	close(c.done)
}

// attempt applies batch to the current resource and writes it, re-reading
// on 412. Changes whose apply fails are finished with their error and
// left out; the rest are finished on success. The error is the write's.
func (s *shared[T]) attempt(ctx context.Context, batch []*change[T]) error {
	pending := batch
	for try := 0; ; try++ {
		cur, found, err := s.current(ctx, try > 0)
		if err != nil {
			return err
		}
		var work *T
		switch {
		case found:
			work = s.ops.clone(cur)
		default:
			work = s.ops.fresh()
		}
		changed := false
		var applied []*change[T]
		for _, c := range pending {
			if !found && !c.create {
				continue
			}
			ch, err := c.apply(work)
			if err != nil {
				finish(c, nil, err)
				continue
			}
			changed = changed || ch
			applied = append(applied, c)
		}
		pending = applied
		if !changed {
			// Nothing to write: every change is already in place (or the
			// resource is missing and none may create it).
			var res *T
			if found {
				res = cur
			}
			for _, c := range batch {
				if !c.finished() {
					finish(c, res, nil)
				}
			}
			return nil
		}
		var res *T
		if found && s.ops.empty != nil && s.ops.empty(work) {
			if s.ops.beforeDelete != nil {
				if err := s.ops.beforeDelete(ctx, cur); err != nil {
					s.forget()
					return fmt.Errorf("prepare deleting %s: %w", s.name, err)
				}
			}
			err = s.ops.del(ctx, s.ops.etag(cur))
		} else {
			etag := ""
			if found {
				etag = s.ops.etag(cur)
			}
			res, err = s.ops.put(ctx, work, etag)
		}
		if isPreconditionFailed(err) && try < maxConflicts {
			s.forget()
			continue
		}
		if err != nil {
			s.forget()
			return fmt.Errorf("write %s: %w", s.name, err)
		}
		s.remember(res)
		for _, c := range batch {
			if !c.finished() {
				finish(c, res, nil)
			}
		}
		return nil
	}
}

// current is the resource to apply changes to: the kept copy while it is
// young (and reread is false), else a fresh read. A write computed from
// a stale copy is refused with 412 and retried on a fresh read, so the
// copy's age bounds only how long a change made behind our back can go
// unnoticed by a change that finds nothing to do.
func (s *shared[T]) current(ctx context.Context, reread bool) (*T, bool, error) {
	s.mu.Lock()
	if !reread && (s.cache != nil || s.cacheMissing) && s.clk.Since(s.cacheAt) < s.maxAge {
		v, missing := s.cache, s.cacheMissing
		s.mu.Unlock()
		return v, !missing, nil
	}
	s.mu.Unlock()
	v, found, err := s.ops.get(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("read %s: %w", s.name, err)
	}
	s.mu.Lock()
	s.cache, s.cacheMissing, s.cacheAt = v, !found, s.clk.Now()
	if !found {
		s.cache = nil
	}
	s.mu.Unlock()
	return v, found, nil
}

// remember keeps what a write returned (nil: deleted).
func (s *shared[T]) remember(v *T) {
	s.mu.Lock()
	s.cache, s.cacheMissing, s.cacheAt = v, v == nil, s.clk.Now()
	s.mu.Unlock()
}

// forget drops the kept copy, so the next batch reads.
func (s *shared[T]) forget() {
	s.mu.Lock()
	s.cache, s.cacheMissing = nil, false
	s.mu.Unlock()
}
