package openstack

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Neutron's list pipeline, shared by every collection: filters
// (api_common.get_filters with filter-validation), sort_key/sort_dir,
// limit/marker/page_reverse pagination with <collection>_links, and
// fields=. Listings work on resource views (the dicts the API shows), as
// the filters and sort keys are API attributes.

// ntView is a resource as the API shows it.
type ntView = map[string]any

// ntFilter compiles the values of one filter parameter (never empty)
// into a predicate.
type ntFilter func(key string, vals []string) (func(ntView) bool, *apiError)

// ntListSpec describes one collection's listing.
type ntListSpec struct {
	collection string // the JSON key, "security_groups"
	filters    map[string]ntFilter
	sortKeys   []string
}

// Query parameters that are not filters (get_filters' skips).
var ntListSkips = []string{"fields", "sort_key", "sort_dir", "limit", "marker", "page_reverse"}

// ntEqual filters an attribute by string equality with any of the
// values, as a DB IN (...) does.
func ntEqual(key string, vals []string) (func(ntView) bool, *apiError) {
	return func(v ntView) bool {
		s, ok := v[key].(string)
		return ok && slices.Contains(vals, s)
	}, nil
}

// ntBoolFilter filters a boolean attribute; the values go through
// convert_to_boolean.
func ntBoolFilter(key string, vals []string) (func(ntView) bool, *apiError) {
	want := map[bool]bool{}
	for _, s := range vals {
		b, err := ntBool(s)
		if err != nil {
			return nil, err
		}
		want[b] = true
	}
	return func(v ntView) bool {
		b, ok := v[key].(bool)
		return ok && want[b]
	}, nil
}

// ntIntFilter filters an integer attribute. Values that are not integers match
// nothing, as the DB's comparison would have it.
func ntIntFilter(key string, vals []string) (func(ntView) bool, *apiError) {
	var want []int
	for _, s := range vals {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
			want = append(want, n)
		}
	}
	return func(v ntView) bool {
		n, ok := v[key].(int)
		return ok && slices.Contains(want, n)
	}, nil
}

// ntTagList splits tag filter values: "a,b" and a repeated parameter both
// name several tags.
func ntTagList(vals []string) []string {
	var out []string
	for _, v := range vals {
		out = append(out, strings.Split(v, ",")...)
	}
	return out
}

func ntViewTags(v ntView) []string {
	t, _ := v["tags"].([]string)
	return t
}

// ntTagFilters are the standard-attr-tag filters: all of, any of, not all
// of and none of the tags.
var ntTagFilters = map[string]ntFilter{
	"tags": func(_ string, vals []string) (func(ntView) bool, *apiError) {
		tags := ntTagList(vals)
		return func(v ntView) bool { return containsAll(ntViewTags(v), tags) }, nil
	},
	"tags-any": func(_ string, vals []string) (func(ntView) bool, *apiError) {
		tags := ntTagList(vals)
		return func(v ntView) bool { return containsAny(ntViewTags(v), tags) }, nil
	},
	"not-tags": func(_ string, vals []string) (func(ntView) bool, *apiError) {
		tags := ntTagList(vals)
		return func(v ntView) bool { return !containsAll(ntViewTags(v), tags) }, nil
	},
	"not-tags-any": func(_ string, vals []string) (func(ntView) bool, *apiError) {
		tags := ntTagList(vals)
		return func(v ntView) bool { return !containsAny(ntViewTags(v), tags) }, nil
	},
}

// withStdFilters adds the filters every standard-attribute resource has
// (id, project, description, revision_number, tags) to a spec's own.
func (e *Emulator) withStdFilters(own map[string]ntFilter) map[string]ntFilter {
	f := map[string]ntFilter{"id": ntEqual, "project_id": ntEqual, "tenant_id": ntEqual}
	if e.hasExt(extStandardAttrDescription) {
		f["description"] = ntEqual
	}
	if e.hasExt(extStandardAttrRevisions) {
		f["revision_number"] = ntIntFilter
	}
	if e.hasExt(extStandardAttrTag) {
		for k, fn := range ntTagFilters {
			f[k] = fn
		}
	}
	for k, fn := range own {
		f[k] = fn
	}
	return f
}

// ntPyList renders strings as Python prints a list of them.
func ntPyList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = pyRepr(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// list answers GET on a collection: views are every resource the caller
// may see, in creation order; lookup finds the marker among them (a
// marker the caller cannot see is the resource's 404, as the plugin's
// _get_<resource> raises).
func (e *Emulator) list(c *neutronCall, spec ntListSpec, views []ntView, lookup func(id string) (ntView, *apiError)) (*neutronResponse, *apiError) {
	q := c.query
	// Filters.
	var invalid []string
	var where []func(ntView) bool
	for _, k := range q.keys() {
		if slices.Contains(ntListSkips, k) {
			continue
		}
		fn, known := spec.filters[k]
		if !known {
			if e.hasExt(extFilterValidation) {
				invalid = append(invalid, k)
			}
			continue
		}
		vals := ntNonEmpty(q.all(k))
		if len(vals) == 0 {
			continue
		}
		p, err := fn(k, vals)
		if err != nil {
			return nil, err
		}
		where = append(where, p)
	}
	if len(invalid) > 0 {
		return nil, ntHTTPBadRequest(ntPyList(invalid) + " is invalid attribute for filtering")
	}

	// Sorting (api_common.get_sorts).
	sortKeys, sortDirs := ntNonEmpty(q.all("sort_key")), ntNonEmpty(q.all("sort_dir"))
	if len(sortKeys) != len(sortDirs) {
		return nil, ntHTTPBadRequest("The number of sort_keys and sort_dirs must be same")
	}
	var absent, badDirs []string
	for _, k := range sortKeys {
		if !slices.Contains(spec.sortKeys, k) {
			absent = append(absent, k)
		}
	}
	if len(absent) > 0 {
		return nil, ntHTTPBadRequest(ntPyList(absent) + " is invalid attribute for sort_keys")
	}
	for _, d := range sortDirs {
		if d != "asc" && d != "desc" {
			badDirs = append(badDirs, d)
		}
	}
	if len(badDirs) > 0 {
		return nil, ntHTTPBadRequest(ntPyList(badDirs) + " is invalid value for sort_dirs, valid value is 'asc' and 'desc'")
	}

	// Pagination (api_common.get_limit_and_marker, get_page_reverse).
	limit := 0
	if v, ok := q.last("limit"); ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			return nil, ntBadRequest("limit", "Limit must be an integer 0 or greater and not '"+v+"'")
		}
		limit = n
	}
	if maxLimit := e.cfg.Neutron.PaginationMaxLimit; maxLimit > 0 && (limit == 0 || limit > maxLimit) {
		limit = maxLimit
	}
	marker, _ := q.last("marker")
	pageReverse := false
	if v, ok := q.last("page_reverse"); ok {
		pageReverse = strings.EqualFold(v, "true")
	}
	if limit == 0 {
		marker, pageReverse = "", false
	}

	var items []ntView
	for _, v := range views {
		if ntMatchAll(v, where) {
			items = append(items, v)
		}
	}
	// The DB sorts by the keys asked for and, when paginating, by id last
	// (PaginationNativeHelper); unsorted listings keep creation order.
	keys, asc := sortKeys, make([]bool, len(sortDirs))
	for i, d := range sortDirs {
		asc[i] = d == "asc"
	}
	if limit > 0 && !slices.Contains(keys, "id") {
		keys, asc = append(slices.Clone(keys), "id"), append(asc, true)
	}
	compare := func(a, b ntView) int {
		for i, k := range keys {
			r := compareColumn(a[k], b[k])
			if !asc[i] {
				r = -r
			}
			if r != 0 {
				return r
			}
		}
		return 0
	}
	slices.SortStableFunc(items, compare)
	if limit > 0 {
		if marker != "" {
			mv, err := lookup(marker)
			if err != nil {
				return nil, err
			}
			var before, after []ntView
			for _, it := range items {
				switch r := compare(it, mv); {
				case r < 0:
					before = append(before, it)
				case r > 0:
					after = append(after, it)
				}
			}
			if pageReverse {
				items = before
			} else {
				items = after
			}
		}
		if pageReverse {
			items = items[max(0, len(items)-limit):]
		} else {
			items = items[:min(limit, len(items))]
		}
	}

	fields := ntNonEmpty(q.all("fields"))
	out := make([]any, len(items))
	for i, it := range items {
		out[i] = ntFields(it, fields)
	}
	body := map[string]any{spec.collection: out}
	if links := paginationLinks(c, items, limit, pageReverse); len(links) > 0 {
		body[spec.collection+"_links"] = links
	}
	return neutronOK(body), nil
}

func ntMatchAll(v ntView, where []func(ntView) bool) bool {
	for _, p := range where {
		if !p(v) {
			return false
		}
	}
	return true
}

// paginationLinks is api_common.get_pagination_links: with a limit, a
// "next" link unless a forward page came back short, and a "previous"
// link unless a reversed page did. Both carry the request's parameters
// in order, the marker (the page's last or first item) appended.
func paginationLinks(c *neutronCall, items []ntView, limit int, pageReverse bool) []any {
	if limit == 0 {
		return nil
	}
	link := func(rel string, markerItem ntView, reverse bool) any {
		var parts []string
		for _, p := range c.query {
			if p.key == "marker" || p.key == "page_reverse" {
				continue
			}
			parts = append(parts, url.QueryEscape(p.key)+"="+url.QueryEscape(p.value))
		}
		if markerItem != nil {
			id, _ := markerItem["id"].(string)
			parts = append(parts, "marker="+url.QueryEscape(id))
		}
		if reverse {
			parts = append(parts, "page_reverse=True")
		}
		return map[string]any{"rel": rel, "href": c.self + "?" + strings.Join(parts, "&")}
	}
	var first, last ntView
	if len(items) > 0 {
		first, last = items[0], items[len(items)-1]
	}
	var links []any
	if !(len(items) < limit && !pageReverse) {
		links = append(links, link("next", last, false))
	}
	if !(len(items) < limit && pageReverse) {
		links = append(links, link("previous", first, true))
	}
	return links
}

// ntList answers a collection's list: the items include admits, viewed,
// filtered, sorted and paged by list; lookup finds a marker as the caller
// may see it.
func ntList[T any](e *Emulator, c *neutronCall, spec ntListSpec, all []T, include func(T) bool, view func(T) ntView,
	lookup func(*neutronCall, string) (T, *apiError)) (*neutronResponse, *apiError) {
	var views []ntView
	for _, x := range all {
		if include(x) {
			views = append(views, view(x))
		}
	}
	return e.list(c, spec, views, func(id string) (ntView, *apiError) {
		x, err := lookup(c, id)
		if err != nil {
			return nil, err
		}
		return view(x), nil
	})
}

// ntShow answers a GET of one item the caller may see, as {key: view}.
func ntShow[T any](c *neutronCall, key string, lookup func(*neutronCall, string) (T, *apiError), view func(T) ntView) (*neutronResponse, *apiError) {
	x, err := lookup(c, c.id)
	if err != nil {
		return nil, err
	}
	return c.show(key, view(x)), nil
}
