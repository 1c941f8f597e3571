package azure

import (
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
)

// TestVirtualNetworks: the fixture's network; subnets inside the address
// space and apart from each other; a subnet holding an interface cannot
// be deleted, not even by leaving it out of the network's PUT; nested
// 404s.
func TestVirtualNetworks(t *testing.T) {
	env := newTestEnv(t, Config{ClusterID: "c1"})
	f := env.emu.Fixture()
	ctx := nwCtx(t)
	if f.ResourceGroup != "c1-rg" || f.VNetName != "c1-vnet" || f.SubnetName != "c1-subnet" || f.SecurityGroupName != "c1-nsg" || f.RouteTableName != "c1-routetable" {
		t.Fatalf("fixture names %+v", f)
	}
	vnets := env.network.NewVirtualNetworksClient()
	subnets := env.network.NewSubnetsClient()
	vnet, err := vnets.Get(ctx, f.ResourceGroup, f.VNetName, nil)
	if err != nil {
		t.Fatal(err)
	}
	if deref(vnet.ID) != f.VNetID || deref(vnet.Properties.AddressSpace.AddressPrefixes[0]) != "10.0.0.0/8" || len(vnet.Properties.Subnets) != 1 {
		t.Fatalf("vnet %+v", vnet.Properties)
	}
	s := vnet.Properties.Subnets[0]
	if deref(s.ID) != f.SubnetID || deref(s.Properties.AddressPrefix) != "10.240.0.0/16" || deref(s.Properties.NetworkSecurityGroup.ID) != f.SecurityGroupID || s.Properties.RouteTable != nil {
		t.Fatalf("subnet %+v", s.Properties)
	}

	put := func(name, prefix string) error {
		p, err := subnets.BeginCreateOrUpdate(ctx, f.ResourceGroup, f.VNetName, name, armnetwork.Subnet{
			Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: to.Ptr(prefix)},
		}, nil)
		if err == nil {
			_, err = p.PollUntilDone(ctx, nwPoll)
		}
		return err
	}
	nwWantErr(t, put("outside", "192.168.0.0/24"), http.StatusBadRequest, "NetcfgSubnetRangeOutsideVnet")
	nwWantErr(t, put("overlap", "10.240.128.0/24"), http.StatusBadRequest, "NetcfgSubnetRangesOverlap")
	nwWantErr(t, put("ragged", "10.1.0.1/24"), http.StatusBadRequest, "NetcfgInvalidSubnet")
	if err := put("second", "10.1.0.0/24"); err != nil {
		t.Fatal(err)
	}
	p, err := subnets.BeginCreateOrUpdate(ctx, f.ResourceGroup, f.VNetName, "third", armnetwork.Subnet{Properties: &armnetwork.SubnetPropertiesFormat{
		AddressPrefix: to.Ptr("10.2.0.0/24"), RouteTable: &armnetwork.RouteTable{ID: to.Ptr(f.RouteTableID + "x")},
	}}, nil)
	nwWantErr(t, nwErr(t, p, err), http.StatusBadRequest, "InvalidResourceReference")

	// A NIC in the node subnet.
	nic := env.nwNIC(t, "node-0-nic", "", "")
	ipc := propsOf(nic.props()["ipConfigurations"].([]any)[0].(map[string]any))
	if ipc["privateIPAddress"] != "10.240.0.4" {
		t.Fatalf("first NIC address %v", ipc["privateIPAddress"])
	}
	dp, err := subnets.BeginDelete(ctx, f.ResourceGroup, f.VNetName, f.SubnetName, nil)
	re := nwWantErr(t, nwErr(t, dp, err), http.StatusBadRequest, "InUseSubnetCannotBeDeleted")
	if !strings.Contains(re.Error(), "Subnet "+f.SubnetName+" is in use by "+nic.id+"/ipConfigurations/ipconfig1 and cannot be deleted.") {
		t.Fatalf("message: %v", re)
	}
	// The network's PUT without the subnet would delete it: refused too.
	vnet, _ = vnets.Get(ctx, f.ResourceGroup, f.VNetName, nil)
	var keep []*armnetwork.Subnet
	for _, s := range vnet.Properties.Subnets {
		if deref(s.Name) != f.SubnetName {
			keep = append(keep, s)
		}
	}
	vnet.Properties.Subnets = keep
	vp, err := vnets.BeginCreateOrUpdate(ctx, f.ResourceGroup, f.VNetName, vnet.VirtualNetwork, nil)
	nwWantErr(t, nwErr(t, vp, err), http.StatusBadRequest, "InUseSubnetCannotBeDeleted")
	// ... but leaving out the free one deletes it.
	vnet, _ = vnets.Get(ctx, f.ResourceGroup, f.VNetName, nil)
	keep = nil
	for _, s := range vnet.Properties.Subnets {
		if deref(s.Name) != "second" {
			keep = append(keep, s)
		}
	}
	vnet.Properties.Subnets = keep
	vp, err = vnets.BeginCreateOrUpdate(ctx, f.ResourceGroup, f.VNetName, vnet.VirtualNetwork, nil)
	if got := nwDone(t, vp, err); len(got.Properties.Subnets) != 1 {
		t.Fatalf("subnets after PUT: %d", len(got.Properties.Subnets))
	}
	_, err = subnets.Get(ctx, f.ResourceGroup, f.VNetName, "second", nil)
	re = nwWantErr(t, err, http.StatusNotFound, "NotFound")
	if !strings.Contains(re.Error(), "Resource "+f.VNetID+"/subnets/second not found.") {
		t.Fatalf("message: %v", re)
	}
	_, err = subnets.Get(ctx, f.ResourceGroup, "no-vnet", "x", nil)
	re = nwWantErr(t, err, http.StatusNotFound, "ResourceNotFound")
	if !strings.Contains(re.Error(), "Microsoft.Network/virtualNetworks/no-vnet") {
		t.Fatalf("message: %v", re)
	}
	dv, err := vnets.BeginDelete(ctx, f.ResourceGroup, f.VNetName, nil)
	nwWantErr(t, nwErr(t, dv, err), http.StatusBadRequest, "InUseSubnetCannotBeDeleted")
}
