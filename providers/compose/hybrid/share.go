package hybrid

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"k8s.io/cloud-provider/api"
)

// One cloud's outage must not stall the others: the controllers' workers
// are shared (the node controller's 10, the lifecycle controller's, and
// upstream's service controller's 10 when --use-upstream-service-controller
// runs it: this project's gives each cloud its own and lifts the load
// balancer bound, LanesInUse), and a call to a cloud that hangs holds its
// worker until the request times out. So in a hybrid cluster each cloud
// may have at most callShare calls of a kind in flight; a call that finds
// no slot within slotWait fails at once with an error (never "gone": the
// controllers retry, and the lifecycle controller deletes nothing on an
// error), which frees the worker for the other clouds. A healthy cloud
// answers in well under slotWait, so its calls only queue briefly and its
// batched lookups still gather concurrent callers.
const (
	callShare = 5
	slotWait  = time.Second
)

// share bounds one cloud's calls of one kind in flight; nil bounds
// nothing (a config for one cloud).
type share struct {
	cloud, kind string
	slots       chan struct{}
	// off: no bound (the service controller's lanes isolate the clouds'
	// load-balancer calls already).
	off atomic.Bool
}

// disable lifts the bound.
func (s *share) disable() {
	if s != nil {
		s.off.Store(true)
	}
}

func newShare(cloud, kind string, n int) *share {
	return &share{cloud: cloud, kind: kind, slots: make(chan struct{}, n)}
}

// acquire takes a slot, waiting up to slotWait; release gives it back.
func (s *share) acquire(ctx context.Context) (release func(), err error) {
	if s == nil || s.off.Load() {
		return func() {}, nil
	}
	t := time.NewTimer(slotWait)
	defer t.Stop()
	select {
	case s.slots <- struct{}{}:
		return func() { <-s.slots }, nil
	case <-t.C:
		// A RetryError: the controllers try again after slotWait, not
		// after a backoff that grew while the cloud was down (the call
		// never reached it).
		return nil, api.NewRetryError(fmt.Sprintf("cloud %s already has %d %s calls in flight for %s (slow or down?); not waiting for it, so the other clouds keep their workers",
			s.cloud, cap(s.slots), s.kind, slotWait), slotWait)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
