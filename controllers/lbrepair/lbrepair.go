// Package lbrepair repairs load balancers changed outside the manager.
//
// The upstream service controller ensures a load balancer when its
// Service or the node set changes, and never again (kubernetes/kubernetes
// #34660): a listener, rule or the whole load balancer deleted in the
// console stays broken until someone edits the Service. This controller
// leaves the upstream controller the owner of every sync and adds a
// periodic check: each cloud lists the parts of all its load balancers in
// one batched listing (inventory.Inventory.Owned), the controller compares
// each Service's parts with what the listing showed after that Service's
// last sync (its baseline), and where a part is missing or changed it
// re-ensures the Service in the Service's own turn (the same serialized
// path the service controller's calls take), writes a changed address to
// the status, and records a Normal Event LoadBalancerRepaired saying what
// was wrong.
//
// What a sync made is known only from a listing after it, so a cloud is
// listed again soon after its Services sync (at most once per minGap);
// a change made in the seconds between a sync and that listing is taken
// for the sync's result until the next ensure. An update that only follows
// the node set never removes a part, so a part missing after one is still
// drift. A listing that fails repairs nothing, and a listing by which most
// Services drifted at once must say so twice in a row before any is
// repaired, so a cloud answering oddly never starts a storm of re-ensures.
package lbrepair

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	servicehelper "k8s.io/cloud-provider/service/helpers"
	"k8s.io/klog/v2"

	"github.com/multicloud-ccm/multicloud-ccm/providers/inventory"
)

// Event reasons on the Service.
const (
	EventRepaired     = "LoadBalancerRepaired"
	EventRepairFailed = "LoadBalancerRepairFailed"
)

// Options tune the controller.
type Options struct {
	// Period between checks of every Service (jittered by a tenth).
	Period time.Duration
	// MinGap is the least time between two listings of one cloud; a sync
	// since a cloud's last listing brings the next one forward to it.
	MinGap time.Duration
	// ClusterName is --cluster-name, as the service controller passes it.
	ClusterName string
}

// Controller checks and repairs the load balancers of every cloud in
// source.
type Controller struct {
	opts     Options
	source   inventory.Source
	kube     kubernetes.Interface
	services corelisters.ServiceLister
	synced   cache.InformerSynced
	recorder record.EventRecorder
	now      func() time.Time

	mu sync.Mutex
	// clouds holds each cloud's state by name.
	clouds map[string]*cloudState
}

type cloudState struct {
	lastList  time.Time
	baselines map[types.NamespacedName]*baseline
	// suspect is set when the last listing had most Services drifted at
	// once; such a verdict needs a second listing to agree.
	suspect bool
}

// baseline is a Service's parts as a listing after its last sync showed
// them.
type baseline struct {
	syncAt, ensuredAt time.Time
	parts             map[string]string // "kind id" -> detail
}

// New returns the controller; Run starts it.
func New(opts Options, source inventory.Source, kube kubernetes.Interface, services coreinformers.ServiceInformer, recorder record.EventRecorder) *Controller {
	if opts.MinGap <= 0 || opts.MinGap > opts.Period {
		opts.MinGap = min(opts.Period, 30*time.Second)
	}
	register()
	return &Controller{
		opts: opts, source: source, kube: kube,
		services: services.Lister(), synced: services.Informer().HasSynced,
		recorder: recorder, now: time.Now, clouds: map[string]*cloudState{},
	}
}

// Run checks every cloud until ctx ends: each at least every Period, and
// after its Services' syncs at most every MinGap.
func (c *Controller) Run(ctx context.Context) {
	if !cache.WaitForNamedCacheSync("load-balancer-repair", ctx.Done(), c.synced) {
		return
	}
	logger := klog.FromContext(ctx)
	logger.Info("Checking load balancers for changes made outside the manager", "period", c.opts.Period)
	// A tick every MinGap decides which clouds are due; a cloud is due at
	// its jittered period, or early when one of its Services synced since
	// its last listing.
	// Nothing is listed at start: the service controller's first syncs
	// bring each cloud's first listing forward to MinGap after them.
	next := map[string]time.Time{}
	started := c.now()
	for _, cl := range c.source.Inventories() {
		next[cl.Name] = started.Add(wait.Jitter(c.opts.Period, 0.1))
		c.state(cl.Name).lastList = started
	}
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		for _, cl := range c.source.Inventories() {
			if !c.now().Before(next[cl.Name]) || c.syncedSinceListing(cl) {
				c.Check(ctx, cl)
				next[cl.Name] = c.now().Add(wait.Jitter(c.opts.Period, 0.1))
			}
		}
	}, c.opts.MinGap)
}

// served are the Services whose load balancer cl serves, by key.
func (c *Controller) served(cl inventory.Cloud) map[types.NamespacedName]*v1.Service {
	all, err := c.services.List(labels.Everything())
	if err != nil {
		return nil
	}
	out := map[types.NamespacedName]*v1.Service{}
	for _, s := range all {
		if !wantsLoadBalancer(s) {
			continue
		}
		if name, err := c.source.ServingCloud(s); err != nil || name != cl.Name {
			continue
		}
		out[types.NamespacedName{Namespace: s.Namespace, Name: s.Name}] = s
	}
	return out
}

// wantsLoadBalancer: a LoadBalancer Service of the service controller's
// (no loadBalancerClass), not being deleted.
func wantsLoadBalancer(s *v1.Service) bool {
	return s.Spec.Type == v1.ServiceTypeLoadBalancer && s.Spec.LoadBalancerClass == nil && s.DeletionTimestamp == nil
}

// syncedSinceListing: a Service of cl synced after cl's last listing
// began, so its baseline is still to be taken.
func (c *Controller) syncedSinceListing(cl inventory.Cloud) bool {
	st := c.state(cl.Name)
	c.mu.Lock()
	last := st.lastList
	c.mu.Unlock()
	if c.now().Sub(last) < c.opts.MinGap {
		return false
	}
	for key := range c.served(cl) {
		if s, ok := cl.LastSync(key); ok && s.At.After(last) {
			return true
		}
	}
	return false
}

// state is the cloud's state, made on first use.
func (c *Controller) state(cloud string) *cloudState {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.clouds[cloud]
	if st == nil {
		st = &cloudState{baselines: map[types.NamespacedName]*baseline{}}
		c.clouds[cloud] = st
	}
	return st
}

// Check lists cl once, takes the baselines of Services synced since, and
// repairs the Services that drifted from theirs.
func (c *Controller) Check(ctx context.Context, cl inventory.Cloud) {
	logger := klog.FromContext(ctx).WithValues("cloud", cl.Name)
	start := c.now()
	owned, err := cl.Owned(ctx)
	checks.WithLabelValues(cl.Name, result(err)).Inc()
	st := c.state(cl.Name)
	c.mu.Lock()
	st.lastList = start
	c.mu.Unlock()
	if err != nil {
		// Nothing is known: nothing is repaired (and nothing forgotten).
		logger.Error(err, "Could not list the cloud's load balancers; checking again at the next period")
		return
	}
	current := map[types.NamespacedName]map[string]string{}
	for _, o := range owned {
		if o.Service == (types.NamespacedName{}) {
			continue
		}
		if current[o.Service] == nil {
			current[o.Service] = map[string]string{}
		}
		current[o.Service][o.Kind+" "+o.ID] = o.Detail
	}

	type drifted struct {
		svc  *v1.Service
		sync inventory.Sync
		what string
	}
	var found []drifted
	served := c.served(cl)
	c.mu.Lock()
	for key := range st.baselines {
		if _, ok := served[key]; !ok {
			delete(st.baselines, key)
		}
	}
	for key, svc := range served {
		sync, ok := cl.LastSync(key)
		if !ok {
			// Not synced by this process (yet, or it failed): the service
			// controller owns it until it is.
			delete(st.baselines, key)
			continue
		}
		if sync.At.After(start) {
			continue // synced while the cloud was being listed
		}
		cur := current[key]
		b := st.baselines[key]
		switch {
		case b != nil && len(b.parts) > 0 && len(cur) == 0:
			// Whatever synced since, a sync that succeeded left a load
			// balancer: none at all is the whole of it deleted, even
			// right after a sync.
			found = append(found, drifted{svc, sync, missing(b.parts, cur)})
		case b == nil, sync.EnsuredAt.After(b.ensuredAt):
			st.baselines[key] = &baseline{syncAt: sync.At, ensuredAt: sync.EnsuredAt, parts: cur}
		case sync.At.After(b.syncAt):
			// Only node-set updates since: they change details, never
			// remove a part.
			if what := missing(b.parts, cur); what != "" {
				found = append(found, drifted{svc, sync, what})
				continue
			}
			st.baselines[key] = &baseline{syncAt: sync.At, ensuredAt: b.ensuredAt, parts: cur}
		default:
			if what := diff(b.parts, cur); what != "" {
				found = append(found, drifted{svc, sync, what})
			}
		}
	}
	watched.WithLabelValues(cl.Name).Set(float64(len(st.baselines)))
	// Most of a cloud's Services drifted at once looks more like a
	// listing gone wrong than like people at consoles: a second listing
	// must agree.
	if len(found) > 5 && len(found)*2 > len(st.baselines) && !st.suspect {
		st.suspect = true
		c.mu.Unlock()
		logger.Info("Most load balancers differ from their last sync; repairing only if the next listing agrees", "drifted", len(found), "watched", len(served))
		return
	}
	st.suspect = false
	c.mu.Unlock()

	sort.Slice(found, func(i, j int) bool { return found[i].svc.Name < found[j].svc.Name })
	for _, d := range found {
		c.repair(ctx, cl, d.svc, d.sync, d.what)
	}
}

// repair re-ensures svc in its turn, unless it changed since it was
// looked at (a sync of the service controller's, a spec change, gone).
func (c *Controller) repair(ctx context.Context, cl inventory.Cloud, svc *v1.Service, seen inventory.Sync, what string) {
	key := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	logger := klog.FromContext(ctx).WithValues("cloud", cl.Name, "service", key)
	still := func() bool {
		cur, err := c.services.Services(svc.Namespace).Get(svc.Name)
		if err != nil || cur.UID != svc.UID || cur.ResourceVersion != svc.ResourceVersion || !wantsLoadBalancer(cur) {
			return false
		}
		if name, err := c.source.ServingCloud(cur); err != nil || name != cl.Name {
			return false
		}
		s, ok := cl.LastSync(key)
		return ok && s.At.Equal(seen.At)
	}
	logger.Info("The load balancer differs from what its last sync made; repairing", "drift", what)
	cl.Forget(key)
	st, ran, err := cl.Repair(ctx, c.opts.ClusterName, svc, still)
	switch {
	case !ran:
		repairs.WithLabelValues(cl.Name, "superseded").Inc()
		logger.V(2).Info("The Service changed meanwhile; its own sync follows")
		return
	case err != nil:
		repairs.WithLabelValues(cl.Name, "error").Inc()
		logger.Error(err, "Repair failed; trying again at the next period")
		c.recorder.Eventf(svc, v1.EventTypeWarning, EventRepairFailed, "Load balancer differs from its last sync (%s); repairing it failed: %v", what, err)
		return
	}
	repairs.WithLabelValues(cl.Name, "repaired").Inc()
	c.recorder.Eventf(svc, v1.EventTypeNormal, EventRepaired, "Repaired the load balancer, changed outside the manager: %s", what)
	if st != nil && addresses(svc.Status.LoadBalancer) != addresses(*st) {
		updated := svc.DeepCopy()
		updated.Status.LoadBalancer = *st
		if _, err := servicehelper.PatchService(c.kube.CoreV1(), svc, updated); err != nil && !apierrors.IsNotFound(err) {
			logger.Error(err, "Could not write the repaired load balancer's address")
			return
		}
		logger.Info("The repaired load balancer has a new address", "status", st.Ingress)
	}
}

// addresses are a status's IPs and hostnames: what clients use. The
// apiserver fills in fields (ipMode) a backend's status may leave empty,
// so a whole-status comparison would call every repair a new address.
func addresses(st v1.LoadBalancerStatus) string {
	var out []string
	for _, in := range st.Ingress {
		out = append(out, in.IP+"/"+in.Hostname)
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// diff says how cur differs from the baseline's parts; "" when it does
// not.
func diff(base, cur map[string]string) string {
	var out []string
	if m := missing(base, cur); m != "" {
		out = append(out, m)
	}
	for _, k := range slices.Sorted(maps.Keys(cur)) {
		b, ok := base[k]
		switch {
		case !ok:
			out = append(out, k+" added")
		case b != cur[k]:
			out = append(out, fmt.Sprintf("%s changed from %q to %q", k, b, cur[k]))
		}
	}
	return strings.Join(out, "; ")
}

// missing says which of the baseline's parts cur lacks; "" when none.
func missing(base, cur map[string]string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(base)) {
		if _, ok := cur[k]; !ok {
			out = append(out, k+" missing")
		}
	}
	if len(base) > 0 && len(cur) == 0 {
		return "the whole load balancer is gone (" + strings.Join(out, ", ") + ")"
	}
	return strings.Join(out, "; ")
}

func result(err error) string {
	if err != nil {
		return "error"
	}
	return "ok"
}
