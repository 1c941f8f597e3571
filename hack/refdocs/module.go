package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// defaultOutDir is where the pages live, relative to the module root.
const defaultOutDir = "docs/reference"

// module locates Go source by import path. Only packages of this module
// are mapped, because the doc comments the pages are made of are ours.
type module struct {
	root string // directory holding go.mod
	path string // module path from go.mod
}

// findModule walks up from dir to the nearest go.mod, the way the go
// command does, so the generator works from any directory of the module
// (go generate runs it from the directory of the directive).
func findModule(dir string) (*module, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	for d := abs; ; d = filepath.Dir(d) {
		data, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil {
			path, err := modulePath(data)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", filepath.Join(d, "go.mod"), err)
			}
			return &module{root: d, path: path}, nil
		}
		if !os.IsNotExist(err) {
			return nil, err
		}
		if filepath.Dir(d) == d {
			return nil, fmt.Errorf("no go.mod in %s or any parent", abs)
		}
	}
}

// modulePath reads the module directive. golang.org/x/mod is not a
// dependency of this module, and the directive's grammar is one line.
func modulePath(gomod []byte) (string, error) {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "//")
		f := strings.Fields(line)
		if len(f) != 2 || f[0] != "module" {
			continue
		}
		if unq, err := strconv.Unquote(f[1]); err == nil {
			return unq, nil
		}
		return f[1], nil
	}
	return "", fmt.Errorf("no module directive")
}

// dir returns the source directory of an import path in this module.
func (m *module) dir(importPath string) (string, bool) {
	if importPath == m.path {
		return m.root, true
	}
	rel, ok := strings.CutPrefix(importPath, m.path+"/")
	if !ok {
		return "", false
	}
	return filepath.Join(m.root, filepath.FromSlash(rel)), true
}

// rel is dir relative to the module root, slash-separated, for the pages.
func (m *module) rel(dir string) string {
	r, err := filepath.Rel(m.root, dir)
	if err != nil {
		return dir
	}
	return filepath.ToSlash(r)
}
