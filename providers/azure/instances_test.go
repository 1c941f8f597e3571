package azure

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	azemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/azure"
)

// TestInstanceMetadata: zonal and availability-set VMs get upstream's
// providerID, zone (or fault domain), size and addresses, and N Nodes cost
// a few lists, not N GETs.
func TestInstanceMetadata(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, nil)
	var specs []azemu.VMSpec
	for i := range 8 {
		specs = append(specs, azemu.VMSpec{Name: fmt.Sprintf("node-%d", i), PublicIP: i == 0})
	}
	specs = append(specs, azemu.VMSpec{Name: "as-node", AvailabilitySet: "as1", FaultDomain: 2})
	nodes := env.launch(t, specs...)
	env.srv.ResetCalls()
	for _, n := range nodes {
		md, err := env.cloud.instances.InstanceMetadata(t.Context(), n)
		if err != nil {
			t.Fatal(err)
		}
		vm, _ := env.emu.VM(n.Name)
		wantZone := env.fx.Location + "-" + vm.Zone
		if vm.Zone == "" {
			wantZone = "2"
		}
		wantPID := "azure:///subscriptions/" + env.fx.SubscriptionID + "/resourceGroups/" + strings.ToLower(env.fx.ResourceGroup) + "/providers/Microsoft.Compute/virtualMachines/" + vm.Name
		if md.ProviderID != wantPID || md.Zone != wantZone || md.Region != env.fx.Location || md.InstanceType != vm.Size {
			t.Errorf("%s: metadata %+v; want providerID %s zone %s", n.Name, md, wantPID, wantZone)
		}
		want := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: vm.PrivateIP}}
		if vm.PublicIP != "" {
			want = append(want, v1.NodeAddress{Type: v1.NodeExternalIP, Address: vm.PublicIP})
		}
		want = append(want, v1.NodeAddress{Type: v1.NodeHostName, Address: n.Name})
		if fmt.Sprint(md.NodeAddresses) != fmt.Sprint(want) {
			t.Errorf("%s: addresses %v, want %v", n.Name, md.NodeAddresses, want)
		}
	}
	calls := env.srv.Calls()
	t.Logf("9 nodes: %v", calls)
	if n := env.srv.CallCount("compute:VirtualMachines_Get"); n > 0 {
		t.Errorf("%d VM GETs for 9 Nodes: the listing should serve them", n)
	}
	if n := env.srv.CallCount(cloudsim.ReadOps); n > 6 {
		t.Errorf("%d reads for 9 Nodes", n)
	}
}

// TestInstanceLifecycle: a stopped or deallocated VM is shut down, a
// deleted one is gone, and a throttled or failing ARM is an error, never
// "gone".
func TestInstanceLifecycle(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, nil)
	nodes := env.launch(t, azemu.VMSpec{Name: "life-0"}, azemu.VMSpec{Name: "life-1"})
	for i := range nodes {
		nodes[i] = env.initialized(t, nodes[i])
	}
	in := env.cloud.instances
	check := func(n *v1.Node, exists, shutdown bool) {
		t.Helper()
		// Lifecycle answers may be a few seconds old: step past that.
		env.clk.Step(5 * time.Second)
		e, err := in.InstanceExists(t.Context(), n)
		if err != nil || e != exists {
			t.Fatalf("%s exists = %v, %v; want %v", n.Name, e, err, exists)
		}
		s, err := in.InstanceShutdown(t.Context(), n)
		if err != nil || s != shutdown {
			t.Fatalf("%s shutdown = %v, %v; want %v", n.Name, s, err, shutdown)
		}
	}
	check(nodes[0], true, false)
	if err := env.emu.StopInstance("life-0"); err != nil {
		t.Fatal(err)
	}
	check(nodes[0], true, true)
	if err := env.emu.DeallocateVM("life-1"); err != nil {
		t.Fatal(err)
	}
	check(nodes[1], true, true)

	env.setFault(t, cloudsim.FaultSpec{Op: "compute:*", FailNext: 100})
	env.clk.Step(5 * time.Second)
	if _, err := in.InstanceExists(t.Context(), nodes[0]); err == nil {
		t.Error("failing ARM: no error")
	}
	env.srv.ClearFaults()
	env.setFault(t, cloudsim.FaultSpec{Op: "compute:*", ThrottleNext: 100})
	env.clk.Step(5 * time.Second)
	if _, err := in.InstanceExists(t.Context(), nodes[0]); err == nil {
		t.Error("throttled ARM: no error")
	}
	env.srv.ClearFaults()

	if err := env.emu.TerminateInstance("life-0"); err != nil {
		t.Fatal(err)
	}
	check(nodes[0], false, false)
}

// TestScaleSetInstances: with vmType vmss, uniform scale set instances are
// found by their computer names, with upstream's providerID.
func TestScaleSetInstances(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, func(s *Section) { s.VMType = VMTypeVMSS })
	ss, err := env.emu.CreateScaleSet(azemu.ScaleSetSpec{Name: "pool1", Capacity: 3, Zones: []string{"1", "2"}})
	if err != nil {
		t.Fatal(err)
	}
	env.srv.ResetCalls()
	for _, inst := range ss.Instances {
		n := &v1.Node{}
		n.Name = strings.ToLower(inst.ComputerName)
		md, err := env.cloud.instances.InstanceMetadata(t.Context(), n)
		if err != nil {
			t.Fatal(err)
		}
		wantPID := "azure:///subscriptions/" + env.fx.SubscriptionID + "/resourceGroups/" + strings.ToLower(env.fx.ResourceGroup) +
			"/providers/Microsoft.Compute/virtualMachineScaleSets/pool1/virtualMachines/" + inst.InstanceID
		if md.ProviderID != wantPID || md.Zone != env.fx.Location+"-"+inst.Zone || md.NodeAddresses[0].Address != inst.PrivateIP {
			t.Errorf("%s: %+v, want providerID %s", n.Name, md, wantPID)
		}
	}
	t.Logf("3 scale set nodes: %v", env.srv.Calls())
	gone := &v1.Node{}
	gone.Spec.ProviderID = "azure:///subscriptions/" + env.fx.SubscriptionID + "/resourceGroups/" + env.fx.ResourceGroup + "/providers/Microsoft.Compute/virtualMachineScaleSets/pool1/virtualMachines/" + ss.Instances[0].InstanceID
	if err := env.emu.DeleteScaleSetInstance("pool1", ss.Instances[0].InstanceID); err != nil {
		t.Fatal(err)
	}
	env.clk.Step(5 * time.Second)
	if ok, err := env.cloud.instances.InstanceExists(t.Context(), gone); err != nil || ok {
		t.Errorf("deleted scale set instance: exists %v, %v", ok, err)
	}
}

// TestInstanceLifecycleBatch: the lifecycle checks of many NotReady Nodes
// cost one status listing per check period (plus a GET of a VM it lacks,
// whose 404 is what says "gone"), not the VM, NIC and public IP lists.
func TestInstanceLifecycleBatch(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, nil)
	var specs []azemu.VMSpec
	for i := range 10 {
		specs = append(specs, azemu.VMSpec{Name: fmt.Sprintf("batch-%d", i), PublicIP: i%2 == 0})
	}
	nodes := env.launch(t, specs...)
	for i := range nodes {
		nodes[i] = env.initialized(t, nodes[i])
	}
	in := env.cloud.instances
	// The lifecycle controller asks about each NotReady Node in turn.
	for _, n := range nodes {
		env.clk.Step(5 * time.Second)
		if ok, err := in.InstanceExists(t.Context(), n); err != nil || !ok {
			t.Fatalf("%s: exists %v, %v", n.Name, ok, err)
		}
	}
	if err := env.emu.StopInstance("batch-0"); err != nil {
		t.Fatal(err)
	}
	if err := env.emu.TerminateInstance("batch-1"); err != nil {
		t.Fatal(err)
	}
	env.clk.Step(5 * time.Second)
	env.srv.ResetCalls()
	for i, n := range nodes {
		exists, err := in.InstanceExists(t.Context(), n)
		if err != nil || exists != (i != 1) {
			t.Errorf("%s: exists %v, %v", n.Name, exists, err)
		}
		down, err := in.InstanceShutdown(t.Context(), n)
		if err != nil || down != (i == 0) {
			t.Errorf("%s: shutdown %v, %v", n.Name, down, err)
		}
	}
	calls := env.srv.Calls()
	t.Logf("one check period of 10 NotReady Nodes: %v", calls)
	if calls["compute:VirtualMachines_ListAll"] != 1 || calls["compute:VirtualMachines_Get"] != 1 || len(calls) != 2 {
		t.Errorf("calls %v: want one status listing and one GET (of the deleted VM)", calls)
	}
	// What the listing said about the stopped VM is still whole.
	md, err := in.InstanceMetadata(t.Context(), nodes[0])
	if err != nil || len(md.NodeAddresses) != 3 || md.InstanceType == "" {
		t.Errorf("metadata of the stopped VM: %+v, %v", md, err)
	}
}

// TestFlexibleScaleSetInstances: a Flexible scale set's instances are
// ordinary VMs, so with the default vmType they get the VM providerID
// (as upstream writes it) and their zone, addresses and size.
func TestFlexibleScaleSetInstances(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, nil)
	ss, err := env.emu.CreateScaleSet(azemu.ScaleSetSpec{Name: "flex", Capacity: 2, Zones: []string{"3"}, Flexible: true, PublicIP: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, inst := range ss.Instances {
		n := &v1.Node{}
		n.Name = strings.ToLower(inst.ComputerName)
		md, err := env.cloud.instances.InstanceMetadata(t.Context(), n)
		if err != nil {
			t.Fatal(err)
		}
		wantPID := "azure:///subscriptions/" + env.fx.SubscriptionID + "/resourceGroups/" + strings.ToLower(env.fx.ResourceGroup) +
			"/providers/Microsoft.Compute/virtualMachines/" + inst.Name
		want := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: inst.PrivateIP}, {Type: v1.NodeExternalIP, Address: inst.PublicIP}, {Type: v1.NodeHostName, Address: n.Name}}
		if md.ProviderID != wantPID || md.Zone != env.fx.Location+"-3" || md.InstanceType != inst.Size || fmt.Sprint(md.NodeAddresses) != fmt.Sprint(want) {
			t.Errorf("%s: %+v, want providerID %s addresses %v", n.Name, md, wantPID, want)
		}
	}
}
