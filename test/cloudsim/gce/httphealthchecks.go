package gce

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
)

// Global legacy HTTP health checks, the only health checks a target pool
// takes: insert, get, list, delete, patch and update, with GCE's defaults
// (port 80, requestPath "/", every 5 s with a 5 s timeout, 2 successes to
// be healthy and 2 failures to be unhealthy) and limits. One in use by a
// target pool cannot be deleted (resourceInUseByAnotherResource), which
// upstream's CCM relies on to keep a shared node health check.
//
// computepb has no HttpHealthCheck any more, so the message is the
// dynamic one of legacy_messages.go, and a Go client reaches these only
// through google.golang.org/api/compute/v1.

func registerHTTPHealthChecks(t *kindTable) {
	t.add(&kind{
		Resource: "HttpHealthChecks", Collection: "httpHealthChecks", Scope: scopeGlobal, Kind: "compute#httpHealthCheck",
		Singular: "http_health_check",
		New:      func() proto.Message { return newLegacy("HttpHealthCheck") },
		NewList:  func() proto.Message { return newLegacy("HttpHealthCheckList") },
		Verbs:    verbsCRUD | verbPatch | verbUpdate,
		Prepare:  prepareHTTPHealthCheck,
	})
}

func prepareHTTPHealthCheck(e *Emulator, c *change) *apiError {
	m := c.Msg
	if aerr := checkProbeTiming(m); aerr != nil {
		return aerr
	}
	if !hasField(m, "port") {
		setInt32(m, "port", 80)
	}
	if p := getInt32(m, "port"); p < 1 || p > 65535 {
		return errInvalid("resource.port", fmt.Sprint(p), "Must be between 1 and 65535.")
	}
	if !hasField(m, "requestPath") {
		setString(m, "requestPath", "/")
	}
	if p := getString(m, "requestPath"); !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "?# ") {
		return errInvalid("resource.requestPath", p, "Must be a path starting with / and without a query.")
	}
	return nil
}

// checkProbeTiming defaults and checks the timing every health check
// message has, legacy or not, under the same JSON names.
func checkProbeTiming(m proto.Message) *apiError {
	for _, f := range []struct {
		name        string
		def, lo, hi int32
	}{
		{"checkIntervalSec", 5, 1, 300},
		{"timeoutSec", 5, 1, 300},
		{"healthyThreshold", 2, 1, 10},
		{"unhealthyThreshold", 2, 1, 10},
	} {
		if !hasField(m, f.name) {
			setInt32(m, f.name, f.def)
		}
		if v := getInt32(m, f.name); v < f.lo || v > f.hi {
			return errInvalid("resource."+f.name, fmt.Sprint(v), fmt.Sprintf("Must be between %d and %d.", f.lo, f.hi))
		}
	}
	if t, i := getInt32(m, "timeoutSec"), getInt32(m, "checkIntervalSec"); t > i {
		return errInvalid("resource.timeoutSec", fmt.Sprint(t), "Must be less than or equal to checkIntervalSec.")
	}
	return nil
}
