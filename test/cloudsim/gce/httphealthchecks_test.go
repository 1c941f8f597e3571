package gce

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
	"google.golang.org/protobuf/proto"

	computev1 "google.golang.org/api/compute/v1"
)

// legacyCompute is the discovery-based client upstream's CCM uses, the
// only Go client left with httpHealthChecks.
func (env *testEnv) legacyCompute(t *testing.T) *computev1.Service {
	t.Helper()
	svc, err := computev1.NewService(t.Context(), option.WithEndpoint(env.srv.URL()+"/compute/v1/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// wantLegacyCode fails unless err is a *googleapi.Error with status and
// reason, as the discovery client returns them.
func wantLegacyCode(t *testing.T, err error, status int, reason string) {
	t.Helper()
	var ge *googleapi.Error
	if !errors.As(err, &ge) {
		t.Fatalf("want %d %s, got %v", status, reason, err)
	}
	if ge.Code != status || len(ge.Errors) == 0 || ge.Errors[0].Reason != reason {
		t.Fatalf("want %d %s, got %v", status, reason, err)
	}
}

func TestHTTPHealthCheckLifecycle(t *testing.T) {
	env := newTestEnv(t, Config{})
	hcs := env.legacyCompute(t).HttpHealthChecks
	ctx := t.Context()
	// What upstream's CCM makes for a Service's nodes.
	op, err := hcs.Insert(env.project, &computev1.HttpHealthCheck{
		Name: "k8s-1234-node", Description: `{"kubernetes.io/service-name":"k8s-1234-node"}`,
		Port: 10256, RequestPath: "/healthz", CheckIntervalSec: 8, TimeoutSec: 1, HealthyThreshold: 1, UnhealthyThreshold: 3,
	}).Context(ctx).Do()
	if err != nil {
		t.Fatal(err)
	}
	if op.Status != "DONE" || op.OperationType != "insert" || op.TargetLink != LinkBase+"projects/test-project/global/httpHealthChecks/k8s-1234-node" {
		t.Errorf("operation %+v", op)
	}
	hc, err := hcs.Get(env.project, "k8s-1234-node").Context(ctx).Do()
	if err != nil {
		t.Fatal(err)
	}
	if hc.Kind != "compute#httpHealthCheck" || hc.Id == 0 || hc.Port != 10256 || hc.RequestPath != "/healthz" ||
		hc.CheckIntervalSec != 8 || hc.TimeoutSec != 1 || hc.HealthyThreshold != 1 || hc.UnhealthyThreshold != 3 ||
		hc.SelfLink != op.TargetLink || hc.CreationTimestamp == "" {
		t.Errorf("health check %+v", hc)
	}

	// GCE's defaults.
	if _, err := hcs.Insert(env.project, &computev1.HttpHealthCheck{Name: "plain"}).Context(ctx).Do(); err != nil {
		t.Fatal(err)
	}
	hc, _ = hcs.Get(env.project, "plain").Context(ctx).Do()
	if hc.Port != 80 || hc.RequestPath != "/" || hc.CheckIntervalSec != 5 || hc.TimeoutSec != 5 || hc.HealthyThreshold != 2 || hc.UnhealthyThreshold != 2 {
		t.Errorf("defaults %+v", hc)
	}
	_, err = hcs.Insert(env.project, &computev1.HttpHealthCheck{Name: "plain"}).Context(ctx).Do()
	wantLegacyCode(t, err, http.StatusConflict, "alreadyExists")

	list, err := hcs.List(env.project).Filter(`name eq "k8s-.*"`).Context(ctx).Do()
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "k8s-1234-node" || list.Kind != "compute#httpHealthCheckList" {
		t.Errorf("list %+v %v", list, err)
	}

	// Patch keeps what it does not name; update replaces the whole check.
	if _, err := hcs.Patch(env.project, "k8s-1234-node", &computev1.HttpHealthCheck{RequestPath: "/livez"}).Context(ctx).Do(); err != nil {
		t.Fatal(err)
	}
	hc, _ = hcs.Get(env.project, "k8s-1234-node").Context(ctx).Do()
	if hc.RequestPath != "/livez" || hc.Port != 10256 || hc.CheckIntervalSec != 8 {
		t.Errorf("patched %+v", hc)
	}
	if _, err := hcs.Update(env.project, "k8s-1234-node", &computev1.HttpHealthCheck{Name: "k8s-1234-node", Port: 10256}).Context(ctx).Do(); err != nil {
		t.Fatal(err)
	}
	hc, _ = hcs.Get(env.project, "k8s-1234-node").Context(ctx).Do()
	if hc.RequestPath != "/" || hc.CheckIntervalSec != 5 || hc.Description != "" || hc.Port != 10256 {
		t.Errorf("updated %+v", hc)
	}
	if n := env.srv.CallCount("compute:HttpHealthChecks.Get"); n != 4 {
		t.Errorf("%d gets counted", n)
	}

	for _, tc := range []struct {
		name string
		hc   *computev1.HttpHealthCheck
	}{
		{"timeout over interval", &computev1.HttpHealthCheck{Name: "x", CheckIntervalSec: 2, TimeoutSec: 3}},
		{"port out of range", &computev1.HttpHealthCheck{Name: "x", Port: 70000}},
		{"relative path", &computev1.HttpHealthCheck{Name: "x", RequestPath: "healthz"}},
		{"path with a query", &computev1.HttpHealthCheck{Name: "x", RequestPath: "/healthz?x=1"}},
		{"threshold too high", &computev1.HttpHealthCheck{Name: "x", HealthyThreshold: 11}},
	} {
		_, err := hcs.Insert(env.project, tc.hc).Context(ctx).Do()
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		var ge *googleapi.Error
		if !errors.As(err, &ge) || ge.Code != http.StatusBadRequest {
			t.Errorf("%s: %v", tc.name, err)
		}
	}

	if _, err := hcs.Delete(env.project, "plain").Context(ctx).Do(); err != nil {
		t.Fatal(err)
	}
	_, err = hcs.Get(env.project, "plain").Context(ctx).Do()
	wantLegacyCode(t, err, http.StatusNotFound, "notFound")
}

// A target pool holds its health check: while it does, the check cannot
// be deleted, with the error upstream's CCM recognises ("being used by").
func TestTargetPoolHealthCheck(t *testing.T) {
	env := newTestEnv(t, Config{})
	hcs := env.legacyCompute(t).HttpHealthChecks
	for _, name := range []string{"hc-a", "hc-b"} {
		if _, err := hcs.Insert(env.project, &computev1.HttpHealthCheck{Name: name}).Context(t.Context()).Do(); err != nil {
			t.Fatal(err)
		}
	}
	hcA := LinkBase + "projects/test-project/global/httpHealthChecks/hc-a"
	tpc := env.targetPools(t)
	op, err := tpc.Insert(t.Context(), &computepb.InsertTargetPoolRequest{Project: env.project, Region: env.region,
		TargetPoolResource: &computepb.TargetPool{Name: proto.String("pool-1"), HealthChecks: []string{"global/httpHealthChecks/hc-a"}}})
	wait(t, op, err)
	op, err = tpc.Insert(t.Context(), &computepb.InsertTargetPoolRequest{Project: env.project, Region: env.region,
		TargetPoolResource: &computepb.TargetPool{Name: proto.String("pool-2")}})
	wait(t, op, err)
	if got := env.getTargetPool(t, "pool-1").GetHealthChecks(); len(got) != 1 || got[0] != hcA {
		t.Errorf("pool-1 health checks %v", got)
	}
	hcRefs := func(links ...string) []*computepb.HealthCheckReference {
		var out []*computepb.HealthCheckReference
		for _, l := range links {
			out = append(out, &computepb.HealthCheckReference{HealthCheck: proto.String(l)})
		}
		return out
	}
	addHC := func(pool string, links ...string) (*computepb.Operation, error) {
		op, err := tpc.AddHealthCheck(t.Context(), &computepb.AddHealthCheckTargetPoolRequest{Project: env.project, Region: env.region, TargetPool: pool,
			TargetPoolsAddHealthCheckRequestResource: &computepb.TargetPoolsAddHealthCheckRequest{HealthChecks: hcRefs(links...)}})
		if err != nil {
			return nil, err
		}
		return op.Proto(), op.Wait(t.Context())
	}
	removeHC := func(pool string, links ...string) error {
		op, err := tpc.RemoveHealthCheck(t.Context(), &computepb.RemoveHealthCheckTargetPoolRequest{Project: env.project, Region: env.region, TargetPool: pool,
			TargetPoolsRemoveHealthCheckRequestResource: &computepb.TargetPoolsRemoveHealthCheckRequest{HealthChecks: hcRefs(links...)}})
		if err != nil {
			return err
		}
		return op.Wait(t.Context())
	}
	// Both pools share hc-a, as upstream's node health check is shared.
	if p, err := addHC("pool-2", hcA); err != nil || p.GetOperationType() != "addHealthCheck" {
		t.Fatal(p, err)
	}
	_, err = addHC("pool-2", "global/httpHealthChecks/hc-b")
	wantCode(t, err, http.StatusBadRequest, "invalid")
	_, err = addHC("pool-2", "global/httpHealthChecks/nope")
	wantCode(t, err, http.StatusNotFound, "notFound")

	_, err = hcs.Delete(env.project, "hc-a").Context(t.Context()).Do()
	wantLegacyCode(t, err, http.StatusBadRequest, "resourceInUseByAnotherResource")
	if !strings.Contains(err.Error(), "is already being used by 'projects/test-project/regions/us-central1/targetPools/pool-1'") {
		t.Errorf("in-use message: %v", err)
	}
	if err := removeHC("pool-1", hcA); err != nil {
		t.Fatal(err)
	}
	wantCode(t, removeHC("pool-1", hcA), http.StatusBadRequest, "invalid")
	// Still held by pool-2; deleting that pool frees it.
	_, err = hcs.Delete(env.project, "hc-a").Context(t.Context()).Do()
	wantLegacyCode(t, err, http.StatusBadRequest, "resourceInUseByAnotherResource")
	op, err = tpc.Delete(t.Context(), &computepb.DeleteTargetPoolRequest{Project: env.project, Region: env.region, TargetPool: "pool-2"})
	wait(t, op, err)
	if _, err := hcs.Delete(env.project, "hc-a").Context(t.Context()).Do(); err != nil {
		t.Fatal(err)
	}
}
