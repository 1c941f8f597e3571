// Package lbmove moves a Service's load balancer from one place to
// another make-before-break: the load balancer in the new place is made
// first, and only then is what the Service had elsewhere deleted, so a
// Service that changes place (a hybrid cluster's cloud, AWS's NLB and
// Classic ELB) is never without one. It remembers where each Service's
// load balancer is, with every other place known clear, so only the
// first sync after a start or a move pays the reads that look for
// leftovers.
//
// The hybrid composite (providers/compose/hybrid) and AWS's switch
// between NLB and Classic ELB (providers/aws) both move with it.
package lbmove

import (
	"context"
	"errors"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// Place is one place a Service's load balancer can be.
type Place struct {
	// Name names it in logs, errors and the tracker ("aws", "classic").
	Name string
	// Holds says whether the place holds a load balancer for the
	// Service; nil: Clear is called without asking (it reads first
	// anyway).
	Holds func(ctx context.Context, svc *v1.Service) (bool, error)
	// Clear deletes the Service's load balancer there, if any.
	Clear func(ctx context.Context, svc *v1.Service) error
}

// Options tune a Tracker for its caller.
type Options struct {
	// TrustNoAddress: a Service the tracker does not know (after a
	// start) and that has no address was never given a load balancer
	// anywhere, so nothing is looked for. A place that makes its load
	// balancer without handing out an address first must not set it.
	TrustNoAddress bool
	// TolerateUnknown: when the tracker does not know where the Service
	// was, a place that cannot be asked (down, throttled) does not fail
	// the move: the Service stays unknown, so the next sync asks again,
	// and a deletion asks every place. Without it the error fails the
	// sync.
	TolerateUnknown bool
}

// Tracker remembers, per Service, the place its load balancer was last
// made in, every other place being clear.
type Tracker struct {
	opts Options
	mu   sync.Mutex
	at   map[types.UID]string
}

// New returns an empty tracker.
func New(opts Options) *Tracker {
	return &Tracker{opts: opts, at: map[types.UID]string{}}
}

// At is the place the Service's load balancer was last made in, if
// known.
func (t *Tracker) At(uid types.UID) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.at[uid]
	return p, ok
}

func (t *Tracker) set(uid types.UID, place string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.at[uid] = place
}

// Forget drops what is known of the Service: its next move looks in
// every place again.
func (t *Tracker) Forget(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.at, uid)
}

// Ensure makes the Service's load balancer in place to (make), then
// clears the places it may still have one in: the one it was last made
// in when that is another, or, when the tracker does not know, every
// other place (asked with Holds where given). It returns what make
// returned; an error clearing another place fails it (unless
// TolerateUnknown applies), so the service controller comes back until
// nothing is left.
func (t *Tracker) Ensure(ctx context.Context, svc *v1.Service, to string, others []Place, make func() (*v1.LoadBalancerStatus, error)) (*v1.LoadBalancerStatus, error) {
	st, err := make()
	if err != nil {
		return st, err
	}
	if err := t.clearOthers(ctx, svc, to, others); err != nil {
		return nil, err
	}
	return st, nil
}

// clearOthers is Ensure's second half: what the Service left in places
// other than to.
func (t *Tracker) clearOthers(ctx context.Context, svc *v1.Service, to string, others []Place) error {
	prev, known := t.At(svc.UID)
	if known && prev == to {
		return nil
	}
	if !known && t.opts.TrustNoAddress && len(svc.Status.LoadBalancer.Ingress) == 0 {
		t.set(svc.UID, to)
		return nil
	}
	settled := true
	for _, o := range others {
		if o.Name == to || (known && o.Name != prev) {
			continue
		}
		if !known && o.Holds != nil {
			holds, err := o.Holds(ctx, svc)
			if err != nil && t.opts.TolerateUnknown {
				klog.FromContext(ctx).Info("Could not ask whether the Service's load balancer is still in another place; asking again at the next sync",
					"service", klog.KObj(svc), "place", o.Name, "err", err)
				settled = false
				continue
			}
			if err != nil {
				return fmt.Errorf("look for the load balancer the Service had in %s: %w", o.Name, err)
			}
			if !holds {
				continue
			}
		}
		klog.FromContext(ctx).Info("Deleting what the Service's load balancer left in another place", "service", klog.KObj(svc), "from", o.Name, "to", to)
		if err := o.Clear(ctx, svc); err != nil {
			return fmt.Errorf("remove the load balancer the Service had in %s, now that it is in %s: %w", o.Name, to, err)
		}
	}
	if settled {
		t.set(svc.UID, to)
	}
	return nil
}

// Delete clears the Service's load balancer wherever it may be: the
// place it was last made in and current (the place it names now, if
// another: a move not finished), or every place when the tracker does
// not know (a move made before a restart leaves nothing behind). The
// Service is forgotten once all are clear.
func (t *Tracker) Delete(ctx context.Context, svc *v1.Service, current string, places []Place) error {
	prev, known := t.At(svc.UID)
	var errs []error
	for _, p := range places {
		if known && p.Name != prev && p.Name != current {
			continue
		}
		if err := p.Clear(ctx, svc); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.Name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	t.Forget(svc.UID)
	return nil
}
