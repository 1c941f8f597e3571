package lbrepair

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/multicloud-ccm/multicloud-ccm/providers/inventory"
)

// cloudFake is one cloud's inventory: parts by Service, syncs, repairs.
type cloudFake struct {
	mu    sync.Mutex
	parts map[types.NamespacedName]map[string]string // "kind id" -> detail
	// shared are parts listed under no Service, "kind id" -> detail.
	shared map[string]string
	// followsNodes are the parts ("kind id") listed FollowsNodes.
	followsNodes map[string]bool
	// pending are the parts ("kind id") listed Pending.
	pending  map[string]bool
	syncs    map[types.NamespacedName]inventory.Sync
	listErr  error
	repaired []string
	forgot   []string
	status   *v1.LoadBalancerStatus
	// clk times the syncs, as lbserial's clock times LastSync's; the
	// controller reads the same clock.
	clk *clocktesting.FakeClock
}

func (f *cloudFake) Owned(context.Context) ([]inventory.Owned, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.listErr != nil {
		return nil, f.listErr
	}
	var out []inventory.Owned
	for svc, ps := range f.parts {
		for k, d := range ps {
			kind, id, _ := strings.Cut(k, " ")
			out = append(out, inventory.Owned{Kind: kind, ID: id, Service: svc, Detail: d, FollowsNodes: f.followsNodes[k], Pending: f.pending[k]})
		}
	}
	for k, d := range f.shared {
		kind, id, _ := strings.Cut(k, " ")
		out = append(out, inventory.Owned{Kind: kind, ID: id, Detail: d})
	}
	out = append(out, inventory.Owned{Kind: "health check", ID: "shared"}) // no Service: never compared
	return out, nil
}

func (f *cloudFake) Forget(svc types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forgot = append(f.forgot, svc.String())
}

func (f *cloudFake) DeleteOrphan(context.Context, inventory.Owned) error { return nil }

// sync is a sync of the service controller's (ensure: a full one).
func (f *cloudFake) sync(key types.NamespacedName, ensure bool, parts map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.clk.Now()
	s := f.syncs[key]
	s.At = now
	if ensure {
		s.EnsuredAt = now
	}
	f.syncs[key] = s
	f.parts[key] = parts
}

func (f *cloudFake) cloud(name string) inventory.Cloud {
	return inventory.Cloud{
		Name: name, Inventory: f,
		LastSync: func(svc types.NamespacedName) (inventory.Sync, bool) {
			f.mu.Lock()
			defer f.mu.Unlock()
			s, ok := f.syncs[svc]
			return s, ok
		},
		Repair: func(_ context.Context, _ string, svc *v1.Service, still func() bool) (*v1.LoadBalancerStatus, bool, error) {
			if !still() {
				return nil, false, nil
			}
			f.mu.Lock()
			f.repaired = append(f.repaired, svc.Name)
			f.mu.Unlock()
			key := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
			// The repair's ensure ends after the listing began.
			f.clk.Step(time.Second)
			f.sync(key, true, map[string]string{"load-balancer lb-new": "port 80"})
			return f.status, true, nil
		},
	}
}

type sourceFake struct{ clouds []inventory.Cloud }

func (s sourceFake) Inventories() []inventory.Cloud { return s.clouds }
func (s sourceFake) ServingCloud(svc *v1.Service) (string, error) {
	if c := svc.Annotations["cloud"]; c != "" {
		return c, nil
	}
	return "a", nil
}

func lbService(name string) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), ResourceVersion: "1"},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer},
		Status:     v1.ServiceStatus{LoadBalancer: v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: "192.0.2.1"}}}},
	}
}

type harness struct {
	c      *Controller
	fake   *cloudFake
	cloud  inventory.Cloud
	client *fake.Clientset
	events *record.FakeRecorder
}

func newHarness(t *testing.T, svcs ...*v1.Service) *harness {
	t.Helper()
	client := fake.NewClientset()
	for _, s := range svcs {
		if _, err := client.CoreV1().Services(s.Namespace).Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f := informers.NewSharedInformerFactory(client, 0)
	svcInf := f.Core().V1().Services()
	svcInf.Informer()
	f.Start(t.Context().Done())
	f.WaitForCacheSync(t.Context().Done())
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	cf := &cloudFake{parts: map[types.NamespacedName]map[string]string{}, syncs: map[types.NamespacedName]inventory.Sync{}, clk: clk}
	cl := cf.cloud("a")
	rec := record.NewFakeRecorder(100)
	c := New(Options{Period: time.Minute}, sourceFake{[]inventory.Cloud{cl}}, client, svcInf, rec)
	c.now = clk.Now
	return &harness{c: c, fake: cf, cloud: cl, client: client, events: rec}
}

func key(name string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: name} }

func (h *harness) events1(t *testing.T) []string {
	t.Helper()
	var out []string
	for {
		select {
		case e := <-h.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// TestRepairsAMissingPart: a part deleted after the baseline is repaired
// once, with an Event naming it, and a new address is written.
func TestRepairsAMissingPart(t *testing.T) {
	h := newHarness(t, lbService("web"))
	h.fake.sync(key("web"), true, map[string]string{"load-balancer lb-1": "port 80", "listener l-1": "80/TCP"})
	ctx := t.Context()
	h.c.Check(ctx, h.cloud) // baseline
	if len(h.fake.repaired) != 0 {
		t.Fatalf("repaired at the baseline: %v", h.fake.repaired)
	}
	h.c.Check(ctx, h.cloud) // unchanged
	h.fake.mu.Lock()
	delete(h.fake.parts[key("web")], "listener l-1")
	h.fake.mu.Unlock()
	h.fake.status = &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: "192.0.2.99"}}}
	h.c.Check(ctx, h.cloud)
	if fmt.Sprint(h.fake.repaired) != "[web]" || fmt.Sprint(h.fake.forgot) != "[ns/web]" {
		t.Fatalf("repaired %v, forgot %v", h.fake.repaired, h.fake.forgot)
	}
	evs := h.events1(t)
	if len(evs) != 1 || !strings.Contains(evs[0], EventRepaired) || !strings.Contains(evs[0], "listener l-1 missing") {
		t.Errorf("events %v", evs)
	}
	got, err := h.client.CoreV1().Services("ns").Get(ctx, "web", metav1.GetOptions{})
	if err != nil || got.Status.LoadBalancer.Ingress[0].IP != "192.0.2.99" {
		t.Errorf("status after the repair: %+v %v", got.Status.LoadBalancer, err)
	}
	// The repair was a sync: its result is the new baseline.
	h.c.Check(ctx, h.cloud)
	h.c.Check(ctx, h.cloud)
	if len(h.fake.repaired) != 1 {
		t.Errorf("repaired again: %v", h.fake.repaired)
	}
}

// TestSyncsMoveTheBaseline: what the service controller's own ensure
// changes is no drift; an update may change details but a part missing
// after it is still drift; a changed detail without any sync is drift.
func TestSyncsMoveTheBaseline(t *testing.T) {
	h := newHarness(t, lbService("web"))
	ctx := t.Context()
	h.fake.sync(key("web"), true, map[string]string{"pool p-1": "members a,b", "listener l-1": "80/TCP"})
	h.c.Check(ctx, h.cloud)
	h.fake.clk.Step(time.Second)
	h.fake.sync(key("web"), true, map[string]string{"pool p-1": "members a,b", "listener l-2": "8080/TCP"}) // a port change
	h.c.Check(ctx, h.cloud)
	h.fake.clk.Step(time.Second)
	h.fake.sync(key("web"), false, map[string]string{"pool p-1": "members a", "listener l-2": "8080/TCP"}) // a node left
	h.c.Check(ctx, h.cloud)
	if len(h.fake.repaired) != 0 {
		t.Fatalf("the service controller's syncs taken for drift: %v %v", h.fake.repaired, h.events1(t))
	}
	// An update after a part went missing does not hide it.
	h.fake.clk.Step(time.Second)
	h.fake.sync(key("web"), false, map[string]string{"pool p-1": "members a,c"})
	h.c.Check(ctx, h.cloud)
	if fmt.Sprint(h.fake.repaired) != "[web]" {
		t.Fatalf("a part missing after an update: repaired %v", h.fake.repaired)
	}
	// A detail changed with no sync.
	h.c.Check(ctx, h.cloud) // baseline of the repair
	h.fake.mu.Lock()
	h.fake.parts[key("web")]["load-balancer lb-new"] = "port 81"
	h.fake.mu.Unlock()
	h.c.Check(ctx, h.cloud)
	if len(h.fake.repaired) != 2 || !strings.Contains(strings.Join(h.events1(t), " "), `changed from "port 80" to "port 81"`) {
		t.Errorf("a changed detail: repaired %v", h.fake.repaired)
	}
}

// TestNothingRepairedWithoutAnswer: a failing listing repairs nothing; a
// Service not synced in this process, served by another cloud, or synced
// again since the check saw it is the service controller's.
func TestNothingRepairedWithoutAnswer(t *testing.T) {
	other := lbService("elsewhere")
	other.Annotations = map[string]string{"cloud": "b"}
	h := newHarness(t, lbService("web"), lbService("unsynced"), other)
	ctx := t.Context()
	h.fake.sync(key("web"), true, map[string]string{"listener l-1": "80/TCP"})
	h.fake.sync(key("elsewhere"), true, map[string]string{"listener l-9": "80/TCP"})
	h.c.Check(ctx, h.cloud)
	h.fake.mu.Lock()
	h.fake.parts = map[types.NamespacedName]map[string]string{}
	h.fake.listErr = errors.New("throttled")
	h.fake.mu.Unlock()
	h.c.Check(ctx, h.cloud)
	if len(h.fake.repaired) != 0 {
		t.Fatalf("repaired on a failed listing: %v", h.fake.repaired)
	}
	// The service controller synced the Service after the check saw it:
	// the repair is superseded.
	h.fake.mu.Lock()
	h.fake.listErr = nil
	h.fake.mu.Unlock()
	stale := lbService("web")
	h.c.repair(ctx, h.cloud, stale, inventory.Sync{}, "listener l-1 missing")
	if len(h.fake.repaired) != 0 {
		t.Errorf("repaired a Service that changed meanwhile: %v", h.fake.repaired)
	}
}

// TestMostDriftedAtOnceWaitsForASecondListing: a listing by which most
// Services drifted repairs nothing until the next one agrees.
func TestMostDriftedAtOnceWaitsForASecondListing(t *testing.T) {
	var svcs []*v1.Service
	for i := range 8 {
		svcs = append(svcs, lbService(fmt.Sprintf("s%d", i)))
	}
	h := newHarness(t, svcs...)
	ctx := t.Context()
	for _, s := range svcs {
		h.fake.sync(key(s.Name), true, map[string]string{"listener l-" + s.Name: "80/TCP"})
	}
	h.c.Check(ctx, h.cloud)
	h.fake.mu.Lock()
	h.fake.parts = map[types.NamespacedName]map[string]string{}
	h.fake.mu.Unlock()
	h.c.Check(ctx, h.cloud)
	if len(h.fake.repaired) != 0 {
		t.Fatalf("repaired on the first such listing: %v", h.fake.repaired)
	}
	h.c.Check(ctx, h.cloud)
	if len(h.fake.repaired) != 8 {
		t.Errorf("repaired %v after the second listing agreed", h.fake.repaired)
	}
}

// TestNodeSetUpdateTakesPartsThatFollowNodes: a part marked FollowsNodes
// (a rule into a node group) that an update-only sync removed is no
// drift; the same part removed with no sync since is.
func TestNodeSetUpdateTakesPartsThatFollowNodes(t *testing.T) {
	h := newHarness(t, lbService("web"))
	ctx := t.Context()
	ruleA, ruleB := "security group rule sg-a tcp 30080 30080 sg-lb", "security group rule sg-b tcp 30080 30080 sg-lb"
	h.fake.followsNodes = map[string]bool{ruleA: true, ruleB: true}
	h.fake.sync(key("web"), true, map[string]string{
		"network load balancer nlb-1": "internet-facing",
		ruleA:                         "tcp 30080 from k8s-nlb into sg-a",
		ruleB:                         "tcp 30080 from k8s-nlb into sg-b",
	})
	h.c.Check(ctx, h.cloud)
	// The nodes of group b left: the update revoked its rule.
	h.fake.clk.Step(time.Second)
	h.fake.sync(key("web"), false, map[string]string{
		"network load balancer nlb-1": "internet-facing",
		ruleA:                         "tcp 30080 from k8s-nlb into sg-a",
	})
	h.c.Check(ctx, h.cloud)
	h.c.Check(ctx, h.cloud)
	if len(h.fake.repaired) != 0 {
		t.Fatalf("a rule the node-set update revoked taken for drift: %v %v", h.fake.repaired, h.events1(t))
	}
	// Someone revoked the other, with no sync since.
	h.fake.mu.Lock()
	delete(h.fake.parts[key("web")], ruleA)
	h.fake.mu.Unlock()
	h.c.Check(ctx, h.cloud)
	if fmt.Sprint(h.fake.repaired) != "[web]" {
		t.Fatalf("a rule revoked with no sync since: repaired %v", h.fake.repaired)
	}
	if evs := h.events1(t); len(evs) != 1 || !strings.Contains(evs[0], ruleA+" missing") {
		t.Errorf("events %v", evs)
	}
}

// TestPartsChangingServiceAreNoDrift: a load balancer a second Service
// starts sharing moves from its first Service to none, and back when the
// second stops: neither is drift for the first, which no sync touched,
// nor on the listings after, whenever its baseline was taken. A part
// gone from the listing altogether, or new to a Service and listed
// nowhere before, still is.
func TestPartsChangingServiceAreNoDrift(t *testing.T) {
	h := newHarness(t, lbService("own"), lbService("sharer"))
	ctx := t.Context()
	move := func(from, to map[string]string, keys ...string) {
		h.fake.mu.Lock()
		defer h.fake.mu.Unlock()
		for _, k := range keys {
			to[k] = from[k]
			delete(from, k)
		}
	}
	h.fake.shared = map[string]string{}
	h.fake.sync(key("own"), true, map[string]string{
		"load balancer lb-1":         "VIP 10.0.0.5",
		"floating IP f-1":            "192.0.2.1 on port p-1",
		"listener l-1":               "TCP:80",
		"load balancer use lb-1/own": "uses load balancer lb-1",
	})
	h.c.Check(ctx, h.cloud)
	own := h.fake.parts[key("own")]

	// The second Service starts sharing: its sync lists the load
	// balancer and its address under none.
	h.fake.clk.Step(time.Second)
	move(own, h.fake.shared, "load balancer lb-1", "floating IP f-1")
	h.fake.sync(key("sharer"), true, map[string]string{"load balancer use lb-1/sharer": "uses load balancer lb-1", "listener l-2": "TCP:8080"})
	h.c.Check(ctx, h.cloud)
	h.c.Check(ctx, h.cloud)
	if len(h.fake.repaired) != 0 {
		t.Fatalf("sharing taken for drift: %v %v", h.fake.repaired, h.events1(t))
	}
	// The first Service syncs while shared: its baseline lacks them.
	h.fake.clk.Step(time.Second)
	h.fake.sync(key("own"), true, own)
	h.c.Check(ctx, h.cloud)

	// It stops sharing (its own load balancer now): they are the first
	// Service's again.
	h.fake.clk.Step(time.Second)
	h.fake.sync(key("sharer"), true, map[string]string{"load balancer lb-2": "VIP 10.0.0.6", "listener l-3": "TCP:8080"})
	move(h.fake.shared, own, "load balancer lb-1", "floating IP f-1")
	h.c.Check(ctx, h.cloud)
	h.c.Check(ctx, h.cloud)
	h.c.Check(ctx, h.cloud)
	if len(h.fake.repaired) != 0 {
		t.Fatalf("the end of sharing taken for drift: %v %v", h.fake.repaired, h.events1(t))
	}

	// Shared again, and the address released by hand: gone from the
	// listing, it is missing; the load balancer only moved.
	move(own, h.fake.shared, "load balancer lb-1")
	h.fake.mu.Lock()
	delete(own, "floating IP f-1")
	h.fake.mu.Unlock()
	h.c.Check(ctx, h.cloud)
	if fmt.Sprint(h.fake.repaired) != "[own]" {
		t.Fatalf("a part gone from the listing: repaired %v", h.fake.repaired)
	}
	if evs := h.events1(t); len(evs) != 1 || !strings.Contains(evs[0], "floating IP f-1 missing") || strings.Contains(evs[0], "lb-1") {
		t.Errorf("events %v", evs)
	}

	// A part new to a Service that no listing had before is added.
	h.c.Check(ctx, h.cloud) // baseline of the repair
	h.fake.mu.Lock()
	h.fake.parts[key("own")]["listener l-9"] = "TCP:9090"
	h.fake.mu.Unlock()
	h.c.Check(ctx, h.cloud)
	if fmt.Sprint(h.fake.repaired) != "[own own]" || !strings.Contains(strings.Join(h.events1(t), " "), "listener l-9 added") {
		t.Errorf("a part added by hand: repaired %v", h.fake.repaired)
	}
}

// TestPendingPartsSettleLater: a part still changing when the listing
// after an update sees it (the update returned once its change was
// accepted) takes its settled Detail from a later listing, no drift; a
// change someone makes with no sync since is drift once it settles.
func TestPendingPartsSettleLater(t *testing.T) {
	h := newHarness(t, lbService("web"))
	ctx := t.Context()
	set := func(detail string, pending bool) {
		h.fake.mu.Lock()
		defer h.fake.mu.Unlock()
		h.fake.parts[key("web")]["pool p-1"] = detail
		h.fake.pending = map[string]bool{"pool p-1": pending}
	}
	h.fake.sync(key("web"), true, map[string]string{"listener l-1": "80/TCP", "pool p-1": "members a,b,c"})
	h.c.Check(ctx, h.cloud)
	// A node left: the update's member change is accepted, not yet done.
	h.fake.clk.Step(time.Second)
	h.fake.sync(key("web"), false, map[string]string{"listener l-1": "80/TCP", "pool p-1": "members a,b,c"})
	set("members a,b,c", true)
	h.c.Check(ctx, h.cloud)
	set("members a,b", false)
	h.c.Check(ctx, h.cloud)
	h.c.Check(ctx, h.cloud)
	if len(h.fake.repaired) != 0 {
		t.Fatalf("an update's change settling taken for drift: %v %v", h.fake.repaired, h.events1(t))
	}
	// Someone removes a member, with no sync since: not judged while
	// pending, drift once done.
	set("members a", true)
	h.c.Check(ctx, h.cloud)
	if len(h.fake.repaired) != 0 {
		t.Fatalf("judged while pending: %v", h.fake.repaired)
	}
	set("members a", false)
	h.c.Check(ctx, h.cloud)
	if fmt.Sprint(h.fake.repaired) != "[web]" || !strings.Contains(strings.Join(h.events1(t), " "), `changed from "members a,b" to "members a"`) {
		t.Errorf("a change settled with no sync since: repaired %v", h.fake.repaired)
	}
}
