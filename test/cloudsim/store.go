package cloudsim

import (
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Store holds one kind of emulated resource, keyed by ID, in insertion
// order. Every cloud's List/Describe handlers answer through it with the
// same pipeline: select by IDs, filter by predicates, cut a page. Real
// cloud listings are stable (a client paging through them sees each item
// once) and so are ours, because the order is the order of creation.
//
// A Store does no locking: the emulator that owns it already serialises
// access with its own mutex, and a second lock would only hide who owns
// the state.
type Store[T any] struct {
	kind    string
	key     func(T) string
	next    uint64
	entries map[string]*storeEntry[T]
	// sorted caches the entries in insertion order; nil after an insert
	// or delete. Listings far outnumber creations, and benchmarks list
	// thousands of instances per second.
	sorted []*storeEntry[T]
}

type storeEntry[T any] struct {
	seq uint64
	v   T
}

// NewStore returns an empty store of kind (e.g. "ec2/instance"; it names
// the store in page tokens and errors) whose items are keyed by key.
func NewStore[T any](kind string, key func(T) string) *Store[T] {
	return &Store[T]{kind: kind, key: key, entries: map[string]*storeEntry[T]{}}
}

// Kind is the name the store was made with.
func (s *Store[T]) Kind() string { return s.kind }

// Put inserts v at the end, or replaces the item with the same key in
// place, keeping its position.
func (s *Store[T]) Put(v T) {
	k := s.key(v)
	if e, ok := s.entries[k]; ok {
		e.v = v
		return
	}
	s.next++
	s.entries[k] = &storeEntry[T]{seq: s.next, v: v}
	s.sorted = nil
}

// Get returns the item with key k.
func (s *Store[T]) Get(k string) (T, bool) {
	e, ok := s.entries[k]
	if !ok {
		var zero T
		return zero, false
	}
	return e.v, true
}

// Has reports whether an item with key k exists.
func (s *Store[T]) Has(k string) bool {
	_, ok := s.entries[k]
	return ok
}

// Delete removes the item with key k and reports whether there was one.
func (s *Store[T]) Delete(k string) bool {
	if _, ok := s.entries[k]; !ok {
		return false
	}
	delete(s.entries, k)
	s.sorted = nil
	return true
}

// Len is the number of items.
func (s *Store[T]) Len() int { return len(s.entries) }

// All returns every item in insertion order. The slice is the caller's.
func (s *Store[T]) All() []T {
	entries := s.inOrder()
	out := make([]T, len(entries))
	for i, e := range entries {
		out[i] = e.v
	}
	return out
}

func (s *Store[T]) inOrder() []*storeEntry[T] {
	if s.sorted == nil {
		s.sorted = make([]*storeEntry[T], 0, len(s.entries))
		for _, e := range s.entries {
			s.sorted = append(s.sorted, e)
		}
		slices.SortFunc(s.sorted, func(a, b *storeEntry[T]) int { return compareSeq(a.seq, b.seq) })
	}
	return s.sorted
}

func compareSeq(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Select returns the items with the given keys in store order (each once,
// however often it was asked for), or every item when keys is empty.
// Keys that name nothing come back in missing, in the order asked, so a
// cloud can name them all in one error as the real APIs do.
func (s *Store[T]) Select(keys []string) (found []T, missing []string) {
	if len(keys) == 0 {
		return s.All(), nil
	}
	want := make(map[string]bool, len(keys))
	for _, k := range keys {
		if !s.Has(k) {
			if !slices.Contains(missing, k) {
				missing = append(missing, k)
			}
			continue
		}
		want[k] = true
	}
	for _, e := range s.inOrder() {
		if want[s.key(e.v)] {
			found = append(found, e.v)
		}
	}
	return found, missing
}

// Filter keeps the items every predicate accepts, in their order. With no
// predicates it returns items as they are.
func Filter[T any](items []T, where ...func(T) bool) []T {
	if len(where) == 0 {
		return items
	}
	var out []T
next:
	for _, it := range items {
		for _, ok := range where {
			if !ok(it) {
				continue next
			}
		}
		out = append(out, it)
	}
	return out
}

// PageRequest asks for one page of a listing. Clouds spell it differently
// (EC2 NextToken/MaxResults, ELBv2 Marker/PageSize, GCE pageToken/
// maxResults, ARM $skiptoken, OpenStack marker/limit) and each validates
// its own size limits before building one, because the limits and the
// errors for breaking them are the cloud's.
type PageRequest struct {
	// Token continues a listing; "" starts at the beginning. It must be a
	// NextToken this store returned.
	Token string
	// Size is the most items to return; 0 returns everything from Token on.
	Size int
}

// Page is one page of a listing.
type Page[T any] struct {
	Items []T
	// NextToken continues the listing; "" on the last page.
	NextToken string
}

// ErrInvalidPageToken is wrapped by every error about a page token that
// is malformed or was issued by another store. Clouds turn it into their
// own error (EC2 InvalidParameterValue, ELBv2 ValidationError, ...).
var ErrInvalidPageToken = errors.New("invalid page token")

// ErrNegativePageSize is returned for a negative PageRequest.Size, which
// no cloud accepts; the cloud's own bounds are its to check first.
var ErrNegativePageSize = errors.New("negative page size")

// NotFoundError reports keys that Select or List could not find.
type NotFoundError struct {
	Kind string
	Keys []string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("%s not found: %s", e.Kind, strings.Join(e.Keys, ", "))
}

// Page cuts one page out of items, which must be in this store's order:
// what All or Select returned, possibly narrowed by Filter. Tokens are
// cursors, not offsets: a token names the first item of the next page by
// its insertion sequence, so deleting an item between two calls neither
// repeats nor skips any of the others, as with the real clouds' cursors.
func (s *Store[T]) Page(items []T, req PageRequest) (Page[T], error) {
	if req.Size < 0 {
		return Page[T]{}, fmt.Errorf("%s: %w: %d", s.kind, ErrNegativePageSize, req.Size)
	}
	start := 0
	if req.Token != "" {
		from, err := s.decodeToken(req.Token)
		if err != nil {
			return Page[T]{}, err
		}
		start = len(items)
		for i, it := range items {
			if s.seqOf(it) >= from {
				start = i
				break
			}
		}
	}
	end := len(items)
	if req.Size > 0 {
		end = min(start+req.Size, len(items))
	}
	p := Page[T]{Items: items[start:end:end]}
	if end < len(items) {
		p.NextToken = s.encodeToken(s.seqOf(items[end]))
	}
	return p, nil
}

// seqOf is an item's insertion sequence; items the store does not hold
// (deleted since they were listed) sort first, which Page never relies on
// because it is handed a fresh listing.
func (s *Store[T]) seqOf(v T) uint64 {
	if e, ok := s.entries[s.key(v)]; ok {
		return e.seq
	}
	return 0
}

// Query is the whole select -> filter -> paginate pipeline of List.
type Query[T any] struct {
	// Keys selects these items only; every one must exist. Empty: all.
	Keys []string
	// Where filters; an item must satisfy every predicate.
	Where []func(T) bool
	// Page cuts the result.
	Page PageRequest
}

// List runs q. Unknown keys fail it with a *NotFoundError, bad tokens
// with an error wrapping ErrInvalidPageToken.
func (s *Store[T]) List(q Query[T]) (Page[T], error) {
	items, missing := s.Select(q.Keys)
	if len(missing) > 0 {
		return Page[T]{}, &NotFoundError{Kind: s.kind, Keys: missing}
	}
	return s.Page(Filter(items, q.Where...), q.Page)
}

// tokenPrefix makes tokens recognisably ours and versioned, so a token
// from an older format or another tool is refused instead of misread.
const tokenPrefix = "cloudsim/1/"

// Tokens are opaque to clients, as every cloud's are; ours carry the
// store's kind so a token from one listing is refused by another.
func (s *Store[T]) encodeToken(seq uint64) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "%s%s/%d", tokenPrefix, s.kind, seq))
}

func (s *Store[T]) decodeToken(tok string) (uint64, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return 0, fmt.Errorf("%s: %w %q: not base64url: %v", s.kind, ErrInvalidPageToken, tok, err)
	}
	rest, ok := strings.CutPrefix(string(b), tokenPrefix+s.kind+"/")
	if !ok {
		return 0, fmt.Errorf("%s: %w %q: not issued for this listing", s.kind, ErrInvalidPageToken, tok)
	}
	seq, err := strconv.ParseUint(rest, 10, 64)
	if err != nil || seq == 0 {
		return 0, fmt.Errorf("%s: %w %q: bad position", s.kind, ErrInvalidPageToken, tok)
	}
	return seq, nil
}
