package keylock

import (
	"sync"
	"testing"
)

// TestSerializesPerKey: holders of one key never overlap, other keys do
// not wait, and no entry outlives its last holder.
func TestSerializesPerKey(t *testing.T) {
	var l Locks
	var wg sync.WaitGroup
	inside := map[string]int{}
	var mu sync.Mutex
	for i := range 200 {
		key := []string{"a", "b", "c"}[i%3]
		wg.Go(func() {
			unlock := l.Lock(key)
			mu.Lock()
			inside[key]++
			if inside[key] != 1 {
				t.Errorf("%d holders of %s at once", inside[key], key)
			}
			mu.Unlock()
			mu.Lock()
			inside[key]--
			mu.Unlock()
			unlock()
		})
	}
	wg.Wait()
	if n := l.held(); n != 0 {
		t.Errorf("%d entries left", n)
	}

	// A second key is free while the first is held.
	unlockA := l.Lock("a")
	done := make(chan struct{})
	go func() { l.Lock("b")(); close(done) }()
	<-done
	unlockA()
}
