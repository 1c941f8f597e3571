package azure

import (
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
)

// TestNetworkInterfaces: interfaces made by the emulator (as for a VM it
// launches) and through the API get addresses from the subnet, show
// their public IPs as {id} unless expanded, join backend pools, and
// cannot be deleted while their VM exists.
func TestNetworkInterfaces(t *testing.T) {
	env := newTestEnv(t, Config{})
	f := env.emu.Fixture()
	ctx := nwCtx(t)
	nics := env.network.NewInterfacesClient()
	pip := env.nwPublicIP(t, f.ResourceGroup, "node-0-pip", "")
	vm := env.nwNIC(t, "stand-in-vm", "", "") // any existing resource stands for the VM
	nic0 := env.nwNIC(t, "node-0-nic", *pip.ID, vm.id)

	got, err := nics.Get(ctx, f.ResourceGroup, "node-0-nic", nil)
	if err != nil {
		t.Fatal(err)
	}
	ic := got.Properties.IPConfigurations[0]
	if deref(ic.ID) != nic0.id+"/ipConfigurations/ipconfig1" || !deref(ic.Properties.Primary) || deref(ic.Properties.PrivateIPAddress) != "10.240.0.5" ||
		deref(ic.Properties.Subnet.ID) != f.SubnetID || deref(got.Properties.VirtualMachine.ID) != vm.id || deref(got.Properties.MacAddress) == "" {
		t.Fatalf("interface %+v / %+v", got.Properties, ic.Properties)
	}
	if a := ic.Properties.PublicIPAddress; deref(a.ID) != *pip.ID || a.Properties != nil {
		t.Fatalf("public IP not shown as a reference only: %+v", a)
	}
	got, err = nics.Get(ctx, f.ResourceGroup, "node-0-nic", &armnetwork.InterfacesClientGetOptions{Expand: to.Ptr("ipConfigurations/publicIPAddress")})
	if err != nil {
		t.Fatal(err)
	}
	if a := got.Properties.IPConfigurations[0].Properties.PublicIPAddress; a.Properties == nil || deref(a.Properties.IPAddress) != deref(pip.Properties.IPAddress) {
		t.Fatalf("expanded public IP %+v", a)
	}
	if shown, _ := env.emu.PublicIP(f.ResourceGroup, "node-0-pip"); deref(shown.Properties.IPConfiguration.ID) != deref(ic.ID) {
		t.Fatalf("public IP ipConfiguration %+v", shown.Properties.IPConfiguration)
	}
	dp, err := nics.BeginDelete(ctx, f.ResourceGroup, "node-0-nic", nil)
	nwWantErr(t, nwErr(t, dp, err), http.StatusBadRequest, "NicInUse")

	// Through the API: a static address, a pool membership.
	lbID := nwLBID(f, "lb")
	lbPIP := env.nwPublicIP(t, f.ResourceGroup, "lb-pip", "")
	env.nwPutLB(t, f.ResourceGroup, "lb", nwLB(f, lbID, *lbPIP.ID))
	poolID := lbID + "/backendAddressPools/pool"
	nic := func(addr string, pipID string) armnetwork.Interface {
		ip := &armnetwork.InterfaceIPConfigurationPropertiesFormat{
			Subnet:                          &armnetwork.Subnet{ID: to.Ptr(f.SubnetID)},
			LoadBalancerBackendAddressPools: []*armnetwork.BackendAddressPool{{ID: to.Ptr(poolID)}},
		}
		if addr != "" {
			ip.PrivateIPAllocationMethod, ip.PrivateIPAddress = to.Ptr(armnetwork.IPAllocationMethodStatic), to.Ptr(addr)
		}
		if pipID != "" {
			ip.PublicIPAddress = &armnetwork.PublicIPAddress{ID: to.Ptr(pipID)}
		}
		return armnetwork.Interface{Location: to.Ptr(f.Location), Properties: &armnetwork.InterfacePropertiesFormat{
			IPConfigurations: []*armnetwork.InterfaceIPConfiguration{{Name: to.Ptr("ipconfig"), Properties: ip}},
		}}
	}
	put := func(name string, n armnetwork.Interface) (armnetwork.Interface, error) {
		p, err := nics.BeginCreateOrUpdate(ctx, f.ResourceGroup, name, n, nil)
		if err != nil {
			return armnetwork.Interface{}, err
		}
		res, err := p.PollUntilDone(ctx, nwPoll)
		return res.Interface, err
	}
	_, err = put("x", nic("10.240.0.5", ""))
	nwWantErr(t, err, http.StatusBadRequest, "PrivateIPAddressIsAllocated")
	_, err = put("x", nic("10.240.255.255", ""))
	nwWantErr(t, err, http.StatusBadRequest, "PrivateIPAddressInReservedRange")
	_, err = put("x", nic("", *pip.ID))
	nwWantErr(t, err, http.StatusBadRequest, "PublicIPAddressInUse")
	bad := nic("", "")
	bad.Properties.IPConfigurations[0].Properties.Subnet.ID = to.Ptr(f.SubnetID + "-missing")
	_, err = put("x", bad)
	nwWantErr(t, err, http.StatusBadRequest, "InvalidResourceReference")
	n1, err := put("node-1-nic", nic("10.240.3.3", ""))
	if err != nil {
		t.Fatal(err)
	}
	if a := deref(n1.Properties.IPConfigurations[0].Properties.PrivateIPAddress); a != "10.240.3.3" {
		t.Fatalf("static address %s", a)
	}
	n2, err := put("node-2-nic", nic("", ""))
	if err != nil {
		t.Fatal(err)
	}
	if a := deref(n2.Properties.IPConfigurations[0].Properties.PrivateIPAddress); a != "10.240.0.6" {
		t.Fatalf("dynamic address %s", a)
	}
	pool, err := env.network.NewLoadBalancerBackendAddressPoolsClient().Get(ctx, f.ResourceGroup, "lb", "pool", nil)
	if err != nil {
		t.Fatal(err)
	}
	if ids := pool.Properties.BackendIPConfigurations; len(ids) != 2 || deref(ids[0].ID) != deref(n1.Properties.IPConfigurations[0].ID) {
		t.Fatalf("pool backendIPConfigurations %+v", ids)
	}
	// A deleted interface frees its address.
	dp, err = nics.BeginDelete(ctx, f.ResourceGroup, "node-2-nic", nil)
	nwDone(t, dp, err)
	env.emu.mu.Lock()
	next, err := env.emu.allocatePrivateIP(f.SubnetID)
	env.emu.mu.Unlock()
	if err != nil || next != "10.240.0.6" {
		t.Fatalf("address after delete %s %v", next, err)
	}
}
