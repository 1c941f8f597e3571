package gce

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Parsing list filters (the grammar is described in filter.go).

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
