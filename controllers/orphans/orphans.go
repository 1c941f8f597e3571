// Package orphans finds the cloud resources of this cluster's load
// balancers that no Service owns any more, counts them on /metrics, logs
// each once, and, when the cloud-config says `orphans: delete`, deletes
// those that stayed orphans for a grace period.
//
// Resources outlive their Service when the manager was down as the
// Service went and someone removed its finalizer by hand, when an older
// version crashed between two calls, or when a cluster is torn down
// (kubernetes/kubernetes #21960, #78124; the only sweep inside a CCM we
// know is cloud-provider-vsphere's loadbalancer/cleanup.go). Each cloud
// lists what carries this cluster's marks in one batched listing
// (inventory.Inventory.Owned), so another cluster's resources are never
// seen; a resource is an orphan when its Service does not exist, is not of
// type LoadBalancer (or has a loadBalancerClass), has another UID than the
// one the cloud recorded, or is served by another cloud now. Nothing is
// decided before the Service informer has synced or on a listing that
// failed, what the user supplied (Kept) is never deleted, and deletion
// goes in dependency order.
package orphans

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	coreinformers "k8s.io/client-go/informers/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/multicloud-ccm/multicloud-ccm/providers/inventory"
)

// Orphan is a resource no Service owns, and why.
type Orphan struct {
	Cloud string
	inventory.Owned
	Reason string
}

// Find says which of a cloud's resources are orphans, given the cluster's
// Services (by namespace/name) and the cloud each Service's load balancer
// is served by. Parts several Services share (neither Service nor UID
// recorded) are orphans only when the backend lists them Unneeded.
func Find(cloud string, owned []inventory.Owned, services map[types.NamespacedName]*v1.Service, servingCloud func(*v1.Service) (string, error)) []Orphan {
	var byUID map[types.UID]*v1.Service
	var out []Orphan
	for _, o := range owned {
		svc := services[o.Service]
		if o.Service == (types.NamespacedName{}) {
			if o.UID == "" && o.Unneeded {
				out = append(out, Orphan{Cloud: cloud, Owned: o, Reason: "no load balancer needs this shared part any more"})
				continue
			}
			if o.UID == "" {
				continue // shared
			}
			// The cloud recorded only the Service's UID (an Azure internal
			// frontend): the Service is whichever has it.
			if byUID == nil {
				byUID = make(map[types.UID]*v1.Service, len(services))
				for _, s := range services {
					byUID[s.UID] = s
				}
			}
			svc = byUID[o.UID]
		}
		if why := reason(cloud, o, svc, servingCloud); why != "" {
			out = append(out, Orphan{Cloud: cloud, Owned: o, Reason: why})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Order != out[j].Order {
			return out[i].Order < out[j].Order
		}
		return out[i].Kind+out[i].ID < out[j].Kind+out[j].ID
	})
	return out
}

// reason is why o is an orphan, "" when svc owns it.
func reason(cloud string, o inventory.Owned, svc *v1.Service, servingCloud func(*v1.Service) (string, error)) string {
	switch {
	case svc == nil:
		return "its Service does not exist"
	case svc.DeletionTimestamp != nil:
		return "" // the service controller's finalizer deletes it
	case o.UID != "" && o.UID != svc.UID:
		return fmt.Sprintf("its Service was made again (UID %s, the cloud recorded %s)", svc.UID, o.UID)
	case svc.Spec.Type != v1.ServiceTypeLoadBalancer:
		return "its Service is of type " + string(svc.Spec.Type)
	case svc.Spec.LoadBalancerClass != nil:
		return "its Service has loadBalancerClass " + *svc.Spec.LoadBalancerClass
	}
	if name, err := servingCloud(svc); err == nil && name != cloud {
		return "its Service's load balancer is in cloud " + name
	}
	return ""
}

// Options tune the controller.
type Options struct {
	// Period between scans (jittered by a tenth); the first is one
	// minute after start, once the service controller's first syncs have
	// settled.
	Period time.Duration
	// Grace is how long a resource must stay an orphan before Delete
	// deletes it.
	Grace time.Duration
	// Delete deletes orphans (cloud-config orphans: delete); otherwise
	// they are only reported.
	Delete bool
	// FirstScan is the wait before the first scan (one minute when 0).
	FirstScan time.Duration
}

// Controller scans every cloud of source for orphans.
type Controller struct {
	opts     Options
	source   inventory.Source
	services corelisters.ServiceLister
	synced   cache.InformerSynced
	now      func() time.Time

	mu sync.Mutex
	// since is when each orphan was first seen, by cloud and "kind id";
	// an orphan gone from a scan (or owned again) starts over.
	since map[string]map[string]time.Time
}

// New returns the controller; Run starts it.
func New(opts Options, source inventory.Source, services coreinformers.ServiceInformer) *Controller {
	if opts.FirstScan <= 0 {
		opts.FirstScan = time.Minute
	}
	register()
	return &Controller{
		opts: opts, source: source, services: services.Lister(), synced: services.Informer().HasSynced,
		now: time.Now, since: map[string]map[string]time.Time{},
	}
}

// Run scans every Period until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	if !cache.WaitForNamedCacheSync("load-balancer-orphans", ctx.Done(), c.synced) {
		return
	}
	mode := "report"
	if c.opts.Delete {
		mode = "delete"
	}
	klog.FromContext(ctx).Info("Looking for cloud resources no Service owns", "period", c.opts.Period, "mode", mode, "gracePeriod", c.opts.Grace)
	select {
	case <-ctx.Done():
		return
	case <-time.After(min(c.opts.FirstScan, c.opts.Period)):
	}
	wait.JitterUntilWithContext(ctx, func(ctx context.Context) {
		for _, cl := range c.source.Inventories() {
			c.Scan(ctx, cl)
		}
	}, c.opts.Period, 0.1, true)
}

// Scan lists cl once, counts its orphans, logs the new ones, and deletes
// those past the grace period when deleting.
func (c *Controller) Scan(ctx context.Context, cl inventory.Cloud) {
	logger := klog.FromContext(ctx).WithValues("cloud", cl.Name)
	if !c.synced() {
		return
	}
	owned, err := cl.Owned(ctx)
	scans.WithLabelValues(cl.Name, result(err)).Inc()
	if err != nil {
		logger.Error(err, "Could not list the cloud's load balancers; looking for orphans again at the next period")
		return
	}
	all, err := c.services.List(labels.Everything())
	if err != nil {
		return
	}
	byKey := make(map[types.NamespacedName]*v1.Service, len(all))
	for _, s := range all {
		byKey[types.NamespacedName{Namespace: s.Namespace, Name: s.Name}] = s
	}
	found := Find(cl.Name, owned, byKey, c.source.ServingCloud)

	now := c.now()
	c.mu.Lock()
	prev := c.since[cl.Name]
	cur := make(map[string]time.Time, len(found))
	var due []Orphan
	counts := map[string]int{}
	for _, o := range found {
		id := o.Kind + " " + o.ID
		first, seen := prev[id]
		if !seen {
			first = now
			logger.Info("Found a cloud resource no Service owns", "kind", o.Kind, "id", o.ID, "name", o.Name,
				"service", o.Service, "reason", o.Reason, "kept", o.Kept)
		}
		cur[id] = first
		counts[o.Kind]++
		if c.opts.Delete && !o.Kept && now.Sub(first) >= c.opts.Grace {
			due = append(due, o)
		}
	}
	c.since[cl.Name] = cur
	c.mu.Unlock()
	orphaned.DeletePartialMatch(map[string]string{"provider": cl.Name})
	for kind, n := range counts {
		orphaned.WithLabelValues(cl.Name, kind).Set(float64(n))
	}

	// found is in dependency order, so due is too.
	for _, o := range due {
		if err := cl.DeleteOrphan(ctx, o.Owned); err != nil {
			deletions.WithLabelValues(cl.Name, o.Kind, "error").Inc()
			logger.Error(err, "Could not delete an orphan; trying again at the next period", "kind", o.Kind, "id", o.ID)
			continue
		}
		deletions.WithLabelValues(cl.Name, o.Kind, "deleted").Inc()
		logger.Info("Deleted a cloud resource no Service owned", "kind", o.Kind, "id", o.ID, "name", o.Name,
			"service", o.Service, "reason", o.Reason, "orphanFor", now.Sub(c.firstSeen(cl.Name, o)).Round(time.Second))
	}
}

func (c *Controller) firstSeen(cloud string, o Orphan) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.since[cloud][o.Kind+" "+o.ID]
}

func result(err error) string {
	if err != nil {
		return "error"
	}
	return "ok"
}
