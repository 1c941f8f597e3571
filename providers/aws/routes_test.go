package aws

import (
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/multicloud-ccm/multicloud-ccm/config"
	"github.com/multicloud-ccm/multicloud-ccm/providers/compose"
	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

// routesEnv is a testEnv with routes over the given selection and two
// cluster instances, returned as Node names and instance IDs.
func routesEnv(t *testing.T, sel func(fx cloudsimaws.Fixture, s *Section)) (*testEnv, *routes, []types.NodeName, []string) {
	t.Helper()
	env := newTestEnv(t, nil)
	sel(env.fx, env.sec)
	r := newRoutes(env.api, env.sec, testCluster, env.in)
	ids := env.launch(t, cloudsimaws.LaunchSpec{Count: 2})
	names := []types.NodeName{types.NodeName(env.info(t, ids[0]).PrivateDNSName), types.NodeName(env.info(t, ids[1]).PrivateDNSName)}
	return env, r, names, ids
}

// tableRoutes is what the emulator holds: table -> CIDR -> "cidr via target".
func (e *testEnv) tableRoutes() map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, res := range e.emu.Resources() {
		if res.Kind != cloudsimaws.KindRoute {
			continue
		}
		if out[res.Parent] == nil {
			out[res.Parent] = map[string]string{}
		}
		cidr, _, _ := strings.Cut(res.Name, " via ")
		out[res.Parent][cidr] = res.Name
	}
	return out
}

func listRoutes(t *testing.T, r *routes) []cloudprovider.Route {
	t.Helper()
	list, err := r.ListRoutes(t.Context(), testCluster)
	if err != nil {
		t.Fatal(err)
	}
	var out []cloudprovider.Route
	for _, rt := range list {
		out = append(out, *rt)
	}
	return out
}

func TestRoutesSupportedOnlyWithRouteTables(t *testing.T) {
	t.Setenv("AWS_CA_BUNDLE", "") // see newTestEnv
	for _, tt := range []struct {
		sel  RouteTableSelection
		want bool
	}{
		{RouteTableSelection{}, false},
		{RouteTableSelection{IDs: []string{"rtb-0123456789abcdef0"}}, true},
		{RouteTableSelection{Discover: true}, true},
	} {
		s := &Section{Region: testRegion, RouteTables: tt.sel, Credentials: Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "x"}}
		s.SetDefaults()
		c, err := New(t.Context(), &config.CloudConfig{ClusterID: testCluster, Section: s})
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := compose.New(c.Parts()).Routes(); ok != tt.want || (ok && r == nil) {
			t.Errorf("Routes() with %+v = %v, %v; want supported=%v", tt.sel, r, ok, tt.want)
		}
	}
}

func TestRoutesLifecycle(t *testing.T) {
	env, r, nodes, ids := routesEnv(t, func(fx cloudsimaws.Fixture, s *Section) { s.RouteTables.IDs = []string{fx.RouteTableID} })
	table := env.fx.RouteTableID
	ctx := t.Context()
	create := func(cidr string, node types.NodeName) error {
		return r.CreateRoute(ctx, testCluster, "uid", &cloudprovider.Route{DestinationCIDR: cidr, TargetNode: node})
	}

	// Routes that are not to instances belong to someone else.
	for _, cidr := range []string{"192.168.0.0/16", "10.244.9.0/24"} {
		if _, err := env.api.ec2.CreateRoute(ctx, &ec2.CreateRouteInput{
			RouteTableId: aws.String(table), DestinationCidrBlock: aws.String(cidr), GatewayId: aws.String("igw-0123456789abcdef0"),
		}); err != nil {
			t.Fatal(err)
		}
	}
	if got := listRoutes(t, r); len(got) != 0 {
		t.Errorf("ListRoutes with only foreign routes = %+v, want none", got)
	}

	if err := create("10.244.1.0/24", nodes[0]); err != nil {
		t.Fatal(err)
	}
	want := []cloudprovider.Route{{Name: "10.244.1.0/24", DestinationCIDR: "10.244.1.0/24", TargetNode: nodes[0]}}
	if got := listRoutes(t, r); !reflect.DeepEqual(got, want) {
		t.Errorf("ListRoutes = %+v, want %+v", got, want)
	}

	t.Run("create is idempotent", func(t *testing.T) {
		before := env.srv.CallCount("ec2:CreateRoute")
		if err := create("10.244.1.0/24", nodes[0]); err != nil {
			t.Fatal(err)
		}
		if n := env.srv.CallCount("ec2:CreateRoute") - before; n != 0 {
			t.Errorf("repeated CreateRoute made %d CreateRoute calls", n)
		}
	})

	t.Run("foreign routes are untouched", func(t *testing.T) {
		if err := create("10.244.9.0/24", nodes[1]); err == nil {
			t.Error("CreateRoute over a gateway route: want an error")
		}
		if err := r.DeleteRoute(ctx, testCluster, &cloudprovider.Route{DestinationCIDR: "10.244.9.0/24", TargetNode: nodes[1]}); err != nil {
			t.Error(err)
		}
		got := env.tableRoutes()[table]
		for _, cidr := range []string{"192.168.0.0/16", "10.244.9.0/24"} {
			if !strings.Contains(got[cidr], "igw-") {
				t.Errorf("foreign route %s is now %q", cidr, got[cidr])
			}
		}
	})

	t.Run("a CIDR moves between cluster instances", func(t *testing.T) {
		if err := create("10.244.2.0/24", nodes[0]); err != nil {
			t.Fatal(err)
		}
		// The route controller deletes the old route and creates the new
		// one concurrently; if the create wins, the delete must not undo it.
		if err := create("10.244.2.0/24", nodes[1]); err != nil {
			t.Fatal(err)
		}
		if err := r.DeleteRoute(ctx, testCluster, &cloudprovider.Route{DestinationCIDR: "10.244.2.0/24", TargetNode: nodes[0]}); err != nil {
			t.Fatal(err)
		}
		if got := env.tableRoutes()[table]["10.244.2.0/24"]; !strings.Contains(got, ids[1]) {
			t.Errorf("moved route = %q, want it via %s", got, ids[1])
		}
	})

	t.Run("blackhole routes are reported and replaced", func(t *testing.T) {
		if err := env.emu.Terminate(ids[0]); err != nil {
			t.Fatal(err)
		}
		want := []cloudprovider.Route{
			{Name: "10.244.1.0/24", DestinationCIDR: "10.244.1.0/24", Blackhole: true},
			{Name: "10.244.2.0/24", DestinationCIDR: "10.244.2.0/24", TargetNode: nodes[1]},
		}
		if got := listRoutes(t, r); !reflect.DeepEqual(got, want) {
			t.Errorf("ListRoutes = %+v, want %+v", got, want)
		}
		if err := create("10.244.1.0/24", nodes[1]); err != nil {
			t.Fatal(err)
		}
		if got := env.tableRoutes()[table]["10.244.1.0/24"]; !strings.Contains(got, ids[1]) {
			t.Errorf("route over the blackhole = %q, want it via %s", got, ids[1])
		}
	})

	t.Run("delete", func(t *testing.T) {
		for range 2 { // the second time there is nothing to delete
			for _, cidr := range []string{"10.244.1.0/24", "10.244.2.0/24"} {
				if err := r.DeleteRoute(ctx, testCluster, &cloudprovider.Route{DestinationCIDR: cidr, TargetNode: nodes[1]}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if got := listRoutes(t, r); len(got) != 0 {
			t.Errorf("ListRoutes after delete = %+v", got)
		}
		if got := env.tableRoutes()[table]; len(got) != 4 { // the two local ones (IPv4, IPv6), and the two foreign routes
			t.Errorf("table holds %v", got)
		}
	})

	t.Run("a blackhole is deleted", func(t *testing.T) {
		if err := create("10.244.3.0/24", nodes[1]); err != nil {
			t.Fatal(err)
		}
		if err := env.emu.Terminate(ids[1]); err != nil {
			t.Fatal(err)
		}
		got := listRoutes(t, r)
		if len(got) != 1 || !got[0].Blackhole {
			t.Fatalf("ListRoutes = %+v, want one blackhole", got)
		}
		if err := r.DeleteRoute(ctx, testCluster, &got[0]); err != nil {
			t.Fatal(err)
		}
		if _, ok := env.tableRoutes()[table]["10.244.3.0/24"]; ok {
			t.Error("blackhole route is still there")
		}
	})
}

// TestRoutesDiscoveredTables: every cluster-tagged table in the VPC gets
// the route, and a table that lost it is repaired.
func TestRoutesDiscoveredTables(t *testing.T) {
	env, r, nodes, ids := routesEnv(t, func(fx cloudsimaws.Fixture, s *Section) { s.RouteTables.Discover = true })
	ctx := t.Context()
	tagged, err := env.emu.CreateRouteTable(env.fx.VPCID, nil, map[string]string{env.fx.ClusterTagKey: "owned"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := env.emu.CreateRouteTable(env.fx.VPCID, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	route := &cloudprovider.Route{DestinationCIDR: "10.244.5.0/24", TargetNode: nodes[0]}
	if err := r.CreateRoute(ctx, testCluster, "uid", route); err != nil {
		t.Fatal(err)
	}
	tables := env.tableRoutes()
	for _, table := range []string{env.fx.RouteTableID, tagged} {
		if !strings.Contains(tables[table]["10.244.5.0/24"], ids[0]) {
			t.Errorf("table %s: route = %q", table, tables[table]["10.244.5.0/24"])
		}
	}
	if _, ok := tables[other]["10.244.5.0/24"]; ok {
		t.Errorf("untagged table %s got the route", other)
	}

	// A table that lost the route (a crash between two tables, a person)
	// makes the CIDR unlisted, so the route controller creates it again.
	if _, err := env.api.ec2.DeleteRoute(ctx, &ec2.DeleteRouteInput{RouteTableId: aws.String(tagged), DestinationCidrBlock: aws.String("10.244.5.0/24")}); err != nil {
		t.Fatal(err)
	}
	if got := listRoutes(t, r); len(got) != 0 {
		t.Errorf("ListRoutes with the route in one of two tables = %+v, want none", got)
	}
	if err := r.CreateRoute(ctx, testCluster, "uid", route); err != nil {
		t.Fatal(err)
	}
	if got := listRoutes(t, r); len(got) != 1 || got[0].TargetNode != nodes[0] {
		t.Errorf("ListRoutes after repair = %+v", got)
	}
	if err := r.DeleteRoute(ctx, testCluster, route); err != nil {
		t.Fatal(err)
	}
	if got := listRoutes(t, r); len(got) != 0 {
		t.Errorf("ListRoutes after delete = %+v", got)
	}
}

// TestRoutesForNodesNamedUnlikeTheirInstance: kubelets that set their own
// providerID may register under any name. The route must still go to that
// Node's instance, and ListRoutes must report it under that Node's name,
// or the route controller would delete and re-create it forever.
func TestRoutesForNodesNamedUnlikeTheirInstance(t *testing.T) {
	env, r, _, ids := routesEnv(t, func(fx cloudsimaws.Fixture, s *Section) { s.RouteTables.IDs = []string{fx.RouteTableID} })
	info := env.info(t, ids[1])
	custom := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "worker-blue-7"},
		Spec:       v1.NodeSpec{ProviderID: providerID(info.Zone, ids[1]), PodCIDR: "10.244.7.0/24"},
	}
	client := fake.NewClientset(custom)
	f := informers.NewSharedInformerFactory(client, 0)
	env.in.Nodes.SetInformers(f)
	f.Start(t.Context().Done())
	f.WaitForCacheSync(t.Context().Done())

	route := &cloudprovider.Route{TargetNode: "worker-blue-7", DestinationCIDR: "10.244.7.0/24"}
	if err := r.CreateRoute(t.Context(), testCluster, "hint", route); err != nil {
		t.Fatalf("CreateRoute to a Node named unlike its instance: %v", err)
	}
	if got := env.tableRoutes()[env.fx.RouteTableID]["10.244.7.0/24"]; got != "10.244.7.0/24 via "+ids[1] {
		t.Fatalf("route = %q, want via %s", got, ids[1])
	}
	want := []cloudprovider.Route{{Name: "10.244.7.0/24", TargetNode: "worker-blue-7", DestinationCIDR: "10.244.7.0/24"}}
	if got := listRoutes(t, r); !reflect.DeepEqual(got, want) {
		t.Errorf("ListRoutes = %+v, want %+v", got, want)
	}
	if err := r.DeleteRoute(t.Context(), testCluster, route); err != nil {
		t.Fatal(err)
	}
	if got := env.tableRoutes()[env.fx.RouteTableID]["10.244.7.0/24"]; got != "" {
		t.Errorf("route left after DeleteRoute: %q", got)
	}
}

// TestUnlistedInstanceIsNotTheClusters: a route to an instance EC2 no
// longer lists (gone between the route listing and the lookup) is left
// alone as not the cluster's, not a panic.
func TestUnlistedInstanceIsNotTheClusters(t *testing.T) {
	in := &instances{}
	if in.isClusterInstance(nil) {
		t.Error("an unlisted instance counted as the cluster's")
	}
	if !in.isClusterInstance(&instance{clusterTagged: true}) {
		t.Error("a tagged instance not counted as the cluster's")
	}
}

// A dual-stack Node's two pod CIDRs get one route each, the IPv6 one
// through DestinationIpv6CidrBlock (upstream sends every CIDR as
// DestinationCidrBlock, which EC2 refuses for IPv6:
// kubernetes/kubernetes#78089); both are listed back for the Node and
// deleted with it.
func TestRoutesDualStack(t *testing.T) {
	env, r, nodes, _ := routesEnv(t, func(fx cloudsimaws.Fixture, s *Section) { s.RouteTables.IDs = []string{fx.RouteTableID} })
	table := env.fx.RouteTableID
	ctx := t.Context()
	cidrs := map[types.NodeName][]string{
		nodes[0]: {"10.244.1.0/24", "fd00:10:244:1::/64"},
		nodes[1]: {"10.244.2.0/24", "fd00:10:244:0002:0::/64"},
	}
	for node, cs := range cidrs {
		for _, c := range cs {
			// The route controller gives both CIDRs the Node's UID as hint.
			if err := r.CreateRoute(ctx, testCluster, "uid-"+string(node), &cloudprovider.Route{DestinationCIDR: c, TargetNode: node}); err != nil {
				t.Fatalf("%s via %s: %v", c, node, err)
			}
		}
	}
	got := map[string]types.NodeName{}
	for _, rt := range listRoutes(t, r) {
		got[rt.DestinationCIDR] = rt.TargetNode
	}
	want := map[string]types.NodeName{
		"10.244.1.0/24": nodes[0], "fd00:10:244:1::/64": nodes[0],
		"10.244.2.0/24": nodes[1], "fd00:10:244:2::/64": nodes[1],
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ListRoutes = %v, want %v", got, want)
	}
	held := env.tableRoutes()[table]
	for c := range want {
		if _, ok := held[c]; !ok {
			t.Errorf("table holds %v, not %s", held, c)
		}
	}
	out, err := env.api.ec2.DescribeRouteTables(ctx, &ec2.DescribeRouteTablesInput{RouteTableIds: []string{table}})
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range out.RouteTables[0].Routes {
		if aws.ToString(rt.InstanceId) != "" && strings.Contains(routeCIDR(rt), ":") && (aws.ToString(rt.DestinationIpv6CidrBlock) == "" || aws.ToString(rt.DestinationCidrBlock) != "") {
			t.Errorf("IPv6 route reported as %+v", rt)
		}
	}
	for c, node := range want {
		if err := r.DeleteRoute(ctx, testCluster, &cloudprovider.Route{DestinationCIDR: c, TargetNode: node}); err != nil {
			t.Fatal(err)
		}
	}
	if got := listRoutes(t, r); len(got) != 0 {
		t.Errorf("after deleting: %+v", got)
	}
}
