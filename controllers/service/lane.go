package service

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/cloud-provider/api"
	"k8s.io/klog/v2"
)

// lane is one cloud's share of the controller: its queue of Services,
// its workers, its node set, and what it knows of its Services' load
// balancers. Nothing in a lane waits for another lane.
type lane struct {
	name  string
	c     *Controller
	queue workqueue.TypedRateLimitingInterface[string]
	// kick asks the node loop to recompute the node set (buffered: kicks
	// while it runs coalesce into one more pass).
	kick chan struct{}
	// waits tells the recover loop that a Service began to wait for the
	// cloud (buffered like kick), so it listens for the cloud's answer.
	waits chan struct{}

	mu sync.Mutex
	// sig digests the lane's last node set, gen is its generation
	// (bumped when the set's names or providerIDs change). The Nodes
	// themselves are read from the informer at each use.
	sig uint64
	gen uint64
	// records are the Services whose load balancer was ensured in this
	// process: the digest of the spec it was made from and the node
	// generation it has. A few words per Service, no node list.
	records map[string]ensured
	// waiting are the Services whose last sync failed while the cloud
	// did not answer, and when.
	waiting map[string]time.Time
	// claimed are the Services a worker syncs or a node pass updates now;
	// free is signalled when one is released (a worker that got a key the
	// node pass holds waits for it).
	claimed map[string]bool
	free    *sync.Cond
	// running are the syncs in flight: when each began, and how to
	// interrupt it (once the cloud answers again, a sync that began
	// before its last unanswered call may be sleeping in its SDK's retry
	// backoff, up to 20 s on AWS; it is interrupted and run again now).
	running map[string]runningSync
}

type runningSync struct {
	began     time.Time
	interrupt context.CancelCauseFunc
}

// errCloudAnswers interrupts a sync that began while its cloud did not
// answer, once it answers again: the sync is run again at once.
var errCloudAnswers = errors.New("interrupted: the cloud answers again, so the sync starts over")

// interrupted says ctx was cancelled by errCloudAnswers.
func interrupted(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errCloudAnswers)
}

type ensured struct {
	hash uint64
	gen  uint64
}

func newLane(name string, c *Controller) *lane {
	l := &lane{
		name: name, c: c,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](c.opts.MinRetryDelay, c.opts.MaxRetryDelay),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "service-" + name},
		),
		kick:    make(chan struct{}, 1),
		waits:   make(chan struct{}, 1),
		records: map[string]ensured{},
		waiting: map[string]time.Time{},
		claimed: map[string]bool{},
		running: map[string]runningSync{},
	}
	l.free = sync.NewCond(&l.mu)
	return l
}

func (l *lane) run(ctx context.Context) {
	for range l.c.opts.Workers {
		go wait.UntilWithContext(ctx, l.worker, time.Second)
	}
	go wait.UntilWithContext(ctx, l.nodeLoop, time.Second)
	go l.recoverLoop(ctx)
	<-ctx.Done()
}

// recoverLoop runs recover every ProbeInterval, and at once when the
// cloud answers while Services wait for it: the wait from the answer to
// their retry is then none rather than up to a probe interval. An answer
// is heeded once per interval: a cloud half up, answering some calls and
// failing others, must not have every waiting Service retried at each of
// its answers.
func (l *lane) recoverLoop(ctx context.Context) {
	tick := time.NewTicker(l.c.opts.ProbeInterval)
	defer tick.Stop()
	heed := true
	for {
		var answer <-chan struct{}
		l.mu.Lock()
		if heed && len(l.waiting) > 0 {
			answer = l.c.opts.Health.NextAnswer(l.name)
		}
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-l.waits:
		case <-tick.C:
			heed = true
			l.recover(ctx, true)
		case <-answer:
			heed = false
			l.recover(ctx, false)
		}
	}
}

func (l *lane) worker(ctx context.Context) {
	for l.next(ctx) {
	}
}

func (l *lane) next(ctx context.Context) bool {
	key, quit := l.queue.Get()
	if quit {
		return false
	}
	defer l.queue.Done(key)
	health := l.c.opts.Health
	l.mu.Lock()
	for l.claimed[key] {
		// The node pass is updating its backends.
		l.free.Wait()
	}
	l.claimed[key] = true
	sctx, interrupt := context.WithCancelCause(ctx)
	l.running[key] = runningSync{began: health.Now(), interrupt: interrupt}
	l.mu.Unlock()
	err := l.c.sync(sctx, l, key)
	again := interrupted(sctx) && ctx.Err() == nil
	interrupt(nil)
	l.mu.Lock()
	delete(l.running, key)
	delete(l.claimed, key)
	l.free.Broadcast()
	l.mu.Unlock()
	if again {
		klog.FromContext(ctx).V(2).Info("The cloud answers again; syncing the Service again at once", "service", key)
		l.queue.Forget(key)
		l.queue.Add(key)
		return true
	}
	if err == nil {
		l.queue.Forget(key)
		if l.settled(key) {
			// It failed while the cloud did not answer, and now it
			// served: the others that waited for the cloud go now.
			l.retryWaiting(ctx, "a Service that waited for the cloud was served", false)
		}
		return true
	}
	if health.Down(l.name) {
		l.mu.Lock()
		if _, ok := l.waiting[key]; !ok {
			if len(l.waiting) == 0 {
				l.wakeRecover()
			}
			l.waiting[key] = health.Now()
		}
		l.mu.Unlock()
	}
	var re *api.RetryError
	if errors.As(err, &re) {
		klog.FromContext(ctx).Info("Error processing service, retrying after the delay the cloud asked for", "service", key, "retryAfter", re.RetryAfter(), "err", err)
		l.queue.AddAfter(key, re.RetryAfter())
		return true
	}
	utilruntime.HandleErrorWithContext(ctx, err, "Error processing service (retrying with exponential backoff)", "service", key)
	l.queue.AddRateLimited(key)
	return true
}

// settled drops key from the waiting Services, saying whether it was
// one.
func (l *lane) settled(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.waiting[key]
	delete(l.waiting, key)
	return ok
}

// recover runs while Services wait for the cloud: when the cloud has
// answered a call since the first of them failed, and its last call was
// answered (a cloud half up does not get them all at every tick), they
// are all retried now; otherwise, if probe, one of them is, as a probe.
func (l *lane) recover(ctx context.Context, probe bool) {
	l.mu.Lock()
	if len(l.waiting) == 0 {
		l.mu.Unlock()
		return
	}
	// A waiting Service being synced now is the probe already (a sync
	// against a cloud that does not answer can sit in its SDK's retries
	// for most of a minute; probes every 5 s would take every worker).
	probing := false
	for k := range l.running {
		if _, ok := l.waiting[k]; ok {
			probing = true
			break
		}
	}
	first := time.Time{}
	var oldest string
	for k, t := range l.waiting {
		if first.IsZero() || t.Before(first) || (t.Equal(first) && k < oldest) {
			first, oldest = t, k
		}
	}
	l.mu.Unlock()
	if h := l.c.opts.Health; h.AnsweredSince(l.name, first) && !h.Down(l.name) {
		l.retryWaiting(ctx, "the cloud answers again", true)
		return
	}
	if probing || !probe {
		// A waiting Service is being tried already: its outcome is the
		// probe. (Or this is an answer, not the probe's tick.)
		return
	}
	// Still no answer: try the one that waited longest (it goes to the
	// back of the waiting line by failing again).
	l.mu.Lock()
	l.waiting[oldest] = l.c.opts.Health.Now()
	l.mu.Unlock()
	l.queue.Add(oldest)
}

// retryWaiting queues every Service that waits for the cloud, now. They
// leave the waiting line; one that fails again while the cloud still
// does not answer joins it anew.
func (l *lane) retryWaiting(ctx context.Context, why string, interruptExposed bool) {
	l.mu.Lock()
	keys := make([]string, 0, len(l.waiting))
	for k := range l.waiting {
		keys = append(keys, k)
	}
	clear(l.waiting)
	l.mu.Unlock()
	if len(keys) == 0 {
		return
	}
	slices.Sort(keys)
	// The syncs in flight that began before the cloud's last unanswered
	// call start over too, rather than finish their SDK's retry backoff.
	// (Only when the cloud's last call was answered: a cloud half up
	// would have its syncs started over and over.)
	if interruptExposed {
		down := l.c.opts.Health.UnavailableAt(l.name)
		l.mu.Lock()
		for _, r := range l.running {
			if r.began.Before(down) {
				r.interrupt(errCloudAnswers)
			}
		}
		l.mu.Unlock()
	}
	klog.FromContext(ctx).Info("Retrying the Services that failed while the cloud did not answer", "reason", why, "services", len(keys))
	for _, k := range keys {
		// The failures while the cloud did not answer say nothing of the
		// Service: one that fails now starts its backoff afresh, not at
		// the minutes the outage built up.
		l.queue.Forget(k)
		l.queue.Add(k)
	}
}

func (l *lane) wakeRecover() {
	select {
	case l.waits <- struct{}{}:
	default:
	}
}

func (l *lane) kickNodes() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// nodePassInterval is the least time between two node passes of a lane:
// Nodes registering by the thousand cost a pass a second, not one per
// Node, and a change reaches the load balancers within about a second.
const nodePassInterval = time.Second

// nodeLoop recomputes the lane's node set on kicks, at most once per
// nodePassInterval. A lane with no Service ensured yet has nothing to
// update: its first syncs read the Nodes themselves.
func (l *lane) nodeLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.kick:
		}
		if !l.hasRecords() {
			continue
		}
		start := time.Now()
		nodes, gen, err := l.nodeSet(ctx)
		if err != nil {
			utilruntime.HandleErrorWithContext(ctx, err, "Listing nodes")
			nodeSyncErrors.Inc()
			continue
		}
		l.updateStale(ctx, nodes, gen)
		nodeSyncLatency.Observe(time.Since(start).Seconds())
		select {
		case <-ctx.Done():
			return
		case <-time.After(nodePassInterval):
		}
	}
}

func (l *lane) hasRecords() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.records) > 0
}

// nodeSet is the lane's node set, read from the informer now (the Nodes
// as they are, addresses included), and its generation. When its names
// or providerIDs differ from the last set's, the generation is bumped
// and the node loop is asked for a pass, which brings every Service
// ensured on the lane to it (updateStale).
func (l *lane) nodeSet(ctx context.Context) ([]*v1.Node, uint64, error) {
	all, err := l.c.stableNodes()
	if err != nil {
		return nil, 0, err
	}
	nodes := l.c.router.LaneNodes(l.name, all)
	sig := nodeSetSignature(nodes)
	l.mu.Lock()
	if sig == l.sig && l.gen > 0 {
		defer l.mu.Unlock()
		return nodes, l.gen, nil
	}
	l.sig = sig
	l.gen++
	gen := l.gen
	stale := 0
	for _, r := range l.records {
		if r.gen != gen {
			stale++
		}
	}
	l.mu.Unlock()
	klog.FromContext(ctx).V(2).Info("The cloud's node set changed; updating its load balancers", "nodes", len(nodes), "generation", gen, "services", stale)
	if stale > 0 {
		l.kickNodes()
	}
	return nodes, gen, nil
}

// updateStale brings the load balancers of the lane's Services that do
// not have node generation gen to nodes. A backend with a batch
// (lbhosts.Updater) gets every such Service that no worker holds in one
// call; the rest, and all of them without one, are queued, each at most
// once however often the nodes changed meanwhile (the queue holds a key
// once), for the worker's UpdateLoadBalancer.
func (l *lane) updateStale(ctx context.Context, nodes []*v1.Node, gen uint64) {
	l.mu.Lock()
	var queued, batch []string
	for k, r := range l.records {
		switch {
		case r.gen == gen:
		case l.c.batch == nil || l.claimed[k]:
			queued = append(queued, k)
		default:
			l.claimed[k] = true
			batch = append(batch, k)
		}
	}
	l.mu.Unlock()
	for _, k := range queued {
		l.queue.Add(k)
	}
	if len(batch) == 0 {
		return
	}
	slices.Sort(batch)
	defer func() {
		l.mu.Lock()
		for _, k := range batch {
			delete(l.claimed, k)
		}
		l.free.Broadcast()
		l.mu.Unlock()
	}()
	l.c.updateHostsBatch(ctx, l, batch, nodes, gen)
}

func (l *lane) record(key string) (ensured, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.records[key]
	return r, ok
}

func (l *lane) setRecord(key string, r ensured) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records[key] = r
}

// forget drops what the lane knows of key: its next sync ensures in
// full.
func (l *lane) forget(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.records, key)
}
