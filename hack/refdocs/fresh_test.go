package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/multicloud-ccm/multicloud-ccm/providers"
)

// TestReferenceDocsFresh fails `make test` when docs/reference no longer
// matches the doc comments it is generated from.
func TestReferenceDocsFresh(t *testing.T) {
	mod := testModule(t)
	pages, err := renderAll(mod, providers.Default)
	if err != nil {
		t.Fatal(err)
	}
	if len(providers.Default.Compiled()) == 0 {
		t.Fatal("no backend registered: the blank import of providers/builtin is missing")
	}
	dir := filepath.Join(mod.root, defaultOutDir)
	const fix = "run `go generate ./...` (or `make docs`) and commit the result"
	for name, want := range pages {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%s/%s: %v; %s", defaultOutDir, name, err, fix)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s/%s is stale (first difference: %s); %s", defaultOutDir, name, firstDiff(got, want), fix)
		}
	}
	policies, err := renderPolicies(providers.Default)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range policies {
		got, err := os.ReadFile(filepath.Join(mod.root, permissionsDir, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s/%s is missing or stale (%v); %s", permissionsDir, name, err, fix)
		}
	}
	stale, err := stalePages(dir, pages)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range stale {
		t.Errorf("%s/%s is a generated page nothing generates any more (a backend no longer registered); %s", defaultOutDir, name, fix)
	}
}

// firstDiff names the first line where the committed page and the
// generated one differ, so the failure says what changed.
func firstDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d: committed %q, generated %q", i+1, gl, wl)
		}
	}
	return "none"
}
