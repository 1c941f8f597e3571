package flight

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestDoSharesOneCall(t *testing.T) {
	var g Group[int]
	var calls atomic.Int32
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			v, err := g.Do(t.Context(), "k", func(context.Context) (int, error) {
				calls.Add(1)
				<-release
				return 42, nil
			})
			if v != 42 || err != nil {
				t.Errorf("Do = %d, %v", v, err)
			}
		})
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Errorf("calls = %d, want 1", n)
	}
	// Keys do not accumulate: the next call runs anew.
	v, _ := g.Do(t.Context(), "k", func(context.Context) (int, error) { return 7, nil })
	if v != 7 {
		t.Errorf("second Do = %d, want a new call's 7", v)
	}
}

func TestDistinctKeysDoNotWait(t *testing.T) {
	var g Group[string]
	block := make(chan struct{})
	defer close(block)
	go func() {
		_, _ = g.Do(context.Background(), "slow", func(context.Context) (string, error) { <-block; return "", nil })
	}()
	time.Sleep(10 * time.Millisecond)
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	if v, err := g.Do(ctx, "fast", func(context.Context) (string, error) { return "ok", nil }); v != "ok" || err != nil {
		t.Fatalf("fast key waited on slow key: %q, %v", v, err)
	}
}

// A caller that gives up stops waiting at once, while the call goes on,
// detached from its cancellation, for the callers that still wait.
func TestCallerCancelDoesNotCancelCall(t *testing.T) {
	var g Group[int]
	started := make(chan struct{})
	release := make(chan struct{})
	var callErr atomic.Value
	ctx, cancel := context.WithCancel(t.Context())
	first := make(chan error, 1)
	go func() {
		_, err := g.Do(ctx, "k", func(ctx context.Context) (int, error) {
			close(started)
			<-release
			callErr.Store(ctx.Err() == nil)
			return 1, nil
		})
		first <- err
	}()
	<-started
	second := make(chan int, 1)
	go func() {
		v, _ := g.Do(t.Context(), "k", func(context.Context) (int, error) { return -1, nil })
		second <- v
	}()
	time.Sleep(10 * time.Millisecond)
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller got %v", err)
	}
	close(release)
	if v := <-second; v != 1 {
		t.Errorf("waiting caller got %d, want the shared call's 1", v)
	}
	if ok, _ := callErr.Load().(bool); !ok {
		t.Error("the shared call saw the first caller's cancellation")
	}
}

func TestErrorIsShared(t *testing.T) {
	var g Group[int]
	boom := errors.New("boom")
	if _, err := g.Do(t.Context(), "k", func(context.Context) (int, error) { return 0, boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
}
