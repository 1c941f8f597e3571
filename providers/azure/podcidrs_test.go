package azure

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-base/metrics"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/cloudmetrics"
	"github.com/multicloud-ccm/multicloud-ccm/providers/podcidrs"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	azemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/azure"
)

// maskTags are a node pool's tags asking for /v4 and /v6 pod CIDRs.
func maskTags(v4, v6 string) map[string]string {
	return map[string]string{"kubernetesNodeCIDRMaskIPV4": v4, "kubernetesNodeCIDRMaskIPV6": v6}
}

// nodeFor is the Node of an emulator VM as the node controller leaves it
// (the node-ipam controller serves only Nodes with a providerID).
func nodeFor(vm azemu.VMInfo) *v1.Node {
	n := &v1.Node{}
	n.Name = strings.ToLower(vm.ComputerName)
	n.Spec.ProviderID = vm.ProviderID
	return n
}

// allocated is the answer for a Node whose ranges are allocated from the
// cluster CIDR with masks v4 and v6 (0: the controller's default).
func allocated(v4, v6 int) podcidrs.Answer {
	return podcidrs.Answer{IPv4: podcidrs.Family{Allocate: true, Mask: v4}, IPv6: podcidrs.Family{Allocate: true, Mask: v6}}
}

func askPodCIDRs(t *testing.T, env *testEnv, n *v1.Node, want podcidrs.Answer) {
	t.Helper()
	got, err := env.cloud.instances.PodCIDRs(t.Context(), n)
	if err != nil {
		t.Fatalf("%s: %v", n.Name, err)
	}
	if got != want {
		t.Errorf("%s: answer %+v, want %+v", n.Name, got, want)
	}
}

// TestPodCIDRTagKeysGolden pins upstream's tag keys
// (pkg/consts/consts.go:113-115): node pools carry them already.
func TestPodCIDRTagKeysGolden(t *testing.T) {
	if tagNodeCIDRMaskIPv4 != "kubernetesNodeCIDRMaskIPV4" || tagNodeCIDRMaskIPv6 != "kubernetesNodeCIDRMaskIPV6" {
		t.Errorf("tag keys %q, %q changed", tagNodeCIDRMaskIPv4, tagNodeCIDRMaskIPv6)
	}
}

// TestPodCIDRsAssembled: the composite finds the allocator on the
// InstancesV2 the assembled cloud serves.
func TestPodCIDRsAssembled(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, nil)
	if _, ok := env.cloud.Parts().Instances.(podcidrs.Allocator); !ok {
		t.Fatal("the Azure InstancesV2 is no podcidrs.Allocator")
	}
}

// TestPodCIDRsScaleSet: a uniform scale set's instances (vmType vmss) get
// the scale set's masks, as upstream's ScaleSet.GetNodeCIDRMasksByProviderID
// reads them, from the snapshot's own scale set listing; a flexible scale
// set's VMs get theirs.
func TestPodCIDRsScaleSet(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, func(s *Section) { s.VMType = VMTypeVMSS })
	ss, err := env.emu.CreateScaleSet(azemu.ScaleSetSpec{Name: "pool26", Capacity: 2, Tags: maskTags("26", "120")})
	if err != nil {
		t.Fatal(err)
	}
	flex, err := env.emu.CreateScaleSet(azemu.ScaleSetSpec{Name: "flex25", Capacity: 1, Flexible: true, Tags: maskTags("25", "112")})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := env.emu.CreateScaleSet(azemu.ScaleSetSpec{Name: "untagged", Capacity: 1})
	if err != nil {
		t.Fatal(err)
	}
	env.srv.ResetCalls()
	for _, inst := range ss.Instances {
		askPodCIDRs(t, env, nodeFor(inst), allocated(26, 120))
	}
	askPodCIDRs(t, env, nodeFor(flex.Instances[0]), allocated(25, 112))
	askPodCIDRs(t, env, nodeFor(plain.Instances[0]), allocated(0, 0))
	calls := env.srv.Calls()
	t.Logf("3 scale sets' Nodes: %v", calls)
	if n := calls["compute:VirtualMachineScaleSets_List"]; n != 1 {
		t.Errorf("%d scale set listings, want the snapshot's one", n)
	}
	if n := env.srv.CallCount("compute:VirtualMachineScaleSets_Get"); n > 0 {
		t.Errorf("%d scale set GETs", n)
	}
}

// TestPodCIDRsFlexibleStandard: with vmType standard the snapshot lists
// no scale sets, so a flexible scale set's VMs cost one scale set listing
// of their own, shared by the Nodes of its resource group.
func TestPodCIDRsFlexibleStandard(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, func(s *Section) { s.VMType = VMTypeStandard })
	flex, err := env.emu.CreateScaleSet(azemu.ScaleSetSpec{Name: "flex", Capacity: 3, Flexible: true, Tags: maskTags("27", "118")})
	if err != nil {
		t.Fatal(err)
	}
	env.srv.ResetCalls()
	for _, inst := range flex.Instances {
		askPodCIDRs(t, env, nodeFor(inst), allocated(27, 118))
	}
	calls := env.srv.Calls()
	t.Logf("3 flexible Nodes: %v", calls)
	if calls["compute:VirtualMachineScaleSets_List"] != 1 || calls["compute:VirtualMachineScaleSets_Get"] != 0 {
		t.Errorf("calls %v: want one scale set listing", calls)
	}
}

// TestPodCIDRsAvailabilitySet: a VM in a tagged availability set gets its
// masks; a standalone VM and a VM of an untagged set the defaults (0); a
// tag that is not an integer is ignored for its family alone.
func TestPodCIDRsAvailabilitySet(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, nil)
	nodes := env.launch(t,
		azemu.VMSpec{Name: "as-a", AvailabilitySet: "pool-as", AvailabilitySetTags: maskTags("25", "96")},
		azemu.VMSpec{Name: "as-b", AvailabilitySet: "pool-as", FaultDomain: 1},
		azemu.VMSpec{Name: "alone"},
		azemu.VMSpec{Name: "bad-0", AvailabilitySet: "pool-bad", AvailabilitySetTags: maskTags("twenty-six", "112")},
		azemu.VMSpec{Name: "plain-0", AvailabilitySet: "pool-plain", AvailabilitySetTags: map[string]string{"team": "a"}},
	)
	want := []podcidrs.Answer{allocated(25, 96), allocated(25, 96), allocated(0, 0), allocated(0, 112), allocated(0, 0)}
	env.srv.ResetCalls()
	for i, n := range nodes {
		askPodCIDRs(t, env, env.initialized(t, n), want[i])
	}
	calls := env.srv.Calls()
	t.Logf("5 Nodes: %v", calls)
	if n := calls["compute:AvailabilitySets_List"]; n != 1 {
		t.Errorf("%d availability set listings, want 1", n)
	}
	if n := env.srv.CallCount("compute:AvailabilitySets_Get") + env.srv.CallCount("compute:VirtualMachines_Get"); n > 0 {
		t.Errorf("%d availability set or VM GETs", n)
	}
}

// TestPodCIDRsTagChangeAfterTTL: a node pool's changed tags are seen once
// the instance cache TTL has passed, not before (no listing per Node).
func TestPodCIDRsTagChangeAfterTTL(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, func(s *Section) { s.VMType = VMTypeVMSS })
	ss, err := env.emu.CreateScaleSet(azemu.ScaleSetSpec{Name: "pool", Capacity: 1, Tags: maskTags("26", "120")})
	if err != nil {
		t.Fatal(err)
	}
	asNode := env.launch(t, azemu.VMSpec{Name: "as-0", AvailabilitySet: "pool-as", AvailabilitySetTags: maskTags("25", "96")})[0]
	ssNode := nodeFor(ss.Instances[0])
	asNode = env.initialized(t, asNode)
	askPodCIDRs(t, env, ssNode, allocated(26, 120))
	askPodCIDRs(t, env, asNode, allocated(25, 96))

	if err := env.emu.SetScaleSetTags("pool", maskTags("27", "116")); err != nil {
		t.Fatal(err)
	}
	if err := env.emu.SetAvailabilitySetTags("pool-as", maskTags("28", "bad")); err != nil {
		t.Fatal(err)
	}
	env.srv.ResetCalls()
	env.clk.Step(env.s.InstanceCacheTTL / 2)
	askPodCIDRs(t, env, ssNode, allocated(26, 120))
	askPodCIDRs(t, env, asNode, allocated(25, 96))
	if calls := env.srv.Calls(); len(calls) != 0 {
		t.Errorf("within the TTL: calls %v, want none", calls)
	}
	env.clk.Step(env.s.InstanceCacheTTL/2 + time.Second)
	askPodCIDRs(t, env, ssNode, allocated(27, 116))
	askPodCIDRs(t, env, asNode, allocated(28, 0))
	calls := env.srv.Calls()
	t.Logf("after the TTL: %v", calls)
	if calls["compute:VirtualMachineScaleSets_List"] != 1 || calls["compute:AvailabilitySets_List"] != 1 {
		t.Errorf("after the TTL: calls %v, want one listing of each kind", calls)
	}
}

// TestPodCIDRsNewPoolWithinTTL: a node pool made after its resource
// group's sets were listed is found by one more listing (as upstream
// refreshes its cache on a missing scale set), not answered with the
// defaults the Node would keep for life; the next Nodes of the pool share
// that listing.
func TestPodCIDRsNewPoolWithinTTL(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, nil)
	first := env.launch(t, azemu.VMSpec{Name: "old-0", AvailabilitySet: "pool-old", AvailabilitySetTags: maskTags("25", "96")})[0]
	askPodCIDRs(t, env, env.initialized(t, first), allocated(25, 96))

	fresh := env.launch(t,
		azemu.VMSpec{Name: "new-0", AvailabilitySet: "pool-new", AvailabilitySetTags: maskTags("27", "100")},
		azemu.VMSpec{Name: "new-1", AvailabilitySet: "pool-new", FaultDomain: 1},
	)
	for i := range fresh {
		fresh[i] = env.initialized(t, fresh[i])
	}
	env.srv.ResetCalls()
	for _, n := range fresh {
		askPodCIDRs(t, env, n, allocated(27, 100))
	}
	if n := env.srv.CallCount("compute:AvailabilitySets_List"); n != 1 {
		t.Errorf("%d availability set listings for a new pool's 2 Nodes, want 1", n)
	}
}

// TestPodCIDRsConcurrent: 50 Nodes of one scale set, 3 of an availability
// set and a standalone one, asked at once after the node controller
// initialized them, cost at most one scale set listing and one
// availability set listing, and no GET of a VM or set.
func TestPodCIDRsConcurrent(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, func(s *Section) { s.VMType = VMTypeVMSS })
	ss, err := env.emu.CreateScaleSet(azemu.ScaleSetSpec{Name: "big", Capacity: 50, Zones: []string{"1", "2", "3"}, Tags: maskTags("26", "120")})
	if err != nil {
		t.Fatal(err)
	}
	var nodes []*v1.Node
	var want []podcidrs.Answer
	for _, inst := range ss.Instances {
		nodes = append(nodes, nodeFor(inst))
		want = append(want, allocated(26, 120))
	}
	for i := range 3 {
		vm, err := env.emu.LaunchVM(azemu.VMSpec{Name: fmt.Sprintf("as-%d", i), AvailabilitySet: "pool-as", FaultDomain: i % 2, AvailabilitySetTags: maskTags("25", "96")})
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, nodeFor(vm))
		want = append(want, allocated(25, 96))
	}
	vm, err := env.emu.LaunchVM(azemu.VMSpec{Name: "alone"})
	if err != nil {
		t.Fatal(err)
	}
	nodes = append(nodes, nodeFor(vm))
	want = append(want, allocated(0, 0))

	env.srv.ResetCalls()
	var wg sync.WaitGroup
	errs := make([]error, len(nodes))
	got := make([]podcidrs.Answer, len(nodes))
	for i, n := range nodes {
		wg.Go(func() { got[i], errs[i] = env.cloud.instances.PodCIDRs(t.Context(), n) })
	}
	wg.Wait()
	for i := range nodes {
		if errs[i] != nil || got[i] != want[i] {
			t.Errorf("%s: %+v, %v; want %+v", nodes[i].Name, got[i], errs[i], want[i])
		}
	}
	calls := env.srv.Calls()
	t.Logf("%d Nodes at once: %v", len(nodes), calls)
	if n := calls["compute:VirtualMachineScaleSets_List"]; n > 1 {
		t.Errorf("%d scale set listings, want at most 1", n)
	}
	if n := calls["compute:AvailabilitySets_List"]; n > 1 {
		t.Errorf("%d availability set listings, want at most 1", n)
	}
	for _, op := range []string{"compute:VirtualMachines_Get", "compute:VirtualMachineScaleSetVMs_Get", "compute:VirtualMachineScaleSets_Get", "compute:AvailabilitySets_Get"} {
		if n := calls[op]; n > 0 {
			t.Errorf("%d calls to %s", n, op)
		}
	}
}

// TestPodCIDRsErrors: a Node whose VM is gone, and a failing availability
// set listing, are errors the controller retries (never ErrNotServed, never
// the defaults); the listing is counted in the cloud API metrics under its
// operation name.
func TestPodCIDRsErrors(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, nil)
	reg := metrics.NewKubeRegistry()
	reg.MustRegister(env.rec.Collectors()...)
	n := env.initialized(t, env.launch(t, azemu.VMSpec{Name: "as-0", AvailabilitySet: "pool-as", AvailabilitySetTags: maskTags("25", "96")})[0])

	env.setFault(t, cloudsim.FaultSpec{Op: "compute:AvailabilitySets_List", FailNext: 100})
	if a, err := env.cloud.instances.PodCIDRs(t.Context(), n); err == nil || errors.Is(err, podcidrs.ErrNotServed) {
		t.Errorf("failing listing: %+v, %v; want a retried error", a, err)
	} else {
		t.Logf("failing listing: %v", err)
	}
	env.srv.ClearFaults()
	askPodCIDRs(t, env, n, allocated(25, 96))
	if v := requestCount(t, reg, "availabilitySets.list", "200"); v != 1 {
		t.Errorf("%s{operation=availabilitySets.list,code=200} = %v, want 1", cloudmetrics.RequestsName, v)
	}

	gone := &v1.Node{}
	gone.Name = "gone"
	gone.Spec.ProviderID = strings.Replace(n.Spec.ProviderID, "/as-0", "/no-such-vm", 1)
	if a, err := env.cloud.instances.PodCIDRs(t.Context(), gone); err == nil || errors.Is(err, podcidrs.ErrNotServed) {
		t.Errorf("gone VM: %+v, %v; want a retried error", a, err)
	}
}

// requestCount is the cloud API request counter of an Azure compute
// operation and code in reg.
func requestCount(t *testing.T, reg metrics.Gatherer, op, code string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"provider": ProviderName, "service": "compute", "operation": op, "code": code}
	for _, f := range fams {
		if f.GetName() != cloudmetrics.RequestsName {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if want[l.GetName()] != l.GetValue() {
					continue next
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
