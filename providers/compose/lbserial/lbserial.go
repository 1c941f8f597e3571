// Package lbserial serializes a backend's load-balancer calls per Service.
//
// The service controller runs EnsureLoadBalancer and
// EnsureLoadBalancerDeleted from its Service workers and
// UpdateLoadBalancer from its node-sync worker, so the two overlap for one
// Service: a node joining while a Service's first EnsureLoadBalancer runs
// makes an UpdateLoadBalancer hit a half-built load balancer ("load
// balancer not found" Warning Events on every new Service; on clouds where
// creation takes minutes it would change resources mid-build). Wrapping the
// backend's LoadBalancer makes the calls of one Service run one at a time,
// while different Services never wait for each other. An update that
// waited behind an ensure or update that succeeded with the same Service
// and node set has nothing left to do and returns at once.
//
// An update can also come before the Service's first ensure has even
// started: the node-sync worker updates every Service the controller has
// begun syncing, and the first sync adds the finalizer before it ensures.
// A Service that has no load balancer address and no successful ensure in
// this process has nothing to update yet; its ensure, now or when the
// controller retries it, registers the nodes of its own time. Such an
// update returns at once instead of failing with "not found".
package lbserial

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/multicloud-ccm/multicloud-ccm/providers/lbhosts"
)

// LoadBalancer is a cloudprovider.LoadBalancer whose calls for one
// Service never overlap. Errors from the backend pass through unchanged
// (ImplementedElsewhere and api.RetryError keep their identity).
type LoadBalancer struct {
	inner cloudprovider.LoadBalancer
	// clk times the syncs LastSync reports.
	clk clock.PassiveClock

	mu   sync.Mutex
	keys map[string]*serviceState
	// provisioned are the Services whose ensure succeeded in this process
	// and that were not deleted since: a key per LoadBalancer Service.
	provisioned map[string]bool
	// synced is when each Service's last ensure or update succeeded, and
	// nodes what the last successful one of any Service was given (the
	// service controller gives every Service the same set): drift repair
	// (controllers/lbrepair) compares the cloud with what a sync made
	// only after it, and re-ensures with that set.
	synced, ensured map[string]time.Time
	nodes           []*v1.Node
}

var _ cloudprovider.LoadBalancer = (*LoadBalancer)(nil)

// serviceState exists while any call for the Service runs or waits, so
// the map holds only Services with work in flight.
type serviceState struct {
	// turn holds one token: the right to call the backend.
	turn chan struct{}
	refs int
	// finished counts calls that completed; lastOK describes the last
	// one that succeeded, and when.
	finished uint64
	lastOK   *outcome
}

type outcome struct {
	at      uint64 // finished count when it completed
	syncSig [32]byte
}

// Wrap serializes inner's calls per Service.
func Wrap(inner cloudprovider.LoadBalancer) *LoadBalancer {
	return WrapWithClock(inner, clock.RealClock{})
}

// WrapWithClock is Wrap with the clock that times the syncs LastSync
// reports (a fake one in tests, stepped instead of slept).
func WrapWithClock(inner cloudprovider.LoadBalancer, clk clock.PassiveClock) *LoadBalancer {
	return &LoadBalancer{inner: inner, clk: clk, keys: map[string]*serviceState{}, provisioned: map[string]bool{}, synced: map[string]time.Time{}, ensured: map[string]time.Time{}}
}

func key(svc *v1.Service) string { return svc.Namespace + "/" + svc.Name }

// acquire waits for the Service's turn; seen is how many calls had
// finished when this one arrived.
func (l *LoadBalancer) acquire(ctx context.Context, k string) (st *serviceState, seen uint64, err error) {
	l.mu.Lock()
	st, ok := l.keys[k]
	if !ok {
		st = &serviceState{turn: make(chan struct{}, 1)}
		l.keys[k] = st
	}
	st.refs++
	seen = st.finished
	l.mu.Unlock()
	select {
	case st.turn <- struct{}{}:
		return st, seen, nil
	case <-ctx.Done():
		l.unref(k, st)
		return nil, 0, ctx.Err()
	}
}

// release ends the call, recording its outcome (nil sig: nothing to
// record, e.g. a delete).
func (l *LoadBalancer) release(k string, st *serviceState, ok bool, sig *[32]byte) {
	l.mu.Lock()
	st.finished++
	switch {
	case ok && sig != nil:
		st.lastOK = &outcome{at: st.finished, syncSig: *sig}
		l.synced[k] = l.clk.Now()
	default:
		st.lastOK = nil
	}
	l.mu.Unlock()
	<-st.turn
	l.unref(k, st)
}

func (l *LoadBalancer) unref(k string, st *serviceState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if st.refs--; st.refs == 0 {
		delete(l.keys, k)
	}
}

// syncSignature identifies what an ensure or update brings about: the
// Service as the backend reads it and the backend nodes. The nodes are
// written into the hash one by one: at 5000 Nodes every call computes it.
func syncSignature(svc *v1.Service, nodes []*v1.Node) [32]byte {
	return signature(svc, nodesDigest(nodes))
}

// signature is syncSignature with the nodes' digest computed once (a
// batch gives every Service the same nodes).
func signature(svc *v1.Service, nodes [32]byte) [32]byte {
	h := sha256.New()
	b, _ := json.Marshal(struct {
		UID         string
		Annotations map[string]string
		Spec        v1.ServiceSpec
	}{string(svc.UID), svc.Annotations, svc.Spec})
	h.Write(b)
	h.Write(nodes[:])
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// nodesDigest digests the nodes' names and providerIDs, in name order.
func nodesDigest(nodes []*v1.Node) [32]byte {
	h := sha256.New()
	sorted := slices.Clone(nodes)
	slices.SortFunc(sorted, func(a, b *v1.Node) int { return strings.Compare(a.Name, b.Name) })
	// One scratch buffer: a []byte(string) per Node would allocate.
	buf := make([]byte, 0, 256)
	for _, n := range sorted {
		buf = append(append(append(append(buf[:0], 0), n.Name...), 0), n.Spec.ProviderID...)
		h.Write(buf)
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// GetLoadBalancer only reads; it does not wait.
func (l *LoadBalancer) GetLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	return l.inner.GetLoadBalancer(ctx, clusterName, svc)
}

// GetLoadBalancerName passes through.
func (l *LoadBalancer) GetLoadBalancerName(ctx context.Context, clusterName string, svc *v1.Service) string {
	return l.inner.GetLoadBalancerName(ctx, clusterName, svc)
}

// EnsureLoadBalancer runs the backend's ensure in the Service's turn.
func (l *LoadBalancer) EnsureLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	k := key(svc)
	st, _, err := l.acquire(ctx, k)
	if err != nil {
		return nil, err
	}
	status, err := l.inner.EnsureLoadBalancer(ctx, clusterName, svc, nodes)
	sig := syncSignature(svc, nodes)
	if err == nil {
		l.mu.Lock()
		l.provisioned[k] = true
		l.nodes = nodes
		l.ensured[k] = l.clk.Now()
		l.mu.Unlock()
	}
	l.release(k, st, err == nil, &sig)
	return status, err
}

// UpdateLoadBalancer runs the backend's update in the Service's turn,
// unless a call that finished while it waited already brought about the
// same Service and node set.
func (l *LoadBalancer) UpdateLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) error {
	k := key(svc)
	st, seen, err := l.acquire(ctx, k)
	if err != nil {
		return err
	}
	sig := syncSignature(svc, nodes)
	l.mu.Lock()
	done := st.lastOK != nil && st.lastOK.at > seen && st.lastOK.syncSig == sig
	notYet := !l.provisioned[k] && len(svc.Status.LoadBalancer.Ingress) == 0
	l.mu.Unlock()
	if notYet {
		klog.FromContext(ctx).V(2).Info("Load balancer not provisioned yet; its ensure registers the current nodes", "service", klog.KObj(svc))
		l.release(k, st, false, nil)
		return nil
	}
	if done {
		l.release(k, st, true, &sig)
		return nil
	}
	err = l.inner.UpdateLoadBalancer(ctx, clusterName, svc, nodes)
	if err == nil {
		l.mu.Lock()
		l.nodes = nodes
		l.mu.Unlock()
	}
	l.release(k, st, err == nil, &sig)
	return err
}

// UpdateLoadBalancerHosts runs the backend's batch (lbhosts.Updater) in
// the turn of every Service it updates: the turns are taken in key order
// (two batches never hold each other's), each Service skipped as
// UpdateLoadBalancer skips it, the rest passed on in one call.
func (l *LoadBalancer) UpdateLoadBalancerHosts(ctx context.Context, clusterName string, svcs []*v1.Service, nodes []*v1.Node) []error {
	u, ok := l.inner.(lbhosts.Updater)
	if !ok {
		return lbhosts.NotBatched(len(svcs))
	}
	errs := make([]error, len(svcs))
	order := make([]int, len(svcs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(key(svcs[a]), key(svcs[b])) })
	type held struct {
		i      int
		st     *serviceState
		seen   uint64
		sig    [32]byte
		notYet bool
	}
	var turns []held
	nodeSum := nodesDigest(nodes)
	for _, i := range order {
		k := key(svcs[i])
		if len(turns) > 0 && key(svcs[turns[len(turns)-1].i]) == k {
			// The same Service twice (the controller never sends it,
			// but taking its turn again would wait for itself): the
			// first one's outcome is its.
			errs[i] = lbhosts.ErrNotBatched
			continue
		}
		st, seen, err := l.acquire(ctx, k)
		if err != nil {
			errs[i] = err
			continue
		}
		turns = append(turns, held{i: i, st: st, seen: seen, sig: signature(svcs[i], nodeSum)})
	}
	var call []held
	l.mu.Lock()
	for t := range turns {
		h := &turns[t]
		k := key(svcs[h.i])
		switch {
		case !l.provisioned[k] && len(svcs[h.i].Status.LoadBalancer.Ingress) == 0:
			// Not provisioned yet (UpdateLoadBalancer): its ensure
			// registers the current nodes.
			h.notYet = true
		case h.st.lastOK != nil && h.st.lastOK.at > h.seen && h.st.lastOK.syncSig == h.sig:
		default:
			call = append(call, *h)
		}
	}
	l.mu.Unlock()
	idx := make([]int, len(call))
	for j, h := range call {
		idx[j] = h.i
	}
	lbhosts.UpdateSome(ctx, u, clusterName, svcs, idx, nodes, errs)
	anyOK := false
	for _, h := range turns {
		k := key(svcs[h.i])
		switch err := errs[h.i]; {
		case h.notYet:
			klog.FromContext(ctx).V(2).Info("Load balancer not provisioned yet; its ensure registers the current nodes", "service", klog.KObj(svcs[h.i]))
			l.release(k, h.st, false, nil)
		case errors.Is(err, lbhosts.ErrNotBatched):
			l.releaseKeeping(k, h.st)
		default:
			anyOK = anyOK || err == nil
			sig := h.sig
			l.release(k, h.st, err == nil, &sig)
		}
	}
	if anyOK {
		l.mu.Lock()
		l.nodes = nodes
		l.mu.Unlock()
	}
	return errs
}

// EnsureLoadBalancerDeleted runs the backend's delete in the Service's
// turn.
func (l *LoadBalancer) EnsureLoadBalancerDeleted(ctx context.Context, clusterName string, svc *v1.Service) error {
	k := key(svc)
	st, _, err := l.acquire(ctx, k)
	if err != nil {
		return err
	}
	err = l.inner.EnsureLoadBalancerDeleted(ctx, clusterName, svc)
	l.mu.Lock()
	// Whatever the outcome, no sync of the Service stands any more.
	delete(l.synced, k)
	delete(l.ensured, k)
	if err == nil {
		delete(l.provisioned, k)
	}
	l.mu.Unlock()
	l.release(k, st, false, nil)
	return err
}

// LastSync is when the last ensure or update (at) and the last ensure
// (ensured) of the Service namespace/name succeeded in this process; false
// if none did since it started or since the Service's load balancer was
// deleted.
func (l *LoadBalancer) LastSync(namespace, name string) (at, ensured time.Time, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := namespace + "/" + name
	at, ok = l.synced[k]
	return at, l.ensured[k], ok
}

// EnsureIf runs an ensure with the latest sync's nodes in the Service's
// turn, if still() holds once the turn is had (drift repair: the Service
// has not changed since the caller looked).
func (l *LoadBalancer) EnsureIf(ctx context.Context, clusterName string, svc *v1.Service, still func() bool) (*v1.LoadBalancerStatus, bool, error) {
	k := key(svc)
	st, _, err := l.acquire(ctx, k)
	if err != nil {
		return nil, false, err
	}
	if !still() {
		l.releaseKeeping(k, st)
		return nil, false, nil
	}
	nodes := l.lastNodes()
	status, err := l.inner.EnsureLoadBalancer(ctx, clusterName, svc, nodes)
	sig := syncSignature(svc, nodes)
	if err == nil {
		l.mu.Lock()
		l.ensured[k] = l.clk.Now()
		l.mu.Unlock()
	}
	l.release(k, st, err == nil, &sig)
	return status, true, err
}

// releaseKeeping ends a turn that called nothing, leaving the Service's
// last outcome as it was.
func (l *LoadBalancer) releaseKeeping(k string, st *serviceState) {
	<-st.turn
	l.unref(k, st)
}

// lastNodes are the backend Nodes the last successful ensure or update of
// any Service was given: what EnsureIf ensures with.
func (l *LoadBalancer) lastNodes() []*v1.Node {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.nodes
}

// inFlight is the number of Services with a call running or waiting.
func (l *LoadBalancer) inFlight() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys)
}
