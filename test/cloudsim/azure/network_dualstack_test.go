package azure

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v6"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
)

// dsFrontend is a frontend in the fixture's subnet, IPv6 if v6, static
// at addr unless addr is "".
func dsFrontend(f Fixture, name string, v6 bool, addr string) *armnetwork.FrontendIPConfiguration {
	fp := &armnetwork.FrontendIPConfigurationPropertiesFormat{Subnet: &armnetwork.Subnet{ID: to.Ptr(f.SubnetID)}}
	if v6 {
		fp.PrivateIPAddressVersion = to.Ptr(armnetwork.IPVersionIPv6)
	}
	if addr != "" {
		fp.PrivateIPAllocationMethod, fp.PrivateIPAddress = to.Ptr(armnetwork.IPAllocationMethodStatic), to.Ptr(addr)
	}
	return &armnetwork.FrontendIPConfiguration{Name: to.Ptr(name), Properties: fp}
}

// dsRule is a TCP rule on port 80 from a frontend to a pool of lbID.
func dsRule(lbID, name, fe, pool string) *armnetwork.LoadBalancingRule {
	return &armnetwork.LoadBalancingRule{Name: to.Ptr(name), Properties: &armnetwork.LoadBalancingRulePropertiesFormat{
		Protocol: to.Ptr(armnetwork.TransportProtocolTCP), FrontendPort: to.Ptr[int32](80), BackendPort: to.Ptr[int32](30080),
		FrontendIPConfiguration: &armnetwork.SubResource{ID: to.Ptr(lbID + "/frontendIPConfigurations/" + fe)},
		BackendAddressPool:      &armnetwork.SubResource{ID: to.Ptr(lbID + "/backendAddressPools/" + pool)},
	}}
}

// dsAddress is an IP-based backend address in the fixture's network.
func dsAddress(f Fixture, name, ip string) *armnetwork.LoadBalancerBackendAddress {
	return &armnetwork.LoadBalancerBackendAddress{Name: to.Ptr(name), Properties: &armnetwork.LoadBalancerBackendAddressPropertiesFormat{
		IPAddress: to.Ptr(ip), VirtualNetwork: &armnetwork.SubResource{ID: to.Ptr(f.VNetID)},
	}}
}

// dsLB is an internal Standard load balancer as a dual-stack
// cloud-controller-manager builds one: frontends "fe" (IPv4) and "fe-v6"
// in the node subnet, pools "pool" and "pool-v6" by IP configuration
// (empty), and a rule for each family.
func dsLB(f Fixture, lbID string) armnetwork.LoadBalancer {
	return armnetwork.LoadBalancer{
		Location: to.Ptr(f.Location),
		SKU:      &armnetwork.LoadBalancerSKU{Name: to.Ptr(armnetwork.LoadBalancerSKUNameStandard)},
		Properties: &armnetwork.LoadBalancerPropertiesFormat{
			FrontendIPConfigurations: []*armnetwork.FrontendIPConfiguration{dsFrontend(f, "fe", false, ""), dsFrontend(f, "fe-v6", true, "")},
			BackendAddressPools:      []*armnetwork.BackendAddressPool{{Name: to.Ptr("pool")}, {Name: to.Ptr("pool-v6")}},
			LoadBalancingRules:       []*armnetwork.LoadBalancingRule{dsRule(lbID, "rule", "fe", "pool"), dsRule(lbID, "rule-v6", "fe-v6", "pool-v6")},
		},
	}
}

// dsPublicIP creates a Standard public IP of a version; Standard ones
// must be Static, IPv6 as IPv4.
func (env *testEnv) dsPublicIP(t *testing.T, name string, version armnetwork.IPVersion, method armnetwork.IPAllocationMethod) (armnetwork.PublicIPAddress, error) {
	t.Helper()
	p, err := env.network.NewPublicIPAddressesClient().BeginCreateOrUpdate(nwCtx(t), env.emu.Fixture().ResourceGroup, name, armnetwork.PublicIPAddress{
		Location: to.Ptr(env.emu.Config().Location),
		SKU:      &armnetwork.PublicIPAddressSKU{Name: to.Ptr(armnetwork.PublicIPAddressSKUNameStandard)},
		Properties: &armnetwork.PublicIPAddressPropertiesFormat{
			PublicIPAllocationMethod: to.Ptr(method), PublicIPAddressVersion: to.Ptr(version),
		},
	}, nil)
	if err != nil {
		return armnetwork.PublicIPAddress{}, err
	}
	res, err := p.PollUntilDone(nwCtx(t), nwPoll)
	return res.PublicIPAddress, err
}

// dsPutNIC creates or replaces a network interface.
func (env *testEnv) dsPutNIC(t *testing.T, name string, nic armnetwork.Interface) (armnetwork.Interface, error) {
	t.Helper()
	p, err := env.network.NewInterfacesClient().BeginCreateOrUpdate(nwCtx(t), env.emu.Fixture().ResourceGroup, name, nic, nil)
	if err != nil {
		return armnetwork.Interface{}, err
	}
	res, err := p.PollUntilDone(nwCtx(t), nwPoll)
	return res.Interface, err
}

// dsIPConfig is an IP configuration in the fixture's subnet.
func dsIPConfig(f Fixture, name string, primary, v6 bool) *armnetwork.InterfaceIPConfiguration {
	version := armnetwork.IPVersionIPv4
	if v6 {
		version = armnetwork.IPVersionIPv6
	}
	return &armnetwork.InterfaceIPConfiguration{Name: to.Ptr(name), Properties: &armnetwork.InterfaceIPConfigurationPropertiesFormat{
		Subnet: &armnetwork.Subnet{ID: to.Ptr(f.SubnetID)}, Primary: to.Ptr(primary), PrivateIPAddressVersion: to.Ptr(version),
	}}
}

// vals dereferences a slice of pointers.
func vals[T any](ps []*T) []T {
	out := make([]T, 0, len(ps))
	for _, p := range ps {
		out = append(out, val(p))
	}
	return out
}

func dsNIC(f Fixture, cfgs ...*armnetwork.InterfaceIPConfiguration) armnetwork.Interface {
	return armnetwork.Interface{Location: to.Ptr(f.Location), Properties: &armnetwork.InterfacePropertiesFormat{IPConfigurations: cfgs}}
}

// TestDualStackFixture: the virtual network and the node subnet get an
// IPv6 prefix; the subnet shows its two prefixes as addressPrefixes
// only, a single-stack one its one as addressPrefix.
func TestDualStackFixture(t *testing.T) {
	env := newTestEnv(t, Config{DualStack: true})
	f := env.emu.Fixture()
	ctx := nwCtx(t)
	if f.VNetCIDRv6 != FixtureVNetCIDRv6 || f.SubnetCIDRv6 != FixtureSubnetCIDRv6 || f.SubnetCIDR != FixtureSubnetCIDR {
		t.Fatalf("fixture %+v", f)
	}
	vnet, err := env.network.NewVirtualNetworksClient().Get(ctx, f.ResourceGroup, f.VNetName, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := vals(vnet.Properties.AddressSpace.AddressPrefixes); !slices.Equal(got, []string{"10.0.0.0/8", "fd00:10::/48"}) {
		t.Fatalf("address space %v", got)
	}
	sub, err := env.network.NewSubnetsClient().Get(ctx, f.ResourceGroup, f.VNetName, f.SubnetName, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := vals(sub.Properties.AddressPrefixes); sub.Properties.AddressPrefix != nil || !slices.Equal(got, []string{"10.240.0.0/16", "fd00:10:0:f0::/64"}) {
		t.Fatalf("subnet addressPrefix %v addressPrefixes %v", val(sub.Properties.AddressPrefix), got)
	}
	// IPv6 subnets are /64 exactly.
	p, err := env.network.NewSubnetsClient().BeginCreateOrUpdate(ctx, f.ResourceGroup, f.VNetName, "wide", armnetwork.Subnet{
		Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefixes: to.SliceOfPtrs("10.1.0.0/24", "fd00:10:0:1::/56")},
	}, nil)
	nwWantErr(t, nwErr(t, p, err), http.StatusBadRequest, "NetcfgInvalidSubnet")

	single := newTestEnv(t, Config{}).emu
	sf := single.Fixture()
	s, _ := single.Subnet(sf.ResourceGroup, sf.VNetName, sf.SubnetName)
	if sf.VNetCIDRv6 != "" || sf.SubnetCIDRv6 != "" || val(s.Properties.AddressPrefix) != FixtureSubnetCIDR || s.Properties.AddressPrefixes != nil {
		t.Fatalf("single-stack fixture %+v, subnet %+v", sf, s.Properties)
	}
}

// TestDualStackVMs: a VM's network interface and a scale set instance's
// get an IPv6 IP configuration "ipconfig-v6" besides the primary IPv4
// one; the scale set's model has it; VMInfo reports both addresses.
func TestDualStackVMs(t *testing.T) {
	env := newTestEnv(t, Config{DualStack: true})
	f := env.emu.Fixture()
	ctx := nwCtx(t)
	vm, err := env.emu.LaunchVM(VMSpec{Name: "node-0"})
	if err != nil {
		t.Fatal(err)
	}
	if vm.PrivateIP != "10.240.0.4" || vm.PrivateIPv6 != "fd00:10:0:f0::4" {
		t.Fatalf("VM addresses %q %q", vm.PrivateIP, vm.PrivateIPv6)
	}
	nic, err := env.network.NewInterfacesClient().Get(ctx, f.ResourceGroup, "node-0-nic", nil)
	if err != nil {
		t.Fatal(err)
	}
	cfgs := nic.Properties.IPConfigurations
	if len(cfgs) != 2 || val(cfgs[1].Name) != IPv6IPConfigName || val(cfgs[1].Properties.Primary) || !val(cfgs[0].Properties.Primary) ||
		val(cfgs[1].Properties.PrivateIPAddressVersion) != armnetwork.IPVersionIPv6 || val(cfgs[1].Properties.PrivateIPAddress) != vm.PrivateIPv6 ||
		val(cfgs[1].ID) != vm.NICID+"/ipConfigurations/ipconfig-v6" {
		t.Fatalf("network interface IP configurations %+v", nic.Properties)
	}

	ss, err := env.emu.CreateScaleSet(ScaleSetSpec{Name: "nodes", Capacity: 1})
	if err != nil {
		t.Fatal(err)
	}
	if inst := ss.Instances[0]; inst.PrivateIP != "10.240.0.5" || inst.PrivateIPv6 != "fd00:10:0:f0::5" {
		t.Fatalf("instance addresses %q %q", inst.PrivateIP, inst.PrivateIPv6)
	}
	model, err := env.compute.NewVirtualMachineScaleSetsClient().Get(ctx, f.ResourceGroup, "nodes", nil)
	if err != nil {
		t.Fatal(err)
	}
	mips := model.Properties.VirtualMachineProfile.NetworkProfile.NetworkInterfaceConfigurations[0].Properties.IPConfigurations
	if len(mips) != 2 || val(mips[1].Name) != IPv6IPConfigName || val(mips[1].Properties.PrivateIPAddressVersion) != armcompute.IPVersionIPv6 || val(mips[1].Properties.Primary) {
		t.Fatalf("model IP configurations %+v", mips)
	}
	inic, err := env.network.NewInterfacesClient().GetVirtualMachineScaleSetNetworkInterface(ctx, f.ResourceGroup, "nodes", "0", "nodes", nil)
	if err != nil {
		t.Fatal(err)
	}
	icfgs := inic.Properties.IPConfigurations
	if len(icfgs) != 2 || val(icfgs[1].Name) != IPv6IPConfigName || val(icfgs[1].Properties.PrivateIPAddress) != "fd00:10:0:f0::5" ||
		val(icfgs[1].Properties.PrivateIPAddressVersion) != armnetwork.IPVersionIPv6 || val(icfgs[1].Etag) == "" {
		t.Fatalf("instance network interface IP configurations %+v", icfgs)
	}
	// A single-stack VM has no IPv6 address.
	sv, err := newTestEnv(t, Config{}).emu.LaunchVM(VMSpec{Name: "node-0"})
	if err != nil || sv.PrivateIPv6 != "" {
		t.Fatalf("single-stack VM %+v %v", sv, err)
	}
}

// TestDualStackNetworkInterfaces: IPv6 IP configurations get addresses
// from the subnet's IPv6 prefix, dynamic or static, and the network
// provider's rules hold: not in an IPv4-only subnet, never primary, not
// without an IPv4 one, public IP of the same version.
func TestDualStackNetworkInterfaces(t *testing.T) {
	env := newTestEnv(t, Config{DualStack: true})
	f := env.emu.Fixture()
	static := dsIPConfig(f, "static-v6", false, true)
	static.Properties.PrivateIPAllocationMethod, static.Properties.PrivateIPAddress = to.Ptr(armnetwork.IPAllocationMethodStatic), to.Ptr("fd00:10:0:f0::99")
	nic, err := env.dsPutNIC(t, "nic-a", dsNIC(f, dsIPConfig(f, "v4", true, false), dsIPConfig(f, "v6", false, true), static))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range nic.Properties.IPConfigurations {
		got[val(c.Name)] = val(c.Properties.PrivateIPAddress)
	}
	if got["v4"] != "10.240.0.4" || got["v6"] != "fd00:10:0:f0::4" || got["static-v6"] != "fd00:10:0:f0::99" {
		t.Fatalf("addresses %v", got)
	}

	v6pip, err := env.dsPublicIP(t, "pip-v6", armnetwork.IPVersionIPv6, armnetwork.IPAllocationMethodStatic)
	if err != nil {
		t.Fatal(err)
	}
	withPIP := dsIPConfig(f, "v4", true, false)
	withPIP.Properties.PublicIPAddress = &armnetwork.PublicIPAddress{ID: v6pip.ID}
	taken := dsIPConfig(f, "v6", false, true)
	taken.Properties.PrivateIPAllocationMethod, taken.Properties.PrivateIPAddress = to.Ptr(armnetwork.IPAllocationMethodStatic), to.Ptr("fd00:10:0:f0::99")
	outside := dsIPConfig(f, "v6", false, true)
	outside.Properties.PrivateIPAllocationMethod, outside.Properties.PrivateIPAddress = to.Ptr(armnetwork.IPAllocationMethodStatic), to.Ptr("fd00:10:0:1::9")
	for _, tc := range []struct {
		name string
		nic  armnetwork.Interface
		code string
	}{
		{"IPv6 only", dsNIC(f, dsIPConfig(f, "v6", true, true)), "AtleastOneIpV4RequiredForIpV6IpConfiguration"},
		{"IPv6 primary", dsNIC(f, dsIPConfig(f, "v4", false, false), dsIPConfig(f, "v6", true, true)), "IPv6IpConfigurationCannotBePrimary"},
		{"IPv6 public IP on IPv4", dsNIC(f, withPIP), "IPVersionForPublicIpAndNicIpConfigurationMustMatch"},
		{"static IPv6 taken", dsNIC(f, dsIPConfig(f, "v4", true, false), taken), "PrivateIPAddressIsAllocated"},
		{"static IPv6 outside the subnet", dsNIC(f, dsIPConfig(f, "v4", true, false), outside), "PrivateIPAddressNotInSubnet"},
	} {
		_, err := env.dsPutNIC(t, "nic-x", tc.nic)
		nwWantErr(t, err, http.StatusBadRequest, tc.code)
	}

	// A subnet without an IPv6 prefix has no IPv6 address to give.
	single := newTestEnv(t, Config{})
	sf := single.emu.Fixture()
	_, err = single.dsPutNIC(t, "nic-v6", dsNIC(sf, dsIPConfig(sf, "v4", true, false), dsIPConfig(sf, "v6", false, true)))
	re := nwWantErr(t, err, http.StatusBadRequest, "PrivateIPAddressNotInSubnet")
	if !strings.Contains(re.Error(), "has no IPv6 address prefix") {
		t.Fatalf("message: %v", re)
	}
}

// TestDualStackNICPools: a network interface's IPv6 IP configuration
// joins an IPv6 pool as an IPv4 one joins an IPv4 pool; the pool lists
// it and BackendPools reports it. A pool holds one IP version, that of
// the rules' frontends using it.
func TestDualStackNICPools(t *testing.T) {
	env := newTestEnv(t, Config{DualStack: true})
	f := env.emu.Fixture()
	ctx := nwCtx(t)
	vm, err := env.emu.LaunchVM(VMSpec{Name: "node-0"})
	if err != nil {
		t.Fatal(err)
	}
	lbID := nwLBID(f, "kubernetes-internal")
	lb := dsLB(f, lbID)
	lb.Properties.BackendAddressPools = append(lb.Properties.BackendAddressPools, &armnetwork.BackendAddressPool{Name: to.Ptr("spare")})
	env.nwPutLB(t, f.ResourceGroup, "kubernetes-internal", lb)
	pool, pool6, spare := lbID+"/backendAddressPools/pool", lbID+"/backendAddressPools/pool-v6", lbID+"/backendAddressPools/spare"

	nics := env.network.NewInterfacesClient()
	join := func(pools map[string][]string) error {
		got, err := nics.Get(ctx, f.ResourceGroup, "node-0-nic", nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range got.Properties.IPConfigurations {
			c.Properties.LoadBalancerBackendAddressPools = nil
			for _, id := range pools[val(c.Name)] {
				c.Properties.LoadBalancerBackendAddressPools = append(c.Properties.LoadBalancerBackendAddressPools, &armnetwork.BackendAddressPool{ID: to.Ptr(id)})
			}
		}
		_, err = env.dsPutNIC(t, "node-0-nic", got.Interface)
		return err
	}
	if err := join(map[string][]string{"ipconfig1": {pool}, IPv6IPConfigName: {pool6}}); err != nil {
		t.Fatal(err)
	}
	got, err := env.network.NewLoadBalancerBackendAddressPoolsClient().Get(ctx, f.ResourceGroup, "kubernetes-internal", "pool-v6", nil)
	if err != nil {
		t.Fatal(err)
	}
	if ids := got.Properties.BackendIPConfigurations; len(ids) != 1 || val(ids[0].ID) != vm.NICID+"/ipConfigurations/ipconfig-v6" {
		t.Fatalf("IPv6 pool members %+v", ids)
	}
	if pools, _ := env.emu.BackendPools("node-0"); !slices.Equal(pools, []string{pool, pool6}) {
		t.Fatalf("BackendPools = %v", pools)
	}
	if info, _ := env.emu.VM("node-0"); !slices.Equal(info.BackendPools, []string{pool, pool6}) {
		t.Fatalf("VMInfo.BackendPools = %v", info.BackendPools)
	}

	// The IPv4 configuration in the IPv6 rule's pool, both
	// configurations in one pool, an IPv6 one where an IPv4 one is.
	other := dsIPConfig(f, "v4", true, false)
	other.Properties.LoadBalancerBackendAddressPools = []*armnetwork.BackendAddressPool{{ID: to.Ptr(spare)}}
	if _, err := env.dsPutNIC(t, "other-nic", dsNIC(f, other)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		pools map[string][]string
		code  string
	}{
		{"IPv4 in the IPv6 rule's pool", map[string][]string{"ipconfig1": {pool6}}, "IPVersionForPublicIpAndNicIpConfigurationMustMatch"},
		{"IPv6 in the IPv4 rule's pool", map[string][]string{IPv6IPConfigName: {pool}}, "IPVersionForPublicIpAndNicIpConfigurationMustMatch"},
		{"IPv6 with another NIC's IPv4", map[string][]string{IPv6IPConfigName: {spare}}, "AllNicIpConfigurationsOfLbBackendPoolOnVMScaleSetMustHaveSamePrivateIpAddressVersion"},
	} {
		nwWantErr(t, join(tc.pools), http.StatusBadRequest, tc.code)
	}
	if _, err := env.dsPutNIC(t, "other-nic", dsNIC(f, dsIPConfig(f, "v4", true, false))); err != nil {
		t.Fatal(err)
	}
	err = join(map[string][]string{"ipconfig1": {spare}, IPv6IPConfigName: {spare}})
	re := nwWantErr(t, err, http.StatusBadRequest, "AllNicIpConfigurationsOfLbBackendPoolOnVMScaleSetMustHaveSamePrivateIpAddressVersion")
	if !strings.Contains(re.Error(), "Network interface ipConfiguration 'ipconfig-v6' of network interface '"+vm.NICID+"' has privateIpAddressVersion 'IPv6' that does not match with privateIpAddressVersion 'IPv4' of ipConfiguration 'ipconfig1'") {
		t.Fatalf("message: %v", re)
	}
	// Nor may the load balancer point the IPv4 rule at the IPv6 members.
	cur, _ := env.emu.LoadBalancer(f.ResourceGroup, "kubernetes-internal")
	cur.Properties.LoadBalancingRules[0].Properties.BackendAddressPool.ID = to.Ptr(pool6)
	cur.Properties.LoadBalancingRules[0].Properties.BackendAddressPools = nil
	cur.Properties.LoadBalancingRules = cur.Properties.LoadBalancingRules[:1]
	nwWantErr(t, env.nwLBErr(t, f.ResourceGroup, "kubernetes-internal", cur), http.StatusBadRequest, "IPVersionForPublicIpAndNicIpConfigurationMustMatch")
}

// TestDualStackScaleSetPools: the upstream CCM's round for a scale set,
// on the IPv6 IP configuration: the model's ipconfig-v6 names the IPv6
// pool, an instance update puts the instance's ipconfig-v6 in it.
func TestDualStackScaleSetPools(t *testing.T) {
	env := newTestEnv(t, Config{DualStack: true})
	f := env.emu.Fixture()
	ctx := nwCtx(t)
	ss, err := env.emu.CreateScaleSet(ScaleSetSpec{Name: "nodes", Capacity: 2})
	if err != nil {
		t.Fatal(err)
	}
	lbID := nwLBID(f, "kubernetes-internal")
	env.nwPutLB(t, f.ResourceGroup, "kubernetes-internal", dsLB(f, lbID))
	pool, pool6 := lbID+"/backendAddressPools/pool", lbID+"/backendAddressPools/pool-v6"
	sets, vms := env.compute.NewVirtualMachineScaleSetsClient(), env.compute.NewVirtualMachineScaleSetVMsClient()
	// withPools sets the pools of IP configurations by name.
	withPools := func(cfgs []*armcompute.VirtualMachineScaleSetNetworkConfiguration, pools map[string]string) {
		for _, c := range cfgs[0].Properties.IPConfigurations {
			if id, ok := pools[val(c.Name)]; ok {
				c.Properties.LoadBalancerBackendAddressPools = []*armcompute.SubResource{{ID: to.Ptr(id)}}
			}
		}
	}
	putModel := func(pools map[string]string) error {
		got, err := sets.Get(ctx, f.ResourceGroup, "nodes", nil)
		if err != nil {
			t.Fatal(err)
		}
		cfgs := got.Properties.VirtualMachineProfile.NetworkProfile.NetworkInterfaceConfigurations
		withPools(cfgs, pools)
		p, err := sets.BeginCreateOrUpdate(ctx, f.ResourceGroup, "nodes", armcompute.VirtualMachineScaleSet{
			Location: got.Location, Etag: got.Etag,
			Properties: &armcompute.VirtualMachineScaleSetProperties{VirtualMachineProfile: &armcompute.VirtualMachineScaleSetVMProfile{
				NetworkProfile: &armcompute.VirtualMachineScaleSetNetworkProfile{NetworkInterfaceConfigurations: cfgs},
			}},
		}, nil)
		if err == nil {
			_, err = p.PollUntilDone(ctx, nwPoll)
		}
		return err
	}
	putInstance := func(id string, pools map[string]string) error {
		vm, err := vms.Get(ctx, f.ResourceGroup, "nodes", id, nil)
		if err != nil {
			t.Fatal(err)
		}
		cfgs := vm.Properties.NetworkProfileConfiguration.NetworkInterfaceConfigurations
		withPools(cfgs, pools)
		p, err := vms.BeginUpdate(ctx, f.ResourceGroup, "nodes", id, armcompute.VirtualMachineScaleSetVM{
			Location: vm.Location, Etag: vm.Etag,
			Properties: &armcompute.VirtualMachineScaleSetVMProperties{
				NetworkProfileConfiguration: &armcompute.VirtualMachineScaleSetVMNetworkProfileConfiguration{NetworkInterfaceConfigurations: cfgs},
			},
		}, &armcompute.VirtualMachineScaleSetVMsClientBeginUpdateOptions{IfMatch: vm.Etag})
		if err == nil {
			_, err = p.PollUntilDone(ctx, nwPoll)
		}
		return err
	}
	both := map[string]string{"ipconfig1": pool, IPv6IPConfigName: pool6}
	if err := putModel(both); err != nil {
		t.Fatal(err)
	}
	// The IPv4 configuration cannot go where the IPv6 rule sends.
	nwWantErr(t, putInstance("1", map[string]string{"ipconfig1": pool6}), http.StatusBadRequest, "IPVersionForPublicIpAndNicIpConfigurationMustMatch")
	nwWantErr(t, putModel(map[string]string{"ipconfig1": pool6}), http.StatusBadRequest, "IPVersionForPublicIpAndNicIpConfigurationMustMatch")
	if err := putInstance("0", both); err != nil {
		t.Fatal(err)
	}
	got, err := env.network.NewLoadBalancerBackendAddressPoolsClient().Get(ctx, f.ResourceGroup, "kubernetes-internal", "pool-v6", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := ss.Instances[0].NICID + "/ipConfigurations/ipconfig-v6"
	if ids := got.Properties.BackendIPConfigurations; len(ids) != 1 || val(ids[0].ID) != want {
		t.Fatalf("IPv6 pool members %+v, want %s", ids, want)
	}
	nic, err := env.network.NewInterfacesClient().GetVirtualMachineScaleSetNetworkInterface(ctx, f.ResourceGroup, "nodes", "0", "nodes", nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := nic.Properties.IPConfigurations[1].Properties.LoadBalancerBackendAddressPools; len(p) != 1 || val(p[0].ID) != pool6 {
		t.Fatalf("instance 0's ipconfig-v6 pools %+v", p)
	}
	if pools, _ := env.emu.BackendPools("nodes_0"); !slices.Equal(pools, []string{pool, pool6}) {
		t.Fatalf("BackendPools(nodes_0) = %v", pools)
	}
	// Nor where instance 0's IPv6 one is now (kubernetes/kubernetes#93085).
	err = putInstance("1", map[string]string{"ipconfig1": pool6})
	re := nwWantErr(t, err, http.StatusBadRequest, "AllNicIpConfigurationsOfLbBackendPoolOnVMScaleSetMustHaveSamePrivateIpAddressVersion")
	if !strings.Contains(re.Error(), "Network interface ipConfiguration 'ipconfig1' of VM Scale Set '"+ss.ID+"' has privateIpAddressVersion 'IPv4'") {
		t.Fatalf("message: %v", re)
	}
}

// TestDualStackInternalLoadBalancer: IPv6 private frontends (dynamic from
// the subnet's IPv6 prefix, static inside it), an IPv6 rule to a pool of
// IPv6 addresses; the refusals: an IPv6 frontend in an IPv4-only subnet
// or outside the prefix, IPv6 frontends alone, a rule across versions.
func TestDualStackInternalLoadBalancer(t *testing.T) {
	env := newTestEnv(t, Config{DualStack: true})
	f := env.emu.Fixture()
	ctx := nwCtx(t)
	lbID := nwLBID(f, "kubernetes-internal")
	build := func(lbID string) armnetwork.LoadBalancer {
		lb := dsLB(f, lbID)
		lb.Properties.FrontendIPConfigurations = append(lb.Properties.FrontendIPConfigurations, dsFrontend(f, "fe-v6-static", true, "fd00:10:0:f0::80"))
		lb.Properties.BackendAddressPools[1].Properties = &armnetwork.BackendAddressPoolPropertiesFormat{LoadBalancerBackendAddresses: []*armnetwork.LoadBalancerBackendAddress{
			dsAddress(f, "node-0", "fd00:10:0:f0::10"), dsAddress(f, "node-1", "fd00:10:0:f0::11"),
		}}
		return lb
	}
	lb := env.nwPutLB(t, f.ResourceGroup, "kubernetes-internal", build(lbID))
	addrs := map[string]string{}
	for _, fe := range lb.Properties.FrontendIPConfigurations {
		addrs[val(fe.Name)] = val(fe.Properties.PrivateIPAddress) + " " + string(val(fe.Properties.PrivateIPAddressVersion))
	}
	if addrs["fe"] != "10.240.0.4 IPv4" || addrs["fe-v6"] != "fd00:10:0:f0::4 IPv6" || addrs["fe-v6-static"] != "fd00:10:0:f0::80 IPv6" {
		t.Fatalf("frontend addresses %v", addrs)
	}
	// An update keeps the dynamic IPv6 address.
	lb = env.nwPutLB(t, f.ResourceGroup, "kubernetes-internal", lb)
	if a := val(lb.Properties.FrontendIPConfigurations[1].Properties.PrivateIPAddress); a != "fd00:10:0:f0::4" {
		t.Fatalf("IPv6 frontend address after an update %s", a)
	}
	pools := env.network.NewLoadBalancerBackendAddressPoolsClient()
	got, err := pools.Get(ctx, f.ResourceGroup, "kubernetes-internal", "pool-v6", nil)
	if err != nil {
		t.Fatal(err)
	}
	if ids := nwIDs(got.Properties.LoadBalancingRules); len(got.Properties.LoadBalancerBackendAddresses) != 2 || !slices.Equal(ids, []string{lbID + "/loadBalancingRules/rule-v6"}) {
		t.Fatalf("IPv6 pool %+v", got.Properties)
	}

	otherID := nwLBID(f, "other")
	for _, tc := range []struct {
		name   string
		change func(lb *armnetwork.LoadBalancer)
		code   string
	}{
		{"static IPv6 frontend outside the prefix", func(lb *armnetwork.LoadBalancer) {
			lb.Properties.FrontendIPConfigurations[2].Properties.PrivateIPAddress = to.Ptr("fd00:10:0:1::80")
		}, "PrivateIPAddressNotInSubnet"},
		{"static IPv6 frontend taken", func(lb *armnetwork.LoadBalancer) {
			lb.Properties.FrontendIPConfigurations[2].Properties.PrivateIPAddress = to.Ptr("fd00:10:0:f0::4")
		}, "PrivateIPAddressIsAllocated"},
		{"IPv4 rule to the IPv6 addresses", func(lb *armnetwork.LoadBalancer) {
			lb.Properties.LoadBalancingRules[0].Properties.BackendAddressPool.ID = to.Ptr(otherID + "/backendAddressPools/pool-v6")
			lb.Properties.LoadBalancingRules = lb.Properties.LoadBalancingRules[:1]
		}, "IPVersionForPublicIpAndNicIpConfigurationMustMatch"},
		{"IPv6 rule to IPv4 addresses", func(lb *armnetwork.LoadBalancer) {
			lb.Properties.BackendAddressPools[1].Properties.LoadBalancerBackendAddresses = []*armnetwork.LoadBalancerBackendAddress{dsAddress(f, "node-0", "10.240.0.10")}
		}, "IPVersionForPublicIpAndNicIpConfigurationMustMatch"},
		{"IPv6 frontends only", func(lb *armnetwork.LoadBalancer) {
			lb.Properties.FrontendIPConfigurations = lb.Properties.FrontendIPConfigurations[1:]
			lb.Properties.LoadBalancingRules = lb.Properties.LoadBalancingRules[1:]
		}, "AtleastOneIpV4RequiredForIpV6LbFrontendIpConfiguration"},
	} {
		lb := build(otherID)
		lb.Properties.FrontendIPConfigurations[2].Properties.PrivateIPAddress = to.Ptr("fd00:10:0:f0::81")
		tc.change(&lb)
		err := env.nwLBErr(t, f.ResourceGroup, "other", lb)
		nwWantErr(t, err, http.StatusBadRequest, tc.code)
	}
	// Nor through the pool's own PUT.
	p, err := pools.BeginCreateOrUpdate(ctx, f.ResourceGroup, "kubernetes-internal", "pool-v6", armnetwork.BackendAddressPool{
		Properties: &armnetwork.BackendAddressPoolPropertiesFormat{LoadBalancerBackendAddresses: []*armnetwork.LoadBalancerBackendAddress{dsAddress(f, "node-0", "10.240.0.10")}},
	}, nil)
	nwWantErr(t, nwErr(t, p, err), http.StatusBadRequest, "IPVersionForPublicIpAndNicIpConfigurationMustMatch")

	// A single-stack subnet has no IPv6 frontend address to give.
	single := newTestEnv(t, Config{})
	sf := single.emu.Fixture()
	err = single.nwLBErr(t, sf.ResourceGroup, "kubernetes-internal", dsLB(sf, nwLBID(sf, "kubernetes-internal")))
	nwWantErr(t, err, http.StatusBadRequest, "PrivateIPAddressNotInSubnet")
}

// TestDualStackPublicLoadBalancer: a public frontend on a Standard
// (static) IPv6 public IP beside an IPv4 one, an IPv6 rule to IPv6
// addresses.
func TestDualStackPublicLoadBalancer(t *testing.T) {
	env := newTestEnv(t, Config{DualStack: true})
	f := env.emu.Fixture()
	_, err := env.dsPublicIP(t, "dynamic-v6", armnetwork.IPVersionIPv6, armnetwork.IPAllocationMethodDynamic)
	nwWantErr(t, err, http.StatusBadRequest, "StandardSkuPublicIPAddressesMustBeStatic")
	pip6, err := env.dsPublicIP(t, "web-v6", armnetwork.IPVersionIPv6, armnetwork.IPAllocationMethodStatic)
	if err != nil {
		t.Fatal(err)
	}
	if a := val(pip6.Properties.IPAddress); !strings.HasPrefix(a, "2603:1030:20e:3::") {
		t.Fatalf("IPv6 public address %q", a)
	}
	pip4 := env.nwPublicIP(t, f.ResourceGroup, "web", "")
	lbID := nwLBID(f, "kubernetes")
	lb := nwLB(f, lbID, *pip4.ID, "10.240.0.10")
	lb.Properties.FrontendIPConfigurations = append(lb.Properties.FrontendIPConfigurations, &armnetwork.FrontendIPConfiguration{
		Name: to.Ptr("fe-v6"), Properties: &armnetwork.FrontendIPConfigurationPropertiesFormat{PublicIPAddress: &armnetwork.PublicIPAddress{ID: pip6.ID}},
	})
	lb.Properties.BackendAddressPools = append(lb.Properties.BackendAddressPools, &armnetwork.BackendAddressPool{
		Name:       to.Ptr("pool-v6"),
		Properties: &armnetwork.BackendAddressPoolPropertiesFormat{LoadBalancerBackendAddresses: []*armnetwork.LoadBalancerBackendAddress{dsAddress(f, "node-a", "fd00:10:0:f0::10")}},
	})
	lb.Properties.LoadBalancingRules = append(lb.Properties.LoadBalancingRules, dsRule(lbID, "rule-v6", "fe-v6", "pool-v6"))
	got := env.nwPutLB(t, f.ResourceGroup, "kubernetes", lb)
	if fe := got.Properties.FrontendIPConfigurations[1]; val(fe.Properties.PublicIPAddress.ID) != val(pip6.ID) || fe.Properties.PrivateIPAddressVersion != nil {
		t.Fatalf("IPv6 frontend %+v", fe.Properties)
	}
	shown, _ := env.emu.PublicIP(f.ResourceGroup, "web-v6")
	if val(shown.Properties.IPConfiguration.ID) != lbID+"/frontendIPConfigurations/fe-v6" {
		t.Fatalf("IPv6 public IP ipConfiguration %+v", shown.Properties.IPConfiguration)
	}
	// The IPv6 public frontend to the IPv4 addresses is refused.
	lb.Properties.LoadBalancingRules[1].Properties.BackendAddressPool.ID = to.Ptr(lbID + "/backendAddressPools/pool")
	lb.Properties.LoadBalancingRules[1].Properties.FrontendPort = to.Ptr[int32](81)
	nwWantErr(t, env.nwLBErr(t, f.ResourceGroup, "kubernetes", lb), http.StatusBadRequest, "IPVersionForPublicIpAndNicIpConfigurationMustMatch")
}

// TestSecurityRulesIPv6: security rules take IPv6 address prefixes.
func TestSecurityRulesIPv6(t *testing.T) {
	env := newTestEnv(t, Config{DualStack: true})
	f := env.emu.Fixture()
	ctx := nwCtx(t)
	r := nwRule("allow-80-v6", 500, "80")
	r.Properties.SourceAddressPrefix = to.Ptr("2001:db8::/32")
	r.Properties.DestinationAddressPrefix = nil
	r.Properties.DestinationAddressPrefixes = to.SliceOfPtrs("fd00:10:0:f0::4/128", "2603:1030:20e:3::7")
	p, err := env.network.NewSecurityRulesClient().BeginCreateOrUpdate(ctx, f.ResourceGroup, f.SecurityGroupName, "allow-80-v6", *r, nil)
	nwDone(t, p, err)
	got, err := env.network.NewSecurityRulesClient().Get(ctx, f.ResourceGroup, f.SecurityGroupName, "allow-80-v6", nil)
	if err != nil {
		t.Fatal(err)
	}
	if val(got.Properties.SourceAddressPrefix) != "2001:db8::/32" || !slices.Equal(vals(got.Properties.DestinationAddressPrefixes), []string{"fd00:10:0:f0::4/128", "2603:1030:20e:3::7"}) {
		t.Fatalf("rule %+v", got.Properties)
	}
}
