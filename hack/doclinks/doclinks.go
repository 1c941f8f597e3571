// Package doclinks checks the project's Markdown: every relative link
// names a file that exists and, with a #fragment, an anchor that file
// has, as GitHub renders it. The docs tree is read by following links;
// a renamed heading or a moved page must fail `make test`, not a reader.
package doclinks

import (
	"bufio"
	"bytes"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// Problem is one link that does not resolve.
type Problem struct {
	File   string // the Markdown file, relative to the root
	Line   int
	Target string // the link as written
	Reason string
}

func (p Problem) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", p.File, p.Line, p.Target, p.Reason)
}

// Files are the Markdown files git tracks under root (so build outputs
// and module caches are never read), relative to root.
func Files(root string) ([]string, error) {
	out, err := exec.Command("git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard", "*.md").Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	var files []string
	for _, f := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f != "" && !strings.Contains(f, "/testdata/") {
			files = append(files, f)
		}
	}
	return files, nil
}

// Check resolves every relative link of the files (paths relative to
// root).
func Check(root string, files []string) ([]Problem, error) {
	anchors := map[string]map[string]bool{} // by file, cached
	anchorsOf := func(rel string) (map[string]bool, error) {
		if a, ok := anchors[rel]; ok {
			return a, nil
		}
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return nil, err
		}
		a := Anchors(data)
		anchors[rel] = a
		return a, nil
	}
	var problems []Problem
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return nil, err
		}
		for _, l := range Links(data) {
			if p, ok := resolve(root, f, l, anchorsOf); !ok {
				problems = append(problems, p)
			}
		}
	}
	return problems, nil
}

// resolve checks one link of file f.
func resolve(root, f string, l Link, anchorsOf func(string) (map[string]bool, error)) (Problem, bool) {
	bad := func(reason string) (Problem, bool) {
		return Problem{File: f, Line: l.Line, Target: l.Target, Reason: reason}, false
	}
	u, err := url.Parse(l.Target)
	if err != nil {
		return bad("not a URL: " + err.Error())
	}
	if u.Scheme != "" || u.Host != "" {
		return Problem{}, true // external: not checked offline
	}
	target := f
	if u.Path != "" {
		if strings.HasPrefix(u.Path, "/") {
			target = strings.TrimPrefix(u.Path, "/")
		} else {
			target = filepath.ToSlash(filepath.Join(filepath.Dir(f), u.Path))
		}
		info, err := os.Stat(filepath.Join(root, target))
		if err != nil {
			return bad("no such file " + target)
		}
		if info.IsDir() || !strings.HasSuffix(target, ".md") {
			if u.Fragment != "" {
				return bad("a fragment on a link to something not Markdown")
			}
			return Problem{}, true
		}
	}
	if u.Fragment == "" {
		return Problem{}, true
	}
	a, err := anchorsOf(target)
	if err != nil {
		return bad(err.Error())
	}
	if !a[u.Fragment] {
		return bad(fmt.Sprintf("no anchor #%s in %s", u.Fragment, target))
	}
	return Problem{}, true
}

// Link is one link of a Markdown file.
type Link struct {
	Line   int
	Target string
}

var (
	// inlineLink is [text](target) or [text](target "title"); the text
	// may hold code spans and one level of brackets.
	inlineLink = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// refDef is a reference definition: [label]: target
	refDef = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$`)
	// htmlHref is an HTML link in Markdown.
	htmlHref = regexp.MustCompile(`<a\s[^>]*href="([^"]+)"`)
	codeSpan = regexp.MustCompile("`+[^`]*`+")
)

// Links are the links of a Markdown file, outside code blocks and code
// spans.
func Links(data []byte) []Link {
	var out []Link
	eachProseLine(data, func(n int, line string) {
		line = codeSpan.ReplaceAllString(line, "``")
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			out = append(out, Link{Line: n, Target: m[1]})
		}
		for _, m := range htmlHref.FindAllStringSubmatch(line, -1) {
			out = append(out, Link{Line: n, Target: m[1]})
		}
		if m := refDef.FindStringSubmatch(line); m != nil {
			out = append(out, Link{Line: n, Target: m[1]})
		}
	})
	return out
}

var (
	heading  = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	htmlID   = regexp.MustCompile(`<a\s[^>]*(?:id|name)="([^"]+)"`)
	linkText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// Anchors are the fragments a Markdown file answers: its headings as
// GitHub makes their IDs (lower case, punctuation dropped, spaces to
// hyphens, a repeated one suffixed -1, -2, ...) and explicit HTML ids.
func Anchors(data []byte) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	eachProseLine(data, func(_ int, line string) {
		for _, m := range htmlID.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			return
		}
		slug := Slug(m[2])
		id := slug
		if n := seen[slug]; n > 0 {
			id = fmt.Sprintf("%s-%d", slug, n)
		}
		seen[slug]++
		out[id] = true
	})
	return out
}

// Slug is GitHub's anchor for a heading's text.
func Slug(text string) string {
	text = linkText.ReplaceAllString(text, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// eachProseLine calls fn with every line outside fenced code blocks,
// numbered from 1.
func eachProseLine(data []byte, fn func(n int, line string)) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	fence := ""
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		fn(n, line)
	}
}

// Unreachable are the files under dir (relative to root, e.g. "docs/")
// that no chain of relative links from start reaches: a page a reader of
// the README can never find.
func Unreachable(root, start, dir string, files []string) ([]string, error) {
	seen := map[string]bool{start: true}
	queue := []string{start}
	for len(queue) > 0 {
		f := queue[0]
		queue = queue[1:]
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return nil, err
		}
		for _, l := range Links(data) {
			u, err := url.Parse(l.Target)
			if err != nil || u.Scheme != "" || u.Host != "" || u.Path == "" {
				continue
			}
			target := filepath.ToSlash(filepath.Join(filepath.Dir(f), u.Path))
			if strings.HasPrefix(u.Path, "/") {
				target = strings.TrimPrefix(u.Path, "/")
			}
			if strings.HasSuffix(target, ".md") && !seen[target] {
				seen[target] = true
				queue = append(queue, target)
			}
		}
	}
	var out []string
	for _, f := range files {
		if strings.HasPrefix(f, dir) && !seen[f] {
			out = append(out, f)
		}
	}
	return out, nil
}
