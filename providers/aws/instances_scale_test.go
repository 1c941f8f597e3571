package aws

import (
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/snapshot"
	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

// forEach runs f for every node on workers goroutines, like the node
// controllers with raised concurrency.
func forEach(t *testing.T, workers int, nodes []*v1.Node, f func(*v1.Node) error) {
	t.Helper()
	work := make(chan *v1.Node)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for n := range work {
				if err := f(n); err != nil {
					t.Errorf("node %s: %v", n.Name, err)
				}
			}
		})
	}
	for _, n := range nodes {
		work <- n
	}
	close(work)
	wg.Wait()
}

// TestInstanceReadAmplification: N Nodes must not cost N DescribeInstances.
func TestInstanceReadAmplification(t *testing.T) {
	env := newTestEnv(t, nil)
	ids := env.launch(t, cloudsimaws.LaunchSpec{Count: 200})
	nodes := make([]*v1.Node, len(ids))
	for i, id := range ids {
		nodes[i] = env.nodeByName(t, id)
	}

	forEach(t, 16, nodes, func(n *v1.Node) error {
		md, err := env.in.InstanceMetadata(t.Context(), n)
		if err == nil && md.ProviderID == "" {
			err = fmt.Errorf("no providerID")
		}
		if err == nil {
			n.Spec.ProviderID = md.ProviderID
		}
		return err
	})
	if n := env.describes(); n > 3 {
		t.Errorf("initializing 200 nodes cost %d DescribeInstances calls, want <= 3", n)
	}
	t.Logf("initializing 200 nodes: %v", env.srv.Calls())

	// Lifecycle checks: all 200 Nodes NotReady (the Node informer's
	// answer, stubbed here), each asked InstanceExists and
	// InstanceShutdown per period: one batched lookup by ID per period.
	useWatch(env, ids)
	for period := range 3 {
		before := env.describes()
		for range 100 {
			exists, err := env.in.InstanceExists(t.Context(), nodes[7])
			if err != nil || !exists {
				t.Fatalf("InstanceExists = %v, %v", exists, err)
			}
		}
		forEach(t, 16, nodes, func(n *v1.Node) error {
			if _, err := env.in.InstanceExists(t.Context(), n); err != nil {
				return err
			}
			_, err := env.in.InstanceShutdown(t.Context(), n)
			return err
		})
		if n := env.describes() - before; n != 1 {
			t.Errorf("period %d: 300 InstanceExists and 200 InstanceShutdown cost %d calls, want 1", period, n)
		}
		env.clock.Step(5 * time.Second)
	}

	// Nodes launched after the snapshot miss it; their name lookups are
	// batched, so 16 workers cost about one call per 16 Nodes, not one each.
	late := env.launch(t, cloudsimaws.LaunchSpec{Count: 96})
	var lateNodes []*v1.Node
	for _, id := range late {
		lateNodes = append(lateNodes, env.nodeByName(t, id))
	}
	before := env.describes()
	forEach(t, 16, lateNodes, func(n *v1.Node) error {
		_, err := env.in.InstanceMetadata(t.Context(), n)
		return err
	})
	t.Logf("96 nodes missing from the snapshot: %d DescribeInstances calls", env.describes()-before)
	if n := env.describes() - before; n > 12 {
		t.Errorf("96 nodes missing from the snapshot cost %d calls, want <= 12", n)
	}
	nodes = append(nodes, lateNodes...)

	// Past the TTL, one shared listing serves every Node again.
	env.expire()
	before = env.describes()
	forEach(t, 16, nodes, func(n *v1.Node) error {
		_, err := env.in.InstanceMetadata(t.Context(), n)
		return err
	})
	if n := env.describes() - before; n != 1 {
		t.Errorf("a pass over 296 nodes after the TTL cost %d calls, want 1", n)
	}
}

// useWatch makes the snapshot fetch ids with every lifecycle refresh, as
// the Node informer's NotReady Nodes do in the manager.
func useWatch(env *testEnv, ids []string) {
	opts := env.in.snapshotOptions(env.sec, env.clock)
	opts.Watch = func() []string { return ids }
	env.in.Snap = snapshot.New(env.in.snapshotSource(), opts)
}

// TestInstanceMissesAreBatched: instances the snapshot lacks (launched
// after it was taken) are fetched together, and one that does not exist
// does not spoil the batch for the others.
func TestInstanceMissesAreBatched(t *testing.T) {
	env := newTestEnv(t, nil)
	// A loaded machine may start 62 goroutines more slowly than the
	// production window; widen it so the test measures batching, not the
	// scheduler.
	opts := env.in.snapshotOptions(env.sec, env.clock)
	opts.MissWindow = 200 * time.Millisecond
	env.in.Snap = snapshot.New(env.in.snapshotSource(), opts)
	old := env.launch(t, cloudsimaws.LaunchSpec{Count: 3})
	if _, err := env.in.byIDs(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	fresh := env.launch(t, cloudsimaws.LaunchSpec{Count: 60})
	gone := env.launch(t, cloudsimaws.LaunchSpec{Count: 2})
	var nodes []*v1.Node
	want := map[string]bool{}
	for _, id := range append(fresh, gone...) {
		n := env.nodeByProviderID(t, id)
		nodes = append(nodes, n)
		want[n.Spec.ProviderID] = !slices.Contains(gone, id)
	}
	// One is terminated, the other already forgotten by EC2.
	if err := env.emu.Terminate(gone...); err != nil {
		t.Fatal(err)
	}
	if err := env.emu.Remove(gone[0]); err != nil {
		t.Fatal(err)
	}

	before := env.describes()
	var mu sync.Mutex
	exists := map[string]bool{}
	forEach(t, len(nodes), nodes, func(n *v1.Node) error {
		ok, err := env.in.InstanceExists(t.Context(), n)
		mu.Lock()
		exists[n.Spec.ProviderID] = ok
		mu.Unlock()
		return err
	})
	// One batch; EC2 answers NotFound naming the removed instance and the
	// others are asked again: two calls.
	t.Logf("62 concurrent misses: %d DescribeInstances calls", env.describes()-before)
	if n := env.describes() - before; n > 3 {
		t.Errorf("62 concurrent misses cost %d DescribeInstances calls, want <= 3", n)
	}
	if !reflect.DeepEqual(exists, want) {
		t.Errorf("InstanceExists = %v, want %v", exists, want)
	}

	// The fetched instances joined the snapshot: asking again is free.
	before = env.describes()
	if _, err := env.in.byIDs(t.Context(), fresh); err != nil {
		t.Fatal(err)
	}
	if n := env.describes() - before; n != 0 {
		t.Errorf("asking again cost %d calls, want 0", n)
	}
}

// TestInstanceGoneIsConfirmedDirectly: the snapshot lacking an instance is
// never the answer; a DescribeInstances by ID is.
func TestInstanceGoneIsConfirmedDirectly(t *testing.T) {
	env := newTestEnv(t, nil)
	ids := env.launch(t, cloudsimaws.LaunchSpec{Count: 2})
	untagged, err := env.emu.Launch(cloudsimaws.LaunchSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.in.byIDs(t.Context(), ids); err != nil {
		t.Fatal(err)
	}
	// Terminated after the snapshot: the snapshot may still say running
	// (bounded staleness) but once refreshed it lacks the instance, and
	// the answer comes from a direct lookup.
	if err := env.emu.Terminate(ids[1]); err != nil {
		t.Fatal(err)
	}
	env.expire()

	for _, tt := range []struct {
		id   string
		want bool
	}{{untagged[0], true}, {ids[1], false}} {
		before := env.describes()
		exists, err := env.in.InstanceExists(t.Context(), env.nodeByProviderID(t, tt.id))
		if err != nil || exists != tt.want {
			t.Errorf("InstanceExists(%s) = %v, %v; want %v", tt.id, exists, err, tt.want)
		}
		// The first lookup also refreshes the snapshot.
		if n := env.describes() - before; n < 1 || n > 2 {
			t.Errorf("InstanceExists(%s) cost %d calls, want a direct lookup", tt.id, n)
		}
	}
	// The untagged instance, found directly, is now served from the snapshot.
	before := env.describes()
	if exists, err := env.in.InstanceExists(t.Context(), env.nodeByProviderID(t, untagged[0])); err != nil || !exists {
		t.Errorf("InstanceExists(untagged) = %v, %v", exists, err)
	}
	if n := env.describes() - before; n != 0 {
		t.Errorf("second lookup of a found instance cost %d calls, want 0", n)
	}
	// Lifecycle answers are never older than a few seconds: the next
	// period asks EC2 again, about both instances in one call.
	env.clock.Step(snapshot.DefaultRecentAge + time.Second)
	before = env.describes()
	if exists, err := env.in.InstanceExists(t.Context(), env.nodeByProviderID(t, ids[1])); err != nil || exists {
		t.Errorf("InstanceExists(terminated) = %v, %v", exists, err)
	}
	if exists, err := env.in.InstanceExists(t.Context(), env.nodeByProviderID(t, untagged[0])); err != nil || !exists {
		t.Errorf("InstanceExists(untagged) = %v, %v", exists, err)
	}
	if n := env.describes() - before; n != 1 {
		t.Errorf("a later period cost %d calls, want 1 direct lookup of both", n)
	}
}

func TestByIDsAndVPC(t *testing.T) {
	env := newTestEnv(t, nil)
	ids := env.launch(t, cloudsimaws.LaunchSpec{Count: 3})
	untagged, err := env.emu.Launch(cloudsimaws.LaunchSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.emu.Terminate(ids[2]); err != nil {
		t.Fatal(err)
	}
	got, err := env.in.byIDs(t.Context(), []string{ids[0], ids[1], ids[2], untagged[0], "i-00000000deadbeef0", "not-an-id"})
	if err != nil {
		t.Fatal(err)
	}
	ok := len(got) == 3
	for _, id := range []string{ids[0], ids[1], untagged[0]} {
		ok = ok && got[id] != nil && got[id].id == id
	}
	if !ok {
		t.Errorf("byIDs = %v, want the two live tagged instances and the untagged one", keys(got))
	}

	vpc, err := env.in.vpcID(t.Context())
	if err != nil || vpc != env.fx.VPCID {
		t.Errorf("vpcID = %q, %v; want %q", vpc, err, env.fx.VPCID)
	}
	configured := newTestEnv(t, func(s *Section) { s.VPCID = "vpc-0123456789abcdef0" })
	if vpc, err := configured.in.vpcID(t.Context()); err != nil || vpc != "vpc-0123456789abcdef0" {
		t.Errorf("configured vpcID = %q, %v", vpc, err)
	}
	if n := configured.describes(); n != 0 {
		t.Errorf("configured vpcID cost %d calls", n)
	}
	empty := newTestEnv(t, nil)
	if _, err := empty.in.vpcID(t.Context()); err == nil {
		t.Error("vpcID with no cluster instances: want an error")
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
