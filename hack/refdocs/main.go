// Command refdocs writes docs/reference/<cloud>.md for every backend
// compiled into providers.Default: a table of the Service annotations the
// backend reads and a table of its cloud-config section, both taken from
// Go doc comments. It also writes the pages of the whole binary: flags.md
// (the command's flags), metrics.md (the descriptors of our metrics),
// events.md (the Event reasons recorded) and cloud-config.md (the top
// level). All come from the code, so the reference cannot drift from it
// (the freshness test in this package fails `make test` when it does).
// The backends' policy documents go to deploy/permissions.
//
// Run it with `go generate ./...`, `make docs` or `go run ./hack/refdocs`.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/multicloud-ccm/multicloud-ccm/providers"
	// Registers every backend of the default build; a slim build would
	// document only the backends it keeps.
	_ "github.com/multicloud-ccm/multicloud-ccm/providers/builtin"
)

func main() {
	out := flag.String("out", "", "directory for the pages (default: docs/reference under the module root)")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "refdocs:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	mod, err := findModule(".")
	if err != nil {
		return err
	}
	if out == "" {
		out = filepath.Join(mod.root, defaultOutDir)
	}
	pages, err := renderAll(mod, providers.Default)
	if err != nil {
		return err
	}
	if err := writePages(out, pages); err != nil {
		return err
	}
	policies, err := renderPolicies(providers.Default)
	if err != nil {
		return err
	}
	dir := filepath.Join(mod.root, permissionsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, doc := range policies {
		if err := os.WriteFile(filepath.Join(dir, name), doc, 0o644); err != nil {
			return err
		}
	}
	return nil
}
