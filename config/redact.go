package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxRedactDepth bounds recursion through section values. Config types are
// shallow; the bound only matters for a self-referencing value, which is
// cut off (dropped, so nothing unredacted can slip through) rather than
// followed forever.
const maxRedactDepth = 64

// Redacted returns the effective config as YAML: apiVersion, kind, provider
// (or providers and loadBalancerProvider), clusterID, then each provider's
// section (defaults applied) under a key named after the provider. Every non-empty string at or below a field
// tagged secret:"true" reads "<redacted>". c is not modified.
func (c *CloudConfig) Redacted() ([]byte, error) {
	if c == nil {
		return nil, errors.New("config: Redacted called on a nil *CloudConfig")
	}
	doc := &yaml.Node{Kind: yaml.MappingNode}
	add := func(key string, value any) error {
		var v yaml.Node
		if err := v.Encode(value); err != nil {
			return fmt.Errorf("config: encoding %s: %w", key, err)
		}
		doc.Content = append(doc.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, &v)
		return nil
	}
	type entry struct {
		key   string
		value any
	}
	head := []entry{{keyAPIVersion, c.APIVersion}, {keyKind, c.Kind}}
	if c.Hybrid() {
		head = append(head, entry{keyProviders, c.Providers}, entry{keyLoadBalancerProvider, c.LoadBalancerProvider})
	} else {
		head = append(head, entry{keyProvider, c.Provider})
	}
	head = append(head, entry{keyClusterID, c.ClusterID})
	if c.Orphans != "" {
		head = append(head, entry{keyOrphans, c.Orphans})
	}
	for _, kv := range head {
		if err := add(kv.key, kv.value); err != nil {
			return nil, err
		}
	}
	for _, p := range c.Providers {
		if section := c.Sections[p]; !isNil(section) {
			if err := add(p, redactCopy(reflect.ValueOf(section), false, 0).Interface()); err != nil {
				return nil, err
			}
		}
	}
	if !isNil(c.Section) {
		key := c.Provider
		if key == "" {
			key = "section" // Not from Parse; still show what there is.
		}
		copied := redactCopy(reflect.ValueOf(c.Section), false, 0)
		if err := add(key, copied.Interface()); err != nil {
			return nil, err
		}
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("config: encoding cloud-config: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("config: encoding cloud-config: %w", err)
	}
	return buf.Bytes(), nil
}

// String returns the redacted YAML, so printing a config with %v or %s
// (or logging it) never shows a secret. It has a value receiver so that a
// CloudConfig printed by value is covered too.
func (c CloudConfig) String() string {
	out, err := c.Redacted()
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(out)
}

// GoString makes %#v redacted too; its default would print the section's
// fields, secrets included.
func (c CloudConfig) GoString() string {
	return c.String()
}

// redactCopy returns a deep copy of v with every non-empty string (and
// []byte) at or below a secret field replaced by Redacted. Copying instead
// of editing in place keeps Redacted free of side effects on the config
// that the controllers use.
func redactCopy(v reflect.Value, secret bool, depth int) reflect.Value {
	t := v.Type()
	if depth > maxRedactDepth {
		return reflect.Zero(t)
	}
	switch t.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		out := reflect.New(t.Elem())
		out.Elem().Set(redactCopy(v.Elem(), secret, depth+1))
		return out
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		out := reflect.New(t).Elem()
		out.Set(redactCopy(v.Elem(), secret, depth+1))
		return out
	case reflect.Struct:
		// Copy the whole struct first so unexported fields keep their
		// values, then replace the exported ones with redacted copies.
		out := reflect.New(t).Elem()
		out.Set(v)
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			out.Field(i).Set(redactCopy(v.Field(i), secret || f.Tag.Get("secret") == "true", depth+1))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeMapWithSize(t, v.Len())
		for it := v.MapRange(); it.Next(); {
			out.SetMapIndex(it.Key(), redactCopy(it.Value(), secret, depth+1))
		}
		return out
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		if secret && t.Elem().Kind() == reflect.Uint8 {
			if v.Len() == 0 {
				return v
			}
			return reflect.ValueOf([]byte(Redacted)).Convert(t)
		}
		out := reflect.MakeSlice(t, v.Len(), v.Len())
		for i := range v.Len() {
			out.Index(i).Set(redactCopy(v.Index(i), secret, depth+1))
		}
		return out
	case reflect.Array:
		out := reflect.New(t).Elem()
		for i := range v.Len() {
			out.Index(i).Set(redactCopy(v.Index(i), secret, depth+1))
		}
		return out
	case reflect.String:
		if secret && v.Len() > 0 {
			return reflect.ValueOf(Redacted).Convert(t)
		}
	}
	return v
}

// secretSet is what a decoded section holds that must never be printed:
// the paths of its secret fields and their non-empty string values.
type secretSet struct {
	paths  []string
	values []string
}

// collectSecrets walks section value v (rooted at path) for secret fields.
func collectSecrets(v reflect.Value, path *field.Path) *secretSet {
	s := &secretSet{}
	s.walk(v, path, false, 0)
	// Longest first, so a secret that contains another is replaced whole.
	slices.SortFunc(s.values, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	s.values = slices.Compact(s.values)
	return s
}

func (s *secretSet) walk(v reflect.Value, path *field.Path, secret bool, depth int) {
	if depth > maxRedactDepth {
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			s.walk(v.Elem(), path, secret, depth+1)
		}
	case reflect.Struct:
		si := structInfoOf(v.Type())
		for name, fi := range si.fields {
			child := path.Child(name)
			if fi.secret {
				s.paths = append(s.paths, child.String())
			}
			if fv, ok := fieldByIndexNoAlloc(v, fi.index); ok {
				s.walk(fv, child, secret || fi.secret, depth+1)
			}
		}
		if si.inlineMap != nil {
			if fv, ok := fieldByIndexNoAlloc(v, si.inlineMap); ok {
				for it := fv.MapRange(); it.Next(); {
					s.walk(it.Value(), path.Child(it.Key().String()), secret, depth+1)
				}
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			s.walk(it.Value(), path.Key(fmt.Sprint(it.Key().Interface())), secret, depth+1)
		}
	case reflect.Slice, reflect.Array:
		if secret && v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			if v.Len() > 0 {
				s.values = append(s.values, string(v.Bytes()))
			}
			return
		}
		for i := range v.Len() {
			s.walk(v.Index(i), path.Index(i), secret, depth+1)
		}
	case reflect.String:
		if secret && v.Len() > 0 {
			s.values = append(s.values, v.String())
		}
	}
}

// fieldByIndexNoAlloc is v.FieldByIndex that stops at a nil pointer instead
// of panicking or allocating.
func fieldByIndexNoAlloc(v reflect.Value, index []int) (reflect.Value, bool) {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, true
}

// coversPath reports whether p is a secret field or lies below one.
func (s *secretSet) coversPath(p string) bool {
	for _, sp := range s.paths {
		if isUnder(p, sp) {
			return true
		}
	}
	return false
}

// contains reports whether text includes any secret value.
func (s *secretSet) contains(text string) bool {
	for _, v := range s.values {
		if strings.Contains(text, v) {
			return true
		}
	}
	return false
}

// scrub replaces every secret value in text with Redacted. A single
// strings.Replacer pass cannot re-match inside an inserted "<redacted>".
func (s *secretSet) scrub(text string) string {
	if len(s.values) == 0 || !s.contains(text) {
		return text
	}
	args := make([]string, 0, 2*len(s.values))
	for _, v := range s.values {
		args = append(args, v, Redacted)
	}
	return strings.NewReplacer(args...).Replace(text)
}

// errorBody is err.ErrorBody() unless that could show a secret: for a
// secret path, or when the rendered value includes a secret, the body is
// rebuilt from the error type and detail with the value left out, e.g.
// "Invalid value: <redacted>: must be 40 characters".
func (s *secretSet) errorBody(err *field.Error) string {
	body := err.ErrorBody()
	if !s.coversPath(err.Field) && !s.contains(body) {
		return body
	}
	switch err.Type {
	case field.ErrorTypeRequired, field.ErrorTypeForbidden, field.ErrorTypeTooLong,
		field.ErrorTypeTooShort, field.ErrorTypeInternal:
		// These carry no value in their text.
		body = err.Type.String()
	default:
		body = err.Type.String() + ": " + Redacted
	}
	if err.Detail != "" {
		body += ": " + err.Detail
	}
	return s.scrub(body)
}
