package gce

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	gceemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/gce"
)

// TestInstanceMetadata: instances in every zone get upstream's providerID,
// machine type, zone, region and addresses, and N Nodes cost one list per
// zone, not N GETs.
func TestInstanceMetadata(t *testing.T) {
	env := newTestEnv(t, gceemu.Config{}, nil)
	zones := env.emu.Config().Zones
	var specs []cloudsim.InstanceSpec
	for i := range 9 {
		specs = append(specs, cloudsim.InstanceSpec{Name: fmt.Sprintf("node-%d", i), Zone: zones[i%len(zones)], PublicIP: i == 0})
	}
	nodes := env.launch(t, specs...)
	env.srv.ResetCalls()
	for i, n := range nodes {
		md, err := env.cloud.instances.InstanceMetadata(t.Context(), n)
		if err != nil {
			t.Fatal(err)
		}
		info, _ := env.emu.GetInstance(n.Name)
		wantPID := "gce://" + env.s.ProjectID + "/" + zones[i%len(zones)] + "/" + n.Name
		if md.ProviderID != wantPID || md.Zone != zones[i%len(zones)] || md.Region != env.s.Region || md.InstanceType != info.InstanceType || md.InstanceType == "" {
			t.Errorf("%s: metadata %+v; want providerID %s, type %s", n.Name, md, wantPID, info.InstanceType)
		}
		want := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: info.PrivateIP}}
		if info.PublicIP != "" {
			want = append(want, v1.NodeAddress{Type: v1.NodeExternalIP, Address: info.PublicIP})
		}
		want = append(want, v1.NodeAddress{Type: v1.NodeHostName, Address: n.Name})
		if fmt.Sprint(md.NodeAddresses) != fmt.Sprint(want) {
			t.Errorf("%s: addresses %v, want %v", n.Name, md.NodeAddresses, want)
		}
	}
	calls := env.srv.Calls()
	t.Logf("9 nodes in 3 zones: %v", calls)
	if n := env.srv.CallCount("compute:Instances.Get"); n > 0 {
		t.Errorf("%d instance GETs for 9 Nodes: the listing should serve them", n)
	}
	if n := env.srv.CallCount(cloudsim.ReadOps); n > len(zones) {
		t.Errorf("%d reads for 9 Nodes in %d zones: want one list per zone", n, len(zones))
	}

	// A Node named after no instance is not found (an error, not "gone").
	ghost := &v1.Node{}
	ghost.Name = "no-such-node"
	if _, err := env.cloud.instances.InstanceMetadata(t.Context(), ghost); err == nil {
		t.Error("metadata for a Node no instance is named after")
	}
	// The project in a providerID is honoured: another project's instance
	// is asked of that project (and the emulator knows only its own).
	other := &v1.Node{}
	other.Name = "node-0"
	other.Spec.ProviderID = "gce://other-project-1/" + zones[0] + "/node-0"
	env.clk.Step(5 * time.Second)
	if ok, err := env.cloud.instances.InstanceExists(t.Context(), other); err != nil || ok {
		t.Errorf("instance of another project: exists %v, %v (the emulator answers 404 for other projects)", ok, err)
	}
}

// TestInstanceLifecycle: a stopped or suspended instance is shut down, a
// deleted one is gone, and a throttled or failing API is an error, never
// "gone".
func TestInstanceLifecycle(t *testing.T) {
	env := newTestEnv(t, gceemu.Config{}, nil)
	nodes := env.launch(t, cloudsim.InstanceSpec{Name: "life-0"}, cloudsim.InstanceSpec{Name: "life-1"})
	for i, n := range nodes {
		md, err := env.cloud.instances.InstanceMetadata(t.Context(), n)
		if err != nil {
			t.Fatal(err)
		}
		nodes[i].Spec.ProviderID = md.ProviderID
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

	for _, f := range []cloudsim.FaultSpec{
		{Op: "compute:*", FailNext: 100},
		{Op: "compute:*", ThrottleNext: 100},
	} {
		env.srv.ClearFaults()
		env.setFault(t, f)
		env.clk.Step(5 * time.Second)
		if _, err := in.InstanceExists(t.Context(), nodes[1]); err == nil {
			t.Errorf("fault %+v: no error", f)
		}
	}
	env.srv.ClearFaults()

	if err := env.emu.TerminateInstance("life-0"); err != nil {
		t.Fatal(err)
	}
	check(nodes[0], false, false)
	check(nodes[1], true, false)
}

// TestInstanceLifecycleBatch: the lifecycle checks of many NotReady Nodes
// cost one name-filtered listing per check period: of their zone, or one
// aggregatedList when they span zones (plus a GET of an instance it
// lacks, whose 404 says "gone").
func TestInstanceLifecycleBatch(t *testing.T) {
	for _, tc := range []struct {
		zones []string
		list  string
	}{
		{[]string{"a"}, "compute:Instances.List"},
		{[]string{"a", "b", "c"}, "compute:Instances.AggregatedList"},
	} {
		t.Run(fmt.Sprint(len(tc.zones), " zones"), func(t *testing.T) { lifecycleBatch(t, tc.zones, tc.list) })
	}
}

func lifecycleBatch(t *testing.T, zones []string, list string) {
	env := newTestEnv(t, gceemu.Config{Zones: zones}, nil)
	var specs []cloudsim.InstanceSpec
	for i := range 10 {
		specs = append(specs, cloudsim.InstanceSpec{Name: fmt.Sprintf("batch-%d", i)})
	}
	nodes := env.launch(t, specs...)
	in := env.cloud.instances
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
	if calls[list] != 1 || calls["compute:Instances.Get"] != 1 || len(calls) != 2 {
		t.Errorf("calls %v: want one filtered list and one GET (of the deleted instance)", calls)
	}
}
