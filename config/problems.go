package config

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Problem is one thing wrong with a cloud-config, located as precisely as the
// document allows so that a person can fix it without guessing.
type Problem struct {
	// Path is the field path in k8s field.Path form ("aws.subnets[0].id").
	// It is empty for problems with the document as a whole (bad YAML, a
	// second document) and for unknown top-level keys.
	Path string
	// Detail says what is wrong. It never contains a secret value.
	Detail string
	// Line is the 1-based line in the document, or 0 when the field is not
	// in the document (a missing required field, say).
	Line int
}

// String renders the problem as "<path>: <detail> (line N)". The path and the
// line are left out when unknown rather than printed as "" or 0.
func (p Problem) String() string {
	var b strings.Builder
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Detail)
	if p.Line > 0 {
		fmt.Fprintf(&b, " (line %d)", p.Line)
	}
	return b.String()
}

// Problems is every problem found in one cloud-config. Parse returns it as its
// error so that callers can list all problems at once (errors.As or a type
// assertion) instead of fixing them one run at a time.
type Problems []Problem

// Error joins the problems one per line.
func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// normalize sorts problems by line, then path, then detail, and drops exact
// duplicates. Ordering by line reads like the file, top to bottom, and makes
// the output deterministic for tests and for diffing between runs.
func (ps Problems) normalize() Problems {
	out := slices.Clone(ps)
	slices.SortFunc(out, func(a, b Problem) int {
		return cmp.Or(
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Path, b.Path),
			cmp.Compare(a.Detail, b.Detail),
		)
	})
	return slices.Compact(out)
}
