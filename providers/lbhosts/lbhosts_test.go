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

// recorder batches every Service, recording which it got.
type recorder struct{ got []string }

func (r *recorder) UpdateLoadBalancerHosts(_ context.Context, _ string, svcs []*v1.Service, _ []*v1.Node) []error {
	errs := make([]error, len(svcs))
	for i, s := range svcs {
		r.got = append(r.got, s.Name)
		if s.Name == "s3" {
			errs[i] = errors.New("s3 failed")
		}
	}
	return errs
}

// TestUpdateSome: only the Services at the indexes go on, and each
// outcome lands at its Service's index; the others are left as they were.
func TestUpdateSome(t *testing.T) {
	r := &recorder{}
	keep := errors.New("refused before")
	errs := []error{keep, nil, keep, nil}
	UpdateSome(t.Context(), r, "c", services(4), []int{1, 3}, nil, errs)
	if fmt.Sprint(r.got) != "[s1 s3]" {
		t.Errorf("batched %v, want [s1 s3]", r.got)
	}
	if errs[0] != keep || errs[2] != keep || errs[1] != nil || errs[3] == nil || errs[3].Error() != "s3 failed" {
		t.Errorf("outcomes %v", errs)
	}
	UpdateSome(t.Context(), struct{}{}, "c", services(4), []int{0}, nil, errs)
	if !errors.Is(errs[0], ErrNotBatched) {
		t.Errorf("no Updater: %v, want ErrNotBatched", errs[0])
	}
}
