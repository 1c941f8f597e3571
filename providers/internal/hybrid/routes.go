package hybrid

import (
	"context"
	"errors"
	"fmt"
	"sync"

	cloudprovider "k8s.io/cloud-provider"
)

// routes lets each cloud program the routes of its own Nodes, while the
// route controller sees one list of every cloud's.
type routes struct {
	h *Composite

	mu sync.Mutex
	// owner is the cloud of each route listed last, by name.
	owner map[string]*member
}

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

// DeleteRoute implements cloudprovider.Routes: in the cloud that listed
// the route.
func (r *routes) DeleteRoute(ctx context.Context, clusterName string, route *cloudprovider.Route) error {
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
