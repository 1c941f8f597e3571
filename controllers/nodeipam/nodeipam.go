// Package nodeipam is the manager's node-ipam controller: it gives each
// Node its pod CIDRs from the cloud, as the upstream CCMs' CloudAllocator
// does, and serves under the same flags (--allocate-node-cidrs=true
// --cidr-allocator-type=CloudAllocator, --cluster-cidr,
// --node-cidr-mask-size-ipv4/-ipv6, --service-cluster-ip-range) so an
// existing manifest keeps working.
//
// What each cloud answers comes from its backend (providers/podcidrs), out
// of the batched instance snapshot it keeps anyway, so N Nodes joining
// cost the listings the node controller makes, not a call each:
//   - GCE: nic0's first alias IP range and its IPv6 range (the /112 of
//     its /96), as upstream cloud-provider-gcp's cloud_cidr_allocator.go
//     (updateCIDRAllocation) reads them; the cloud routes them, so the
//     Node's NetworkUnavailable condition is set False on the way.
//   - Azure: a range allocated here from --cluster-cidr, sized by the
//     node pool's kubernetesNodeCIDRMaskIPV4/IPV6 tag, as upstream
//     cloud-provider-azure's allocator; routes still come from the route
//     controller.
//   - AWS: the IPv6 /80 prefix (and an IPv4 /28 prefix) delegated to the
//     instance's primary interface, which no upstream CCM serves (kOps and
//     Gardener each run a controller for it).
//
// Safety, as users expect of an allocator:
//   - A Node's pod CIDRs are never changed once set (the API makes them
//     immutable anyway): a cloud answer that differs is a Warning Event.
//   - Every pod CIDR already on a Node is marked used before the first
//     allocation, so a restarted manager never hands one out twice (as
//     upstream Azure rebuilds its cidrsets from the Node list).
//   - A Node that gets pod CIDRs from someone else while this controller
//     runs (kube-controller-manager's range allocator left on: two
//     allocators hand out duplicates) gets a Warning Event naming the
//     writer.
//   - A Node of no configured cloud, or of a cloud without an allocator,
//     is left alone.
package nodeipam

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	nodeutil "k8s.io/component-helpers/node/util"
	"k8s.io/klog/v2"

	"github.com/multicloud-ccm/multicloud-ccm/providers/podcidrs"
)

const (
	// ControllerName is the name --controllers knows it by, upstream's
	// (k8s.io/kubernetes cmd/kube-controller-manager/names:
	// NodeIpamController; cloud-provider-gcp cmd/cloud-controller-manager/
	// main.go:114, with the alias "nodeipam" at :158).
	ControllerName = "node-ipam-controller"
	// Alias is upstream GCP's short name for it.
	Alias = "nodeipam"
	// ClientName is its Kubernetes client's identity, upstream GCP's
	// (cmd/cloud-controller-manager/nodeipamcontroller.go:80).
	ClientName = "node-controller"

	// CloudAllocator is the --cidr-allocator-type that starts it.
	CloudAllocator = "CloudAllocator"

	// ReasonCIDRNotAvailable: the Node's cloud holds no range for its
	// pod CIDRs (no alias IP range, no delegated prefix), or none of a
	// family the cluster needs, or --cluster-cidr has no free range of
	// the pool's size; retried with backoff. Upstream's reason
	// (cloud_cidr_allocator.go), recorded there as Normal.
	// Type: Warning
	// Object: Node
	ReasonCIDRNotAvailable = "CIDRNotAvailable"
	// ReasonCIDRAssignmentFailed: writing the Node's pod CIDRs failed;
	// retried. Upstream's reason.
	// Type: Warning
	// Object: Node
	ReasonCIDRAssignmentFailed = "CIDRAssignmentFailed"
	// ReasonPodCIDRMismatch: the Node's pod CIDRs differ from the ranges
	// its cloud holds for the instance. A Node's pod CIDRs cannot change,
	// so they are left as they are; recorded once per difference.
	// Type: Warning
	// Object: Node
	ReasonPodCIDRMismatch = "PodCIDRMismatch"
	// ReasonPodCIDRSetElsewhere: another writer (named from the Node's
	// managed fields) gave the Node its first pod CIDRs while the cloud
	// allocator runs: two allocators hand out duplicates. Set
	// --allocate-node-cidrs=false on kube-controller-manager.
	// Type: Warning
	// Object: Node
	ReasonPodCIDRSetElsewhere = "PodCIDRSetElsewhere"
	// ReasonPodCIDROverlap: the Node's pod CIDR overlaps another Node's
	// (found when the allocator marks existing pod CIDRs used).
	// Type: Warning
	// Object: Node
	ReasonPodCIDROverlap = "PodCIDROverlap"

	// defaultWorkers is how many Nodes are served at once. Each waits
	// mostly on the backend's shared snapshot, so a burst of joining Nodes
	// shares its listings.
	defaultWorkers = 10
	// defaultMaskIPv4 and defaultMaskIPv6 are upstream's defaults for
	// --node-cidr-mask-size-ipv4/-ipv6 (cloud-provider-gcp
	// pkg/controller/nodeipam/starter.go setNodeCIDRMaskSizes; Azure's
	// consts.DefaultNodeMaskCIDRIPv4/IPv6).
	defaultMaskIPv4 = 24
	defaultMaskIPv6 = 64
)

// Options are the controller's settings, from the flags.
type Options struct {
	// ClusterCIDRs is --cluster-cidr: at most one per family.
	ClusterCIDRs []netip.Prefix
	// ServiceCIDRs is --service-cluster-ip-range: never handed to Nodes,
	// and, when set, its order is the cluster's family order (upstream
	// GCP derives its stack type from it).
	ServiceCIDRs []netip.Prefix
	// MaskIPv4 and MaskIPv6 are the sizes of allocated ranges when the
	// cloud names none (0: /24 and /64).
	MaskIPv4, MaskIPv6 int
	// Workers is how many Nodes are served at once (0: 10).
	Workers int
}

// families is the cluster's IP families in pod-CIDR order: the service
// ranges', else the cluster CIDRs', else IPv4 alone (upstream GCP's
// default stack).
func (o Options) families() []family {
	from := o.ServiceCIDRs
	if len(from) == 0 {
		from = o.ClusterCIDRs
	}
	var out []family
	for _, p := range from {
		f := familyOf(p.Addr())
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		out = []family{ipv4}
	}
	return out
}

// Validate checks the flags as upstream's starter does, with the flag
// names in the errors.
func (o Options) Validate() error {
	seen := map[family]bool{}
	for _, p := range o.ClusterCIDRs {
		f := familyOf(p.Addr())
		if seen[f] {
			return fmt.Errorf("--cluster-cidr: %s is the second %s range; give at most one IPv4 and one IPv6 range", p, f)
		}
		seen[f] = true
	}
	for _, m := range []struct {
		flag string
		v    int
		max  int
	}{{"--node-cidr-mask-size-ipv4", o.MaskIPv4, 32}, {"--node-cidr-mask-size-ipv6", o.MaskIPv6, 128}} {
		if m.v < 0 || m.v > m.max {
			return fmt.Errorf("%s: %d is not a mask size (0-%d)", m.flag, m.v, m.max)
		}
	}
	return nil
}

type family string

const (
	ipv4 family = "IPv4"
	ipv6 family = "IPv6"
)

func familyOf(a netip.Addr) family {
	if a.Is4() || a.Is4In6() {
		return ipv4
	}
	return ipv6
}

// Controller gives Nodes their pod CIDRs.
type Controller struct {
	opts     Options
	alloc    podcidrs.Allocator
	kube     kubernetes.Interface
	nodes    corelisters.NodeLister
	synced   cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	recorder record.EventRecorder
	now      func() time.Time

	mu sync.Mutex
	// sets are the allocation ranges, one per family of --cluster-cidr.
	sets map[family]*cidrSet
	// held is what the sets hold for each Node, to release on deletion.
	held map[string][]netip.Prefix
	// writing is what this controller is writing or wrote to each Node,
	// so a Node's first pod CIDRs from anyone else can be told apart.
	writing map[string][]string
	// checked is the pod CIDRs a Node had when last found in order, so a
	// Node is not asked about again until they change.
	checked map[string]string
	// mismatched is the cloud answer last warned about per Node.
	mismatched map[string]string
}

// New builds the controller; it watches Nodes from now on.
func New(opts Options, alloc podcidrs.Allocator, kube kubernetes.Interface, nodes coreinformers.NodeInformer, recorder record.EventRecorder) (*Controller, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.MaskIPv4 == 0 {
		opts.MaskIPv4 = defaultMaskIPv4
	}
	if opts.MaskIPv6 == 0 {
		opts.MaskIPv6 = defaultMaskIPv6
	}
	if opts.Workers <= 0 {
		opts.Workers = defaultWorkers
	}
	c := &Controller{
		opts: opts, alloc: alloc, kube: kube, recorder: recorder, now: time.Now,
		nodes: nodes.Lister(), synced: nodes.Informer().HasSynced,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: ControllerName}),
		sets: map[family]*cidrSet{}, held: map[string][]netip.Prefix{}, writing: map[string][]string{},
		checked: map[string]string{}, mismatched: map[string]string{},
	}
	for _, p := range opts.ClusterCIDRs {
		s := newCIDRSet(p)
		for _, svc := range opts.ServiceCIDRs {
			// Upstream's filterOutServiceRange: Service addresses inside
			// the cluster CIDR are never a Node's.
			if _, err := s.occupy(svc); err != nil {
				return nil, fmt.Errorf("--service-cluster-ip-range %s: %w", svc, err)
			}
		}
		c.sets[familyOf(p.Addr())] = s
	}
	_, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if n, ok := obj.(*v1.Node); ok {
				c.queue.Add(n.Name)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			old, ok1 := oldObj.(*v1.Node)
			n, ok2 := newObj.(*v1.Node)
			if !ok1 || !ok2 {
				return
			}
			if old.Spec.PodCIDR == "" && n.Spec.PodCIDR != "" {
				c.setElsewhere(n)
			}
			if c.needsWork(n) {
				c.queue.Add(n.Name)
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if n, ok := obj.(*v1.Node); ok {
				c.forget(n.Name)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("watch nodes: %w", err)
	}
	return c, nil
}

// needsWork says an updated Node may have something to do: no pod CIDRs
// yet, or pod CIDRs not checked since they changed. Unlike upstream GCE,
// a NetworkUnavailable condition someone else sets True again (a CNI)
// does not bring a checked Node back: the two would fight.
func (c *Controller) needsWork(n *v1.Node) bool {
	if n.Spec.PodCIDR == "" {
		return true
	}
	c.mu.Lock()
	checked, ok := c.checked[n.Name]
	c.mu.Unlock()
	return !ok || checked != strings.Join(n.Spec.PodCIDRs, ",")
}

// Run serves Nodes until ctx ends. Every pod CIDR already on a Node is
// marked used first.
func (c *Controller) Run(ctx context.Context) {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	logger := klog.FromContext(ctx).WithName(ControllerName)
	ctx = klog.NewContext(ctx, logger)
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced) {
		return
	}
	if err := c.occupyExisting(ctx); err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Listing Nodes to mark their pod CIDRs used")
		return
	}
	logger.Info("Starting the node-ipam controller (cloud allocator)", "clusterCIDRs", c.opts.ClusterCIDRs,
		"families", c.opts.families(), "maskIPv4", c.opts.MaskIPv4, "maskIPv6", c.opts.MaskIPv6, "workers", c.opts.Workers)
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	var wg sync.WaitGroup
	for range c.opts.Workers {
		wg.Go(func() {
			for c.processNext(ctx) {
			}
		})
	}
	wg.Wait()
}

// occupyExisting marks every Node's pod CIDRs used, as upstream Azure
// rebuilds its sets from the Node list before serving (NewCloudCIDRAllocator).
// An overlap between two Nodes is reported, not fatal: upstream stops
// the manager, which serves no one.
func (c *Controller) occupyExisting(ctx context.Context) error {
	nodes, err := c.nodes.List(everything)
	if err != nil {
		return err
	}
	slices.SortFunc(nodes, func(a, b *v1.Node) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range nodes {
		c.occupyLocked(ctx, n)
	}
	return nil
}

// occupyLocked marks n's pod CIDRs used in the sets of their families.
func (c *Controller) occupyLocked(ctx context.Context, n *v1.Node) {
	if _, done := c.held[n.Name]; done {
		return
	}
	var held []netip.Prefix
	for _, s := range n.Spec.PodCIDRs {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			continue
		}
		set := c.sets[familyOf(p.Addr())]
		if set == nil {
			continue
		}
		ok, err := set.occupy(p)
		if err != nil {
			klog.FromContext(ctx).Info("A Node's pod CIDR overlaps another's", "node", klog.KObj(n), "podCIDR", p, "err", err)
			c.recorder.Eventf(nodeRef(n), v1.EventTypeWarning, ReasonPodCIDROverlap,
				"Pod CIDR %s: %v. Two Nodes share pod addresses; was another allocator running?", p, err)
			continue
		}
		if ok {
			held = append(held, p.Masked())
		}
	}
	c.held[n.Name] = held
}

// forget releases what a deleted Node held.
func (c *Controller) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.releaseLocked(name)
	delete(c.writing, name)
	delete(c.checked, name)
	delete(c.mismatched, name)
}

func (c *Controller) releaseLocked(name string) {
	for _, p := range c.held[name] {
		if s := c.sets[familyOf(p.Addr())]; s != nil {
			s.release(p)
		}
	}
	delete(c.held, name)
}

func (c *Controller) processNext(ctx context.Context) bool {
	name, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(name)
	err := c.sync(ctx, name)
	if err == nil {
		c.queue.Forget(name)
		return true
	}
	klog.FromContext(ctx).V(2).Info("Retrying a Node's pod CIDRs", "node", name, "err", err)
	c.queue.AddRateLimited(name)
	return true
}

// sync serves one Node.
func (c *Controller) sync(ctx context.Context, name string) error {
	node, err := c.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		c.forget(name)
		return nil
	}
	if err != nil {
		return err
	}
	if node.Spec.ProviderID == "" {
		// Not initialized yet: the cloud-node controller's update brings
		// it back (upstream refuses a Node without providerID too).
		return nil
	}
	answer, err := c.alloc.PodCIDRs(ctx, node)
	switch {
	case errors.Is(err, podcidrs.ErrNotServed):
		c.markChecked(node)
		return nil
	case errors.Is(err, podcidrs.ErrNoRanges):
		c.recorder.Eventf(nodeRef(node), v1.EventTypeWarning, ReasonCIDRNotAvailable, "Node %s has no range for pod CIDRs in its cloud: %v", node.Name, err)
		return err
	case err != nil:
		return err
	}
	if len(node.Spec.PodCIDRs) > 0 || node.Spec.PodCIDR != "" {
		return c.checkExisting(ctx, node, answer)
	}
	if answer.IPv6.CIDR == "" && !answer.IPv6.Allocate && slices.Contains(c.opts.families(), ipv6) {
		// The cloud may give the instance the IPv6 range it lacks (AWS's
		// opt-in prefix assignment): asked only here, for a Node that
		// needs one, never for one that has pod CIDRs or a cluster
		// without IPv6.
		if ra, ok := c.alloc.(podcidrs.RangeAssigner); ok {
			r, err := ra.AssignIPv6Range(ctx, node)
			if err != nil {
				return err
			}
			answer.IPv6.CIDR = r
		}
	}
	return c.assign(ctx, node, answer)
}

func (c *Controller) markChecked(node *v1.Node) {
	c.mu.Lock()
	c.checked[node.Name] = strings.Join(node.Spec.PodCIDRs, ",")
	c.mu.Unlock()
}

// checkExisting keeps a Node's pod CIDRs as they are: their allocated
// ranges are marked used, a cloud answer that differs is warned about
// once, and a cloud-routed Node whose CIDRs match gets its
// NetworkUnavailable condition set False.
func (c *Controller) checkExisting(ctx context.Context, node *v1.Node, answer podcidrs.Answer) error {
	c.mu.Lock()
	c.occupyLocked(ctx, node)
	c.mu.Unlock()
	var differ []string
	for _, s := range node.Spec.PodCIDRs {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			continue
		}
		want := answer.IPv4
		if familyOf(p.Addr()) == ipv6 {
			want = answer.IPv6
		}
		if want.CIDR != "" && !samePrefix(want.CIDR, s) {
			differ = append(differ, fmt.Sprintf("%s (the cloud holds %s)", s, want.CIDR))
		}
	}
	if len(differ) > 0 {
		key := strings.Join(differ, ", ")
		c.mu.Lock()
		warned := c.mismatched[node.Name] == key
		c.mismatched[node.Name] = key
		c.mu.Unlock()
		if !warned {
			klog.FromContext(ctx).Info("A Node's pod CIDRs differ from its cloud's ranges; left as they are", "node", klog.KObj(node), "differ", key)
			c.recorder.Eventf(nodeRef(node), v1.EventTypeWarning, ReasonPodCIDRMismatch,
				"Pod CIDRs %s differ from the ranges the cloud holds for the instance; a Node's pod CIDRs cannot change, so they are left as they are (recreate the Node to take the cloud's)", key)
		}
	} else if answer.CloudRouted && !answer.IPv4.Allocate && !answer.IPv6.Allocate {
		if err := c.setNetworkAvailable(ctx, node); err != nil {
			return err
		}
	}
	c.markChecked(node)
	return nil
}

func samePrefix(a, b string) bool {
	pa, err1 := netip.ParsePrefix(a)
	pb, err2 := netip.ParsePrefix(b)
	return err1 == nil && err2 == nil && pa.Masked() == pb.Masked()
}

// assign writes a Node's first pod CIDRs: per family of the cluster, the
// cloud's range, or one allocated from --cluster-cidr.
func (c *Controller) assign(ctx context.Context, node *v1.Node, answer podcidrs.Answer) error {
	var cidrs []string
	var reserved []netip.Prefix
	var missing []string
	c.mu.Lock()
	release := func() {
		for _, p := range reserved {
			c.sets[familyOf(p.Addr())].release(p)
		}
	}
	for _, f := range c.opts.families() {
		fa, mask := answer.IPv4, c.opts.MaskIPv4
		if f == ipv6 {
			fa, mask = answer.IPv6, c.opts.MaskIPv6
		}
		switch {
		case fa.CIDR != "":
			p, err := netip.ParsePrefix(fa.CIDR)
			if err != nil || familyOf(p.Addr()) != f {
				missing = append(missing, fmt.Sprintf("%s (the cloud's %q is not an %s CIDR)", f, fa.CIDR, f))
				continue
			}
			cidrs = append(cidrs, p.Masked().String())
		case fa.Allocate:
			set := c.sets[f]
			if set == nil {
				missing = append(missing, fmt.Sprintf("%s (no %s range in --cluster-cidr to allocate from)", f, f))
				continue
			}
			if fa.Mask != 0 {
				mask = fa.Mask
			}
			p, err := set.allocate(mask)
			if err != nil {
				missing = append(missing, fmt.Sprintf("%s (%v)", f, err))
				continue
			}
			reserved = append(reserved, p)
			cidrs = append(cidrs, p.String())
		default:
			missing = append(missing, fmt.Sprintf("%s (the instance has no %s range)", f, f))
		}
	}
	if len(missing) > 0 {
		release()
		c.mu.Unlock()
		c.recorder.Eventf(nodeRef(node), v1.EventTypeWarning, ReasonCIDRNotAvailable,
			"Node %s has no pod CIDR for the cluster's families %v: %s", node.Name, c.opts.families(), strings.Join(missing, "; "))
		return fmt.Errorf("node %s: no pod CIDR for %s", node.Name, strings.Join(missing, "; "))
	}
	c.writing[node.Name] = cidrs
	c.held[node.Name] = append(c.held[node.Name], reserved...)
	c.mu.Unlock()

	if err := nodeutil.PatchNodeCIDRs(ctx, c.kube, types.NodeName(node.Name), cidrs); err != nil {
		c.mu.Lock()
		release()
		c.held[node.Name] = slices.DeleteFunc(c.held[node.Name], func(p netip.Prefix) bool { return slices.Contains(reserved, p) })
		delete(c.writing, node.Name)
		c.mu.Unlock()
		c.recorder.Eventf(nodeRef(node), v1.EventTypeWarning, ReasonCIDRAssignmentFailed, "Writing pod CIDRs %v: %v", cidrs, err)
		return err
	}
	klog.FromContext(ctx).V(2).Info("Set the Node's pod CIDRs", "node", klog.KObj(node), "podCIDRs", cidrs)
	// A range allocated here still needs the route controller's route,
	// which sets the condition itself.
	if answer.CloudRouted && len(reserved) == 0 {
		if err := c.setNetworkAvailable(ctx, node); err != nil {
			return err
		}
	}
	c.mu.Lock()
	c.checked[node.Name] = strings.Join(cidrs, ",")
	c.mu.Unlock()
	return nil
}

// setNetworkAvailable sets NetworkUnavailable=False as upstream GCE's
// allocator does for alias ranges, which need no route
// (cloud_cidr_allocator.go setNetworkCondition: reason RouteCreated).
func (c *Controller) setNetworkAvailable(ctx context.Context, node *v1.Node) error {
	for _, cond := range node.Status.Conditions {
		if cond.Type == v1.NodeNetworkUnavailable && cond.Status == v1.ConditionFalse {
			return nil
		}
	}
	err := nodeutil.SetNodeCondition(c.kube, types.NodeName(node.Name), v1.NodeCondition{
		Type: v1.NodeNetworkUnavailable, Status: v1.ConditionFalse,
		Reason: "RouteCreated", Message: "NodeController create implicit route",
		LastTransitionTime: metaNow(c.now()),
	})
	if err != nil {
		return fmt.Errorf("set NetworkUnavailable=False on node %s: %w", node.Name, err)
	}
	return nil
}

// setElsewhere warns when a Node's first pod CIDRs are not the ones this
// controller wrote: another allocator is handing them out.
func (c *Controller) setElsewhere(n *v1.Node) {
	c.mu.Lock()
	ours, ok := c.writing[n.Name]
	c.mu.Unlock()
	if ok && slices.Equal(ours, n.Spec.PodCIDRs) {
		return
	}
	writer := podCIDRWriter(n)
	klog.Background().Info("A Node got pod CIDRs from another writer while the node-ipam controller runs", "node", klog.KObj(n), "podCIDRs", n.Spec.PodCIDRs, "writer", writer)
	c.recorder.Eventf(nodeRef(n), v1.EventTypeWarning, ReasonPodCIDRSetElsewhere,
		"Pod CIDRs %v were set by %s, not by this manager's node-ipam controller (--allocate-node-cidrs=true --cidr-allocator-type=CloudAllocator). Two allocators hand out duplicate ranges: set --allocate-node-cidrs=false on kube-controller-manager.",
		n.Spec.PodCIDRs, writer)
}

// podCIDRWriter names the field manager that owns spec.podCIDR.
func podCIDRWriter(n *v1.Node) string {
	for _, mf := range n.ManagedFields {
		if mf.FieldsV1 != nil && strings.Contains(string(mf.FieldsV1.Raw), `"f:podCIDR"`) {
			return fmt.Sprintf("%q", mf.Manager)
		}
	}
	return "another writer"
}

// nodeRef is how Node Events name their Node: the UID is the Node's
// name, as the kubelet and upstream's node controllers record them, so
// `kubectl describe node` shows them.
func nodeRef(n *v1.Node) *v1.ObjectReference {
	return &v1.ObjectReference{Kind: "Node", Name: n.Name, UID: types.UID(n.Name)}
}

var everything = labels.Everything()

func metaNow(t time.Time) metav1.Time { return metav1.NewTime(t) }
