package lbserial

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/multicloud-ccm/multicloud-ccm/providers/lbhosts"
)

// slowLB records overlapping calls per Service and can block ensures.
type slowLB struct {
	mu       sync.Mutex
	running  map[string]int
	overlaps atomic.Int32
	ensures  atomic.Int32
	updates  atomic.Int32
	deletes  atomic.Int32
	block    chan struct{}
	fail     error
}

func (s *slowLB) enter(svc *v1.Service) func() {
	s.mu.Lock()
	k := key(svc)
	s.running[k]++
	if s.running[k] > 1 {
		s.overlaps.Add(1)
	}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.running[k]--
		s.mu.Unlock()
	}
}

func (s *slowLB) GetLoadBalancer(context.Context, string, *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	return nil, false, nil
}
func (s *slowLB) GetLoadBalancerName(_ context.Context, _ string, svc *v1.Service) string {
	return key(svc)
}
func (s *slowLB) EnsureLoadBalancer(_ context.Context, _ string, svc *v1.Service, _ []*v1.Node) (*v1.LoadBalancerStatus, error) {
	defer s.enter(svc)()
	s.ensures.Add(1)
	if s.block != nil {
		<-s.block
	}
	if svc.Annotations["elsewhere"] != "" {
		return nil, cloudprovider.ImplementedElsewhere
	}
	return &v1.LoadBalancerStatus{}, s.fail
}
func (s *slowLB) UpdateLoadBalancer(_ context.Context, _ string, svc *v1.Service, _ []*v1.Node) error {
	defer s.enter(svc)()
	s.updates.Add(1)
	time.Sleep(time.Millisecond)
	return nil
}
func (s *slowLB) EnsureLoadBalancerDeleted(_ context.Context, _ string, svc *v1.Service) error {
	defer s.enter(svc)()
	s.deletes.Add(1)
	return nil
}

func svc(name string) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: "u-" + "name"}}
}

func nodes(names ...string) []*v1.Node {
	var out []*v1.Node
	for _, n := range names {
		out = append(out, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	return out
}

// waitRefs waits until n calls for the Service are running or waiting.
func waitRefs(t *testing.T, l *LoadBalancer, s *v1.Service, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		l.mu.Lock()
		st := l.keys[key(s)]
		got := 0
		if st != nil {
			got = st.refs
		}
		l.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d calls in flight, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestUpdateBehindEnsureWithSameNodesIsSkipped(t *testing.T) {
	inner := &slowLB{running: map[string]int{}, block: make(chan struct{})}
	l := Wrap(inner)
	s := svc("web")
	ensured := make(chan error, 1)
	go func() {
		_, err := l.EnsureLoadBalancer(t.Context(), "c", s, nodes("a", "b"))
		ensured <- err
	}()
	waitRefs(t, l, s, 1)
	updated := make(chan error, 1)
	go func() { updated <- l.UpdateLoadBalancer(t.Context(), "c", s, nodes("b", "a")) }()
	waitRefs(t, l, s, 2)
	close(inner.block)
	if err := <-ensured; err != nil {
		t.Fatal(err)
	}
	if err := <-updated; err != nil {
		t.Fatal(err)
	}
	if inner.updates.Load() != 0 {
		t.Errorf("%d backend updates, want 0: the ensure already did it", inner.updates.Load())
	}
	if inner.overlaps.Load() != 0 {
		t.Errorf("%d overlapping calls", inner.overlaps.Load())
	}
	if n := l.inFlight(); n != 0 {
		t.Errorf("%d Services still tracked", n)
	}
}

func TestUpdateBehindEnsureWithOtherNodesRuns(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fail     error
		nodes    []*v1.Node
		wantRuns int32
	}{
		{"node joined meanwhile", nil, nodes("a", "b", "c"), 1},
		// Nothing was provisioned: the controller retries the ensure,
		// which registers the nodes of its time.
		{"ensure failed", errors.New("boom"), nodes("a", "b"), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner := &slowLB{running: map[string]int{}, block: make(chan struct{}), fail: tc.fail}
			l := Wrap(inner)
			s := svc("web")
			go func() { _, _ = l.EnsureLoadBalancer(t.Context(), "c", s, nodes("a", "b")) }()
			waitRefs(t, l, s, 1)
			updated := make(chan error, 1)
			go func() { updated <- l.UpdateLoadBalancer(t.Context(), "c", s, tc.nodes) }()
			waitRefs(t, l, s, 2)
			close(inner.block)
			if err := <-updated; err != nil {
				t.Fatal(err)
			}
			if got := inner.updates.Load(); got != tc.wantRuns {
				t.Errorf("%d backend updates, want %d", got, tc.wantRuns)
			}
		})
	}
}

func TestCallsOfOneServiceNeverOverlapAndServicesDoNotWait(t *testing.T) {
	inner := &slowLB{running: map[string]int{}}
	l := Wrap(inner)
	var wg sync.WaitGroup
	for i := range 50 {
		s := svc([]string{"a", "b", "c"}[i%3])
		wg.Go(func() { _, _ = l.EnsureLoadBalancer(t.Context(), "c", s, nodes("n1")) })
		wg.Go(func() { _ = l.UpdateLoadBalancer(t.Context(), "c", s, nodes("n1", "n2")) })
		if i%10 == 0 {
			wg.Go(func() { _ = l.EnsureLoadBalancerDeleted(t.Context(), "c", s) })
		}
	}
	wg.Wait()
	if n := inner.overlaps.Load(); n != 0 {
		t.Errorf("%d overlapping calls for one Service", n)
	}
	if n := l.inFlight(); n != 0 {
		t.Errorf("%d Services still tracked after all calls returned", n)
	}

	// A blocked Service does not hold another one up.
	inner.block = make(chan struct{})
	defer close(inner.block)
	go func() { _, _ = l.EnsureLoadBalancer(context.Background(), "c", svc("slow"), nil) }()
	waitRefs(t, l, svc("slow"), 1)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if err := l.UpdateLoadBalancer(ctx, "c", svc("other"), nil); err != nil {
		t.Fatalf("other Service waited: %v", err)
	}
}

func TestWaitingCallerGivesUpOnItsContext(t *testing.T) {
	inner := &slowLB{running: map[string]int{}, block: make(chan struct{})}
	defer close(inner.block)
	l := Wrap(inner)
	s := svc("web")
	go func() { _, _ = l.EnsureLoadBalancer(context.Background(), "c", s, nil) }()
	waitRefs(t, l, s, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if err := l.EnsureLoadBalancerDeleted(ctx, "c", s); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the caller's deadline", err)
	}
	waitRefs(t, l, s, 1)
}

func TestErrorsPassThroughUnwrapped(t *testing.T) {
	l := Wrap(&slowLB{running: map[string]int{}})
	s := svc("elsewhere")
	s.Annotations = map[string]string{"elsewhere": "yes"}
	if _, err := l.EnsureLoadBalancer(t.Context(), "c", s, nil); err != cloudprovider.ImplementedElsewhere { // the controller compares with ==
		t.Fatalf("err = %v, want ImplementedElsewhere itself", err)
	}
}

// TestUpdateBeforeFirstEnsure: an update for a Service that has no address
// and no successful ensure in this process has nothing to update; one with
// an address (provisioned before a restart) or after an ensure runs.
func TestUpdateBeforeFirstEnsure(t *testing.T) {
	inner := &slowLB{running: map[string]int{}}
	l := Wrap(inner)
	s := svc("web")
	if err := l.UpdateLoadBalancer(t.Context(), "c", s, nodes("a")); err != nil || inner.updates.Load() != 0 {
		t.Fatalf("update before any ensure: %v, %d backend updates, want none", err, inner.updates.Load())
	}
	restarted := s.DeepCopy()
	restarted.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: "192.0.2.10"}}
	if err := l.UpdateLoadBalancer(t.Context(), "c", restarted, nodes("a")); err != nil || inner.updates.Load() != 1 {
		t.Fatalf("update of a Service with an address: %v, %d backend updates, want 1", err, inner.updates.Load())
	}
	if _, err := l.EnsureLoadBalancer(t.Context(), "c", s, nodes("a")); err != nil {
		t.Fatal(err)
	}
	if err := l.UpdateLoadBalancer(t.Context(), "c", s, nodes("a", "b")); err != nil || inner.updates.Load() != 2 {
		t.Fatalf("update after an ensure: %v, %d backend updates, want 2", err, inner.updates.Load())
	}
	if err := l.EnsureLoadBalancerDeleted(t.Context(), "c", s); err != nil {
		t.Fatal(err)
	}
	if err := l.UpdateLoadBalancer(t.Context(), "c", s, nodes("a")); err != nil || inner.updates.Load() != 2 {
		t.Fatalf("update after delete: %v, %d backend updates, want still 2", err, inner.updates.Load())
	}
	if n := l.inFlight(); n != 0 {
		t.Errorf("%d Services still tracked", n)
	}
}

// TestLastSync: a successful ensure or update records when it finished and
// the nodes it was given; a failed one leaves the time of the last success;
// a delete forgets the Service.
func TestLastSync(t *testing.T) {
	inner := &slowLB{running: map[string]int{}}
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	l := WrapWithClock(inner, clk)
	s := svc("web")
	if _, _, ok := l.LastSync("ns", "web"); ok || l.lastNodes() != nil {
		t.Fatal("a sync before any call")
	}
	if _, err := l.EnsureLoadBalancer(t.Context(), "c", s, nodes("a")); err != nil {
		t.Fatal(err)
	}
	at, ensured, ok := l.LastSync("ns", "web")
	if !ok || !at.Equal(clk.Now()) || !ensured.Equal(clk.Now()) || len(l.lastNodes()) != 1 {
		t.Fatalf("after an ensure: %v %v, nodes %v", at, ok, l.lastNodes())
	}
	clk.Step(time.Second)
	if err := l.UpdateLoadBalancer(t.Context(), "c", s, nodes("a", "b")); err != nil {
		t.Fatal(err)
	}
	if at2, ensured2, _ := l.LastSync("ns", "web"); !at2.Equal(at.Add(time.Second)) || !ensured2.Equal(ensured) || len(l.lastNodes()) != 2 {
		t.Errorf("after an update: %v (was %v), ensured %v (was %v), nodes %v", at2, at, ensured2, ensured, l.lastNodes())
	}
	inner.fail = errors.New("boom")
	last, _, _ := l.LastSync("ns", "web")
	clk.Step(time.Second)
	if _, err := l.EnsureLoadBalancer(t.Context(), "c", s, nodes("a")); err == nil {
		t.Fatal("no error")
	}
	if at3, _, ok := l.LastSync("ns", "web"); !ok || !at3.Equal(last) || len(l.lastNodes()) != 2 {
		t.Errorf("a failed ensure moved the last sync: %v %v, nodes %v", at3, ok, l.lastNodes())
	}
	if err := l.EnsureLoadBalancerDeleted(t.Context(), "c", s); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := l.LastSync("ns", "web"); ok {
		t.Error("a sync of a deleted Service")
	}
}

// TestEnsureIf: a repair runs in the Service's turn with the latest nodes,
// only if the caller's check still holds then.
func TestEnsureIf(t *testing.T) {
	inner := &slowLB{running: map[string]int{}}
	l := Wrap(inner)
	s := svc("web")
	if _, err := l.EnsureLoadBalancer(t.Context(), "c", s, nodes("a", "b")); err != nil {
		t.Fatal(err)
	}
	if _, ran, err := l.EnsureIf(t.Context(), "c", s, func() bool { return false }); ran || err != nil || inner.ensures.Load() != 1 {
		t.Fatalf("a repair whose check fails ran: %v %v, %d ensures", ran, err, inner.ensures.Load())
	}
	_, e1, _ := l.LastSync("ns", "web")
	if _, ran, err := l.EnsureIf(t.Context(), "c", s, func() bool { return true }); !ran || err != nil || inner.ensures.Load() != 2 {
		t.Fatalf("repair: %v %v, %d ensures", ran, err, inner.ensures.Load())
	}
	if _, e2, _ := l.LastSync("ns", "web"); !e2.After(e1) {
		t.Errorf("a repair is an ensure: %v, was %v", e2, e1)
	}
	if n := l.inFlight(); n != 0 {
		t.Errorf("%d Services still tracked", n)
	}
}

// batchLB is slowLB with a batch that updates each Service.
type batchLB struct {
	*slowLB
	got [][]string
}

func (b *batchLB) UpdateLoadBalancerHosts(ctx context.Context, cluster string, svcs []*v1.Service, n []*v1.Node) []error {
	var names []string
	errs := make([]error, len(svcs))
	for i, s := range svcs {
		names = append(names, s.Name)
		errs[i] = b.UpdateLoadBalancer(ctx, cluster, s, n)
	}
	b.got = append(b.got, names)
	return errs
}

// TestBatch: the batch reaches the backend's in the Services' turns, with
// only the Services a single update would change (not one whose ensure
// has not run, nor one already brought to these nodes); a backend without
// a batch gives ErrNotBatched for every Service.
func TestBatch(t *testing.T) {
	inner := &batchLB{slowLB: &slowLB{running: map[string]int{}}}
	l := Wrap(inner)
	ctx := t.Context()
	a, b, fresh := svc("a"), svc("b"), svc("fresh")
	for _, s := range []*v1.Service{a, b} {
		if _, err := l.EnsureLoadBalancer(ctx, "c", s, nodes("n1")); err != nil {
			t.Fatal(err)
		}
	}
	errs := l.UpdateLoadBalancerHosts(ctx, "c", []*v1.Service{b, fresh, a}, nodes("n1", "n2"))
	if fmt.Sprint(errs) != "[<nil> <nil> <nil>]" || fmt.Sprint(inner.got) != "[[a b]]" {
		t.Errorf("errors %v, batches %v: want a and b in one batch", errs, inner.got)
	}
	if inner.overlaps.Load() != 0 {
		t.Error("calls of one Service overlapped")
	}
	plain := Wrap(&slowLB{running: map[string]int{}})
	for _, err := range plain.UpdateLoadBalancerHosts(ctx, "c", []*v1.Service{a}, nodes("n1")) {
		if !errors.Is(err, lbhosts.ErrNotBatched) {
			t.Errorf("without a batch: %v", err)
		}
	}
}
