package aws

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/flight"
)

// createTablesMaxAge is how old the route tables CreateRoute decides from
// may be. The route controller lists routes and then creates one per Node
// concurrently; sharing one view keeps N creates from costing N
// DescribeRouteTables calls. A stale view is safe: a create that collides
// with a route EC2 already has is re-decided from a fresh view.
const createTablesMaxAge = 5 * time.Second

// routes implements cloudprovider.Routes with pod-CIDR routes to instances
// in the selected VPC route tables: the ones configured by ID and, with
// discovery, the VPC's tables tagged with the cluster tag. Routes to
// anything but an instance (gateways, NAT, peering, ...) belong to someone
// else and are never listed, replaced or deleted.
type routes struct {
	ec2      *ec2Calls
	in       *instances
	clock    clock.PassiveClock
	tableIDs []string
	discover bool

	fetch flight.Group[[]ec2types.RouteTable]

	mu       sync.Mutex
	tables   []ec2types.RouteTable
	tablesAt time.Time
}

var _ cloudprovider.Routes = (*routes)(nil)

func newRoutes(api *clients, s *Section, clusterID string, in *instances) *routes {
	return &routes{
		ec2:      api.ec2,
		in:       in,
		clock:    clock.RealClock{},
		tableIDs: slices.Clone(s.RouteTables.IDs),
		discover: s.RouteTables.Discover,
	}
}

// ListRoutes lists the pod-CIDR routes in the selected tables. A CIDR is
// reported with its target Node only when every table routes it to the same
// instance; when the tables disagree or some lack it, it is left out so the
// route controller calls CreateRoute, which makes them agree. Blackhole
// routes are reported as such, so the route controller deletes them.
func (r *routes) ListRoutes(ctx context.Context, clusterName string) ([]*cloudprovider.Route, error) {
	tables, err := r.routeTables(ctx, 0)
	if err != nil {
		return nil, err
	}
	type cidrState struct {
		blackhole bool
		targets   map[string]int // instance ID -> tables routing the CIDR to it
	}
	byCIDR := map[string]*cidrState{}
	var order []string
	for _, t := range tables {
		for _, rt := range t.Routes {
			cidr := routeCIDR(rt)
			if cidr == "" || !isOwnRoute(rt) {
				continue
			}
			st := byCIDR[cidr]
			if st == nil {
				st = &cidrState{targets: map[string]int{}}
				byCIDR[cidr] = st
				order = append(order, cidr)
			}
			if rt.State == ec2types.RouteStateBlackhole {
				st.blackhole = true
			} else {
				st.targets[aws.ToString(rt.InstanceId)]++
			}
		}
	}

	var ids []string
	for _, st := range byCIDR {
		for id := range st.targets {
			ids = append(ids, id)
		}
	}
	live, err := r.in.byIDs(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("list routes: %w", err)
	}

	logger := klog.FromContext(ctx)
	slices.Sort(order)
	var out []*cloudprovider.Route
	for _, cidr := range order {
		st := byCIDR[cidr]
		if st.blackhole {
			out = append(out, &cloudprovider.Route{Name: cidr, DestinationCIDR: cidr, Blackhole: true})
			continue
		}
		if len(st.targets) != 1 {
			logger.Info("Route tables disagree about a pod CIDR; leaving it for CreateRoute to repair", "cidr", cidr, "targets", st.targets)
			continue
		}
		for id, n := range st.targets {
			if n != len(tables) {
				logger.Info("Pod CIDR route is missing from some route tables; leaving it for CreateRoute to repair", "cidr", cidr, "instanceID", id, "tables", n, "of", len(tables))
				continue
			}
			// An instance EC2 no longer knows gets no Node name, which makes
			// the route controller delete the route if it is in the
			// cluster CIDR. A live one is named after the Node whose
			// providerID names it (kubelets that set their own providerID
			// may pick any name), else its private DNS name.
			node := ""
			if inst, ok := live[id]; ok {
				node = r.in.nodeName(inst)
			}
			out = append(out, &cloudprovider.Route{Name: cidr, TargetNode: types.NodeName(node), DestinationCIDR: cidr})
		}
	}
	return out, nil
}

// CreateRoute routes the CIDR to the Node's instance in every selected
// table. An identical route is success; a blackhole route for the CIDR is
// replaced; so is a route to another of the cluster's instances (the CIDR
// moved); a route to anything else is an error and stays.
func (r *routes) CreateRoute(ctx context.Context, clusterName, nameHint string, route *cloudprovider.Route) error {
	cidr, err := canonicalRouteCIDR(route.DestinationCIDR)
	if err != nil {
		return err
	}
	id, err := r.in.KeyForNode(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: string(route.TargetNode)}})
	if err != nil {
		return fmt.Errorf("create route %s to node %s: %w", cidr, route.TargetNode, err)
	}
	inst, found, err := r.in.lookupID(ctx, id)
	if err != nil {
		return fmt.Errorf("create route %s to node %s: %w", cidr, route.TargetNode, err)
	}
	if !found {
		return fmt.Errorf("create route %s to node %s: instance %s: %w", cidr, route.TargetNode, id, cloudprovider.InstanceNotFound)
	}
	tables, err := r.routeTables(ctx, createTablesMaxAge)
	if err != nil {
		return err
	}
	if len(tables) == 0 {
		return fmt.Errorf("create route %s to node %s: no route table selected (routeTables in the cloud-config)", cidr, route.TargetNode)
	}
	var errs []error
	for _, t := range tables {
		if err := r.ensureRoute(ctx, t, cidr, id); err != nil {
			errs = append(errs, err)
		}
	}
	if err := r.disableSourceDestCheck(ctx, inst); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// ensureRoute makes table t route cidr to instance id.
func (r *routes) ensureRoute(ctx context.Context, t ec2types.RouteTable, cidr, id string) error {
	tableID := aws.ToString(t.RouteTableId)
	logger := klog.FromContext(ctx).WithValues("routeTable", tableID, "cidr", cidr, "instanceID", id)
	for attempt := 0; ; attempt++ {
		existing, ok := findRouteFor(t, cidr)
		var err error
		switch {
		case !ok:
			err = r.createRoute(ctx, tableID, cidr, id)
		case !isOwnRoute(existing):
			return fmt.Errorf("route table %s already routes %s to %s, which is not an instance; leaving it", tableID, cidr, routeTarget(existing))
		case existing.State == ec2types.RouteStateBlackhole:
			logger.Info("Replacing blackhole route")
			if err = r.deleteRoute(ctx, tableID, cidr); err == nil {
				err = r.createRoute(ctx, tableID, cidr, id)
			}
		case aws.ToString(existing.InstanceId) == id:
			return nil
		default:
			other := aws.ToString(existing.InstanceId)
			known, lerr := r.in.byIDs(ctx, []string{other})
			if lerr != nil {
				return fmt.Errorf("route table %s routes %s to %s: %w", tableID, cidr, other, lerr)
			}
			if !r.in.isClusterInstance(known[other]) {
				return fmt.Errorf("route table %s already routes %s to instance %s, which is not in cluster %s; leaving it", tableID, cidr, other, r.in.clusterID)
			}
			// Delete and create rather than ReplaceRoute: the old target is
			// wrong either way, and the pair works on every EC2-compatible
			// API, including the emulator the tests use.
			logger.Info("Moving pod CIDR route from another cluster instance", "from", other)
			if err = r.deleteRoute(ctx, tableID, cidr); err == nil {
				err = r.createRoute(ctx, tableID, cidr, id)
			}
		}
		if err == nil {
			return nil
		}
		// Our view of the table was stale: decide again from a fresh one.
		if attempt > 0 || !slices.Contains([]string{"RouteAlreadyExists", "InvalidRoute.NotFound"}, ec2ErrorCode(err)) {
			return err
		}
		fresh, ferr := r.routeTables(ctx, 0)
		if ferr != nil {
			return ferr
		}
		idx := slices.IndexFunc(fresh, func(f ec2types.RouteTable) bool { return aws.ToString(f.RouteTableId) == tableID })
		if idx < 0 {
			return err
		}
		t = fresh[idx]
	}
}

// DeleteRoute removes the route from every selected table, but only where
// it still is what ListRoutes reported: a blackhole, or a route to the
// Node's instance. A route that meanwhile moved to another Node stays.
func (r *routes) DeleteRoute(ctx context.Context, clusterName string, route *cloudprovider.Route) error {
	cidr, err := canonicalRouteCIDR(route.DestinationCIDR)
	if err != nil {
		return err
	}
	tables, err := r.routeTables(ctx, 0)
	if err != nil {
		return err
	}
	var errs []error
	for _, t := range tables {
		tableID := aws.ToString(t.RouteTableId)
		existing, ok := findRouteFor(t, cidr)
		if !ok || !isOwnRoute(existing) {
			continue
		}
		match, err := r.matches(ctx, existing, route)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !match {
			klog.FromContext(ctx).Info("Route changed since it was listed; leaving it", "routeTable", tableID, "cidr", cidr, "target", routeTarget(existing))
			continue
		}
		if err := r.deleteRoute(ctx, tableID, cidr); err != nil && ec2ErrorCode(err) != "InvalidRoute.NotFound" {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// matches reports whether the table's route is the one the route
// controller asks to delete.
func (r *routes) matches(ctx context.Context, existing ec2types.Route, route *cloudprovider.Route) (bool, error) {
	if existing.State == ec2types.RouteStateBlackhole {
		return route.Blackhole, nil
	}
	if route.Blackhole {
		return false, nil
	}
	id := aws.ToString(existing.InstanceId)
	if nodeID, ok := r.in.Nodes.InstanceID(string(route.TargetNode)); ok {
		return nodeID == id, nil
	}
	if string(route.TargetNode) == id || instanceIDFromNodeName(string(route.TargetNode)) == id {
		return true, nil
	}
	live, err := r.in.byIDs(ctx, []string{id})
	if err != nil {
		return false, fmt.Errorf("delete route %s: %w", route.DestinationCIDR, err)
	}
	inst, ok := live[id]
	if !ok {
		// ListRoutes reported it without a Node for this reason.
		return route.TargetNode == "", nil
	}
	return r.in.nodeName(inst) == string(route.TargetNode), nil
}
