package config

import (
	"encoding"
	"encoding/base64"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The decoder below walks a yaml.Node tree alongside the reflect type of the
// Go value it fills. yaml.v3's own strict decoding (KnownFields) stops at the
// first problem and its messages name Go types and echo values; walking the
// node tree ourselves lets Parse report every problem at once, with the field
// path and line a person needs and without ever quoting a (possibly secret)
// value.

const (
	// maxAliasNodes bounds the nodes walked through aliases. A handful of
	// anchors can otherwise expand exponentially ("billion laughs"); real
	// cloud-configs reuse a few small blocks and stay far below this.
	maxAliasNodes = 10000
	// maxAliasChain bounds how many aliases may be followed in a row to reach
	// a node, so a pathological chain cannot recurse without end.
	maxAliasChain = 64
)

// textTags are the scalar tags whose text a string field takes as written.
var textTags = map[string]bool{"!!str": true, "!!int": true, "!!float": true, "!!bool": true, "!!timestamp": true}

var (
	durationType = reflect.TypeFor[time.Duration]()
	nodeType     = reflect.TypeFor[yaml.Node]()
)

// decoder collects problems and the line of every field it sets while walking
// one document.
type decoder struct {
	problems Problems
	// lines maps a field path (field.Path.String()) to the line of the key
	// or list item that set it, so validation errors can be located.
	lines map[string]int
	// bad holds the paths whose value could not be decoded. Validation of a
	// field left zero by a decode failure would only repeat the problem
	// ("Required value" after "must be a string"), so those are dropped.
	bad map[string]bool
	// expanding holds the anchors whose content is being walked through an
	// alias, to catch an alias inside its own anchor (a cycle).
	expanding map[*yaml.Node]bool
	// aliasDepth is >0 while walking through an alias; aliasNodes counts the
	// nodes walked that way against maxAliasNodes.
	aliasDepth int
	aliasNodes int
	// exhausted is set once maxAliasNodes is exceeded; everything stops then,
	// since continuing is exactly the work the limit exists to avoid.
	exhausted bool
}

func newDecoder() *decoder {
	return &decoder{
		lines:     map[string]int{},
		bad:       map[string]bool{},
		expanding: map[*yaml.Node]bool{},
	}
}

// pathString renders a path, with "" for the document root (nil).
func pathString(p *field.Path) string {
	if p == nil {
		return ""
	}
	return p.String()
}

// addf records a problem at path (nil for the document root).
func (d *decoder) addf(path *field.Path, line int, format string, args ...any) {
	d.problems = append(d.problems, Problem{Path: pathString(path), Detail: fmt.Sprintf(format, args...), Line: line})
}

// badf records a problem with the value at path and marks the path as bad.
func (d *decoder) badf(path *field.Path, line int, format string, args ...any) {
	d.addf(path, line, format, args...)
	if p := pathString(path); p != "" {
		d.bad[p] = true
	}
}

// wrongType reports a node that cannot become a value of the expected kind.
// It names what was found, never the value itself, so it cannot leak a secret.
func (d *decoder) wrongType(path *field.Path, n *yaml.Node, expected string) {
	d.badf(path, n.Line, "must be %s, got %s", withArticle(expected), describe(n))
}

// withArticle prefixes a noun with "a" or "an".
func withArticle(noun string) string {
	if noun != "" && strings.ContainsRune("aeiou", rune(noun[0])) {
		return "an " + noun
	}
	return "a " + noun
}

// describe names what kind of YAML value n is, for "got ..." messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.DocumentNode:
		return "a document"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return "a string"
		case "!!int":
			return "an integer"
		case "!!float":
			return "a number"
		case "!!bool":
			return "a boolean"
		case "!!null":
			return "null"
		case "!!timestamp":
			return "a timestamp"
		case "!!binary":
			return "binary data"
		case "!!merge":
			return "a merge key"
		}
		// The tag is user text and could be anything; don't echo it.
		return "a value with a custom tag"
	}
	return "an unknown YAML node"
}

// expectedName is what a Go type is called in "must be ..." messages.
func expectedName(t reflect.Type) string {
	if t == durationType {
		return "duration"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "list"
	case reflect.Map, reflect.Struct:
		return "mapping"
	case reflect.Pointer:
		return expectedName(t.Elem())
	}
	return t.Kind().String()
}

// tick counts a node walked through an alias and reports whether the walk
// may go on.
func (d *decoder) tick(line int) bool {
	if d.exhausted {
		return false
	}
	if d.aliasDepth == 0 {
		return true
	}
	d.aliasNodes++
	if d.aliasNodes > maxAliasNodes {
		d.exhausted = true
		d.addf(nil, line, "aliases expand to more than %d values; reuse fewer or smaller anchors", maxAliasNodes)
		return false
	}
	return true
}

// enter follows n through aliases to the node to walk. While the caller
// walks it, the anchors passed through count as "expanding" so that an alias
// back into one of them is reported as a cycle instead of recursing forever.
// The caller must call leave when done; ok is false if there is nothing to
// walk (a problem has been recorded).
func (d *decoder) enter(n *yaml.Node, path *field.Path) (target *yaml.Node, leave func(), ok bool) {
	var entered []*yaml.Node
	leave = func() {
		for _, a := range entered {
			delete(d.expanding, a)
			d.aliasDepth--
		}
	}
	for n.Kind == yaml.AliasNode {
		switch {
		case n.Alias == nil:
			// The parser rejects unknown anchors, but a hand-built tree might not.
			d.badf(path, n.Line, "alias refers to an unknown anchor")
		case d.expanding[n.Alias]:
			d.badf(path, n.Line, "alias *%s refers to a value that contains it", n.Value)
		case len(entered) >= maxAliasChain:
			d.badf(path, n.Line, "too many aliases in a row")
		default:
			d.expanding[n.Alias] = true
			d.aliasDepth++
			entered = append(entered, n.Alias)
			n = n.Alias
			continue
		}
		leave()
		return nil, func() {}, false
	}
	return n, leave, true
}

// isNull reports whether n is a YAML null ("", "~", "null").
func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// libDecode lets yaml.v3 convert a single scalar node (it knows YAML's
// integer, float and boolean spellings). Any panic other than yaml.v3's own
// error signalling is turned into an error so malformed input can never crash
// the caller.
func libDecode(n *yaml.Node, out any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: %v", r)
		}
	}()
	return n.Decode(out)
}

// decode fills v (which must be settable) from n. secret says whether the
// value sits under a field tagged secret:"true", so that error text that
// could quote the value is left out.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path *field.Path, secret bool) {
	n, leave, ok := d.enter(n, path)
	if !ok {
		return
	}
	defer leave()
	if !d.tick(n.Line) {
		return
	}

	t := v.Type()
	// A null leaves the zero value, as yaml.v3 does: "key:" with nothing
	// after it means unset, and defaults fill it in later.
	if isNull(n) {
		v.SetZero()
		return
	}
	if t == nodeType {
		v.Set(reflect.ValueOf(*n))
		return
	}
	if t == durationType {
		d.decodeDuration(n, v, path)
		return
	}
	if t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface {
		pv := v.Addr().Interface()
		if u, ok := pv.(yaml.Unmarshaler); ok {
			if err := callUnmarshaler(func() error { return u.UnmarshalYAML(n) }); err != nil {
				d.badf(path, n.Line, "%s", errDetail("invalid value", err, secret))
			}
			return
		}
		if u, ok := pv.(encoding.TextUnmarshaler); ok {
			// Its YAML form is text. Like a string field, take any plain
			// scalar's text: "5" is a fine quantity though YAML calls it
			// an integer.
			if n.Kind != yaml.ScalarNode || !textTags[n.ShortTag()] {
				d.wrongType(path, n, "string")
				return
			}
			if err := callUnmarshaler(func() error { return u.UnmarshalText([]byte(n.Value)) }); err != nil {
				d.badf(path, n.Line, "%s", errDetail("invalid value", err, secret))
			}
			return
		}
	}

	switch t.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		d.decode(n, v.Elem(), path, secret)
	case reflect.Interface:
		if t.NumMethod() != 0 {
			d.badf(path, n.Line, "cannot be set from YAML (field type %s)", t)
			return
		}
		// Free-form data: yaml.v3 builds maps, lists and scalars itself and
		// guards against alias bombs on its own.
		var x any
		if err := libDecode(n, &x); err != nil {
			d.badf(path, n.Line, "%s", errDetail("invalid value", err, secret))
			return
		}
		if x != nil {
			v.Set(reflect.ValueOf(x))
		}
	case reflect.Struct:
		d.decodeStruct(n, v, path, secret)
	case reflect.Map:
		d.decodeMap(n, v, path, secret)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && n.Kind == yaml.ScalarNode {
			d.decodeBytes(n, v, path)
			return
		}
		d.decodeList(n, v, path, secret)
	case reflect.Array:
		d.decodeList(n, v, path, secret)
	case reflect.String, reflect.Bool, reflect.Float32, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		d.decodeScalar(n, v, path)
	default:
		d.badf(path, n.Line, "cannot be set from YAML (field type %s)", t)
	}
}

// callUnmarshaler runs a section type's own unmarshal method, turning a panic
// into an error: it is handed arbitrary input.
func callUnmarshaler(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return f()
}

// errDetail is the detail for an error from code we don't control, whose
// text may quote the value: it is dropped for secrets.
func errDetail(what string, err error, secret bool) string {
	if secret {
		return what
	}
	return what + ": " + err.Error()
}

// decodeDuration accepts only Go duration strings ("30s", "1h30m"). A bare
// integer is rejected rather than read as nanoseconds, which is never what
// a person writing a config means.
func (d *decoder) decodeDuration(n *yaml.Node, v reflect.Value, path *field.Path) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		d.badf(path, n.Line, "must be a duration such as \"30s\" or \"1h30m\", got %s", describe(n))
		return
	}
	dur, err := time.ParseDuration(n.Value)
	if err != nil {
		d.badf(path, n.Line, "must be a duration such as \"30s\" or \"1h30m\"")
		return
	}
	v.SetInt(int64(dur))
}

// decodeBytes fills a []byte from a string, or from !!binary (base64).
func (d *decoder) decodeBytes(n *yaml.Node, v reflect.Value, path *field.Path) {
	var b []byte
	switch n.ShortTag() {
	case "!!binary":
		var err error
		if b, err = base64.StdEncoding.DecodeString(strings.Join(strings.Fields(n.Value), "")); err != nil {
			d.badf(path, n.Line, "must be base64 data (it is tagged !!binary)")
			return
		}
	case "!!str":
		b = []byte(n.Value)
	default:
		d.wrongType(path, n, "string")
		return
	}
	v.SetBytes(b)
}

// decodeScalar fills a string, boolean or number. It is strict about YAML
// types, except that a string field takes any plain scalar's text as written:
// `accountID: 012345678901` should be the string "012345678901", not a type
// error or the integer 12345678901.
func (d *decoder) decodeScalar(n *yaml.Node, v reflect.Value, path *field.Path) {
	t := v.Type()
	if n.Kind != yaml.ScalarNode {
		d.wrongType(path, n, expectedName(t))
		return
	}
	tag := n.ShortTag()
	switch t.Kind() {
	case reflect.String:
		switch {
		case textTags[tag]:
			v.SetString(n.Value)
		case tag == "!!binary":
			b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(n.Value), ""))
			if err != nil {
				d.badf(path, n.Line, "must be base64 data (it is tagged !!binary)")
				return
			}
			v.SetString(string(b))
		default:
			d.wrongType(path, n, "string")
		}

	case reflect.Bool:
		// yaml.v3 would also read yes/no/on/off into a bool; strictness
		// here avoids the YAML 1.1 "Norway problem" surprises.
		var b bool
		if tag != "!!bool" || libDecode(n, &b) != nil {
			d.badf(path, n.Line, "must be a boolean (true or false), got %s", describe(n))
			return
		}
		v.SetBool(b)

	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		var x any
		if tag != "!!int" || libDecode(n, &x) != nil {
			d.wrongType(path, n, "integer")
			return
		}
		d.setInt(n, v, path, x)

	case reflect.Float32, reflect.Float64:
		var f float64
		if (tag != "!!float" && tag != "!!int") || libDecode(n, &f) != nil {
			d.wrongType(path, n, "number")
			return
		}
		if v.OverflowFloat(f) {
			d.badf(path, n.Line, "must be a number within the range of a %d-bit float", t.Bits())
			return
		}
		v.SetFloat(f)
	}
}

// setInt stores an integer yaml.v3 resolved (int, int64 or uint64) into a
// signed or unsigned field, reporting the allowed range when it won't fit.
func (d *decoder) setInt(n *yaml.Node, v reflect.Value, path *field.Path, x any) {
	var (
		i        int64
		u        uint64
		negative bool
		huge     bool // above math.MaxInt64
	)
	switch x := x.(type) {
	case int:
		i, negative = int64(x), x < 0
	case int64:
		i, negative = x, x < 0
	case uint64:
		u, huge = x, x > math.MaxInt64
		i = int64(x)
	default:
		d.wrongType(path, n, "integer")
		return
	}
	t := v.Type()
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if huge || v.OverflowInt(i) {
			bits := t.Bits()
			d.badf(path, n.Line, "must be an integer from %d to %d", int64(-1)<<(bits-1), uint64(1)<<(bits-1)-1)
			return
		}
		v.SetInt(i)
	default:
		if !huge {
			u = uint64(i)
		}
		if negative || v.OverflowUint(u) {
			d.badf(path, n.Line, "must be an integer from 0 to %d", uint64(math.MaxUint64)>>(64-t.Bits()))
			return
		}
		v.SetUint(u)
	}
}

// pair is one key/value of a mapping, after merge keys are applied.
type pair struct {
	name       string
	key, value *yaml.Node
}

// pairs lists a mapping's entries by key text, reporting duplicate and
// non-scalar keys and applying YAML merge keys ("<<: *base"): merged
// entries come after the mapping's own and never override them, and of
// several merged mappings the first to set a key wins.
func (d *decoder) pairs(n *yaml.Node, path *field.Path) []pair {
	var own, merged []pair
	firstLine := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if !d.tick(k.Line) {
			return nil
		}
		rk, leave, ok := d.enter(k, path)
		if !ok {
			continue
		}
		leave() // a key is a scalar: nothing beneath it to walk.
		if rk.Kind == yaml.ScalarNode && rk.ShortTag() == "!!merge" {
			merged = append(merged, d.mergePairs(val, path)...)
			continue
		}
		if rk.Kind != yaml.ScalarNode {
			d.addf(path, k.Line, "keys must be strings, got %s", describe(rk))
			continue
		}
		if first, dup := firstLine[rk.Value]; dup {
			d.addf(path, k.Line, "duplicate field %q (first set on line %d)", rk.Value, first)
			continue
		}
		firstLine[rk.Value] = k.Line
		own = append(own, pair{name: rk.Value, key: k, value: val})
	}
	for _, p := range merged {
		if _, set := firstLine[p.name]; !set {
			firstLine[p.name] = p.key.Line
			own = append(own, p)
		}
	}
	return own
}

// mergePairs returns the entries a merge key's value contributes: a mapping,
// or a list of mappings, usually given as aliases.
func (d *decoder) mergePairs(n *yaml.Node, path *field.Path) []pair {
	n, leave, ok := d.enter(n, path)
	if !ok {
		return nil
	}
	defer leave()
	switch n.Kind {
	case yaml.MappingNode:
		return d.pairs(n, path)
	case yaml.SequenceNode:
		var out []pair
		for _, item := range n.Content {
			m, leaveItem, ok := d.enter(item, path)
			if !ok {
				continue
			}
			if m.Kind == yaml.MappingNode {
				out = append(out, d.pairs(m, path)...)
			} else {
				d.addf(path, item.Line, "a merge key (<<) takes a mapping or a list of mappings, got a list holding %s", describe(m))
			}
			leaveItem()
		}
		return out
	}
	d.addf(path, n.Line, "a merge key (<<) takes a mapping or a list of mappings, got %s", describe(n))
	return nil
}

// fieldInfo describes one YAML-visible struct field.
type fieldInfo struct {
	index  []int // reflect field index, through ,inline structs
	secret bool  // tagged secret:"true", or inside a field that is
}

// structInfo is the YAML view of a struct type, computed once per type.
type structInfo struct {
	fields map[string]fieldInfo
	// inlineMap is the index of a `yaml:",inline"` map[string]T field that
	// takes the keys no field claims, or nil.
	inlineMap []int
}

var structInfoCache sync.Map // reflect.Type -> *structInfo

// structInfoOf reads yaml tags the way yaml.v3 does (name, "-", ",inline",
// lowercased field name by default) plus the secret tag.
func structInfoOf(t reflect.Type) *structInfo {
	if si, ok := structInfoCache.Load(t); ok {
		return si.(*structInfo)
	}
	si := &structInfo{fields: map[string]fieldInfo{}}
	collectFields(t, nil, false, si, 0)
	actual, _ := structInfoCache.LoadOrStore(t, si)
	return actual.(*structInfo)
}

// FieldKey is how the decoder reads a section struct's field, as yaml.v3
// does: its key (the yaml tag's name, else the lowercased field name),
// whether it is ,inline (its fields or map keys belong to the parent), and
// whether it is skipped ("-"). Tools that describe the config (hack/refdocs)
// use it so they can never disagree with the decoder.
func FieldKey(f reflect.StructField) (key string, inline, skip bool) {
	tag := f.Tag.Get("yaml")
	if tag == "" && !strings.Contains(string(f.Tag), ":") {
		tag = string(f.Tag) // yaml.v3 accepts an old-style bare tag.
	}
	if tag == "-" {
		return "", false, true
	}
	key, flags, _ := strings.Cut(tag, ",")
	inline = strings.Contains(","+flags+",", ",inline,")
	if key == "" && !inline {
		key = strings.ToLower(f.Name)
	}
	return key, inline, false
}

// IsSecretField says the field is tagged secret:"true"; everything below
// it is secret too.
func IsSecretField(f reflect.StructField) bool { return f.Tag.Get("secret") == "true" }

func collectFields(t reflect.Type, prefix []int, secret bool, si *structInfo, depth int) {
	if depth > 32 { // ,inline cycles through pointers; yaml.v3 would loop forever.
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			// Fields reached through an unexported embedded struct are not
			// settable by reflection, so they cannot be config either.
			continue
		}
		name, inline, skip := FieldKey(f)
		if skip {
			continue
		}
		index := append(append([]int(nil), prefix...), i)
		isSecret := secret || IsSecretField(f)
		if inline {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			switch {
			case ft.Kind() == reflect.Struct:
				collectFields(ft, index, isSecret, si, depth+1)
			case ft.Kind() == reflect.Map && ft.Key().Kind() == reflect.String && si.inlineMap == nil:
				si.inlineMap = index
			}
			continue
		}
		if _, dup := si.fields[name]; !dup {
			si.fields[name] = fieldInfo{index: index, secret: isSecret}
		}
	}
}

// fieldByIndex is v.FieldByIndex, allocating nil pointers to ,inline structs
// on the way.
func fieldByIndex(v reflect.Value, index []int) reflect.Value {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v
}

// decodeStruct fills a struct from a mapping, reporting unknown keys.
func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path *field.Path, secret bool) {
	if n.Kind != yaml.MappingNode {
		d.wrongType(path, n, "mapping")
		return
	}
	si := structInfoOf(v.Type())
	for _, p := range d.pairs(n, path) {
		if d.exhausted {
			return
		}
		fi, known := si.fields[p.name]
		if !known {
			if si.inlineMap != nil {
				// Keys an ,inline map catches sit beside the struct's
				// fields in the YAML, so their paths are children too.
				d.decodeMapEntry(p, fieldByIndex(v, si.inlineMap), path.Child(p.name), secret)
				continue
			}
			d.addf(path.Child(p.name), p.key.Line, "unknown field %q", p.name)
			continue
		}
		child := path.Child(p.name)
		d.lines[child.String()] = p.key.Line
		d.decode(p.value, fieldByIndex(v, fi.index), child, secret || fi.secret)
	}
}

// decodeMap fills a map from a mapping.
func (d *decoder) decodeMap(n *yaml.Node, v reflect.Value, path *field.Path, secret bool) {
	if n.Kind != yaml.MappingNode {
		d.wrongType(path, n, "mapping")
		return
	}
	for _, p := range d.pairs(n, path) {
		if d.exhausted {
			return
		}
		d.decodeMapEntry(p, v, path.Key(p.name), secret)
	}
}

// decodeMapEntry sets one key of map v (allocating it if nil) from the
// entry at path child. Map keys become field.Path keys, so
// "tags: {team: x}" is "aws.tags[team]".
func (d *decoder) decodeMapEntry(p pair, v reflect.Value, child *field.Path, secret bool) {
	t := v.Type()
	d.lines[child.String()] = p.key.Line
	k := reflect.New(t.Key()).Elem()
	if t.Key().Kind() == reflect.String {
		k.SetString(p.name)
	} else {
		before := len(d.problems)
		d.decode(p.key, k, child, secret)
		if len(d.problems) > before {
			return
		}
	}
	e := reflect.New(t.Elem()).Elem()
	d.decode(p.value, e, child, secret)
	if v.IsNil() {
		v.Set(reflect.MakeMap(t))
	}
	v.SetMapIndex(k, e)
}

// decodeList fills a slice or an array from a sequence.
func (d *decoder) decodeList(n *yaml.Node, v reflect.Value, path *field.Path, secret bool) {
	if n.Kind != yaml.SequenceNode {
		d.wrongType(path, n, "list")
		return
	}
	t := v.Type()
	items := n.Content
	if t.Kind() == reflect.Array {
		if len(items) != t.Len() {
			d.badf(path, n.Line, "must be a list of %d items, got %d", t.Len(), len(items))
			return
		}
	} else {
		v.Set(reflect.MakeSlice(t, len(items), len(items)))
	}
	for i, item := range items {
		child := path.Index(i)
		d.lines[child.String()] = item.Line
		d.decode(item, v.Index(i), child, secret)
		if d.exhausted {
			return
		}
	}
}
