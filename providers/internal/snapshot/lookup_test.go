package snapshot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestLookup: a group of more than MaxDirectGets refs is one bulk read
// plus a Get of each it lacks; a smaller group is Gets alone; only a Get
// says an instance is not there.
func TestLookup(t *testing.T) {
	var mu sync.Mutex
	var calls []string
	note := func(s string) {
		mu.Lock()
		calls = append(calls, s)
		mu.Unlock()
	}
	exists := map[string]bool{"big/1": true, "big/2": true, "big/3": true, "big/4": true, "big/5": true, "small/1": true}
	l := Lookup[string, string]{
		Group: func(r string) string { g, _, _ := strings.Cut(r, "/"); return g },
		Key:   func(r string) string { return r },
		KeyOf: func(i string) string { return i },
		Bulk: func(_ context.Context, refs []string) ([]string, error) {
			note(fmt.Sprintf("bulk %d", len(refs)))
			// The listing lags: big/5 is not in it yet.
			return []string{"big/1", "big/2", "big/3", "big/4", "other/9"}, nil
		},
		Get: func(_ context.Context, r string) (string, bool, error) {
			note("get " + r)
			return r, exists[r], nil
		},
	}
	got, err := l.Do(t.Context(), []string{"big/1", "big/2", "big/3", "big/4", "big/5", "big/6", "small/1", "small/2"})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(calls)
	if fmt.Sprint(calls) != "[bulk 6 get big/5 get big/6 get small/1 get small/2]" {
		t.Errorf("calls %v", calls)
	}
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if fmt.Sprint(keys) != "[big/1 big/2 big/3 big/4 big/5 small/1]" {
		t.Errorf("found %v", keys)
	}

	l.Get = func(context.Context, string) (string, bool, error) { return "", false, errors.New("503") }
	if _, err := l.Do(t.Context(), []string{"small/1"}); err == nil {
		t.Error("a Get that failed: want an error, never absent")
	}
}
