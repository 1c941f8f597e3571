package snapshot

import (
	"context"
	"sync"

	"golang.org/x/sync/errgroup"
)

// MaxDirectGets is how many instances of one group a lookup asks for one
// GET at a time; more are one bulk read of the group first.
const MaxDirectGets = 3

// Lookup is how a backend asks its cloud about instances by key, for
// Source.LookupIDs, where the cloud cannot filter a listing by ID (Nova
// for non-administrators, ARM, Compute Engine across zones): the
// instances of a group (a resource group, a project, the whole tenant)
// that are more than MaxDirectGets are read with one Bulk call of the
// group, and the rest, with what the bulk read lacked, with one Get
// each. So the "gone" verdict always rests on a GET of that very
// instance, while 100 NotReady Nodes cost a bulk read per group, not
// 100 GETs.
type Lookup[R, T any] struct {
	// Group is the group a ref's bulk read covers.
	Group func(R) string
	// Key is a ref's key, as the result is keyed; KeyOf an instance's.
	Key   func(R) string
	KeyOf func(T) string
	// Bulk reads the instances of refs, all of one group; it may return
	// others too (they are left out).
	Bulk func(ctx context.Context, refs []R) ([]T, error)
	// Get reads one instance; found false only when the cloud answered
	// that it has none.
	Get func(ctx context.Context, ref R) (instance T, found bool, err error)
}

// Do looks refs up: an instance is absent from the result only when its
// Get said it does not exist. Bulk reads run 4 at once, Gets 8 at once;
// the first error fails the lookup.
func (l Lookup[R, T]) Do(ctx context.Context, refs []R) (map[string]T, error) {
	groups := map[string][]R{}
	var order []string
	for _, r := range refs {
		g := l.Group(r)
		if _, ok := groups[g]; !ok {
			order = append(order, g)
		}
		groups[g] = append(groups[g], r)
	}
	out := map[string]T{}
	var mu sync.Mutex
	var missing []R
	eg, ectx := errgroup.WithContext(ctx)
	eg.SetLimit(4)
	for _, g := range order {
		refs := groups[g]
		if len(refs) <= MaxDirectGets {
			missing = append(missing, refs...)
			continue
		}
		eg.Go(func() error {
			found, err := l.Bulk(ectx, refs)
			if err != nil {
				return err
			}
			byKey := make(map[string]T, len(found))
			for _, i := range found {
				byKey[l.KeyOf(i)] = i
			}
			mu.Lock()
			defer mu.Unlock()
			for _, r := range refs {
				if i, ok := byKey[l.Key(r)]; ok {
					out[l.Key(r)] = i
				} else {
					missing = append(missing, r)
				}
			}
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	eg, ectx = errgroup.WithContext(ctx)
	eg.SetLimit(8)
	for _, r := range missing {
		eg.Go(func() error {
			i, found, err := l.Get(ectx, r)
			if err != nil || !found {
				return err
			}
			mu.Lock()
			out[l.Key(r)] = i
			mu.Unlock()
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}
