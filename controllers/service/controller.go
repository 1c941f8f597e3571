// Package service is the manager's service controller: it provisions a
// cloud load balancer for every LoadBalancer Service, keeps its backends
// in step with the Nodes, writes its address to the Service's status and
// deletes it (behind the load-balancer-cleanup finalizer) when the
// Service goes.
//
// It keeps every contract of k8s.io/cloud-provider's service controller
// that clusters and tools depend on (the finalizer, the Event reasons,
// spec.loadBalancerClass, the exclude-from-external-load-balancers
// label, the stable node set of KEP-3458, status patches) so a cluster
// can switch between the two, and differs where upstream's bounds the
// manager:
//
//   - one queue per cloud ("lane"), each with its own workers: a cloud
//     that hangs or throttles holds up only its own Services, and a
//     node change reaches each cloud's load balancers on that cloud's
//     lane, never waiting behind another cloud's Service;
//   - a Service that failed because its cloud did not answer is retried
//     as soon as the cloud answers again (one probe every few seconds
//     while it does not), not after its exponential backoff;
//   - no node list per Service: each lane keeps one node set and a
//     generation, each Service the generation its load balancer has;
//   - a Service's node update and its ensure go through the same queue,
//     so they never overlap.
package service

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	servicehelper "k8s.io/cloud-provider/service/helpers"
	"k8s.io/klog/v2"

	"github.com/multicloud-ccm/multicloud-ccm/providers/cloudhealth"
	"github.com/multicloud-ccm/multicloud-ccm/providers/lbhosts"
)

// Name is the controller's name in --controllers (upstream's
// "service-lb-controller", alias "service": k8s.io/cloud-provider
// names/controller_names.go).
const Name = "service-lb-controller"

// Lanes is what a cloud that serves several clouds' load balancers (the
// hybrid composite) tells the controller: which cloud serves a Service,
// and which Nodes that cloud's load balancers can use. Without it there
// is one lane, named after the provider, with every Node.
type Lanes interface {
	// LoadBalancerLanes are the clouds that serve load balancers.
	LoadBalancerLanes() []string
	// LoadBalancerLane is the cloud that serves svc's load balancer ("" or
	// an unknown name: the first lane, whose sync then reports why).
	LoadBalancerLane(svc *v1.Service) string
	// LaneNodes are the nodes lane's load balancers can use as backends.
	LaneNodes(lane string, nodes []*v1.Node) []*v1.Node
	// LanesInUse tells the cloud that each lane has workers of its own:
	// a bound it keeps on one cloud's calls so that a shared pool of
	// workers stays free for the others (the hybrid composite's) is
	// not needed, and would only make a cloud's Services wait for each
	// other.
	LanesInUse()
}

// Options are the controller's settings.
type Options struct {
	// ClusterName is --cluster-name, passed to the cloud.
	ClusterName string
	// Workers is --concurrent-service-syncs: Service syncs in flight per
	// cloud.
	Workers int
	// MinRetryDelay and MaxRetryDelay bound a failed Service's backoff
	// (upstream: 5 s and 300 s, controller.go minRetryDelay/maxRetryDelay).
	MinRetryDelay, MaxRetryDelay time.Duration
	// ProbeInterval is how often, while a cloud does not answer, one of
	// the Services that failed for it is retried to learn whether it
	// answers again; 0: 5 s.
	ProbeInterval time.Duration
	// ServiceResync and NodeResync are the informer resync periods
	// (upstream: 30 s and 100 s).
	ServiceResync, NodeResync time.Duration
	// Health tells whether each cloud answers; nil: cloudhealth.Default.
	Health *cloudhealth.Board
}

func (o *Options) setDefaults() {
	if o.Workers <= 0 {
		o.Workers = 1
	}
	if o.MinRetryDelay <= 0 {
		o.MinRetryDelay = 5 * time.Second
	}
	if o.MaxRetryDelay <= 0 {
		o.MaxRetryDelay = 300 * time.Second
	}
	if o.ProbeInterval <= 0 {
		o.ProbeInterval = 5 * time.Second
	}
	if o.ServiceResync <= 0 {
		o.ServiceResync = 30 * time.Second
	}
	if o.NodeResync <= 0 {
		o.NodeResync = 100 * time.Second
	}
	if o.Health == nil {
		o.Health = cloudhealth.Default
	}
}

// Controller keeps the cloud's load balancers in step with the Services.
type Controller struct {
	opts     Options
	balancer cloudprovider.LoadBalancer
	// batch is balancer's pass over many Services' backends; nil when
	// it has none (each Service is updated alone).
	batch    lbhosts.Updater
	router   Lanes
	kube     kubernetes.Interface
	recorder record.EventRecorder

	services       corelisters.ServiceLister
	nodes          corelisters.NodeLister
	servicesSynced cache.InformerSynced
	nodesSynced    cache.InformerSynced

	lanes     map[string]*lane
	laneOrder []string

	// deleted holds the last state of Services that vanished from the
	// informer while wanting a load balancer without the finalizer (a
	// finalizer removed by hand, a Service from before finalizers): the
	// deletion needs it, and there is nothing else to ask.
	mu      sync.Mutex
	deleted map[string]*v1.Service
}

// New builds the controller on cloud's load balancers.
func New(opts Options, cloud cloudprovider.Interface, kube kubernetes.Interface, recorder record.EventRecorder,
	services coreinformers.ServiceInformer, nodes coreinformers.NodeInformer,
) (*Controller, error) {
	opts.setDefaults()
	registerMetrics()
	balancer, ok := cloud.LoadBalancer()
	if !ok {
		return nil, errors.New("the cloud serves no load balancers")
	}
	router, ok := cloud.(Lanes)
	if !ok || len(router.LoadBalancerLanes()) == 0 {
		router = oneLane(cloud.ProviderName())
	}
	c := &Controller{
		opts: opts, balancer: balancer, router: router, kube: kube, recorder: recorder,
		services: services.Lister(), nodes: nodes.Lister(),
		servicesSynced: services.Informer().HasSynced, nodesSynced: nodes.Informer().HasSynced,
		lanes: map[string]*lane{}, deleted: map[string]*v1.Service{},
	}
	if b, ok := balancer.(lbhosts.Updater); ok {
		c.batch = b
	}
	router.LanesInUse()
	for _, name := range router.LoadBalancerLanes() {
		c.lanes[name] = newLane(name, c)
		c.laneOrder = append(c.laneOrder, name)
	}
	if _, err := services.Informer().AddEventHandlerWithResyncPeriod(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if svc, ok := obj.(*v1.Service); ok && (wantsLoadBalancer(svc) || needsCleanup(svc)) {
				c.enqueue(svc)
			}
		},
		UpdateFunc: func(oldObj, curObj any) {
			old, ok1 := oldObj.(*v1.Service)
			cur, ok2 := curObj.(*v1.Service)
			if ok1 && ok2 && (needsUpdate(old, cur) || needsCleanup(cur)) {
				c.enqueue(cur)
			}
		},
		DeleteFunc: c.serviceDeleted,
	}, opts.ServiceResync); err != nil {
		return nil, err
	}
	if _, err := nodes.Informer().AddEventHandlerWithResyncPeriod(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { c.nodesChanged() },
		UpdateFunc: func(oldObj, curObj any) {
			old, ok1 := oldObj.(*v1.Node)
			cur, ok2 := curObj.(*v1.Node)
			if ok1 && ok2 && shouldSyncUpdatedNode(old, cur) {
				c.nodesChanged()
			}
		},
		DeleteFunc: func(any) { c.nodesChanged() },
	}, opts.NodeResync); err != nil {
		return nil, err
	}
	return c, nil
}

// Run serves until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	defer utilruntime.HandleCrash()
	logger := klog.FromContext(ctx)
	logger.Info("Starting service controller", "clouds", c.laneOrder, "workersPerCloud", c.opts.Workers)
	defer logger.Info("Shutting down service controller")
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.servicesSynced, c.nodesSynced) {
		return
	}
	var wg sync.WaitGroup
	for _, name := range c.laneOrder {
		l := c.lanes[name]
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.run(klog.NewContext(ctx, logger.WithValues("cloud", name)))
		}()
	}
	c.nodesChanged()
	<-ctx.Done()
	for _, l := range c.lanes {
		l.queue.ShutDown()
	}
	wg.Wait()
}

// laneOf is the lane that serves svc.
func (c *Controller) laneOf(svc *v1.Service) *lane {
	if l, ok := c.lanes[c.router.LoadBalancerLane(svc)]; ok {
		return l
	}
	return c.lanes[c.laneOrder[0]]
}

func (c *Controller) enqueue(svc *v1.Service) {
	key, err := cache.MetaNamespaceKeyFunc(svc)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("key of service %#v: %w", svc, err))
		return
	}
	c.laneOf(svc).queue.Add(key)
}

// serviceDeleted handles a Service that left the informer. With the
// finalizer it was cleaned up before it could go; without it (removed by
// hand) the load balancer this process made for it is deleted from its
// last state.
func (c *Controller) serviceDeleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	svc, ok := obj.(*v1.Service)
	if !ok || !wantsLoadBalancer(svc) {
		return
	}
	key, err := cache.MetaNamespaceKeyFunc(svc)
	if err != nil {
		return
	}
	if _, served := c.laneOf(svc).record(key); !served {
		// Its deletion was handled behind the finalizer (which forgets
		// it), or this process never served it: as upstream's cache,
		// nothing to do (controller.go processServiceDeletion).
		return
	}
	c.mu.Lock()
	c.deleted[key] = svc
	c.mu.Unlock()
	c.laneOf(svc).queue.Add(key)
}

// nodesChanged tells every lane to recompute its node set.
func (c *Controller) nodesChanged() {
	for _, l := range c.lanes {
		l.kickNodes()
	}
}

// stableNodes are the cluster's Nodes in the stable node set.
func (c *Controller) stableNodes() ([]*v1.Node, error) {
	all, err := c.nodes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	out := make([]*v1.Node, 0, len(all))
	for _, n := range all {
		if inStableSet(n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// sync brings one Service's load balancer in step, on lane l.
func (c *Controller) sync(ctx context.Context, l *lane, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	svc, err := c.services.Services(namespace).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		return c.syncGone(ctx, l, key)
	case err != nil:
		return err
	}
	if other := c.laneOf(svc); other != l {
		// Its cloud changed since it was queued: the other lane serves it
		// now (the composite moves the load balancer there).
		l.forget(key)
		other.queue.Add(key)
		return nil
	}
	svc = svc.DeepCopy()
	if !wantsLoadBalancer(svc) || needsCleanup(svc) {
		err := c.syncDelete(ctx, l, key, svc)
		if err != nil && !interrupted(ctx) {
			c.recorder.Eventf(svc, v1.EventTypeWarning, EventSyncFailed, "Error syncing load balancer: %v", err)
		}
		return err
	}
	return c.syncEnsure(ctx, l, key, svc)
}

// syncGone deletes the load balancer of a Service that left without the
// finalizer (controller.go processServiceDeletion).
func (c *Controller) syncGone(ctx context.Context, l *lane, key string) error {
	c.mu.Lock()
	svc := c.deleted[key]
	c.mu.Unlock()
	if svc == nil {
		l.forget(key)
		return nil
	}
	c.recorder.Event(svc, v1.EventTypeNormal, EventDeleting, "Deleting load balancer")
	if err := c.balancer.EnsureLoadBalancerDeleted(ctx, c.opts.ClusterName, svc); err != nil {
		c.recorder.Eventf(svc, v1.EventTypeWarning, EventDeleteFailed, "Error deleting load balancer: %v", err)
		return err
	}
	c.recorder.Event(svc, v1.EventTypeNormal, EventDeleted, "Deleted load balancer")
	c.mu.Lock()
	if c.deleted[key] == svc {
		delete(c.deleted, key)
	}
	c.mu.Unlock()
	l.forget(key)
	return nil
}

// syncDelete deletes the load balancer of a Service that no longer wants
// one or is being deleted, then removes the finalizer and clears the
// status (controller.go syncLoadBalancerIfNeeded, delete branch).
func (c *Controller) syncDelete(ctx context.Context, l *lane, key string, svc *v1.Service) error {
	previous := svc.Status.LoadBalancer.DeepCopy()
	_, exists, err := c.balancer.GetLoadBalancer(ctx, c.opts.ClusterName, svc)
	if err != nil {
		return fmt.Errorf("failed to check if load balancer exists before cleanup: %w", err)
	}
	if exists {
		klog.FromContext(ctx).V(2).Info("Deleting existing load balancer", "service", key)
		c.recorder.Event(svc, v1.EventTypeNormal, EventDeleting, "Deleting load balancer")
		if err := c.balancer.EnsureLoadBalancerDeleted(ctx, c.opts.ClusterName, svc); err != nil && !errors.Is(err, cloudprovider.ImplementedElsewhere) {
			return fmt.Errorf("failed to delete load balancer: %w", err)
		}
	}
	// Forgotten before the finalizer goes, so the Service's disappearance
	// that follows is not taken for one without it.
	l.forget(key)
	if err := c.removeFinalizer(ctx, svc); err != nil {
		return fmt.Errorf("failed to remove load balancer cleanup finalizer: %w", err)
	}
	c.recorder.Event(svc, v1.EventTypeNormal, EventDeleted, "Deleted load balancer")
	if err := c.patchStatus(ctx, svc, previous, &v1.LoadBalancerStatus{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to update load balancer status: %w", err)
	}
	return nil
}

// syncEnsure makes or updates the Service's load balancer. A Service
// whose load balancer was ensured in this process with the same spec
// only needs its backends brought to the lane's node set
// (UpdateLoadBalancer), and nothing when it has them.
func (c *Controller) syncEnsure(ctx context.Context, l *lane, key string, svc *v1.Service) error {
	hash := specHash(svc)
	nodes, gen, err := l.nodeSet(ctx)
	if err != nil {
		return err
	}
	if rec, ok := l.record(key); ok && rec.hash == hash {
		if rec.gen == gen {
			return nil
		}
		return c.updateHosts(ctx, l, key, svc, hash, nodes, gen)
	}
	previous := svc.Status.LoadBalancer.DeepCopy()
	klog.FromContext(ctx).V(2).Info("Ensuring load balancer", "service", key)
	c.recorder.Event(svc, v1.EventTypeNormal, EventEnsuring, "Ensuring load balancer")
	status, err := c.ensure(ctx, svc, nodes)
	if errors.Is(err, cloudprovider.ImplementedElsewhere) {
		klog.FromContext(ctx).V(4).Info("The load balancer is implemented by another controller", "service", key)
		return nil
	}
	if err != nil {
		if !interrupted(ctx) {
			c.recorder.Eventf(svc, v1.EventTypeWarning, EventSyncFailed, "Error syncing load balancer: %v", err)
		}
		return err
	}
	c.recorder.Event(svc, v1.EventTypeNormal, EventEnsured, "Ensured load balancer")
	if err := c.patchStatus(ctx, svc, previous, status); err != nil && !apierrors.IsNotFound(err) {
		err = fmt.Errorf("failed to update load balancer status: %w", err)
		c.recorder.Eventf(svc, v1.EventTypeWarning, EventSyncFailed, "Error syncing load balancer: %v", err)
		return err
	}
	// Hashed again: a backend that records something on the Service
	// (OpenStack's load-balancer-id annotation) writes it onto svc as
	// well, and that change, coming back from the informer, is the spec
	// this load balancer was made from, not one to ensure again.
	l.setRecord(key, ensured{hash: specHash(svc), gen: gen})
	// The nodes may have changed while it was made, and the node loop
	// skips lanes with no Service ensured yet: read the set again, which
	// queues this Service (and any other behind) when it moved on.
	if _, _, err := l.nodeSet(ctx); err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Listing nodes after an ensure")
	}
	return nil
}

// ensure adds the finalizer, then ensures the load balancer with nodes
// (controller.go ensureLoadBalancer).
func (c *Controller) ensure(ctx context.Context, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	// The finalizer first, so the Service cannot go before its load
	// balancer does.
	if err := c.addFinalizer(ctx, svc); err != nil {
		return nil, fmt.Errorf("failed to add load balancer cleanup finalizer: %w", err)
	}
	if len(nodes) == 0 {
		c.recorder.Event(svc, v1.EventTypeWarning, EventNoNodes, "There are no available nodes for LoadBalancer")
	}
	loadBalancerSyncs.Inc()
	status, err := c.balancer.EnsureLoadBalancer(ctx, c.opts.ClusterName, svc, nodes)
	if err != nil {
		if errors.Is(err, cloudprovider.ImplementedElsewhere) {
			return nil, err
		}
		// %w keeps an api.RetryError for the queue.
		return nil, fmt.Errorf("failed to ensure load balancer: %w", err)
	}
	if status == nil {
		return nil, errors.New("service status returned by EnsureLoadBalancer is nil")
	}
	return status, nil
}

// updateHosts brings the load balancer's backends to the lane's node
// set (controller.go lockedUpdateLoadBalancerHosts). A failure is a
// Warning only while the load balancer exists, and its retry is a full
// ensure.
func (c *Controller) updateHosts(ctx context.Context, l *lane, key string, svc *v1.Service, hash uint64, nodes []*v1.Node, gen uint64) error {
	start := time.Now()
	loadBalancerSyncs.Inc()
	klog.FromContext(ctx).V(2).Info("Updating backends for load balancer", "service", key, "nodes", len(nodes), "names", loggableNodeNames(nodes))
	err := c.balancer.UpdateLoadBalancer(ctx, c.opts.ClusterName, svc, nodes)
	updateHostsLatency.Observe(time.Since(start).Seconds())
	switch {
	case err == nil:
		l.setRecord(key, ensured{hash: hash, gen: gen})
		if len(nodes) == 0 {
			c.recorder.Event(svc, v1.EventTypeWarning, EventNoNodes, "There are no available nodes for LoadBalancer")
		} else {
			c.recorder.Event(svc, v1.EventTypeNormal, EventUpdated, "Updated load balancer with new hosts")
		}
		return nil
	case errors.Is(err, cloudprovider.ImplementedElsewhere):
		l.setRecord(key, ensured{hash: hash, gen: gen})
		return nil
	}
	nodeSyncErrors.Inc()
	if _, exists, gerr := c.balancer.GetLoadBalancer(ctx, c.opts.ClusterName, svc); gerr != nil {
		utilruntime.HandleError(fmt.Errorf("failed to check if load balancer exists for service %s: %w", key, gerr))
	} else if !exists {
		// Nothing to update: its next ensure (a Service change, a
		// restart, drift repair) makes it with the nodes of its time.
		l.setRecord(key, ensured{hash: hash, gen: gen})
		return nil
	}
	l.forget(key) // the retry ensures in full
	c.recorder.Eventf(svc, v1.EventTypeWarning, EventUpdateFailed,
		"Error updating load balancer with new hosts %v [node names limited, total number of nodes: %d], error: %v", loggableNodeNames(nodes), len(nodes), err)
	return err
}

// updateHostsBatch brings the load balancers of keys (claimed by the
// node pass) to nodes in one call of the backend's batch. A Service that
// changed or left since its ensure, one the batch did not take, and one
// whose update failed are queued: the worker ensures or updates it alone,
// with the Warning Events of updateHosts.
func (c *Controller) updateHostsBatch(ctx context.Context, l *lane, keys []string, nodes []*v1.Node, gen uint64) {
	var (
		svcs   []*v1.Service
		hashes []uint64
		batch  []string
	)
	for _, key := range keys {
		namespace, name, err := cache.SplitMetaNamespaceKey(key)
		if err != nil {
			continue
		}
		svc, err := c.services.Services(namespace).Get(name)
		rec, ok := l.record(key)
		if err != nil || !ok || !wantsLoadBalancer(svc) || needsCleanup(svc) || c.laneOf(svc) != l || specHash(svc) != rec.hash {
			l.queue.Add(key)
			continue
		}
		svcs, hashes, batch = append(svcs, svc), append(hashes, rec.hash), append(batch, key)
	}
	if len(batch) == 0 {
		return
	}
	start := time.Now()
	loadBalancerSyncs.Add(float64(len(batch)))
	klog.FromContext(ctx).V(2).Info("Updating backends for load balancers in one batch", "services", len(batch), "nodes", len(nodes), "names", loggableNodeNames(nodes))
	errs := c.batch.UpdateLoadBalancerHosts(ctx, c.opts.ClusterName, svcs, nodes)
	updateHostsLatency.Observe(time.Since(start).Seconds())
	for i, key := range batch {
		var err error
		if i < len(errs) {
			err = errs[i]
		} else {
			err = lbhosts.ErrNotBatched
		}
		switch {
		case err == nil:
			l.setRecord(key, ensured{hash: hashes[i], gen: gen})
			if len(nodes) == 0 {
				c.recorder.Event(svcs[i], v1.EventTypeWarning, EventNoNodes, "There are no available nodes for LoadBalancer")
			} else {
				c.recorder.Event(svcs[i], v1.EventTypeNormal, EventUpdated, "Updated load balancer with new hosts")
			}
		case errors.Is(err, cloudprovider.ImplementedElsewhere):
			l.setRecord(key, ensured{hash: hashes[i], gen: gen})
		default:
			if !errors.Is(err, lbhosts.ErrNotBatched) {
				klog.FromContext(ctx).V(2).Info("Batched backend update failed; updating the Service alone", "service", key, "err", err)
			}
			l.queue.Add(key)
		}
	}
}

// addFinalizer patches the load-balancer-cleanup finalizer onto svc.
func (c *Controller) addFinalizer(ctx context.Context, svc *v1.Service) error {
	if servicehelper.HasLBFinalizer(svc) {
		return nil
	}
	updated := svc.DeepCopy()
	updated.Finalizers = append(updated.Finalizers, servicehelper.LoadBalancerCleanupFinalizer)
	klog.FromContext(ctx).V(2).Info("Adding finalizer to service", "service", klog.KObj(svc))
	if _, err := servicehelper.PatchService(c.kube.CoreV1(), svc, updated); err != nil {
		return err
	}
	svc.Finalizers = updated.Finalizers
	return nil
}

// removeFinalizer patches it off.
func (c *Controller) removeFinalizer(ctx context.Context, svc *v1.Service) error {
	if !servicehelper.HasLBFinalizer(svc) {
		return nil
	}
	updated := svc.DeepCopy()
	updated.Finalizers = nil
	for _, f := range svc.Finalizers {
		if f != servicehelper.LoadBalancerCleanupFinalizer {
			updated.Finalizers = append(updated.Finalizers, f)
		}
	}
	klog.FromContext(ctx).V(2).Info("Removing finalizer from service", "service", klog.KObj(svc))
	if _, err := servicehelper.PatchService(c.kube.CoreV1(), svc, updated); err != nil {
		return err
	}
	svc.Finalizers = updated.Finalizers
	return nil
}

// patchStatus writes the load balancer status when it changed.
func (c *Controller) patchStatus(ctx context.Context, svc *v1.Service, previous, status *v1.LoadBalancerStatus) error {
	if servicehelper.LoadBalancerStatusEqual(previous, status) {
		return nil
	}
	updated := svc.DeepCopy()
	updated.Status.LoadBalancer = *status
	klog.FromContext(ctx).V(2).Info("Patching status for service", "service", klog.KObj(svc))
	_, err := servicehelper.PatchService(c.kube.CoreV1(), svc, updated)
	return err
}

// oneLane is the router of a cloud without lanes: every Service and Node
// on one lane named after the provider.
type oneLane string

func (o oneLane) LoadBalancerLanes() []string                     { return []string{string(o)} }
func (o oneLane) LoadBalancerLane(*v1.Service) string             { return string(o) }
func (o oneLane) LaneNodes(_ string, nodes []*v1.Node) []*v1.Node { return nodes }
func (o oneLane) LanesInUse()                                     {}
