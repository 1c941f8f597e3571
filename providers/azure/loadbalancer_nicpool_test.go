package azure

import (
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v6"
	v1 "k8s.io/api/core/v1"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	azemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/azure"
)

// poolsOf are the backend pools a VM's (or scale set instance's) primary
// IP configuration is in, as the emulator has them.
func (e *testEnv) poolsOf(t *testing.T, name string) []string {
	t.Helper()
	pools, ok := e.emu.BackendPools(name)
	if !ok {
		t.Fatalf("no VM %s", name)
	}
	return pools
}

// NIC-based pools (nodeIPConfiguration, upstream's default): a VM's NIC
// and a uniform scale set instance (and its model) name the pool; the
// pool itself lists no address; a node joining is its own writes only,
// whatever the number of Services; a node leaving is taken out; the last
// Service's deletion releases every member, so ARM lets the load
// balancer go.
func TestNICBackendPool(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, func(s *Section) {
		s.VMType = VMTypeVMSS
		s.LoadBalancerBackendPoolConfigurationType = "NodeIPConfiguration"
	})
	ctx := t.Context()
	vms := env.lbNodes(t, 1)
	ss, err := env.emu.CreateScaleSet(azemu.ScaleSetSpec{Name: "pool1", Capacity: 2})
	if err != nil {
		t.Fatal(err)
	}
	var nodes []*v1.Node
	nodes = append(nodes, vms...)
	// The emulator names a scale set instance "<scale set>_<instance>".
	emuName := map[string]string{}
	for _, inst := range ss.Instances {
		n := &v1.Node{}
		n.Name = strings.ToLower(inst.ComputerName)
		nodes = append(nodes, env.initialized(t, n))
		emuName[n.Name] = "pool1_" + inst.InstanceID
	}
	internal := lbService("nic-c", 8080)
	internal.Annotations = map[string]string{string(annotationInternal): "true"}
	svcs := []*v1.Service{lbService("nic-a", 80), lbService("nic-b", 443), internal}
	for _, s := range svcs {
		if _, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", s, nodes); err != nil {
			t.Fatal(err)
		}
	}
	poolID := env.cloud.lb.lbID("kubernetes") + "/backendAddressPools/kubernetes"
	inPool := func(name string) bool {
		if n, ok := emuName[name]; ok {
			name = n
		}
		return slices.ContainsFunc(env.poolsOf(t, name), func(p string) bool { return strings.EqualFold(p, poolID) })
	}
	for _, n := range nodes {
		if !inPool(n.Name) {
			t.Errorf("node %s not in the pool: %v", n.Name, env.poolsOf(t, n.Name))
		}
	}
	lb, _ := env.lb(t, "kubernetes")
	// ARM lists the NIC members there too, without an address.
	if got := poolAddresses(lb); slices.ContainsFunc(got, func(a string) bool { return a != "" }) {
		t.Errorf("NIC-based pool lists addresses %v", got)
	}
	modelHasPool := func() bool {
		resp, err := env.api.scaleSets.Get(ctx, env.fx.ResourceGroup, "pool1", nil)
		if err != nil {
			t.Fatal(err)
		}
		c := primaryIPConfig(resp.Properties.VirtualMachineProfile.NetworkProfile.NetworkInterfaceConfigurations, "", "")
		return slices.ContainsFunc(c.Properties.LoadBalancerBackendAddressPools, func(r *armcompute.SubResource) bool { return strings.EqualFold(deref(r.ID), poolID) })
	}
	if !modelHasPool() {
		t.Error("the scale set's model lacks the pool")
	}

	// Both load balancers' pools hold every node.
	internalPool := env.cloud.lb.lbID("kubernetes-internal") + "/backendAddressPools/kubernetes"
	for _, n := range nodes {
		name := n.Name
		if e, ok := emuName[name]; ok {
			name = e
		}
		if !slices.ContainsFunc(env.poolsOf(t, name), func(p string) bool { return strings.EqualFold(p, internalPool) }) {
			t.Errorf("node %s not in the internal pool", n.Name)
		}
	}

	// A node joins: one write to its NIC, for both pools and all three
	// Services.
	joined := env.lbNodes(t, 1)
	nodes = append(nodes, joined...)
	env.srv.ResetCalls()
	for _, s := range svcs {
		if err := env.cloud.lb.UpdateLoadBalancer(ctx, "kubernetes", s, nodes); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("a node joining 3 Services on 2 load balancers: %v", env.srv.Calls())
	if n := env.srv.CallCount(cloudsim.MutatingOps); n != 1 {
		t.Errorf("%d writes for a node joining, want its one NIC write: %v", n, env.srv.Calls())
	}
	if !inPool(joined[0].Name) {
		t.Errorf("joined node %s not in the pool", joined[0].Name)
	}

	// A scale set node leaves (excluded): its instance is written.
	left := nodes[len(vms)]
	nodes = slices.Delete(nodes, len(vms), len(vms)+1)
	for _, s := range svcs {
		if err := env.cloud.lb.UpdateLoadBalancer(ctx, "kubernetes", s, nodes); err != nil {
			t.Fatal(err)
		}
	}
	if inPool(left.Name) {
		t.Errorf("node %s left but is still in the pool", left.Name)
	}

	// Deleting every Service releases the members and the model, then the
	// load balancer goes.
	for _, s := range svcs {
		if err := env.cloud.lb.EnsureLoadBalancerDeleted(ctx, "kubernetes", s); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := env.lb(t, "kubernetes"); ok {
		t.Error("load balancer outlived its last Service")
	}
	for _, n := range nodes {
		if inPool(n.Name) {
			t.Errorf("node %s still names the deleted pool", n.Name)
		}
	}
	if modelHasPool() {
		t.Error("the scale set's model still names the deleted pool")
	}
}

// Switching a NIC-based pool (upstream's) to nodeIP: the NICs leave the
// pool first (ARM refuses a pool with both kinds), then it lists the
// nodes' addresses.
func TestNICBackendPoolToNodeIP(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, func(s *Section) { s.LoadBalancerBackendPoolConfigurationType = PoolNodeIPConfiguration })
	ctx := t.Context()
	nodes := env.lbNodes(t, 2)
	svc := lbService("switch", 80)
	if _, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes); err != nil {
		t.Fatal(err)
	}
	s := *env.s
	s.LoadBalancerBackendPoolConfigurationType = PoolNodeIP
	ipCloud := newCloud(&s, "kubernetes", env.api, env.clk)
	if _, err := ipCloud.lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if pools := env.poolsOf(t, n.Name); len(pools) != 0 {
			t.Errorf("node %s still in pools %v", n.Name, pools)
		}
	}
	lb, _ := env.lb(t, "kubernetes")
	if got, want := poolAddresses(lb), nodeIPs(nodes); !slices.Equal(got, want) {
		t.Errorf("pool %v, want %v", got, want)
	}
}
