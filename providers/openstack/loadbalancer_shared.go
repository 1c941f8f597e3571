package openstack

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	cloudprovider "k8s.io/cloud-provider"
	servicehelpers "k8s.io/cloud-provider/service/helpers"
	"k8s.io/klog/v2"
)

// Sharing a load balancer between Services, as the upstream CCM does
// (kubernetes/cloud-provider-openstack pkg/openstack/loadbalancer.go at
// c453fb7c, "upstream" below; introduced by its PR #1648). A Service uses
// the load balancer its load-balancer-id annotation names, else its own,
// found by name (then by the legacy name). The load balancer carries a
// tag per Service using it, and each listener the tag of the Service it
// serves; a listener without tags on a Service's own load balancer is that
// Service's too (made before tags, by upstream or by this backend). The
// tags are the record of who uses what: a Service's deletion removes its
// listeners and its tag, and the load balancer goes with its last Service
// only if a CCM made it.

// defaultMaxSharedLB is upstream's max-shared-lb default
// (pkg/openstack/openstack.go:228).
const defaultMaxSharedLB = 2

// usageTag is the tag saying a Service uses a load balancer (on the load
// balancer) or serves a listener (on the listener): upstream's, the
// Service's load balancer name (loadbalancer.go:237-239, :1179-1181,
// :1830-1838). MUST NOT change.
func usageTag(clusterID string, svc *v1.Service) string { return lbName(clusterID, svc) }

// servicePrefix starts every usage tag and every name of a load balancer
// a CCM made for a Service (upstream loadbalancer.go:100). MUST NOT
// change.
const servicePrefix = "kube_service_"

// legacyName is the name the upstream CCM gave load balancers before
// March 2019 ("a" + the UID without dashes, cut to 32 characters); it
// still looks them up by it and keeps the name (loadbalancer.go:156-175,
// :373-376).
func legacyName(svc *v1.Service) string { return cloudprovider.DefaultLoadBalancerName(svc) }

// owns reports whether lb was made for the Service: named upstream's way
// or the legacy way. Any other load balancer the Service uses is shared,
// made for another Service or by a person.
func (l *loadBalancers) owns(lb *loadbalancers.LoadBalancer, svc *v1.Service) bool {
	return lb.Name == lbName(l.clusterID, svc) || lb.Name == legacyName(svc)
}

// madeByCCM reports whether a CCM of this cluster made lb, so it may go
// with its last Service: upstream deletes any load balancer named
// kube_service_* (loadbalancer.go:2116-2118); here the name must carry
// this cluster's ID, or be the Service's legacy name (which upstream
// never deletes, leaving an empty load balancer behind).
func (l *loadBalancers) madeByCCM(lb *loadbalancers.LoadBalancer, svc *v1.Service) bool {
	return strings.HasPrefix(lb.Name, servicePrefix+l.clusterID+"_") || lb.Name == legacyName(svc)
}

// otherUsers are the usage tags on a load balancer other than the
// Service's own.
func otherUsers(tags []string, own string) []string {
	var out []string
	for _, t := range tags {
		if strings.HasPrefix(t, servicePrefix) && t != own {
			out = append(out, t)
		}
	}
	return out
}

// servesListener reports whether a listener is the Service's: it has the
// Service's tag, or it has no tag and the load balancer is the Service's
// own (upstream's checkListenerPorts and deleteOctaviaListeners,
// loadbalancer.go:563, :1619). On its own load balancer, a listener
// tagged with the load balancer's name (lbName) is the Service's too:
// upstream tags listeners with the name of the load balancer it made them
// for, which for an adopted legacy a<uid> one is not the usage tag.
func servesListener(lis *listeners.Listener, tag string, owner bool, lbName string) bool {
	return slices.Contains(lis.Tags, tag) || (owner && (len(lis.Tags) == 0 || slices.Contains(lis.Tags, lbName)))
}

// annotatedID is the load-balancer-id annotation, "" when unset.
func annotatedID(svc *v1.Service) string {
	v, _ := annotationLoadBalancerID.Lookup(svc)
	return strings.TrimSpace(v)
}

// resolve finds the load balancer the Service uses for a sync, and
// whether it is the Service's own: the one the annotation names, else the
// Service's own by name, else by its legacy name (nil: none yet). As
// upstream (loadbalancer.go:1689-1754), an annotation naming no load
// balancer is an error, not a reason to make one: a person may have
// mistyped it, and a new load balancer would have a new address. A
// Service that has its own load balancer and names another is refused:
// moving would change its address and leave its own behind (upstream
// moves and leaks it).
func (l *loadBalancers) resolve(ctx context.Context, svc *v1.Service) (*loadbalancers.LoadBalancer, bool, error) {
	id := annotatedID(svc)
	if id == "" {
		lb, err := l.find(ctx, svc)
		return lb, lb != nil, err
	}
	if !uuidRE.MatchString(id) {
		return nil, false, annotationLoadBalancerID.Invalid(id, "the ID of an existing Octavia load balancer (openstack loadbalancer list), such as 5f3c1a0e-8f0b-4f1e-9d8a-2b1c3d4e5f60")
	}
	lb, err := loadbalancers.Get(ctx, l.api.lb, id).Extract()
	if isNotFound(err) && l.own.get(serviceKey(svc)) == id {
		// The Service's own load balancer, as this process synced it
		// (the annotation is its recorded ID), was deleted outside
		// Kubernetes: it is made again, as for a Service without the
		// annotation. One the user named to share stays an error.
		klog.FromContext(ctx).Info("The Service's own load balancer was deleted outside Kubernetes; making it again", "annotation", annotationLoadBalancerID, "id", id)
		lb, err := l.find(ctx, svc)
		return lb, lb != nil, err
	}
	if isNotFound(err) {
		return nil, false, fmt.Errorf("annotation %s names load balancer %s, which does not exist (deleted outside Kubernetes?): remove the annotation to have a load balancer made for the Service, with a new address, or name an existing one", annotationLoadBalancerID, id)
	}
	if err != nil {
		return nil, false, fmt.Errorf("get load balancer %s named by annotation %s: %w", id, annotationLoadBalancerID, err)
	}
	if l.owns(lb, svc) {
		return lb, true, nil
	}
	own, err := l.find(ctx, svc)
	if err != nil {
		return nil, false, err
	}
	if own != nil {
		return nil, false, fmt.Errorf("annotation %s names load balancer %s (%s), but the Service has its own, %s: a Service does not move to another load balancer, which would change its address; set the annotation to %s, or delete the Service and create it again with the annotation",
			annotationLoadBalancerID, lb.ID, lb.Name, own.ID, own.ID)
	}
	return lb, false, nil
}

// resolveAll lists the load balancers a Service's status and deletion
// concern: the one the annotation names, when it exists, then the
// Service's own (by name or legacy name), when that is another. A stale
// or malformed annotation is no error here: the service controller would
// keep the Service's finalizer for ever.
func (l *loadBalancers) resolveAll(ctx context.Context, svc *v1.Service) ([]*loadbalancers.LoadBalancer, error) {
	var out []*loadbalancers.LoadBalancer
	if id := annotatedID(svc); uuidRE.MatchString(id) {
		lb, err := loadbalancers.Get(ctx, l.api.lb, id).Extract()
		switch {
		case isNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("get load balancer %s named by annotation %s: %w", id, annotationLoadBalancerID, err)
		case l.owns(lb, svc):
			return []*loadbalancers.LoadBalancer{lb}, nil
		default:
			out = append(out, lb)
		}
	}
	own, err := l.find(ctx, svc)
	if err != nil {
		return nil, err
	}
	if own != nil {
		out = append(out, own)
	}
	return out, nil
}

// checkShare refuses what upstream refuses before a Service uses a load
// balancer it does not own (loadbalancer.go:1715-1736): more Services
// than maxSharedLB, counting the tags of those using it already, and an
// internal Service, since the floating IP belongs to the load balancer
// and would expose it.
func (l *loadBalancers) checkShare(svc *v1.Service, opts *lbOptions, lb *loadbalancers.LoadBalancer) error {
	tag := usageTag(l.clusterID, svc)
	if !slices.Contains(lb.Tags, tag) {
		users := otherUsers(lb.Tags, tag)
		if max := l.maxShared(); len(users)+1 > max {
			return fmt.Errorf("load balancer %s (%s) named by annotation %s is already used by %d Services (%s), and loadBalancer.maxSharedLB allows %d: raise it, or remove the annotation to give the Service its own",
				lb.ID, lb.Name, annotationLoadBalancerID, len(users), strings.Join(users, ", "), max)
		}
	}
	if opts.internal {
		return fmt.Errorf("an internal Service cannot share load balancer %s (%s) named by annotation %s: its floating IP (or a later one) would expose the Service; remove annotation %s or %s",
			lb.ID, lb.Name, annotationLoadBalancerID, annotationLoadBalancerID, annotationInternal)
	}
	return nil
}

// checkOwnerInternal refuses to make a shared load balancer internal:
// releasing its floating IP would take the address of the other Services
// using it. (Upstream releases it, loadbalancer.go:650-672.)
func (l *loadBalancers) checkOwnerInternal(svc *v1.Service, opts *lbOptions, lb *loadbalancers.LoadBalancer) error {
	if !opts.internal {
		return nil
	}
	if users := otherUsers(lb.Tags, usageTag(l.clusterID, svc)); len(users) > 0 {
		return fmt.Errorf("annotation %s: the Service's load balancer %s is shared with %s, whose address is its floating IP; delete those Services or remove their annotation %s first",
			annotationInternal, lb.ID, strings.Join(users, ", "), annotationLoadBalancerID)
	}
	return nil
}

func (l *loadBalancers) maxShared() int {
	if n := l.cfg.LoadBalancer.MaxSharedLB; n != 0 {
		return n
	}
	return defaultMaxSharedLB
}

// sharedFloatingIP is the address of a Service using a load balancer it
// does not own: the floating IP on the VIP port. Only the Service the
// load balancer was made for allocates one (upstream: loadbalancer.go:675-680).
func (l *loadBalancers) sharedFloatingIP(ctx context.Context, opts *lbOptions, lb *loadbalancers.LoadBalancer) (string, error) {
	f, err := l.floatingIPOnPort(ctx, lb.VipPortID)
	if err != nil {
		return "", err
	}
	if f == nil {
		return "", fmt.Errorf("load balancer %s (%s) named by annotation %s has no floating IP, and only the Service it was made for gets one: associate a floating IP with its VIP port %s, or remove the annotation",
			lb.ID, lb.Name, annotationLoadBalancerID, lb.VipPortID)
	}
	if opts.loadBalancerIP != "" && opts.loadBalancerIP != f.FloatingIP {
		return "", fmt.Errorf("spec.loadBalancerIP %s is not the address of load balancer %s named by annotation %s, %s: a shared load balancer has one address; clear spec.loadBalancerIP",
			opts.loadBalancerIP, lb.ID, annotationLoadBalancerID, f.FloatingIP)
	}
	return f.FloatingIP, nil
}

// setUsage adds or removes the Service's usage tag on the load balancer,
// if that changes anything.
func (l *loadBalancers) setUsage(ctx context.Context, lb *loadbalancers.LoadBalancer, tag string, use bool) error {
	if slices.Contains(lb.Tags, tag) == use {
		return nil
	}
	tags := slices.DeleteFunc(slices.Clone(lb.Tags), func(t string) bool { return t == tag })
	if use {
		tags = append(tags, tag)
	}
	if tags == nil {
		tags = []string{} // sent as [], which clears them
	}
	if err := l.write(ctx, lb.ID, "update tags of load balancer "+lb.ID, func() error {
		return loadbalancers.Update(ctx, l.api.lb, lb.ID, loadbalancers.UpdateOpts{Tags: &tags}).Err
	}); err != nil {
		return err
	}
	lb.Tags = tags
	return nil
}

// creatorFloatingIP is the description of the floating IP a CCM
// allocated for the Service a load balancer was made for: both are
// described after it, "Kubernetes external service <ns>/<name> from
// cluster <cluster>" (the legacy ones "... service a<uid> ...", as the
// upstream CCM before March 2019 wrote them). "" when lb has no such
// description.
func creatorFloatingIP(lb *loadbalancers.LoadBalancer) string {
	if !strings.HasPrefix(lb.Description, "Kubernetes external service ") {
		return ""
	}
	return "Floating IP for " + lb.Description
}

// recordID writes the load balancer's ID onto the Service as the
// load-balancer-id annotation, as upstream does at every ensure
// (loadbalancer.go:1756-1757, patched by loadbalancer_service_patcher.go), so
// users see which load balancer serves the Service and can name it on
// another. Without a Kubernetes client (tests) it does nothing.
func (l *loadBalancers) recordID(ctx context.Context, svc *v1.Service, id string) error {
	if l.services == nil || id == "" || svc.Annotations[annotationLoadBalancerID.String()] == id {
		return nil
	}
	updated := svc.DeepCopy()
	if updated.Annotations == nil {
		updated.Annotations = map[string]string{}
	}
	updated.Annotations[annotationLoadBalancerID.String()] = id
	if _, err := servicehelpers.PatchService(l.services, svc, updated); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("record load balancer %s in annotation %s: %w", id, annotationLoadBalancerID, err)
	}
	// The caller's Service says so too, as upstream's patcher leaves it:
	// the service controller then takes the annotation for the one its
	// load balancer was made with, not for a change to ensure again.
	svc.Annotations = updated.Annotations
	klog.FromContext(ctx).V(2).Info("Recorded the load balancer's ID on the Service", "annotation", annotationLoadBalancerID, "id", id)
	return nil
}

// forgetID removes the annotation once the load balancer it names is
// gone, so the Service gets a new one if it becomes a LoadBalancer again
// (an annotation naming no load balancer is otherwise an error). A
// Service being deleted is left alone.
func (l *loadBalancers) forgetID(ctx context.Context, svc *v1.Service, gone string) error {
	if l.services == nil || svc.DeletionTimestamp != nil || annotatedID(svc) != gone {
		return nil
	}
	updated := svc.DeepCopy()
	delete(updated.Annotations, annotationLoadBalancerID.String())
	if _, err := servicehelpers.PatchService(l.services, svc, updated); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove annotation %s naming deleted load balancer %s: %w", annotationLoadBalancerID, gone, err)
	}
	svc.Annotations = updated.Annotations
	klog.FromContext(ctx).V(2).Info("Removed the annotation of the deleted load balancer", "annotation", annotationLoadBalancerID, "id", gone)
	return nil
}

// ownLBs maps Services ("<namespace>/<name>") to the ID of their own load
// balancer.
type ownLBs struct {
	mu sync.Mutex
	m  map[string]string
}

func (o *ownLBs) get(key string) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.m[key]
}

// set records id ("" forgets).
func (o *ownLBs) set(key, id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if id == "" {
		delete(o.m, key)
		return
	}
	if o.m == nil {
		o.m = map[string]string{}
	}
	o.m[key] = id
}

// lbLocks serialises this manager's work on one load balancer, so the
// Services sharing it do not overwrite each other's tags or race for a
// port. Services with load balancers of their own never wait for each
// other.
type lbLocks struct {
	mu sync.Mutex
	m  map[string]*lbLock
}

type lbLock struct {
	turn chan struct{}
	refs int
}

// lock waits for the load balancer's turn; the caller must call the
// returned unlock. waited says another sync held it meanwhile, so what
// was read before may be stale.
func (k *lbLocks) lock(ctx context.Context, id string) (unlock func(), waited bool, err error) {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*lbLock{}
	}
	e := k.m[id]
	if e == nil {
		e = &lbLock{turn: make(chan struct{}, 1)}
		k.m[id] = e
	}
	e.refs++
	k.mu.Unlock()
	release := func() {
		k.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(k.m, id)
		}
		k.mu.Unlock()
	}
	unlock = func() { <-e.turn; release() }
	select {
	case e.turn <- struct{}{}:
		return unlock, false, nil
	default:
	}
	select {
	case e.turn <- struct{}{}:
		return unlock, true, nil
	case <-ctx.Done():
		release()
		return nil, false, ctx.Err()
	}
}
