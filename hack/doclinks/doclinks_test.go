package doclinks

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRepositoryLinks is the check `make test` runs: every relative link
// and anchor in the project's Markdown resolves.
func TestRepositoryLinks(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files, err := Files(root)
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	if !slices.Contains(files, "README.md") {
		t.Fatalf("README.md not among the Markdown files %v", files)
	}
	problems, err := Check(root, files)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	t.Logf("%d Markdown files checked", len(files))
	lost, err := Unreachable(root, "README.md", "docs/", files)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range lost {
		t.Errorf("%s: no chain of links from README.md reaches it", f)
	}
}

func TestUnreachable(t *testing.T) {
	root := t.TempDir()
	for name, body := range map[string]string{
		"README.md":      "[docs](docs/README.md)",
		"docs/README.md": "[a](a/page.md)",
		"docs/a/page.md": "[back](../README.md) [b](../b.md)",
		"docs/b.md":      "",
		"docs/lost.md":   "[a](a/page.md)",
	} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Unreachable(root, "README.md", "docs/", []string{"README.md", "docs/README.md", "docs/a/page.md", "docs/b.md", "docs/lost.md"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"docs/lost.md"}) {
		t.Errorf("Unreachable = %v, want [docs/lost.md]", got)
	}
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Quick start":                            "quick-start",
		"Self-healing: drift repair and orphans": "self-healing-drift-repair-and-orphans",
		"`make test` and CI":                     "make-test-and-ci",
		"AWS (EC2, ELB)":                         "aws-ec2-elb",
		"See [the docs](docs/x.md) now":          "see-the-docs-now",
		"IPv6 / dual-stack":                      "ipv6--dual-stack",
	} {
		if got := Slug(in); got != want {
			t.Errorf("Slug(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCheckFindsBrokenLinks: a missing file, a missing anchor and a
// fragment on a non-Markdown file are each reported; links in code are
// not read; repeated headings get GitHub's -1 suffix.
func TestCheckFindsBrokenLinks(t *testing.T) {
	root := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docs/guide.md", "# Guide\n\n## Setup\n\n## Setup\n\n<a id=\"custom\"></a>\n")
	write("main.go", "package main\n")
	write("README.md", strings.Join([]string{
		"[ok](docs/guide.md#setup) [ok2](docs/guide.md#setup-1) [ok3](docs/guide.md#custom)",
		"[self](#top) [ext](https://example.com/x#y) [file](main.go)",
		"[gone](docs/missing.md) [noanchor](docs/guide.md#install)",
		"[frag](main.go#L1)",
		"`[code](nowhere.md)`",
		"```",
		"[fenced](nowhere.md)",
		"```",
		"[ref]: docs/other.md",
		"# Top",
	}, "\n"))
	problems, err := Check(root, []string{"README.md", "docs/guide.md"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.Target)
	}
	want := []string{"docs/missing.md", "docs/guide.md#install", "main.go#L1", "docs/other.md"}
	if !slices.Equal(got, want) {
		t.Errorf("problems %v, want %v", problems, want)
	}
}
