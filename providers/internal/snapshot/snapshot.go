// Package snapshot serves a backend's instance lookups from a bounded-age
// snapshot of the cluster's instances, so that N Nodes cost one paginated
// listing per TTL instead of N calls, while "gone" and "stopped" still rest
// on the cloud's own recent word about that very instance.
//
// Three kinds of answer, each with its own bound:
//   - ByIDs, ByName, All: the listing, at most TTL old (one listing shared
//     by every caller), plus instances found by batched direct lookups of
//     what it lacked;
//   - Lookup: as above, but an instance the listing lacks or holds as gone
//     is confirmed by a direct lookup by ID before it is called gone;
//   - Recent, for the node-lifecycle controller's "is it gone, is it
//     stopped?": data at most RecentAge old from one batched direct lookup
//     of every ID asked lately (and of Options.Watch), so 100 NotReady
//     Nodes checked every 5 s cost one call per check period, not 100, and
//     a terminated or stopped instance is seen within seconds.
//
// The snapshot is generic over the cloud's instance type: EC2 instances,
// Nova servers, Azure VMs and GCE instances all fit.
package snapshot

import (
	"context"
	"slices"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/batch"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/cloudmetrics"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/flight"
)

// Source is what the backend tells the snapshot about its cloud.
type Source[T any] struct {
	// List lists the cluster's live instances: one paginated call (or one
	// per zone), whatever the cluster's size.
	List func(ctx context.Context) ([]T, error)
	// LookupIDs asks the cloud directly about instance IDs. The result
	// holds every ID the cloud knows, gone ones included where the cloud
	// still lists them (EC2's terminated instances); an ID absent from it
	// is one the cloud definitively answered "not found" for. Anything
	// short of that (throttling, 5xx, timeouts, auth) must be an error: a
	// wrong "not found" deletes a Node.
	LookupIDs func(ctx context.Context, ids []string) (map[string]T, error)
	// LookupNames finds live instances by the names Nodes are called,
	// keyed by name. Optional: without it a name the listing lacks is not
	// found.
	LookupNames func(ctx context.Context, names []string) (map[string]T, error)
	// ID is the instance's ID, the key of LookupIDs.
	ID func(T) string
	// Names are the names a Node for the instance may carry (EC2: the
	// private DNS name; Nova, GCE, Azure: the instance name).
	Names func(T) []string
	// Gone says the cloud still lists the instance but it is gone for
	// good (EC2 terminated). Optional: nil means the cloud forgets gone
	// instances at once.
	Gone func(T) bool
	// ValidID says an ID is well-formed for the cloud; malformed IDs are
	// never sent (they would fail the whole batch). Optional.
	ValidID func(string) bool
}

// Options tune a Snapshot. Zero values get defaults.
type Options struct {
	// TTL bounds the listing's age (default 60s).
	TTL time.Duration
	// RecentAge bounds the age of Recent's answers (default 1s), counted
	// from the end of the refresh that fetched them: long enough for one
	// pass of the node-lifecycle controller over its NotReady Nodes (two
	// asks each, microseconds apart) to share one refresh, short enough
	// that every pass (5 s apart) refreshes. So each pass sees the cloud
	// as it is when the pass starts, as a direct read per Node would,
	// with one batched call per pass.
	RecentAge time.Duration
	// MissWindow is how long a lookup that missed the listing waits for
	// others to share its call (default 30ms): short against the node
	// controllers' periods, long enough to catch a burst of Nodes
	// registering together.
	MissWindow time.Duration
	// MaxKeys caps the IDs or names in one lookup call (default 200, what
	// EC2 allows per filter).
	MaxKeys int
	// Watch returns IDs that lifecycle checks will ask about soon (those
	// of NotReady Nodes). Every Recent refresh fetches them too, so the
	// first check period after many Nodes go NotReady costs one call, not
	// one per Node. Optional.
	Watch func() []string
	// Provider names the backend in the instance snapshot metrics
	// (multicloud_ccm_instance_snapshot_lookups_total); empty records
	// none.
	Provider string
	// Observe is told, for every lookup, whether memory answered it
	// (hit) or the cloud had to be asked (miss). Optional; for tests.
	Observe func(hit bool)
	// Clock, default the real one.
	Clock clock.PassiveClock
}

// Defaults for Options.
const (
	DefaultTTL        = 60 * time.Second
	DefaultRecentAge  = time.Second
	DefaultMissWindow = 30 * time.Millisecond
	DefaultMaxKeys    = 200
	// refreshErrorHold is how long a failed listing is answered from
	// memory, so that a throttled or failing API is not hit again by
	// every waiting Node the moment the listing fails. The SDK has
	// already retried with backoff by then.
	refreshErrorHold = time.Second
	// askedFor is how long an ID asked through Recent keeps being
	// fetched with every Recent refresh: long against the lifecycle
	// period, so each NotReady Node stays in the batch between checks.
	askedFor = 2 * time.Minute
)

func (o *Options) setDefaults() {
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.RecentAge <= 0 {
		o.RecentAge = DefaultRecentAge
	}
	if o.MissWindow <= 0 {
		o.MissWindow = DefaultMissWindow
	}
	if o.MaxKeys <= 0 {
		o.MaxKeys = DefaultMaxKeys
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
}

// Snapshot serves instance lookups; see the package doc.
type Snapshot[T any] struct {
	src  Source[T]
	opts Options

	refresh flight.Group[struct{}]
	byID    *batch.Batcher[T]
	byName  *batch.Batcher[T]

	mu   sync.Mutex
	list *listing[T]
	// failedAt and failure remember the last failed listing for
	// refreshErrorHold.
	failedAt time.Time
	failure  error

	recentMu sync.Mutex
	recent   map[string]recentEntry[T]
	asked    map[string]time.Time
	// recentFailedAt and recentFailure hold a failed refresh for
	// refreshErrorHold, so the lifecycle controller's pass over many
	// NotReady Nodes costs one failed call, not one per Node.
	recentFailedAt time.Time
	recentFailure  error
}

// listing is the cluster's live instances as one listing saw them, plus
// instances looked up individually since. It is replaced as a whole on
// every refresh, so its size follows the cluster's and old entries never
// accumulate.
type listing[T any] struct {
	at     time.Time
	byID   map[string]T
	byName map[string]string
}

type recentEntry[T any] struct {
	// at is when the refresh that produced it ended.
	at time.Time
	// from is when that refresh began: an ID asked no later than this
	// had its ask answered by it.
	from  time.Time
	inst  T
	known bool
}

// New returns a snapshot of src.
func New[T any](src Source[T], o Options) *Snapshot[T] {
	o.setDefaults()
	s := &Snapshot[T]{src: src, opts: o, recent: map[string]recentEntry[T]{}, asked: map[string]time.Time{}}
	s.byID = batch.New(o.MissWindow, o.MaxKeys, src.LookupIDs)
	if src.LookupNames != nil {
		s.byName = batch.New(o.MissWindow, o.MaxKeys, src.LookupNames)
	}
	return s
}

func (s *Snapshot[T]) gone(inst T) bool { return s.src.Gone != nil && s.src.Gone(inst) }

func (s *Snapshot[T]) observe(hit bool) {
	if s.opts.Provider != "" {
		cloudmetrics.SnapshotLookup(s.opts.Provider, hit)
	}
	if s.opts.Observe != nil {
		s.opts.Observe(hit)
	}
}

func (s *Snapshot[T]) newListing(at time.Time, list []T) *listing[T] {
	l := &listing[T]{at: at, byID: make(map[string]T, len(list)), byName: make(map[string]string, len(list))}
	for _, inst := range list {
		s.addTo(l, inst)
	}
	return l
}

func (s *Snapshot[T]) addTo(l *listing[T], inst T) {
	id := s.src.ID(inst)
	if id == "" || s.gone(inst) {
		return
	}
	l.byID[id] = inst
	if s.src.Names != nil {
		for _, n := range s.src.Names(inst) {
			if n != "" {
				l.byName[n] = id
			}
		}
	}
}

// Fresh makes sure the listing is no older than the TTL, listing the
// instances again if needed; concurrent callers share one listing. A
// failed listing is an error: serving an older one would break the age
// bound callers rely on.
func (s *Snapshot[T]) Fresh(ctx context.Context) error {
	s.mu.Lock()
	l, failedAt, failure := s.list, s.failedAt, s.failure
	s.mu.Unlock()
	clk := s.opts.Clock
	if l != nil && clk.Since(l.at) <= s.opts.TTL {
		return nil
	}
	if failure != nil && clk.Since(failedAt) < refreshErrorHold {
		return failure
	}
	_, err := s.refresh.Do(ctx, "list", func(ctx context.Context) (struct{}, error) {
		// A caller that found the listing stale may arrive just after
		// another refresh finished; reuse that one.
		s.mu.Lock()
		l := s.list
		s.mu.Unlock()
		if l != nil && clk.Since(l.at) <= s.opts.TTL {
			return struct{}{}, nil
		}
		start := clk.Now()
		list, err := s.src.List(ctx)
		s.mu.Lock()
		defer s.mu.Unlock()
		if err != nil {
			s.failedAt, s.failure = clk.Now(), err
			return struct{}{}, err
		}
		s.failure = nil
		s.list = s.newListing(start, list)
		return struct{}{}, nil
	})
	return err
}

// Cached returns the listing's live instance with that ID, without
// refreshing the listing or asking the cloud.
func (s *Snapshot[T]) Cached(id string) (T, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var zero T
	if s.list == nil {
		return zero, false
	}
	inst, ok := s.list.byID[id]
	return inst, ok
}

// Add records instances found by other lookups in the current listing.
// They leave with it, so their age is bounded like everything else's.
// Entries the listing already has are not replaced: they may be newer
// than a lookup that was in flight during a refresh.
func (s *Snapshot[T]) Add(list ...T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.list == nil {
		return
	}
	for _, inst := range list {
		if _, ok := s.list.byID[s.src.ID(inst)]; !ok {
			s.addTo(s.list, inst)
		}
	}
}

// All returns the listing's live instances, refreshing it if needed.
func (s *Snapshot[T]) All(ctx context.Context) ([]T, error) {
	if err := s.Fresh(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]T, 0, len(s.list.byID))
	for _, inst := range s.list.byID {
		out = append(out, inst)
	}
	return out, nil
}

// ByIDs returns the live instances with the given IDs, from the listing
// where possible and with batched direct lookups for the rest. IDs that
// are unknown, gone or malformed are absent from the result.
func (s *Snapshot[T]) ByIDs(ctx context.Context, ids []string) (map[string]T, error) {
	if err := s.Fresh(ctx); err != nil {
		return nil, err
	}
	out := make(map[string]T, len(ids))
	var misses []string
	for _, id := range ids {
		if inst, ok := s.Cached(id); ok {
			out[id] = inst
		} else if s.src.ValidID == nil || s.src.ValidID(id) {
			misses = append(misses, id)
		}
	}
	s.observe(len(misses) == 0)
	if len(misses) == 0 {
		return out, nil
	}
	found, err := s.byID.Get(ctx, misses)
	if err != nil {
		return nil, err
	}
	live := make([]T, 0, len(found))
	for id, inst := range found {
		if !s.gone(inst) {
			out[id] = inst
			live = append(live, inst)
		}
	}
	s.Add(live...)
	return out, nil
}

// Lookup returns the instance with that ID. exists is false only when the
// cloud, asked directly about that very ID, answered "not found" or that
// it is gone: an instance the listing lacks or holds as gone is confirmed
// with a direct lookup, so "gone" never comes from the listing alone.
func (s *Snapshot[T]) Lookup(ctx context.Context, id string) (inst T, exists bool, err error) {
	if err := s.Fresh(ctx); err != nil {
		return inst, false, err
	}
	if inst, ok := s.Cached(id); ok {
		s.observe(true)
		return inst, true, nil
	}
	s.observe(false)
	if s.src.ValidID != nil && !s.src.ValidID(id) {
		// Not an ID the cloud could ever know; asking would fail the
		// batch. Not proof of anything either.
		return inst, false, &MalformedIDError{ID: id}
	}
	res, err := s.byID.Get(ctx, []string{id})
	if err != nil {
		return inst, false, err
	}
	inst, found := res[id]
	if !found || s.gone(inst) {
		return inst, false, nil
	}
	s.Add(inst)
	return inst, true, nil
}

// CachedByName returns the listing's live instance a Node called name
// belongs to, without refreshing the listing or asking the cloud.
func (s *Snapshot[T]) CachedByName(name string) (T, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var zero T
	if s.list == nil {
		return zero, false
	}
	id, ok := s.list.byName[name]
	if !ok {
		return zero, false
	}
	inst, ok := s.list.byID[id]
	return inst, ok
}

// ByName returns the live instance a Node called name belongs to, from
// the listing or a batched lookup by name. Not finding one is never proof
// that an instance is gone: the caller reports it as an error.
func (s *Snapshot[T]) ByName(ctx context.Context, name string) (inst T, found bool, err error) {
	if err := s.Fresh(ctx); err != nil {
		return inst, false, err
	}
	if inst, ok := s.CachedByName(name); ok {
		s.observe(true)
		return inst, true, nil
	}
	s.observe(false)
	if s.byName == nil {
		return inst, false, nil
	}
	res, err := s.byName.Get(ctx, []string{name})
	if err != nil {
		return inst, false, err
	}
	inst, found = res[name]
	if !found || s.gone(inst) {
		return inst, false, nil
	}
	s.Add(inst)
	return inst, true, nil
}

// Recent answers lifecycle checks: the instance as the cloud described it
// at most RecentAge ago, in a direct lookup by ID. exists is false only
// when that lookup answered "not found" or "gone" for this very ID.
//
// A refresh fetches every ID asked through Recent in the last minutes
// (but one the cloud answered "not found" or gone for and nobody asked
// about since) plus Options.Watch in batches of MaxKeys, shared by all
// callers: the
// node-lifecycle controller asks about its NotReady Nodes one after the
// other, and only the first of them in each period waits for the cloud.
func (s *Snapshot[T]) Recent(ctx context.Context, id string) (inst T, exists bool, err error) {
	if s.src.ValidID != nil && !s.src.ValidID(id) {
		return inst, false, &MalformedIDError{ID: id}
	}
	asked := s.opts.Clock.Now()
	s.recentMu.Lock()
	s.asked[id] = asked
	s.recentMu.Unlock()
	// A refresh that was already running when this ID was first asked
	// may not include it; the second round does.
	for round := 0; round < 2; round++ {
		if e, ok := s.recentEntry(id); ok && s.opts.Clock.Since(e.at) <= s.opts.RecentAge {
			s.observe(round == 0)
			return e.inst, e.known && !s.gone(e.inst), nil
		}
		s.recentMu.Lock()
		failedAt, failure := s.recentFailedAt, s.recentFailure
		s.recentMu.Unlock()
		if failure != nil && s.opts.Clock.Since(failedAt) < refreshErrorHold {
			return inst, false, failure
		}
		if _, err := s.refresh.Do(ctx, "recent", s.refreshRecent); err != nil {
			return inst, false, err
		}
	}
	if e, ok := s.recentEntry(id); ok {
		s.observe(false)
		return e.inst, e.known && !s.gone(e.inst), nil
	}
	// Only a refresh that failed leaves no entry, and that returned its
	// error above; this is unreachable unless the clock runs backwards.
	return inst, false, &NotAskedError{ID: id}
}

func (s *Snapshot[T]) recentEntry(id string) (recentEntry[T], bool) {
	s.recentMu.Lock()
	defer s.recentMu.Unlock()
	e, ok := s.recent[id]
	return e, ok
}

// refreshRecent looks up every ID asked lately, and the watched ones. It
// first waits MissWindow, so that checks arriving together (a lifecycle
// controller with several workers) join this refresh instead of the next.
func (s *Snapshot[T]) refreshRecent(ctx context.Context) (struct{}, error) {
	select {
	case <-time.After(s.opts.MissWindow):
	case <-ctx.Done():
		return struct{}{}, ctx.Err()
	}
	clk := s.opts.Clock
	start := clk.Now()
	s.recentMu.Lock()
	ids := make([]string, 0, len(s.asked))
	for id, at := range s.asked {
		if start.Sub(at) > askedFor {
			delete(s.asked, id)
			continue
		}
		// The cloud said "not found" (or gone) for it, and nobody has
		// asked about it since the lookup that said so began: its Node
		// is gone (the lifecycle controller deletes it on that answer),
		// and asking again each pass would only fetch the same 404.
		// A Node still there asks again next pass (or is in Watch,
		// NotReady) and is fetched again; an ask after this drop puts
		// the ID back. The answer stays in recent for later asks.
		if e, ok := s.recent[id]; ok && !at.After(e.from) && (!e.known || s.gone(e.inst)) {
			delete(s.asked, id)
			continue
		}
		ids = append(ids, id)
	}
	for id, e := range s.recent {
		if start.Sub(e.at) > askedFor {
			delete(s.recent, id)
		}
	}
	s.recentMu.Unlock()
	if s.opts.Watch != nil {
		for _, id := range s.opts.Watch() {
			if s.src.ValidID == nil || s.src.ValidID(id) {
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	for chunk := range slices.Chunk(ids, s.opts.MaxKeys) {
		found, err := s.src.LookupIDs(ctx, chunk)
		s.recentMu.Lock()
		if err != nil {
			s.recentFailedAt, s.recentFailure = clk.Now(), err
			s.recentMu.Unlock()
			return struct{}{}, err
		}
		s.recentFailure = nil
		live := make([]T, 0, len(found))
		answered := clk.Now()
		for _, id := range chunk {
			inst, ok := found[id]
			s.recent[id] = recentEntry[T]{at: answered, from: start, inst: inst, known: ok}
			if ok && !s.gone(inst) {
				live = append(live, inst)
			}
		}
		s.recentMu.Unlock()
		// Instances the listing lacks (untagged, launched since) are
		// then found there too.
		s.Add(live...)
	}
	// Every answer of the refresh ages from its end, not from its
	// request: a refresh of many chunks must not leave its first entries
	// stale for the rest of the pass, which would refresh again at once.
	done := clk.Now()
	s.recentMu.Lock()
	for _, id := range ids {
		if e, ok := s.recent[id]; ok {
			e.at = done
			s.recent[id] = e
		}
	}
	s.recentMu.Unlock()
	return struct{}{}, nil
}

// MalformedIDError is returned for an ID the cloud could never know. It
// says nothing about whether an instance exists.
type MalformedIDError struct{ ID string }

func (e *MalformedIDError) Error() string { return "malformed instance ID " + e.ID }

// NotAskedError means a lookup produced no answer for the ID.
type NotAskedError struct{ ID string }

func (e *NotAskedError) Error() string { return "no lookup answered for instance " + e.ID }
