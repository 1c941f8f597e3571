package gce

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

func testRoute(name string, fx Fixture) *computepb.Route {
	return &computepb.Route{
		Name: proto.String(name), Network: proto.String("global/networks/" + fx.NetworkName),
		DestRange: proto.String("10.200.0.0/24"), NextHopIp: proto.String("10.128.0.9"),
	}
}

// An insert answers a PENDING operation; the route appears only when the
// operation is DONE, which op.Wait (polling GET) sees.
func TestOperationDelay(t *testing.T) {
	env := newTestEnv(t, Config{OperationDelay: 300 * time.Millisecond})
	fx := env.emu.Fixture()
	rc := env.routes(t)
	start := time.Now()
	op, err := rc.Insert(t.Context(), &computepb.InsertRouteRequest{Project: env.project, RouteResource: testRoute("r1", fx)})
	if err != nil {
		t.Fatal(err)
	}
	p := op.Proto()
	if p.GetStatus() != computepb.Operation_PENDING || p.GetOperationType() != "insert" ||
		p.GetTargetLink() != LinkBase+"projects/test-project/global/routes/r1" || p.GetTargetId() == 0 ||
		!strings.HasPrefix(p.GetName(), "operation-") || p.GetSelfLink() != LinkBase+"projects/test-project/global/operations/"+p.GetName() {
		t.Errorf("operation %v", p)
	}
	_, err = rc.Get(t.Context(), &computepb.GetRouteRequest{Project: env.project, Route: "r1"})
	wantCode(t, err, http.StatusNotFound, "notFound")
	// The name is taken while the insert runs.
	_, err = rc.Insert(t.Context(), &computepb.InsertRouteRequest{Project: env.project, RouteResource: testRoute("r1", fx)})
	wantCode(t, err, http.StatusConflict, "alreadyExists")

	if err := op.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !op.Done() || time.Since(start) < 300*time.Millisecond {
		t.Errorf("done %v after %v", op.Done(), time.Since(start))
	}
	rt, err := rc.Get(t.Context(), &computepb.GetRouteRequest{Project: env.project, Route: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if rt.GetId() != p.GetTargetId() || rt.GetNetwork() != fx.NetworkURL || rt.GetPriority() != 1000 {
		t.Errorf("route %v", rt)
	}

	// The wait endpoint blocks until DONE.
	op, err = rc.Delete(t.Context(), &computepb.DeleteRouteRequest{Project: env.project, Route: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	// A second delete meanwhile: the route is busy.
	_, err = rc.Delete(t.Context(), &computepb.DeleteRouteRequest{Project: env.project, Route: "r1"})
	wantCode(t, err, http.StatusBadRequest, "resourceNotReady")
	done, err := env.globalOps(t).Wait(t.Context(), &computepb.WaitGlobalOperationRequest{Project: env.project, Operation: op.Name()})
	if err != nil {
		t.Fatal(err)
	}
	if done.GetStatus() != computepb.Operation_DONE || done.GetOperationType() != "delete" || done.GetEndTime() == "" {
		t.Errorf("waited operation %v", done)
	}
	_, err = rc.Get(t.Context(), &computepb.GetRouteRequest{Project: env.project, Route: "r1"})
	wantCode(t, err, http.StatusNotFound, "notFound")
	if n := env.srv.CallCount("compute:GlobalOperations.Wait"); n != 1 {
		t.Errorf("%d waits", n)
	}
	_, err = env.globalOps(t).Get(t.Context(), &computepb.GetGlobalOperationRequest{Project: env.project, Operation: "operation-nope"})
	wantCode(t, err, http.StatusNotFound, "notFound")
}

// With no delay an operation is DONE in the insert's answer.
func TestOperationImmediate(t *testing.T) {
	env := newTestEnv(t, Config{})
	rc := env.routes(t)
	op, err := rc.Insert(t.Context(), &computepb.InsertRouteRequest{Project: env.project, RouteResource: testRoute("r1", env.emu.Fixture())})
	if err != nil {
		t.Fatal(err)
	}
	if !op.Done() || op.Proto().GetProgress() != 100 {
		t.Fatalf("operation %v", op.Proto())
	}
	if err := op.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, err = rc.Insert(t.Context(), &computepb.InsertRouteRequest{Project: env.project, RouteResource: testRoute("r1", env.emu.Fixture())})
	wantCode(t, err, http.StatusConflict, "alreadyExists")
	if !strings.Contains(err.Error(), "The resource 'projects/test-project/global/routes/r1' already exists") {
		t.Errorf("message %v", err)
	}
}

// A failed operation is DONE with its error; Wait returns it with the
// operation's HTTP status, and the change is undone.
func TestOperationFailure(t *testing.T) {
	env := newTestEnv(t, Config{})
	if err := env.emu.FailOperations(OperationFailure{Op: "compute:Routes.Insert", Code: "QUOTA_EXCEEDED", Message: "Quota 'ROUTES' exceeded.  Limit: 250.0 globally."}); err != nil {
		t.Fatal(err)
	}
	rc := env.routes(t)
	op, err := rc.Insert(t.Context(), &computepb.InsertRouteRequest{Project: env.project, RouteResource: testRoute("r1", env.emu.Fixture())})
	if err != nil {
		t.Fatal(err)
	}
	err = op.Wait(t.Context())
	wantCodeOnly(t, err, http.StatusForbidden)
	p := op.Proto()
	if p.GetError().GetErrors()[0].GetCode() != "QUOTA_EXCEEDED" || p.GetHttpErrorMessage() != "FORBIDDEN" || p.GetStatus() != computepb.Operation_DONE {
		t.Errorf("operation %v", p)
	}
	_, err = rc.Get(t.Context(), &computepb.GetRouteRequest{Project: env.project, Route: "r1"})
	wantCode(t, err, http.StatusNotFound, "notFound")
	// Only one failure was asked for.
	op, err = rc.Insert(t.Context(), &computepb.InsertRouteRequest{Project: env.project, RouteResource: testRoute("r1", env.emu.Fixture())})
	if err != nil || op.Wait(t.Context()) != nil {
		t.Fatalf("second insert: %v", err)
	}
}

// A retried mutation with the same requestId gets the first operation.
func TestRequestIDReplay(t *testing.T) {
	env := newTestEnv(t, Config{})
	rc := env.routes(t)
	req := &computepb.InsertRouteRequest{Project: env.project, RouteResource: testRoute("r1", env.emu.Fixture()),
		RequestId: proto.String("6c1e1a2e-0000-4000-8000-000000000001")}
	op1, err := rc.Insert(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	op2, err := rc.Insert(t.Context(), req)
	if err != nil {
		t.Fatalf("replayed insert: %v", err)
	}
	if op1.Name() != op2.Name() {
		t.Errorf("replay answered operation %s, first was %s", op2.Name(), op1.Name())
	}
}

// wantCodeOnly checks the status of an error that carries no reason (an
// operation's failure, which the client builds from httpErrorStatusCode).
func wantCodeOnly(t *testing.T, err error, status int) {
	t.Helper()
	if err == nil {
		t.Fatalf("want %d, got success", status)
	}
	if code, _ := apiCode(t, err); code != status {
		t.Fatalf("want %d, got %d (%v)", status, code, err)
	}
}
