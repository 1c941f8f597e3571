package openstack

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/extraroutes"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/batch"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/flight"
)

// routes implements cloudprovider.Routes with pod-CIDR routes as extra
// routes of the configured Neutron router, next hop the node's fixed
// address, plus an allowed address pair for the pod CIDR on the node's
// port so port security lets pod traffic through. Routes whose next hop
// is not a node of ours belong to someone else and are never listed,
// replaced or removed.
//
// Concurrent CreateRoute calls (the route controller makes one per Node at
// once) are coalesced into one add_extraroutes call, which Neutron applies
// atomically; without the extraroute-atomic extension the router's routes
// are read and written whole, with its revision_number as If-Match.
type routes struct {
	api      *clients
	in       *instances
	routerID string

	atomicOnce flight.Group[bool]
	mu         sync.Mutex
	atomic     *bool

	adds, removes *batch.Batcher[struct{}]
}

var _ cloudprovider.Routes = (*routes)(nil)

// routeBatchWindow is how long a route change waits for others to share
// its router write.
const routeBatchWindow = 50 * time.Millisecond

func newRoutes(api *clients, s *Section, in *instances) *routes {
	r := &routes{api: api, in: in, routerID: s.Routes.RouterID}
	r.adds = batch.New(routeBatchWindow, 200, func(ctx context.Context, keys []string) (map[string]struct{}, error) {
		return r.apply(ctx, keys, true)
	})
	r.removes = batch.New(routeBatchWindow, 200, func(ctx context.Context, keys []string) (map[string]struct{}, error) {
		return r.apply(ctx, keys, false)
	})
	return r
}

// routeKey is "<destination> via <nexthop>".
func routeKey(dst, nexthop string) string { return dst + " via " + nexthop }

func parseRouteKey(k string) routers.Route {
	dst, hop, _ := strings.Cut(k, " via ")
	return routers.Route{DestinationCIDR: dst, NextHop: hop}
}

// ListRoutes lists the router's routes whose next hop is a server of the
// project, with the Node of that server as target.
func (r *routes) ListRoutes(ctx context.Context, _ string) ([]*cloudprovider.Route, error) {
	router, err := routers.Get(ctx, r.api.network, r.routerID).Extract()
	if err != nil {
		return nil, fmt.Errorf("get router %s: %w", r.routerID, err)
	}
	all, err := r.in.Snap.All(ctx)
	if err != nil {
		return nil, err
	}
	byIP := map[string]*server{}
	for _, s := range all {
		for _, a := range s.addresses {
			if a.Type == v1.NodeInternalIP {
				byIP[a.Address] = s
			}
		}
	}
	var out []*cloudprovider.Route
	for _, rt := range router.Routes {
		s := byIP[rt.NextHop]
		if s == nil {
			continue
		}
		name, ok := r.in.Nodes.NodeName(s.id)
		if !ok {
			name = s.name
		}
		out = append(out, &cloudprovider.Route{
			Name: routeKey(rt.DestinationCIDR, rt.NextHop), TargetNode: types.NodeName(name), DestinationCIDR: rt.DestinationCIDR,
		})
	}
	return out, nil
}

// CreateRoute routes the pod CIDR to the Node's fixed address and lets
// the pod CIDR through the Node's port.
func (r *routes) CreateRoute(ctx context.Context, _ string, _ string, route *cloudprovider.Route) error {
	s, hop, err := r.nextHop(ctx, route.TargetNode)
	if err != nil {
		return err
	}
	if err := r.allowPodCIDR(ctx, s, hop, route.DestinationCIDR, true); err != nil {
		return err
	}
	if _, err := r.adds.Get(ctx, []string{routeKey(route.DestinationCIDR, hop)}); err != nil {
		return fmt.Errorf("add route %s via %s (node %s) to router %s: %w", route.DestinationCIDR, hop, route.TargetNode, r.routerID, err)
	}
	klog.FromContext(ctx).Info("Created route", "destination", route.DestinationCIDR, "nexthop", hop, "node", route.TargetNode)
	return nil
}

// DeleteRoute removes the route (by its listed name, destination and next
// hop) and the Node's allowed address pair when the Node still exists.
func (r *routes) DeleteRoute(ctx context.Context, _ string, route *cloudprovider.Route) error {
	rt := parseRouteKey(route.Name)
	if rt.NextHop == "" {
		return fmt.Errorf("route %q was not listed by this controller", route.Name)
	}
	if _, err := r.removes.Get(ctx, []string{routeKey(route.DestinationCIDR, rt.NextHop)}); err != nil {
		return fmt.Errorf("remove route %s via %s from router %s: %w", route.DestinationCIDR, rt.NextHop, r.routerID, err)
	}
	if s, hop, err := r.nextHop(ctx, route.TargetNode); err == nil && hop == rt.NextHop {
		if err := r.allowPodCIDR(ctx, s, hop, route.DestinationCIDR, false); err != nil {
			return err
		}
	}
	klog.FromContext(ctx).Info("Deleted route", "destination", route.DestinationCIDR, "nexthop", rt.NextHop)
	return nil
}

// nextHop is the Node's server and its first fixed IPv4 address.
func (r *routes) nextHop(ctx context.Context, nodeName types.NodeName) (*server, string, error) {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: string(nodeName)}}
	s, err := r.in.Lookup(ctx, n)
	if err != nil {
		return nil, "", err
	}
	for _, a := range s.addresses {
		if ip, err := netip.ParseAddr(a.Address); err == nil && a.Type == v1.NodeInternalIP && ip.Is4() {
			return s, a.Address, nil
		}
	}
	return nil, "", fmt.Errorf("server %s of node %s has no fixed IPv4 address", s.id, nodeName)
}

// apply adds or removes a batch of routes in one router write.
func (r *routes) apply(ctx context.Context, keys []string, add bool) (map[string]struct{}, error) {
	want := make([]routers.Route, len(keys))
	for i, k := range keys {
		want[i] = parseRouteKey(k)
	}
	atomic, err := r.hasAtomic(ctx)
	if err != nil {
		return nil, err
	}
	if atomic {
		opts := extraroutes.Opts{Routes: &want}
		if add {
			err = extraroutes.Add(ctx, r.api.network, r.routerID, opts).Err
		} else {
			err = extraroutes.Remove(ctx, r.api.network, r.routerID, opts).Err
		}
	} else {
		err = r.readModifyWrite(ctx, want, add)
	}
	if err != nil {
		return nil, err
	}
	out := make(map[string]struct{}, len(keys))
	for _, k := range keys {
		out[k] = struct{}{}
	}
	return out, nil
}

// hasAtomic reports the extraroute-atomic extension (Neutron Train on),
// asked once.
func (r *routes) hasAtomic(ctx context.Context) (bool, error) {
	r.mu.Lock()
	known := r.atomic
	r.mu.Unlock()
	if known != nil {
		return *known, nil
	}
	return r.atomicOnce.Do(ctx, "atomic", func(ctx context.Context) (bool, error) {
		_, err := extensions.Get(ctx, r.api.network, "extraroute-atomic").Extract()
		if err != nil && !isNotFound(err) {
			return false, fmt.Errorf("look up the extraroute-atomic extension: %w", err)
		}
		has := err == nil
		r.mu.Lock()
		r.atomic = &has
		r.mu.Unlock()
		return has, nil
	})
}

// readModifyWrite changes the router's whole route list, with its
// revision as If-Match; a 412 re-reads and tries again.
func (r *routes) readModifyWrite(ctx context.Context, change []routers.Route, add bool) error {
	for attempt := 1; ; attempt++ {
		router, err := routers.Get(ctx, r.api.network, r.routerID).Extract()
		if err != nil {
			return fmt.Errorf("get router %s: %w", r.routerID, err)
		}
		next := slices.DeleteFunc(slices.Clone(router.Routes), func(rt routers.Route) bool { return slices.Contains(change, rt) })
		if add {
			next = append(next, change...)
		}
		rev := router.RevisionNumber
		err = routers.Update(ctx, r.api.network, r.routerID, routers.UpdateOpts{Routes: &next, RevisionNumber: &rev}).Err
		if err == nil {
			return nil
		}
		if statusOf(err) != http.StatusPreconditionFailed || attempt >= maxPortUpdateAttempts {
			return err
		}
	}
}

// allowPodCIDR adds (or removes) the pod CIDR as an allowed address pair
// of the node's port holding hop, by read-modify-write with If-Match.
func (r *routes) allowPodCIDR(ctx context.Context, s *server, hop, cidr string, add bool) error {
	pages, err := ports.List(r.api.network, ports.ListOpts{DeviceID: s.id}).AllPages(ctx)
	if err != nil {
		return fmt.Errorf("list ports of server %s: %w", s.id, err)
	}
	list, err := ports.ExtractPorts(pages)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(list, func(p ports.Port) bool {
		return slices.ContainsFunc(p.FixedIPs, func(ip ports.IP) bool { return ip.IPAddress == hop })
	})
	if i < 0 {
		return fmt.Errorf("no port of server %s has address %s", s.id, hop)
	}
	_, err = updatePort(ctx, r.api.network, &list[i], func(p *ports.Port) (ports.UpdateOpts, bool) {
		has := slices.ContainsFunc(p.AllowedAddressPairs, func(ap ports.AddressPair) bool { return ap.IPAddress == cidr })
		if has == add {
			return ports.UpdateOpts{}, false
		}
		pairs := slices.DeleteFunc(slices.Clone(p.AllowedAddressPairs), func(ap ports.AddressPair) bool { return ap.IPAddress == cidr })
		if add {
			pairs = append(pairs, ports.AddressPair{IPAddress: cidr})
		}
		return ports.UpdateOpts{AllowedAddressPairs: &pairs}, true
	})
	if err != nil {
		return fmt.Errorf("update allowed address pairs of port %s: %w", list[i].ID, err)
	}
	return nil
}
