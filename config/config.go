package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Top-level keys that are not provider sections.
const (
	keyAPIVersion = "apiVersion"
	keyKind       = "kind"
	keyProvider   = "provider"
	keyClusterID  = "clusterID"
	// keyProviders lists the clouds of a hybrid config, each with its
	// section; keyLoadBalancerProvider picks the default cloud of its
	// LoadBalancer Services.
	keyProviders            = "providers"
	keyLoadBalancerProvider = "loadBalancerProvider"
	// keyOrphans says what the manager does with cloud resources of this
	// cluster that no Service owns (controllers/orphans).
	keyOrphans = "orphans"
)

// maxClusterIDLen keeps clusterID usable inside cloud resource names and
// tags, the tightest of which (e.g. DNS labels) allow 63 characters.
const maxClusterIDLen = 63

var clusterIDPattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// LoadFile reads and parses the cloud-config at path. See Parse.
func LoadFile(path string, sections Sections) (*CloudConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		// os errors name the path already; say what the file was for.
		return nil, fmt.Errorf("reading cloud-config: %w", err)
	}
	return Parse(data, sections)
}

// Parse decodes one cloud-config YAML document strictly, applies the
// selected provider section's defaults and validates the result.
//
// On bad input the error is a Problems listing everything wrong, each with
// its field path and line, sorted by line; it never contains a secret value.
// On success the config and its Section (one cloud) or Sections (several)
// are non-nil.
func Parse(data []byte, sections Sections) (*CloudConfig, error) {
	if sections == nil {
		sections = noSections{}
	}
	d := newDecoder()
	cfg := d.parse(data, sections)
	if len(d.problems) > 0 {
		return nil, d.problems.normalize()
	}
	if cfg == nil || (cfg.Section == nil && cfg.Sections == nil) {
		// Unreachable: every path to a nil section records a problem. Kept
		// so that the documented "nil error means non-nil Section" holds
		// even if that changes.
		return nil, Problems{{Detail: "internal error: no provider section was decoded"}}
	}
	return cfg, nil
}

// noSections stands in for a nil Sections: nothing is compiled in.
type noSections struct{}

func (noSections) NewSection(string) (Section, bool) { return nil, false }
func (noSections) Compiled() []string                { return nil }

// parse does the work of Parse, recording problems in d. It returns nil when
// the document is not even a mapping.
func (d *decoder) parse(data []byte, sections Sections) *CloudConfig {
	root := d.document(data)
	if root == nil {
		return nil
	}

	compiled := sections.Compiled()
	providers := providerNames(compiled)

	cfg := &CloudConfig{}
	var found []pair // provider sections, in document order
	hybrid := false
	for _, p := range d.pairs(root, nil) {
		var target any
		switch p.name {
		case keyProviders:
			target, hybrid = &cfg.Providers, true
		case keyLoadBalancerProvider:
			target = &cfg.LoadBalancerProvider
		case keyOrphans:
			target = &cfg.Orphans
		case keyAPIVersion:
			target = &cfg.APIVersion
		case keyKind:
			target = &cfg.Kind
		case keyProvider:
			target = &cfg.Provider
		case keyClusterID:
			target = &cfg.ClusterID
		default:
			if slices.Contains(providers, p.name) {
				d.lines[p.name] = p.key.Line
				found = append(found, p)
			} else {
				d.addf(field.NewPath(p.name), p.key.Line, "unknown field %q", p.name)
			}
			continue
		}
		path := field.NewPath(p.name)
		d.lines[p.name] = p.key.Line
		d.decode(p.value, reflect.ValueOf(target).Elem(), path, false)
	}
	if d.exhausted {
		return nil
	}

	d.checkEnum(keyAPIVersion, cfg.APIVersion, APIVersion)
	d.checkEnum(keyKind, cfg.Kind, Kind)
	d.checkClusterID(cfg.ClusterID)
	switch {
	case d.bad[keyOrphans], cfg.Orphans == "":
	case cfg.Orphans != OrphansReport && cfg.Orphans != OrphansDelete:
		d.addFieldError(field.NotSupported(field.NewPath(keyOrphans), cfg.Orphans, []string{OrphansReport, OrphansDelete}))
	}

	if hybrid {
		return d.parseHybrid(cfg, providers, compiled, sections, found)
	}
	if cfg.LoadBalancerProvider != "" && !d.bad[keyLoadBalancerProvider] {
		d.addf(field.NewPath(keyLoadBalancerProvider), d.lines[keyLoadBalancerProvider],
			"loadBalancerProvider is for a config of several clouds (providers:); with provider: %s every load balancer is its", cfg.Provider)
	}
	section := d.selectSection(cfg.Provider, providers, compiled, sections, found)
	if section == nil {
		return nil
	}
	var node *yaml.Node
	for _, p := range found {
		if p.name == cfg.Provider {
			node = p.value
		}
	}
	if !d.decodeSection(cfg.Provider, section, node) {
		return nil
	}
	cfg.Section = section
	cfg.LoadBalancerProvider = cfg.Provider
	return cfg
}

// parseHybrid is the rest of parse for a config of several clouds: each
// listed provider must be known, compiled in and listed once; every
// provider section must belong to a listed provider; each listed
// provider's section (absent: a zero one) is decoded, defaulted and
// validated as in a config for that cloud alone.
func (d *decoder) parseHybrid(cfg *CloudConfig, providers, compiled []string, sections Sections, found []pair) *CloudConfig {
	listPath := field.NewPath(keyProviders)
	if cfg.Provider != "" && !d.bad[keyProvider] {
		d.addf(field.NewPath(keyProvider), d.lines[keyProvider],
			"set provider (one cloud) or providers (several clouds), not both")
	}
	if d.bad[keyProviders] {
		return nil
	}
	if len(cfg.Providers) == 0 {
		d.addFieldError(field.Required(listPath, "list the clouds of this cluster, e.g. providers: [openstack, aws]"))
		return nil
	}
	built := map[string]Section{}
	ok := true
	for i, name := range cfg.Providers {
		path := listPath.Index(i)
		line := d.lines[pathString(path)]
		if line == 0 {
			line = d.lines[keyProviders]
		}
		switch {
		case slices.Contains(cfg.Providers[:i], name):
			d.addf(path, line, "%s; each cloud is listed once, with one section", field.Duplicate(path, name).ErrorBody())
			ok = false
			continue
		case !slices.Contains(providers, name):
			d.addf(path, line, "%s", field.NotSupported(path, name, providers).ErrorBody())
			ok = false
			continue
		}
		section, compiledIn := sections.NewSection(name)
		if !compiledIn || isNil(section) {
			d.addf(path, line,
				"%q is not compiled into this binary (compiled in: %s); rebuild with make build PROVIDERS=%s or use the default build with all providers",
				name, compiledList(compiled), strings.Join(cfg.Providers, ","))
			ok = false
			continue
		}
		built[name] = section
	}
	for _, p := range found {
		if !slices.Contains(cfg.Providers, p.name) {
			d.addf(field.NewPath(p.name), p.key.Line,
				"section for provider %q, which providers does not list (%s); only the listed providers' sections may be set", p.name, strings.Join(cfg.Providers, ", "))
		}
	}
	lbPath := field.NewPath(keyLoadBalancerProvider)
	switch {
	case d.bad[keyLoadBalancerProvider]:
	case cfg.LoadBalancerProvider == "":
		cfg.LoadBalancerProvider = cfg.Providers[0]
	case !slices.Contains(cfg.Providers, cfg.LoadBalancerProvider):
		d.addf(lbPath, d.lines[keyLoadBalancerProvider], "%s (the listed providers)",
			field.NotSupported(lbPath, cfg.LoadBalancerProvider, cfg.Providers).ErrorBody())
	}
	if !ok {
		return nil
	}
	for _, name := range cfg.Providers {
		var node *yaml.Node
		for _, p := range found {
			if p.name == name {
				node = p.value
			}
		}
		if !d.decodeSection(name, built[name], node) {
			return nil
		}
	}
	cfg.Sections = built
	return cfg
}

// compiledList is the compiled-in providers for a message, "none" for none.
func compiledList(compiled []string) string {
	if len(compiled) == 0 {
		return "none"
	}
	return strings.Join(compiled, ",")
}

// document reads exactly one YAML document and returns its top-level
// mapping, or nil after recording why there is none.
func (d *decoder) document(data []byte) *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := safeDecode(dec, &doc); err != nil {
		if errors.Is(err, io.EOF) {
			d.addf(nil, 0, "the cloud-config is empty; it must be one YAML document holding a mapping")
		} else {
			d.syntaxError(err)
		}
		return nil
	}
	// A stream with more documents is ambiguous (which one is the config?),
	// so it is an error rather than silently reading the first.
	var next yaml.Node
	if err := safeDecode(dec, &next); err == nil {
		d.addf(nil, next.Line, "only one YAML document is allowed, but another one starts here")
	} else if !errors.Is(err, io.EOF) {
		d.syntaxError(err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		d.addf(nil, doc.Line, "the cloud-config must be a mapping")
		return nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		d.addf(nil, root.Line, "the cloud-config must be a mapping, got %s", describe(root))
		return nil
	}
	return root
}

// safeDecode reads the next document, turning a parser panic into an error:
// Parse must not crash on any input, whatever yaml.v3 does with it.
func safeDecode(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: internal parser error: %v", r)
		}
	}()
	return dec.Decode(n)
}

var yamlLineError = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlParserProblems are the problems yaml.v3's parser (as opposed to its
// scanner) reports. For these it prints the 0-based line of the construct
// being parsed, one less than the line a person counts.
var yamlParserProblems = map[string]bool{
	"did not find expected <stream-start>":   true,
	"did not find expected <document start>": true,
	"found undefined tag handle":             true,
	"did not find expected node content":     true,
	"did not find expected '-' indicator":    true,
	"did not find expected key":              true,
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found duplicate %TAG directive":         true,
}

// syntaxError turns a yaml.v3 parse error ("yaml: line 3: did not find
// expected key") into a Problem located at that line.
func (d *decoder) syntaxError(err error) {
	msg := err.Error()
	line := 0
	if m := yamlLineError.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	switch {
	case yamlParserProblems[msg]:
		line++ // 0-based, see yamlParserProblems; 0 was left out.
	case line == 0 && hasYAMLPosition(msg):
		// yaml.v3 leaves out "line 1: " because its line is 0-based
		// internally and 0 reads as "no line".
		line = 1
	}
	d.addf(nil, line, "invalid YAML: %s", msg)
}

// hasYAMLPosition reports whether a yaml.v3 scanner problem is tied to a
// position. Its wording tells: positioned problems say what was (not)
// found, while the rest (bad UTF-8, control characters, unknown anchors,
// depth limits) do not.
func hasYAMLPosition(msg string) bool {
	for _, prefix := range []string{"found ", "did not find ", "could not find ", "mapping ", "block sequence "} {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	return false
}

// providerNames is every name that may be a provider or a section key:
// KnownProviders plus whatever this binary has compiled in, sorted.
func providerNames(compiled []string) []string {
	names := slices.Concat(KnownProviders, compiled)
	slices.Sort(names)
	return slices.Compact(names)
}

// checkEnum reports a required top-level string that is missing or not the
// one value this binary reads.
func (d *decoder) checkEnum(key, got, want string) {
	path := field.NewPath(key)
	switch {
	case d.bad[key]:
	case got == "":
		d.addFieldError(field.Required(path, ""))
	case got != want:
		d.addFieldError(field.NotSupported(path, got, []string{want}))
	}
}

// checkClusterID enforces that clusterID can be used in cloud resource names.
func (d *decoder) checkClusterID(id string) {
	path := field.NewPath(keyClusterID)
	switch {
	case d.bad[keyClusterID]:
	case id == "":
		d.addFieldError(field.Required(path, "it names and tags every cloud resource this controller manager owns"))
	case len(id) > maxClusterIDLen:
		// Not field.Invalid: there is no point echoing a value this long.
		d.addf(path, d.lines[keyClusterID], "Too long: must be at most %d characters, got %d (it is used in cloud resource names)", maxClusterIDLen, len(id))
	case !clusterIDPattern.MatchString(id):
		d.addFieldError(field.Invalid(path, id, "must consist of lowercase letters, digits and '-', and start and end with a letter or digit (it is used in cloud resource names)"))
	}
}

// addFieldError records a field.Error as a Problem at the line of its path.
func (d *decoder) addFieldError(err *field.Error) {
	d.problems = append(d.problems, Problem{Path: err.Field, Detail: err.ErrorBody(), Line: d.lines[err.Field]})
}

// selectSection checks provider and the provider sections present, and
// returns a new zero section for the selected provider, or nil if there is
// none to decode.
func (d *decoder) selectSection(provider string, providers, compiled []string, sections Sections, found []pair) Section {
	providerPath := field.NewPath(keyProvider)
	providerSet := provider != "" && !d.bad[keyProvider]

	// Only the selected provider's section may be present: a second one is
	// almost certainly a copy-paste leftover that would silently be ignored.
	for i, p := range found {
		switch {
		case providerSet && p.name != provider:
			d.addf(field.NewPath(p.name), p.key.Line,
				"section for provider %q but provider is %q; only the selected provider's section may be set", p.name, provider)
		case !providerSet && i > 0:
			d.addf(field.NewPath(p.name), p.key.Line,
				"only one provider section may be set, but %q is set too (and provider is not set)", found[0].name)
		}
	}

	switch {
	case d.bad[keyProvider]:
		return nil
	case provider == "":
		detail := ""
		if len(found) == 1 {
			detail = fmt.Sprintf("set provider: %s to use the %q section", found[0].name, found[0].name)
		}
		d.addFieldError(field.Required(providerPath, detail))
		return nil
	case !slices.Contains(providers, provider):
		d.addFieldError(field.NotSupported(providerPath, provider, providers))
		return nil
	}
	section, ok := sections.NewSection(provider)
	if !ok || isNil(section) {
		in := strings.Join(compiled, ",")
		if in == "" {
			in = "none"
		}
		d.addf(providerPath, d.lines[keyProvider],
			"%q is not compiled into this binary (compiled in: %s); rebuild with make build PROVIDERS=%s or use the default build with all providers",
			provider, in, provider)
		return nil
	}
	return section
}

// isNil reports whether an interface holds nothing or a nil pointer.
func isNil(x any) bool {
	if x == nil {
		return true
	}
	v := reflect.ValueOf(x)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// decodeSection decodes node (nil when the section is absent) into section,
// applies its defaults and validates it. An absent section is still
// defaulted and validated: it is fine exactly when a zero section is.
func (d *decoder) decodeSection(provider string, section Section, node *yaml.Node) bool {
	path := field.NewPath(provider)
	v := reflect.ValueOf(section)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		// A backend bug, not a user error, but still no reason to panic.
		d.addf(field.NewPath(keyProvider), d.lines[keyProvider],
			"internal error: the %q section type %T is not a pointer to a struct", provider, section)
		return false
	}
	if node != nil {
		d.decode(node, v.Elem(), path, false)
		if d.exhausted {
			return false
		}
	}
	section.SetDefaults()
	secrets := collectSecrets(v, path)
	for _, err := range section.Validate(path) {
		if err == nil || d.coveredByBadPath(err.Field) {
			continue
		}
		d.problems = append(d.problems, Problem{
			Path:   err.Field,
			Detail: secrets.errorBody(err),
			Line:   d.lines[err.Field],
		})
	}
	// Last line of defence: whatever produced a message, a secret value
	// that made it into the text is cut out.
	for i := range d.problems {
		d.problems[i].Detail = secrets.scrub(d.problems[i].Detail)
	}
	return true
}

// coveredByBadPath reports whether p is at or below a path whose value
// failed to decode; validating that zero value would repeat the problem.
func (d *decoder) coveredByBadPath(p string) bool {
	for bad := range d.bad {
		if isUnder(p, bad) {
			return true
		}
	}
	return false
}

// isUnder reports whether path p is prefix itself or one of its
// descendants ("aws.creds.key" and "aws.creds[0]" are under "aws.creds",
// "aws.credsX" is not).
func isUnder(p, prefix string) bool {
	if !strings.HasPrefix(p, prefix) {
		return false
	}
	return len(p) == len(prefix) || p[len(prefix)] == '.' || p[len(prefix)] == '['
}
