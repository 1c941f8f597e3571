package importcfg

import (
	"bytes"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"gopkg.in/gcfg.v1"
	"gopkg.in/warnings.v0"
)

// UnknownKey is a section or key of an INI file that the upstream CCM's
// config struct has no field for. The upstream CCMs read with
// gcfg.FatalOnly, so they ignored these silently; an import reports them.
type UnknownKey struct {
	// Section and Subsection as the file spells them; Variable is empty
	// when the whole section is unknown.
	Section, Subsection, Variable string
}

// String is the key as a Note names it: `[LoadBalancer] use-octavia`,
// `[ServiceOverride "1"] Foo`, `[Metrics]`.
func (k UnknownKey) String() string {
	s := "[" + k.Section + "]"
	if k.Subsection != "" {
		s = fmt.Sprintf("[%s %q]", k.Section, k.Subsection)
	}
	if k.Variable != "" {
		s += " " + k.Variable
	}
	return s
}

// ReadINI reads a gcfg INI file (AWS and OpenStack cloud.conf, GCE
// gce.conf) into dst, a pointer to the upstream CCM's config struct, with
// gopkg.in/gcfg.v1 as the upstream CCMs do. It returns the keys with no
// field, once each in the order gcfg met them. A file gcfg refuses is an
// error that names its line.
func ReadINI(data []byte, dst any) ([]UnknownKey, error) {
	text := string(bytes.TrimPrefix(data, []byte("\ufeff")))
	err := gcfg.ReadStringInto(dst, text)
	if fatal := gcfg.FatalOnly(err); fatal != nil {
		return nil, lineError(text, reflect.TypeOf(dst).Elem(), fatal)
	}
	var out []UnknownKey
	seen := map[string]bool{}
	for _, w := range warnings.WarningsOnly(err) {
		k, ok := unknownKey(w)
		if !ok {
			// gcfg's only warning is extraData; anything else would be
			// a gcfg change worth seeing, as the key it names.
			k = UnknownKey{Section: w.Error()}
		}
		// gcfg reads sections and subsections in two passes and warns
		// about an unknown section in both.
		if id := strings.ToLower(k.String()); !seen[id] {
			seen[id] = true
			out = append(out, k)
		}
	}
	return out, nil
}

// extraDataRE reads gcfg's warning for data with no field, `can't store
// data at section "s", subsection "u", variable "v"` (gopkg.in/gcfg.v1
// errors.go): its type is unexported, so its text is all there is.
var extraDataRE = regexp.MustCompile(`^can't store data at section "([^"]*)"(?:, subsection "([^"]*)")?(?:, variable "([^"]*)")?$`)

func unknownKey(w error) (UnknownKey, bool) {
	m := extraDataRE.FindStringSubmatch(w.Error())
	if m == nil {
		return UnknownKey{}, false
	}
	return UnknownKey{Section: m[1], Subsection: m[2], Variable: m[3]}, true
}

// positionRE is the "line:column: " gcfg puts before a syntax error.
var positionRE = regexp.MustCompile(`^(\d+):(\d+): (.*)$`)

// lineError makes a fatal gcfg error name its line. Syntax errors carry
// "line:column"; a value gcfg cannot convert ("monitor-delay = 5") names
// only its section and key, so the line is the last of the shortest
// prefix of the file that gcfg refuses, and that prefix's error goes with
// it (gcfg reads subsections in a second pass, so for the whole file it
// may report a later line first). A prefix ending on a continued line (a
// trailing backslash) is never a place to stop. Config files are a few
// dozen lines: the repeated reads cost nothing.
func lineError(text string, t reflect.Type, fatal error) error {
	if m := positionRE.FindStringSubmatch(fatal.Error()); m != nil {
		return fmt.Errorf("line %s, column %s: %s", m[1], m[2], m[3])
	}
	lines := strings.SplitAfter(text, "\n")
	for n := 1; n <= len(lines); n++ {
		if n < len(lines) && strings.HasSuffix(strings.TrimRight(lines[n-1], "\r\n"), `\`) {
			continue
		}
		probe := reflect.New(t).Interface()
		if err := gcfg.FatalOnly(gcfg.ReadStringInto(probe, strings.Join(lines[:n], ""))); err != nil {
			if m := positionRE.FindStringSubmatch(err.Error()); m != nil {
				return fmt.Errorf("line %s, column %s: %s", m[1], m[2], m[3])
			}
			return fmt.Errorf("line %d: %w", n, err)
		}
	}
	return fmt.Errorf("line %d: %w", len(lines), fatal)
}
