package gce

import (
	"errors"
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

var errFilter = errors.New("invalid list filter expression")

// parseFilter parses s. It does not know the resource: check does.
func parseFilter(s string) (*filter, error) {
	p := &filterParser{s: s}
	n, err := p.and()
	if err != nil {
		return nil, err
	}
	if p.skip(); p.pos < len(p.s) {
		return nil, fmt.Errorf("%w: unexpected %q", errFilter, p.s[p.pos:])
	}
	var regex, aip int
	n.walk(func(r *restriction) {
		if r.regex() {
			regex++
		} else {
			aip++
		}
	})
	switch {
	case regex > 0 && aip > 0:
		return nil, fmt.Errorf("%w: regular expressions and comparisons mixed", errFilter)
	case regex > 0 && p.sawOr:
		return nil, fmt.Errorf("%w: OR of regular expressions", errFilter)
	case regex > 1 && p.sawBare:
		return nil, fmt.Errorf("%w: several regular expressions must each be parenthesised", errFilter)
	}
	return &filter{root: n}, nil
}

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

// filterParser is a recursive-descent parser over the raw string: the
// unquoted literal of a regular expression is the rest of its
// (parenthesised) expression, so tokens cannot be cut in advance.
type filterParser struct {
	s       string
	pos     int
	depth   int
	sawOr   bool
	sawBare bool // a restriction outside parentheses
}

func (p *filterParser) skip() {
	for p.pos < len(p.s) && (p.s[p.pos] == ' ' || p.s[p.pos] == '\t' || p.s[p.pos] == '\n') {
		p.pos++
	}
}

// keyword consumes w if it is the next word.
func (p *filterParser) keyword(w string) bool {
	p.skip()
	rest := p.s[p.pos:]
	if !strings.HasPrefix(rest, w) {
		return false
	}
	if len(rest) > len(w) && rest[len(w)] != ' ' && rest[len(w)] != '(' && rest[len(w)] != '\t' {
		return false
	}
	p.pos += len(w)
	return true
}

// and: or { [AND] or }
func (p *filterParser) and() (filterNode, error) {
	var terms andNode
	for {
		p.skip()
		if p.pos >= len(p.s) || p.s[p.pos] == ')' {
			break
		}
		if len(terms) > 0 {
			p.keyword("AND")
		}
		n, err := p.or()
		if err != nil {
			return nil, err
		}
		terms = append(terms, n)
	}
	switch len(terms) {
	case 0:
		return nil, fmt.Errorf("%w: empty expression", errFilter)
	case 1:
		return terms[0], nil
	}
	return terms, nil
}

// or: unary { OR unary }
func (p *filterParser) or() (filterNode, error) {
	n, err := p.unary()
	if err != nil {
		return nil, err
	}
	terms := orNode{n}
	for p.keyword("OR") {
		p.sawOr = true
		n, err := p.unary()
		if err != nil {
			return nil, err
		}
		terms = append(terms, n)
	}
	if len(terms) == 1 {
		return n, nil
	}
	return terms, nil
}

// unary: NOT unary | ( and ) | restriction
func (p *filterParser) unary() (filterNode, error) {
	if p.keyword("NOT") {
		n, err := p.unary()
		if err != nil {
			return nil, err
		}
		return notNode{n}, nil
	}
	p.skip()
	if p.pos < len(p.s) && p.s[p.pos] == '(' {
		p.pos++
		p.depth++
		n, err := p.and()
		if err != nil {
			return nil, err
		}
		if p.skip(); p.pos >= len(p.s) || p.s[p.pos] != ')' {
			return nil, fmt.Errorf("%w: missing )", errFilter)
		}
		p.pos++
		p.depth--
		return n, nil
	}
	return p.restriction()
}

func isFieldByte(c byte) bool {
	return c == '.' || c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func (p *filterParser) restriction() (*restriction, error) {
	p.skip()
	start := p.pos
	for p.pos < len(p.s) && isFieldByte(p.s[p.pos]) {
		p.pos++
	}
	field := p.s[start:p.pos]
	if field == "" || strings.HasPrefix(field, ".") || strings.HasSuffix(field, ".") || strings.Contains(field, "..") {
		return nil, fmt.Errorf("%w: expected a field at %q", errFilter, p.s[start:])
	}
	if p.depth == 0 {
		p.sawBare = true
	}
	r := &restriction{path: strings.Split(field, ".")}
	p.skip()
	rest := p.s[p.pos:]
	switch {
	case p.keyword("eq"):
		r.op = "eq"
	case p.keyword("ne"):
		r.op = "ne"
	case strings.HasPrefix(rest, ">="), strings.HasPrefix(rest, "<="), strings.HasPrefix(rest, "!="):
		r.op = rest[:2]
	case len(rest) > 0 && strings.ContainsRune("=:<>", rune(rest[0])):
		r.op = rest[:1]
	default:
		return nil, fmt.Errorf("%w: expected an operator after %s", errFilter, field)
	}
	if !r.regex() {
		p.pos += len(r.op)
	}
	if r.regex() {
		lit, err := p.regexLiteral()
		if err != nil {
			return nil, err
		}
		re, err := regexp.Compile(`^(?:` + lit + `)$`)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errFilter, err)
		}
		r.value, r.re = lit, re
		return r, nil
	}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	if strings.Contains(v, "*") && !(r.op == ":" && v == "*") {
		return nil, fmt.Errorf("%w: wildcards are not emulated", errFilter)
	}
	r.value = v
	return r, nil
}

// quoted reads a 'single' or "double" quoted string at pos; a backslash
// keeps the quote after it, and is kept itself before anything else (it
// is part of a regular expression).
func (p *filterParser) quoted() (string, error) {
	q := p.s[p.pos]
	var b strings.Builder
	for i := p.pos + 1; i < len(p.s); i++ {
		switch c := p.s[i]; {
		case c == '\\' && i+1 < len(p.s) && p.s[i+1] == q:
			b.WriteByte(q)
			i++
		case c == q:
			p.pos = i + 1
			return b.String(), nil
		default:
			b.WriteByte(c)
		}
	}
	return "", fmt.Errorf("%w: unterminated string", errFilter)
}

// regexLiteral reads a quoted literal, or the unquoted rest of the
// expression: to the end, or to the parenthesis closing the one the
// restriction is in.
func (p *filterParser) regexLiteral() (string, error) {
	p.skip()
	if p.pos < len(p.s) && (p.s[p.pos] == '"' || p.s[p.pos] == '\'') {
		return p.quoted()
	}
	start, depth := p.pos, 0
	for ; p.pos < len(p.s); p.pos++ {
		switch p.s[p.pos] {
		case '(':
			depth++
		case ')':
			if depth == 0 && p.depth > 0 {
				return strings.TrimSpace(p.s[start:p.pos]), nil
			}
			depth--
		}
	}
	lit := strings.TrimSpace(p.s[start:])
	if lit == "" {
		return "", fmt.Errorf("%w: missing literal", errFilter)
	}
	return lit, nil
}

// value reads a comparison's value: quoted, or a bare word up to a space
// or parenthesis.
func (p *filterParser) value() (string, error) {
	p.skip()
	if p.pos < len(p.s) && (p.s[p.pos] == '"' || p.s[p.pos] == '\'') {
		return p.quoted()
	}
	start := p.pos
	for p.pos < len(p.s) && !strings.ContainsRune(" \t\n()", rune(p.s[p.pos])) {
		p.pos++
	}
	if p.pos == start {
		return "", fmt.Errorf("%w: missing value", errFilter)
	}
	return p.s[start:p.pos], nil
}
