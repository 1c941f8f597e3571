package cloudsim_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

type item struct {
	id   string
	zone string
}

func newItems(n int) *cloudsim.Store[*item] {
	s := cloudsim.NewStore("test/item", func(i *item) string { return i.id })
	for i := range n {
		// IDs descending: proves the store keeps insertion order rather
		// than sorting keys.
		s.Put(&item{id: fmt.Sprintf("id-%02d", n-1-i), zone: []string{"a", "b"}[i%2]})
	}
	return s
}

func ids(items []*item) []string {
	var out []string
	for _, i := range items {
		out = append(out, i.id)
	}
	return out
}

func TestStoreOrderPutDelete(t *testing.T) {
	s := newItems(5)
	want := []string{"id-04", "id-03", "id-02", "id-01", "id-00"}
	if got := ids(s.All()); !slices.Equal(got, want) {
		t.Fatalf("All = %v, want %v", got, want)
	}
	// Replacing keeps the position; deleting and re-adding moves to the end.
	s.Put(&item{id: "id-02", zone: "z"})
	if got, _ := s.Get("id-02"); got.zone != "z" || ids(s.All())[2] != "id-02" {
		t.Fatalf("replace: %+v at %v", got, ids(s.All()))
	}
	if !s.Delete("id-02") || s.Delete("id-02") || s.Has("id-02") || s.Len() != 4 {
		t.Fatalf("delete: has %v, len %d", s.Has("id-02"), s.Len())
	}
	s.Put(&item{id: "id-02"})
	if got := ids(s.All()); got[len(got)-1] != "id-02" {
		t.Fatalf("re-added item not last: %v", got)
	}
}

func TestStoreSelect(t *testing.T) {
	s := newItems(5)
	found, missing := s.Select([]string{"id-03", "id-x", "id-00", "id-03", "id-y", "id-x"})
	if got := ids(found); !slices.Equal(got, []string{"id-03", "id-00"}) {
		t.Errorf("found %v: want store order, each once", got)
	}
	if !slices.Equal(missing, []string{"id-x", "id-y"}) {
		t.Errorf("missing %v: want request order, each once", missing)
	}
	if found, missing := s.Select(nil); len(found) != 5 || missing != nil {
		t.Errorf("no keys: %d found, missing %v", len(found), missing)
	}
}

func TestStoreFilter(t *testing.T) {
	s := newItems(6)
	inA := func(i *item) bool { return i.zone == "a" }
	notFirst := func(i *item) bool { return i.id != "id-05" }
	cases := []struct {
		name  string
		where []func(*item) bool
		want  []string
	}{
		{"none", nil, ids(s.All())},
		{"one", []func(*item) bool{inA}, []string{"id-05", "id-03", "id-01"}},
		{"anded", []func(*item) bool{inA, notFirst}, []string{"id-03", "id-01"}},
		{"nothing", []func(*item) bool{func(*item) bool { return false }}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ids(cloudsim.Filter(s.All(), c.where...)); !slices.Equal(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

// pageAll follows NextToken to the end and returns the page sizes.
func pageAll(t *testing.T, s *cloudsim.Store[*item], q cloudsim.Query[*item]) (all []string, sizes []int) {
	t.Helper()
	for range 100 {
		p, err := s.List(q)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, ids(p.Items)...)
		sizes = append(sizes, len(p.Items))
		if p.NextToken == "" {
			return all, sizes
		}
		q.Page.Token = p.NextToken
	}
	t.Fatal("listing never ended")
	return nil, nil
}

func TestStorePaging(t *testing.T) {
	s := newItems(7)
	inA := func(i *item) bool { return i.zone == "a" }
	cases := []struct {
		name      string
		q         cloudsim.Query[*item]
		wantSizes []int
	}{
		{"unlimited", cloudsim.Query[*item]{}, []int{7}},
		{"size 1", cloudsim.Query[*item]{Page: cloudsim.PageRequest{Size: 1}}, []int{1, 1, 1, 1, 1, 1, 1}},
		{"uneven", cloudsim.Query[*item]{Page: cloudsim.PageRequest{Size: 3}}, []int{3, 3, 1}},
		// An exact multiple ends without an empty trailing page.
		{"exact", cloudsim.Query[*item]{Where: []func(*item) bool{inA}, Page: cloudsim.PageRequest{Size: 2}}, []int{2, 2}},
		{"larger than all", cloudsim.Query[*item]{Page: cloudsim.PageRequest{Size: 100}}, []int{7}},
		{"keys", cloudsim.Query[*item]{Keys: []string{"id-06", "id-01", "id-02"}, Page: cloudsim.PageRequest{Size: 2}}, []int{2, 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := ids(cloudsim.Filter(must(s.List(cloudsim.Query[*item]{Keys: c.q.Keys, Where: c.q.Where})).Items))
			got, sizes := pageAll(t, s, c.q)
			if !slices.Equal(got, want) {
				t.Errorf("paged %v, want %v", got, want)
			}
			if !slices.Equal(sizes, c.wantSizes) {
				t.Errorf("page sizes %v, want %v", sizes, c.wantSizes)
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// A token is a cursor: deleting items between pages neither repeats nor
// skips the others, and new items show up at the end.
func TestStorePagingIsACursor(t *testing.T) {
	s := newItems(6)
	order := ids(s.All())
	p1 := must(s.List(cloudsim.Query[*item]{Page: cloudsim.PageRequest{Size: 2}}))
	s.Delete(order[0])         // already seen
	s.Delete(order[2])         // the first item of the next page
	s.Put(&item{id: "id-new"}) // created while paging
	p2 := must(s.List(cloudsim.Query[*item]{Page: cloudsim.PageRequest{Size: 10, Token: p1.NextToken}}))
	want := append(slices.Clone(order[3:]), "id-new")
	if got := ids(p2.Items); !slices.Equal(got, want) {
		t.Fatalf("after deletes, page 2 = %v, want %v", got, want)
	}
}

func TestStoreBadTokens(t *testing.T) {
	s := newItems(5)
	other := cloudsim.NewStore("test/other", func(i *item) string { return i.id })
	for i := range 5 {
		other.Put(&item{id: fmt.Sprint(i)})
	}
	foreign := must(other.List(cloudsim.Query[*item]{Page: cloudsim.PageRequest{Size: 1}})).NextToken
	good := must(s.List(cloudsim.Query[*item]{Page: cloudsim.PageRequest{Size: 1}})).NextToken
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for name, tok := range map[string]string{
		"not base64":       "garbage!",
		"foreign store":    foreign,
		"prefix kind only": b64("cloudsim/1/test/item"),
		"position zero":    b64("cloudsim/1/test/item/0"),
		"not a number":     b64("cloudsim/1/test/item/x"),
		"other version":    b64("cloudsim/0/test/item/2"),
		"truncated":        good[:len(good)-2],
	} {
		t.Run(name, func(t *testing.T) {
			_, err := s.List(cloudsim.Query[*item]{Page: cloudsim.PageRequest{Token: tok}})
			if !errors.Is(err, cloudsim.ErrInvalidPageToken) {
				t.Fatalf("token %q: err %v, want ErrInvalidPageToken", tok, err)
			}
		})
	}
	if _, err := s.List(cloudsim.Query[*item]{Page: cloudsim.PageRequest{Size: -1}}); !errors.Is(err, cloudsim.ErrNegativePageSize) {
		t.Errorf("size -1: %v", err)
	}
}

func TestStoreListMissingKeys(t *testing.T) {
	s := newItems(3)
	_, err := s.List(cloudsim.Query[*item]{Keys: []string{"id-01", "nope"}})
	var nf *cloudsim.NotFoundError
	if !errors.As(err, &nf) || nf.Kind != "test/item" || !slices.Equal(nf.Keys, []string{"nope"}) {
		t.Fatalf("err = %v", err)
	}
}
