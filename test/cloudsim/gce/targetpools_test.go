package gce

import (
	"net/http"
	"slices"
	"testing"
	"time"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

func (env *testEnv) targetPools(t *testing.T) *compute.TargetPoolsClient {
	return client(t, env, compute.NewTargetPoolsRESTClient)
}

func (env *testEnv) getTargetPool(t *testing.T, name string) *computepb.TargetPool {
	t.Helper()
	tp, err := env.targetPools(t).Get(t.Context(), &computepb.GetTargetPoolRequest{Project: env.project, Region: env.region, TargetPool: name})
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

// wait fails the test unless the call was accepted and its operation
// finished without error.
func wait(t *testing.T, op *compute.Operation, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func instRefs(links ...string) []*computepb.InstanceReference {
	var out []*computepb.InstanceReference
	for _, l := range links {
		out = append(out, &computepb.InstanceReference{Instance: proto.String(l)})
	}
	return out
}

// The flow of upstream's external load balancer: a pool made with the
// nodes named by partial URL, nodes added and removed as they come and
// go, the pool deleted.
func TestTargetPoolMembers(t *testing.T) {
	env := newTestEnv(t, Config{})
	n0 := env.launch(t, InstanceSpec{Name: "node-0", Zone: "a"})
	n1 := env.launch(t, InstanceSpec{Name: "node-1", Zone: "b"})
	n2 := env.launch(t, InstanceSpec{Name: "node-2", Zone: "c"})
	n3 := env.launch(t, InstanceSpec{Name: "node-3", Zone: "c"})
	tpc := env.targetPools(t)
	op, err := tpc.Insert(t.Context(), &computepb.InsertTargetPoolRequest{Project: env.project, Region: env.region,
		TargetPoolResource: &computepb.TargetPool{
			Name: proto.String("a1b2"), Description: proto.String(`{"kubernetes.io/service-name":"default/web"}`),
			Instances: []string{"zones/us-central1-a/instances/node-0", n1.SelfLink},
		}})
	wait(t, op, err)
	tp := env.getTargetPool(t, "a1b2")
	if !slices.Equal(tp.GetInstances(), []string{n0.SelfLink, n1.SelfLink}) || tp.GetSessionAffinity() != "NONE" ||
		tp.GetKind() != "compute#targetPool" || tp.GetRegion() != LinkBase+"projects/test-project/regions/us-central1" ||
		tp.GetSelfLink() != LinkBase+"projects/test-project/regions/us-central1/targetPools/a1b2" || len(tp.GetHealthChecks()) != 0 {
		t.Errorf("target pool %v", tp)
	}

	add := func(links ...string) (*compute.Operation, error) {
		return tpc.AddInstance(t.Context(), &computepb.AddInstanceTargetPoolRequest{Project: env.project, Region: env.region, TargetPool: "a1b2",
			TargetPoolsAddInstanceRequestResource: &computepb.TargetPoolsAddInstanceRequest{Instances: instRefs(links...)}})
	}
	remove := func(links ...string) (*compute.Operation, error) {
		return tpc.RemoveInstance(t.Context(), &computepb.RemoveInstanceTargetPoolRequest{Project: env.project, Region: env.region, TargetPool: "a1b2",
			TargetPoolsRemoveInstanceRequestResource: &computepb.TargetPoolsRemoveInstanceRequest{Instances: instRefs(links...)}})
	}
	op, err = add("zones/us-central1-c/instances/node-2")
	wait(t, op, err)
	if op.Proto().GetOperationType() != "addInstance" || op.Proto().GetTargetLink() != tp.GetSelfLink() {
		t.Errorf("operation %v", op.Proto())
	}
	if got := env.getTargetPool(t, "a1b2").GetInstances(); !slices.Equal(got, []string{n0.SelfLink, n1.SelfLink, n2.SelfLink}) {
		t.Errorf("after add: %v", got)
	}
	for _, tc := range []struct {
		name   string
		call   func() (*compute.Operation, error)
		status int
		reason string
	}{
		{"add a member", func() (*compute.Operation, error) { return add(n0.SelfLink) }, http.StatusBadRequest, "invalid"},
		{"add one twice", func() (*compute.Operation, error) { return add(n3.SelfLink, n3.SelfLink) }, http.StatusBadRequest, "invalid"},
		{"add a missing instance", func() (*compute.Operation, error) { return add("zones/us-central1-a/instances/nope") }, http.StatusNotFound, "notFound"},
		{"add nothing", func() (*compute.Operation, error) { return add() }, http.StatusBadRequest, "required"},
		{"remove a non-member", func() (*compute.Operation, error) {
			return remove("https://www.googleapis.com/compute/v1/projects/test-project/zones/us-central1-a/instances/other")
		}, http.StatusBadRequest, "invalid"},
	} {
		_, err := tc.call()
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		if code, reason := apiCode(t, err); code != tc.status || reason != tc.reason {
			t.Errorf("%s: %d %s (%v), want %d %s", tc.name, code, reason, err, tc.status, tc.reason)
		}
	}

	op, err = remove("zones/us-central1-b/instances/node-1")
	wait(t, op, err)
	if got := env.getTargetPool(t, "a1b2").GetInstances(); !slices.Equal(got, []string{n0.SelfLink, n2.SelfLink}) {
		t.Errorf("after remove: %v", got)
	}
	// A deleted instance leaves the pool.
	if err := env.emu.Terminate("node-2"); err != nil {
		t.Fatal(err)
	}
	if got := env.getTargetPool(t, "a1b2").GetInstances(); !slices.Equal(got, []string{n0.SelfLink}) {
		t.Errorf("after the instance went: %v", got)
	}
	if n := env.srv.CallCount("compute:TargetPools.AddInstance"); n != 5 {
		t.Errorf("%d addInstance calls counted", n)
	}

	pair, err := tpc.AggregatedList(t.Context(), &computepb.AggregatedListTargetPoolsRequest{Project: env.project}).Next()
	if err != nil || pair.Key != "regions/us-central1" || len(pair.Value.GetTargetPools()) != 1 {
		t.Errorf("aggregated %v %v", pair, err)
	}
	op, err = tpc.Delete(t.Context(), &computepb.DeleteTargetPoolRequest{Project: env.project, Region: env.region, TargetPool: "a1b2"})
	wait(t, op, err)
	_, err = tpc.Get(t.Context(), &computepb.GetTargetPoolRequest{Project: env.project, Region: env.region, TargetPool: "a1b2"})
	wantCode(t, err, http.StatusNotFound, "notFound")
	if rs := env.srv.Resources(); len(rs) != 7 {
		t.Errorf("left behind %v", rs)
	}
}

func TestTargetPoolValidation(t *testing.T) {
	env := newTestEnv(t, Config{})
	env.launch(t, InstanceSpec{Name: "node-0", Zone: "a"})
	node := "zones/us-central1-a/instances/node-0"
	for _, tc := range []struct {
		name   string
		tp     *computepb.TargetPool
		status int
		reason string
	}{
		{"missing instance", &computepb.TargetPool{Name: proto.String("p"), Instances: []string{"zones/us-central1-a/instances/nope"}}, http.StatusNotFound, "notFound"},
		{"instance twice", &computepb.TargetPool{Name: proto.String("p"), Instances: []string{node, node}}, http.StatusBadRequest, "invalid"},
		{"not an instance", &computepb.TargetPool{Name: proto.String("p"), Instances: []string{"global/networks/x"}}, http.StatusBadRequest, "invalid"},
		{"bad affinity", &computepb.TargetPool{Name: proto.String("p"), SessionAffinity: proto.String("GENERATED_COOKIE")}, http.StatusBadRequest, "invalid"},
		{"missing health check", &computepb.TargetPool{Name: proto.String("p"), HealthChecks: []string{"global/httpHealthChecks/nope"}}, http.StatusNotFound, "notFound"},
		{"two health checks", &computepb.TargetPool{Name: proto.String("p"), HealthChecks: []string{"global/httpHealthChecks/a", "global/httpHealthChecks/b"}}, http.StatusBadRequest, "invalid"},
		{"failover without backup", &computepb.TargetPool{Name: proto.String("p"), FailoverRatio: proto.Float32(0.5)}, http.StatusBadRequest, "invalid"},
		{"bad name", &computepb.TargetPool{Name: proto.String("P")}, http.StatusBadRequest, "invalid"},
	} {
		_, err := env.targetPools(t).Insert(t.Context(), &computepb.InsertTargetPoolRequest{Project: env.project, Region: env.region, TargetPoolResource: tc.tp})
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		if code, reason := apiCode(t, err); code != tc.status || reason != tc.reason {
			t.Errorf("%s: %d %s (%v), want %d %s", tc.name, code, reason, err, tc.status, tc.reason)
		}
	}
	if n := len(env.srv.Resources()); n != 5 {
		t.Errorf("%d resources after refused inserts", n)
	}
}

// While an addInstance runs, the pool is busy: another change is refused
// with resourceNotReady, and the instance is a member only once DONE.
func TestTargetPoolBusy(t *testing.T) {
	env := newTestEnv(t, Config{OperationDelay: 200 * time.Millisecond})
	n0 := env.launch(t, InstanceSpec{Name: "node-0"})
	tpc := env.targetPools(t)
	op, err := tpc.Insert(t.Context(), &computepb.InsertTargetPoolRequest{Project: env.project, Region: env.region,
		TargetPoolResource: &computepb.TargetPool{Name: proto.String("p")}})
	wait(t, op, err)
	op, err = tpc.AddInstance(t.Context(), &computepb.AddInstanceTargetPoolRequest{Project: env.project, Region: env.region, TargetPool: "p",
		TargetPoolsAddInstanceRequestResource: &computepb.TargetPoolsAddInstanceRequest{Instances: instRefs(n0.SelfLink)}})
	if err != nil {
		t.Fatal(err)
	}
	if got := env.getTargetPool(t, "p").GetInstances(); len(got) != 0 {
		t.Errorf("member before DONE: %v", got)
	}
	_, err = tpc.Delete(t.Context(), &computepb.DeleteTargetPoolRequest{Project: env.project, Region: env.region, TargetPool: "p"})
	wantCode(t, err, http.StatusBadRequest, "resourceNotReady")
	wait(t, op, nil)
	if got := env.getTargetPool(t, "p").GetInstances(); !slices.Equal(got, []string{n0.SelfLink}) {
		t.Errorf("members when DONE: %v", got)
	}
}
