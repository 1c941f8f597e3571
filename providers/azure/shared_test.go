package azure

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"k8s.io/utils/clock"
)

// box is a stand-in resource for the writer's unit tests: a set of names
// and an ETag, as a load balancer's frontends are.
type box struct {
	Names []string
	ETag  string
}

// boxStore is the cloud side: it keeps one box, checks preconditions as
// ARM does and counts calls.
type boxStore struct {
	mu         sync.Mutex
	cur        *box
	version    int
	gets, puts int
	// meddle runs before a put is checked, e.g. to change the box
	// behind the writer's back.
	meddle func(b *box)
}

func (s *boxStore) ops() sharedOps[box] {
	return sharedOps[box]{
		get: func(context.Context) (*box, bool, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.gets++
			if s.cur == nil {
				return nil, false, nil
			}
			c := *s.cur
			c.Names = slices.Clone(c.Names)
			return &c, true, nil
		},
		put: func(_ context.Context, v *box, etag string) (*box, error) {
			// A write takes a while, as an ARM long-running operation
			// does; changes arriving meanwhile queue for the next.
			time.Sleep(5 * time.Millisecond)
			s.mu.Lock()
			defer s.mu.Unlock()
			s.puts++
			if s.meddle != nil && s.cur != nil {
				s.meddle(s.cur)
				s.meddle = nil
				s.version++
				s.cur.ETag = strconv.Itoa(s.version)
			}
			if (etag == "") != (s.cur == nil) || s.cur != nil && s.cur.ETag != etag {
				return nil, errPrecondition
			}
			s.version++
			c := *v
			c.Names = slices.Clone(v.Names)
			c.ETag = strconv.Itoa(s.version)
			s.cur = &c
			out := c
			return &out, nil
		},
		del: func(_ context.Context, etag string) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.cur == nil || s.cur.ETag != etag {
				return errPrecondition
			}
			s.cur = nil
			return nil
		},
		etag:  func(v *box) string { return v.ETag },
		clone: func(v *box) *box { c := *v; c.Names = slices.Clone(v.Names); return &c },
		fresh: func() *box { return &box{} },
		empty: func(v *box) bool { return len(v.Names) == 0 },
	}
}

func add(name string) func(*box) (bool, error) {
	return func(b *box) (bool, error) {
		if slices.Contains(b.Names, name) {
			return false, nil
		}
		b.Names = append(b.Names, name)
		return true, nil
	}
}

func remove(name string) func(*box) (bool, error) {
	return func(b *box) (bool, error) {
		n := len(b.Names)
		b.Names = slices.DeleteFunc(b.Names, func(s string) bool { return s == name })
		return len(b.Names) != n, nil
	}
}

// TestSharedCoalescesAndKeepsEveryChange: 50 concurrent changes all land,
// in far fewer writes than 50; a change made behind the writer's back
// (412) is kept and every change re-applied on top of it.
func TestSharedCoalescesAndKeepsEveryChange(t *testing.T) {
	st := &boxStore{}
	w := newShared("box", st.ops(), clock.RealClock{})
	ctx := context.Background()
	if _, err := w.submit(ctx, true, add("first")); err != nil {
		t.Fatal(err)
	}
	st.meddle = func(b *box) { b.Names = append(b.Names, "someone-else") }
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := w.submit(ctx, true, add(fmt.Sprint("svc-", i))); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if got := len(st.cur.Names); got != 52 {
		t.Errorf("%d names after 52 additions: %v", got, st.cur.Names)
	}
	if !slices.Contains(st.cur.Names, "someone-else") {
		t.Error("the change made behind the writer's back was lost")
	}
	if st.puts > 20 {
		t.Errorf("%d writes for 51 changes: not coalesced", st.puts)
	}
	t.Logf("51 changes: %d writes, %d reads", st.puts, st.gets)

	// A change that changes nothing costs no call while the copy is
	// young.
	gets, puts := st.gets, st.puts
	if _, err := w.submit(ctx, false, add("svc-7")); err != nil {
		t.Fatal(err)
	}
	if st.gets != gets || st.puts != puts {
		t.Errorf("a no-op change cost %d reads and %d writes", st.gets-gets, st.puts-puts)
	}
}

// TestSharedDeletesWhenEmptyAndNeverCreatesUnasked: removing the last
// entry deletes the resource; a change without create leaves a missing
// resource missing.
func TestSharedDeletesWhenEmptyAndNeverCreatesUnasked(t *testing.T) {
	st := &boxStore{}
	w := newShared("box", st.ops(), clock.RealClock{})
	ctx := context.Background()
	if res, err := w.submit(ctx, false, add("x")); err != nil || res != nil || st.cur != nil {
		t.Fatalf("update without create: result %v, err %v, store %v", res, err, st.cur)
	}
	if _, err := w.submit(ctx, true, add("x")); err != nil {
		t.Fatal(err)
	}
	if res, err := w.submit(ctx, false, remove("x")); err != nil || res != nil {
		t.Fatalf("remove the last: result %v, err %v", res, err)
	}
	if st.cur != nil {
		t.Errorf("resource kept after its last entry went: %v", st.cur)
	}
}

// TestSharedIsolatesABadChange: one change whose apply fails gets its
// error; the others in the batch are written.
func TestSharedIsolatesABadChange(t *testing.T) {
	st := &boxStore{}
	w := newShared("box", st.ops(), clock.RealClock{})
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 10)
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			apply := add(fmt.Sprint("ok-", i))
			if i == 3 {
				apply = func(*box) (bool, error) { return false, fmt.Errorf("bad change") }
			}
			_, errs[i] = w.submit(ctx, true, apply)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if (err != nil) != (i == 3) {
			t.Errorf("change %d: err %v", i, err)
		}
	}
	if len(st.cur.Names) != 9 {
		t.Errorf("names %v, want the 9 good ones", st.cur.Names)
	}
}
