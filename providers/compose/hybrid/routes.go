package hybrid

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
)

// routes lets each cloud program the routes of its own Nodes, while the
// route controller sees one list of every cloud's.
//
// A Node that no routed cloud serves (its cloud has no routes configured,
// or it belongs to no configured cloud: a k3s or bare-metal Node) is
// listed with a route per pod CIDR as if it had one, named
// unroutedPrefix+<node>/<cidr>, which deleting leaves alone. Otherwise
// the upstream route controller would try to create a route no cloud can
// hold every period (a Warning Event each time) and mark the Node
// NetworkUnavailable, which keeps every pod off it; the pod network of
// such a Node is another's to carry (a CNI overlay, its own manager).
type routes struct {
	h *Composite

	mu sync.Mutex
	// owner is the cloud of each route listed last, by name.
	owner map[string]*member
}

// unroutedPrefix names the routes listed for Nodes no routed cloud serves.
const unroutedPrefix = "unrouted:"

var _ cloudprovider.Routes = (*routes)(nil)

// ListRoutes implements cloudprovider.Routes: every routed cloud's, one
// after the other. A cloud that cannot list fails the whole listing, so
// the route controller never takes its routes for gone.
func (r *routes) ListRoutes(ctx context.Context, clusterName string) ([]*cloudprovider.Route, error) {
	var all []*cloudprovider.Route
	owner := map[string]*member{}
	for _, m := range r.h.members {
		if m.routes == nil {
			continue
		}
		list, err := m.routes.ListRoutes(ctx, clusterName)
		if err != nil {
			return nil, fmt.Errorf("cloud %s: %w", m.name, err)
		}
		for _, rt := range list {
			owner[rt.Name] = m
		}
		all = append(all, list...)
	}
	all = append(all, r.unrouted()...)
	r.mu.Lock()
	r.owner = owner
	r.mu.Unlock()
	return all, nil
}

// CreateRoute implements cloudprovider.Routes: in the target Node's cloud.
func (r *routes) CreateRoute(ctx context.Context, clusterName, nameHint string, route *cloudprovider.Route) error {
	m, err := r.nodeCloud(route)
	if err != nil {
		return err
	}
	return m.routes.CreateRoute(ctx, clusterName, nameHint, route)
}

// unrouted are the routes listed for the pod CIDRs of Nodes that no
// routed cloud serves; a Node not placed yet is not among them (its
// cloud may be routed).
func (r *routes) unrouted() []*cloudprovider.Route {
	if r.h.nodes == nil {
		return nil
	}
	nodes, err := r.h.nodes.List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*cloudprovider.Route
	for _, n := range nodes {
		m, err := r.h.placement(n)
		if !errors.Is(err, errForeign) && (err != nil || m == nil || m.routes != nil) {
			continue
		}
		for _, cidr := range n.Spec.PodCIDRs {
			out = append(out, &cloudprovider.Route{
				Name: unroutedPrefix + n.Name + "/" + cidr, TargetNode: types.NodeName(n.Name), DestinationCIDR: cidr,
			})
		}
	}
	return out
}

// DeleteRoute implements cloudprovider.Routes: in the cloud that listed
// the route.
func (r *routes) DeleteRoute(ctx context.Context, clusterName string, route *cloudprovider.Route) error {
	if strings.HasPrefix(route.Name, unroutedPrefix) {
		return nil
	}
	r.mu.Lock()
	m := r.owner[route.Name]
	r.mu.Unlock()
	if m == nil {
		var err error
		if m, err = r.nodeCloud(route); err != nil {
			return err
		}
	}
	return m.routes.DeleteRoute(ctx, clusterName, route)
}

// nodeCloud is the routed cloud of the route's target Node.
func (r *routes) nodeCloud(route *cloudprovider.Route) (*member, error) {
	if len(r.h.members) == 1 {
		return r.h.members[0], nil
	}
	if r.h.nodes == nil {
		return nil, errors.New("no Node informer yet")
	}
	node, err := r.h.nodes.Get(string(route.TargetNode))
	if err != nil {
		return nil, fmt.Errorf("route %s to node %s: %w", route.DestinationCIDR, route.TargetNode, err)
	}
	m, err := r.h.placement(node)
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("route %s: node %s is not placed in a cloud yet", route.DestinationCIDR, route.TargetNode)
	}
	if m.routes == nil {
		return nil, fmt.Errorf("route %s: node %s is in cloud %s, which has no routes configured", route.DestinationCIDR, route.TargetNode, m.name)
	}
	return m, nil
}
