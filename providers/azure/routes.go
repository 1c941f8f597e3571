package azure

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/utils/clock"
)

// routes implements cloudprovider.Routes with routeTableName: a route per
// pod CIDR, named after its Node as upstream names them (the Node's name;
// "<node>____<cidr>" for IPv6), next hop the Node's private IP as a
// virtual appliance. Concurrent creates and deletes are coalesced into
// few route table writes (shared.go), each If-Match checked. Routes with
// other next hop types are someone else's and never listed; the route
// controller also leaves alone any route outside the cluster CIDR.
type routes struct {
	cfg *Section
	api *clients
	in  *instances
	rt  *shared[armnetwork.RouteTable]
	// tags are the config's; as upstream's, only for a route table in
	// resourceGroup (azure_routes.go:570-590).
	tags tagger

	// associated records that the route table is on the nodes' subnet,
	// checked once per process.
	assocMu    sync.Mutex
	associated bool
}

var _ cloudprovider.Routes = (*routes)(nil)

// routeNameSep separates a Node's name and its IPv6 CIDR in a route name,
// as upstream writes it.
const routeNameSep = "____"

func newRoutes(api *clients, s *Section, clusterID string, in *instances, clk clock.PassiveClock) *routes {
	r := &routes{cfg: s, api: api, in: in}
	rg, name := s.RouteTableResourceGroup, s.RouteTableName
	if strings.EqualFold(rg, s.ResourceGroup) {
		r.tags = newTagger(s)
	}
	r.rt = newShared("route table "+name, sharedOps[armnetwork.RouteTable]{
		get: func(ctx context.Context) (*armnetwork.RouteTable, bool, error) {
			resp, err := api.routeTables.Get(ctx, rg, name, nil)
			if isNotFound(err) {
				return nil, false, nil
			}
			if err != nil {
				return nil, false, err
			}
			return &resp.RouteTable, true, nil
		},
		put: func(ctx context.Context, v *armnetwork.RouteTable, etag string) (*armnetwork.RouteTable, error) {
			// The table's subnets are set through the subnets.
			v.Properties.Subnets = nil
			p, err := api.routeTables.BeginCreateOrUpdate(withPrecondition(ctx, etag), rg, name, *v, nil)
			if err != nil {
				return nil, err
			}
			resp, err := p.PollUntilDone(ctx, pollOptions)
			if err != nil {
				return nil, err
			}
			return &resp.RouteTable, nil
		},
		etag:  func(v *armnetwork.RouteTable) string { return deref(v.Etag) },
		clone: cloneJSON[armnetwork.RouteTable],
		fresh: func() *armnetwork.RouteTable {
			return &armnetwork.RouteTable{
				Location:   to.Ptr(s.Location),
				Tags:       r.tags.fresh(map[string]string{tagCluster: clusterID}),
				Properties: &armnetwork.RouteTablePropertiesFormat{},
			}
		},
	}, clk)
	return r
}

// routeName is upstream's route name for a Node's pod CIDR.
func routeName(node types.NodeName, cidr string) string {
	if !strings.Contains(cidr, ":") {
		return string(node)
	}
	r := strings.NewReplacer(":", "", "/", "--")
	return string(node) + routeNameSep + r.Replace(cidr)
}

func nodeOfRoute(name string) types.NodeName {
	n, _, _ := strings.Cut(name, routeNameSep)
	return types.NodeName(n)
}

// ListRoutes lists the pod routes: every virtual appliance route of the
// table, its Node read from its name.
func (r *routes) ListRoutes(ctx context.Context, _ string) ([]*cloudprovider.Route, error) {
	rt, found, err := r.rt.current(ctx, true)
	if err != nil || !found || rt.Properties == nil {
		return nil, err
	}
	var out []*cloudprovider.Route
	for _, rr := range rt.Properties.Routes {
		if rr == nil || rr.Properties == nil || deref(rr.Properties.NextHopType) != armnetwork.RouteNextHopTypeVirtualAppliance {
			continue
		}
		out = append(out, &cloudprovider.Route{
			Name:            deref(rr.Name),
			TargetNode:      nodeOfRoute(deref(rr.Name)),
			DestinationCIDR: deref(rr.Properties.AddressPrefix),
		})
	}
	return out, nil
}

// CreateRoute routes route.DestinationCIDR to its Node's private IP.
func (r *routes) CreateRoute(ctx context.Context, _ string, _ string, route *cloudprovider.Route) error {
	ip, err := r.in.nodeIP(ctx, &v1.Node{ObjectMeta: nodeMeta(route.TargetNode)})
	if err != nil {
		return fmt.Errorf("route %s to node %s: %w", route.DestinationCIDR, route.TargetNode, err)
	}
	if err := r.associate(ctx); err != nil {
		return err
	}
	name := routeName(route.TargetNode, route.DestinationCIDR)
	want := &armnetwork.Route{Name: to.Ptr(name), Properties: &armnetwork.RoutePropertiesFormat{
		AddressPrefix:    to.Ptr(route.DestinationCIDR),
		NextHopType:      to.Ptr(armnetwork.RouteNextHopTypeVirtualAppliance),
		NextHopIPAddress: to.Ptr(ip),
	}}
	_, err = r.rt.submit(ctx, true, func(rt *armnetwork.RouteTable) (bool, error) {
		if rt.Properties == nil {
			rt.Properties = &armnetwork.RouteTablePropertiesFormat{}
		}
		// The config's tags ride along with a route write, as upstream's
		// ensureRouteTableTagged.
		tagged := r.tags.reconcile(&rt.Tags, nil)
		for i, cur := range rt.Properties.Routes {
			if cur == nil || !strings.EqualFold(deref(cur.Name), name) {
				continue
			}
			if cur.Properties != nil && deref(cur.Properties.AddressPrefix) == route.DestinationCIDR &&
				deref(cur.Properties.NextHopType) == armnetwork.RouteNextHopTypeVirtualAppliance && deref(cur.Properties.NextHopIPAddress) == ip {
				return tagged, nil
			}
			rt.Properties.Routes[i] = want
			return true, nil
		}
		rt.Properties.Routes = append(rt.Properties.Routes, want)
		return true, nil
	})
	return err
}

// DeleteRoute removes the route; one already gone is fine.
func (r *routes) DeleteRoute(ctx context.Context, _ string, route *cloudprovider.Route) error {
	name := route.Name
	if name == "" {
		name = routeName(route.TargetNode, route.DestinationCIDR)
	}
	_, err := r.rt.submit(ctx, false, func(rt *armnetwork.RouteTable) (bool, error) {
		if rt.Properties == nil {
			return false, nil
		}
		n := len(rt.Properties.Routes)
		rt.Properties.Routes = slices.DeleteFunc(rt.Properties.Routes, func(cur *armnetwork.Route) bool {
			return cur != nil && strings.EqualFold(deref(cur.Name), name)
		})
		return len(rt.Properties.Routes) != n, nil
	})
	return err
}

// associate puts the route table on the nodes' subnet, once: routes do
// nothing on a subnet without it. The subnet is read and written back
// with its ETag, so a concurrent change to it is not lost.
func (r *routes) associate(ctx context.Context) error {
	r.assocMu.Lock()
	defer r.assocMu.Unlock()
	if r.associated {
		return nil
	}
	// The table must exist before a subnet can point at it: a table just
	// made has no ID yet, which is the write's cue.
	rt, err := r.rt.submit(ctx, true, func(rt *armnetwork.RouteTable) (bool, error) { return rt.ID == nil, nil })
	if err != nil {
		return err
	}
	if rt == nil || rt.ID == nil {
		return fmt.Errorf("route table %s: no ID after creating it", r.cfg.RouteTableName)
	}
	rtID := *rt.ID
	rg, vnet, subnet := r.cfg.VnetResourceGroup, r.cfg.VnetName, r.cfg.SubnetName
	for try := 0; try < maxConflicts; try++ {
		resp, err := r.api.subnets.Get(ctx, rg, vnet, subnet, nil)
		if err != nil {
			return fmt.Errorf("get subnet %s/%s/%s: %w", rg, vnet, subnet, err)
		}
		sn := resp.Subnet
		if sn.Properties != nil && sn.Properties.RouteTable != nil && sameID(sn.Properties.RouteTable.ID, &rtID) {
			r.associated = true
			return nil
		}
		if sn.Properties == nil {
			sn.Properties = &armnetwork.SubnetPropertiesFormat{}
		}
		sn.Properties.RouteTable = &armnetwork.RouteTable{ID: to.Ptr(rtID)}
		p, err := r.api.subnets.BeginCreateOrUpdate(withPrecondition(ctx, deref(sn.Etag)), rg, vnet, subnet, sn, nil)
		if err == nil {
			_, err = p.PollUntilDone(ctx, pollOptions)
		}
		if isPreconditionFailed(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("associate route table %s with subnet %s/%s: %w", r.cfg.RouteTableName, vnet, subnet, err)
		}
		r.associated = true
		return nil
	}
	return fmt.Errorf("associate route table %s with subnet %s/%s: the subnet kept changing", r.cfg.RouteTableName, vnet, subnet)
}

func nodeMeta(name types.NodeName) metav1.ObjectMeta { return metav1.ObjectMeta{Name: string(name)} }
