package azure

import (
	"net/http"
	"slices"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
)

func nwRoute(prefix, nextHop string) armnetwork.Route {
	return armnetwork.Route{Properties: &armnetwork.RoutePropertiesFormat{
		AddressPrefix:    to.Ptr(prefix),
		NextHopType:      to.Ptr(armnetwork.RouteNextHopTypeVirtualAppliance),
		NextHopIPAddress: to.Ptr(nextHop),
	}}
}

// TestRouteTables: routes through Routes_* and through the table's PUT
// are one set; the table's etag follows its routes; associating it with
// the subnet shows on both sides.
func TestRouteTables(t *testing.T) {
	env := newTestEnv(t, Config{})
	f := env.emu.Fixture()
	ctx := nwCtx(t)
	tables := env.network.NewRouteTablesClient()
	routes := env.network.NewRoutesClient()
	rt, err := tables.Get(ctx, f.RouteTableResourceGroup, f.RouteTableName, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rt.Properties.Routes) != 0 || rt.Properties.Subnets != nil || deref(rt.Properties.DisableBgpRoutePropagation) {
		t.Fatalf("fixture route table %+v", rt.Properties)
	}

	for i, node := range []string{"node-0", "node-1"} {
		p, err := routes.BeginCreateOrUpdate(ctx, f.RouteTableResourceGroup, f.RouteTableName, node,
			nwRoute("10.244."+string(rune('0'+i))+".0/24", "10.240.0."+string(rune('4'+i))), nil)
		r := nwDone(t, p, err).Route
		if deref(r.ID) != f.RouteTableID+"/routes/"+node || deref(r.Type) != "Microsoft.Network/routeTables/routes" || deref(r.Properties.ProvisioningState) != armnetwork.ProvisioningStateSucceeded {
			t.Fatalf("route %s %s %s", deref(r.ID), deref(r.Type), deref(r.Properties.ProvisioningState))
		}
	}
	rt2, _ := tables.Get(ctx, f.RouteTableResourceGroup, f.RouteTableName, nil)
	if len(rt2.Properties.Routes) != 2 || deref(rt2.Etag) == deref(rt.Etag) {
		t.Fatalf("table after two routes: %d routes, etag %s (was %s)", len(rt2.Properties.Routes), deref(rt2.Etag), deref(rt.Etag))
	}
	p, err := routes.BeginCreateOrUpdate(ctx, f.RouteTableResourceGroup, f.RouteTableName, "bad", armnetwork.Route{Properties: &armnetwork.RoutePropertiesFormat{
		AddressPrefix: to.Ptr("10.244.9.0/24"), NextHopType: to.Ptr(armnetwork.RouteNextHopTypeVirtualAppliance),
	}}, nil)
	nwWantErr(t, nwErr(t, p, err), http.StatusBadRequest, "MissingNextHopIpAddress")
	p, err = routes.BeginCreateOrUpdate(ctx, f.RouteTableResourceGroup, f.RouteTableName, "dup", nwRoute("10.244.0.0/24", "10.240.0.9"), nil)
	nwWantErr(t, nwErr(t, p, err), http.StatusBadRequest, "RouteConflict")
	dp, err := routes.BeginDelete(ctx, f.RouteTableResourceGroup, f.RouteTableName, "node-0", nil)
	nwDone(t, dp, err)
	_, err = routes.Get(ctx, f.RouteTableResourceGroup, f.RouteTableName, "node-0", nil)
	nwWantErr(t, err, http.StatusNotFound, "NotFound")

	// The table's PUT replaces the set.
	rt3, _ := tables.Get(ctx, f.RouteTableResourceGroup, f.RouteTableName, nil)
	r := nwRoute("10.244.5.0/24", "10.240.0.8")
	r.Name = to.Ptr("node-5")
	rt3.Properties.Routes = append(rt3.Properties.Routes, &r)
	tp, err := tables.BeginCreateOrUpdate(ctx, f.RouteTableResourceGroup, f.RouteTableName, rt3.RouteTable, nil)
	rt4 := nwDone(t, tp, err).RouteTable
	var names []string
	for pg := routes.NewListPager(f.RouteTableResourceGroup, f.RouteTableName, nil); pg.More(); {
		page, err := pg.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range page.Value {
			names = append(names, deref(v.Name))
		}
	}
	if !slices.Equal(names, []string{"node-1", "node-5"}) || len(rt4.Properties.Routes) != 2 {
		t.Fatalf("routes %v, table shows %d", names, len(rt4.Properties.Routes))
	}
	rt4.Properties.Routes = rt4.Properties.Routes[:1]
	tp, err = tables.BeginCreateOrUpdate(ctx, f.RouteTableResourceGroup, f.RouteTableName, rt4, nil)
	nwDone(t, tp, err)
	if ids := env.emu.ListNetwork("routeTables/routes"); len(ids) != 1 {
		t.Fatalf("routes left %v", ids)
	}

	// Associating the table with the subnet, as a CCM does.
	subnets := env.network.NewSubnetsClient()
	sub, err := subnets.Get(ctx, f.VNetResourceGroup, f.VNetName, f.SubnetName, nil)
	if err != nil {
		t.Fatal(err)
	}
	sub.Properties.RouteTable = &armnetwork.RouteTable{ID: to.Ptr(f.RouteTableID)}
	sp, err := subnets.BeginCreateOrUpdate(ctx, f.VNetResourceGroup, f.VNetName, f.SubnetName, sub.Subnet, nil)
	sub2 := nwDone(t, sp, err).Subnet
	if deref(sub2.Properties.RouteTable.ID) != f.RouteTableID || deref(sub2.Properties.NetworkSecurityGroup.ID) != f.SecurityGroupID {
		t.Fatalf("subnet %+v", sub2.Properties)
	}
	rt5, _ := tables.Get(ctx, f.RouteTableResourceGroup, f.RouteTableName, nil)
	if len(rt5.Properties.Subnets) != 1 || deref(rt5.Properties.Subnets[0].ID) != f.SubnetID {
		t.Fatalf("table subnets %+v", rt5.Properties.Subnets)
	}
	vnet, _ := env.emu.VirtualNetwork(f.VNetResourceGroup, f.VNetName)
	if deref(vnet.Properties.Subnets[0].Properties.RouteTable.ID) != f.RouteTableID {
		t.Fatal("virtual network's subnet does not show the route table")
	}
	dp2, err := tables.BeginDelete(ctx, f.RouteTableResourceGroup, f.RouteTableName, nil)
	nwWantErr(t, nwErr(t, dp2, err), http.StatusBadRequest, "InUseRouteTableCannotBeDeleted")
	sub2.Properties.RouteTable = nil
	sp, err = subnets.BeginCreateOrUpdate(ctx, f.VNetResourceGroup, f.VNetName, f.SubnetName, sub2, nil)
	nwDone(t, sp, err)
	if rt6, _ := env.emu.RouteTable(f.RouteTableResourceGroup, f.RouteTableName); rt6.Properties.Subnets != nil {
		t.Fatalf("table still shows %+v", rt6.Properties.Subnets)
	}
	dp2, err = tables.BeginDelete(ctx, f.RouteTableResourceGroup, f.RouteTableName, nil)
	nwDone(t, dp2, err)
	if ids := env.emu.ListNetwork("routeTables/routes"); len(ids) != 0 {
		t.Fatalf("routes outlived their table: %v", ids)
	}
}
