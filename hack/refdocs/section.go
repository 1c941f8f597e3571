package main

import (
	"encoding"
	"fmt"
	"go/ast"
	"go/token"
	"reflect"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/multicloud-ccm/multicloud-ccm/config"
)

// field is one row of the config table.
type field struct {
	path    string // YAML path from the section key, e.g. aws.routeTables.ids
	typ     string
	def     string
	secret  bool
	meaning string
}

var (
	durationType        = reflect.TypeFor[time.Duration]()
	yamlNodeType        = reflect.TypeFor[yaml.Node]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	textMarshalerType   = reflect.TypeFor[encoding.TextMarshaler]()
	yamlUnmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
)

// maxDepth stops a self-referencing section type (possible through
// pointers, slices and maps) from recursing forever.
const maxDepth = 16

// sectionWalker lists a section's fields with the same rules as the
// config decoder (config/decode.go): exported fields only, the yaml tag
// names a field (or the lower-cased Go name when it has none), "-" hides
// it, and ",inline" flattens a struct into its parent; secret:"true" marks
// the field and everything below it.
type sectionWalker struct {
	mod  *module
	docs map[reflect.Type]map[string]string // struct type -> Go field name -> doc
	rows []field
}

// sectionFields lists the fields of section (a pointer to a struct),
// taking each default from its value: pass a section after SetDefaults.
func sectionFields(mod *module, key string, section config.Section) ([]field, error) {
	v := reflect.ValueOf(section)
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil, fmt.Errorf("section of %q is a nil pointer", key)
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil, fmt.Errorf("section of %q is a %s, want a struct", key, v.Type())
	}
	w := &sectionWalker{mod: mod, docs: map[reflect.Type]map[string]string{}}
	if err := w.walkStruct(v.Type(), v, key, false, 0); err != nil {
		return nil, err
	}
	return w.rows, nil
}

// walkStruct adds the fields of struct type t below path. v is t's value
// for defaults, or invalid where there is none (list items, map values, a
// nil pointer).
func (w *sectionWalker) walkStruct(t reflect.Type, v reflect.Value, path string, secret bool, depth int) error {
	if depth > maxDepth {
		return nil
	}
	docs, err := w.fieldDocs(t)
	if err != nil {
		return err
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		// The decoder's own reading of the field, so the page can never
		// name a key the decoder would not accept.
		name, inline, skip := config.FieldKey(f)
		if skip {
			continue
		}
		isSecret := secret || config.IsSecretField(f)
		var fv reflect.Value
		if v.IsValid() {
			fv = v.Field(i)
		}
		if inline {
			ft, fv := deref(f.Type, fv)
			switch {
			case ft.Kind() == reflect.Struct:
				if err := w.walkStruct(ft, fv, path, isSecret, depth+1); err != nil {
					return err
				}
			case ft.Kind() == reflect.Map:
				w.rows = append(w.rows, field{path: path + ".<key>", typ: typeName(ft.Elem()), secret: isSecret, meaning: paragraph(docs[f.Name])})
			}
			continue
		}
		if err := w.walkValue(f.Type, fv, path+"."+name, isSecret, paragraph(docs[f.Name]), depth); err != nil {
			return err
		}
	}
	return nil
}

// walkValue adds the row for one field and, for structs and collections
// of structs, the rows of their fields.
func (w *sectionWalker) walkValue(t reflect.Type, v reflect.Value, path string, secret bool, meaning string, depth int) error {
	row := field{path: path, typ: typeName(t), secret: secret, meaning: meaning}
	if v.IsValid() && !v.IsZero() && (isLeaf(t) || !hasStruct(t)) {
		row.def = formatValue(v)
		if secret {
			row.def = config.Redacted // a default is still a secret's value
		}
	}
	w.rows = append(w.rows, row)
	if isLeaf(t) {
		return nil
	}
	et, ev := deref(t, v)
	switch et.Kind() {
	case reflect.Struct:
		return w.walkStruct(et, ev, path, secret, depth+1)
	case reflect.Slice, reflect.Array:
		if it, _ := deref(et.Elem(), reflect.Value{}); it.Kind() == reflect.Struct && !isLeaf(it) {
			return w.walkStruct(it, reflect.Value{}, path+"[]", secret, depth+1)
		}
	case reflect.Map:
		if it, _ := deref(et.Elem(), reflect.Value{}); it.Kind() == reflect.Struct && !isLeaf(it) {
			return w.walkStruct(it, reflect.Value{}, path+".<key>", secret, depth+1)
		}
	}
	return nil
}

// deref follows pointers in t and, as far as it is non-nil, in v.
func deref(t reflect.Type, v reflect.Value) (reflect.Type, reflect.Value) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
		if v.IsValid() && !v.IsNil() {
			v = v.Elem()
		} else {
			v = reflect.Value{}
		}
	}
	return t, v
}

// isLeaf reports whether the decoder reads t as one value rather than
// walking into it: durations, free-form nodes and types that unmarshal
// themselves.
func isLeaf(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == durationType || t == yamlNodeType {
		return true
	}
	pt := reflect.PointerTo(t)
	return pt.Implements(textUnmarshalerType) || pt.Implements(yamlUnmarshalerType)
}

// hasStruct reports whether t is or holds a struct the table expands; its
// default is then shown on the expanded rows rather than as one blob.
func hasStruct(t reflect.Type) bool {
	for {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			t = t.Elem()
		case reflect.Struct:
			return !isLeaf(t)
		default:
			return false
		}
	}
}

// typeName says what to write in YAML, not the Go type.
func typeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == durationType:
		return "duration"
	case t == yamlNodeType:
		return "any"
	case reflect.PointerTo(t).Implements(yamlUnmarshalerType):
		return t.String() // its own YAML form; the meaning must say what it is
	case reflect.PointerTo(t).Implements(textUnmarshalerType):
		return "string"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "int"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "unsigned int"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "string (bytes; base64 when tagged !!binary)"
		}
		return "list of " + typeName(t.Elem())
	case reflect.Array:
		return fmt.Sprintf("list of %d %s", t.Len(), typeName(t.Elem()))
	case reflect.Map:
		return "map of " + typeName(t.Key()) + " to " + typeName(t.Elem())
	case reflect.Struct:
		return "object"
	case reflect.Interface:
		return "any"
	}
	return t.String()
}

// formatValue writes a default the way a user would write it in YAML
// flow style.
func formatValue(v reflect.Value) string {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	if v.Type() == durationType {
		return shortDuration(time.Duration(v.Int()))
	}
	if v.Type().Implements(textMarshalerType) {
		if b, err := v.Interface().(encoding.TextMarshaler).MarshalText(); err == nil {
			return string(b)
		}
	}
	switch v.Kind() {
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return string(v.Bytes())
		}
		items := make([]string, v.Len())
		for i := range items {
			items[i] = formatValue(v.Index(i))
		}
		return "[" + strings.Join(items, ", ") + "]"
	case reflect.Map:
		items := make([]string, 0, v.Len())
		for it := v.MapRange(); it.Next(); {
			items = append(items, formatValue(it.Key())+": "+formatValue(it.Value()))
		}
		sort.Strings(items) // map order is random; the page must not be
		return "{" + strings.Join(items, ", ") + "}"
	}
	return fmt.Sprint(v.Interface())
}

// shortDuration drops the zero units time.Duration.String adds ("1m0s"
// -> "1m"); both parse to the same value.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// fieldDocs returns the doc comments of t's fields, read from the source
// of the package that declares t, so a struct inlined from another
// package is documented by its own comments. Types outside this module
// have none.
func (w *sectionWalker) fieldDocs(t reflect.Type) (map[string]string, error) {
	if docs, ok := w.docs[t]; ok {
		return docs, nil
	}
	docs := map[string]string{}
	w.docs[t] = docs
	dir, ok := w.mod.dir(t.PkgPath())
	if !ok || t.Name() == "" {
		return docs, nil
	}
	files, err := parseDir(token.NewFileSet(), dir)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				if st, ok := ts.Type.(*ast.StructType); ok && ts.Name.Name == t.Name() {
					addFieldDocs(docs, st)
				}
			}
		}
	}
	return docs, nil
}

func addFieldDocs(docs map[string]string, st *ast.StructType) {
	for _, fl := range st.Fields.List {
		doc := fl.Doc
		if doc == nil {
			doc = fl.Comment
		}
		text := ""
		if doc != nil {
			text = doc.Text()
		}
		if len(fl.Names) == 0 { // embedded: named after its type
			docs[embeddedName(fl.Type)] = text
		}
		for _, n := range fl.Names {
			docs[n.Name] = text
		}
	}
}

// embeddedName is the field name Go gives an embedded field of type expr.
func embeddedName(expr ast.Expr) string {
	switch e := expr.(type) {
	case *ast.StarExpr:
		return embeddedName(e.X)
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.Ident:
		return e.Name
	case *ast.IndexExpr:
		return embeddedName(e.X)
	case *ast.IndexListExpr:
		return embeddedName(e.X)
	}
	return ""
}
