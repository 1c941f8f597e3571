package gce

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/multicloud-ccm/multicloud-ccm/providers/compose"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	gceemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/gce"
)

// TestRoutes: pod CIDR routes to the nodes' instances, listed with one
// filtered call; others' routes (and GCE's own) are never listed or
// touched; deleting a route already gone is fine.
func TestRoutes(t *testing.T) {
	env := newTestEnv(t, gceemu.Config{}, nil)
	ctx := t.Context()
	rt, ok := compose.New(env.cloud.Parts()).Routes()
	if !ok {
		t.Fatal("routes not supported")
	}
	nodes := env.launch(t, cloudsim.InstanceSpec{Name: "rt-0"}, cloudsim.InstanceSpec{Name: "rt-1"}, cloudsim.InstanceSpec{Name: "rt-2"})
	// Someone else's route in the network.
	if err := waitOp(ctx)(env.api.routes.Insert(ctx, &computepb.InsertRouteRequest{Project: env.s.ProjectID, RouteResource: &computepb.Route{
		Name: proto.String("to-appliance"), Network: proto.String(env.s.networkURL()), DestRange: proto.String("192.168.0.0/16"),
		NextHopInstance: proto.String("projects/" + env.s.ProjectID + "/zones/" + env.emu.Config().Zones[0] + "/instances/rt-0"),
	}})); err != nil {
		t.Fatal(err)
	}
	for i, n := range nodes {
		if err := rt.CreateRoute(ctx, "kubernetes", "", &cloudprovider.Route{TargetNode: types.NodeName(n.Name), DestinationCIDR: fmt.Sprintf("10.244.%d.0/24", i)}); err != nil {
			t.Fatal(err)
		}
	}
	env.srv.ResetCalls()
	listed, err := rt.ListRoutes(ctx, "kubernetes")
	if err != nil {
		t.Fatal(err)
	}
	if n := env.srv.CallCount("compute:Routes.List"); n != 1 {
		t.Errorf("%d route listings", n)
	}
	var got []string
	for _, r := range listed {
		got = append(got, string(r.TargetNode)+"="+r.DestinationCIDR)
	}
	slices.Sort(got)
	if fmt.Sprint(got) != "[rt-0=10.244.0.0/24 rt-1=10.244.1.0/24 rt-2=10.244.2.0/24]" {
		t.Errorf("listed %v", got)
	}
	// Creating again is fine (a retried create finds its first try).
	if err := rt.CreateRoute(ctx, "kubernetes", "", &cloudprovider.Route{TargetNode: "rt-0", DestinationCIDR: "10.244.0.0/24"}); err != nil {
		t.Errorf("repeated create: %v", err)
	}
	for _, r := range listed[:2] {
		if err := rt.DeleteRoute(ctx, "kubernetes", r); err != nil {
			t.Fatal(err)
		}
	}
	if err := rt.DeleteRoute(ctx, "kubernetes", listed[0]); err != nil {
		t.Errorf("deleting a route already gone: %v", err)
	}
	listed, _ = rt.ListRoutes(ctx, "kubernetes")
	if len(listed) != 1 {
		t.Errorf("%d routes left, want 1", len(listed))
	}
	if _, err := env.api.routes.Get(ctx, &computepb.GetRouteRequest{Project: env.s.ProjectID, Route: "to-appliance"}); err != nil {
		t.Errorf("someone else's route: %v", err)
	}
}

// TestUpstreamRoutes: with upstreamClusterName, the routes the upstream
// GCE CCM made ("<cluster-name[:26]>-<node UID>", described k8s-node-route)
// are listed with this manager's, in the same one listing, so the route
// controller keeps them for their nodes instead of making them twice;
// without it, and for another cluster's name, they are not.
func TestUpstreamRoutes(t *testing.T) {
	env := newTestEnv(t, gceemu.Config{}, nil)
	ctx := t.Context()
	nodes := env.launch(t, cloudsim.InstanceSpec{Name: "up-0"})
	hop := "projects/" + env.s.ProjectID + "/zones/" + env.emu.Config().Zones[0] + "/instances/" + nodes[0].Name
	for name, desc := range map[string]string{
		"a-very-long-cluster-name-o-6f2b1c3d-1234-4abc-8def-0123456789ab": "k8s-node-route", // the name cut to 26
		"other-cluster-0f2b1c3d-1234-4abc-8def-0123456789ab":              "k8s-node-route",
		"a-very-long-cluster-name-o-manual":                               "made by hand",
	} {
		if err := waitOp(ctx)(env.api.routes.Insert(ctx, &computepb.InsertRouteRequest{Project: env.s.ProjectID, RouteResource: &computepb.Route{
			Name: proto.String(name), Description: proto.String(desc), Network: proto.String(env.s.networkURL()),
			DestRange: proto.String("10.244." + fmt.Sprint(len(name)) + ".0/24"), NextHopInstance: proto.String(hop), Priority: proto.Uint32(1000),
		}})); err != nil {
			t.Fatal(err)
		}
	}
	rt := env.cloud.routes
	if listed, err := rt.ListRoutes(ctx, "kubernetes"); err != nil || len(listed) != 0 {
		t.Fatalf("without upstreamClusterName: %v %v", listed, err)
	}
	env.s.UpstreamClusterName = "a-very-long-cluster-name-over-26"
	env.srv.ResetCalls()
	listed, err := rt.ListRoutes(ctx, "kubernetes")
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0].Name != "a-very-long-cluster-name-o-6f2b1c3d-1234-4abc-8def-0123456789ab" || string(listed[0].TargetNode) != nodes[0].Name {
		t.Errorf("listed %+v, want upstream's route of this cluster only", listed)
	}
	if n := env.srv.CallCount("compute:Routes.List"); n != 1 {
		t.Errorf("%d route listings", n)
	}
}

// TestSwitchedRouteNames: on a cluster switched from the upstream GCE CCM
// (upstreamClusterName), a new route is named and described as upstream's
// CreateRoute makes it, "<name[:26]>-<node UID>" and k8s-node-route
// (cloud-provider-gcp gce_routes.go:79-87), so upstream's ListRoutes
// filter (gce_routes.go:48-49) finds it; an IPv6 CIDR gets a name under
// the same prefix. A route this manager named before the switch
// ("k8s-<cluster>-...") is still listed and deleted with its node, one
// listing for all.
func TestSwitchedRouteNames(t *testing.T) {
	env := newTestEnv(t, gceemu.Config{}, func(s *Section) { s.UpstreamClusterName = "a-very-long-cluster-name-over-26" })
	ctx := t.Context()
	rt := env.cloud.routes
	nodes := env.launch(t, cloudsim.InstanceSpec{Name: "sw-0"}, cloudsim.InstanceSpec{Name: "sw-1"})
	// sw-0's route as this manager named it before the switch.
	old := &cloudprovider.Route{TargetNode: types.NodeName(nodes[0].Name), DestinationCIDR: "10.244.0.0/24"}
	oldName := rt.routeName(old.TargetNode, old.DestinationCIDR)
	if !strings.HasPrefix(oldName, "k8s-kubernetes-sw0-") {
		t.Fatalf("old route name %s", oldName)
	}
	if err := rt.CreateRoute(ctx, "kubernetes", "", old); err != nil {
		t.Fatal(err)
	}
	const uid = "6f2b1c3d-1234-4abc-8def-0123456789ab"
	env.srv.ResetCalls()
	for _, cidr := range []string{"10.244.1.0/24", "fd00:10:244:1::/64"} {
		if err := rt.CreateRoute(ctx, "kubernetes", uid, &cloudprovider.Route{TargetNode: types.NodeName(nodes[1].Name), DestinationCIDR: cidr}); err != nil {
			t.Fatal(err)
		}
	}
	if n := env.srv.CallCount("compute:Routes.Insert"); n != 2 {
		t.Errorf("%d route inserts, want 2", n)
	}
	// Golden: upstream's name exactly; MUST NOT change.
	want := map[string]string{
		"a-very-long-cluster-name-o-6f2b1c3d-1234-4abc-8def-0123456789ab": "10.244.1.0/24",
		"a-very-long-cluster-name-o-6f2b1c3d12344abc8def0123456789ab-v6":  "fd00:10:244:1::/64",
	}
	// Upstream's ListRoutes: name by prefix, network, description.
	it := env.api.routes.List(ctx, &computepb.ListRoutesRequest{Project: env.s.ProjectID,
		Filter: proto.String(`(name eq "a-very-long-cluster-name-o-.*") (description eq "k8s-node-route")`)})
	got := map[string]string{}
	for {
		r, err := it.Next()
		if err != nil {
			break
		}
		if len(r.GetName()) > 63 || !strings.HasSuffix(r.GetNextHopInstance(), "/instances/"+nodes[1].Name) || r.GetPriority() != 1000 || !strings.HasSuffix(r.GetNetwork(), env.s.networkURL()) {
			t.Errorf("route %v", r)
		}
		got[r.GetName()] = r.GetDestRange()
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("upstream's filter finds %v, want %v", got, want)
	}
	env.srv.ResetCalls()
	listed, err := rt.ListRoutes(ctx, "kubernetes")
	if err != nil {
		t.Fatal(err)
	}
	if n := env.srv.CallCount("compute:Routes.List"); n != 1 {
		t.Errorf("%d route listings", n)
	}
	var names []string
	for _, r := range listed {
		names = append(names, r.Name)
	}
	slices.Sort(names)
	if fmt.Sprint(names) != fmt.Sprint([]string{"a-very-long-cluster-name-o-6f2b1c3d-1234-4abc-8def-0123456789ab", "a-very-long-cluster-name-o-6f2b1c3d12344abc8def0123456789ab-v6", oldName}) {
		t.Errorf("listed %v", names)
	}
	for _, r := range listed {
		if err := rt.DeleteRoute(ctx, "kubernetes", r); err != nil {
			t.Fatal(err)
		}
	}
	if left, _ := rt.ListRoutes(ctx, "kubernetes"); len(left) != 0 {
		t.Errorf("left %v", left)
	}
	// A cluster name GCE refuses in a name gave upstream no routes: ours.
	env.s.UpstreamClusterName = "Prod_EU"
	if got := rt.newRouteName(uid, "sw-1", "10.244.1.0/24"); got != rt.routeName("sw-1", "10.244.1.0/24") {
		t.Errorf("route name %s for an invalid cluster name", got)
	}
}

// TestRoutesDualStack: a dual-stack Node's two pod CIDRs, handed over as
// the route controller hands them (the Node's UID as the name hint for
// both), are two routes to its instance, an IPv4 and an IPv6 one, both
// listed again by ListRoutes (one listing) with the CIDRs they were made
// for, and both deleted; on a switched cluster too, where upstream's
// names would clash and ours give the IPv6 route "-v6".
func TestRoutesDualStack(t *testing.T) {
	const uid = "6f2b1c3d-1234-4abc-8def-0123456789ab"
	for name, upstream := range map[string]string{"ours": "", "switched": "kubernetes"} {
		t.Run(name, func(t *testing.T) {
			env := newTestEnv(t, gceemu.Config{}, func(s *Section) { s.UpstreamClusterName = upstream })
			ctx := t.Context()
			rt := env.cloud.routes
			if _, err := env.emu.Launch(gceemu.InstanceSpec{Name: "ds-0", StackType: gceemu.StackDual}); err != nil {
				t.Fatal(err)
			}
			cidrs := []string{"10.244.0.0/24", "fd00:10:244::/64"}
			for _, cidr := range cidrs {
				if err := rt.CreateRoute(ctx, "kubernetes", uid, &cloudprovider.Route{TargetNode: "ds-0", DestinationCIDR: cidr}); err != nil {
					t.Fatalf("create %s: %v", cidr, err)
				}
			}
			env.srv.ResetCalls()
			listed, err := rt.ListRoutes(ctx, "kubernetes")
			if err != nil {
				t.Fatal(err)
			}
			if n := env.srv.CallCount("compute:Routes.List"); n != 1 {
				t.Errorf("%d route listings", n)
			}
			var got, names []string
			for _, r := range listed {
				got = append(got, string(r.TargetNode)+"="+r.DestinationCIDR)
				names = append(names, r.Name)
				if r.Blackhole {
					t.Errorf("route %s is a blackhole", r.Name)
				}
			}
			slices.Sort(got)
			if fmt.Sprint(got) != "[ds-0=10.244.0.0/24 ds-0=fd00:10:244::/64]" {
				t.Errorf("listed %v (%v)", got, names)
			}
			if upstream != "" && !slices.Contains(names, "kubernetes-6f2b1c3d12344abc8def0123456789ab-v6") {
				t.Errorf("switched names %v", names)
			}
			// The controller retries a create it does not see listed: fine.
			if err := rt.CreateRoute(ctx, "kubernetes", uid, &cloudprovider.Route{TargetNode: "ds-0", DestinationCIDR: cidrs[1]}); err != nil {
				t.Errorf("repeated IPv6 create: %v", err)
			}
			for _, r := range listed {
				if err := rt.DeleteRoute(ctx, "kubernetes", r); err != nil {
					t.Fatal(err)
				}
			}
			if left, err := rt.ListRoutes(ctx, "kubernetes"); err != nil || len(left) != 0 {
				t.Errorf("left %v, %v", left, err)
			}
		})
	}
}

// TestRouteDestination: an IPv6 destRange however spelt is listed in
// the form the Node's pod CIDR is written in.
func TestRouteDestination(t *testing.T) {
	for in, want := range map[string]string{
		"10.244.1.0/24":                  "10.244.1.0/24",
		"fd00:10:244:1::/64":             "fd00:10:244:1::/64",
		"fd00:10:244:1:0:0:0:0/64":       "fd00:10:244:1::/64",
		"FD00:0010:0244:0001:0:0:0:0/64": "fd00:10:244:1::/64",
		"not a range":                    "not a range",
	} {
		if got := routeDestination(in); got != want {
			t.Errorf("routeDestination(%q) = %q, want %q", in, got, want)
		}
	}
}
