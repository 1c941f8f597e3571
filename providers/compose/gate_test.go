package compose

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/upstreamann"
)

var testTable = &upstreamann.Table{
	Upstream: "the upstream Example CCM",
	Annotations: []upstreamann.Annotation{
		{Key: "example.com/idle-timeout", Support: upstreamann.Ignored, Upstream: "idle timeout", Note: "the timeout is the cloud's default of 350 s", Ref: "x.go:2"},
		{Key: "example.com/ssl-cert", Support: upstreamann.Refused, Upstream: "TLS listeners", Note: "TLS is not terminated here", Ref: "x.go:3"},
	},
}

func annotated(ann map[string]string) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u1", Annotations: ann}}
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

	refused := annotated(map[string]string{"example.com/ssl-cert": "arn:aws:acm:x"})
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

	warned := annotated(map[string]string{"example.com/idle-timeout": "60"})
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

// TestTheLineGates: New puts the gate in the line of a cloud with an
// upstream table, in front of the serializer, and leaves the inventory
// and its repair to the serializer (a Service repaired synced through the
// gate before).
func TestTheLineGates(t *testing.T) {
	inner := &countingLB{}
	c := New(Parts{Name: "x", Instances: instances{}, LoadBalancer: inner, UpstreamAnnotations: testTable})
	lb, ok := c.LoadBalancer()
	if !ok {
		t.Fatal("no load balancer")
	}
	refused := annotated(map[string]string{"example.com/ssl-cert": "arn"})
	if _, err := lb.EnsureLoadBalancer(context.Background(), "k", refused, nil); err == nil || inner.ensured != 0 {
		t.Fatalf("a refused Service went down the line: err %v, ensured %d", err, inner.ensured)
	}
	if _, err := lb.EnsureLoadBalancer(context.Background(), "k", annotated(nil), nil); err != nil || inner.ensured != 1 {
		t.Fatalf("an admitted Service: err %v, ensured %d", err, inner.ensured)
	}
	if _, ok := New(Parts{Name: "x", Instances: instances{}, LoadBalancer: inner}).lb.(*gatedLB); ok {
		t.Error("a gate without a table")
	}
}
