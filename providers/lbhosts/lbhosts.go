// Package lbhosts is the optional load-balancer capability of bringing
// many Services' load balancers to one node set in one pass.
//
// The service controller (controllers/service) updates every load
// balancer of a cloud when that cloud's node set changes. One
// UpdateLoadBalancer per Service makes each wait for its own cloud
// operations, bounded by --concurrent-service-syncs; a backend that
// implements Updater gets the whole pass at once and may share reads
// across the Services and overlap their writes and operation waits
// (GCE: one node added to 200 target pools). A backend without it is
// updated one Service at a time, as before.
//
// It is public, outside providers/internal, because the controllers
// read it.
package lbhosts

import (
	"context"
	"errors"
	"sync"

	v1 "k8s.io/api/core/v1"
)

// Updater brings each of services' load balancers to nodes.
type Updater interface {
	// UpdateLoadBalancerHosts returns one error per Service, in order:
	// nil when its load balancer has nodes as backends, ErrNotBatched
	// when the caller must update it alone (UpdateLoadBalancer), else
	// what UpdateLoadBalancer would have returned for it. A Service's
	// failure leaves the others' outcomes untouched.
	UpdateLoadBalancerHosts(ctx context.Context, clusterName string, services []*v1.Service, nodes []*v1.Node) []error
}

// ErrNotBatched is a Service's outcome when the cloud behind the call
// does not batch it (the backend has no Updater, or not for the
// Service's kind of load balancer): its caller updates it alone.
var ErrNotBatched = errors.New("load balancer hosts not updated in a batch")

// NotBatched is the outcome of a pass that batched nothing: ErrNotBatched
// for each of n Services.
func NotBatched(n int) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = ErrNotBatched
	}
	return errs
}

// Update is u's pass over services, or NotBatched when lb has no Updater:
// the wrappers between the controller and a backend call it so the
// capability passes through them exactly when the backend has it.
func Update(ctx context.Context, lb any, clusterName string, services []*v1.Service, nodes []*v1.Node) []error {
	u, ok := lb.(Updater)
	if !ok {
		return NotBatched(len(services))
	}
	errs := u.UpdateLoadBalancerHosts(ctx, clusterName, services, nodes)
	if len(errs) != len(services) {
		// A backend bug must not pass for success.
		return NotBatched(len(services))
	}
	return errs
}

// UpdateSome passes the Services at indexes idx of services on to lb's
// pass (Update) and writes each one's outcome to errs at its index: the
// step of a layer that sends only some of a batch on (the gate its
// admitted Services, the composite each cloud's, the serializer those
// whose turn is due), written once.
func UpdateSome(ctx context.Context, lb any, clusterName string, services []*v1.Service, idx []int, nodes []*v1.Node, errs []error) {
	if len(idx) == 0 {
		return
	}
	sub := make([]*v1.Service, len(idx))
	for j, i := range idx {
		sub[j] = services[i]
	}
	for j, err := range Update(ctx, lb, clusterName, sub, nodes) {
		errs[idx[j]] = err
	}
}

// Parallel is the batch of a backend whose Services' load balancers share
// nothing a node change writes (one target group or pool each): update
// runs for each Service, at most limit at once, so the pass takes about
// the time of the slowest rather than the sum.
func Parallel(ctx context.Context, limit int, services []*v1.Service, update func(context.Context, *v1.Service) error) []error {
	errs := make([]error, len(services))
	sem := make(chan struct{}, max(limit, 1))
	var wg sync.WaitGroup
	for i, svc := range services {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			errs[i] = ctx.Err()
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = update(ctx, svc)
		}()
	}
	wg.Wait()
	return errs
}
