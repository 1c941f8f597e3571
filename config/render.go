package config

import (
	"bytes"
	"fmt"
	"reflect"

	"go.yaml.in/yaml/v3"
)

// Render writes a cloud-config document for provider with section, keeping
// only the fields that are set: zero values are left out, so the document
// shows what was chosen and the defaults stay the defaults. Unlike
// Redacted it prints secrets: it is for writing a cloud-config file (the
// file is itself a Secret), never for logs. The section is not validated;
// Parse the result for that.
func Render(provider, clusterID string, section Section) ([]byte, error) {
	doc := &yaml.Node{Kind: yaml.MappingNode}
	str := func(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
	for _, kv := range [][2]string{
		{keyAPIVersion, APIVersion},
		{keyKind, Kind},
		{keyProvider, provider},
		{keyClusterID, clusterID},
	} {
		doc.Content = append(doc.Content, str(kv[0]), str(kv[1]))
	}
	if !isNil(section) {
		v := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle} // "gce: {}", not null
		if pruned := prune(reflect.ValueOf(section)); pruned != nil {
			v = &yaml.Node{}
			if err := v.Encode(pruned); err != nil {
				return nil, fmt.Errorf("config: encoding %s: %w", provider, err)
			}
		}
		doc.Content = append(doc.Content, str(provider), v)
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

// prune turns a section value into maps and lists holding only its set
// fields, keyed by their yaml names; inline structs merge into their
// parent. It returns nil for a value with nothing set.
func prune(v reflect.Value) any {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == durationType {
			if v.Int() == 0 {
				return nil
			}
			return v.Interface()
		}
		out := yaml.Node{Kind: yaml.MappingNode}
		addStruct(&out, v)
		if len(out.Content) == 0 {
			return nil
		}
		return &out
	case reflect.Slice, reflect.Array:
		if v.Len() == 0 {
			return nil
		}
		items := make([]any, 0, v.Len())
		for i := range v.Len() {
			items = append(items, prune(v.Index(i)))
		}
		return items
	case reflect.Map:
		if v.Len() == 0 {
			return nil
		}
		return v.Interface()
	default:
		if v.IsZero() {
			return nil
		}
		return v.Interface()
	}
}

// addStruct appends the set fields of struct v to the mapping node out,
// in declaration order.
func addStruct(out *yaml.Node, v reflect.Value) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, inline, skip := FieldKey(f)
		if skip {
			continue
		}
		fv := v.Field(i)
		if inline {
			for fv.Kind() == reflect.Pointer {
				if fv.IsNil() {
					break
				}
				fv = fv.Elem()
			}
			if fv.Kind() == reflect.Struct {
				addStruct(out, fv)
			}
			continue
		}
		if fv.Type() == durationType && fv.Int() != 0 {
			out.Content = append(out.Content,
				&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: name},
				&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: fv.Interface().(fmt.Stringer).String()})
			continue
		}
		p := prune(fv)
		if p == nil {
			continue
		}
		var node yaml.Node
		if err := node.Encode(p); err != nil {
			continue // Unreachable for config types; an unencodable field is left out.
		}
		out.Content = append(out.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: name}, &node)
	}
}
