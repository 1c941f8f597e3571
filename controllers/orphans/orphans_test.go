package orphans

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
	"k8s.io/component-base/metrics/testutil"

	"github.com/multicloud-ccm/multicloud-ccm/providers/inventory"
)

type invFake struct {
	mu      sync.Mutex
	owned   []inventory.Owned
	listErr error
	deleted []string
}

func (f *invFake) Owned(context.Context) ([]inventory.Owned, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]inventory.Owned(nil), f.owned...), f.listErr
}
func (f *invFake) Forget(types.NamespacedName) {}
func (f *invFake) DeleteOrphan(_ context.Context, o inventory.Owned) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if o.Kept {
		return errors.New("deleted a Kept resource")
	}
	f.deleted = append(f.deleted, o.Kind+" "+o.ID)
	var rest []inventory.Owned
	for _, x := range f.owned {
		if x.Kind != o.Kind || x.ID != o.ID {
			rest = append(rest, x)
		}
	}
	f.owned = rest
	return nil
}

type source struct{ clouds []inventory.Cloud }

func (s source) Inventories() []inventory.Cloud { return s.clouds }
func (s source) ServingCloud(svc *v1.Service) (string, error) {
	if c := svc.Annotations["cloud"]; c != "" {
		return c, nil
	}
	return "a", nil
}

func svc(name, uid string, typ v1.ServiceType) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid)}, Spec: v1.ServiceSpec{Type: typ}}
}

func key(name string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: name} }

// TestFind: the reasons a resource is an orphan, and what never is one.
func TestFind(t *testing.T) {
	moved := svc("moved", "u-moved", v1.ServiceTypeLoadBalancer)
	moved.Annotations = map[string]string{"cloud": "b"}
	class := "example.com/lb"
	classed := svc("classed", "u-classed", v1.ServiceTypeLoadBalancer)
	classed.Spec.LoadBalancerClass = &class
	deleting := svc("deleting", "u-deleting", v1.ServiceTypeLoadBalancer)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	services := map[types.NamespacedName]*v1.Service{}
	for _, s := range []*v1.Service{
		svc("live", "u-live", v1.ServiceTypeLoadBalancer), svc("cip", "u-cip", v1.ServiceTypeClusterIP),
		svc("remade", "u-new", v1.ServiceTypeLoadBalancer), moved, classed, deleting,
	} {
		services[key(s.Name)] = s
	}
	owned := []inventory.Owned{
		{Kind: "lb", ID: "1", Service: key("live"), UID: "u-live"},
		{Kind: "lb", ID: "2", Service: key("gone"), Order: 2},
		{Kind: "listener", ID: "2a", Service: key("gone"), Order: 1},
		{Kind: "lb", ID: "3", Service: key("cip")},
		{Kind: "lb", ID: "4", Service: key("remade"), UID: "u-old"},
		{Kind: "lb", ID: "5", Service: key("moved")},
		{Kind: "lb", ID: "6", Service: key("classed")},
		{Kind: "lb", ID: "7", Service: key("deleting")},
		{Kind: "health check", ID: "shared"},
		{Kind: "rule", ID: "unneeded", Unneeded: true}, // shared, and no load balancer needs it
		{Kind: "lb", ID: "8", Service: key("live")},    // no UID recorded: owned by name
		{Kind: "frontend", ID: "9", UID: "u-live"},     // only the UID recorded: owned
		{Kind: "frontend", ID: "10", UID: "u-gone"},    // only the UID recorded: no such Service
	}
	got := Find("a", owned, services, source{}.ServingCloud)
	var lines []string
	for _, o := range got {
		lines = append(lines, o.Kind+" "+o.ID+": "+o.Reason)
	}
	want := []string{
		"frontend 10: its Service does not exist",
		"lb 3: its Service is of type ClusterIP",
		"lb 4: its Service was made again (UID u-new, the cloud recorded u-old)",
		"lb 5: its Service's load balancer is in cloud b",
		"lb 6: its Service has loadBalancerClass example.com/lb",
		"rule unneeded: no load balancer needs this shared part any more",
		"listener 2a: its Service does not exist",
		"lb 2: its Service does not exist",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("orphans:\n%s\nwant (in dependency order):\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

func newController(t *testing.T, opts Options, inv *invFake, svcs ...*v1.Service) (*Controller, inventory.Cloud, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset()
	for _, s := range svcs {
		if _, err := client.CoreV1().Services(s.Namespace).Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f := informers.NewSharedInformerFactory(client, 0)
	inf := f.Core().V1().Services()
	inf.Informer()
	f.Start(t.Context().Done())
	f.WaitForCacheSync(t.Context().Done())
	cl := inventory.Cloud{Name: "a", Inventory: inv}
	return New(opts, source{[]inventory.Cloud{cl}}, inf), cl, client
}

// TestReportCountsAndDeletesNothing: report mode counts orphans by kind on
// /metrics and never deletes.
func TestReportCountsAndDeletesNothing(t *testing.T) {
	inv := &invFake{owned: []inventory.Owned{
		{Kind: "load balancer", ID: "lb-1", Service: key("gone")},
		{Kind: "listener", ID: "l-1", Service: key("gone")},
		{Kind: "address", ID: "ip-1", Service: key("gone"), Kept: true},
		{Kind: "load balancer", ID: "lb-2", Service: key("live")},
	}}
	c, cl, _ := newController(t, Options{Period: time.Minute, Grace: 0}, inv, svc("live", "u", v1.ServiceTypeLoadBalancer))
	c.Scan(t.Context(), cl)
	c.Scan(t.Context(), cl)
	if len(inv.deleted) != 0 {
		t.Errorf("report mode deleted %v", inv.deleted)
	}
	for kind, want := range map[string]float64{"load balancer": 1, "listener": 1, "address": 1} {
		if v, err := testutil.GetGaugeMetricValue(orphaned.WithLabelValues("a", kind)); err != nil || v != want {
			t.Errorf("orphaned{a,%s} = %v %v, want %v", kind, v, err, want)
		}
	}
}

// TestDeleteAfterGrace: delete mode deletes exactly the orphans that
// stayed orphans for the grace period, in dependency order, never a Kept
// one; a failed listing deletes nothing.
func TestDeleteAfterGrace(t *testing.T) {
	inv := &invFake{owned: []inventory.Owned{
		{Kind: "load balancer", ID: "lb-1", Service: key("gone"), Order: 3},
		{Kind: "listener", ID: "l-1", Service: key("gone"), Order: 1},
		{Kind: "pool", ID: "p-1", Service: key("gone"), Order: 2},
		{Kind: "address", ID: "ip-1", Service: key("gone"), Kept: true, Order: 4},
		{Kind: "load balancer", ID: "lb-2", Service: key("live")},
	}}
	c, cl, _ := newController(t, Options{Period: time.Minute, Grace: time.Hour, Delete: true}, inv, svc("live", "u", v1.ServiceTypeLoadBalancer))
	now := time.Now()
	c.now = func() time.Time { return now }
	c.Scan(t.Context(), cl)
	now = now.Add(59 * time.Minute)
	c.Scan(t.Context(), cl)
	if len(inv.deleted) != 0 {
		t.Fatalf("deleted within the grace period: %v", inv.deleted)
	}
	now = now.Add(2 * time.Minute)
	inv.listErr = errors.New("throttled")
	c.Scan(t.Context(), cl)
	if len(inv.deleted) != 0 {
		t.Fatalf("deleted on a failed listing: %v", inv.deleted)
	}
	inv.listErr = nil
	c.Scan(t.Context(), cl)
	if got := fmt.Sprint(inv.deleted); got != "[listener l-1 pool p-1 load balancer lb-1]" {
		t.Errorf("deleted %s", got)
	}
	if len(inv.owned) != 2 {
		t.Errorf("left %+v, want the live load balancer and the kept address", inv.owned)
	}
}

// TestAnOrphanOwnedAgainStartsOver: a resource whose Service appears
// (made again under its name) leaves the count and is not deleted.
func TestAnOrphanOwnedAgainStartsOver(t *testing.T) {
	inv := &invFake{owned: []inventory.Owned{{Kind: "load balancer", ID: "lb-1", Service: key("web")}}}
	c, cl, client := newController(t, Options{Period: time.Minute, Grace: time.Hour, Delete: true}, inv)
	now := time.Now()
	c.now = func() time.Time { return now }
	c.Scan(t.Context(), cl)
	if len(c.since["a"]) != 1 {
		t.Fatalf("tracked %v", c.since["a"])
	}
	if _, err := client.CoreV1().Services("ns").Create(t.Context(), svc("web", "u", v1.ServiceTypeLoadBalancer), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := c.services.Services("ns").Get("web"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the informer never saw the Service")
		}
	}
	now = now.Add(2 * time.Hour)
	c.Scan(t.Context(), cl)
	if len(inv.deleted) != 0 || len(c.since["a"]) != 0 {
		t.Fatalf("an owned resource: deleted %v, tracked %v", inv.deleted, c.since["a"])
	}
}
