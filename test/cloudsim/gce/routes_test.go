package gce

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/protobuf/proto"
)

// The route controller's view: routes named "<cluster>-<hash>" pointing
// at instances, listed by a name filter, next hops as instance links.
func TestRoutesToInstances(t *testing.T) {
	env := newTestEnv(t, Config{PageSize: 2})
	fx := env.emu.Fixture()
	rc := env.routes(t)
	env.launch(t, InstanceSpec{Name: "node-0", Zone: "a"})
	env.launch(t, InstanceSpec{Name: "node-1", Zone: "b", NoIPForward: true})
	for i, hop := range []string{
		"zones/us-central1-a/instances/node-0",                                  // partial path
		LinkBase + "projects/test-project/zones/us-central1-b/instances/node-1", // full link
		"https://compute.googleapis.com/compute/v1/projects/test-project/zones/us-central1-a/instances/node-0",
	} {
		op, err := rc.Insert(t.Context(), &computepb.InsertRouteRequest{Project: env.project, RouteResource: &computepb.Route{
			Name: proto.String(fmt.Sprintf("kubernetes-%d", i)), Network: proto.String(fx.NetworkURL),
			DestRange: proto.String(fmt.Sprintf("10.64.%d.0/24", i)), NextHopInstance: proto.String(hop),
			Description: proto.String("k8s-node-route"),
		}})
		if err != nil {
			t.Fatalf("route via %s: %v", hop, err)
		}
		if err := op.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	var names, hops []string
	it := rc.List(t.Context(), &computepb.ListRoutesRequest{Project: env.project, Filter: proto.String(`name eq "kubernetes-.*"`)})
	for {
		r, err := it.Next()
		if err == iterator.Done {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, r.GetName())
		hops = append(hops, r.GetNextHopInstance())
	}
	if !slices.Equal(names, []string{"kubernetes-0", "kubernetes-1", "kubernetes-2"}) ||
		hops[0] != LinkBase+"projects/test-project/zones/us-central1-a/instances/node-0" || hops[2] != hops[0] {
		t.Errorf("routes %v via %v", names, hops)
	}
	if n := env.srv.CallCount("compute:Routes.List"); n != 2 {
		t.Errorf("%d list calls for 3 routes in pages of 2", n)
	}

	// The system routes are listed too, as on GCE.
	all, err := rc.List(t.Context(), &computepb.ListRoutesRequest{Project: env.project, Filter: proto.String(`destRange = "0.0.0.0/0"`)}).Next()
	if err != nil || all.GetName() != fx.DefaultRouteName || all.GetNextHopGateway() != LinkBase+"projects/test-project/global/gateways/default-internet-gateway" {
		t.Errorf("default route %v, %v", all, err)
	}

	get := func(name string) *computepb.Route {
		r, err := rc.Get(t.Context(), &computepb.GetRouteRequest{Project: env.project, Route: name})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if w := get("kubernetes-1").GetWarnings(); len(w) != 1 || w[0].GetCode() != "NEXT_HOP_CANNOT_IP_FORWARD" {
		t.Errorf("route to an instance that cannot forward: %v", w)
	}
	// The next hop goes; the route stays, with a warning.
	if err := env.emu.Terminate("node-0"); err != nil {
		t.Fatal(err)
	}
	if r := get("kubernetes-0"); len(r.GetWarnings()) != 1 || r.GetWarnings()[0].GetCode() != "NEXT_HOP_INSTANCE_NOT_FOUND" {
		t.Errorf("route to a deleted instance: %v", r)
	}

	if r, ok := env.emu.Route("kubernetes-0"); !ok || len(r.GetWarnings()) != 1 || len(env.emu.Routes()) != 5 {
		t.Errorf("admin read %v", r)
	}
	if i, ok := env.emu.InstanceResource("node-1"); !ok || i.GetCanIpForward() {
		t.Errorf("instance resource %v", i)
	}

	// A route to an instance that does not exist is refused.
	_, err = rc.Insert(t.Context(), &computepb.InsertRouteRequest{Project: env.project, RouteResource: &computepb.Route{
		Name: proto.String("kubernetes-9"), Network: proto.String(fx.NetworkURL), DestRange: proto.String("10.64.9.0/24"),
		NextHopInstance: proto.String("zones/us-central1-a/instances/node-0"),
	}})
	wantCode(t, err, http.StatusNotFound, "notFound")
	for name, r := range map[string]*computepb.Route{
		"no next hop":   {Name: proto.String("x"), Network: proto.String(fx.NetworkURL), DestRange: proto.String("10.1.0.0/16")},
		"two next hops": {Name: proto.String("x"), Network: proto.String(fx.NetworkURL), DestRange: proto.String("10.1.0.0/16"), NextHopIp: proto.String("10.128.0.5"), NextHopGateway: proto.String("global/gateways/default-internet-gateway")},
		"bad range":     {Name: proto.String("x"), Network: proto.String(fx.NetworkURL), DestRange: proto.String("10.1.0.0"), NextHopIp: proto.String("10.128.0.5")},
	} {
		_, err := rc.Insert(t.Context(), &computepb.InsertRouteRequest{Project: env.project, RouteResource: r})
		if code, _ := apiCode(t, err); code != http.StatusBadRequest {
			t.Errorf("%s: %d", name, code)
		}
	}
	// GCE's subnetwork route cannot be deleted.
	_, err = rc.Delete(t.Context(), &computepb.DeleteRouteRequest{Project: env.project, Route: fx.SubnetRouteName})
	wantCode(t, err, http.StatusBadRequest, "invalid")
}

// TestRoutesIPv6: an IPv6 destination to an instance is accepted and
// returned compressed (RFC 5952), however it was written, also to a
// destRange filter; a malformed one is 400 invalid naming the field; a
// second route of the same name is 409 alreadyExists.
func TestRoutesIPv6(t *testing.T) {
	env := newTestEnv(t, Config{})
	fx := env.emu.Fixture()
	rc := env.routes(t)
	env.launch(t, InstanceSpec{Name: "node-0", Zone: "a", StackType: StackDual})
	insert := func(name, dest string) error {
		op, err := rc.Insert(t.Context(), &computepb.InsertRouteRequest{Project: env.project, RouteResource: &computepb.Route{
			Name: proto.String(name), Network: proto.String(fx.NetworkURL), DestRange: proto.String(dest),
			NextHopInstance: proto.String("zones/us-central1-a/instances/node-0"), Description: proto.String("k8s-node-route"),
		}})
		if err != nil {
			return err
		}
		return op.Wait(t.Context())
	}
	for name, dest := range map[string]string{
		"v6-expanded": "FD00:0010:0244:0001:0000:0000:0000:0000/64",
		"v6-short":    "fd00:10:244:2::/64",
	} {
		if err := insert(name, dest); err != nil {
			t.Fatalf("%s %s: %v", name, dest, err)
		}
	}
	r, err := rc.Get(t.Context(), &computepb.GetRouteRequest{Project: env.project, Route: "v6-expanded"})
	if err != nil || r.GetDestRange() != "fd00:10:244:1::/64" || r.GetNextHopInstance() != LinkBase+"projects/test-project/zones/us-central1-a/instances/node-0" {
		t.Errorf("route %v, %v; want destRange fd00:10:244:1::/64", r, err)
	}
	it := rc.List(t.Context(), &computepb.ListRoutesRequest{Project: env.project, Filter: proto.String(`destRange = "fd00:10:244:1::/64"`)})
	if r, err := it.Next(); err != nil || r.GetName() != "v6-expanded" {
		t.Errorf("filtered by the compressed destRange: %v, %v", r, err)
	}
	for _, bad := range []string{"fd00:10:244:1::/129", "fd00::g/64", "fd00:10:244:1::", "fe80::%eth0/64"} {
		err := insert("v6-bad", bad)
		wantCode(t, err, http.StatusBadRequest, "invalid")
		var ge *googleapi.Error
		if errors.As(err, &ge) && !strings.Contains(ge.Message, "'resource.destRange': '"+bad+"'") {
			t.Errorf("%s: message %q", bad, ge.Message)
		}
	}
	wantCode(t, insert("v6-short", "fd00:10:244:3::/64"), http.StatusConflict, "alreadyExists")
}
