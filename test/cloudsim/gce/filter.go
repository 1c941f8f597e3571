package gce

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// List filters, the two syntaxes the filter parameter's documentation
// describes, which cannot be mixed in one filter:
//
// Regular expressions: `field eq literal` or `field ne literal`, alone
// and unparenthesised, or several parenthesised ones, all of which must
// hold: `(name eq "node-.*") (zone ne ".*-b")`. The literal is unquoted
// (the rest of the expression), 'single' or "double" quoted, an RE2
// expression matched against the whole field. OR is refused.
//
// AIP-160 comparisons: `field = value`, `!=`, `>`, `<`, `>=`, `<=` and
// `:` (`field:*` tests presence, `labels.owner:*`), the value a quoted
// string, a bare word, a number or a boolean. Comparisons combine with
// AND, OR and NOT and parentheses; juxtaposition is AND, and OR binds
// tighter than AND, as AIP-160 says: `(a = 1) OR (a = 2) AND (b = 3)`
// is `(a = 1 OR a = 2) AND b = 3`. `*` wildcards in values are not
// emulated (refused).
//
// A field is a path of JSON names through the resource: `name`,
// `status`, `labels.env` (a map key), `scheduling.automaticRestart`,
// `networkInterfaces.networkIP` (a repeated field matches when any
// element does). An unset field compares as "" (and 0, false). An
// unknown field, a malformed expression or a mix of the syntaxes is
// refused with 400 invalid, as GCE refuses them.

// filter is a parsed list filter.
type filter struct {
	root filterNode
}

type filterNode interface {
	match(m protoreflect.Message) bool
	walk(func(*restriction))
}

type (
	andNode []filterNode
	orNode  []filterNode
	notNode struct{ n filterNode }
)

func (a andNode) match(m protoreflect.Message) bool {
	for _, n := range a {
		if !n.match(m) {
			return false
		}
	}
	return true
}

func (o orNode) match(m protoreflect.Message) bool {
	for _, n := range o {
		if n.match(m) {
			return true
		}
	}
	return false
}

func (n notNode) match(m protoreflect.Message) bool { return !n.n.match(m) }

func (a andNode) walk(f func(*restriction)) {
	for _, n := range a {
		n.walk(f)
	}
}

func (o orNode) walk(f func(*restriction)) {
	for _, n := range o {
		n.walk(f)
	}
}

func (n notNode) walk(f func(*restriction)) { n.n.walk(f) }

// restriction is one comparison of a field with a value.
type restriction struct {
	path  []string
	op    string // eq ne = != : < > <= >=
	value string
	re    *regexp.Regexp
}

func (r *restriction) walk(f func(*restriction)) { f(r) }

func (r *restriction) regex() bool { return r.op == "eq" || r.op == "ne" }

func (f *filter) match(m protoreflect.Message) bool { return f.root.match(m) }

// check refuses fields md does not have.
func (f *filter) check(md protoreflect.MessageDescriptor) error {
	var err error
	f.root.walk(func(r *restriction) {
		if err == nil {
			err = checkPath(md, r.path)
		}
	})
	return err
}

func checkPath(md protoreflect.MessageDescriptor, path []string) error {
	for i, seg := range path {
		fd := md.Fields().ByJSONName(seg)
		if fd == nil {
			return fmt.Errorf("%w: unknown field %s", errFilter, strings.Join(path[:i+1], "."))
		}
		rest := path[i+1:]
		switch {
		case fd.IsMap():
			// The next segment is a key; nothing may follow it.
			if len(rest) != 1 {
				return fmt.Errorf("%w: %s needs one key", errFilter, strings.Join(path[:i+1], "."))
			}
			return nil
		case fd.Message() != nil:
			if len(rest) == 0 {
				return fmt.Errorf("%w: %s is not a value", errFilter, strings.Join(path, "."))
			}
			md = fd.Message()
		case len(rest) > 0:
			return fmt.Errorf("%w: %s has no fields", errFilter, strings.Join(path[:i+1], "."))
		}
	}
	return nil
}

// values are the strings at path in m: one per element for repeated
// fields; none when a map key or an element is missing; "" for an unset
// singular field.
func values(m protoreflect.Message, path []string) (out []string, present bool) {
	fd := m.Descriptor().Fields().ByJSONName(path[0])
	rest := path[1:]
	switch {
	case fd.IsMap():
		v := m.Get(fd).Map().Get(protoreflect.ValueOfString(rest[0]).MapKey())
		if !v.IsValid() {
			return nil, false
		}
		return []string{scalarString(fd.MapValue(), v)}, true
	case fd.IsList():
		l := m.Get(fd).List()
		for i := range l.Len() {
			if fd.Message() != nil {
				vs, ok := values(l.Get(i).Message(), rest)
				if ok {
					present = true
				}
				out = append(out, vs...)
			} else {
				present = true
				out = append(out, scalarString(fd, l.Get(i)))
			}
		}
		return out, present
	case fd.Message() != nil:
		if !m.Has(fd) {
			return []string{""}, false
		}
		return values(m.Get(fd).Message(), rest)
	}
	return []string{scalarString(fd, m.Get(fd))}, m.Has(fd)
}

func scalarString(fd protoreflect.FieldDescriptor, v protoreflect.Value) string {
	if fd.Kind() == protoreflect.EnumKind {
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name())
		}
	}
	return v.String()
}

func numeric(fd protoreflect.FieldDescriptor) bool {
	switch fd.Kind() {
	case protoreflect.BoolKind, protoreflect.StringKind, protoreflect.BytesKind, protoreflect.EnumKind, protoreflect.MessageKind, protoreflect.GroupKind:
		return false
	}
	return true
}

// leaf is the descriptor at the end of path (a map's value for a key).
func leaf(md protoreflect.MessageDescriptor, path []string) protoreflect.FieldDescriptor {
	fd := md.Fields().ByJSONName(path[0])
	switch {
	case fd.IsMap():
		return fd.MapValue()
	case fd.Message() != nil:
		return leaf(fd.Message(), path[1:])
	}
	return fd
}

func (r *restriction) match(m protoreflect.Message) bool {
	vs, present := values(m, r.path)
	switch r.op {
	case "eq", "ne":
		hit := false
		for _, v := range vs {
			hit = hit || r.re.MatchString(v)
		}
		if len(vs) == 0 {
			hit = r.re.MatchString("")
		}
		return hit == (r.op == "eq")
	case ":":
		if r.value == "*" {
			return present
		}
	case "!=":
		for _, v := range vs {
			if r.compare(m, v) == 0 {
				return false
			}
		}
		return true
	}
	for _, v := range vs {
		c := r.compare(m, v)
		switch r.op {
		case "=", ":":
			if c == 0 {
				return true
			}
		case "<":
			if c < 0 {
				return true
			}
		case "<=":
			if c <= 0 {
				return true
			}
		case ">":
			if c > 0 {
				return true
			}
		case ">=":
			if c >= 0 {
				return true
			}
		}
	}
	return false
}

// compare orders a field's value against the restriction's: as numbers
// for numeric fields, as strings otherwise (booleans as true/false).
func (r *restriction) compare(m protoreflect.Message, v string) int {
	if numeric(leaf(m.Descriptor(), r.path)) {
		a, errA := strconv.ParseFloat(v, 64)
		b, errB := strconv.ParseFloat(r.value, 64)
		if errA == nil && errB == nil {
			switch {
			case a < b:
				return -1
			case a > b:
				return 1
			}
			return 0
		}
	}
	return strings.Compare(v, r.value)
}
