package snapshot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

type inst struct {
	id, name, state string
}

// cloud is a tiny in-memory cloud that counts its calls. IDs it does not
// hold are answered "not found"; terminated instances are still listed by
// ID, like EC2's.
type cloud struct {
	mu        sync.Mutex
	insts     map[string]inst
	fail      error
	lists     atomic.Int32
	idCalls   atomic.Int32
	nameCalls atomic.Int32
	idsAsked  atomic.Int32
	// onLookup, when set, runs in every LookupIDs call (a slow cloud).
	onLookup func()
}

func newCloud(n int) *cloud {
	c := &cloud{insts: map[string]inst{}}
	for i := range n {
		id := fmt.Sprintf("i-%04d", i)
		c.insts[id] = inst{id: id, name: "node-" + id, state: "running"}
	}
	return c
}

func (c *cloud) set(id, state string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := c.insts[id]
	i.state = state
	c.insts[id] = i
}

func (c *cloud) source() Source[inst] {
	return Source[inst]{
		List: func(context.Context) ([]inst, error) {
			c.lists.Add(1)
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.fail != nil {
				return nil, c.fail
			}
			var out []inst
			for _, i := range c.insts {
				if i.state != "terminated" {
					out = append(out, i)
				}
			}
			return out, nil
		},
		LookupIDs: func(_ context.Context, ids []string) (map[string]inst, error) {
			c.idCalls.Add(1)
			c.idsAsked.Add(int32(len(ids)))
			if c.onLookup != nil {
				c.onLookup()
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.fail != nil {
				return nil, c.fail
			}
			out := map[string]inst{}
			for _, id := range ids {
				if i, ok := c.insts[id]; ok {
					out[id] = i
				}
			}
			return out, nil
		},
		LookupNames: func(_ context.Context, names []string) (map[string]inst, error) {
			c.nameCalls.Add(1)
			c.mu.Lock()
			defer c.mu.Unlock()
			out := map[string]inst{}
			for _, i := range c.insts {
				for _, n := range names {
					if i.name == n && i.state != "terminated" {
						out[n] = i
					}
				}
			}
			return out, nil
		},
		ID:      func(i inst) string { return i.id },
		Names:   func(i inst) []string { return []string{i.name} },
		Gone:    func(i inst) bool { return i.state == "terminated" },
		ValidID: func(id string) bool { return len(id) > 2 && id[:2] == "i-" },
	}
}

func newSnap(c *cloud, o Options) (*Snapshot[inst], *clocktesting.FakePassiveClock) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	o.Clock = clk
	return New(c.source(), o), clk
}

func TestManyLookupsCostOneListingPerTTL(t *testing.T) {
	c := newCloud(1000)
	var hits, misses atomic.Int32
	s, clk := newSnap(c, Options{Observe: func(hit bool) {
		if hit {
			hits.Add(1)
		} else {
			misses.Add(1)
		}
	}})
	var wg sync.WaitGroup
	for i := range 1000 {
		wg.Go(func() {
			id := fmt.Sprintf("i-%04d", i)
			if _, ok, err := s.Lookup(t.Context(), id); !ok || err != nil {
				t.Errorf("Lookup(%s) = %v, %v", id, ok, err)
			}
			if got, ok, err := s.ByName(t.Context(), "node-"+id); !ok || err != nil || got.id != id {
				t.Errorf("ByName(node-%s) = %v, %v, %v", id, got, ok, err)
			}
		})
	}
	wg.Wait()
	if n := c.lists.Load(); n != 1 {
		t.Errorf("%d listings for 2000 lookups, want 1", n)
	}
	if n := c.idCalls.Load() + c.nameCalls.Load(); n != 0 {
		t.Errorf("%d direct lookups, want 0", n)
	}
	if hits.Load() != 2000 || misses.Load() != 0 {
		t.Errorf("observed %d hits, %d misses", hits.Load(), misses.Load())
	}
	clk.SetTime(clk.Now().Add(DefaultTTL + time.Second))
	if _, err := s.ByIDs(t.Context(), []string{"i-0001"}); err != nil {
		t.Fatal(err)
	}
	if n := c.lists.Load(); n != 2 {
		t.Errorf("%d listings after the TTL, want 2", n)
	}
}

func TestMissesAreBatched(t *testing.T) {
	c := newCloud(0)
	s, _ := newSnap(c, Options{})
	if err := s.Fresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Instances launched after the listing.
	for i := range 300 {
		id := fmt.Sprintf("i-%04d", i)
		c.insts[id] = inst{id: id, name: "node-" + id, state: "running"}
	}
	var wg sync.WaitGroup
	for i := range 300 {
		wg.Go(func() {
			id := fmt.Sprintf("i-%04d", i)
			if _, ok, err := s.Lookup(t.Context(), id); !ok || err != nil {
				t.Errorf("Lookup(%s) = %v, %v", id, ok, err)
			}
		})
	}
	wg.Wait()
	// 300 IDs in batches of at most 200.
	if n := c.idCalls.Load(); n > 3 {
		t.Errorf("%d lookup calls for 300 misses, want <= 3", n)
	}
	before := c.idCalls.Load()
	if got, err := s.ByIDs(t.Context(), []string{"i-0005", "i-0299"}); err != nil || len(got) != 2 {
		t.Fatalf("ByIDs = %v, %v", got, err)
	}
	if c.idCalls.Load() != before {
		t.Error("instances found by lookups were not added to the listing")
	}
}

func TestGoneOnlyOnTheCloudsWord(t *testing.T) {
	c := newCloud(3)
	s, _ := newSnap(c, Options{})
	if _, ok, err := s.Lookup(t.Context(), "i-0000"); !ok || err != nil {
		t.Fatalf("Lookup = %v, %v", ok, err)
	}
	// Unknown to the listing and to the cloud: gone, after a direct lookup.
	if _, ok, err := s.Lookup(t.Context(), "i-9999"); ok || err != nil {
		t.Fatalf("unknown instance: exists=%v err=%v", ok, err)
	}
	if c.idCalls.Load() != 1 {
		t.Errorf("%d direct lookups, want 1", c.idCalls.Load())
	}
	// A failing cloud is an error, never "gone".
	c.fail = errors.New("throttled")
	if _, ok, err := s.Lookup(t.Context(), "i-8888"); ok || err == nil {
		t.Fatalf("failing lookup: exists=%v err=%v, want an error", ok, err)
	}
	c.fail = nil
	// A malformed ID is an error, not "gone".
	var malformed *MalformedIDError
	if _, _, err := s.Lookup(t.Context(), "bogus"); !errors.As(err, &malformed) {
		t.Fatalf("malformed ID: %v", err)
	}
	if _, _, err := s.Recent(t.Context(), "bogus"); !errors.As(err, &malformed) {
		t.Fatalf("malformed ID in Recent: %v", err)
	}
	// A listed-then-terminated instance is gone.
	c.set("i-0001", "terminated")
	if _, ok, err := s.Lookup(t.Context(), "i-0002"); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if _, ok, _ := s.Recent(t.Context(), "i-0001"); ok {
		t.Error("terminated instance reported as existing")
	}
}

// The lifecycle controller asks about each NotReady Node in turn every
// period; one call per period must serve all of them, and a change must
// show within RecentAge.
func TestRecentServesSequentialChecksWithOneCall(t *testing.T) {
	c := newCloud(1000)
	notReady := make([]string, 100)
	for i := range notReady {
		notReady[i] = fmt.Sprintf("i-%04d", i)
	}
	s, clk := newSnap(c, Options{Watch: func() []string { return notReady }})
	check := func() {
		for _, id := range notReady {
			if _, ok, err := s.Recent(t.Context(), id); !ok || err != nil {
				t.Fatalf("Recent(%s) = %v, %v", id, ok, err)
			}
			if _, _, err := s.Recent(t.Context(), id); err != nil { // InstanceShutdown right after
				t.Fatal(err)
			}
		}
	}
	// 12 periods of 5 s: one minute.
	for range 12 {
		check()
		clk.SetTime(clk.Now().Add(5 * time.Second))
	}
	if n := c.idCalls.Load(); n != 12 {
		t.Errorf("%d lookup calls in a minute of 5 s checks of 100 Nodes, want 12", n)
	}
	if n := c.lists.Load(); n != 0 {
		t.Errorf("%d listings, want 0: lifecycle checks need no listing", n)
	}
	// A stop shows at the next check after RecentAge.
	if _, _, err := s.Recent(t.Context(), "i-0007"); err != nil {
		t.Fatal(err)
	}
	c.set("i-0007", "stopped")
	if got, _, _ := s.Recent(t.Context(), "i-0007"); got.state != "running" {
		t.Fatalf("state %q within RecentAge, want the cached running", got.state)
	}
	clk.SetTime(clk.Now().Add(DefaultRecentAge + time.Millisecond))
	if got, ok, _ := s.Recent(t.Context(), "i-0007"); !ok || got.state != "stopped" {
		t.Fatalf("after RecentAge: %+v exists=%v, want stopped", got, ok)
	}
	// Termination, then the cloud forgetting it: both "gone".
	c.set("i-0008", "terminated")
	clk.SetTime(clk.Now().Add(DefaultRecentAge + time.Millisecond))
	if _, ok, _ := s.Recent(t.Context(), "i-0008"); ok {
		t.Fatal("terminated instance exists")
	}
	delete(c.insts, "i-0008")
	clk.SetTime(clk.Now().Add(DefaultRecentAge + time.Millisecond))
	if _, ok, err := s.Recent(t.Context(), "i-0008"); ok || err != nil {
		t.Fatalf("forgotten instance: exists=%v err=%v", ok, err)
	}
}

// Each lifecycle pass sees the cloud as it is when the pass starts, as a
// direct read would: a change made just after one pass's refresh shows
// at the very next pass, 5 s later. And a pass over 1000 NotReady Nodes
// whose refresh takes 2 s (five chunks of 200, 400 ms each) still costs
// that one refresh: answers age from when the cloud answered.
func TestRecentFreshEveryPassEvenWhenSlow(t *testing.T) {
	c := newCloud(1000)
	notReady := make([]string, 1000)
	for i := range notReady {
		notReady[i] = fmt.Sprintf("i-%04d", i)
	}
	s, clk := newSnap(c, Options{Watch: func() []string { return notReady }})
	c.onLookup = func() { clk.SetTime(clk.Now().Add(400 * time.Millisecond)) }
	pass := func() map[string]string {
		seen := map[string]string{}
		for _, id := range notReady {
			got, _, err := s.Recent(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			seen[id] = got.state
		}
		return seen
	}
	pass()
	if n := c.idCalls.Load(); n != 5 {
		t.Fatalf("%d lookup calls for one pass over 1000 Nodes, want 5 (one refresh)", n)
	}
	c.set("i-0500", "stopped")
	clk.SetTime(clk.Now().Add(5 * time.Second))
	if got := pass()["i-0500"]; got != "stopped" {
		t.Errorf("the next pass sees %q, want stopped", got)
	}
	if n := c.idCalls.Load(); n != 10 {
		t.Errorf("%d lookup calls for two passes, want 10", n)
	}
}

func TestRecentErrorsAreErrors(t *testing.T) {
	c := newCloud(2)
	s, clk := newSnap(c, Options{})
	if _, ok, err := s.Recent(t.Context(), "i-0000"); !ok || err != nil {
		t.Fatal(ok, err)
	}
	c.fail = errors.New("503")
	clk.SetTime(clk.Now().Add(time.Minute))
	if _, ok, err := s.Recent(t.Context(), "i-0000"); ok || err == nil {
		t.Fatalf("exists=%v err=%v while the cloud fails, want an error", ok, err)
	}
}

// IDs asked once are fetched with every refresh for a while, then
// dropped, so the batch follows the NotReady set.
func TestRecentForgetsIDsNoLongerAsked(t *testing.T) {
	c := newCloud(10)
	s, clk := newSnap(c, Options{})
	for i := range 10 {
		if _, _, err := s.Recent(t.Context(), fmt.Sprintf("i-%04d", i)); err != nil {
			t.Fatal(err)
		}
	}
	clk.SetTime(clk.Now().Add(askedFor + time.Second))
	c.idsAsked.Store(0)
	if _, _, err := s.Recent(t.Context(), "i-0000"); err != nil {
		t.Fatal(err)
	}
	if n := c.idsAsked.Load(); n != 1 {
		t.Errorf("refresh asked about %d IDs, want only the one still asked", n)
	}
	s.recentMu.Lock()
	defer s.recentMu.Unlock()
	if len(s.recent) != 1 || len(s.asked) != 1 {
		t.Errorf("kept %d answers and %d asked IDs, want 1 each", len(s.recent), len(s.asked))
	}
}

func TestFailedListingIsHeldBriefly(t *testing.T) {
	c := newCloud(1)
	c.fail = errors.New("throttled")
	s, clk := newSnap(c, Options{})
	for range 5 {
		if err := s.Fresh(t.Context()); err == nil {
			t.Fatal("no error from a failing listing")
		}
	}
	if n := c.lists.Load(); n != 1 {
		t.Errorf("%d listings within the hold, want 1", n)
	}
	c.fail = nil
	clk.SetTime(clk.Now().Add(refreshErrorHold))
	if err := s.Fresh(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestByNameFallsBackToLookup(t *testing.T) {
	c := newCloud(0)
	s, _ := newSnap(c, Options{})
	if err := s.Fresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	c.insts["i-0abc"] = inst{id: "i-0abc", name: "late", state: "running"}
	if got, ok, err := s.ByName(t.Context(), "late"); !ok || err != nil || got.id != "i-0abc" {
		t.Fatalf("ByName = %v %v %v", got, ok, err)
	}
	if _, ok, err := s.ByName(t.Context(), "nobody"); ok || err != nil {
		t.Fatalf("ByName(nobody) = %v %v", ok, err)
	}
	if n := c.nameCalls.Load(); n != 2 {
		t.Errorf("%d name lookups, want 2", n)
	}
	if _, ok, _ := s.ByName(t.Context(), "late"); !ok || c.nameCalls.Load() != 2 {
		t.Error("found instance not added to the listing")
	}
}

// While the cloud fails, a pass over many NotReady Nodes costs one failed
// call, not one per Node; every Node gets the error, none "gone".
func TestRecentHoldsAFailureBriefly(t *testing.T) {
	c := newCloud(50)
	s, clk := newSnap(c, Options{})
	c.fail = errors.New("RequestLimitExceeded")
	for i := range 50 {
		if _, ok, err := s.Recent(t.Context(), fmt.Sprintf("i-%04d", i)); ok || err == nil {
			t.Fatalf("exists=%v err=%v during a failure", ok, err)
		}
	}
	if n := c.idCalls.Load(); n != 1 {
		t.Errorf("%d calls for a pass over 50 Nodes while failing, want 1", n)
	}
	c.fail = nil
	clk.SetTime(clk.Now().Add(refreshErrorHold))
	if _, ok, err := s.Recent(t.Context(), "i-0003"); !ok || err != nil {
		t.Fatalf("after the hold: %v %v", ok, err)
	}
	// Lookups by ID then cost only the listing.
	before := c.idCalls.Load() + c.lists.Load()
	if got, err := s.ByIDs(t.Context(), []string{"i-0003", "i-0049"}); err != nil || len(got) != 2 {
		t.Fatal(got, err)
	}
	if n := c.idCalls.Load() + c.lists.Load() - before; n != 1 {
		t.Errorf("%d calls, want just the listing", n)
	}
}

// A server deleted while its Node was NotReady is answered "not found"
// once; its Node is then deleted, so nobody asks about it any more, and
// the lifecycle passes that follow (other Nodes still NotReady) no longer
// ask the cloud about it. A Node still there keeps asking, and gets the
// cloud's fresh word each pass.
func TestRecentStopsAskingAboutGoneIDsNobodyAsks(t *testing.T) {
	c := newCloud(3)
	asked := map[string]int{}
	var mu sync.Mutex
	src := c.source()
	lookup := src.LookupIDs
	src.LookupIDs = func(ctx context.Context, ids []string) (map[string]inst, error) {
		mu.Lock()
		for _, id := range ids {
			asked[id]++
		}
		mu.Unlock()
		return lookup(ctx, ids)
	}
	clk := clocktesting.NewFakePassiveClock(time.Now())
	notReady := []string{"i-0000", "i-0001", "i-0002"}
	var watchMu sync.Mutex
	s := New(src, Options{Clock: clk, Watch: func() []string {
		watchMu.Lock()
		defer watchMu.Unlock()
		return slices.Clone(notReady)
	}})
	pass := func() map[string]bool {
		watchMu.Lock()
		ids := slices.Clone(notReady)
		watchMu.Unlock()
		exists := map[string]bool{}
		for _, id := range ids {
			_, ok, err := s.Recent(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			exists[id] = ok
		}
		return exists
	}
	pass()
	// i-0000's server is deleted: the next pass says it is gone and the
	// lifecycle controller deletes its Node. i-0001's server is deleted
	// too, but its Node stays a while (a slow deletion).
	delete(c.insts, "i-0000")
	delete(c.insts, "i-0001")
	clk.SetTime(clk.Now().Add(5 * time.Second))
	if got := pass(); got["i-0000"] || got["i-0001"] || !got["i-0002"] {
		t.Fatalf("exists %v, want only i-0002", got)
	}
	watchMu.Lock()
	notReady = []string{"i-0001", "i-0002"}
	watchMu.Unlock()
	// Two minutes of 5 s passes over the Nodes still NotReady.
	for range 24 {
		clk.SetTime(clk.Now().Add(5 * time.Second))
		if got := pass(); got["i-0001"] || !got["i-0002"] {
			t.Fatalf("exists %v", got)
		}
	}
	if n := c.idCalls.Load(); n != 26 {
		t.Errorf("%d lookup calls in 26 passes, want 26 (one per pass)", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if asked["i-0000"] != 2 {
		t.Errorf("the cloud was asked about the server of a deleted Node %d times, want 2 (before and at its deletion)", asked["i-0000"])
	}
	if asked["i-0001"] != 26 || asked["i-0002"] != 26 {
		t.Errorf("asked about the Nodes still there %d and %d times, want once per pass (26)", asked["i-0001"], asked["i-0002"])
	}
}
