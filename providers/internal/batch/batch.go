// Package batch coalesces per-key lookups that arrive close together into
// one fetch, so a burst of per-node lookups (200 Nodes registering at once)
// costs a handful of cloud API calls instead of one each.
//
// It is written here because no well-kept library has these semantics:
// singleflight shares one call among callers of the same key, while this
// merges different keys into one call; workqueue and rate limiters delay
// work but never merge it.
package batch

import (
	"context"
	"sync"
	"time"
)

// Batcher coalesces lookups. A batch opens with the first key, stays open
// for the window and, after that, for as long as the previous fetch is
// still in flight; it closes early when it holds maxKeys keys.
type Batcher[V any] struct {
	window  time.Duration
	maxKeys int
	// fetch returns what it found; keys it did not find are absent. An
	// error fails every caller waiting on the batch.
	fetch func(ctx context.Context, keys []string) (map[string]V, error)

	// inflight allows one fetch at a time, which is what makes keys that
	// arrive during a slow fetch wait and join the next batch.
	inflight chan struct{}

	mu   sync.Mutex
	open *batch[V]
}

type batch[V any] struct {
	keys []string
	seen map[string]bool
	full chan struct{} // closed when the batch reaches maxKeys
	done chan struct{} // closed when res and err are set
	res  map[string]V
	err  error
}

// New returns a Batcher. fetch returns what it found, keyed like its
// input; keys it did not find are absent. An error fails every caller
// waiting on that batch.
func New[V any](window time.Duration, maxKeys int, fetch func(context.Context, []string) (map[string]V, error)) *Batcher[V] {
	return &Batcher[V]{window: window, maxKeys: maxKeys, fetch: fetch, inflight: make(chan struct{}, 1)}
}

// Get looks keys up, sharing fetches with concurrent callers. The result
// holds the keys that were found. A caller whose context ends stops
// waiting; the fetch goes on for the others.
func (b *Batcher[V]) Get(ctx context.Context, keys []string) (map[string]V, error) {
	var waits []*batch[V]
	b.mu.Lock()
	for _, k := range keys {
		bt := b.open
		if bt == nil {
			bt = &batch[V]{seen: map[string]bool{}, full: make(chan struct{}), done: make(chan struct{})}
			b.open = bt
			go b.dispatch(context.WithoutCancel(ctx), bt)
		}
		if !bt.seen[k] {
			bt.seen[k] = true
			bt.keys = append(bt.keys, k)
			if len(bt.keys) >= b.maxKeys {
				b.open = nil
				close(bt.full)
			}
		}
		if len(waits) == 0 || waits[len(waits)-1] != bt {
			waits = append(waits, bt)
		}
	}
	b.mu.Unlock()

	out := make(map[string]V, len(keys))
	for _, bt := range waits {
		select {
		case <-bt.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if bt.err != nil {
			return nil, bt.err
		}
		for _, k := range keys {
			if v, ok := bt.res[k]; ok {
				out[k] = v
			}
		}
	}
	return out, nil
}

func (b *Batcher[V]) dispatch(ctx context.Context, bt *batch[V]) {
	t := time.NewTimer(b.window)
	select {
	case <-t.C:
	case <-bt.full:
		t.Stop()
	}
	b.inflight <- struct{}{}
	b.mu.Lock()
	if b.open == bt {
		b.open = nil
	}
	keys := bt.keys
	b.mu.Unlock()

	bt.res, bt.err = b.fetch(ctx, keys)
	<-b.inflight
	close(bt.done)
}
