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
// the node set removes no part but those the cloud marks FollowsNodes
// (a rule letting the load balancer reach a node group no node uses any
// more), so any other part missing after one is still drift.
//
// A part can change Service without anyone changing it: a load balancer
// a second Service starts sharing is listed under none, and under its
// one Service again when the other stops. So a part missing from a
// Service that the same listing has under another Service or none moved,
// and is not missing; a part new to a Service that the previous listing
// had under another Service or none moved too, and is not added. A part
// gone from the listing altogether is still missing.
//
// A part the cloud is still changing (Pending: a sync may return once
// its change is accepted, not carried out) has no settled Detail: a
// baseline takes it as unknown and the next listing's Detail for it, and
// a Pending part with no sync since is compared once it settles.
//
// A listing that fails repairs nothing, and a listing by which most
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

// Event reasons on the Service. hack/refdocs lists them, with the
// Object: line, in docs/reference/events.md.
const (
	// EventRepaired: the Service's load balancer had been changed outside
	// the manager since its last sync, and was put back as that sync made
	// it. The message names what had changed.
	// Object: Service
	EventRepaired = "LoadBalancerRepaired"
	// EventRepairFailed: the Service's load balancer differs from its last
	// sync and putting it back failed; the next period tries again.
	// Object: Service
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
	// listed is the last listing that succeeded, by "kind id": the
	// Services each part was listed under (zero for none), which says
	// where a part new to a Service came from.
	listed map[string][]types.NamespacedName
	// suspect is set when the last listing had most Services drifted at
	// once; such a verdict needs a second listing to agree.
	suspect bool
}

// baseline is a Service's parts as a listing after its last sync showed
// them.
type baseline struct {
	syncAt, ensuredAt time.Time
	parts             map[string]part // by "kind id"
}

// part is what the check keeps of a listed part.
type part struct {
	detail string
	// followsNodes: a node-set update may remove it.
	followsNodes bool
	// pending: the cloud was still changing it; detail is not settled.
	pending bool
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
	current := map[types.NamespacedName]map[string]part{}
	listed := map[string][]types.NamespacedName{}
	for _, o := range owned {
		k := o.Kind + " " + o.ID
		listed[k] = append(listed[k], o.Service)
		if o.Service == (types.NamespacedName{}) {
			continue
		}
		if current[o.Service] == nil {
			current[o.Service] = map[string]part{}
		}
		current[o.Service][k] = part{detail: o.Detail, followsNodes: o.FollowsNodes, pending: o.Pending}
	}

	type drifted struct {
		svc  *v1.Service
		sync inventory.Sync
		what string
	}
	var found []drifted
	served := c.served(cl)
	c.mu.Lock()
	prevListed := st.listed
	st.listed = listed
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
		// Moved away: listed now under another Service or none; moved
		// in: listed so by the previous listing.
		movedAway := func(k string, _ part) bool { return elsewhere(listed[k], key) }
		movedIn := func(k string) bool { return elsewhere(prevListed[k], key) }
		switch {
		case b != nil && len(b.parts) > 0 && len(cur) == 0 && missing(b.parts, cur, movedAway) != "":
			// Whatever synced since, a sync that succeeded left a load
			// balancer: none at all is the whole of it deleted, even
			// right after a sync.
			found = append(found, drifted{svc, sync, missing(b.parts, cur, movedAway)})
		case b == nil, sync.EnsuredAt.After(b.ensuredAt):
			st.baselines[key] = &baseline{syncAt: sync.At, ensuredAt: sync.EnsuredAt, parts: cur}
		case sync.At.After(b.syncAt):
			// Only node-set updates since: they change details, and
			// remove no part but those that follow the nodes.
			what := missing(b.parts, cur, func(k string, p part) bool { return p.followsNodes || movedAway(k, p) })
			if what != "" {
				found = append(found, drifted{svc, sync, what})
				continue
			}
			st.baselines[key] = &baseline{syncAt: sync.At, ensuredAt: b.ensuredAt, parts: cur}
		default:
			// No sync since: any difference is drift, but for parts that
			// only changed Service. The baseline follows those moves, so
			// a part that came back is not taken for an addition once
			// the listing that showed it elsewhere is past.
			if what := diff(b.parts, cur, movedAway, movedIn); what != "" {
				found = append(found, drifted{svc, sync, what})
				continue
			}
			// A settled Detail stays the baseline's while the part is
			// pending: a change someone made is compared once done.
			for k, p := range cur {
				if was, ok := b.parts[k]; ok && p.pending && !was.pending {
					cur[k] = was
				}
			}
			b.parts = cur
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

// elsewhere says whether in, the Services a listing had a part under
// (zero for none), holds another than svc: the part is another
// Service's, or shared.
func elsewhere(in []types.NamespacedName, svc types.NamespacedName) bool {
	return slices.ContainsFunc(in, func(s types.NamespacedName) bool { return s != svc })
}

// diff says how cur differs from the baseline's parts, but for the parts
// cur lacks that gone excuses and the parts new to it that came excuses;
// "" when it does not.
func diff(base, cur map[string]part, gone func(string, part) bool, came func(string) bool) string {
	var out []string
	if m := missing(base, cur, gone); m != "" {
		out = append(out, m)
	}
	for _, k := range slices.Sorted(maps.Keys(cur)) {
		b, ok := base[k]
		switch {
		case !ok && came(k):
		case !ok:
			out = append(out, k+" added")
		case b.pending || cur[k].pending:
			// Not settled on one side: compared at a later listing.
		case b.detail != cur[k].detail:
			out = append(out, fmt.Sprintf("%s changed from %q to %q", k, b.detail, cur[k].detail))
		}
	}
	return strings.Join(out, "; ")
}

// missing says which of the baseline's parts cur lacks, but for those
// gone excuses; "" when none.
func missing(base, cur map[string]part, gone func(string, part) bool) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(base)) {
		if _, ok := cur[k]; !ok && !gone(k, base[k]) {
			out = append(out, k+" missing")
		}
	}
	if len(out) > 0 && len(cur) == 0 {
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
