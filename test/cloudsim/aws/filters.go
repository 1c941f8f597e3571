package aws

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
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

// ec2Filter turns EC2's Filter.N parameters into one predicate. An
// unknown filter name is an InvalidParameterValue, as in EC2, so typos in
// a controller's filters fail in tests instead of silently matching
// everything.
func ec2Filter[T any](p params, fs fields[T], tagsOf func(T) map[string]string) (func(T) bool, error) {
	filters := parseFilters(p)
	for _, f := range filters {
		if _, ok := fs[f.name]; ok || isTagFilter(f.name) {
			continue
		}
		return nil, apiErr(codeInvalidParameterValue, "The filter '%s' is invalid", f.name)
	}
	return func(item T) bool {
		for _, f := range filters {
			if !matchAny(f.values, filterValues(item, f.name, fs, tagsOf)) {
				return false
			}
		}
		return true
	}, nil
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

// notFound is the EC2 error a Describe call gives for IDs that do not
// exist: format gets every missing ID at once, as in "The subnet ID
// 'subnet-1, subnet-2' does not exist".
type notFound struct{ code, format string }

// ec2Describe runs an EC2 Describe call's pipeline over s: the IDs it
// names (every one must exist), its Filter.N (and any where of the
// caller's own), then MaxResults/NextToken.
func ec2Describe[T any](s *cloudsim.Store[T], p params, ids []string, nf notFound,
	fs fields[T], tagsOf func(T) map[string]string, where ...func(T) bool) ([]T, string, error) {
	match, err := ec2Filter(p, fs, tagsOf)
	if err != nil {
		return nil, "", err
	}
	page, err := ec2PageRequest(p)
	if err != nil {
		return nil, "", err
	}
	return ec2List(s, ids, nf, page, append(where, match)...)
}

// ec2List is ec2Describe for calls with their own paging limits.
func ec2List[T any](s *cloudsim.Store[T], ids []string, nf notFound, page cloudsim.PageRequest, where ...func(T) bool) ([]T, string, error) {
	res, err := s.List(cloudsim.Query[T]{Keys: ids, Where: where, Page: page})
	if err != nil {
		return nil, "", listError(err,
			func(missing []string) error { return apiErr(nf.code, nf.format, quoteList(missing)) },
			apiErr(codeInvalidParameterValue, "Invalid value '%s' for nextToken", page.Token))
	}
	return res.Items, res.NextToken, nil
}

// ec2PageRequest reads EC2's MaxResults (5..1000) and NextToken. Without
// MaxResults everything is returned, as the real API does for the
// Describe calls we emulate.
func ec2PageRequest(p params) (cloudsim.PageRequest, error) {
	size, ok, err := p.intParam("MaxResults")
	if err != nil {
		return cloudsim.PageRequest{}, invalidValue("MaxResults", p.get("MaxResults"), "")
	}
	if ok && (size < 5 || size > 1000) {
		return cloudsim.PageRequest{}, invalidValue("MaxResults", strconv.Itoa(size), "Expecting a value between 5 and 1000.")
	}
	return cloudsim.PageRequest{Token: p.get("NextToken"), Size: size}, nil
}

// elbDescribe runs an ELBv2 Describe call's pipeline over s: the ARNs it
// names (missing ones reported by notFound), the caller's where, then
// Marker/PageSize.
func elbDescribe[T any](s *cloudsim.Store[T], p params, arns []string, notFound func(missing []string) error, where ...func(T) bool) ([]T, string, error) {
	size, ok, err := p.intParam("PageSize")
	if err != nil || ok && (size < 1 || size > 400) {
		return nil, "", validation("1 validation error detected: Value '%s' at 'pageSize' failed to satisfy constraint: Member must have value between 1 and 400", p.get("PageSize"))
	}
	if !ok {
		size = 400
	}
	marker := p.get("Marker")
	res, err := s.List(cloudsim.Query[T]{Keys: arns, Where: where, Page: cloudsim.PageRequest{Token: marker, Size: size}})
	if err != nil {
		return nil, "", listError(err, notFound, validation("Invalid marker '%s'", marker))
	}
	return res.Items, res.NextToken, nil
}

// elbLookup finds the resource arn names in s with ELBv2's three errors:
// no ARN, an ARN of another kind (what names the kind in messages), and
// an unknown one (code and format, which differ per kind).
func elbLookup[T any](s *cloudsim.Store[T], arn, kind, what, code, format string) (T, error) {
	var zero T
	switch {
	case arn == "":
		return zero, validation("A %s ARN must be specified", what)
	case arnKind(arn) != kind:
		return zero, validation("'%s' is not a valid %s ARN", arn, what)
	}
	v, ok := s.Get(arn)
	if !ok {
		return zero, apiErr(code, format, arn)
	}
	return v, nil
}

// missingNames lists the names that no item has, in the order asked:
// ELBv2 selects by name as well as by ARN, and names are not store keys.
func missingNames[T any](items []T, names []string, name func(T) string) []string {
	var missing []string
	for _, n := range names {
		if !slices.ContainsFunc(items, func(it T) bool { return name(it) == n }) {
			missing = append(missing, n)
		}
	}
	return missing
}

// listError turns a Store.List error into the service's own: missing
// keys through notFound, a bad token into badToken.
func listError(err error, notFound func([]string) error, badToken *apiError) error {
	var nf *cloudsim.NotFoundError
	switch {
	case errors.As(err, &nf):
		return notFound(nf.Keys)
	case errors.Is(err, cloudsim.ErrInvalidPageToken):
		return badToken
	}
	return fmt.Errorf("listing: %w", err)
}
