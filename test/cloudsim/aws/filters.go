package aws

import (
	"encoding/base64"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// filter is one EC2 Filter.N: a name and the values it accepts. Values of
// one filter are ORed, filters are ANDed, as in EC2.
type filter struct {
	name   string
	values []string
}

func parseFilters(p params) []filter {
	var out []filter
	for _, f := range p.structs("Filter") {
		out = append(out, filter{name: f.get("Name"), values: f.list("Value")})
	}
	return out
}

// fields maps EC2 filter names to the values a resource has for them.
// Tag filters (tag:<key>, tag-key, tag-value) work for every kind.
type fields[T any] map[string]func(T) []string

// filterItems keeps the items matching every filter. An unknown filter
// name is an InvalidParameterValue, as in EC2, so typos in a controller's
// filters fail in tests instead of silently matching everything.
func filterItems[T any](items []T, filters []filter, fs fields[T], tagsOf func(T) map[string]string) ([]T, error) {
	for _, f := range filters {
		if _, ok := fs[f.name]; ok || isTagFilter(f.name) {
			continue
		}
		return nil, apiErr(codeInvalidParameterValue, "The filter '%s' is invalid", f.name)
	}
	var out []T
	for _, item := range items {
		ok := true
		for _, f := range filters {
			if !matchAny(f.values, filterValues(item, f.name, fs, tagsOf)) {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, item)
		}
	}
	return out, nil
}

func isTagFilter(name string) bool {
	return strings.HasPrefix(name, "tag:") || name == "tag-key" || name == "tag-value"
}

func filterValues[T any](item T, name string, fs fields[T], tagsOf func(T) map[string]string) []string {
	if f, ok := fs[name]; ok {
		return f(item)
	}
	tags := tagsOf(item)
	switch {
	case name == "tag-key":
		return sortedKeys(tags)
	case name == "tag-value":
		var vs []string
		for _, v := range tags {
			vs = append(vs, v)
		}
		return vs
	default: // tag:<key>
		if v, ok := tags[strings.TrimPrefix(name, "tag:")]; ok {
			return []string{v}
		}
		return nil
	}
}

// matchAny reports whether any pattern matches any value.
func matchAny(patterns, values []string) bool {
	for _, p := range patterns {
		for _, v := range values {
			if wildcardMatch(p, v) {
				return true
			}
		}
	}
	return false
}

// wildcardMatch matches EC2 filter wildcards: * is any run, ? one character.
func wildcardMatch(pattern, s string) bool {
	if !strings.ContainsAny(pattern, "*?") {
		return pattern == s
	}
	p, str := []rune(pattern), []rune(s)
	// Classic two-pointer glob with backtracking to the last star.
	pi, si, star, mark := 0, 0, -1, 0
	for si < len(str) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == str[si]):
			pi++
			si++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// ordered is a resource with a creation sequence number.
type ordered interface{ order() uint64 }

// sortedValues lists a map's values in creation order.
func sortedValues[T ordered](m map[string]T) []T {
	out := make([]T, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].order() < out[j].order() })
	return out
}

// ec2Page applies EC2's MaxResults/NextToken pagination. Without
// MaxResults everything is returned, as the real API does for the
// Describe calls we emulate.
func ec2Page[T any](items []T, p params) ([]T, string, error) {
	max, ok, err := p.intParam("MaxResults")
	if err != nil {
		return nil, "", invalidValue("MaxResults", p.get("MaxResults"), "")
	}
	start := 0
	if tok := p.get("NextToken"); tok != "" {
		if start, err = decodeToken(tok); err != nil {
			return nil, "", apiErr(codeInvalidParameterValue, "Invalid value '%s' for nextToken", tok)
		}
	}
	if !ok {
		if start > len(items) {
			start = len(items)
		}
		return items[start:], "", nil
	}
	if max < 5 || max > 1000 {
		return nil, "", invalidValue("MaxResults", strconv.Itoa(max), "Expecting a value between 5 and 1000.")
	}
	return page(items, start, max, encodeToken)
}

// elbPage applies ELBv2's Marker/PageSize pagination (PageSize 1..400).
func elbPage[T any](items []T, p params) ([]T, string, error) {
	size, ok, err := p.intParam("PageSize")
	if err != nil || ok && (size < 1 || size > 400) {
		return nil, "", validation("1 validation error detected: Value '%s' at 'pageSize' failed to satisfy constraint: Member must have value between 1 and 400", p.get("PageSize"))
	}
	if !ok {
		size = 400
	}
	start := 0
	if m := p.get("Marker"); m != "" {
		if start, err = decodeToken(m); err != nil {
			return nil, "", validation("Invalid marker '%s'", m)
		}
	}
	return page(items, start, size, encodeToken)
}

func page[T any](items []T, start, size int, token func(int) string) ([]T, string, error) {
	if start > len(items) {
		start = len(items)
	}
	end := min(start+size, len(items))
	next := ""
	if end < len(items) {
		next = token(end)
	}
	return items[start:end], next, nil
}

// Tokens are opaque to clients; ours encode the offset of the next item.
func encodeToken(offset int) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "cloudsim:%d", offset))
}

func decodeToken(tok string) (int, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return 0, err
	}
	s, ok := strings.CutPrefix(string(b), "cloudsim:")
	if !ok {
		return 0, fmt.Errorf("bad token")
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad token")
	}
	return n, nil
}
