package openstack

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	cloudprovider "k8s.io/cloud-provider"

	osemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

func newRoutesEnv(t *testing.T, cfg osemu.Config) (*testEnv, *routes, []string) {
	t.Helper()
	cfg.Neutron.RouterRouteQuota = -1
	env := newTestEnv(t, cfg, nil)
	env.s.Routes.RouterID = env.fx.RouterID
	r := newRoutes(env.api, env.s, env.cloud.instances)
	ids := env.launch(t, osemu.LaunchSpec{Count: 6, Name: "rt"})
	env.srv.ResetCalls()
	return env, r, ids
}

// TestRoutesCoalesced: six routes created at once cost one atomic
// add_extraroutes; each node port lets its pod CIDR through; the routes
// list back with their Nodes; routes of others stay; deletes are one
// remove_extraroutes.
func TestRoutesCoalesced(t *testing.T) {
	for _, atomic := range []bool{true, false} {
		t.Run(fmt.Sprintf("atomic=%v", atomic), func(t *testing.T) {
			cfg := osemu.Config{}
			if !atomic {
				cfg.Neutron.DisabledExtensions = []string{"extraroute-atomic"}
			}
			env, r, ids := newRoutesEnv(t, cfg)
			ctx := t.Context()
			// Someone else's route through the router's own subnet.
			foreign := osemu.RouteInfo{Destination: "192.168.77.0/24", NextHop: "10.0.0.250"}
			if err := r.readModifyWrite(ctx, toRouters([]osemu.RouteInfo{foreign}), true); err != nil {
				t.Fatal(err)
			}
			env.srv.ResetCalls()

			var wg sync.WaitGroup
			for i := range ids {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rt := &cloudprovider.Route{TargetNode: types.NodeName(fmt.Sprintf("rt-%d", i)), DestinationCIDR: fmt.Sprintf("10.244.%d.0/24", i)}
					if err := r.CreateRoute(ctx, "", "", rt); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			calls := env.srv.Calls()
			writes := calls["neutron:AddExtraRoutes"] + calls["neutron:UpdateRouter"]
			if writes > 2 || (atomic && calls["neutron:UpdateRouter"] != 0) || (!atomic && calls["neutron:AddExtraRoutes"] != 0) {
				t.Errorf("calls %v: want the six routes in one or two router writes", calls)
			}
			listed, err := r.ListRoutes(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(listed) != len(ids) {
				t.Fatalf("listed %d routes, want %d (the foreign one left out): %+v", len(listed), len(ids), listed)
			}
			for i, id := range ids {
				info, _ := env.emu.Server(id)
				cidr := fmt.Sprintf("10.244.%d.0/24", i)
				idx := slices.IndexFunc(listed, func(rt *cloudprovider.Route) bool { return rt.DestinationCIDR == cidr })
				if idx < 0 || string(listed[idx].TargetNode) != info.Name {
					t.Errorf("route %s: %+v", cidr, listed)
				}
				p, _ := env.emu.Port(info.PortID)
				if !slices.ContainsFunc(p.AllowedAddressPairs, func(a osemu.AddressPairInfo) bool { return a.IPAddress == cidr }) {
					t.Errorf("port of %s lacks the pair %s: %+v", info.Name, cidr, p.AllowedAddressPairs)
				}
			}
			env.srv.ResetCalls()
			for _, rt := range listed {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := r.DeleteRoute(ctx, "", rt); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			left, err := env.emu.RouterRoutes(env.fx.RouterID)
			if err != nil {
				t.Fatal(err)
			}
			if len(left) != 1 || left[0] != foreign {
				t.Errorf("routes left %+v, want only the foreign one", left)
			}
			for _, id := range ids {
				info, _ := env.emu.Server(id)
				if p, _ := env.emu.Port(info.PortID); len(p.AllowedAddressPairs) != 0 {
					t.Errorf("port of %s keeps pairs %+v", info.Name, p.AllowedAddressPairs)
				}
			}
		})
	}
}

func toRouters(in []osemu.RouteInfo) []routers.Route {
	out := make([]routers.Route, len(in))
	for i, r := range in {
		out[i] = routers.Route{DestinationCIDR: r.Destination, NextHop: r.NextHop}
	}
	return out
}

// TestRoutesDualStack: a dual-stack Node's two pod CIDRs become two
// extra routes, each via the server's address of its family, with an
// allowed address pair each on the port holding that address; both list
// back with their Node, and delete cleanly, with and without
// extraroute-atomic.
func TestRoutesDualStack(t *testing.T) {
	for _, atomic := range []bool{true, false} {
		t.Run(fmt.Sprintf("atomic=%v", atomic), func(t *testing.T) {
			cfg := osemu.Config{NodeIPv6CIDR: "fd00:10::/64", NodeIPv6Mode: "slaac"}
			if !atomic {
				cfg.Neutron.DisabledExtensions = []string{"extraroute-atomic"}
			}
			env, r, ids := newRoutesEnv(t, cfg)
			ctx := t.Context()
			cidrs := func(i int) [2]string {
				return [2]string{fmt.Sprintf("10.244.%d.0/24", i), fmt.Sprintf("fd00:244:%d::/64", i)}
			}
			var wg sync.WaitGroup
			for i := range ids {
				for _, c := range cidrs(i) {
					wg.Go(func() {
						rt := &cloudprovider.Route{TargetNode: types.NodeName(fmt.Sprintf("rt-%d", i)), DestinationCIDR: c}
						if err := r.CreateRoute(ctx, "", "", rt); err != nil {
							t.Error(err)
						}
					})
				}
			}
			wg.Wait()
			var want []osemu.RouteInfo
			for i, id := range ids {
				info, _ := env.emu.Server(id)
				c := cidrs(i)
				want = append(want, osemu.RouteInfo{Destination: c[0], NextHop: info.PrivateIP}, osemu.RouteInfo{Destination: c[1], NextHop: info.PrivateIPv6})
				p, _ := env.emu.Port(info.PortID)
				var pairs []string
				for _, a := range p.AllowedAddressPairs {
					pairs = append(pairs, a.IPAddress)
				}
				slices.Sort(pairs)
				if !slices.Equal(pairs, []string{c[0], c[1]}) {
					t.Errorf("port of %s has pairs %v, want %v", info.Name, pairs, c)
				}
			}
			got, err := env.emu.RouterRoutes(env.fx.RouterID)
			if err != nil {
				t.Fatal(err)
			}
			byDst := func(a, b osemu.RouteInfo) int { return strings.Compare(a.Destination, b.Destination) }
			slices.SortFunc(got, byDst)
			slices.SortFunc(want, byDst)
			if !slices.Equal(got, want) {
				t.Errorf("router routes\n got %+v\nwant %+v", got, want)
			}

			listed, err := r.ListRoutes(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(listed) != 2*len(ids) {
				t.Fatalf("listed %d routes, want %d: %+v", len(listed), 2*len(ids), listed)
			}
			for i := range ids {
				for _, c := range cidrs(i) {
					idx := slices.IndexFunc(listed, func(rt *cloudprovider.Route) bool { return rt.DestinationCIDR == c })
					if idx < 0 || string(listed[idx].TargetNode) != fmt.Sprintf("rt-%d", i) {
						t.Errorf("route %s not listed with its Node: %+v", c, listed)
					}
				}
			}
			for _, rt := range listed {
				wg.Go(func() {
					if err := r.DeleteRoute(ctx, "", rt); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			if left, _ := env.emu.RouterRoutes(env.fx.RouterID); len(left) != 0 {
				t.Errorf("routes left %+v", left)
			}
			for _, id := range ids {
				info, _ := env.emu.Server(id)
				if p, _ := env.emu.Port(info.PortID); len(p.AllowedAddressPairs) != 0 {
					t.Errorf("port of %s keeps pairs %+v", info.Name, p.AllowedAddressPairs)
				}
			}
		})
	}
}

// TestRoutesIPv6Refused: an IPv6 pod CIDR of a Node whose server has no
// IPv6 address (or whose IPv6 addresses are configured away) is an
// error naming the family, and nothing is written; a router without an
// interface on the IPv6 subnet makes Neutron refuse the next hop.
func TestRoutesIPv6Refused(t *testing.T) {
	rt := &cloudprovider.Route{TargetNode: "rt-0", DestinationCIDR: "fd00:244:0::/64"}
	t.Run("no IPv6 address", func(t *testing.T) {
		env, r, _ := newRoutesEnv(t, osemu.Config{})
		err := r.CreateRoute(t.Context(), "", "", rt)
		if err == nil || !strings.Contains(err.Error(), "no fixed IPv6 address") {
			t.Errorf("CreateRoute: %v", err)
		}
		if calls := env.srv.Calls(); calls["neutron:AddExtraRoutes"]+calls["neutron:UpdatePort"] != 0 {
			t.Errorf("calls %v", calls)
		}
	})
	t.Run("ipv6SupportDisabled", func(t *testing.T) {
		cfg := osemu.Config{NodeIPv6CIDR: "fd00:10::/64", NodeIPv6Mode: "slaac", Neutron: osemu.NeutronConfig{RouterRouteQuota: -1}}
		env := newTestEnv(t, cfg, func(s *Section) { s.Networking.IPv6SupportDisabled = true })
		env.s.Routes.RouterID = env.fx.RouterID
		r := newRoutes(env.api, env.s, env.cloud.instances)
		env.launch(t, osemu.LaunchSpec{Name: "rt-0"})
		if err := r.CreateRoute(t.Context(), "", "", rt); err == nil || !strings.Contains(err.Error(), "no fixed IPv6 address") {
			t.Errorf("CreateRoute: %v", err)
		}
	})
	// The route controller creates a dual-stack Node's two routes at
	// once, which go to Neutron in one write: the refused IPv6 route
	// fails alone, and the IPv4 route (and other Nodes') is made.
	for _, atomic := range []bool{true, false} {
		t.Run(fmt.Sprintf("router not on the IPv6 subnet, atomic=%v", atomic), func(t *testing.T) {
			cfg := osemu.Config{NodeIPv6CIDR: "fd00:10::/64", NodeIPv6Mode: "slaac", Neutron: osemu.NeutronConfig{RouterRouteQuota: -1}}
			if !atomic {
				cfg.Neutron.DisabledExtensions = []string{"extraroute-atomic"}
			}
			env := newTestEnv(t, cfg, nil)
			other, err := env.emu.CreateRouter(osemu.RouterSpec{Name: "v4-only", SubnetIDs: []string{env.fx.SubnetID}})
			if err != nil {
				t.Fatal(err)
			}
			env.s.Routes.RouterID = other.ID
			r := newRoutes(env.api, env.s, env.cloud.instances)
			env.launch(t, osemu.LaunchSpec{Count: 2, Name: "rt"})
			errs := make([]error, 4)
			var wg sync.WaitGroup
			for i := range errs {
				wg.Go(func() {
					dst := fmt.Sprintf("10.244.%d.0/24", i/2)
					if i%2 == 1 {
						dst = fmt.Sprintf("fd00:244:%d::/64", i/2)
					}
					errs[i] = r.CreateRoute(t.Context(), "", "", &cloudprovider.Route{TargetNode: types.NodeName(fmt.Sprintf("rt-%d", i/2)), DestinationCIDR: dst})
				})
			}
			wg.Wait()
			for i, err := range errs {
				if i%2 == 0 && err != nil {
					t.Errorf("IPv4 route %d: %v", i/2, err)
				}
				if i%2 == 1 && (err == nil || !strings.Contains(err.Error(), "the nexthop is not connected with router")) {
					t.Errorf("IPv6 route %d: %v", i/2, err)
				}
			}
			if got, _ := env.emu.RouterRoutes(other.ID); len(got) != 2 || strings.Contains(got[0].Destination+got[1].Destination, ":") {
				t.Errorf("routes %+v, want the two IPv4 ones", got)
			}
			// One write of both, whatever the timing above was.
			info, _ := env.emu.Server(env.emu.Servers()[0].ID)
			v4, v6 := routeKey("10.244.9.0/24", info.PrivateIP), routeKey("fd00:244:9::/64", info.PrivateIPv6)
			res, err := r.apply(t.Context(), []string{v4, v6}, true)
			if err != nil || res[v4] != nil || res[v6] == nil {
				t.Errorf("apply: %v, %v", res, err)
			}
		})
	}
}

// TestRoutesNextHopFromNodeStatus: with two fixed IPv4 addresses, the
// route goes via the one the Node's status names (the kubelet's
// --node-ip chose it), as upstream's does; a status address the server
// does not have is not trusted, and the server's first is used.
func TestRoutesNextHopFromNodeStatus(t *testing.T) {
	cfg := osemu.Config{Neutron: osemu.NeutronConfig{RouterRouteQuota: -1}}
	env := newTestEnv(t, cfg, nil)
	storage, err := env.emu.CreateNetwork(osemu.NetworkSpec{Name: "storage", CIDR: "10.20.0.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.emu.AddRouterInterface(env.fx.RouterID, storage.SubnetID); err != nil {
		t.Fatal(err)
	}
	env.s.Routes.RouterID = env.fx.RouterID
	r := newRoutes(env.api, env.s, env.cloud.instances)
	ids := env.launch(t, osemu.LaunchSpec{Count: 2, Name: "nic", ExtraSubnetIDs: []string{storage.SubnetID}})
	second := func(id string) string {
		for _, p := range env.emu.DevicePorts(id) {
			if p.SubnetID == storage.SubnetID {
				return p.FixedIP
			}
		}
		t.Fatalf("server %s has no storage port", id)
		return ""
	}
	info0, _ := env.emu.Server(ids[0])
	node := func(name, id string, addrs ...string) *v1.Node {
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{ProviderID: osemu.ProviderID(id)}}
		for _, a := range addrs {
			n.Status.Addresses = append(n.Status.Addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: a})
		}
		return n
	}
	f := informers.NewSharedInformerFactory(fake.NewClientset(
		node("nic-0", ids[0], second(ids[0])),
		// Another server's address: not this Node's to route to.
		node("nic-1", ids[1], info0.PrivateIP),
	), 0)
	env.cloud.instances.Nodes.SetInformers(f)
	f.Start(t.Context().Done())
	f.WaitForCacheSync(t.Context().Done())

	info1, _ := env.emu.Server(ids[1])
	for i, want := range []string{second(ids[0]), info1.PrivateIP} {
		dst := fmt.Sprintf("10.244.%d.0/24", i)
		if err := r.CreateRoute(t.Context(), "", "", &cloudprovider.Route{TargetNode: types.NodeName(fmt.Sprintf("nic-%d", i)), DestinationCIDR: dst}); err != nil {
			t.Fatal(err)
		}
		got, _ := env.emu.RouterRoutes(env.fx.RouterID)
		if !slices.Contains(got, osemu.RouteInfo{Destination: dst, NextHop: want}) {
			t.Errorf("routes %+v, want %s via %s", got, dst, want)
		}
	}
	listed, err := r.ListRoutes(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 2 || listed[0].TargetNode != "nic-0" || listed[1].TargetNode != "nic-1" {
		t.Errorf("listed %+v", listed)
	}
}
