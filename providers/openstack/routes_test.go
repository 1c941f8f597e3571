package openstack

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"

	"k8s.io/apimachinery/pkg/types"
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
