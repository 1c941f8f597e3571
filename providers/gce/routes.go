package gce

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"

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
// the nodes' network, named "<clusterID>-<hash>" and described
// routeDescription as upstream marks them, so the cluster's routes are
// one filtered listing and others' routes are never touched.
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
			DestinationCIDR: rt.GetDestRange(),
			// A route whose instance is gone shows a warning and no
			// longer forwards: the route controller replaces it.
			Blackhole: rt.GetNextHopInstance() == "",
		})
	}
}

// CreateRoute routes the pod CIDR to the Node's instance.
func (r *routes) CreateRoute(ctx context.Context, _ string, _ string, route *cloudprovider.Route) error {
	inst, err := r.in.Lookup(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: string(route.TargetNode)}})
	if err != nil {
		return fmt.Errorf("route %s to node %s: %w", route.DestinationCIDR, route.TargetNode, err)
	}
	name := r.routeName(route.TargetNode, route.DestinationCIDR)
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
