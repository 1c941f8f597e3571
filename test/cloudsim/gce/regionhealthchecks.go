package gce

import (
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// Regional health checks, what an INTERNAL backend service probes its
// instances with (it may use a global one instead, healthchecks.go):
// insert, get, list, delete, patch and update. They are validated and
// defaulted as global ones are (prepareHealthCheck), but only of type TCP
// or HTTP. One a backend service uses cannot be deleted.

func registerRegionHealthChecks(t *kindTable) {
	t.add(&kind{
		Resource: "RegionHealthChecks", Collection: "healthChecks", Scope: scopeRegional, Kind: "compute#healthCheck",
		Singular: "health_check",
		New:      func() proto.Message { return &computepb.HealthCheck{} },
		NewList:  func() proto.Message { return &computepb.HealthCheckList{} },
		Verbs:    verbsCRUD | verbPatch | verbUpdate,
		Prepare:  prepareHealthCheck("TCP", "HTTP"),
	})
}
