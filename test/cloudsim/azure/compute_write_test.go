package azure

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v6"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
)

// poolEnv is a Uniform scale set "nodes" of two instances and a Standard
// load balancer "kubernetes" whose pool "pool" is empty, for pools by
// IP configuration.
type poolEnv struct {
	*testEnv
	f      Fixture
	ss     ScaleSetInfo
	lbID   string
	poolID string
	sets   *armcompute.VirtualMachineScaleSetsClient
	vms    *armcompute.VirtualMachineScaleSetVMsClient
}

func newPoolEnv(t *testing.T, cfg Config) *poolEnv {
	t.Helper()
	env := newTestEnv(t, cfg)
	f := env.emu.Fixture()
	ss, err := env.emu.CreateScaleSet(ScaleSetSpec{Name: "nodes", Capacity: 2})
	if err != nil {
		t.Fatal(err)
	}
	pip := env.nwPublicIP(t, f.ResourceGroup, "lb-pip", "")
	lbID := nwLBID(f, "kubernetes")
	env.nwPutLB(t, f.ResourceGroup, "kubernetes", nwLB(f, lbID, *pip.ID))
	return &poolEnv{testEnv: env, f: f, ss: ss, lbID: lbID, poolID: lbID + "/backendAddressPools/pool",
		sets: env.compute.NewVirtualMachineScaleSetsClient(), vms: env.compute.NewVirtualMachineScaleSetVMsClient()}
}

// withPool returns pools with id added, or removed (as the upstream CCM
// edits an IP configuration's loadBalancerBackendAddressPools).
func withPool(pools []*armcompute.SubResource, id string, add bool) []*armcompute.SubResource {
	out := []*armcompute.SubResource{}
	for _, p := range pools {
		if !strings.EqualFold(val(p.ID), id) {
			out = append(out, p)
		}
	}
	if add {
		out = append(out, &armcompute.SubResource{ID: to.Ptr(id)})
	}
	return out
}

// putModelPool adds or removes a pool in the scale set's model the way
// the upstream CCM does (ensureVMSSInPool, EnsureBackendPoolDeletedFromVMSets):
// read the scale set, edit the primary IP configuration, PUT location,
// network profile and etag only.
func (pe *poolEnv) putModelPool(t *testing.T, poolID string, add bool) (armcompute.VirtualMachineScaleSet, error) {
	t.Helper()
	ctx := nwCtx(t)
	got, err := pe.sets.Get(ctx, pe.f.ResourceGroup, "nodes", nil)
	if err != nil {
		t.Fatal(err)
	}
	nics := got.Properties.VirtualMachineProfile.NetworkProfile.NetworkInterfaceConfigurations
	ipc := nics[0].Properties.IPConfigurations[0].Properties
	ipc.LoadBalancerBackendAddressPools = withPool(ipc.LoadBalancerBackendAddressPools, poolID, add)
	p, err := pe.sets.BeginCreateOrUpdate(ctx, pe.f.ResourceGroup, "nodes", armcompute.VirtualMachineScaleSet{
		Location: got.Location,
		Properties: &armcompute.VirtualMachineScaleSetProperties{VirtualMachineProfile: &armcompute.VirtualMachineScaleSetVMProfile{
			NetworkProfile: &armcompute.VirtualMachineScaleSetNetworkProfile{NetworkInterfaceConfigurations: nics},
		}},
		Etag: got.Etag,
	}, nil)
	if err != nil {
		return armcompute.VirtualMachineScaleSet{}, err
	}
	res, err := p.PollUntilDone(ctx, nwPoll)
	return res.VirtualMachineScaleSet, err
}

// instanceUpdate is the body the upstream CCM sends for an instance
// (EnsureHostInPool, ensureBackendPoolDeletedFromNode): its network
// configurations as read with the pool added or removed, and its etag.
func instanceUpdate(vm armcompute.VirtualMachineScaleSetVM, poolID string, add bool) armcompute.VirtualMachineScaleSetVM {
	cfgs := vm.Properties.NetworkProfileConfiguration.NetworkInterfaceConfigurations
	ipc := cfgs[0].Properties.IPConfigurations[0].Properties
	ipc.LoadBalancerBackendAddressPools = withPool(ipc.LoadBalancerBackendAddressPools, poolID, add)
	return armcompute.VirtualMachineScaleSetVM{
		Location: vm.Location,
		Properties: &armcompute.VirtualMachineScaleSetVMProperties{
			HardwareProfile:             vm.Properties.HardwareProfile,
			NetworkProfileConfiguration: &armcompute.VirtualMachineScaleSetVMNetworkProfileConfiguration{NetworkInterfaceConfigurations: cfgs},
		},
		Etag: vm.Etag,
	}
}

// putInstancePool adds or removes a pool on an instance as the upstream
// CCM does (UpdateVMSSVMsInBatch): read it, edit, PUT with If-Match.
func (pe *poolEnv) putInstancePool(t *testing.T, id, poolID string, add bool) (armcompute.VirtualMachineScaleSetVM, error) {
	t.Helper()
	ctx := nwCtx(t)
	vm, err := pe.vms.Get(ctx, pe.f.ResourceGroup, "nodes", id, nil)
	if err != nil {
		t.Fatal(err)
	}
	body := instanceUpdate(vm.VirtualMachineScaleSetVM, poolID, add)
	p, err := pe.vms.BeginUpdate(ctx, pe.f.ResourceGroup, "nodes", id, body, &armcompute.VirtualMachineScaleSetVMsClientBeginUpdateOptions{IfMatch: body.Etag})
	if err != nil {
		return armcompute.VirtualMachineScaleSetVM{}, err
	}
	res, err := p.PollUntilDone(ctx, nwPoll)
	return res.VirtualMachineScaleSetVM, err
}

// upgrade applies the model to instances (UpdateInstances).
func (pe *poolEnv) upgrade(t *testing.T, ids ...string) error {
	t.Helper()
	ctx := nwCtx(t)
	p, err := pe.sets.BeginUpdateInstances(ctx, pe.f.ResourceGroup, "nodes", armcompute.VirtualMachineScaleSetVMInstanceRequiredIDs{InstanceIDs: to.SliceOfPtrs(ids...)}, nil)
	if err != nil {
		return err
	}
	_, err = p.PollUntilDone(ctx, nwPoll)
	return err
}

// members are the IP configurations the pool lists.
func (pe *poolEnv) members(t *testing.T) []string {
	t.Helper()
	pool, err := pe.network.NewLoadBalancerBackendAddressPoolsClient().Get(nwCtx(t), pe.f.ResourceGroup, "kubernetes", "pool", nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range pool.Properties.BackendIPConfigurations {
		ids = append(ids, val(r.ID))
	}
	return ids
}

// stale lists the instances whose latestModelApplied is false.
func (pe *poolEnv) stale(t *testing.T) []string {
	t.Helper()
	f := "properties/latestModelApplied eq false"
	var ids []string
	for _, page := range allPages(t, pe.vms.NewListPager(pe.f.ResourceGroup, "nodes", &armcompute.VirtualMachineScaleSetVMsClientListOptions{Filter: &f})) {
		for _, v := range page.Value {
			ids = append(ids, val(v.InstanceID))
		}
	}
	return ids
}

// ipConfigOf is the ID of an instance's network interface IP
// configuration, as pools list it.
func (pe *poolEnv) ipConfigOf(i int) string {
	return pe.ss.Instances[i].NICID + "/ipConfigurations/ipconfig1"
}

// TestScaleSetPoolMembership: the upstream CCM's round for pools by IP
// configuration. A model change leaves the instances out of the pool
// (latestModelApplied false) until an instance update or an upgrade puts
// them in; removal goes the same way, here through PATCH.
func TestScaleSetPoolMembership(t *testing.T) {
	pe := newPoolEnv(t, Config{})
	ctx := nwCtx(t)
	rg := pe.f.ResourceGroup

	before, err := pe.sets.Get(ctx, rg, "nodes", nil)
	if err != nil {
		t.Fatal(err)
	}
	if val(before.Etag) != `"1"` {
		t.Fatalf("a new scale set's etag %s, want \"1\"", val(before.Etag))
	}
	ss, err := pe.putModelPool(t, pe.poolID, true)
	if err != nil {
		t.Fatal(err)
	}
	ipc := ss.Properties.VirtualMachineProfile.NetworkProfile.NetworkInterfaceConfigurations[0].Properties.IPConfigurations[0].Properties
	if val(ss.Etag) != `"2"` || val(ss.Properties.ProvisioningState) != "Succeeded" || len(ipc.LoadBalancerBackendAddressPools) != 1 ||
		!strings.EqualFold(val(ipc.Subnet.ID), pe.f.SubnetID) {
		t.Fatalf("scale set after the model PUT: etag %s state %s ipconfig %+v", val(ss.Etag), val(ss.Properties.ProvisioningState), ipc)
	}
	// What the PUT left out is kept.
	if val(ss.SKU.Capacity) != 2 || ss.Properties.VirtualMachineProfile.StorageProfile == nil ||
		val(ss.Properties.VirtualMachineProfile.OSProfile.ComputerNamePrefix) != "nodes" || val(ss.Properties.UpgradePolicy.Mode) != armcompute.UpgradeModeManual {
		t.Fatalf("the PUT lost the rest of the scale set: %+v", ss.Properties)
	}
	if got := pe.stale(t); !slices.Equal(got, []string{"0", "1"}) {
		t.Fatalf("instances behind the model %v, want 0 and 1", got)
	}
	if m := pe.members(t); len(m) != 0 {
		t.Fatalf("the model alone put %v in the pool", m)
	}

	// Instance 0 through its own update.
	vm0, err := pe.putInstancePool(t, "0", pe.poolID, true)
	if err != nil {
		t.Fatal(err)
	}
	if val(vm0.Etag) != `"2"` || !val(vm0.Properties.LatestModelApplied) || val(vm0.Properties.ProvisioningState) != "Succeeded" {
		t.Fatalf("instance 0 after its update: etag %s latestModelApplied %v state %s", val(vm0.Etag), val(vm0.Properties.LatestModelApplied), val(vm0.Properties.ProvisioningState))
	}
	if m := pe.members(t); !slices.Equal(m, []string{pe.ipConfigOf(0)}) {
		t.Fatalf("pool members %v, want instance 0's %s", m, pe.ipConfigOf(0))
	}
	if pools, ok := pe.emu.BackendPools("nodes_0"); !ok || !slices.Equal(pools, []string{pe.poolID}) {
		t.Fatalf("BackendPools(nodes_0) = %v %v", pools, ok)
	}
	if pools, ok := pe.emu.BackendPools("nodes_1"); !ok || len(pools) != 0 {
		t.Fatalf("BackendPools(nodes_1) = %v %v, want none yet", pools, ok)
	}
	// The network interface says so too.
	nic, err := pe.network.NewInterfacesClient().GetVirtualMachineScaleSetNetworkInterface(ctx, rg, "nodes", "0", "nodes", nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := nic.Properties.IPConfigurations[0].Properties.LoadBalancerBackendAddressPools; len(p) != 1 || val(p[0].ID) != pe.poolID {
		t.Fatalf("instance 0's NIC pools %+v", p)
	}

	// Instance 1 through an upgrade to the model.
	if err := pe.upgrade(t, "1"); err != nil {
		t.Fatal(err)
	}
	if m := pe.members(t); !slices.Equal(m, []string{pe.ipConfigOf(0), pe.ipConfigOf(1)}) {
		t.Fatalf("pool members %v after the upgrade", m)
	}
	if got := pe.stale(t); len(got) != 0 {
		t.Fatalf("instances %v still behind the model", got)
	}

	// The pool lists its members among its addresses without an IP
	// address (how the upstream CCM tells a NIC-based pool), and a load
	// balancer PUT of what was read keeps them.
	lb, err := pe.network.NewLoadBalancersClient().Get(ctx, rg, "kubernetes", nil)
	if err != nil {
		t.Fatal(err)
	}
	addrs := lb.Properties.BackendAddressPools[0].Properties.LoadBalancerBackendAddresses
	if len(addrs) != 2 || addrs[0].Properties.IPAddress != nil || val(addrs[0].Properties.NetworkInterfaceIPConfiguration.ID) != pe.ipConfigOf(0) || val(addrs[0].Name) == "" {
		t.Fatalf("pool addresses %+v", addrs)
	}
	pe.nwPutLB(t, rg, "kubernetes", lb.LoadBalancer)
	if m := pe.members(t); len(m) != 2 {
		t.Fatalf("members after a load balancer PUT: %v", m)
	}

	// Removal: the model through PATCH (only what changes), then the
	// instances.
	p, err := pe.sets.BeginUpdate(ctx, rg, "nodes", armcompute.VirtualMachineScaleSetUpdate{
		Properties: &armcompute.VirtualMachineScaleSetUpdateProperties{VirtualMachineProfile: &armcompute.VirtualMachineScaleSetUpdateVMProfile{
			NetworkProfile: &armcompute.VirtualMachineScaleSetUpdateNetworkProfile{NetworkInterfaceConfigurations: []*armcompute.VirtualMachineScaleSetUpdateNetworkConfiguration{{
				Name: to.Ptr("nodes"),
				Properties: &armcompute.VirtualMachineScaleSetUpdateNetworkConfigurationProperties{IPConfigurations: []*armcompute.VirtualMachineScaleSetUpdateIPConfiguration{{
					Name:       to.Ptr("ipconfig1"),
					Properties: &armcompute.VirtualMachineScaleSetUpdateIPConfigurationProperties{LoadBalancerBackendAddressPools: []*armcompute.SubResource{}},
				}}},
			}}},
		}},
	}, nil)
	patched := nwDone(t, p, err)
	ipc = patched.Properties.VirtualMachineProfile.NetworkProfile.NetworkInterfaceConfigurations[0].Properties.IPConfigurations[0].Properties
	if len(ipc.LoadBalancerBackendAddressPools) != 0 || !strings.EqualFold(val(ipc.Subnet.ID), pe.f.SubnetID) || val(patched.Etag) != `"3"` {
		t.Fatalf("model after the PATCH: etag %s ipconfig %+v", val(patched.Etag), ipc)
	}
	if got := pe.stale(t); !slices.Equal(got, []string{"0", "1"}) {
		t.Fatalf("instances behind the model %v after removal from it", got)
	}
	if m := pe.members(t); len(m) != 2 {
		t.Fatalf("the model's removal took %v out already", m)
	}
	if _, err := pe.putInstancePool(t, "0", pe.poolID, false); err != nil {
		t.Fatal(err)
	}
	if err := pe.upgrade(t, "1"); err != nil {
		t.Fatal(err)
	}
	if m := pe.members(t); len(m) != 0 {
		t.Fatalf("pool members %v after removal", m)
	}
	if pools, _ := pe.emu.BackendPools("nodes_1"); len(pools) != 0 {
		t.Fatalf("BackendPools(nodes_1) = %v after removal", pools)
	}
	if got := pe.stale(t); len(got) != 0 {
		t.Fatalf("instances %v behind the model after removal", got)
	}
	if info, _ := pe.emu.ScaleSet("nodes"); len(info.Instances[0].BackendPools) != 0 {
		t.Fatalf("ScaleSet reports pools %v", info.Instances[0].BackendPools)
	}

	for op, want := range map[string]int{
		"compute:VirtualMachineScaleSets_CreateOrUpdate":  1,
		"compute:VirtualMachineScaleSets_Update":          1,
		"compute:VirtualMachineScaleSetVMs_Update":        2,
		"compute:VirtualMachineScaleSets_UpdateInstances": 2,
	} {
		if n := pe.srv.CallCount(op); n != want {
			t.Errorf("%s counted %d times, want %d", op, n, want)
		}
	}
}

// TestScaleSetWriteOperation: Compute's writes are long-running: 200
// with Azure-AsyncOperation and the ETag, provisioningState Updating
// until the operation completes; UpdateInstances answers 202. A write
// that changes nothing keeps the ETag.
func TestScaleSetWriteOperation(t *testing.T) {
	pe := newPoolEnv(t, Config{OperationDelay: 500 * time.Millisecond})
	rg := pe.f.ResourceGroup
	ctx := nwCtx(t)

	var resp *http.Response
	p, err := pe.sets.BeginUpdate(runtime.WithCaptureResponse(ctx, &resp), rg, "nodes", armcompute.VirtualMachineScaleSetUpdate{Tags: map[string]*string{"team": to.Ptr("a")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Azure-AsyncOperation"), "/providers/Microsoft.Compute/locations/eastus/operations/") ||
		resp.Header.Get("ETag") != `"2"` {
		t.Fatalf("PATCH answered %d, headers %v", resp.StatusCode, resp.Header)
	}
	got, _ := pe.sets.Get(ctx, rg, "nodes", nil)
	if val(got.Properties.ProvisioningState) != "Updating" || val(got.Tags["team"]) != "a" {
		t.Fatalf("while in progress: %s %v", val(got.Properties.ProvisioningState), got.Tags)
	}
	done := nwDone(t, p, nil)
	if val(done.Properties.ProvisioningState) != "Succeeded" || val(done.Etag) != `"2"` {
		t.Fatalf("after: %s %s", val(done.Properties.ProvisioningState), val(done.Etag))
	}
	// The same again changes nothing: the ETag stays.
	p, err = pe.sets.BeginUpdate(ctx, rg, "nodes", armcompute.VirtualMachineScaleSetUpdate{Tags: map[string]*string{"team": to.Ptr("a")}}, nil)
	if done = nwDone(t, p, err); val(done.Etag) != `"2"` {
		t.Fatalf("a no-op update moved the etag to %s", val(done.Etag))
	}

	vm, _ := pe.vms.Get(ctx, rg, "nodes", "0", nil)
	body := instanceUpdate(vm.VirtualMachineScaleSetVM, pe.poolID, true)
	vp, err := pe.vms.BeginUpdate(runtime.WithCaptureResponse(ctx, &resp), rg, "nodes", "0", body, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("instance update: %v %d", err, resp.StatusCode)
	}
	if vm, _ = pe.vms.Get(ctx, rg, "nodes", "0", nil); val(vm.Properties.ProvisioningState) != "Updating" {
		t.Fatalf("instance while in progress: %s", val(vm.Properties.ProvisioningState))
	}
	nwDone(t, vp, nil)

	up, err := pe.sets.BeginUpdateInstances(runtime.WithCaptureResponse(ctx, &resp), rg, "nodes", armcompute.VirtualMachineScaleSetVMInstanceRequiredIDs{InstanceIDs: to.SliceOfPtrs("1")}, nil)
	if err != nil || resp.StatusCode != http.StatusAccepted || resp.Header.Get("Location") == "" {
		t.Fatalf("UpdateInstances: %v %d %v", err, resp.StatusCode, resp.Header)
	}
	if vm, _ = pe.vms.Get(ctx, rg, "nodes", "1", nil); val(vm.Properties.ProvisioningState) != "Updating" {
		t.Fatalf("upgraded instance while in progress: %s", val(vm.Properties.ProvisioningState))
	}
	nwDone(t, up, nil)
	if vm, _ = pe.vms.Get(ctx, rg, "nodes", "1", nil); val(vm.Properties.ProvisioningState) != "Succeeded" {
		t.Fatalf("upgraded instance after: %s", val(vm.Properties.ProvisioningState))
	}
}

// TestScaleSetETag: a stale If-Match is Compute's 412 on the scale set
// and its instances, and If-None-Match * refuses to overwrite.
func TestScaleSetETag(t *testing.T) {
	pe := newPoolEnv(t, Config{})
	rg := pe.f.ResourceGroup
	ctx := nwCtx(t)
	vm, _ := pe.vms.Get(ctx, rg, "nodes", "0", nil)
	if val(vm.Etag) != `"1"` {
		t.Fatalf("a new instance's etag %s", val(vm.Etag))
	}
	if _, err := pe.putInstancePool(t, "0", pe.poolID, true); err != nil {
		t.Fatal(err)
	}
	// The upstream CCM's update from a cache read before that one.
	body := instanceUpdate(vm.VirtualMachineScaleSetVM, pe.poolID, false)
	_, err := pe.vms.BeginUpdate(ctx, rg, "nodes", "0", body, &armcompute.VirtualMachineScaleSetVMsClientBeginUpdateOptions{IfMatch: vm.Etag})
	re := wantARMError(t, err, http.StatusPreconditionFailed, "PreconditionFailed")
	// Compute's wording; the error text holds the JSON body, quotes escaped.
	if !strings.Contains(re.Error(), `Etag provided in if-match header \"1\" does not match etag \"2\" of resource.`) {
		t.Fatalf("message: %v", re)
	}
	if m := pe.members(t); len(m) != 1 {
		t.Fatalf("a refused update changed the pool: %v", m)
	}

	ss, _ := pe.sets.Get(ctx, rg, "nodes", nil)
	stale := val(ss.Etag)
	if _, err := pe.putModelPool(t, pe.poolID, true); err != nil {
		t.Fatal(err)
	}
	ss.Properties.VirtualMachineProfile.NetworkProfile.NetworkInterfaceConfigurations[0].Properties.IPConfigurations[0].Properties.LoadBalancerBackendAddressPools = nil
	_, err = pe.sets.BeginCreateOrUpdate(ctx, rg, "nodes", ss.VirtualMachineScaleSet, &armcompute.VirtualMachineScaleSetsClientBeginCreateOrUpdateOptions{IfMatch: &stale})
	wantARMError(t, err, http.StatusPreconditionFailed, "PreconditionFailed")
	_, err = pe.sets.BeginUpdate(ctx, rg, "nodes", armcompute.VirtualMachineScaleSetUpdate{}, &armcompute.VirtualMachineScaleSetsClientBeginUpdateOptions{IfMatch: &stale})
	wantARMError(t, err, http.StatusPreconditionFailed, "PreconditionFailed")
	_, err = pe.sets.BeginCreateOrUpdate(ctx, rg, "nodes", ss.VirtualMachineScaleSet, &armcompute.VirtualMachineScaleSetsClientBeginCreateOrUpdateOptions{IfNoneMatch: to.Ptr("*")})
	wantARMError(t, err, http.StatusPreconditionFailed, "PreconditionFailed")
	// The current ETag passes.
	cur, _ := pe.sets.Get(ctx, rg, "nodes", nil)
	p, err := pe.sets.BeginUpdate(ctx, rg, "nodes", armcompute.VirtualMachineScaleSetUpdate{Tags: map[string]*string{"x": to.Ptr("y")}}, &armcompute.VirtualMachineScaleSetsClientBeginUpdateOptions{IfMatch: cur.Etag})
	nwDone(t, p, err)
}

// TestScaleSetPoolValidation: the network provider's refusals of pool
// references, for a scale set's model, an instance and a standalone
// VM's network interface alike.
func TestScaleSetPoolValidation(t *testing.T) {
	pe := newPoolEnv(t, Config{})
	f := pe.f
	rg := f.ResourceGroup
	ctx := nwCtx(t)

	// A pool of IP-based addresses.
	ipPIP := pe.nwPublicIP(t, rg, "ip-pip", "")
	ipLBID := nwLBID(f, "by-ip")
	pe.nwPutLB(t, rg, "by-ip", nwLB(f, ipLBID, *ipPIP.ID, "10.240.0.50"))
	// An internal load balancer in another virtual network.
	vp, err := pe.network.NewVirtualNetworksClient().BeginCreateOrUpdate(ctx, rg, "other-vnet", armnetwork.VirtualNetwork{
		Location: to.Ptr(f.Location),
		Properties: &armnetwork.VirtualNetworkPropertiesFormat{
			AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: to.SliceOfPtrs("192.168.0.0/16")},
			Subnets:      []*armnetwork.Subnet{{Name: to.Ptr("other"), Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: to.Ptr("192.168.1.0/24")}}},
		},
	}, nil)
	otherVNet := nwDone(t, vp, err)
	otherLBID := nwLBID(f, "elsewhere")
	internal := nwLB(f, otherLBID, "")
	internal.Properties.FrontendIPConfigurations[0].Properties.PublicIPAddress = nil
	internal.Properties.FrontendIPConfigurations[0].Properties.Subnet = &armnetwork.Subnet{ID: otherVNet.Properties.Subnets[0].ID}
	pe.nwPutLB(t, rg, "elsewhere", internal)

	if _, err := pe.emu.LaunchVM(VMSpec{Name: "solo"}); err != nil {
		t.Fatal(err)
	}
	missing := pe.lbID + "/backendAddressPools/nope"
	for _, tc := range []struct {
		name, pool string
		status     int
		code       string
	}{
		{"a pool that does not exist", missing, http.StatusBadRequest, "InvalidResourceReference"},
		{"a load balancer that does not exist", nwLBID(f, "nope") + "/backendAddressPools/pool", http.StatusBadRequest, "InvalidResourceReference"},
		{"a reference of the wrong type", pe.lbID + "/probes/probe-80", http.StatusBadRequest, "InvalidRequestFormat"},
		{"a pool with IP-based addresses", ipLBID + "/backendAddressPools/pool", http.StatusBadRequest, "CannotMixIPBasedAddressesAndIPConfigurationsOnLoadBalancerBackendAddressPool"},
		{"a load balancer in another virtual network", otherLBID + "/backendAddressPools/pool", http.StatusBadRequest, "NetworkInterfaceAndLoadBalancerAreInDifferentVirtualNetworks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pe.putModelPool(t, tc.pool, true)
			re := wantARMError(t, err, tc.status, tc.code)
			if tc.code == "InvalidResourceReference" && !strings.Contains(re.Error(), "referenced by resource "+pe.ss.ID+" was not found") {
				t.Errorf("message: %v", re)
			}
			_, err = pe.putInstancePool(t, "0", tc.pool, true)
			wantARMError(t, err, tc.status, tc.code)
			// A standalone VM's network interface, as the upstream CCM
			// puts availability set nodes in: read, add, PUT.
			nics := pe.network.NewInterfacesClient()
			nic, err := nics.Get(ctx, rg, "solo-nic", nil)
			if err != nil {
				t.Fatal(err)
			}
			ip := nic.Properties.IPConfigurations[0].Properties
			ip.LoadBalancerBackendAddressPools = append(ip.LoadBalancerBackendAddressPools, &armnetwork.BackendAddressPool{ID: to.Ptr(tc.pool)})
			np, err := nics.BeginCreateOrUpdate(ctx, rg, "solo-nic", nic.Interface, nil)
			nwWantErr(t, nwErr(t, np, err), tc.status, tc.code)
		})
		if t.Failed() {
			break
		}
	}
	if got := pe.stale(t); len(got) != 0 {
		t.Fatalf("refused model writes left instances %v behind", got)
	}
	ss, _ := pe.sets.Get(ctx, rg, "nodes", nil)
	if val(ss.Etag) != `"1"` {
		t.Fatalf("refused writes moved the etag to %s", val(ss.Etag))
	}

	// Instances: a missing one, one that is not a number; upgrades of no
	// instance or an unknown one.
	body := armcompute.VirtualMachineScaleSetVM{Properties: &armcompute.VirtualMachineScaleSetVMProperties{}}
	_, err = pe.vms.BeginUpdate(ctx, rg, "nodes", "9", body, nil)
	wantARMError(t, err, http.StatusNotFound, "NotFound")
	_, err = pe.vms.BeginUpdate(ctx, rg, "nodes", "x9", body, nil)
	wantARMError(t, err, http.StatusBadRequest, "InvalidParameter")
	_, err = pe.sets.BeginUpdateInstances(ctx, rg, "nodes", armcompute.VirtualMachineScaleSetVMInstanceRequiredIDs{InstanceIDs: to.SliceOfPtrs("0", "7")}, nil)
	wantARMError(t, err, http.StatusBadRequest, "InvalidParameter")
	_, err = pe.sets.BeginUpdateInstances(ctx, rg, "nodes", armcompute.VirtualMachineScaleSetVMInstanceRequiredIDs{InstanceIDs: []*string{}}, nil)
	wantARMError(t, err, http.StatusBadRequest, "InvalidParameter")

	// What the emulator does not do through ARM says so.
	ss.Name, ss.ID = nil, nil
	_, err = pe.sets.BeginCreateOrUpdate(ctx, rg, "new-set", ss.VirtualMachineScaleSet, nil)
	wantARMError(t, err, http.StatusNotImplemented, "NotImplemented")
	_, err = pe.sets.BeginUpdate(ctx, rg, "nodes", armcompute.VirtualMachineScaleSetUpdate{SKU: &armcompute.SKU{Capacity: to.Ptr[int64](5)}}, nil)
	wantARMError(t, err, http.StatusNotImplemented, "NotImplemented")
	_, err = pe.sets.BeginUpdate(ctx, rg, "missing", armcompute.VirtualMachineScaleSetUpdate{}, nil)
	wantARMError(t, err, http.StatusNotFound, "ResourceNotFound")
}

// TestPoolMixingFromThePool: a pool with IP configuration members takes
// no IP-based addresses, through the load balancer or the pool.
func TestPoolMixingFromThePool(t *testing.T) {
	pe := newPoolEnv(t, Config{})
	rg := pe.f.ResourceGroup
	ctx := nwCtx(t)
	if _, err := pe.putInstancePool(t, "0", pe.poolID, true); err != nil {
		t.Fatal(err)
	}
	lb, err := pe.network.NewLoadBalancersClient().Get(ctx, rg, "kubernetes", nil)
	if err != nil {
		t.Fatal(err)
	}
	pool := lb.Properties.BackendAddressPools[0]
	ipAddr := &armnetwork.LoadBalancerBackendAddress{Name: to.Ptr("node-x"), Properties: &armnetwork.LoadBalancerBackendAddressPropertiesFormat{
		IPAddress: to.Ptr("10.240.0.60"), VirtualNetwork: &armnetwork.SubResource{ID: to.Ptr(pe.f.VNetID)},
	}}
	pool.Properties.LoadBalancerBackendAddresses = append(pool.Properties.LoadBalancerBackendAddresses, ipAddr)
	err = pe.nwLBErr(t, rg, "kubernetes", lb.LoadBalancer)
	nwWantErr(t, err, http.StatusBadRequest, "CannotMixIPBasedAddressesAndIPConfigurationsOnLoadBalancerBackendAddressPool")
	pools := pe.network.NewLoadBalancerBackendAddressPoolsClient()
	p, err := pools.BeginCreateOrUpdate(ctx, rg, "kubernetes", "pool", armnetwork.BackendAddressPool{
		Properties: &armnetwork.BackendAddressPoolPropertiesFormat{LoadBalancerBackendAddresses: []*armnetwork.LoadBalancerBackendAddress{ipAddr}},
	}, nil)
	nwWantErr(t, nwErr(t, p, err), http.StatusBadRequest, "CannotMixIPBasedAddressesAndIPConfigurationsOnLoadBalancerBackendAddressPool")

	// Once the member leaves, the pool may take addresses.
	if _, err := pe.putInstancePool(t, "0", pe.poolID, false); err != nil {
		t.Fatal(err)
	}
	p, err = pools.BeginCreateOrUpdate(ctx, rg, "kubernetes", "pool", armnetwork.BackendAddressPool{
		Properties: &armnetwork.BackendAddressPoolPropertiesFormat{LoadBalancerBackendAddresses: []*armnetwork.LoadBalancerBackendAddress{ipAddr}},
	}, nil)
	nwDone(t, p, err)
}

// TestPoolInUse: a pool a scale set's model names, or that holds IP
// configurations, cannot be removed; the load balancer's DELETE is refused
// with ARM's LoadBalancerInUseByVirtualMachineScaleSet while the scale set
// (model or instance) uses a pool.
func TestPoolInUse(t *testing.T) {
	pe := newPoolEnv(t, Config{})
	rg := pe.f.ResourceGroup
	ctx := nwCtx(t)
	lbs := pe.network.NewLoadBalancersClient()
	pools := pe.network.NewLoadBalancerBackendAddressPoolsClient()
	refused := func(why string) {
		t.Helper()
		p, err := lbs.BeginDelete(ctx, rg, "kubernetes", nil)
		re := nwWantErr(t, nwErr(t, p, err), http.StatusBadRequest, "LoadBalancerInUseByVirtualMachineScaleSet")
		if want := "Cannot delete load balancer " + pe.lbID + " since its child resources pool are in use by virtual machine scale set " + pe.ss.ID + "."; !strings.Contains(re.Error(), want) {
			t.Fatalf("%s: message %v, want %q", why, re, want)
		}
		dp, err := pools.BeginDelete(ctx, rg, "kubernetes", "pool", nil)
		re = nwWantErr(t, nwErr(t, dp, err), http.StatusBadRequest, "BackendAddressPoolInUse")
		if !strings.Contains(re.Error(), "Cannot remove backend address pool pool from load balancer since it is in use by virtual machine scale set "+pe.ss.ID) {
			t.Fatalf("%s: message %v", why, re)
		}
		lb, err := lbs.Get(ctx, rg, "kubernetes", nil)
		if err != nil {
			t.Fatal(err)
		}
		lb.Properties.LoadBalancingRules, lb.Properties.BackendAddressPools = nil, nil
		nwWantErr(t, pe.nwLBErr(t, rg, "kubernetes", lb.LoadBalancer), http.StatusBadRequest, "BackendAddressPoolInUse")
	}

	if _, err := pe.putModelPool(t, pe.poolID, true); err != nil {
		t.Fatal(err)
	}
	refused("the model names the pool")
	if err := pe.upgrade(t, "0"); err != nil {
		t.Fatal(err)
	}
	if _, err := pe.putModelPool(t, pe.poolID, false); err != nil {
		t.Fatal(err)
	}
	refused("instance 0 is in the pool")
	if err := pe.upgrade(t, "0"); err != nil {
		t.Fatal(err)
	}
	p, err := lbs.BeginDelete(ctx, rg, "kubernetes", nil)
	nwDone(t, p, err)
}

// TestDeleteLoadBalancerWithNICMembers: stand-alone NICs in a pool do not
// stop the load balancer's DELETE (the upstream CCM deletes it without
// taking availability-set NICs out); the provider drops the references
// from the NICs' IP configurations and rewrites them. The pool itself
// still cannot be removed while they are in it.
func TestDeleteLoadBalancerWithNICMembers(t *testing.T) {
	pe := newPoolEnv(t, Config{})
	rg := pe.f.ResourceGroup
	ctx := nwCtx(t)
	vm, err := pe.emu.LaunchVM(VMSpec{Name: "standalone"})
	if err != nil {
		t.Fatal(err)
	}
	nics := pe.network.NewInterfacesClient()
	nicName := lastSegment(vm.NICID)
	nic, err := nics.Get(ctx, rg, nicName, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := nic.Properties.IPConfigurations[0]
	cfg.Properties.LoadBalancerBackendAddressPools = append(cfg.Properties.LoadBalancerBackendAddressPools, &armnetwork.BackendAddressPool{ID: to.Ptr(pe.poolID)})
	np, err := nics.BeginCreateOrUpdate(ctx, rg, nicName, nic.Interface, nil)
	written := nwDone(t, np, err)

	pools := pe.network.NewLoadBalancerBackendAddressPoolsClient()
	dp, err := pools.BeginDelete(ctx, rg, "kubernetes", "pool", nil)
	nwWantErr(t, nwErr(t, dp, err), http.StatusBadRequest, "BackendAddressPoolInUse")

	lbs := pe.network.NewLoadBalancersClient()
	p, err := lbs.BeginDelete(ctx, rg, "kubernetes", nil)
	nwDone(t, p, err)
	if _, err := lbs.Get(ctx, rg, "kubernetes", nil); err == nil {
		t.Fatal("load balancer still there")
	}
	after, err := nics.Get(ctx, rg, nicName, nil)
	if err != nil {
		t.Fatal(err)
	}
	if refs := after.Properties.IPConfigurations[0].Properties.LoadBalancerBackendAddressPools; len(refs) != 0 {
		t.Errorf("NIC still names pools %v after the load balancer's deletion", refs)
	}
	if val(after.Etag) == val(written.Etag) {
		t.Errorf("NIC ETag %s unchanged though the provider rewrote it", val(after.Etag))
	}
	// The NIC can be written back as read (no dangling reference).
	np, err = nics.BeginCreateOrUpdate(ctx, rg, nicName, after.Interface, nil)
	nwDone(t, np, err)
}

// TestScaleSetAutomaticUpgrade: with upgrade policy Automatic a model
// change reaches the instances at once.
func TestScaleSetAutomaticUpgrade(t *testing.T) {
	pe := newPoolEnv(t, Config{})
	p, err := pe.sets.BeginUpdate(nwCtx(t), pe.f.ResourceGroup, "nodes", armcompute.VirtualMachineScaleSetUpdate{
		Properties: &armcompute.VirtualMachineScaleSetUpdateProperties{UpgradePolicy: &armcompute.UpgradePolicy{Mode: to.Ptr(armcompute.UpgradeModeAutomatic)}},
	}, nil)
	nwDone(t, p, err)
	if _, err := pe.putModelPool(t, pe.poolID, true); err != nil {
		t.Fatal(err)
	}
	if m := pe.members(t); len(m) != 2 {
		t.Fatalf("pool members %v, want both instances", m)
	}
	if got := pe.stale(t); len(got) != 0 {
		t.Fatalf("instances %v behind the model", got)
	}
}
