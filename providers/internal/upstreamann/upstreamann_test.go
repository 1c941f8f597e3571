package upstreamann

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/multicloud-ccm/multicloud-ccm/providers/inventory"
)

var testTable = &Table{
	Upstream: "the upstream Example CCM",
	Annotations: []Annotation{
		{Key: "example.com/internal", Support: Supported, Upstream: "internal scheme", Ref: "x.go:1"},
		{Key: "example.com/idle-timeout", Support: Ignored, Upstream: "idle timeout", Note: "the timeout is the cloud's default of 350 s", Ref: "x.go:2"},
		{Key: "example.com/ssl-cert", Support: Refused, Upstream: "TLS listeners", Note: "TLS is not terminated here", Ref: "x.go:3"},
		{Key: "example.com/backend-protocol", Support: Refused, Upstream: "backend protocol", Note: "backends speak TCP only", Ref: "x.go:4",
			ByValue: func(v string) Support {
				if v == "tcp" {
					return Supported
				}
				return Refused
			}},
		{Key: "example.com/port_" + PortPlaceholder + "_probe", Support: Ignored, Upstream: "per-port probe", Note: "probes are TCP", Ref: "x.go:5"},
	},
}

func svc(ann map[string]string) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u1", Annotations: ann}}
}

func keys(fs []Finding) string {
	var ks []string
	for _, f := range fs {
		ks = append(ks, f.Key)
	}
	return strings.Join(ks, ",")
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		ann              map[string]string
		ignored, refused string
	}{
		{ann: nil},
		{ann: map[string]string{"example.com/internal": "true", "other.io/x": "1"}},
		{ann: map[string]string{"example.com/idle-timeout": "60"}, ignored: "example.com/idle-timeout"},
		{ann: map[string]string{"example.com/ssl-cert": "arn", "example.com/idle-timeout": "60"}, ignored: "example.com/idle-timeout", refused: "example.com/ssl-cert"},
		{ann: map[string]string{"example.com/backend-protocol": "tcp"}},
		{ann: map[string]string{"example.com/backend-protocol": "http"}, refused: "example.com/backend-protocol"},
		{ann: map[string]string{"example.com/port_443_probe": "x", "example.com/port_x_probe": "y"}, ignored: "example.com/port_443_probe"},
	} {
		ig, rf := testTable.Check(svc(tc.ann))
		if keys(ig) != tc.ignored || keys(rf) != tc.refused {
			t.Errorf("Check(%v) = ignored %q refused %q; want %q %q", tc.ann, keys(ig), keys(rf), tc.ignored, tc.refused)
		}
	}
	elsewhere := *testTable
	elsewhere.Elsewhere = func(*v1.Service) bool { return true }
	if ig, rf := elsewhere.Check(svc(map[string]string{"example.com/ssl-cert": "arn"})); ig != nil || rf != nil {
		t.Errorf("a Service handled elsewhere was judged: %v %v", ig, rf)
	}
}

func TestValidate(t *testing.T) {
	if err := testTable.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := &Table{Annotations: []Annotation{
		{Key: "a", Support: Ignored, Upstream: "u", Ref: "r"},
		{Key: "a", Upstream: "u", Ref: "r"},
		{Key: "b", Ref: "r"},
	}}
	err := bad.Validate()
	for _, want := range []string{"a: ignored or refused without a note", "a: listed twice", "b: no upstream meaning", "does not name its upstream"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to say %q", err, want)
		}
	}
}

// countingLB records which calls reached the backend.
type countingLB struct {
	cloudprovider.LoadBalancer
	ensured, updated, deleted int
}

func (c *countingLB) EnsureLoadBalancer(context.Context, string, *v1.Service, []*v1.Node) (*v1.LoadBalancerStatus, error) {
	c.ensured++
	return &v1.LoadBalancerStatus{}, nil
}

func (c *countingLB) UpdateLoadBalancer(context.Context, string, *v1.Service, []*v1.Node) error {
	c.updated++
	return nil
}

func (c *countingLB) EnsureLoadBalancerDeleted(context.Context, string, *v1.Service) error {
	c.deleted++
	return nil
}

func TestGate(t *testing.T) {
	ctx := context.Background()
	inner := &countingLB{}
	rec := record.NewFakeRecorder(10)
	g := &gate{table: testTable, warned: map[types.UID]string{}, recorder: rec}
	lb := &gatedLB{LoadBalancer: inner, gate: g}

	refused := svc(map[string]string{"example.com/ssl-cert": "arn:aws:acm:x"})
	_, err := lb.EnsureLoadBalancer(ctx, "k", refused, nil)
	if err == nil || !strings.Contains(err.Error(), "example.com/ssl-cert") || !strings.Contains(err.Error(), "TLS is not terminated here") || inner.ensured != 0 {
		t.Fatalf("refused Service: err %v, backend ensured %d times", err, inner.ensured)
	}
	if err := lb.UpdateLoadBalancer(ctx, "k", refused, nil); err == nil || inner.updated != 0 {
		t.Errorf("refused Service updated: %v", err)
	}
	if err := lb.EnsureLoadBalancerDeleted(ctx, "k", refused); err != nil || inner.deleted != 1 {
		t.Errorf("refused Service not deletable: %v", err)
	}

	warned := svc(map[string]string{"example.com/idle-timeout": "60"})
	for range 3 {
		if _, err := lb.EnsureLoadBalancer(ctx, "k", warned, nil); err != nil {
			t.Fatal(err)
		}
		if err := lb.UpdateLoadBalancer(ctx, "k", warned, nil); err != nil {
			t.Fatal(err)
		}
	}
	if inner.ensured != 3 || inner.updated != 3 {
		t.Errorf("warned Service: backend ensured %d, updated %d times; want 3, 3", inner.ensured, inner.updated)
	}
	if n := len(rec.Events); n != 1 {
		t.Fatalf("%d events for one unchanged annotation, want 1", n)
	}
	ev := <-rec.Events
	if !strings.HasPrefix(ev, "Warning "+ReasonUnsupported) || !strings.Contains(ev, "example.com/idle-timeout") || !strings.Contains(ev, "has no effect here") {
		t.Errorf("event %q", ev)
	}
	// A changed value is told again.
	warned.Annotations["example.com/idle-timeout"] = "120"
	if _, err := lb.EnsureLoadBalancer(ctx, "k", warned, nil); err != nil || len(rec.Events) != 1 {
		t.Errorf("changed value: %v, %d events", err, len(rec.Events))
	}
}

// inventoried is a cloud whose backend lists its load balancers' parts.
type inventoried struct{ cloudprovider.Interface }

func (inventoried) Inventory() (inventory.Cloud, bool) { return inventory.Cloud{Name: "x"}, true }

// TestGatePassesTheInventoryOn: the gate hides nothing the manager's own
// controllers ask of the backend.
func TestGatePassesTheInventoryOn(t *testing.T) {
	gated := Wrap(inventoried{}, testTable)
	inv, ok := gated.(interface {
		Inventory() (inventory.Cloud, bool)
	})
	if !ok {
		t.Fatal("the gated cloud offers no Inventory")
	}
	if c, ok := inv.Inventory(); !ok || c.Name != "x" {
		t.Errorf("Inventory() = %+v, %v", c, ok)
	}
	if _, ok := Wrap(struct{ cloudprovider.Interface }{}, testTable).(interface {
		Inventory() (inventory.Cloud, bool)
	}).Inventory(); ok {
		t.Error("an inventory from a backend without one")
	}
}
