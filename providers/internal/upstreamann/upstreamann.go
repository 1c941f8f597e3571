// Package upstreamann knows every Service annotation of each cloud's
// upstream CCM and what this project does with it, so that switching from
// the upstream CCM never ignores an annotation silently. Each backend
// declares a Table; the Gate applies it in front of the backend's
// LoadBalancer:
//
//   - Supported: read with the upstream meaning, nothing to say;
//   - Ignored: it has no effect here, and the Service gets a Warning Event
//     naming it, once per Service and value;
//   - Refused: ignoring it would change what the user asked for in a way
//     that matters (TLS, the protocol the backends speak, who may reach the
//     load balancer), so the Service is not provisioned and the error says
//     why (the service controller makes it a Warning Event).
//
// hack/refdocs renders every Table into docs/reference/<cloud>.md.
package upstreamann

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
)

// Support is what this project does with an upstream annotation.
type Support int

const (
	// Supported annotations are read with the upstream meaning.
	Supported Support = iota
	// Ignored annotations have no effect here; the Service is warned.
	Ignored
	// Refused annotations stop the Service from being provisioned.
	Refused
)

// String is the word the reference docs use.
func (s Support) String() string {
	switch s {
	case Supported:
		return "supported"
	case Ignored:
		return "ignored (Warning Event)"
	case Refused:
		return "refused (not provisioned)"
	}
	return fmt.Sprintf("Support(%d)", int(s))
}

// PortPlaceholder stands for a port number in a Key (Azure's per-port
// annotations, "service.beta.kubernetes.io/port_{port}_no_lb_rule").
const PortPlaceholder = "{port}"

// Annotation is one upstream annotation.
type Annotation struct {
	// Key is the annotation exactly as the upstream CCM spells it;
	// PortPlaceholder stands for a port number.
	Key string
	// Support is what this project does with it.
	Support Support
	// Upstream is what it does in the upstream CCM, one sentence.
	Upstream string
	// Note says, for Ignored and Refused, why it is not served and what
	// to do instead; it is part of the Event or error the user sees. For
	// Supported it may say how ours differs.
	Note string
	// ByValue, if set, decides per value and overrides Support: a backend
	// protocol of "tcp" is what every listener here speaks anyway
	// (Supported), "https" would not be (Refused). Support then documents
	// the row's usual case.
	ByValue func(value string) Support
	// Ref is where the upstream CCM defines or reads it, as
	// "<repo> <path>:<line>".
	Ref string
}

// Table is a backend's list of its upstream CCM's annotations.
type Table struct {
	// Upstream names the upstream CCM in messages: "the upstream AWS CCM".
	Upstream string
	// Annotations are every Service annotation the upstream CCM reads.
	Annotations []Annotation
	// Elsewhere, if set, reports Services whose load balancer another
	// controller makes (AWS's `aws-load-balancer-type: external`): their
	// annotations are that controller's to read.
	Elsewhere func(*v1.Service) bool
	// ServedFor, if set, reports annotations the backend serves for this
	// Service although the row says otherwise: where support depends on
	// the kind of load balancer the Service gets (a TLS certificate is
	// served on AWS's Classic ELBs before it is on NLBs).
	ServedFor func(svc *v1.Service, key string) bool
}

// Finding is an Ignored or Refused annotation set on a Service.
type Finding struct {
	// Key is the annotation as set on the Service.
	Key string
	// Value is its value.
	Value string
	// Annotation is the table row it matched.
	Annotation *Annotation
	// Support is Ignored or Refused, for this value.
	Support Support
}

// Message is the sentence the Event or error carries.
func (f Finding) Message(upstream string) string {
	switch f.Support {
	case Refused:
		return fmt.Sprintf("annotation %s=%q of %s is not supported here, and ignoring it would change what the Service asks for: %s",
			f.Key, f.Value, upstream, f.Annotation.Note)
	default:
		return fmt.Sprintf("annotation %s of %s has no effect here: %s", f.Key, upstream, f.Annotation.Note)
	}
}

// Check sorts the Service's annotations into those it ignores and those it
// refuses, each in key order.
func (t *Table) Check(svc *v1.Service) (ignored, refused []Finding) {
	if t == nil || len(svc.Annotations) == 0 || (t.Elsewhere != nil && t.Elsewhere(svc)) {
		return nil, nil
	}
	keys := make([]string, 0, len(svc.Annotations))
	for k := range svc.Annotations {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		a := t.Lookup(k)
		if a == nil {
			continue
		}
		v := svc.Annotations[k]
		support := a.Support
		if a.ByValue != nil {
			support = a.ByValue(v)
		}
		if support == Supported || (t.ServedFor != nil && t.ServedFor(svc, k)) {
			continue
		}
		f := Finding{Key: k, Value: v, Annotation: a, Support: support}
		if support == Refused {
			refused = append(refused, f)
		} else {
			ignored = append(ignored, f)
		}
	}
	return ignored, refused
}

// portDigits is what PortPlaceholder matches.
const portDigits = `[0-9]{1,5}`

// patterns caches the compiled form of keys with PortPlaceholder: Lookup
// runs for every annotation of every Service sync.
var patterns sync.Map // key -> *regexp.Regexp

func keyPattern(key string) *regexp.Regexp {
	if re, ok := patterns.Load(key); ok {
		return re.(*regexp.Regexp)
	}
	re := regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(key), regexp.QuoteMeta(PortPlaceholder), portDigits) + "$")
	patterns.Store(key, re)
	return re
}

// Lookup returns the row for an annotation key as a Service sets it, or
// nil if the upstream CCM does not read it.
func (t *Table) Lookup(key string) *Annotation {
	for i := range t.Annotations {
		a := &t.Annotations[i]
		if !strings.Contains(a.Key, PortPlaceholder) {
			if a.Key == key {
				return a
			}
			continue
		}
		if keyPattern(a.Key).MatchString(key) {
			return a
		}
	}
	return nil
}

// Validate reports rows that are incomplete or duplicated: a row without
// a note would give the user an Event that says nothing.
func (t *Table) Validate() error {
	var problems []string
	seen := map[string]bool{}
	for _, a := range t.Annotations {
		switch {
		case a.Key == "":
			problems = append(problems, "a row without a key")
		case seen[a.Key]:
			problems = append(problems, a.Key+": listed twice")
		case a.Upstream == "":
			problems = append(problems, a.Key+": no upstream meaning")
		case a.Ref == "":
			problems = append(problems, a.Key+": no upstream reference")
		case (a.Support != Supported || a.ByValue != nil) && a.Note == "":
			problems = append(problems, a.Key+": ignored or refused without a note saying why")
		}
		seen[a.Key] = true
	}
	if t.Upstream == "" {
		problems = append(problems, "the table does not name its upstream CCM")
	}
	if len(problems) > 0 {
		return fmt.Errorf("upstream annotation table: %s", strings.Join(problems, "; "))
	}
	return nil
}
