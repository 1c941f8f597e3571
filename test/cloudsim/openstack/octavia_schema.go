package openstack

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Octavia validates request bodies with WSME types
// (octavia/api/v2/types): unknown attributes are refused, mandatory ones
// must be there, each value is converted and checked against its type,
// and the first failure is a 400 worded by WSME. ovSchema describes one
// such type; decode turns a JSON object into an ovObj holding Go values,
// absent keys being WSME's Unset and JSON null being None (nil).

type ovKind int

const (
	ovText       ovKind = iota // wtypes.text: any string
	ovString                   // StringType: length and pattern
	ovInt                      // IntegerType: range
	ovBool                     // bool
	ovUUID                     // UuidType, normalised as uuid.UUID does
	ovIP                       // IPAddressType
	ovEnum                     // Enum(str, ...)
	ovFloatEnum                // Enum(float, ...)
	ovStrList                  // [StringType]
	ovCIDRList                 // [CidrType], normalised to the network
	ovStrMap                   // DictType(str, StringType)
	ovObject                   // a nested type
	ovObjectList               // a list of a nested type
)

// ovField is one wsattr.
type ovField struct {
	name    string
	kind    ovKind
	minLen  int
	maxLen  int
	pattern *regexp.Regexp
	// check validates a string beyond length and pattern; checkMsg is
	// its failure message.
	check     func(string) bool
	checkMsg  string
	min, max  *int
	enum      []string
	mandatory bool
	// def is the wsattr default, set when the attribute is absent.
	def any
	// since is the API minor version that added the attribute; the
	// attribute is unknown to older deployments.
	since int
	sub   ovSchema
}

type ovSchema []ovField

// ovObj is a decoded object: absent keys are Unset, nil values None.
type ovObj map[string]any

func (o ovObj) has(k string) bool { _, ok := o[k]; return ok }

// set reports whether k is present and not None.
func (o ovObj) set(k string) bool { return o[k] != nil }

func (o ovObj) str(k string) string {
	s, _ := o[k].(string)
	return s
}

// strp is k as an optional string: nil when Unset or None.
func (o ovObj) strp(k string) *string {
	s, ok := o[k].(string)
	if !ok {
		return nil
	}
	return &s
}

func (o ovObj) num(k string) int {
	n, _ := o[k].(int)
	return n
}

func (o ovObj) nump(k string) *int {
	n, ok := o[k].(int)
	if !ok {
		return nil
	}
	return &n
}

func (o ovObj) flag(k string) bool {
	b, _ := o[k].(bool)
	return b
}

func (o ovObj) strs(k string) []string {
	s, _ := o[k].([]string)
	return s
}

func (o ovObj) strMap(k string) map[string]string {
	m, _ := o[k].(map[string]string)
	return m
}

func (o ovObj) obj(k string) ovObj {
	v, _ := o[k].(ovObj)
	return v
}

func (o ovObj) objs(k string) []ovObj {
	v, _ := o[k].([]ovObj)
	return v
}

func ovIntPtr(n int) *int { return &n }

// Field constructors, named after the WSME types.
func ovStr(name string, maxLen int) ovField {
	return ovField{name: name, kind: ovString, maxLen: maxLen}
}
func ovIntF(name string, lo, hi *int) ovField {
	return ovField{name: name, kind: ovInt, min: lo, max: hi}
}
func ovBoolF(name string) ovField { return ovField{name: name, kind: ovBool} }
func ovUUIDF(name string) ovField { return ovField{name: name, kind: ovUUID} }
func ovIPF(name string) ovField   { return ovField{name: name, kind: ovIP} }
func ovEnumF(name string, values ...string) ovField {
	return ovField{name: name, kind: ovEnum, enum: values}
}
func ovTags() ovField {
	return ovField{name: "tags", kind: ovStrList, maxLen: 255, since: 5}
}

func (f ovField) req() ovField           { f.mandatory = true; return f }
func (f ovField) dflt(v any) ovField     { f.def = v; return f }
func (f ovField) from(minor int) ovField { f.since = minor; return f }

// errOvInvalidInput is WSME's InvalidInput.
func errOvInvalidInput(field string, value any, msg string) *apiError {
	return octaviaErr(http.StatusBadRequest, "Invalid input for field/attribute %s. Value: '%s'. %s", field, pyStr(value), msg)
}

// errOvUnknownAttributes is WSME's UnknownAttribute, its field the path of
// argument and attribute names down to the object.
func errOvUnknownAttributes(path string, attrs []string) *apiError {
	sort.Strings(attrs)
	word := "attribute"
	if len(attrs) > 1 {
		word = "attributes"
	}
	return octaviaErr(http.StatusBadRequest, "Unknown %s for argument %s: %s", word, path, strings.Join(attrs, ", "))
}

// decodeOctaviaRoot decodes a {"<root>": {...}} body for the controller
// argument argName.
func (e *Emulator) decodeOctaviaRoot(c *octaviaCall, argName, root string, s ovSchema) (ovObj, *apiError) {
	body, err := readOctaviaBody(c, argName)
	if err != nil {
		return nil, err
	}
	var extra []string
	for k := range body {
		if k != root {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		return nil, errOvUnknownAttributes(argName, extra)
	}
	raw, ok := body[root]
	if !ok || string(raw) == "null" {
		return nil, errOvInvalidInput(root, nil, "Mandatory field missing.")
	}
	return e.decodeOctaviaObject(raw, s, root, argName+"."+root)
}

// decodeOctaviaObject decodes one object of type s; name is its
// attribute's name (for InvalidInput) and path its UnknownAttribute path.
func (e *Emulator) decodeOctaviaObject(raw json.RawMessage, s ovSchema, name, path string) (ovObj, *apiError) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		var v any
		_ = json.Unmarshal(raw, &v)
		return nil, errOvInvalidInput(name, v, "Value should be a dict")
	}
	var extra []string
	for k := range m {
		if f, ok := s.field(k); !ok || !e.octaviaAt(f.since) {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		return nil, errOvUnknownAttributes(path, extra)
	}
	out := ovObj{}
	for _, f := range s {
		if !e.octaviaAt(f.since) {
			continue
		}
		raw, ok := m[f.name]
		if !ok {
			if f.mandatory {
				return nil, errOvInvalidInput(f.name, nil, "Mandatory field missing.")
			}
			if f.def != nil {
				out[f.name] = ovCloneDefault(f.def)
			}
			continue
		}
		v, err := e.decodeOctaviaValue(raw, f, path)
		if err != nil {
			return nil, err
		}
		if v == nil && f.mandatory {
			return nil, errOvInvalidInput(f.name, nil, "Mandatory field missing.")
		}
		out[f.name] = v
	}
	return out, nil
}

func ovCloneDefault(v any) any {
	switch d := v.(type) {
	case []string:
		return slices.Clone(d)
	case []ovObj:
		return []ovObj{}
	case map[string]string:
		return map[string]string{}
	}
	return v
}

func (s ovSchema) field(name string) (ovField, bool) {
	for _, f := range s {
		if f.name == name {
			return f, true
		}
	}
	return ovField{}, false
}

// decodeOctaviaValue converts and validates one attribute value.
func (e *Emulator) decodeOctaviaValue(raw json.RawMessage, f ovField, path string) (any, *apiError) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, errOvInvalidInput(f.name, string(raw), "Request is not in valid JSON format")
	}
	if v == nil {
		return nil, nil
	}
	bad := func(msg string) (any, *apiError) { return nil, errOvInvalidInput(f.name, v, msg) }
	switch f.kind {
	case ovText:
		s, ok := v.(string)
		if !ok {
			return bad(fmt.Sprintf("Wrong type. Expected '<class 'str'>', got '%s'", ovPyType(v)))
		}
		return s, nil
	case ovString:
		s, ok := v.(string)
		if !ok {
			return bad("Value should be string")
		}
		return checkOctaviaString(f, s, v)
	case ovInt:
		n, msg := ovPyInt(v)
		if msg != "" {
			return bad(msg)
		}
		if f.min != nil && n < *f.min {
			return bad(fmt.Sprintf("Value should be greater or equal to %d", *f.min))
		}
		if f.max != nil && n > *f.max {
			return bad(fmt.Sprintf("Value should be lower or equal to %d", *f.max))
		}
		return n, nil
	case ovBool:
		switch b := v.(type) {
		case bool:
			return b, nil
		case float64:
			return b != 0, nil
		case string:
			switch strings.ToLower(b) {
			case "true", "t", "yes", "y", "on", "1":
				return true, nil
			case "false", "f", "no", "n", "off", "0":
				return false, nil
			}
		}
		return bad(fmt.Sprintf("Value not an unambiguous boolean: %s", pyStr(v)))
	case ovUUID:
		s, ok := v.(string)
		if !ok {
			return bad("Value should be UUID format")
		}
		u, ok := ovNormalizeUUID(s)
		if !ok {
			return bad("Value should be UUID format")
		}
		return u, nil
	case ovIP:
		s, ok := v.(string)
		if !ok {
			return bad("Value should be IPv4 or IPv6 format")
		}
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return bad("Value should be IPv4 or IPv6 format")
		}
		return s, nil
	case ovEnum:
		s, ok := v.(string)
		if !ok || !slices.Contains(f.enum, s) {
			return bad("Value should be one of: " + strings.Join(ovSorted(f.enum), ", "))
		}
		return s, nil
	case ovFloatEnum:
		var x float64
		switch n := v.(type) {
		case float64:
			x = n
		case string:
			p, err := strconv.ParseFloat(n, 64)
			if err != nil {
				return bad(fmt.Sprintf("could not convert string to float: '%s'", n))
			}
			x = p
		default:
			return bad("Value should be one of: " + strings.Join(f.enum, ", "))
		}
		for _, allowed := range f.enum {
			if a, _ := strconv.ParseFloat(allowed, 64); a == x {
				return x, nil
			}
		}
		return bad("Value should be one of: " + strings.Join(f.enum, ", "))
	case ovStrList, ovCIDRList:
		items, ok := v.([]any)
		if !ok {
			return bad(fmt.Sprintf("Value not a valid list: %s", pyStr(v)))
		}
		out := make([]string, 0, len(items))
		for _, it := range items {
			s, ok := it.(string)
			if f.kind == ovCIDRList {
				p, err := netip.ParsePrefix(s)
				if !ok || err != nil {
					return bad("Value should be IPv4 or IPv6 CIDR format")
				}
				out = append(out, p.Masked().String())
				continue
			}
			if !ok {
				return bad("Value should be string")
			}
			if _, err := checkOctaviaString(f, s, v); err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	case ovStrMap:
		m, ok := v.(map[string]any)
		if !ok {
			return bad(fmt.Sprintf("Value not a valid dict: %s", pyStr(v)))
		}
		out := map[string]string{}
		for k, x := range m {
			s, ok := x.(string)
			if !ok {
				return bad("Value should be string")
			}
			if f.maxLen > 0 && len([]rune(s)) > f.maxLen {
				return bad(fmt.Sprintf("Value should have a maximum character requirement of %d", f.maxLen))
			}
			out[k] = s
		}
		return out, nil
	case ovObject:
		return e.decodeOctaviaObject(raw, f.sub, f.name, path+"."+f.name)
	case ovObjectList:
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return bad(fmt.Sprintf("Value not a valid list: %s", pyStr(v)))
		}
		out := make([]ovObj, 0, len(items))
		for _, it := range items {
			o, err := e.decodeOctaviaObject(it, f.sub, f.name, path+"."+f.name)
			if err != nil {
				return nil, err
			}
			out = append(out, o)
		}
		return out, nil
	}
	return nil, errOvInvalidInput(f.name, v, "unsupported attribute type")
}

func checkOctaviaString(f ovField, s string, v any) (any, *apiError) {
	n := len([]rune(s))
	switch {
	case f.minLen > 0 && n < f.minLen:
		return nil, errOvInvalidInput(f.name, v, fmt.Sprintf("Value should have a minimum character requirement of %d", f.minLen))
	case f.maxLen > 0 && n > f.maxLen:
		return nil, errOvInvalidInput(f.name, v, fmt.Sprintf("Value should have a maximum character requirement of %d", f.maxLen))
	case f.pattern != nil && !f.pattern.MatchString(s):
		return nil, errOvInvalidInput(f.name, v, "Value should match the pattern "+f.pattern.String())
	case f.check != nil && !f.check(s):
		return nil, errOvInvalidInput(f.name, v, f.checkMsg)
	}
	return s, nil
}

func ovSorted(s []string) []string {
	c := slices.Clone(s)
	sort.Strings(c)
	return c
}

// ovPyInt converts as Python's int() does for JSON values.
func ovPyInt(v any) (int, string) {
	switch n := v.(type) {
	case float64:
		if math.IsInf(n, 0) || math.IsNaN(n) {
			return 0, "cannot convert float to integer"
		}
		return int(n), ""
	case bool:
		if n {
			return 1, ""
		}
		return 0, ""
	case string:
		i, err := strconv.Atoi(strings.TrimSpace(n))
		if err != nil {
			return 0, fmt.Sprintf("invalid literal for int() with base 10: '%s'", n)
		}
		return i, ""
	}
	return 0, fmt.Sprintf("int() argument must be a string, a bytes-like object or a real number, not '%s'", ovPyTypeName(v))
}

func ovPyTypeName(v any) string {
	switch v.(type) {
	case string:
		return "str"
	case float64:
		return "int"
	case bool:
		return "bool"
	case []any:
		return "list"
	case map[string]any:
		return "dict"
	}
	return "NoneType"
}

func ovPyType(v any) string { return "<class '" + ovPyTypeName(v) + "'>" }

var ovUUIDHex = regexp.MustCompile(`^[0-9a-fA-F]{32}$`)

// ovNormalizeUUID is str(uuid.UUID(s)): dashes and braces optional, "urn:uuid:"
// allowed, the result lower case with dashes.
func ovNormalizeUUID(s string) (string, bool) {
	h := strings.TrimPrefix(strings.TrimPrefix(s, "urn:"), "uuid:")
	h = strings.Trim(h, "{}")
	h = strings.ReplaceAll(h, "-", "")
	if !ovUUIDHex.MatchString(h) {
		return "", false
	}
	h = strings.ToLower(h)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], true
}
