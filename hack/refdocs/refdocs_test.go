package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/multicloud-ccm/multicloud-ccm/config"
	"github.com/multicloud-ccm/multicloud-ccm/hack/refdocs/testdata/fakecloud"
	"github.com/multicloud-ccm/multicloud-ccm/providers"
)

var update = flag.Bool("update", false, "rewrite testdata/fake.md from the generator's output")

const fakeDir = "testdata/fakecloud"
const fakeImportPath = "github.com/multicloud-ccm/multicloud-ccm/hack/refdocs/testdata/fakecloud"

func testModule(t *testing.T) *module {
	t.Helper()
	mod, err := findModule(".")
	if err != nil {
		t.Fatal(err)
	}
	if mod.path != "github.com/multicloud-ccm/multicloud-ccm" {
		t.Fatalf("module path %q", mod.path)
	}
	return mod
}

// The whole page of a small backend, byte for byte: layout, escaping,
// ordering. The table tests below say which rule each row comes from.
func TestRenderPageGolden(t *testing.T) {
	mod := testModule(t)
	got, err := renderPage(mod, "fake", providers.Backend{NewSection: func() config.Section { return &fakecloud.Section{} }})
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "fake.md")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("page differs from %s (go test ./hack/refdocs -run Golden -update rewrites it):\n%s", golden, got)
	}
	again, err := renderPage(mod, "fake", providers.Backend{NewSection: func() config.Section { return &fakecloud.Section{} }})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, again) {
		t.Error("two renders differ: the output is not deterministic")
	}
}

func TestReadAnnotations(t *testing.T) {
	got, err := readAnnotations(fakeDir, fakeImportPath)
	if err != nil {
		t.Fatal(err)
	}
	want := []annotation{
		{name: "fake.example.com/internal", constant: "annotationInternal", typ: "bool", def: "false",
			meaning: "Makes the load balancer internal."},
		{name: "fake.example.com/plain", constant: "annotationNoTypeNoDefault",
			meaning: "Has neither line, and its text spans two lines | with a pipe."},
		{name: "fake.example.com/zone", constant: "annotationZone", typ: "string",
			meaning: "Stands alone, outside a const group, and names a constant of a sibling package."},
		{name: "service.beta.kubernetes.io/load-balancer-source-ranges", constant: "annotationSourceRanges",
			typ: "comma-separated CIDRs", def: "everyone, unless spec.loadBalancerSourceRanges says otherwise",
			meaning: "Is another package's constant."},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
}

func TestSectionFields(t *testing.T) {
	mod := testModule(t)
	s := &fakecloud.Section{}
	s.SetDefaults()
	rows, err := sectionFields(mod, "fake", s)
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]field{}
	var order []string
	for _, r := range rows {
		byPath[r.path] = r
		order = append(order, r.path)
	}
	wantOrder := []string{
		// The inlined struct from another package comes first, flattened.
		"fake.requestTimeout", "fake.retries", "fake.token",
		"fake.region",
		"fake.auth", "fake.auth.user", "fake.auth.password",
		"fake.pools", "fake.pools[].name", "fake.pools[].size",
		"fake.labels",
		"fake.limits", "fake.limits.burst", "fake.limits.window",
		"fake.allowed",
		"fake.untagged",
	}
	if !reflect.DeepEqual(order, wantOrder) {
		t.Fatalf("paths\n%q\nwant\n%q", order, wantOrder)
	}
	for _, tc := range []struct {
		name string
		want field
	}{
		{"inlined field documented from its own package, default applied", field{path: "fake.requestTimeout", typ: "duration", def: "1m30s", meaning: "RequestTimeout bounds each call."}},
		{"pointer is its element type", field{path: "fake.retries", typ: "int", meaning: "Retries is optional; nil means the SDK default."}},
		{"secret tag on an inlined field", field{path: "fake.token", typ: "string", secret: true, meaning: "Token authenticates calls."}},
		{"plain default", field{path: "fake.region", typ: "string", def: "fk-1", meaning: "Region is where the cluster runs."}},
		{"secret inherited from the parent, default redacted", field{path: "fake.auth.password", typ: "string", def: config.Redacted, secret: true, meaning: "Password is secret because Auth is."}},
		{"list of structs", field{path: "fake.pools", typ: "list of object", meaning: "Pools are load-balancer pools."}},
		{"list item fields", field{path: "fake.pools[].size", typ: "int", meaning: "Size in members."}},
		{"map default in key order", field{path: "fake.labels", typ: "map of string to string", def: "{a: 1, b: 2}", meaning: "Labels are added to every resource | including pools."}},
		{"nested struct below a nil pointer", field{path: "fake.limits.window", typ: "duration", meaning: "Window is the averaging window."}},
		{"text type is a string", field{path: "fake.allowed", typ: "list of string", def: "[10.0.0.0/8, 192.0.2.0/24]", meaning: "Allowed are client CIDRs."}},
		{"untagged field named like the decoder does, line comment as doc", field{path: "fake.untagged", typ: "string", meaning: `no doc, no tag: the decoder calls it "untagged"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := byPath[tc.want.path]; got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestSplitAnnotationDoc(t *testing.T) {
	for _, tc := range []struct {
		name, text, ident             string
		wantMeaning, wantTyp, wantDef string
	}{
		{"both lines", "x does a.\n\nType: bool\nDefault: false\n", "x", "Does a.", "bool", "false"},
		{"neither line", "x does\na thing.\n", "x", "Does a thing.", "", ""},
		{"only type", "x does a.\n\nType: string\n", "x", "Does a.", "string", ""},
		{"continuation line", "x does a.\n\nType: list\nDefault: one\ntwo\n", "x", "Does a.", "list", "one two"},
		{"name not first", "Makes x.\n\nDefault: 1\n", "x", "Makes x.", "", "1"},
		{"empty", "", "x", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, ty, d := splitAnnotationDoc(tc.text, tc.ident)
			if m != tc.wantMeaning || ty != tc.wantTyp || d != tc.wantDef {
				t.Errorf("got (%q, %q, %q), want (%q, %q, %q)", m, ty, d, tc.wantMeaning, tc.wantTyp, tc.wantDef)
			}
		})
	}
}

func TestModulePath(t *testing.T) {
	for _, tc := range []struct{ gomod, want string }{
		{"module example.com/a\n\ngo 1.26\n", "example.com/a"},
		{"// comment\nmodule \"example.com/q\" // trailing\n", "example.com/q"},
		{"go 1.26\nmodule\texample.com/tab\n", "example.com/tab"},
	} {
		got, err := modulePath([]byte(tc.gomod))
		if err != nil || got != tc.want {
			t.Errorf("modulePath(%q) = %q, %v; want %q", tc.gomod, got, err, tc.want)
		}
	}
	if _, err := modulePath([]byte("go 1.26\n")); err == nil {
		t.Error("no module directive: want an error")
	}
}

func TestCellEscaping(t *testing.T) {
	for in, want := range map[string]string{
		"a | b":      `a \| b`,
		"two\nlines": "two lines",
	} {
		if got := cell(in); got != want {
			t.Errorf("cell(%q) = %q, want %q", in, got, want)
		}
	}
	if got, want := code("a`b|c"), "`` a`b\\|c ``"; got != want {
		t.Errorf("code = %q, want %q", got, want)
	}
}

// The writer replaces its own pages and removes those of backends no
// longer compiled in, but never a hand-written page.
func TestWritePages(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"gone.md":    generatedMarker + "\nold\n",
		"keep.md":    generatedMarker + "\nold\n",
		"written.md": "# by hand\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := writePages(dir, map[string][]byte{"keep.md": []byte(generatedMarker + "\nnew\n")}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "gone.md")); !os.IsNotExist(err) {
		t.Errorf("gone.md: want removed, got %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "keep.md")); !bytes.HasSuffix(b, []byte("new\n")) {
		t.Errorf("keep.md not rewritten: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "written.md")); string(b) != "# by hand\n" {
		t.Errorf("written.md changed: %q", b)
	}
}
