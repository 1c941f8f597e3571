package openstack_test

import (
	"net/http"
	"slices"
	"strconv"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/extraroutes"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"

	cloudsimopenstack "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

func routeList(rs ...string) []routers.Route {
	var out []routers.Route
	for i := 0; i+1 < len(rs); i += 2 {
		out = append(out, routers.Route{DestinationCIDR: rs[i], NextHop: rs[i+1]})
	}
	return out
}

func TestNeutronRouters(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	c := e.networkClient(t)
	pages, err := routers.List(c, routers.ListOpts{}).AllPages(ctx(t))
	ok(t, err)
	rs, err := routers.ExtractRouters(pages)
	ok(t, err)
	if len(rs) != 1 {
		t.Fatalf("routers %+v", rs)
	}
	r := rs[0]
	if r.ID != e.fx.RouterID || r.Name != e.fx.RouterName || r.Status != "ACTIVE" || r.GatewayInfo.NetworkID != e.fx.ExternalNetworkID ||
		len(r.GatewayInfo.ExternalFixedIPs) != 1 || r.GatewayInfo.ExternalFixedIPs[0].SubnetID != e.fx.ExternalSubnetID ||
		r.GatewayInfo.EnableSNAT == nil || !*r.GatewayInfo.EnableSNAT || r.Routes == nil || len(r.Routes) != 0 {
		t.Errorf("router %+v", r)
	}
	for _, opts := range []routers.ListOpts{{Name: e.fx.RouterName}, {ID: r.ID}, {ProjectID: e.fx.ProjectID}} {
		pages, err := routers.List(c, opts).AllPages(ctx(t))
		ok(t, err)
		if rs, _ := routers.ExtractRouters(pages); len(rs) != 1 {
			t.Errorf("%+v: %d routers", opts, len(rs))
		}
	}
	_, err = routers.Get(ctx(t), c, "nope").Extract()
	wantNeutronErr(t, err, http.StatusNotFound, "RouterNotFound", "=Router nope could not be found")

	// PUT routes replaces them all; the nexthop must be on a subnet the
	// router has a port on (the node subnet, or the external one).
	routes := routeList("10.100.1.0/24", "10.0.0.11", "10.100.2.0/24", "10.0.0.12")
	up, err := routers.Update(ctx(t), c, r.ID, routers.UpdateOpts{Routes: &routes, RevisionNumber: &r.RevisionNumber}).Extract()
	ok(t, err)
	if !slices.Equal(up.Routes, routes) || up.RevisionNumber != r.RevisionNumber+1 {
		t.Errorf("updated %+v", up)
	}
	// A stale If-Match loses.
	_, err = routers.Update(ctx(t), c, r.ID, routers.UpdateOpts{Routes: &routes, RevisionNumber: &r.RevisionNumber}).Extract()
	wantNeutronErr(t, err, http.StatusPreconditionFailed, "RevisionNumberConstraintFailed",
		"=Constrained to "+strconv.Itoa(r.RevisionNumber)+", but current revision is "+strconv.Itoa(up.RevisionNumber))

	for _, tc := range []struct {
		name     string
		routes   []routers.Route
		status   int
		typ, msg string
	}{
		{"nexthop elsewhere", routeList("10.100.3.0/24", "192.168.0.1"), 400, "InvalidRoutes",
			"=Invalid format for routes: [{'destination': '10.100.3.0/24', 'nexthop': '192.168.0.1'}], the nexthop is not connected with router"},
		{"nexthop is the router", routeList("10.100.3.0/24", "10.0.0.1"), 400, "InvalidRoutes", "the nexthop is used by router"},
		{"host bits", routeList("10.100.3.1/24", "10.0.0.11"), 400, "HTTPBadRequest", "=Invalid input for routes. Reason: '10.100.3.1/24' is not a valid CIDR."},
		{"bad nexthop", routeList("10.100.3.0/24", "10.0.0.256"), 400, "HTTPBadRequest", "=Invalid input for routes. Reason: '10.0.0.256' is not a valid IP address."},
		{"duplicate", routeList("10.100.3.0/24", "10.0.0.11", "10.100.3.0/24", "10.0.0.11"), 400, "HTTPBadRequest",
			"=Invalid input for routes. Reason: Duplicate hostroute '{'destination': '10.100.3.0/24', 'nexthop': '10.0.0.11'}'."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := routers.Update(ctx(t), c, r.ID, routers.UpdateOpts{Routes: &tc.routes}).Extract()
			wantNeutronErr(t, err, tc.status, tc.typ, tc.msg)
		})
	}
	got, err := e.emu.RouterRoutes(r.ID)
	ok(t, err)
	if len(got) != 2 || got[0].Destination != "10.100.1.0/24" || got[1].NextHop != "10.0.0.12" {
		t.Errorf("routes after failed updates: %+v", got)
	}

	// add_extraroutes and remove_extraroutes are atomic and idempotent.
	e.srv.ResetCalls()
	add := routeList("10.100.2.0/24", "10.0.0.12", "10.100.3.0/24", "10.0.0.13")
	added, err := extraroutes.Add(ctx(t), c, r.ID, extraroutes.Opts{Routes: &add}).Extract()
	ok(t, err)
	want := routeList("10.100.1.0/24", "10.0.0.11", "10.100.2.0/24", "10.0.0.12", "10.100.3.0/24", "10.0.0.13")
	if !slices.Equal(added.Routes, want) || added.RevisionNumber != up.RevisionNumber+1 {
		t.Errorf("added: %+v", added)
	}
	again, err := extraroutes.Add(ctx(t), c, r.ID, extraroutes.Opts{Routes: &add}).Extract()
	ok(t, err)
	if !slices.Equal(again.Routes, want) || again.RevisionNumber != added.RevisionNumber {
		t.Errorf("adding again changed the router: %+v", again)
	}
	remove := routeList("10.100.1.0/24", "10.0.0.11", "10.100.9.0/24", "10.0.0.19")
	removed, err := extraroutes.Remove(ctx(t), c, r.ID, extraroutes.Opts{Routes: &remove}).Extract()
	ok(t, err)
	if !slices.Equal(removed.Routes, want[1:]) {
		t.Errorf("removed: %+v", removed.Routes)
	}
	removed, err = extraroutes.Remove(ctx(t), c, r.ID, extraroutes.Opts{Routes: &remove}).Extract()
	ok(t, err)
	if !slices.Equal(removed.Routes, want[1:]) || removed.RevisionNumber != again.RevisionNumber+1 {
		t.Errorf("removing again: %+v", removed)
	}
	if e.srv.CallCount("neutron:AddExtraRoutes") != 2 || e.srv.CallCount("neutron:RemoveExtraRoutes") != 2 {
		t.Errorf("calls %d/%d", e.srv.CallCount("neutron:AddExtraRoutes"), e.srv.CallCount("neutron:RemoveExtraRoutes"))
	}
	// An added route is validated with the others.
	bad := routeList("10.100.4.0/24", "172.16.0.1")
	_, err = extraroutes.Add(ctx(t), c, r.ID, extraroutes.Opts{Routes: &bad}).Extract()
	wantNeutronErr(t, err, http.StatusBadRequest, "InvalidRoutes", "the nexthop is not connected with router")
	_, err = extraroutes.Add(ctx(t), c, "nope", extraroutes.Opts{Routes: &bad}).Extract()
	wantNeutronErr(t, err, http.StatusNotFound, "RouterNotFound", "Router nope could not be found")
	// And so is If-Match.
	tok := e.token(t)
	body := `{"router": {"routes": [{"destination": "10.100.5.0/24", "nexthop": "10.0.0.15"}]}}`
	if w := e.do(t, "PUT", "/network/v2.0/routers/"+r.ID+"/add_extraroutes", body, "X-Auth-Token", tok, "If-Match", "revision_number=1"); w.status != 412 {
		t.Errorf("stale add: %d %s", w.status, w.raw)
	}

	// Name and description; the gateway stays as it is.
	name, desc := "edge", "the edge"
	up, err = routers.Update(ctx(t), c, r.ID, routers.UpdateOpts{Name: name, Description: &desc}).Extract()
	ok(t, err)
	if up.Name != name || up.Description != desc || len(up.Routes) != 2 {
		t.Errorf("renamed %+v", up)
	}
	if w := e.do(t, "PUT", "/network/v2.0/routers/"+r.ID, `{"router": {"external_gateway_info": {"network_id": "`+e.fx.NetworkID+`"}}}`, "X-Auth-Token", tok); w.status != 400 {
		t.Errorf("gateway change: %d %s", w.status, w.raw)
	}
}

func TestNeutronRouterLimits(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{Neutron: cloudsimopenstack.NeutronConfig{RouterRouteQuota: 2}})
	c := e.networkClient(t)
	routes := routeList("10.100.1.0/24", "10.0.0.11", "10.100.2.0/24", "10.0.0.12", "10.100.3.0/24", "10.0.0.13")
	_, err := extraroutes.Add(ctx(t), c, e.fx.RouterID, extraroutes.Opts{Routes: &routes}).Extract()
	wantNeutronErr(t, err, http.StatusConflict, "OverQuota", "=Quota exceeded for resources: ['router_route'].")

	// A second router through the admin API, on its own network.
	n, err := e.emu.CreateNetwork(cloudsimopenstack.NetworkSpec{Name: "pods", CIDR: "10.20.0.0/24"})
	ok(t, err)
	r2, err := e.emu.CreateRouter(cloudsimopenstack.RouterSpec{Name: "r2", SubnetIDs: []string{n.SubnetID}})
	ok(t, err)
	if r2.ExternalNetworkID != "" || !slices.Equal(r2.InterfaceSubnetIDs, []string{n.SubnetID}) {
		t.Errorf("second router %+v", r2)
	}
	ok2 := routeList("10.30.0.0/16", "10.20.0.5")
	got, err := extraroutes.Add(ctx(t), c, r2.ID, extraroutes.Opts{Routes: &ok2}).Extract()
	ok(t, err)
	if len(got.Routes) != 1 || got.GatewayInfo.NetworkID != "" {
		t.Errorf("second router: %+v", got)
	}
	if _, err := e.emu.RouterRoutes("nope"); err == nil {
		t.Error("routes of an unknown router")
	}

	// Without extraroute-atomic the member actions do not exist.
	e = newEnv(t, cloudsimopenstack.Config{Neutron: cloudsimopenstack.NeutronConfig{DisabledExtensions: []string{"extraroute-atomic"}}})
	c = e.networkClient(t)
	_, err = extraroutes.Add(ctx(t), c, e.fx.RouterID, extraroutes.Opts{Routes: &ok2}).Extract()
	wantNeutronErr(t, err, http.StatusNotFound, "HTTPNotFound", "=The resource could not be found.")
	_, err = extraroutes.Remove(ctx(t), c, e.fx.RouterID, extraroutes.Opts{Routes: &ok2}).Extract()
	wantNeutronErr(t, err, http.StatusNotFound, "HTTPNotFound", "")
	if e.srv.CallCount("neutron:Unsupported") != 2 {
		t.Errorf("%d unsupported calls", e.srv.CallCount("neutron:Unsupported"))
	}
	// PUT routes still works.
	routes = routeList("10.100.1.0/24", "10.0.0.11")
	_, err = routers.Update(ctx(t), c, e.fx.RouterID, routers.UpdateOpts{Routes: &routes}).Extract()
	ok(t, err)
}
