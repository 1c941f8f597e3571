package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/multicloud-ccm/multicloud-ccm/cmd/multicloud-ccm/command"
	"github.com/multicloud-ccm/multicloud-ccm/providers"
)

// TestFlagGroups: the groups come from the real command's help, ours last,
// and each flag is in the group --help shows it in.
func TestFlagGroups(t *testing.T) {
	groups, err := flagGroups(command.New(providers.NewRegistry(), "", nil))
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]string{}
	for _, g := range groups {
		for _, f := range g.flags {
			in[f.Name] = g.name
		}
	}
	for flag, group := range map[string]string{
		"cloud-config":                "Generic",
		"concurrent-service-syncs":    "Service-lb-controller",
		"load-balancer-repair-period": "Multicloud-ccm controllers",
		"help":                        "Global",
	} {
		if in[flag] != group {
			t.Errorf("--%s in group %q, want %q", flag, in[flag], group)
		}
	}
}

func TestParseDesc(t *testing.T) {
	got, err := parseDesc(`Desc{fqName: "a_total", help: "[ALPHA] Things, by \"kind\".", unit: "", constLabels: {}, variableLabels: {provider,c(kind)}}`)
	want := metric{name: "a_total", stability: "ALPHA", help: `Things, by "kind".`, labels: []string{"provider", "kind"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("parseDesc = %+v, %v; want %+v", got, err, want)
	}
	if _, err := parseDesc("Desc{something else}"); err == nil {
		t.Error("parseDesc accepted an unknown layout")
	}
}

// TestEventCalls: reasons are resolved from constants with their doc
// comments; a literal reason in our code fails the generator.
func TestEventCalls(t *testing.T) {
	dir := t.TempDir()
	src := `package p

import v1 "k8s.io/api/core/v1"

// ReasonDone: the work is done.
// Object: Service
const ReasonDone = "Done"

func f(rec interface{ Event(o any, t, r, m string) }, typ string) {
	rec.Event(nil, v1.EventTypeNormal, ReasonDone, "done")
	rec.Event(nil, typ, ReasonDone, "done")
	rec.Event(nil, v1.EventTypeWarning, "Literal", "oops")
}
`
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	calls, err := eventCalls(dir, "p")
	if err != nil || len(calls) != 3 {
		t.Fatalf("eventCalls = %+v, %v; want 3 calls", calls, err)
	}
	if _, err := ourEvents(calls[2:]); err == nil || !strings.Contains(err.Error(), `"Literal" is a string literal`) {
		t.Errorf("literal reason: err = %v", err)
	}
	if _, err := ourEvents(calls[:2]); err == nil || !strings.Contains(err.Error(), `"Type:" line`) {
		t.Errorf("variable type without Type: line: err = %v", err)
	}
	got, err := ourEvents(calls[:1])
	want := []event{{reason: "Done", typ: "Normal", object: "Service", pkg: "p", meaning: "The work is done."}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ourEvents = %+v, %v; want %+v", got, err, want)
	}
}
