package hybrid

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/lbmove"
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
	// Make-before-break: the load balancer in m first, then what the
	// Service had in another cloud (its annotation changed) goes.
	return l.h.lbs.Ensure(ctx, svc, m.name, l.places(clusterName), func() (*v1.LoadBalancerStatus, error) {
		release, err := m.lbShare.acquire(ctx)
		if err != nil {
			return nil, err
		}
		defer release()
		return m.lb.EnsureLoadBalancer(ctx, clusterName, svc, own)
	})
}

// places are the clouds that serve load balancers, as places a
// Service's load balancer can be (lbmove): asked whether they hold it
// when the composite does not know where it was, cleared when it moved.
func (l *loadBalancers) places(clusterName string) []lbmove.Place {
	var out []lbmove.Place
	for _, m := range l.h.members {
		if m.lb == nil {
			continue
		}
		out = append(out, lbmove.Place{
			Name: m.name,
			Holds: func(ctx context.Context, svc *v1.Service) (bool, error) {
				return l.existsIn(ctx, m, clusterName, svc)
			},
			Clear: func(ctx context.Context, svc *v1.Service) error {
				return l.deleteIn(ctx, m, clusterName, svc)
			},
		})
	}
	return out
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
	current := ""
	if m, err := l.pick(svc); err == nil {
		current = m.name
	}
	return l.h.lbs.Delete(ctx, svc, current, l.places(clusterName))
}

func (l *loadBalancers) deleteIn(ctx context.Context, m *member, clusterName string, svc *v1.Service) error {
	release, err := m.lbShare.acquire(ctx)
	if err != nil {
		return err
	}
	defer release()
	return m.lb.EnsureLoadBalancerDeleted(ctx, clusterName, svc)
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
