package gce

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"regexp"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/iterator"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/naming"
)

// routes implements cloudprovider.Routes with next-hop-instance routes in
// the nodes' network, described routeDescription as upstream marks them,
// so the cluster's routes are one filtered listing and others' routes are
// never touched. They are named "k8s-<clusterID>-<node>-<hash>", or, on a
// cluster switched from the upstream GCE CCM (upstreamClusterName set),
// as upstream names them (newRouteName), so that CCM, started again,
// finds them too.
type routes struct {
	cfg       *Section
	clusterID string
	api       *clients
	in        *instances
}

var _ cloudprovider.Routes = (*routes)(nil)

// routeDescription marks a pod route, upstream's word for it.
const routeDescription = "k8s-node-route"

// routePrefix starts every route name of the cluster.
func (r *routes) routePrefix() string { return "k8s-" + naming.Alnum(r.clusterID, 20) + "-" }

// routeName names the route of a Node's pod CIDR: stable for the pair, so
// a retried create finds its first try.
func (r *routes) routeName(node types.NodeName, cidr string) string {
	sum := sha256.Sum256([]byte(string(node) + "/" + cidr))
	return r.routePrefix() + naming.Alnum(string(node), 20) + "-" + hex.EncodeToString(sum[:5])
}

// upstreamRoutePrefix starts the names of the upstream GCE CCM's routes
// for the cluster: its --cluster-name cut to 26 characters and "-"
// (cloud-provider-gcp providers/gce/gce_routes.go truncateClusterName,
// CreateRoute names "<that>-<node UID>"); "" without upstreamClusterName.
func (r *routes) upstreamRoutePrefix() string {
	name := r.cfg.UpstreamClusterName
	if name == "" {
		return ""
	}
	if len(name) > 26 {
		name = name[:26]
	}
	return name + "-"
}

// ListRoutes lists the cluster's pod routes, this manager's and, with
// upstreamClusterName, the upstream CCM's: one filtered listing either way.
func (r *routes) ListRoutes(ctx context.Context, _ string) ([]*cloudprovider.Route, error) {
	names := regexp.QuoteMeta(r.routePrefix())
	if up := r.upstreamRoutePrefix(); up != "" {
		names = "(" + names + "|" + regexp.QuoteMeta(up) + ")"
	}
	filter := fmt.Sprintf(`(name eq "%s.*") (description eq "%s")`, names, routeDescription)
	it := r.api.routes.List(ctx, &computepb.ListRoutesRequest{Project: r.cfg.NetworkProjectID, Filter: proto.String(filter)}, r.api.retry)
	var out []*cloudprovider.Route
	for {
		rt, err := it.Next()
		if err == iterator.Done {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("list routes: %w", err)
		}
		if !sameLink(rt.GetNetwork(), r.cfg.networkURL()) {
			continue
		}
		out = append(out, &cloudprovider.Route{
			Name:            rt.GetName(),
			TargetNode:      types.NodeName(lastSegment(rt.GetNextHopInstance())),
			DestinationCIDR: routeDestination(rt.GetDestRange()),
			// A route whose instance is gone shows a warning and no
			// longer forwards: the route controller replaces it.
			Blackhole: rt.GetNextHopInstance() == "",
		})
	}
}

// routeDestination is a route's destRange as the route controller
// compares it: with the Node's spec.podCIDRs entry, as a string
// (k8s.io/cloud-provider controllers/route/route_controller.go:602
// getRouteAction, and shouldDeleteRoute, :367-380). Pod CIDRs are written
// in Go's canonical form (the node IPAM controllers format them with
// net.IPNet.String, and the apiserver warns on any other spelling), so an
// IPv6 range is given in that form (RFC 5952: lower case, the longest run
// of zero groups as "::"), however Compute Engine spells it back (it
// writes a forwarding rule's IPv6 range with every group written out;
// [unverified] for routes): a spelling that differs would make the
// controller create the route again (a conflict, ignored) and delete the
// one it listed. An IPv4 range, which has one spelling, and anything that
// does not parse, are passed as they are. The AWS backend canonicalises
// the same way (canonicalRouteCIDR); Neutron keeps the text a route was
// made with, which the OpenStack backend passes back.
func routeDestination(destRange string) string {
	p, err := netip.ParsePrefix(destRange)
	if err != nil || !p.Addr().Is6() {
		return destRange
	}
	return p.Masked().String()
}

// newRouteName names a new route of the Node's pod CIDR. On a switched
// cluster it is upstream's name, "<upstreamClusterName[:26]>-<nameHint>",
// nameHint being the Node's UID (k8s.io/cloud-provider
// controllers/route/route_controller.go:441 passes node.UID;
// cloud-provider-gcp providers/gce/gce_routes.go:81 names the route
// truncateClusterName(clusterName)+"-"+nameHint, 105-110 the cut), so
// upstream's ListRoutes (gce_routes.go:48-49: the name prefix, the network
// and the description k8s-node-route) lists it and its route controller
// keeps it for the Node instead of making it again and leaving ours.
// Upstream gives a dual-stack Node's two CIDRs the same name (its second
// create fails as a conflict, gce_routes.go:89-91); here an IPv6 CIDR
// gets "<prefix><UID without dashes>-v6" (62 characters at most), under
// the same prefix, so upstream still lists it. Elsewhere, and without a
// hint, it is routeName. These formats MUST NOT change: a route is found
// again by its name's prefix.
func (r *routes) newRouteName(nameHint string, node types.NodeName, cidr string) string {
	up := r.upstreamRoutePrefix()
	// A cluster name GCE refuses in a route name (upper case, "_") gave
	// upstream no route either: nothing to be found again, ours stands.
	if up == "" || nameHint == "" || !routeNamePrefixRE.MatchString(up) {
		return r.routeName(node, cidr)
	}
	if p, err := netip.ParsePrefix(cidr); err == nil && p.Addr().Is6() {
		return up + strings.ReplaceAll(nameHint, "-", "") + "-v6"
	}
	return up + nameHint
}

// routeNamePrefixRE is the start of a name GCE accepts
// ([a-z]([-a-z0-9]*[a-z0-9])?) ending in "-".
var routeNamePrefixRE = regexp.MustCompile(`^[a-z][-a-z0-9]*-$`)

// CreateRoute routes the pod CIDR to the Node's instance.
func (r *routes) CreateRoute(ctx context.Context, _ string, nameHint string, route *cloudprovider.Route) error {
	inst, err := r.in.Lookup(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: string(route.TargetNode)}})
	if err != nil {
		return fmt.Errorf("route %s to node %s: %w", route.DestinationCIDR, route.TargetNode, err)
	}
	name := r.newRouteName(nameHint, route.TargetNode, route.DestinationCIDR)
	err = waitOp(ctx)(r.api.routes.Insert(ctx, &computepb.InsertRouteRequest{Project: r.cfg.NetworkProjectID, RouteResource: &computepb.Route{
		Name: proto.String(name), Description: proto.String(routeDescription), Network: proto.String(r.cfg.networkURL()),
		DestRange: proto.String(route.DestinationCIDR), Priority: proto.Uint32(1000),
		NextHopInstance: proto.String("projects/" + inst.ref.project + "/zones/" + inst.ref.zone + "/instances/" + inst.ref.name),
	}}, r.api.retry))
	if err != nil && !alreadyExists(err) {
		return fmt.Errorf("create route %s: %w", name, err)
	}
	return nil
}

// DeleteRoute deletes the route; one already gone is fine.
func (r *routes) DeleteRoute(ctx context.Context, _ string, route *cloudprovider.Route) error {
	name := route.Name
	if name == "" {
		name = r.routeName(route.TargetNode, route.DestinationCIDR)
	}
	err := waitOp(ctx)(r.api.routes.Delete(ctx, &computepb.DeleteRouteRequest{Project: r.cfg.NetworkProjectID, Route: name}, r.api.retry))
	if err = ignoreNotFound(err); err != nil {
		return fmt.Errorf("delete route %s: %w", name, err)
	}
	return nil
}
