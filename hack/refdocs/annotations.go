package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/build"
	"go/constant"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// annotationType is how a backend declares a Service annotation it reads:
// a constant whose declared type is <pkg>.Annotation, where <pkg> is a
// package named svcopts (providers/internal/svcopts in this module).
const (
	annotationTypeName = "Annotation"
	annotationPkgName  = "svcopts"
)

// annotation is one row of the annotation table.
type annotation struct {
	name     string // the annotation key users write
	constant string // the Go constant, to tell duplicates apart
	typ      string // from the "Type:" line
	def      string // from the "Default:" line
	meaning  string // the rest of the doc comment, one paragraph
}

// readAnnotations finds every svcopts.Annotation constant in the non-test
// Go files of the package in dir (importPath). The values are resolved by
// type-checking the package, so a constant defined as another package's
// constant (v1.AnnotationLoadBalancerSourceRangesKey) documents its real
// value.
func readAnnotations(dir, importPath string) ([]annotation, error) {
	fset := token.NewFileSet()
	files, err := parseDir(fset, dir)
	if err != nil {
		return nil, err
	}
	type candidate struct {
		name *ast.Ident
		typ  *ast.SelectorExpr
		doc  *ast.CommentGroup
	}
	var found []candidate
	for _, f := range files {
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				sel, ok := vs.Type.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != annotationTypeName {
					continue
				}
				doc := vs.Doc
				if doc == nil && !gd.Lparen.IsValid() {
					doc = gd.Doc // const x T = "..." without parentheses
				}
				if doc == nil {
					doc = vs.Comment
				}
				for _, n := range vs.Names {
					if n.Name != "_" {
						found = append(found, candidate{name: n, typ: sel, doc: doc})
					}
				}
			}
		}
	}
	if len(found) == 0 {
		return nil, nil // Type-checking costs a `go list`; skip it when there is nothing to resolve.
	}

	imp, err := exportImporter(fset, dir)
	if err != nil {
		return nil, err
	}
	info := &types.Info{Defs: map[*ast.Ident]types.Object{}, Uses: map[*ast.Ident]types.Object{}}
	// Function bodies cannot change a package-level constant; skipping
	// them keeps the check fast.
	conf := types.Config{Importer: imp, IgnoreFuncBodies: true}
	if _, err := conf.Check(importPath, fset, files, info); err != nil {
		return nil, fmt.Errorf("type-check %s: %w", importPath, err)
	}

	var out []annotation
	for _, c := range found {
		pkgIdent, ok := c.typ.X.(*ast.Ident)
		if !ok {
			continue
		}
		pn, ok := info.Uses[pkgIdent].(*types.PkgName)
		if !ok || pn.Imported().Name() != annotationPkgName {
			continue
		}
		obj, ok := info.Defs[c.name].(*types.Const)
		if !ok || obj.Val().Kind() != constant.String {
			return nil, fmt.Errorf("%s: %s is not a string constant", fset.Position(c.name.Pos()), c.name.Name)
		}
		a := annotation{name: constant.StringVal(obj.Val()), constant: c.name.Name}
		a.meaning, a.typ, a.def = splitAnnotationDoc(c.doc.Text(), c.name.Name)
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].name != out[j].name {
			return out[i].name < out[j].name
		}
		return out[i].constant < out[j].constant
	})
	return out, nil
}

// parseDir parses the files `go build` would compile in dir for this
// platform, tests excluded, with comments.
func parseDir(fset *token.FileSet, dir string) ([]*ast.File, error) {
	bp, err := build.ImportDir(dir, 0)
	if err != nil {
		return nil, fmt.Errorf("read package in %s: %w", dir, err)
	}
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// exportImporter imports the dependencies of the package in dir from the
// compiler's export data, located with `go list -export`. Type-checking
// them from source instead (importer "source") re-checks every dependency,
// which for the AWS SDK takes minutes; the export data is already in the
// build cache because the generator itself links every backend.
func exportImporter(fset *token.FileSet, dir string) (types.Importer, error) {
	cmd := exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}", ".")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -export in %s: %w: %s", dir, err, strings.TrimSpace(stderr.String()))
	}
	exports := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if path, file, ok := strings.Cut(line, "\t"); ok && file != "" {
			exports[path] = file
		}
	}
	return importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %q", path)
		}
		return os.Open(file)
	}), nil
}

// splitAnnotationDoc takes the "Type:" and "Default:" lines out of an
// annotation's doc comment and joins the rest into one paragraph. A line
// that follows a Type:/Default: line without a blank line in between
// continues it, so a long default may wrap. The leading constant name
// (Go doc style) is dropped: users write the annotation, never the Go name.
func splitAnnotationDoc(text, ident string) (meaning, typ, def string) {
	var rest []string
	var cur *string
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "Type:"):
			typ = strings.TrimSpace(strings.TrimPrefix(trimmed, "Type:"))
			cur = &typ
		case strings.HasPrefix(trimmed, "Default:"):
			def = strings.TrimSpace(strings.TrimPrefix(trimmed, "Default:"))
			cur = &def
		case trimmed == "":
			cur = nil
			rest = append(rest, "")
		case cur != nil:
			*cur += " " + trimmed
		default:
			rest = append(rest, trimmed)
		}
	}
	meaning = paragraph(strings.Join(rest, " "))
	if first, after, ok := strings.Cut(meaning, " "); ok && first == ident {
		meaning = upperFirst(after)
	}
	return meaning, typ, def
}

// paragraph collapses all white space, so a doc comment becomes one line
// of a table cell.
func paragraph(s string) string { return strings.Join(strings.Fields(s), " ") }

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
