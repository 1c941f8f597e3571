package batch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestBatcherCoalescesConcurrentLookups(t *testing.T) {
	var calls atomic.Int32
	var sizes sync.Map
	b := New(200*time.Millisecond, 50, func(_ context.Context, keys []string) (map[string]int, error) {
		n := calls.Add(1)
		sizes.Store(n, len(keys))
		time.Sleep(10 * time.Millisecond)
		out := map[string]int{}
		for _, k := range keys {
			if k != "missing" {
				out[k] = len(k)
			}
		}
		return out, nil
	})
	var wg sync.WaitGroup
	for i := range 120 {
		wg.Go(func() {
			key := fmt.Sprintf("key-%d", i%100) // some keys twice
			got, err := b.Get(t.Context(), []string{key, "missing"})
			if err != nil || got[key] != len(key) || len(got) != 1 {
				t.Errorf("get(%s) = %v, %v", key, got, err)
			}
		})
	}
	wg.Wait()
	// 101 distinct keys in batches of at most 50: three fetches.
	if n := calls.Load(); n > 3 {
		t.Errorf("fetches = %d, want <= 3", n)
	}
	sizes.Range(func(k, v any) bool {
		if v.(int) > 50 {
			t.Errorf("fetch %v had %v keys, more than maxKeys", k, v)
		}
		return true
	})
}

func TestBatcherJoinsWhileInFlight(t *testing.T) {
	release := make(chan struct{})
	var calls atomic.Int32
	b := New(time.Millisecond, 100, func(_ context.Context, keys []string) (map[string]bool, error) {
		if calls.Add(1) == 1 {
			<-release
		}
		out := map[string]bool{}
		for _, k := range keys {
			out[k] = true
		}
		return out, nil
	})
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = b.Get(t.Context(), []string{"first"}) })
	for calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	// These arrive long after the window but while "first" is in flight.
	for i := range 10 {
		wg.Go(func() {
			if got, err := b.Get(t.Context(), []string{fmt.Sprint(i)}); err != nil || !got[fmt.Sprint(i)] {
				t.Errorf("get(%d) = %v, %v", i, got, err)
			}
		})
	}
	time.Sleep(20 * time.Millisecond)
	close(release)
	wg.Wait()
	if n := calls.Load(); n != 2 {
		t.Errorf("fetches = %d, want 2", n)
	}
}

func TestBatcherErrorsAndCancel(t *testing.T) {
	boom := errors.New("boom")
	b := New(time.Millisecond, 10, func(ctx context.Context, keys []string) (map[string]int, error) {
		return nil, boom
	})
	if _, err := b.Get(t.Context(), []string{"a"}); !errors.Is(err, boom) {
		t.Errorf("err = %v, want boom", err)
	}

	hang := New(time.Millisecond, 10, func(ctx context.Context, keys []string) (map[string]int, error) {
		time.Sleep(200 * time.Millisecond)
		return nil, nil
	})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if _, err := hang.Get(ctx, []string{"a"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want deadline exceeded", err)
	}
}
