package lbhosts

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func services(n int) []*v1.Service {
	var out []*v1.Service
	for i := range n {
		out = append(out, &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("s%d", i)}})
	}
	return out
}

type short struct{}

func (short) UpdateLoadBalancerHosts(context.Context, string, []*v1.Service, []*v1.Node) []error {
	return []error{nil}
}

// TestUpdate: a load balancer without the capability, or one answering
// with the wrong number of outcomes, batches nothing.
func TestUpdate(t *testing.T) {
	for name, lb := range map[string]any{"no Updater": struct{}{}, "one outcome for two": short{}} {
		for _, err := range Update(t.Context(), lb, "c", services(2), nil) {
			if !errors.Is(err, ErrNotBatched) {
				t.Errorf("%s: %v, want ErrNotBatched", name, err)
			}
		}
	}
}

// TestParallel: every Service gets its own outcome, at most limit run at
// once, and they overlap.
func TestParallel(t *testing.T) {
	var now, most atomic.Int32
	boom := errors.New("boom")
	errs := Parallel(t.Context(), 4, services(12), func(_ context.Context, svc *v1.Service) error {
		n := now.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
		now.Add(-1)
		if svc.Name == "s5" {
			return boom
		}
		return nil
	})
	for i, err := range errs {
		if (i == 5) != errors.Is(err, boom) {
			t.Errorf("s%d: %v", i, err)
		}
	}
	if m := most.Load(); m > 4 || m < 2 {
		t.Errorf("%d at once, want 2 to 4", m)
	}
}
