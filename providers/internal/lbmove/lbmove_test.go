package lbmove

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// world records what happened, in order, in places a, b and c.
type world struct {
	log   []string
	holds map[string]bool
	down  map[string]bool
}

func (w *world) places() []Place {
	var out []Place
	for _, n := range []string{"a", "b", "c"} {
		out = append(out, Place{
			Name: n,
			Holds: func(context.Context, *v1.Service) (bool, error) {
				w.log = append(w.log, "holds "+n)
				if w.down[n] {
					return false, errors.New(n + " is down")
				}
				return w.holds[n], nil
			},
			Clear: func(context.Context, *v1.Service) error {
				w.log = append(w.log, "clear "+n)
				if w.down[n] {
					return errors.New(n + " is down")
				}
				w.holds[n] = false
				return nil
			},
		})
	}
	return out
}

func (w *world) make(n string) func() (*v1.LoadBalancerStatus, error) {
	return func() (*v1.LoadBalancerStatus, error) {
		w.log = append(w.log, "make "+n)
		w.holds[n] = true
		return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: "192.0.2.1"}}}, nil
	}
}

func (w *world) take() string {
	s := strings.Join(w.log, ", ")
	w.log = nil
	return s
}

func service(addressed bool) *v1.Service {
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u1"}}
	if addressed {
		svc.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: "192.0.2.1"}}
	}
	return svc
}

// TestMakeBeforeBreak: the new place is made first, then the old one
// cleared; a Service known to be where it is made costs nothing more.
func TestMakeBeforeBreak(t *testing.T) {
	w := &world{holds: map[string]bool{}}
	tr := New(Options{TrustNoAddress: true})
	ctx := context.Background()
	svc := service(false)
	if _, err := tr.Ensure(ctx, svc, "a", w.places(), w.make("a")); err != nil {
		t.Fatal(err)
	}
	if got := w.take(); got != "make a" {
		t.Errorf("first ensure, no address: %s; want only the make (trusted: nothing elsewhere)", got)
	}
	svc.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: "192.0.2.1"}}
	if _, err := tr.Ensure(ctx, svc, "a", w.places(), w.make("a")); err != nil || w.take() != "make a" {
		t.Errorf("again in a: %v", err)
	}
	if _, err := tr.Ensure(ctx, svc, "b", w.places(), w.make("b")); err != nil {
		t.Fatal(err)
	}
	if got := w.take(); got != "make b, clear a" {
		t.Errorf("a -> b: %s; want the make first, then only a cleared", got)
	}
	if p, _ := tr.At(svc.UID); p != "b" {
		t.Errorf("at %q, want b", p)
	}
}

// TestUnknownLooksEverywhere: after a start the tracker knows nothing: an
// addressed Service's other places are asked and cleared where they hold
// it; one that cannot be asked fails the move, or, tolerated, leaves the
// Service unknown for the next sync.
func TestUnknownLooksEverywhere(t *testing.T) {
	ctx := context.Background()
	w := &world{holds: map[string]bool{"c": true}}
	tr := New(Options{})
	if _, err := tr.Ensure(ctx, service(true), "a", w.places(), w.make("a")); err != nil {
		t.Fatal(err)
	}
	if got := w.take(); got != "make a, holds b, holds c, clear c" {
		t.Errorf("unknown: %s", got)
	}

	w = &world{holds: map[string]bool{}, down: map[string]bool{"b": true}}
	if _, err := New(Options{}).Ensure(ctx, service(true), "a", w.places(), w.make("a")); err == nil || !strings.Contains(err.Error(), "b is down") {
		t.Errorf("b down, not tolerated: %v", err)
	}
	tol := New(Options{TolerateUnknown: true})
	if _, err := tol.Ensure(ctx, service(true), "a", w.places(), w.make("a")); err != nil {
		t.Errorf("b down, tolerated: %v", err)
	}
	if _, known := tol.At("u1"); known {
		t.Error("settled though b could not be asked")
	}
	w.take()
	w.down["b"] = false
	if _, err := tol.Ensure(ctx, service(true), "a", w.places(), w.make("a")); err != nil {
		t.Fatal(err)
	}
	if got := w.take(); got != "make a, holds b, holds c" {
		t.Errorf("next sync asks again: %s", got)
	}
}

// TestDelete: a known Service is cleared where it was and where it names
// now; an unknown one everywhere; it is forgotten once all are clear.
func TestDelete(t *testing.T) {
	ctx := context.Background()
	w := &world{holds: map[string]bool{}}
	tr := New(Options{TrustNoAddress: true})
	svc := service(false)
	if _, err := tr.Ensure(ctx, svc, "a", w.places(), w.make("a")); err != nil {
		t.Fatal(err)
	}
	w.take()
	if err := tr.Delete(ctx, svc, "b", w.places()); err != nil {
		t.Fatal(err)
	}
	if got := w.take(); got != "clear a, clear b" {
		t.Errorf("known: %s", got)
	}
	w.down = map[string]bool{"c": true}
	if err := tr.Delete(ctx, svc, "", w.places()); err == nil {
		t.Error("c could not be cleared: want an error")
	}
	if got := w.take(); got != "clear a, clear b, clear c" {
		t.Errorf("unknown: %s", got)
	}
	w.down = nil
	if err := tr.Delete(ctx, svc, "", w.places()); err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc([]string{"a", "b", "c"}, func(p string) bool { return w.holds[p] }) {
		t.Errorf("left %v", w.holds)
	}
}
