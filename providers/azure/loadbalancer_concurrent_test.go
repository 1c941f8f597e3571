package azure

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
	v1 "k8s.io/api/core/v1"

	azemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/azure"
)

// nicPoolEnv is a cluster with NIC-based pools (upstream's default) and
// nodes of both kinds: stand-alone VMs and a uniform scale set's
// instances.
type nicPoolEnv struct {
	*testEnv
	nodes []*v1.Node
	// emuName is the emulator's name of a node ("<scale set>_<n>" for an
	// instance).
	emuName map[string]string
}

func newNICPoolEnv(t *testing.T, vms int) *nicPoolEnv {
	t.Helper()
	env := newTestEnv(t, azemu.Config{}, func(s *Section) {
		s.VMType = VMTypeVMSS
		s.LoadBalancerBackendPoolConfigurationType = PoolNodeIPConfiguration
	})
	e := &nicPoolEnv{testEnv: env, nodes: env.lbNodes(t, vms), emuName: map[string]string{}}
	ss, err := env.emu.CreateScaleSet(azemu.ScaleSetSpec{Name: "pool1", Capacity: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, inst := range ss.Instances {
		n := &v1.Node{}
		n.Name = strings.ToLower(inst.ComputerName)
		e.nodes = append(e.nodes, env.initialized(t, n))
		e.emuName[n.Name] = "pool1_" + inst.InstanceID
	}
	return e
}

// pools are the backend pools the node's primary IP configuration names.
func (e *nicPoolEnv) pools(t *testing.T, node string) []string {
	t.Helper()
	if n, ok := e.emuName[node]; ok {
		node = n
	}
	return e.poolsOf(t, node)
}

// modelPools are the pools the scale set's model names.
func (e *nicPoolEnv) modelPools(t *testing.T) []string {
	t.Helper()
	resp, err := e.api.scaleSets.Get(t.Context(), e.fx.ResourceGroup, "pool1", nil)
	if err != nil {
		t.Fatal(err)
	}
	c := primaryIPConfig(resp.Properties.VirtualMachineProfile.NetworkProfile.NetworkInterfaceConfigurations, "", "")
	var out []string
	for _, r := range c.Properties.LoadBalancerBackendAddressPools {
		out = append(out, deref(r.ID))
	}
	return out
}

// asUpstreamMadeIt takes the manager's tags off the load balancer, as the
// upstream CCM leaves its own (it tags them with the config's tags only).
func (e *nicPoolEnv) asUpstreamMadeIt(t *testing.T, name string) {
	t.Helper()
	ctx := t.Context()
	resp, err := e.api.lbs.Get(ctx, e.fx.ResourceGroup, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	lb := resp.LoadBalancer
	delete(lb.Tags, tagCluster)
	p, err := e.api.lbs.BeginCreateOrUpdate(withPrecondition(ctx, deref(lb.Etag)), e.fx.ResourceGroup, name, lb, nil)
	if err == nil {
		_, err = p.PollUntilDone(ctx, pollOptions)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// concurrently runs f for each Service at once, one goroutine each as
// the service controller's workers would, and fails on any error.
func concurrently(t *testing.T, svcs []*v1.Service, f func(*v1.Service) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(svcs))
	for i, s := range svcs {
		wg.Go(func() { errs[i] = f(s) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Service %s: %v", svcs[i].Name, err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// TestNICPoolConcurrentDeletion (issue 32): six Services on one load
// balancer made by the upstream CCM (untagged) with its NIC-based pool,
// adopted by a manager that has just started, deleted at once. Whichever
// write finds no frontend left takes the scale set (model and instances)
// out of the pool and deletes the load balancer: one DELETE, no error,
// and nothing left behind. The stand-alone VMs' NICs are not written:
// ARM drops their references with the load balancer.
func TestNICPoolConcurrentDeletion(t *testing.T) {
	for _, workers := range []int{6, 2} {
		t.Run(fmt.Sprint(workers, " at a time"), func(t *testing.T) {
			env := newNICPoolEnv(t, 3)
			ctx := t.Context()
			pristine := resourceKeys(env.emu.Resources())
			var svcs []*v1.Service
			for i := range 6 {
				svcs = append(svcs, lbService(fmt.Sprint("del-", i), int32(80+i)))
			}
			uniqueUIDs(svcs)
			for _, s := range svcs {
				st, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", s, env.nodes)
				if err != nil {
					t.Fatal(err)
				}
				// As the service controller records it: a manager that
				// has just started finds the Service's address there.
				s.Status.LoadBalancer = *st
			}
			poolID := env.cloud.lb.poolID("kubernetes", false)
			for _, n := range env.nodes {
				if !slices.ContainsFunc(env.pools(t, n.Name), func(p string) bool { return strings.EqualFold(p, poolID) }) {
					t.Fatalf("node %s not in the pool before the deletion", n.Name)
				}
			}
			env.asUpstreamMadeIt(t, "kubernetes")
			adopted := newCloud(env.s, "kubernetes", env.api, env.clk)
			env.srv.ResetCalls()
			for batch := range slices.Chunk(svcs, workers) {
				concurrently(t, batch, func(s *v1.Service) error {
					return adopted.lb.EnsureLoadBalancerDeleted(ctx, "kubernetes", s)
				})
			}
			calls := env.srv.Calls()
			t.Logf("6 Services deleted %d at a time: %v", workers, calls)
			if _, ok := env.lb(t, "kubernetes"); ok {
				t.Error("load balancer outlived its last Service")
			}
			for _, n := range env.nodes {
				if p := env.pools(t, n.Name); len(p) != 0 {
					t.Errorf("node %s still names pools %v", n.Name, p)
				}
			}
			if p := env.modelPools(t); len(p) != 0 {
				t.Errorf("the scale set's model still names pools %v", p)
			}
			if got := resourceKeys(env.emu.Resources()); !slices.Equal(got, pristine) {
				t.Errorf("inventory after deletion differs:\n got %v\nwant %v", got, pristine)
			}
			for op, want := range map[string]int{
				// One DELETE: no refused one, no second try.
				"network:LoadBalancers_Delete": 1,
				// ARM drops the stand-alone NICs' references itself.
				"network:NetworkInterfaces_CreateOrUpdate": 0,
				// The scale set leaves once: its model, then each of its
				// two instances.
				"compute:VirtualMachineScaleSets_CreateOrUpdate": 1,
				"compute:VirtualMachineScaleSetVMs_Update":       2,
			} {
				if calls[op] != want {
					t.Errorf("%s called %d times, want %d", op, calls[op], want)
				}
			}
		})
	}
}

// TestNICPoolJoinWithConcurrentSyncs (issue 32): a node joins while
// several Services sharing the NIC-based pools (on the public and the
// internal load balancer) are synced at once, some for the node change
// (UpdateLoadBalancer), some for a port change (EnsureLoadBalancer). The
// joining node's NIC is written once, for both load balancers' pools, and
// no other NIC is written.
func TestNICPoolJoinWithConcurrentSyncs(t *testing.T) {
	env := newNICPoolEnv(t, 2)
	ctx := t.Context()
	var svcs []*v1.Service
	for i := range 6 {
		s := lbService(fmt.Sprint("join-", i), int32(80+i))
		if i%3 == 2 {
			s.Annotations = map[string]string{string(annotationInternal): "true"}
		}
		svcs = append(svcs, s)
	}
	uniqueUIDs(svcs)
	for _, s := range svcs {
		if _, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", s, env.nodes); err != nil {
			t.Fatal(err)
		}
	}
	for _, fresh := range []bool{false, true} {
		cloud := env.cloud
		if fresh {
			// A manager that has just started (or switched): nothing
			// known of the pools' members.
			cloud = newCloud(env.s, "kubernetes", env.api, env.clk)
		}
		joined := env.lbNodes(t, 1)[0]
		nodes := append(slices.Clone(env.nodes), joined)
		env.nodes = nodes
		env.srv.ResetCalls()
		concurrently(t, svcs, func(s *v1.Service) error {
			if s.Name == "join-0" || s.Name == "join-2" || s.Name == "join-4" {
				c := s.DeepCopy()
				c.Spec.Ports[0].Port += 1000
				_, err := cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", c, nodes)
				return err
			}
			return cloud.lb.UpdateLoadBalancer(ctx, "kubernetes", s, nodes)
		})
		calls := env.srv.Calls()
		t.Logf("fresh manager %v: a node joining beside 3 port changes: %v", fresh, calls)
		if n := calls["network:NetworkInterfaces_CreateOrUpdate"]; n != 1 {
			t.Errorf("fresh manager %v: %d NIC writes for one node joining, want 1", fresh, n)
		}
		for _, lbName := range []string{"kubernetes", "kubernetes-internal"} {
			id := env.cloud.lb.poolID(lbName, false)
			if !slices.ContainsFunc(env.pools(t, joined.Name), func(p string) bool { return strings.EqualFold(p, id) }) {
				t.Errorf("joined node %s not in %s's pool: %v", joined.Name, lbName, env.pools(t, joined.Name))
			}
		}
	}
}

// TestAdoptedLoadBalancerKeepsItsTags (issue 32): serving a load
// balancer the upstream CCM made (untagged, with someone's own tag) writes
// no tag onto it, and it still goes with its last Service.
func TestAdoptedLoadBalancerKeepsItsTags(t *testing.T) {
	env := newNICPoolEnv(t, 2)
	ctx := t.Context()
	svc := lbService("adopt", 80)
	if _, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", svc, env.nodes); err != nil {
		t.Fatal(err)
	}
	env.asUpstreamMadeIt(t, "kubernetes")
	tagsOf := func() map[string]string {
		lb, _ := env.lb(t, "kubernetes")
		out := map[string]string{}
		for k, v := range lb.Tags {
			out[k] = deref(v)
		}
		return out
	}
	before := tagsOf()
	adopted := newCloud(env.s, "kubernetes", env.api, env.clk)
	c := svc.DeepCopy()
	c.Spec.Ports[0].Port = 8080
	if _, err := adopted.lb.EnsureLoadBalancer(ctx, "kubernetes", c, env.nodes); err != nil {
		t.Fatal(err)
	}
	if after := tagsOf(); !maps.Equal(before, after) {
		t.Errorf("adopting changed the load balancer's tags from %v to %v", before, after)
	}
	lb, _ := env.lb(t, "kubernetes")
	if !slices.ContainsFunc(lb.Properties.LoadBalancingRules, func(r *armnetwork.LoadBalancingRule) bool {
		return deref(r.Properties.FrontendPort) == 8080
	}) {
		t.Error("the port change was not served")
	}
	if err := adopted.lb.EnsureLoadBalancerDeleted(ctx, "kubernetes", c); err != nil {
		t.Fatal(err)
	}
	if _, ok := env.lb(t, "kubernetes"); ok {
		t.Error("the adopted load balancer outlived its last Service")
	}

	// One tagged for another cluster of the same name stays.
	if _, err := newCloud(env.s, "kubernetes", env.api, env.clk).lb.EnsureLoadBalancer(ctx, "kubernetes", svc, env.nodes); err != nil {
		t.Fatal(err)
	}
	resp, err := env.api.lbs.Get(ctx, env.fx.ResourceGroup, "kubernetes", nil)
	if err != nil {
		t.Fatal(err)
	}
	other := resp.LoadBalancer
	other.Tags[tagCluster] = &otherCluster
	p, err := env.api.lbs.BeginCreateOrUpdate(ctx, env.fx.ResourceGroup, "kubernetes", other, nil)
	if err == nil {
		_, err = p.PollUntilDone(ctx, pollOptions)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := newCloud(env.s, "kubernetes", env.api, env.clk).lb.EnsureLoadBalancerDeleted(ctx, "kubernetes", svc); err != nil {
		t.Fatal(err)
	}
	if _, ok := env.lb(t, "kubernetes"); !ok {
		t.Error("a load balancer tagged for another cluster was deleted")
	}
}

var otherCluster = "other-cluster"
