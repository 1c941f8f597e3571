// Package tagging is upstream AWS's opt-in tagging controller
// (k8s.io/cloud-provider-aws v1.37.0 pkg/controllers/tagging), served
// under the same name, flags and label: it puts --tags on the EC2
// instance of every Node, labels the Node k8s.io/cloud-provider-aws=<a
// checksum of the tags>, and removes the tags when the Node is deleted.
// EKS runs it by default; anywhere else it runs only when --controllers
// names it.
//
// What it does as upstream does: a Node is tagged when it is added, and
// again when its label's checksum differs from the tags' (so a changed
// --tags retags every Node once; keys dropped from --tags stay on the
// instances, as upstream leaves them); a Node whose instance EC2 does not
// know is retried for five minutes after the Node's creation (CreateTags
// is eventually consistent) and skipped after; an ID EC2 calls invalid
// (simulated Nodes) is skipped; a failure is retried with the client-go
// rate limiter up to 9 times; untagging a gone instance is done.
//
// What differs: the instances of every Node due at once are tagged in
// one call (up to 50; see providers/aws/tagging.go), and a Node deleted
// while the manager was not watching (a tombstone) is untagged too.
package tagging

import (
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	nodehelpers "k8s.io/cloud-provider/node/helpers"
	"k8s.io/klog/v2"

	"github.com/multicloud-ccm/multicloud-ccm/providers/instancetags"
)

const (
	// ControllerName is the name --controllers knows it by
	// (tagging_controller_wrapper.go:98).
	ControllerName = "tagging"
	// ClientName names its Kubernetes client and queue
	// (tagging_controller_wrapper.go:95).
	ClientName = "tagging-controller"
	// LabelKey is the label that records the tags' checksum on each
	// tagged Node (tagging_controller.go:65). MUST NOT change: it is how
	// a restarted controller, or upstream's, knows a Node is done.
	LabelKey = "k8s.io/cloud-provider-aws"

	// maxRequeues is how often a failing Node is retried
	// (tagging_controller.go:67).
	maxRequeues = 9
	// newNodeGrace is how long after a Node's creation an instance EC2
	// does not know yet is retried (tagging_controller.go:76).
	newNodeGrace = 5 * time.Minute
	// maxBatch is the most work items one cloud call serves.
	maxBatch = 50
)

// action is what a work item asks (tagging_controller.go:78-80).
type action string

const (
	actionTag   action = "ADD"
	actionUntag action = "DELETE"
)

// workItem is one Node's pending work; comparable, so the queue merges
// repeated events of one Node (tagging_controller.go:54-58).
type workItem struct {
	name       string
	providerID string
	action     action
}

// Controller tags the instances of Nodes.
type Controller struct {
	opts     Options
	cloud    instancetags.Tagger
	kube     kubernetes.Interface
	nodes    corelisters.NodeLister
	synced   cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[workItem]
	checksum string
	now      func() time.Time
}

// New builds the controller; it watches nodes from now on. opts must be
// valid (Options.Validate).
func New(opts Options, cloud instancetags.Tagger, kube kubernetes.Interface, nodes coreinformers.NodeInformer) (*Controller, error) {
	// Upstream's limiters (tagging_controller.go:127-142).
	limiter := workqueue.DefaultTypedControllerRateLimiter[workItem]()
	if opts.rateLimited() {
		limiter = workqueue.NewTypedMaxOfRateLimiter(
			workqueue.NewTypedItemExponentialFailureRateLimiter[workItem](5*time.Millisecond, 1000*time.Second),
			&workqueue.TypedBucketRateLimiter[workItem]{Limiter: rate.NewLimiter(rate.Limit(opts.RateLimit), opts.BurstLimit)},
		)
	}
	c := &Controller{
		opts:     opts,
		cloud:    cloud,
		kube:     kube,
		nodes:    nodes.Lister(),
		synced:   nodes.Informer().HasSynced,
		queue:    workqueue.NewTypedRateLimitingQueueWithConfig(limiter, workqueue.TypedRateLimitingQueueConfig[workItem]{Name: ClientName}),
		checksum: Checksum(opts.Tags),
		now:      time.Now,
	}
	// Nodes that exist at start come as adds, so a changed --tags reaches
	// every Node; an update is queued only when the label is not the
	// tags' checksum (tagging_controller.go:162-184).
	_, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if n, ok := obj.(*v1.Node); ok {
				c.enqueue(n, actionTag)
			}
		},
		UpdateFunc: func(_, obj any) {
			if n, ok := obj.(*v1.Node); ok && c.taggingRequired(n) {
				c.enqueue(n, actionTag)
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if n, ok := obj.(*v1.Node); ok {
				c.enqueue(n, actionUntag)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("watch nodes: %w", err)
	}
	return c, nil
}

// Checksum is the label value of a Node tagged with tags: the hex MD5 of
// the sorted key=value pairs joined by commas (tagging_controller.go:448-455).
// MUST NOT change: upstream and this controller must agree on which Nodes
// are done.
func Checksum(tags map[string]string) string {
	pairs := make([]string, 0, len(tags))
	for k, v := range tags {
		pairs = append(pairs, k+"="+v)
	}
	sort.Strings(pairs)
	return fmt.Sprintf("%x", md5.Sum([]byte(strings.Join(pairs, ","))))
}

func (c *Controller) taggingRequired(n *v1.Node) bool {
	return n.Labels[LabelKey] != c.checksum
}

func (c *Controller) enqueue(n *v1.Node, a action) {
	item := workItem{name: n.Name, providerID: n.Spec.ProviderID, action: a}
	if c.opts.rateLimited() {
		c.queue.AddRateLimited(item)
		return
	}
	c.queue.Add(item)
}

// Run tags and untags until ctx ends, with workers taking batches of
// what is queued.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	logger := klog.FromContext(ctx)
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced) {
		return
	}
	logger.Info("Starting the tagging controller", "tags", c.opts.Tags, "checksum", c.checksum, "workers", workers)
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	batches := make(chan []workItem)
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Go(func() {
			for b := range batches {
				c.process(ctx, b)
			}
		})
	}
	for {
		b, ok := c.next()
		if !ok {
			break
		}
		batches <- b
	}
	close(batches)
	wg.Wait()
}

// next takes a batch: the next item, waiting for one, and whatever else
// is queued, up to maxBatch. Only Run's loop takes from the queue, so a
// non-empty queue never blocks it; while every worker is busy the queue
// fills and the next batch is larger.
func (c *Controller) next() ([]workItem, bool) {
	first, shutdown := c.queue.Get()
	if shutdown {
		return nil, false
	}
	batch := []workItem{first}
	for len(batch) < maxBatch && c.queue.Len() > 0 {
		item, shutdown := c.queue.Get()
		if shutdown {
			break
		}
		batch = append(batch, item)
	}
	return batch, true
}

// pending is a work item that needs the cloud.
type pending struct {
	item workItem
	node *v1.Node // tag only
	id   string
}

// process serves a batch: untags first, then tags, so that a Node
// deleted and added again under the same name ends tagged.
func (c *Controller) process(ctx context.Context, batch []workItem) {
	logger := klog.FromContext(ctx)
	defer func() {
		for _, item := range batch {
			c.queue.Done(item)
		}
	}()
	var tag, untag []pending
	for _, item := range batch {
		switch item.action {
		case actionUntag:
			id, ok := c.cloud.InstanceID(item.providerID)
			if !ok {
				logger.V(4).Info("Not untagging: the Node's providerID names no AWS instance", "node", item.name, "providerID", item.providerID)
				c.queue.Forget(item)
				continue
			}
			untag = append(untag, pending{item: item, id: id})
		case actionTag:
			node, err := c.nodes.Get(item.name)
			if apierrors.IsNotFound(err) {
				// Gone since: its delete event untags (tagging_controller.go:299-301).
				c.queue.Forget(item)
				continue
			}
			if err != nil {
				c.retry(ctx, item, err)
				continue
			}
			if !c.taggingRequired(node) {
				c.queue.Forget(item)
				continue
			}
			// The Node as it is now: a providerID set since the event counts.
			id, ok := c.cloud.InstanceID(node.Spec.ProviderID)
			if !ok {
				// An update event brings it back once the node controller
				// sets its providerID.
				logger.V(4).Info("Not tagging yet: the Node's providerID names no AWS instance", "node", klog.KObj(node), "providerID", node.Spec.ProviderID)
				c.queue.Forget(item)
				continue
			}
			tag = append(tag, pending{item: item, node: node, id: id})
		}
	}
	if len(untag) > 0 {
		results := c.cloud.UntagInstances(ctx, ids(untag), c.opts.Tags)
		for _, p := range untag {
			err := results[p.id]
			switch {
			case err == nil:
				logger.Info("Untagged the instance of a deleted Node", "node", p.item.name, "instance", p.id)
				c.queue.Forget(p.item)
			case errors.Is(err, instancetags.ErrInstanceNotFound):
				// Nothing left to untag (upstream tags.go:403-406).
				logger.V(2).Info("Not untagging: the instance is gone", "node", p.item.name, "instance", p.id)
				c.queue.Forget(p.item)
			case errors.Is(err, instancetags.ErrInvalidInstanceID):
				logger.Info("Not untagging: EC2 calls the instance ID invalid", "node", p.item.name, "instance", p.id)
				c.queue.Forget(p.item)
			default:
				c.retry(ctx, p.item, err)
			}
		}
	}
	if len(tag) > 0 {
		results := c.cloud.TagInstances(ctx, ids(tag), c.opts.Tags)
		labels := map[string]string{LabelKey: c.checksum}
		for _, p := range tag {
			err := results[p.id]
			switch {
			case err == nil:
				if !nodehelpers.AddOrUpdateLabelsOnNode(c.kube, labels, p.node) {
					c.retry(ctx, p.item, fmt.Errorf("label node %s %s=%s", p.node.Name, LabelKey, c.checksum))
					continue
				}
				logger.Info("Tagged the instance of a Node", "node", klog.KObj(p.node), "instance", p.id, LabelKey, c.checksum)
				c.queue.Forget(p.item)
			case errors.Is(err, instancetags.ErrInstanceNotFound) && c.now().Sub(p.node.CreationTimestamp.Time) < newNodeGrace:
				// CreateTags is eventually consistent: a new instance may not be taggable yet.
				c.retry(ctx, p.item, err)
			case errors.Is(err, instancetags.ErrInstanceNotFound):
				logger.Info("Not tagging: the Node's instance does not exist", "node", klog.KObj(p.node), "instance", p.id)
				c.queue.Forget(p.item)
			case errors.Is(err, instancetags.ErrInvalidInstanceID):
				logger.Info("Not tagging: EC2 calls the instance ID invalid", "node", klog.KObj(p.node), "instance", p.id)
				c.queue.Forget(p.item)
			default:
				c.retry(ctx, p.item, err)
			}
		}
	}
}

func ids(ps []pending) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.id
	}
	return out
}

// retry requeues item with backoff, at most maxRequeues times
// (tagging_controller.go:263-279).
func (c *Controller) retry(ctx context.Context, item workItem, err error) {
	logger := klog.FromContext(ctx)
	if n := c.queue.NumRequeues(item); n < maxRequeues {
		logger.Error(err, "Tagging failed; retrying", "node", item.name, "action", item.action, "retries", n)
		c.queue.AddRateLimited(item)
		return
	}
	logger.Error(err, "Tagging failed; giving up until the Node's next update", "node", item.name, "action", item.action, "retries", maxRequeues)
	c.queue.Forget(item)
}
