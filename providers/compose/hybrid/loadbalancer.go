package hybrid

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/multicloud-ccm/multicloud-ccm/providers/lbhosts"
)

// loadBalancers routes each Service to the cloud its annotation (else the
// config's default) names, with only that cloud's Nodes as backends: a
// load balancer cannot reach another cloud's nodes. When the annotation
// changes, the new load balancer is made first (the service controller
// then writes its address), and the old one is deleted after.
type loadBalancers struct{ h *Composite }

var (
	_ cloudprovider.LoadBalancer = (*loadBalancers)(nil)
	_ lbhosts.Updater            = (*loadBalancers)(nil)
)

// pick is the member that serves svc's load balancer.
func (l *loadBalancers) pick(svc *v1.Service) (*member, error) {
	name := l.h.lbDefault
	if v, ok := svc.Annotations[AnnotationLoadBalancerProvider]; ok {
		name = strings.TrimSpace(v)
	}
	m, ok := l.h.byName[name]
	if !ok {
		return nil, fmt.Errorf("annotation %s=%q names no configured cloud (%s)", AnnotationLoadBalancerProvider, name, l.h.name())
	}
	if m.lb == nil {
		return nil, fmt.Errorf("cloud %s serves no load balancers", m.name)
	}
	return m, nil
}

// nodesOf are the Nodes of nodes that m owns, by placement: a Node not
// yet placed (no providerID or label, several clouds) is left out until
// the node controller has given it its providerID.
func (l *loadBalancers) nodesOf(m *member, nodes []*v1.Node) []*v1.Node {
	if len(l.h.members) == 1 {
		return nodes
	}
	out := make([]*v1.Node, 0, len(nodes))
	for _, n := range nodes {
		if p, err := l.h.placement(n); err == nil && p == m {
			out = append(out, n)
		}
	}
	return out
}

// LoadBalancerLanes are the clouds that serve load balancers: the
// service controller gives each its own queue and workers.
func (l *loadBalancers) LoadBalancerLanes() []string {
	var out []string
	for _, m := range l.h.members {
		if m.lb != nil {
			out = append(out, m.name)
		}
	}
	return out
}

// LoadBalancerLane is the cloud that serves svc's load balancer; a
// Service whose annotation names no cloud goes to the default one's lane,
// whose sync reports the annotation.
func (l *loadBalancers) LoadBalancerLane(svc *v1.Service) string {
	if m, err := l.pick(svc); err == nil {
		return m.name
	}
	return l.h.lbDefault
}

// LaneNodes are the Nodes the lane's cloud owns (nodesOf).
func (l *loadBalancers) LaneNodes(lane string, nodes []*v1.Node) []*v1.Node {
	m, ok := l.h.byName[lane]
	if !ok {
		return nil
	}
	return l.nodesOf(m, nodes)
}

// LanesInUse: the service controller gives each cloud its own queue and
// workers, so a cloud's load-balancer calls are no longer bounded here
// (share.go): the bound kept upstream's shared workers free for the
// other clouds, and with lanes it would only fail a cloud's own Services
// against each other.
func (l *loadBalancers) LanesInUse() {
	for _, m := range l.h.members {
		m.lbShare.disable()
	}
}

// GetLoadBalancer implements cloudprovider.LoadBalancer.
func (l *loadBalancers) GetLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	m, err := l.pick(svc)
	if err != nil {
		return nil, false, err
	}
	release, err := m.lbShare.acquire(ctx)
	if err != nil {
		return nil, false, err
	}
	defer release()
	return m.lb.GetLoadBalancer(ctx, clusterName, svc)
}

// GetLoadBalancerName implements cloudprovider.LoadBalancer.
func (l *loadBalancers) GetLoadBalancerName(ctx context.Context, clusterName string, svc *v1.Service) string {
	m, err := l.pick(svc)
	if err != nil {
		m = l.h.byName[l.h.lbDefault]
		if m.lb == nil {
			return cloudprovider.DefaultLoadBalancerName(svc)
		}
	}
	return m.lb.GetLoadBalancerName(ctx, clusterName, svc)
}

// EnsureLoadBalancer implements cloudprovider.LoadBalancer.
func (l *loadBalancers) EnsureLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	m, err := l.pick(svc)
	if err != nil {
		return nil, err
	}
	own := l.nodesOf(m, nodes)
	if len(own) == 0 && len(nodes) > 0 {
		return nil, fmt.Errorf("cloud %s has none of the cluster's %d Nodes, so its load balancer would have no backends; annotate the Service %s=<a cloud with Nodes>",
			m.name, len(nodes), AnnotationLoadBalancerProvider)
	}
	release, err := m.lbShare.acquire(ctx)
	if err != nil {
		return nil, err
	}
	st, err := m.lb.EnsureLoadBalancer(ctx, clusterName, svc, own)
	release()
	if err != nil {
		return st, err
	}
	if err := l.leaveOthers(ctx, clusterName, svc, m); err != nil {
		return nil, err
	}
	return st, nil
}

// UpdateLoadBalancer implements cloudprovider.LoadBalancer.
func (l *loadBalancers) UpdateLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) error {
	m, err := l.pick(svc)
	if err != nil {
		return err
	}
	release, err := m.lbShare.acquire(ctx)
	if err != nil {
		return err
	}
	defer release()
	return m.lb.UpdateLoadBalancer(ctx, clusterName, svc, l.nodesOf(m, nodes))
}

// UpdateLoadBalancerHosts implements lbhosts.Updater: each cloud's
// Services in one pass of that cloud, with that cloud's Nodes (the
// service controller's lanes give it one cloud's at a time).
func (l *loadBalancers) UpdateLoadBalancerHosts(ctx context.Context, clusterName string, svcs []*v1.Service, nodes []*v1.Node) []error {
	errs := make([]error, len(svcs))
	byMember := map[*member][]int{}
	var order []*member
	for i, svc := range svcs {
		m, err := l.pick(svc)
		if err != nil {
			errs[i] = err
			continue
		}
		if _, ok := byMember[m]; !ok {
			order = append(order, m)
		}
		byMember[m] = append(byMember[m], i)
	}
	for _, m := range order {
		idx := byMember[m]
		release, err := m.lbShare.acquire(ctx)
		if err != nil {
			for _, i := range idx {
				errs[i] = err
			}
			continue
		}
		lbhosts.UpdateSome(ctx, m.lb, clusterName, svcs, idx, l.nodesOf(m, nodes), errs)
		release()
	}
	return errs
}

// EnsureLoadBalancerDeleted implements cloudprovider.LoadBalancer: in
// the cloud the Service names and the one that last made its load
// balancer, if another (a move not finished). When the manager has not
// seen the Service since it started, every cloud is asked, so nothing is
// left behind by a move made before a restart.
func (l *loadBalancers) EnsureLoadBalancerDeleted(ctx context.Context, clusterName string, svc *v1.Service) error {
	targets := l.h.members
	if prev, known := l.h.lbs.get(svc.UID); known {
		targets = nil
		for _, m := range l.h.members {
			if m.name == prev {
				targets = append(targets, m)
			}
		}
		if m, err := l.pick(svc); err == nil && m.name != prev {
			targets = append(targets, m)
		}
	}
	var errs []error
	for _, m := range targets {
		if m.lb == nil {
			continue
		}
		if err := l.deleteIn(ctx, m, clusterName, svc); err != nil {
			errs = append(errs, fmt.Errorf("cloud %s: %w", m.name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	l.h.lbs.forget(svc.UID)
	return nil
}

func (l *loadBalancers) deleteIn(ctx context.Context, m *member, clusterName string, svc *v1.Service) error {
	release, err := m.lbShare.acquire(ctx)
	if err != nil {
		return err
	}
	defer release()
	return m.lb.EnsureLoadBalancerDeleted(ctx, clusterName, svc)
}

// leaveOthers deletes the Service's load balancers in clouds other than
// m, once m's is made: the one it had before its annotation changed, or,
// when the manager has not seen the Service since it started and the
// Service already has an address, any another cloud holds (one read per
// other cloud, once per Service per start). A cloud that cannot be asked
// then (down, throttled) does not fail m's Service: the placement stays
// unknown, so the next sync asks again and the deletion asks every cloud.
func (l *loadBalancers) leaveOthers(ctx context.Context, clusterName string, svc *v1.Service, m *member) error {
	if len(l.h.members) == 1 {
		return nil
	}
	prev, known := l.h.lbs.get(svc.UID)
	if known && prev == m.name {
		return nil
	}
	if !known && len(svc.Status.LoadBalancer.Ingress) == 0 {
		// Never given an address: no cloud made it a load balancer.
		l.h.lbs.set(svc.UID, m.name)
		return nil
	}
	settled := true
	for _, o := range l.h.members {
		if o == m || o.lb == nil || (known && o.name != prev) {
			continue
		}
		if !known {
			exists, err := l.existsIn(ctx, o, clusterName, svc)
			if err != nil {
				klog.FromContext(ctx).Info("Could not ask another cloud whether it still holds the Service's load balancer; asking again at the next sync",
					"service", klog.KObj(svc), "cloud", o.name, "err", err)
				settled = false
				continue
			}
			if !exists {
				continue
			}
		}
		klog.FromContext(ctx).Info("Deleting the Service's load balancer in the cloud it moved from", "service", klog.KObj(svc), "from", o.name, "to", m.name)
		if err := l.deleteIn(ctx, o, clusterName, svc); err != nil {
			return fmt.Errorf("delete the load balancer the Service had in cloud %s: %w", o.name, err)
		}
	}
	if settled {
		l.h.lbs.set(svc.UID, m.name)
	}
	return nil
}

func (l *loadBalancers) existsIn(ctx context.Context, m *member, clusterName string, svc *v1.Service) (bool, error) {
	release, err := m.lbShare.acquire(ctx)
	if err != nil {
		return false, err
	}
	defer release()
	_, exists, err := m.lb.GetLoadBalancer(ctx, clusterName, svc)
	return exists, err
}

// lbPlacement remembers which cloud last ensured each Service's load
// balancer.
type lbPlacement struct {
	mu    sync.Mutex
	cloud map[types.UID]string
}

func newLBPlacement() *lbPlacement { return &lbPlacement{cloud: map[types.UID]string{}} }

func (p *lbPlacement) get(uid types.UID) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.cloud[uid]
	return c, ok
}

func (p *lbPlacement) set(uid types.UID, cloud string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cloud[uid] = cloud
}

func (p *lbPlacement) forget(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.cloud, uid)
}
