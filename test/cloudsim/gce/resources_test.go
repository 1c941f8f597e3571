package gce

import (
	"slices"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	computev1 "google.golang.org/api/compute/v1"
)

// Every load balancer part is in the inventory a leak check compares,
// under the API's kind.
func TestResourcesListLoadBalancerParts(t *testing.T) {
	env := newTestEnv(t, Config{})
	n := env.launch(t, InstanceSpec{Name: "node-0", Zone: "a"})
	if _, err := env.legacyCompute(t).HttpHealthChecks.Insert(env.project, &computev1.HttpHealthCheck{Name: "hc"}).Context(t.Context()).Do(); err != nil {
		t.Fatal(err)
	}
	pool := env.insertPool(t, "pool")
	op, err := env.insertRule(t, &computepb.ForwardingRule{Name: proto.String("ext"), Target: proto.String(pool)})
	wait(t, op, err)
	env.insertGroup(t, "us-central1-a", "ig")
	op, err = env.addToGroup(t, "us-central1-a", "ig", n.SelfLink)
	wait(t, op, err)
	env.ilbBase(t, "bs", "TCP")
	var kinds []string
	for _, r := range env.srv.Resources() {
		kinds = append(kinds, r.Kind)
	}
	for _, k := range []string{"compute#httpHealthCheck", "compute#targetPool", "compute#forwardingRule", "compute#instanceGroup",
		"compute#healthCheck", "compute#backendService", "compute#instance"} {
		if !slices.Contains(kinds, k) {
			t.Errorf("no %s in %v", k, kinds)
		}
	}
}
