package azure

import (
	"context"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v6"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// cctx is the context of the compute tests' calls.
var cctx = context.Background()

// powerOfView is the PowerState/<x> code of an instance view's statuses.
func powerOfView(sts []*armcompute.InstanceViewStatus) string {
	for _, s := range sts {
		if c := val(s.Code); strings.HasPrefix(c, "PowerState/") {
			return c
		}
	}
	return ""
}

func TestVirtualMachineGet(t *testing.T) {
	env := newTestEnv(t, Config{})
	rg := env.emu.Fixture().ResourceGroup
	zonal, err := env.emu.LaunchVM(VMSpec{Name: "node-a", Zone: "2", Size: "Standard_D4s_v5", Tags: map[string]string{"role": "node"}})
	if err != nil {
		t.Fatal(err)
	}
	avset, err := env.emu.LaunchVM(VMSpec{Name: "node-b", AvailabilitySet: "nodes-as", FaultDomain: 2, UpdateDomain: 4})
	if err != nil {
		t.Fatal(err)
	}
	vms := env.compute.NewVirtualMachinesClient()

	got, err := vms.Get(cctx, rg, "node-a", nil)
	if err != nil {
		t.Fatal(err)
	}
	v := got.VirtualMachine
	p := v.Properties
	if val(v.ID) != zonal.ID || val(v.Name) != "node-a" || val(v.Type) != "Microsoft.Compute/virtualMachines" ||
		val(v.Location) != env.emu.Config().Location || len(v.Zones) != 1 || val(v.Zones[0]) != "2" || val(v.Tags["role"]) != "node" {
		t.Errorf("VM: %+v", v)
	}
	if p.InstanceView != nil {
		t.Error("a GET without $expand shows the instance view")
	}
	if val(p.VMID) == "" || val(p.VMID) != zonal.VMID || string(val(p.HardwareProfile.VMSize)) != "Standard_D4s_v5" ||
		val(p.OSProfile.ComputerName) != "node-a" || val(p.ProvisioningState) != "Succeeded" || p.TimeCreated == nil || p.AvailabilitySet != nil {
		t.Errorf("VM properties: %+v", p)
	}
	if nics := p.NetworkProfile.NetworkInterfaces; len(nics) != 1 || !strings.EqualFold(val(nics[0].ID), zonal.NICID) ||
		!strings.HasSuffix(val(nics[0].ID), "/networkInterfaces/node-a-nic") || !val(nics[0].Properties.Primary) {
		t.Errorf("VM NICs: %+v", nics)
	}

	// The NIC the network half made points back at the VM.
	nic, err := env.network.NewInterfacesClient().Get(cctx, rg, "node-a-nic", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.EqualFold(val(nic.Properties.VirtualMachine.ID), zonal.ID) ||
		val(nic.Properties.IPConfigurations[0].Properties.PrivateIPAddress) != zonal.PrivateIP || zonal.PrivateIP == "" {
		t.Errorf("NIC of node-a: %+v (VM %+v)", nic.Properties, zonal)
	}

	got, err = vms.Get(cctx, rg, "node-a", &armcompute.VirtualMachinesClientGetOptions{Expand: to.Ptr(armcompute.InstanceViewTypesInstanceView)})
	if err != nil {
		t.Fatal(err)
	}
	iv := got.Properties.InstanceView
	if iv == nil || val(iv.ComputerName) != "node-a" || val(iv.OSName) == "" || powerOfView(iv.Statuses) != "PowerState/running" ||
		val(iv.Statuses[0].Code) != "ProvisioningState/succeeded" || val(iv.Statuses[1].DisplayStatus) != "VM running" {
		t.Errorf("instance view: %+v", iv)
	}

	// The instance view action, and a non-zonal VM in an availability
	// set with its fault domain; Compute writes the set's ID in upper case.
	ivr, err := vms.InstanceView(cctx, rg, "node-b", nil)
	if err != nil {
		t.Fatal(err)
	}
	if val(ivr.PlatformFaultDomain) != 2 || val(ivr.PlatformUpdateDomain) != 4 || powerOfView(ivr.Statuses) != "PowerState/running" {
		t.Errorf("instance view of node-b: %+v", ivr.VirtualMachineInstanceView)
	}
	b, err := vms.Get(cctx, rg, "node-b", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Zones) != 0 || b.Properties.AvailabilitySet == nil ||
		val(b.Properties.AvailabilitySet.ID) != strings.ToUpper(avset.ID[:strings.Index(avset.ID, "/providers/")])+"/PROVIDERS/MICROSOFT.COMPUTE/AVAILABILITYSETS/NODES-AS" {
		t.Errorf("availability set VM: zones %v, set %+v", b.Zones, b.Properties.AvailabilitySet)
	}

	// Missing VMs: 404 ResourceNotFound for both.
	_, err = vms.Get(cctx, rg, "nope", nil)
	wantARMError(t, err, http.StatusNotFound, "ResourceNotFound")
	_, err = vms.InstanceView(cctx, rg, "nope", nil)
	wantARMError(t, err, http.StatusNotFound, "ResourceNotFound")
	_, err = vms.Get(cctx, "no-such-group", "node-a", nil)
	wantARMError(t, err, http.StatusNotFound, "ResourceGroupNotFound")

	if n := env.srv.CallCount("compute:VirtualMachines_Get"); n != 5 {
		t.Errorf("VirtualMachines_Get counted %d times, want 5", n)
	}
	if n := env.srv.CallCount("compute:VirtualMachines_InstanceView"); n != 2 {
		t.Errorf("VirtualMachines_InstanceView counted %d times, want 2", n)
	}
}

func TestVirtualMachineLists(t *testing.T) {
	env := newTestEnv(t, Config{PageSize: 2})
	rg := env.emu.Fixture().ResourceGroup
	for range 5 {
		if _, err := env.emu.LaunchVM(VMSpec{}); err != nil {
			t.Fatal(err)
		}
	}
	flex, err := env.emu.CreateScaleSet(ScaleSetSpec{Name: "flex", Capacity: 2, Flexible: true, Zones: []string{"1", "3"}})
	if err != nil {
		t.Fatal(err)
	}
	vms := env.compute.NewVirtualMachinesClient()

	var names []string
	for _, page := range allPages(t, vms.NewListPager(rg, nil)) {
		if len(page.Value) > 2 {
			t.Errorf("page of %d, want at most 2", len(page.Value))
		}
		for _, v := range page.Value {
			names = append(names, val(v.Name))
			if v.Properties.InstanceView != nil {
				t.Errorf("%s: a list without $expand shows the instance view", val(v.Name))
			}
		}
	}
	if len(names) != 7 {
		t.Fatalf("listed %v, want 7 VMs", names)
	}
	if n := env.srv.CallCount("compute:VirtualMachines_List"); n != 4 {
		t.Errorf("VirtualMachines_List counted %d times, want 4 pages", n)
	}

	// ListAll with statusOnly=true: every VM with its instance view.
	count := 0
	for _, page := range allPages(t, vms.NewListAllPager(&armcompute.VirtualMachinesClientListAllOptions{StatusOnly: to.Ptr("true")})) {
		for _, v := range page.Value {
			count++
			if v.Properties.InstanceView == nil || powerOfView(v.Properties.InstanceView.Statuses) != "PowerState/running" {
				t.Errorf("%s: statusOnly without a power state: %+v", val(v.Name), v.Properties.InstanceView)
			}
		}
	}
	if count != 7 {
		t.Errorf("ListAll listed %d VMs, want 7", count)
	}

	// The scale set filter, with $expand=instanceView, at both scopes.
	filter := "'virtualMachineScaleSet/id' eq '" + strings.ToLower(flex.ID) + "'"
	var flexNames []string
	for _, page := range allPages(t, vms.NewListPager(rg, &armcompute.VirtualMachinesClientListOptions{Filter: &filter, Expand: to.Ptr(armcompute.ExpandTypeForListVMsInstanceView)})) {
		for _, v := range page.Value {
			flexNames = append(flexNames, val(v.Name))
			if v.Properties.InstanceView == nil || !strings.EqualFold(val(v.Properties.VirtualMachineScaleSet.ID), flex.ID) {
				t.Errorf("%s: %+v", val(v.Name), v.Properties)
			}
		}
	}
	want := []string{flex.Instances[0].Name, flex.Instances[1].Name}
	slices.Sort(want)
	slices.Sort(flexNames)
	if !slices.Equal(flexNames, want) {
		t.Errorf("filtered list %v, want %v", flexNames, want)
	}
	filter2 := "virtualMachineScaleSet/id eq '" + flex.ID + "'"
	if pages := allPages(t, vms.NewListAllPager(&armcompute.VirtualMachinesClientListAllOptions{Filter: &filter2})); len(pages) != 1 || len(pages[0].Value) != 2 {
		t.Errorf("filtered ListAll: %d pages", len(pages))
	}

	// $expand=instanceView needs a valid $filter.
	_, err = vms.NewListPager(rg, &armcompute.VirtualMachinesClientListOptions{Expand: to.Ptr(armcompute.ExpandTypeForListVMsInstanceView)}).NextPage(cctx)
	wantARMError(t, err, http.StatusBadRequest, "InvalidParameter")
	_, err = vms.NewListPager(rg, &armcompute.VirtualMachinesClientListOptions{Filter: to.Ptr("name eq 'x'")}).NextPage(cctx)
	wantARMError(t, err, http.StatusBadRequest, "InvalidParameter")
}

func TestVirtualMachinePowerThroughARM(t *testing.T) {
	env := newTestEnv(t, Config{})
	rg := env.emu.Fixture().ResourceGroup
	info, err := env.emu.LaunchInstance(cloudsim.InstanceSpec{Name: "worker", PublicIP: true})
	if err != nil {
		t.Fatal(err)
	}
	vms := env.compute.NewVirtualMachinesClient()
	power := func() string {
		t.Helper()
		iv, err := vms.InstanceView(cctx, rg, "worker", nil)
		if err != nil {
			t.Fatal(err)
		}
		return powerOfView(iv.Statuses)
	}
	if err := env.emu.StopInstance(info.ID); err != nil {
		t.Fatal(err)
	}
	if p := power(); p != "PowerState/stopped" {
		t.Errorf("after stop: %s", p)
	}
	if err := env.emu.StartInstance(info.ID); err != nil {
		t.Fatal(err)
	}
	if p := power(); p != "PowerState/running" {
		t.Errorf("after start: %s", p)
	}
	if err := env.emu.DeallocateVM("worker"); err != nil {
		t.Fatal(err)
	}
	if p := power(); p != "PowerState/deallocated" {
		t.Errorf("after deallocate: %s", p)
	}
	if err := env.emu.SetVMPowerState("worker", PowerStarting); err != nil {
		t.Fatal(err)
	}
	if p := power(); p != "PowerState/starting" {
		t.Errorf("after starting: %s", p)
	}

	vm, _ := env.emu.VM("worker")
	nicID, pipID := vm.NICID, vm.PublicIPID
	if err := env.emu.TerminateInstance(info.ID); err != nil {
		t.Fatal(err)
	}
	_, err = vms.Get(cctx, rg, "worker", nil)
	wantARMError(t, err, http.StatusNotFound, "ResourceNotFound")
	// The NIC and the public IP went with the VM.
	if nicID != "" {
		_, err = env.network.NewInterfacesClient().Get(cctx, rg, nicID[strings.LastIndex(nicID, "/")+1:], nil)
		wantARMError(t, err, http.StatusNotFound, "ResourceNotFound")
	}
	if pipID != "" {
		_, err = env.network.NewPublicIPAddressesClient().Get(cctx, rg, pipID[strings.LastIndex(pipID, "/")+1:], nil)
		wantARMError(t, err, http.StatusNotFound, "ResourceNotFound")
	}
	if _, ok := env.emu.GetInstance(info.ID); ok {
		t.Error("a terminated VM is still an instance")
	}
}

func TestUniformScaleSet(t *testing.T) {
	env := newTestEnv(t, Config{PageSize: 2})
	rg := env.emu.Fixture().ResourceGroup
	const name = "aks-nodes-12345-vmss"
	ss, err := env.emu.CreateScaleSet(ScaleSetSpec{Name: name, Capacity: 3, Zones: []string{"1", "2", "3"}, VMSize: "Standard_D8s_v5", PublicIP: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(ss.Instances) != 3 || ss.Instances[0].ComputerName != name+"000000" || ss.Instances[2].ComputerName != name+"000002" {
		t.Fatalf("scale set: %+v", ss)
	}
	sets := env.compute.NewVirtualMachineScaleSetsClient()
	got, err := sets.Get(cctx, rg, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if val(got.SKU.Name) != "Standard_D8s_v5" || val(got.SKU.Capacity) != 3 || len(got.Zones) != 3 ||
		val(got.Properties.OrchestrationMode) != armcompute.OrchestrationModeUniform || val(got.Properties.UniqueID) == "" ||
		len(got.Properties.VirtualMachineProfile.NetworkProfile.NetworkInterfaceConfigurations) != 1 ||
		val(got.Properties.VirtualMachineProfile.OSProfile.ComputerNamePrefix) != name {
		t.Errorf("scale set: %+v", got.VirtualMachineScaleSet)
	}
	if pages := allPages(t, sets.NewListPager(rg, nil)); len(pages) != 1 || len(pages[0].Value) != 1 {
		t.Errorf("List: %+v", pages)
	}
	if pages := allPages(t, sets.NewListAllPager(nil)); len(pages) != 1 || len(pages[0].Value) != 1 {
		t.Errorf("ListAll: %+v", pages)
	}

	ssvms := env.compute.NewVirtualMachineScaleSetVMsClient()
	var insts []*armcompute.VirtualMachineScaleSetVM
	for _, page := range allPages(t, ssvms.NewListPager(rg, name, &armcompute.VirtualMachineScaleSetVMsClientListOptions{Expand: to.Ptr("instanceView")})) {
		insts = append(insts, page.Value...)
	}
	if len(insts) != 3 {
		t.Fatalf("listed %d instances, want 3", len(insts))
	}
	zones := map[string]bool{}
	for i, v := range insts {
		id := []string{"0", "1", "2"}[i]
		p := v.Properties
		if val(v.InstanceID) != id || val(v.Name) != name+"_"+id || val(v.SKU.Name) != "Standard_D8s_v5" || len(v.Zones) != 1 ||
			p.HardwareProfile != nil || !val(p.LatestModelApplied) || val(p.OSProfile.ComputerName) != name+"00000"+id ||
			p.InstanceView == nil || powerOfView(p.InstanceView.Statuses) != "PowerState/running" {
			t.Errorf("instance %d: %+v %+v", i, v, p)
		}
		zones[val(v.Zones[0])] = true
		nics := p.NetworkProfile.NetworkInterfaces
		if len(nics) != 1 || !strings.Contains(val(nics[0].ID), "/resourceGroups/"+strings.ToUpper(rg)+"/") ||
			!strings.HasSuffix(val(nics[0].ID), "/virtualMachineScaleSets/"+name+"/virtualMachines/"+id+"/networkInterfaces/"+name) {
			t.Errorf("instance %d NICs: %+v", i, nics)
		}
	}
	if len(zones) != 3 {
		t.Errorf("instances in zones %v, want one per zone", zones)
	}

	// Get with and without the instance view; the instance view action.
	one, err := ssvms.Get(cctx, rg, name, "1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if one.Properties.InstanceView != nil {
		t.Error("a GET without $expand shows the instance view")
	}
	one, err = ssvms.Get(cctx, rg, name, "1", &armcompute.VirtualMachineScaleSetVMsClientGetOptions{Expand: to.Ptr(armcompute.InstanceViewTypesInstanceView)})
	if err != nil || one.Properties.InstanceView == nil || val(one.Properties.InstanceView.ComputerName) != name+"000001" {
		t.Fatalf("GET $expand=instanceView: %v %+v", err, one)
	}
	if err := env.emu.StopScaleSetInstance(name, "1"); err != nil {
		t.Fatal(err)
	}
	iv, err := ssvms.GetInstanceView(cctx, rg, name, "1", nil)
	if err != nil || powerOfView(iv.Statuses) != "PowerState/stopped" {
		t.Fatalf("instance view after stop: %v %+v", err, iv)
	}

	// A missing instance: Compute's NotFound.
	_, err = ssvms.Get(cctx, rg, name, "9", nil)
	wantARMError(t, err, http.StatusNotFound, "NotFound")
	_, err = ssvms.GetInstanceView(cctx, rg, name, "9", nil)
	wantARMError(t, err, http.StatusNotFound, "NotFound")

	// $filter on the instance list.
	f := "startswith(instanceView/statuses/code, 'PowerState') eq true"
	if pages := allPages(t, ssvms.NewListPager(rg, name, &armcompute.VirtualMachineScaleSetVMsClientListOptions{Filter: &f, Select: to.Ptr("instanceView/statuses")})); len(pages) != 2 {
		t.Errorf("filtered list: %d pages, want 2", len(pages))
	}
	_, err = ssvms.NewListPager(rg, name, &armcompute.VirtualMachineScaleSetVMsClientListOptions{Filter: to.Ptr("bogus")}).NextPage(cctx)
	wantARMError(t, err, http.StatusBadRequest, "InvalidParameter")

	// Scale out and in.
	added, err := env.emu.ScaleOut(name, 2)
	if err != nil || len(added) != 2 || added[0].InstanceID != "3" || added[1].ComputerName != name+"000004" {
		t.Fatalf("scale out: %v %+v", err, added)
	}
	if err := env.emu.DeleteScaleSetInstance(name, "0"); err != nil {
		t.Fatal(err)
	}
	_, err = ssvms.Get(cctx, rg, name, "0", nil)
	wantARMError(t, err, http.StatusNotFound, "NotFound")
	got, _ = sets.Get(cctx, rg, name, nil)
	if val(got.SKU.Capacity) != 4 {
		t.Errorf("capacity %d after scaling, want 4", val(got.SKU.Capacity))
	}
	if err := env.emu.DeleteScaleSetInstance(name, "0"); !strings.Contains(err.Error(), "not found") {
		t.Errorf("deleting a deleted instance: %v", err)
	}
}

func TestScaleSetNetworkInterfaces(t *testing.T) {
	env := newTestEnv(t, Config{PageSize: 2})
	rg := env.emu.Fixture().ResourceGroup
	const name = "pool"
	ss, err := env.emu.CreateScaleSet(ScaleSetSpec{Name: name, Capacity: 3, PublicIP: true})
	if err != nil {
		t.Fatal(err)
	}
	nics := env.network.NewInterfacesClient()
	var all []*armnetwork.Interface
	for _, page := range allPages(t, nics.NewListVirtualMachineScaleSetNetworkInterfacesPager(rg, name, nil)) {
		all = append(all, page.Value...)
	}
	if len(all) != 3 {
		t.Fatalf("scale set NICs: %d, want 3", len(all))
	}
	if n := env.srv.CallCount("network:NetworkInterfaces_ListVirtualMachineScaleSetNetworkInterfaces"); n != 2 {
		t.Errorf("NetworkInterfaces_ListVirtualMachineScaleSetNetworkInterfaces counted %d, want 2 pages", n)
	}
	seen := map[string]bool{}
	for i, nic := range all {
		p := nic.Properties
		inst := ss.Instances[i]
		if len(p.IPConfigurations) != 1 || !val(p.Primary) || val(p.VirtualMachine.ID) == "" ||
			!strings.EqualFold(val(p.VirtualMachine.ID), inst.ID) || (strings.ToUpper(rg) != rg && val(p.VirtualMachine.ID) == inst.ID) {
			t.Errorf("NIC %d: %+v (VM %s)", i, p, val(p.VirtualMachine.ID))
			continue
		}
		c := p.IPConfigurations[0].Properties
		addr := val(c.PrivateIPAddress)
		if !val(c.Primary) || val(c.PrivateIPAllocationMethod) != armnetwork.IPAllocationMethodDynamic ||
			val(c.PrivateIPAddressVersion) != armnetwork.IPVersionIPv4 || !strings.EqualFold(val(c.Subnet.ID), env.emu.Fixture().SubnetID) ||
			addr == "" || seen[addr] || addr != inst.PrivateIP {
			t.Errorf("NIC %d IP configuration: %+v (instance %+v)", i, c, inst)
		}
		seen[addr] = true
		if cidr := env.emu.Fixture().SubnetCIDR; cidr != "" {
			if pf, err := netip.ParsePrefix(cidr); err != nil || !pf.Contains(netip.MustParseAddr(addr)) {
				t.Errorf("address %s is not in the subnet %s", addr, cidr)
			}
		}
		if c.PublicIPAddress == nil || !strings.HasSuffix(val(c.PublicIPAddress.ID), "/ipConfigurations/ipconfig1/publicIPAddresses/pub1") {
			t.Errorf("NIC %d public IP: %+v", i, c.PublicIPAddress)
		}
	}

	vmNICs := allPages(t, nics.NewListVirtualMachineScaleSetVMNetworkInterfacesPager(rg, name, "2", nil))
	if len(vmNICs) != 1 || len(vmNICs[0].Value) != 1 || val(vmNICs[0].Value[0].Properties.IPConfigurations[0].Properties.PrivateIPAddress) != ss.Instances[2].PrivateIP {
		t.Errorf("instance 2's NICs: %+v", vmNICs)
	}
	one, err := nics.GetVirtualMachineScaleSetNetworkInterface(cctx, rg, name, "1", name, nil)
	if err != nil || val(one.Name) != name || val(one.Etag) == "" {
		t.Fatalf("GetVirtualMachineScaleSetNetworkInterface: %v %+v", err, one)
	}
	_, err = nics.GetVirtualMachineScaleSetNetworkInterface(cctx, rg, name, "1", "other", nil)
	wantARMError(t, err, http.StatusNotFound, "NotFound")
	_, err = nics.NewListVirtualMachineScaleSetNetworkInterfacesPager(rg, "missing", nil).NextPage(cctx)
	wantARMError(t, err, http.StatusNotFound, "NotFound")
	ipcs := allPages(t, nics.NewListVirtualMachineScaleSetIPConfigurationsPager(rg, name, "1", name, nil))
	if len(ipcs) != 1 || len(ipcs[0].Value) != 1 || val(ipcs[0].Value[0].Name) != "ipconfig1" {
		t.Errorf("IP configurations: %+v", ipcs)
	}

	// Instance public IPs.
	pips := env.network.NewPublicIPAddressesClient()
	var addrs []string
	for _, page := range allPages(t, pips.NewListVirtualMachineScaleSetPublicIPAddressesPager(rg, name, nil)) {
		for _, p := range page.Value {
			addrs = append(addrs, val(p.Properties.IPAddress))
		}
	}
	if len(addrs) != 3 || addrs[0] == addrs[1] || addrs[0] != ss.Instances[0].PublicIP {
		t.Errorf("scale set public IPs %v, instances %+v", addrs, ss.Instances)
	}
	pip, err := pips.GetVirtualMachineScaleSetPublicIPAddress(cctx, rg, name, "1", name, "ipconfig1", "pub1", nil)
	if err != nil || val(pip.Properties.IPAddress) != ss.Instances[1].PublicIP {
		t.Fatalf("GetVirtualMachineScaleSetPublicIPAddress: %v %+v", err, pip)
	}
	if pages := allPages(t, pips.NewListVirtualMachineScaleSetVMPublicIPAddressesPager(rg, name, "1", name, "ipconfig1", nil)); len(pages) != 1 || len(pages[0].Value) != 1 {
		t.Errorf("instance public IPs: %+v", pages)
	}

	// Deleting an instance takes its NIC, and frees its address.
	if err := env.emu.DeleteScaleSetInstance(name, "1"); err != nil {
		t.Fatal(err)
	}
	_, err = nics.GetVirtualMachineScaleSetNetworkInterface(cctx, rg, name, "1", name, nil)
	wantARMError(t, err, http.StatusNotFound, "NotFound")
	added, err := env.emu.ScaleOut(name, 1)
	if err != nil || added[0].PrivateIP != ss.Instances[1].PrivateIP {
		t.Errorf("the new instance got %+v, want the freed address %s", added, ss.Instances[1].PrivateIP)
	}
}

func TestFlexibleScaleSet(t *testing.T) {
	env := newTestEnv(t, Config{})
	rg := env.emu.Fixture().ResourceGroup
	ss, err := env.emu.CreateScaleSet(ScaleSetSpec{Name: "flexpool", Capacity: 3, Flexible: true, Zones: []string{"1", "2"}, ComputerNamePrefix: "flexnode"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := env.compute.NewVirtualMachineScaleSetsClient().Get(cctx, rg, "flexpool", nil)
	if err != nil || val(got.Properties.OrchestrationMode) != armcompute.OrchestrationModeFlexible || val(got.SKU.Capacity) != 3 {
		t.Fatalf("flexible scale set: %v %+v", err, got)
	}
	vms := env.compute.NewVirtualMachinesClient()
	for _, inst := range ss.Instances {
		if len(inst.Name) != len("flexpool_")+8 || !strings.HasPrefix(inst.Name, "flexpool_") ||
			len(inst.ComputerName) != len("flexnode")+6 || !strings.HasPrefix(inst.ComputerName, "flexnode") || inst.InstanceID != "" {
			t.Errorf("flexible instance %+v", inst)
		}
		v, err := vms.Get(cctx, rg, inst.Name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if val(v.Properties.VirtualMachineScaleSet.ID) != ss.ID || val(v.Properties.OSProfile.ComputerName) != inst.ComputerName {
			t.Errorf("flexible VM %+v", v.Properties)
		}
	}
	// Flexible instances have ordinary NICs; the scale set NIC lists know
	// no such scale set.
	_, err = env.network.NewInterfacesClient().NewListVirtualMachineScaleSetNetworkInterfacesPager(rg, "flexpool", nil).NextPage(cctx)
	wantARMError(t, err, http.StatusNotFound, "NotFound")

	if err := env.emu.DeleteScaleSetInstance("flexpool", ss.Instances[0].Name); err != nil {
		t.Fatal(err)
	}
	_, err = vms.Get(cctx, rg, ss.Instances[0].Name, nil)
	wantARMError(t, err, http.StatusNotFound, "ResourceNotFound")
	if err := env.emu.DeleteScaleSet("flexpool"); err != nil {
		t.Fatal(err)
	}
	if pages := allPages(t, vms.NewListPager(rg, nil)); len(pages[0].Value) != 0 {
		t.Errorf("VMs left after deleting the scale set: %d", len(pages[0].Value))
	}
}

func TestComputeAPIVersions(t *testing.T) {
	env := newTestEnv(t, Config{})
	if _, err := env.emu.LaunchVM(VMSpec{Name: "v"}); err != nil {
		t.Fatal(err)
	}
	tok := env.emu.IssueToken()
	path := env.rgPath() + "/providers/Microsoft.Compute/virtualMachines/v"
	// 2025-04-01 is what the current armcompute generation sends.
	for _, v := range []string{"2025-04-01", "2024-11-01", "2024-07-01"} {
		status, body := env.raw(t, http.MethodGet, path, url.Values{"api-version": {v}}, tok)
		if status != http.StatusOK {
			t.Errorf("api-version %s: %d %v", v, status, body)
		}
		// The emulator's own bookkeeping never shows.
		for k := range body {
			if strings.HasPrefix(k, "_") {
				t.Errorf("the VM shows %s", k)
			}
		}
	}
	status, body := env.raw(t, http.MethodGet, path, url.Values{"api-version": {"2015-01-01"}}, tok)
	if status != http.StatusBadRequest || errorCode(body) != "NoRegisteredProviderFound" {
		t.Errorf("bogus api-version: %d %v", status, body)
	}
	// The scale set network paths take the network provider's old version.
	nicPath := env.rgPath() + "/providers/microsoft.Compute/virtualMachineScaleSets/x/networkInterfaces"
	if status, body := env.raw(t, http.MethodGet, nicPath, url.Values{"api-version": {"2024-11-01"}}, tok); status != http.StatusBadRequest || errorCode(body) != "NoRegisteredProviderFound" {
		t.Errorf("compute api-version on a network path: %d %v", status, body)
	}
	// Compute is read-only through ARM.
	if status, _ := env.raw(t, http.MethodDelete, path, url.Values{"api-version": {"2024-11-01"}}, tok); status != http.StatusMethodNotAllowed {
		t.Errorf("DELETE of a VM: %d", status)
	}
}

func TestComputeThrottledGetIsRetried(t *testing.T) {
	env := newTestEnv(t, Config{})
	rg := env.emu.Fixture().ResourceGroup
	if _, err := env.emu.LaunchVM(VMSpec{Name: "v"}); err != nil {
		t.Fatal(err)
	}
	if err := env.srv.SetFault(cloudsim.FaultSpec{Op: "compute:VirtualMachines_Get", ThrottleNext: 1}); err != nil {
		t.Fatal(err)
	}
	// ARM's Retry-After is in whole seconds: allow the retry to wait one.
	opts := *env.opts
	opts.Retry.MaxRetryDelay = 5 * time.Second
	vms, err := armcompute.NewVirtualMachinesClient(env.emu.Config().SubscriptionID, env.cred, &arm.ClientOptions{ClientOptions: opts.ClientOptions})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := vms.Get(cctx, rg, "v", nil); err != nil {
		t.Fatal(err)
	}
	if n := env.srv.CallCount("compute:VirtualMachines_Get"); n != 2 {
		t.Errorf("VirtualMachines_Get counted %d times, want 2 (throttled, retried)", n)
	}
	// Without a retry the client sees ARM's 429.
	if err := env.srv.SetFault(cloudsim.FaultSpec{Op: "compute:VirtualMachines_Get", ThrottleNext: 1}); err != nil {
		t.Fatal(err)
	}
	opts.Retry.MaxRetries = -1
	once, _ := armcompute.NewVirtualMachinesClient(env.emu.Config().SubscriptionID, env.cred, &arm.ClientOptions{ClientOptions: opts.ClientOptions})
	_, err = once.Get(cctx, rg, "v", nil)
	wantARMError(t, err, http.StatusTooManyRequests, "SubscriptionRequestsThrottled")
}
