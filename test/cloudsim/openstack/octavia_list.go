package openstack

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Octavia's listings (octavia/api/common/pagination.py): every query
// parameter that is not a paging one is an exact-match filter on a
// column of the object (unknown ones are a 400), tags, tags-any,
// not-tags and not-tags-any filter by tag, the order is the sort keys
// asked for followed by created_at and id ascending, a marker (any
// object of the kind, whoever owns it) starts the page after it, and the
// links are "next" when the page is full and "previous" when a marker
// was given. Links carry limit, sort and marker only: filters are not
// repeated, as in Octavia. A non-admin sees their project's objects.

// ovAuxParams are the paging parameters, which are not filters.
var ovAuxParams = []string{"limit", "marker", "sort", "sort_key", "sort_dir", "fields", "page_reverse"}

// ovListSpec describes one kind's listing.
type ovListSpec[T any] struct {
	collection string
	// columns are the filter and sort columns by API name. A column's
	// value is a string, int, bool, float64, time.Time or nil (NULL).
	columns map[string]func(T) any
	tags    func(T) []string
	project func(T) string
	id      func(T) string
	// marker finds any object of the kind by ID, deleted ones included.
	marker func(id string) (T, bool)
	render func(T) map[string]any
}

type ovSortKey struct {
	key  string
	desc bool
}

// octaviaList answers a GET on a collection with the items visible to
// the caller.
func octaviaList[T any](e *Emulator, c *octaviaCall, spec ovListSpec[T], items []T) (int, any, *apiError) {
	q := c.query
	last := func(k string) (string, bool) { return q.last(k) }

	// PaginationHelper.__init__: limit, then the sort keys.
	maxLimit := e.cfg.Octavia.PaginationMaxLimit
	limit := maxLimit
	if v, ok := last("limit"); ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		switch {
		case v == "infinite":
			limit = 0
		case err != nil:
			return 0, nil, octaviaErr(http.StatusBadRequest, "Supplied pagination limit '%s' is not valid.", v)
		case n < 1:
			limit = 0
		default:
			limit = min(n, maxLimit)
		}
	}
	sortKeys, err := ovParseSort(q)
	if err != nil {
		return 0, nil, err
	}
	marker, hasMarker := last("marker")
	pageReverse, _ := last("page_reverse")

	// The filters, tags apart.
	filters := map[string]string{}
	var tagFilters [4][]string // tags, tags-any, not-tags, not-tags-any
	tagKeys := []string{"tags", "tags-any", "not-tags", "not-tags-any"}
	for _, k := range q.keys() {
		if slices.Contains(ovAuxParams, k) {
			continue
		}
		if i := slices.Index(tagKeys, k); i >= 0 && e.octaviaAt(5) && spec.tags != nil {
			for _, v := range q.all(k) {
				tagFilters[i] = append(tagFilters[i], strings.Split(v, ",")...)
			}
			continue
		}
		if _, ok := spec.columns[k]; !ok {
			return 0, nil, octaviaErr(http.StatusBadRequest, "One or more arguments are either duplicate or invalid")
		}
		filters[k], _ = last(k)
	}
	// _auth_get_all: a member lists their own project, and asking for
	// another one is a policy failure.
	if p, ok := filters["project_id"]; ok && p != c.tok.projectID {
		return 0, nil, errOctaviaPolicy()
	}
	for _, sk := range sortKeys {
		if _, ok := spec.columns[sk.key]; !ok {
			return 0, nil, octaviaErr(http.StatusBadRequest, "Supplied sort key '%s' is not valid.", sk.key)
		}
	}
	for _, k := range []string{"created_at", "id"} {
		if !slices.ContainsFunc(sortKeys, func(s ovSortKey) bool { return s.key == k }) {
			sortKeys = append(sortKeys, ovSortKey{key: k})
		}
	}

	var matched []T
	for _, it := range items {
		if spec.project(it) != c.tok.projectID || !ovMatch(spec, it, filters) {
			continue
		}
		if spec.tags != nil && !ovTagsMatch(spec.tags(it), tagFilters) {
			continue
		}
		matched = append(matched, it)
	}
	compare := func(a, b T) int {
		for _, sk := range sortKeys {
			r := compareColumn(spec.columns[sk.key](a), spec.columns[sk.key](b))
			if sk.desc {
				r = -r
			}
			if r != 0 {
				return r
			}
		}
		return 0
	}
	slices.SortFunc(matched, compare)
	if hasMarker {
		m, ok := spec.marker(marker)
		if !ok {
			return 0, nil, octaviaErr(http.StatusBadRequest, "Supplied pagination marker '%s' is not valid.", marker)
		}
		// Octavia keeps the rows after the marker in the sort order, or
		// with page_reverse=True those before it; it still sorts and
		// cuts them from the start, so a reversed page is the first
		// rows, not the ones just before the marker.
		matched = slices.DeleteFunc(matched, func(it T) bool {
			r := compare(it, m)
			if pageReverse == "True" {
				return r >= 0
			}
			return r <= 0
		})
	}
	if limit > 0 && len(matched) > limit {
		matched = matched[:limit]
	}

	list := make([]any, 0, len(matched))
	fields := q.all("fields")
	for _, it := range matched {
		v := spec.render(it)
		if len(fields) > 0 {
			for k := range v {
				if !slices.Contains(fields, k) {
					delete(v, k)
				}
			}
		}
		list = append(list, v)
	}
	links := []any{}
	if len(matched) > 0 {
		base := []string{"limit=" + ovLimitString(limit)}
		if v, ok := last("sort"); ok && v != "" {
			base = append(base, "sort="+v)
		}
		if v, ok := last("sort_key"); ok && v != "" {
			base = append(base, "sort_key="+v)
		}
		if hasMarker && marker != "" {
			prev := append(slices.Clone(base), "marker="+spec.id(matched[0]), "page_reverse=True")
			links = append(links, map[string]any{"rel": "previous", "href": c.pathURL + "?" + strings.Join(prev, "&")})
		}
		if limit == 0 || len(matched) >= limit {
			next := append(slices.Clone(base), "marker="+spec.id(matched[len(matched)-1]))
			links = append(links, map[string]any{"rel": "next", "href": c.pathURL + "?" + strings.Join(next, "&")})
		}
	}
	return http.StatusOK, map[string]any{spec.collection: list, spec.collection + "_links": links}, nil
}

func ovLimitString(limit int) string {
	if limit == 0 {
		return "None"
	}
	return strconv.Itoa(limit)
}

// ovParseSort reads sort=key:dir,... or sort_key/sort_dir, directions
// defaulting to asc.
func ovParseSort(q query) ([]ovSortKey, *apiError) {
	dir := func(d string) (bool, *apiError) {
		switch strings.ToLower(d) {
		case "asc":
			return false, nil
		case "desc":
			return true, nil
		}
		return false, octaviaErr(http.StatusBadRequest, "Supplied sort direction '%s' is not valid.", strings.ToLower(d))
	}
	var out []ovSortKey
	if s, ok := q.last("sort"); ok && s != "" {
		for _, part := range strings.Split(s, ",") {
			comps := strings.Split(part, ":")
			switch len(comps) {
			case 1:
				out = append(out, ovSortKey{key: comps[0]})
			case 2:
				desc, err := dir(comps[1])
				if err != nil {
					return nil, err
				}
				out = append(out, ovSortKey{key: comps[0], desc: desc})
			default:
				return nil, octaviaErr(http.StatusBadRequest, "Supplied sort key '%s' is not valid.", pyStr(ovAnyList(comps)))
			}
		}
		return out, nil
	}
	if s, ok := q.last("sort_key"); ok && s != "" {
		keys := strings.Split(s, ",")
		var dirs []string
		if d, ok := q.last("sort_dir"); ok && d != "" {
			dirs = strings.Split(d, ",")
		}
		for i, k := range keys {
			desc := false
			if i < len(dirs) {
				var err *apiError
				if desc, err = dir(dirs[i]); err != nil {
					return nil, err
				}
			}
			out = append(out, ovSortKey{key: k, desc: desc})
		}
	}
	return out, nil
}

func ovAnyList(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// ovMatch applies the exact-match filters; booleans are read as oslo's
// bool_from_string does, and a NULL column matches nothing.
func ovMatch[T any](spec ovListSpec[T], it T, filters map[string]string) bool {
	for k, want := range filters {
		switch v := spec.columns[k](it).(type) {
		case nil:
			return false
		case bool:
			if v != ovBoolFromString(want) {
				return false
			}
		default:
			if ovFormat(v) != want {
				return false
			}
		}
	}
	return true
}

// ovBoolFromString is oslo's bool_from_string(strict=False).
func ovBoolFromString(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "t", "true", "on", "y", "yes":
		return true
	}
	return false
}

func ovFormat(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int:
		return strconv.Itoa(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case time.Time:
		return x.UTC().Format("2006-01-02 15:04:05")
	}
	return ""
}

// ovTagsMatch is _apply_tags_filtering: every tag, any tag, not every
// tag, none of the tags.
func ovTagsMatch(have []string, f [4][]string) bool {
	if len(f[0]) > 0 && !containsAll(have, f[0]) {
		return false
	}
	if len(f[1]) > 0 && !containsAny(have, f[1]) {
		return false
	}
	if len(f[2]) > 0 && containsAll(have, f[2]) {
		return false
	}
	if len(f[3]) > 0 && containsAny(have, f[3]) {
		return false
	}
	return true
}

// ovStrPtr is a nullable string column.
func ovStrPtr(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

func ovUpdated(t *time.Time) any {
	if t == nil {
		return nil
	}
	return *t
}

// ovBaseColumns are the columns every object has.
func ovBaseColumns[T interface{ base() *ovBase }]() map[string]func(T) any {
	return map[string]func(T) any{
		"id":                  func(x T) any { return x.base().id },
		"name":                func(x T) any { return x.base().name },
		"project_id":          func(x T) any { return x.base().projectID },
		"provisioning_status": func(x T) any { return x.base().prov },
		"operating_status":    func(x T) any { return x.base().oper },
		"admin_state_up":      func(x T) any { return x.base().adminUp },
		"enabled":             func(x T) any { return x.base().adminUp },
		"created_at":          func(x T) any { return x.base().created },
		"updated_at":          func(x T) any { return ovUpdated(x.base().updated) },
	}
}
