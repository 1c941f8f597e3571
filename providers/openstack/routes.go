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
// address of the pod CIDR's family (IPv4 or IPv6: a dual-stack Node's
// two pod CIDRs are two routes), plus an allowed address pair for the
// pod CIDR on the node's port holding that address so port security
// lets pod traffic through. An IPv6 route needs the router to have an
// interface on the node's IPv6 subnet: Neutron refuses a next hop on no
// subnet of the router's ports ("the nexthop is not connected with
// router"). Routes whose next hop is not a node of ours belong to
// someone else and are never listed, replaced or removed.
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

	// adds and removes answer each route key with its own error: a
	// route Neutron refuses fails alone (see apply).
	adds, removes *batch.Batcher[error]
}

var _ cloudprovider.Routes = (*routes)(nil)

// routeBatchWindow is how long a route change waits for others to share
// its router write.
const routeBatchWindow = 50 * time.Millisecond

func newRoutes(api *clients, s *Section, in *instances) *routes {
	r := &routes{api: api, in: in, routerID: s.Routes.RouterID}
	r.adds = batch.New(routeBatchWindow, 200, func(ctx context.Context, keys []string) (map[string]error, error) {
		return r.apply(ctx, keys, true)
	})
	r.removes = batch.New(routeBatchWindow, 200, func(ctx context.Context, keys []string) (map[string]error, error) {
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
// project, with the Node of that server as target. Next hops are
// compared as addresses, not text: an IPv6 address has several spellings.
func (r *routes) ListRoutes(ctx context.Context, _ string) ([]*cloudprovider.Route, error) {
	router, err := routers.Get(ctx, r.api.network, r.routerID).Extract()
	if err != nil {
		return nil, fmt.Errorf("get router %s: %w", r.routerID, err)
	}
	all, err := r.in.Snap.All(ctx)
	if err != nil {
		return nil, err
	}
	byIP := map[netip.Addr]*server{}
	for _, s := range all {
		for _, a := range s.addresses {
			if ip, err := netip.ParseAddr(a.Address); err == nil && a.Type == v1.NodeInternalIP {
				byIP[ip] = s
			}
		}
	}
	var out []*cloudprovider.Route
	for _, rt := range router.Routes {
		hop, err := netip.ParseAddr(rt.NextHop)
		if err != nil {
			continue
		}
		s := byIP[hop]
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
	s, hop, err := r.nextHop(ctx, route.TargetNode, route.DestinationCIDR)
	if err != nil {
		return err
	}
	if err := r.allowPodCIDR(ctx, s, hop, route.DestinationCIDR, true); err != nil {
		return err
	}
	if err := batchResult(ctx, r.adds, routeKey(route.DestinationCIDR, hop)); err != nil {
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
	// Neutron matches routes by their text (extraroute_db.py:196-217),
	// which the name carries as Neutron listed it.
	if err := batchResult(ctx, r.removes, route.Name); err != nil {
		return fmt.Errorf("remove route %s via %s from router %s: %w", rt.DestinationCIDR, rt.NextHop, r.routerID, err)
	}
	if s, hop, err := r.nextHop(ctx, route.TargetNode, route.DestinationCIDR); err == nil && sameAddr(hop, rt.NextHop) {
		if err := r.allowPodCIDR(ctx, s, hop, route.DestinationCIDR, false); err != nil {
			return err
		}
	}
	klog.FromContext(ctx).Info("Deleted route", "destination", route.DestinationCIDR, "nexthop", rt.NextHop)
	return nil
}

// nextHop is the Node's server and its fixed address of the family of
// the route's destination: the first InternalIP of that family in the
// Node's status that is also one of the server's InternalIPs, else the
// server's first InternalIP of that family.
//
// Upstream takes the first InternalIP of the family from the Node's
// status alone (kubernetes/cloud-provider-openstack
// pkg/openstack/routes.go:148-173, called at :272-285 and :385-398).
// The node controller writes that status from these same server
// addresses, filtered by the kubelet's --node-ip, so in a running
// cluster both pick the same address, the one the Node uses (the second
// NIC's, say, when --node-ip chose it). Requiring it to be the server's
// own is what is safer: a status written before initialisation, by the
// kubelet or by anyone allowed to patch nodes/status, could name
// another machine's address and draw its pod traffic there; and a next
// hop outside the server's addresses would never be listed again by
// ListRoutes (which maps next hops through them), so the route
// controller would add the route anew every period. Both families use
// the same rule.
func (r *routes) nextHop(ctx context.Context, nodeName types.NodeName, dst string) (*server, string, error) {
	p, err := netip.ParsePrefix(dst)
	if err != nil {
		return nil, "", fmt.Errorf("route destination %q of node %s: %w", dst, nodeName, err)
	}
	// Upstream's family test is To4() == nil, which takes an
	// IPv4-mapped IPv6 prefix for IPv4; Unmap does the same.
	want6 := !p.Addr().Unmap().Is4()
	n, known := r.in.Nodes.Node(string(nodeName))
	if !known {
		n = &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: string(nodeName)}}
	}
	s, err := r.in.Lookup(ctx, n)
	if err != nil {
		return nil, "", err
	}
	var own []string
	for _, a := range s.addresses {
		if ip, err := netip.ParseAddr(a.Address); err == nil && a.Type == v1.NodeInternalIP && ip.Unmap().Is6() == want6 {
			own = append(own, a.Address)
		}
	}
	if len(own) == 0 {
		family := "IPv4"
		if want6 {
			family = "IPv6"
		}
		return nil, "", fmt.Errorf("server %s of node %s has no fixed %s address for the route to %s", s.id, nodeName, family, dst)
	}
	if known {
		for _, a := range n.Status.Addresses {
			if a.Type != v1.NodeInternalIP {
				continue
			}
			if i := slices.IndexFunc(own, func(o string) bool { return sameAddr(o, a.Address) }); i >= 0 {
				return s, own[i], nil
			}
		}
	}
	return s, own[0], nil
}

// samePrefix reports whether two texts are one prefix (or, without a
// length, one address).
func samePrefix(a, b string) bool {
	if a == b {
		return true
	}
	x, errX := netip.ParsePrefix(a)
	y, errY := netip.ParsePrefix(b)
	if errX != nil || errY != nil {
		return sameAddr(a, b)
	}
	return x == y
}

// sameAddr reports whether two texts are one IP address.
func sameAddr(a, b string) bool {
	x, errX := netip.ParseAddr(a)
	y, errY := netip.ParseAddr(b)
	return errX == nil && errY == nil && x == y
}

// batchResult is key's outcome in a batch: the batch's error, else the
// key's own.
func batchResult(ctx context.Context, b *batch.Batcher[error], key string) error {
	res, err := b.Get(ctx, []string{key})
	if err != nil {
		return err
	}
	return res[key]
}

// apply adds or removes a batch of routes in one router write. Neutron
// validates the router's routes as a whole, so one route it refuses
// (400: an IPv6 next hop on no subnet of the router, say) fails the
// write; the routes are then written one by one, each answered with its
// own outcome, so the valid ones (the IPv4 route of a dual-stack Node,
// other Nodes' routes) are made anyway. That costs what the upstream CCM
// always pays, one write per route, and only while a route is refused.
func (r *routes) apply(ctx context.Context, keys []string, add bool) (map[string]error, error) {
	err := r.write(ctx, keys, add)
	if err != nil && (len(keys) == 1 || statusOf(err) != http.StatusBadRequest) {
		return nil, err
	}
	out := make(map[string]error, len(keys))
	for _, k := range keys {
		if err != nil {
			out[k] = r.write(ctx, []string{k}, add)
		} else {
			out[k] = nil
		}
	}
	return out, nil
}

// write adds or removes routes in one router write.
func (r *routes) write(ctx context.Context, keys []string, add bool) error {
	want := make([]routers.Route, len(keys))
	for i, k := range keys {
		want[i] = parseRouteKey(k)
	}
	atomic, err := r.hasAtomic(ctx)
	if err != nil {
		return err
	}
	if !atomic {
		return r.readModifyWrite(ctx, want, add)
	}
	opts := extraroutes.Opts{Routes: &want}
	if add {
		return extraroutes.Add(ctx, r.api.network, r.routerID, opts).Err
	}
	return extraroutes.Remove(ctx, r.api.network, r.routerID, opts).Err
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
		// Neutron keeps a pair's text as given: another spelling of the
		// same IPv6 prefix is the same pair to us.
		same := func(ap ports.AddressPair) bool { return samePrefix(ap.IPAddress, cidr) }
		has := slices.ContainsFunc(p.AllowedAddressPairs, same)
		if has == add {
			return ports.UpdateOpts{}, false
		}
		pairs := slices.DeleteFunc(slices.Clone(p.AllowedAddressPairs), same)
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
