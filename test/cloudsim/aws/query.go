package aws

import (
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// params is a decoded Query-protocol request body. Both EC2 and ELBv2
// flatten structures into dotted keys; they differ only in lists: EC2
// writes "InstanceId.1", ELBv2 writes "Names.member.1". Callers pass the
// full list prefix ("InstanceId" or "Names.member"), so one parser serves both.
type params struct{ v url.Values }

func (p params) get(key string) string { return p.v.Get(key) }

// has reports whether key was sent at all, even empty. awsQuery encodes an
// explicitly empty list as "Key=", which must differ from an absent list.
func (p params) has(key string) bool {
	if _, ok := p.v[key]; ok {
		return true
	}
	prefix := key + "."
	for k := range p.v {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

// intParam parses an optional integer parameter.
func (p params) intParam(key string) (n int, ok bool, err error) {
	s := p.v.Get(key)
	if s == "" {
		return 0, false, nil
	}
	n, err = strconv.Atoi(s)
	return n, err == nil, err
}

// indexed groups the keys "<prefix>.<N>[.rest]" by N, in index order.
func (p params) indexed(prefix string) []url.Values {
	groups := map[int]url.Values{}
	dot := prefix + "."
	for k, vs := range p.v {
		rest, ok := strings.CutPrefix(k, dot)
		if !ok {
			continue
		}
		idx, sub, _ := strings.Cut(rest, ".")
		n, err := strconv.Atoi(idx)
		if err != nil || n < 1 {
			continue
		}
		if groups[n] == nil {
			groups[n] = url.Values{}
		}
		groups[n][sub] = vs
	}
	keys := make([]int, 0, len(groups))
	for n := range groups {
		keys = append(keys, n)
	}
	sort.Ints(keys)
	out := make([]url.Values, len(keys))
	for i, n := range keys {
		out[i] = groups[n]
	}
	return out
}

// list returns the scalar list "<prefix>.1", "<prefix>.2", ...
func (p params) list(prefix string) []string {
	var out []string
	for _, g := range p.indexed(prefix) {
		if vs, ok := g[""]; ok && len(vs) > 0 {
			out = append(out, vs[0])
		}
	}
	return out
}

// structs returns the structure list "<prefix>.N.Field", each as params.
func (p params) structs(prefix string) []params {
	var out []params
	for _, g := range p.indexed(prefix) {
		delete(g, "")
		out = append(out, params{g})
	}
	return out
}

// tags reads a list of {Key, Value} structures.
func (p params) tags(prefix string) []tag {
	var out []tag
	for _, s := range p.structs(prefix) {
		out = append(out, tag{Key: s.get("Key"), Value: s.get("Value")})
	}
	return out
}

// tag is a key/value pair as sent in a request.
type tag struct{ Key, Value string }
