package gce

import (
	"net/http"
	"net/netip"
	"testing"
	"time"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

func (env *testEnv) addresses(t *testing.T) *compute.AddressesClient {
	return client(t, env, compute.NewAddressesRESTClient)
}

func (env *testEnv) insertAddress(t *testing.T, a *computepb.Address) (*compute.Operation, error) {
	t.Helper()
	return env.addresses(t).Insert(t.Context(), &computepb.InsertAddressRequest{Project: env.project, Region: env.region, AddressResource: a})
}

func (env *testEnv) getAddress(t *testing.T, name string) *computepb.Address {
	t.Helper()
	a, err := env.addresses(t).Get(t.Context(), &computepb.GetAddressRequest{Project: env.project, Region: env.region, Address: name})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestAddressReserve(t *testing.T) {
	env := newTestEnv(t, Config{OperationDelay: 100 * time.Millisecond})
	fx := env.emu.Fixture()
	op, err := env.insertAddress(t, &computepb.Address{Name: proto.String("lb-ip")})
	if err != nil {
		t.Fatal(err)
	}
	if op.Proto().GetRegion() != LinkBase+"projects/test-project/regions/us-central1" {
		t.Errorf("operation %v", op.Proto())
	}
	if err := op.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	a := env.getAddress(t, "lb-ip")
	ip, err := netip.ParseAddr(a.GetAddress())
	if err != nil || !netip.MustParsePrefix(fx.ExternalCIDR).Contains(ip) || a.GetStatus() != "RESERVED" ||
		a.GetAddressType() != "EXTERNAL" || a.GetNetworkTier() != "PREMIUM" || len(a.GetUsers()) != 0 ||
		a.GetRegion() != LinkBase+"projects/test-project/regions/us-central1" {
		t.Errorf("address %v", a)
	}

	// An internal address from the subnetwork, chosen or picked.
	op, err = env.insertAddress(t, &computepb.Address{Name: proto.String("ilb-ip"), AddressType: proto.String("INTERNAL"),
		Subnetwork: proto.String("regions/us-central1/subnetworks/" + fx.SubnetworkName), Address: proto.String("10.128.0.50")})
	if err != nil || op.Wait(t.Context()) != nil {
		t.Fatal(err)
	}
	if a := env.getAddress(t, "ilb-ip"); a.GetAddress() != "10.128.0.50" || a.GetSubnetwork() != fx.SubnetworkURL || a.GetPurpose() != "GCE_ENDPOINT" {
		t.Errorf("internal address %v", a)
	}
	// The same address again: the operation fails, as GCE's does.
	op, err = env.insertAddress(t, &computepb.Address{Name: proto.String("ilb-ip2"), AddressType: proto.String("INTERNAL"),
		Subnetwork: proto.String(fx.SubnetworkURL), Address: proto.String("10.128.0.50")})
	if err != nil {
		t.Fatal(err)
	}
	wantCodeOnly(t, op.Wait(t.Context()), http.StatusBadRequest)
	if code := op.Proto().GetError().GetErrors()[0].GetCode(); code != "IP_IN_USE_BY_ANOTHER_RESOURCE" {
		t.Errorf("error code %s", code)
	}
	_, err = env.addresses(t).Get(t.Context(), &computepb.GetAddressRequest{Project: env.project, Region: env.region, Address: "ilb-ip2"})
	wantCode(t, err, http.StatusNotFound, "notFound")
	// Outside the subnetwork, and an internal address without one.
	_, err = env.insertAddress(t, &computepb.Address{Name: proto.String("x"), AddressType: proto.String("INTERNAL"),
		Subnetwork: proto.String(fx.SubnetworkURL), Address: proto.String("10.200.0.5")})
	wantCode(t, err, http.StatusBadRequest, "invalid")
	_, err = env.insertAddress(t, &computepb.Address{Name: proto.String("x"), AddressType: proto.String("INTERNAL")})
	wantCode(t, err, http.StatusBadRequest, "required")
	_, err = env.insertAddress(t, &computepb.Address{Name: proto.String("lb-ip")})
	wantCode(t, err, http.StatusConflict, "alreadyExists")

	// aggregatedList keys the region.
	pair, err := env.addresses(t).AggregatedList(t.Context(), &computepb.AggregatedListAddressesRequest{Project: env.project}).Next()
	if err != nil || pair.Key != "regions/us-central1" || len(pair.Value.GetAddresses()) != 2 {
		t.Errorf("aggregated %v %v", pair, err)
	}

	// Deleting releases the address for others.
	op, err = env.addresses(t).Delete(t.Context(), &computepb.DeleteAddressRequest{Project: env.project, Region: env.region, Address: "ilb-ip"})
	if err != nil || op.Wait(t.Context()) != nil {
		t.Fatal(err)
	}
	op, err = env.insertAddress(t, &computepb.Address{Name: proto.String("ilb-ip3"), AddressType: proto.String("INTERNAL"),
		Subnetwork: proto.String(fx.SubnetworkURL), Address: proto.String("10.128.0.50")})
	if err != nil || op.Wait(t.Context()) != nil {
		t.Fatalf("reusing a released address: %v", err)
	}
}

// Promoting an instance's ephemeral address: the address is IN_USE by
// the instance and cannot be deleted until the instance lets it go.
func TestAddressInUse(t *testing.T) {
	env := newTestEnv(t, Config{})
	inst := env.launch(t, InstanceSpec{Name: "node-0", ExternalIP: true})
	op, err := env.insertAddress(t, &computepb.Address{Name: proto.String("static"), Address: proto.String(inst.ExternalIP)})
	if err != nil || op.Wait(t.Context()) != nil {
		t.Fatal(err)
	}
	a := env.getAddress(t, "static")
	if a.GetStatus() != "IN_USE" || len(a.GetUsers()) != 1 || a.GetUsers()[0] != inst.SelfLink {
		t.Errorf("promoted address %v", a)
	}
	if got, ok := env.emu.Address("static"); !ok || got.GetStatus() != "IN_USE" || len(env.emu.Addresses()) != 1 {
		t.Errorf("admin read %v", got)
	}
	it := env.addresses(t).List(t.Context(), &computepb.ListAddressesRequest{Project: env.project, Region: env.region, Filter: proto.String(`status = IN_USE`)})
	if got, err := it.Next(); err != nil || got.GetName() != "static" {
		t.Errorf("filtered on status: %v %v", got, err)
	}
	_, err = env.addresses(t).Delete(t.Context(), &computepb.DeleteAddressRequest{Project: env.project, Region: env.region, Address: "static"})
	wantCode(t, err, http.StatusBadRequest, "resourceInUseByAnotherResource")

	// Stopped, the instance keeps a static address.
	if err := env.emu.Stop("node-0"); err != nil {
		t.Fatal(err)
	}
	if info, _ := env.emu.Instance("node-0"); info.ExternalIP != inst.ExternalIP {
		t.Errorf("stopped instance lost its static address: %+v", info)
	}
	if err := env.emu.Terminate("node-0"); err != nil {
		t.Fatal(err)
	}
	if a := env.getAddress(t, "static"); a.GetStatus() != "RESERVED" || a.GetAddress() != inst.ExternalIP {
		t.Errorf("after the instance went: %v", a)
	}
	op, err = env.addresses(t).Delete(t.Context(), &computepb.DeleteAddressRequest{Project: env.project, Region: env.region, Address: "static"})
	if err != nil || op.Wait(t.Context()) != nil {
		t.Fatal(err)
	}
	if rs := env.srv.Resources(); len(rs) != 4 {
		t.Errorf("left behind %v", rs)
	}
}
