package gce

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/iterator"
	"google.golang.org/protobuf/proto"
)

func (env *testEnv) instanceGroups(t *testing.T) *compute.InstanceGroupsClient {
	return client(t, env, compute.NewInstanceGroupsRESTClient)
}

func (env *testEnv) insertGroup(t *testing.T, zone, name string) string {
	t.Helper()
	op, err := env.instanceGroups(t).Insert(t.Context(), &computepb.InsertInstanceGroupRequest{Project: env.project, Zone: zone,
		InstanceGroupResource: &computepb.InstanceGroup{Name: proto.String(name)}})
	wait(t, op, err)
	return LinkBase + "projects/test-project/zones/" + zone + "/instanceGroups/" + name
}

func (env *testEnv) getGroup(t *testing.T, zone, name string) *computepb.InstanceGroup {
	t.Helper()
	ig, err := env.instanceGroups(t).Get(t.Context(), &computepb.GetInstanceGroupRequest{Project: env.project, Zone: zone, InstanceGroup: name})
	if err != nil {
		t.Fatal(err)
	}
	return ig
}

func (env *testEnv) addToGroup(t *testing.T, zone, name string, links ...string) (*compute.Operation, error) {
	t.Helper()
	return env.instanceGroups(t).AddInstances(t.Context(), &computepb.AddInstancesInstanceGroupRequest{Project: env.project, Zone: zone, InstanceGroup: name,
		InstanceGroupsAddInstancesRequestResource: &computepb.InstanceGroupsAddInstancesRequest{Instances: instRefs(links...)}})
}

func (env *testEnv) removeFromGroup(t *testing.T, zone, name string, links ...string) (*compute.Operation, error) {
	t.Helper()
	return env.instanceGroups(t).RemoveInstances(t.Context(), &computepb.RemoveInstancesInstanceGroupRequest{Project: env.project, Zone: zone, InstanceGroup: name,
		InstanceGroupsRemoveInstancesRequestResource: &computepb.InstanceGroupsRemoveInstancesRequest{Instances: instRefs(links...)}})
}

// groupInstances lists a group's instances through the paged
// listInstances, pageSize at a time, as (link, status) pairs.
func (env *testEnv) groupInstances(t *testing.T, zone, name, state string, pageSize int32) [][2]string {
	t.Helper()
	it := env.instanceGroups(t).ListInstances(t.Context(), &computepb.ListInstancesInstanceGroupsRequest{Project: env.project, Zone: zone, InstanceGroup: name,
		MaxResults: proto.Uint32(uint32(pageSize)), InstanceGroupsListInstancesRequestResource: &computepb.InstanceGroupsListInstancesRequest{InstanceState: proto.String(state)}})
	var out [][2]string
	for {
		v, err := it.Next()
		if err == iterator.Done {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, [2]string{v.GetInstance(), v.GetStatus()})
	}
}

// The group of upstream's internal load balancer: made empty, nodes of its
// zone added and removed as they come and go.
func TestInstanceGroupMembers(t *testing.T) {
	env := newTestEnv(t, Config{})
	fx := env.emu.Fixture()
	zone := "us-central1-a"
	n0 := env.launch(t, InstanceSpec{Name: "node-0", Zone: "a"})
	n1 := env.launch(t, InstanceSpec{Name: "node-1", Zone: "a"})
	n2 := env.launch(t, InstanceSpec{Name: "node-2", Zone: "b"})
	igLink := env.insertGroup(t, zone, "k8s-ig--abc")
	ig := env.getGroup(t, zone, "k8s-ig--abc")
	if ig.GetSize() != 0 || ig.Network != nil || ig.GetKind() != "compute#instanceGroup" || ig.GetSelfLink() != igLink ||
		ig.GetZone() != LinkBase+"projects/test-project/zones/us-central1-a" || ig.GetFingerprint() == "" {
		t.Errorf("new group %v", ig)
	}
	op, err := env.addToGroup(t, zone, "k8s-ig--abc", "zones/us-central1-a/instances/node-0", n1.SelfLink)
	wait(t, op, err)
	if op.Proto().GetOperationType() != "addInstances" || op.Proto().GetZone() == "" {
		t.Errorf("operation %v", op.Proto())
	}
	ig = env.getGroup(t, zone, "k8s-ig--abc")
	if ig.GetSize() != 2 || ig.GetNetwork() != fx.NetworkURL || ig.GetSubnetwork() != fx.SubnetworkURL {
		t.Errorf("group with members %v", ig)
	}
	if got := env.emu.InstanceGroupMembers(zone, "k8s-ig--abc"); !slices.Equal(got, []string{n0.SelfLink, n1.SelfLink}) {
		t.Errorf("admin read of members %v", got)
	}
	if got, ok := env.emu.InstanceGroup(zone, "k8s-ig--abc"); !ok || got.GetSize() != 2 || len(env.emu.InstanceGroups()) != 1 {
		t.Errorf("admin read %v", got)
	}
	env.srv.ResetCalls()
	if got := env.groupInstances(t, zone, "k8s-ig--abc", "", 1); !slices.Equal(got, [][2]string{{n0.SelfLink, "RUNNING"}, {n1.SelfLink, "RUNNING"}}) {
		t.Errorf("listInstances %v", got)
	}
	if n := env.srv.CallCount("compute:InstanceGroups.ListInstances"); n != 2 {
		t.Errorf("%d listInstances calls for 2 members in pages of 1", n)
	}

	for _, tc := range []struct {
		name   string
		call   func() (*compute.Operation, error)
		status int
		reason string
	}{
		{"add a member", func() (*compute.Operation, error) { return env.addToGroup(t, zone, "k8s-ig--abc", n0.SelfLink) }, http.StatusBadRequest, "memberAlreadyExists"},
		{"add from another zone", func() (*compute.Operation, error) { return env.addToGroup(t, zone, "k8s-ig--abc", n2.SelfLink) }, http.StatusBadRequest, "invalid"},
		{"add a missing instance", func() (*compute.Operation, error) {
			return env.addToGroup(t, zone, "k8s-ig--abc", "zones/us-central1-a/instances/nope")
		}, http.StatusNotFound, "notFound"},
		{"remove a non-member", func() (*compute.Operation, error) { return env.removeFromGroup(t, zone, "k8s-ig--abc", n2.SelfLink) }, http.StatusNotFound, "notFound"},
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
	_, err = env.addToGroup(t, zone, "k8s-ig--abc", n0.SelfLink)
	if want := "Resource 'projects/test-project/zones/us-central1-a/instances/node-0' is already a member of 'projects/test-project/zones/us-central1-a/instanceGroups/k8s-ig--abc'."; !strings.Contains(err.Error(), want) {
		t.Errorf("memberAlreadyExists message: %v", err)
	}

	// A stopped member is not RUNNING; a deleted one leaves the group.
	if err := env.emu.Stop("node-0"); err != nil {
		t.Fatal(err)
	}
	if got := env.groupInstances(t, zone, "k8s-ig--abc", "RUNNING", 0); !slices.Equal(got, [][2]string{{n1.SelfLink, "RUNNING"}}) {
		t.Errorf("running members %v", got)
	}
	if err := env.emu.Terminate("node-0"); err != nil {
		t.Fatal(err)
	}
	op, err = env.removeFromGroup(t, zone, "k8s-ig--abc", "zones/us-central1-a/instances/node-1")
	wait(t, op, err)
	if ig := env.getGroup(t, zone, "k8s-ig--abc"); ig.GetSize() != 0 || ig.GetNetwork() != fx.NetworkURL {
		t.Errorf("emptied group %v", ig)
	}

	// Named ports, with the fingerprint guarding concurrent changes.
	setPorts := func(fp string) error {
		op, err := env.instanceGroups(t).SetNamedPorts(t.Context(), &computepb.SetNamedPortsInstanceGroupRequest{Project: env.project, Zone: zone, InstanceGroup: "k8s-ig--abc",
			InstanceGroupsSetNamedPortsRequestResource: &computepb.InstanceGroupsSetNamedPortsRequest{Fingerprint: proto.String(fp),
				NamedPorts: []*computepb.NamedPort{{Name: proto.String("http"), Port: proto.Int32(30080)}}}})
		if err != nil {
			return err
		}
		return op.Wait(t.Context())
	}
	wantCode(t, setPorts("stale"), http.StatusPreconditionFailed, "conditionNotMet")
	if err := setPorts(ig.GetFingerprint()); err != nil {
		t.Fatal(err)
	}
	if ig := env.getGroup(t, zone, "k8s-ig--abc"); len(ig.GetNamedPorts()) != 1 || ig.GetNamedPorts()[0].GetPort() != 30080 {
		t.Errorf("named ports %v", ig.GetNamedPorts())
	}

	// Upstream finds its groups by name in each zone.
	it := env.instanceGroups(t).List(t.Context(), &computepb.ListInstanceGroupsRequest{Project: env.project, Zone: zone, Filter: proto.String(`name eq "k8s-ig--.*"`)})
	if got, err := it.Next(); err != nil || got.GetName() != "k8s-ig--abc" {
		t.Errorf("filtered list %v %v", got, err)
	}
	pair, err := env.instanceGroups(t).AggregatedList(t.Context(), &computepb.AggregatedListInstanceGroupsRequest{Project: env.project}).Next()
	if err != nil || pair.Key != "zones/us-central1-a" || len(pair.Value.GetInstanceGroups()) != 1 {
		t.Errorf("aggregated %v %v", pair, err)
	}
	op, err = env.instanceGroups(t).Delete(t.Context(), &computepb.DeleteInstanceGroupRequest{Project: env.project, Zone: zone, InstanceGroup: "k8s-ig--abc"})
	wait(t, op, err)
	if rs := env.srv.Resources(); len(rs) != 6 {
		t.Errorf("left behind %v", rs)
	}
}

// Groups as backends: a group needs a network, and an instance may be in
// one load-balanced group only.
func TestInstanceGroupBackends(t *testing.T) {
	env := newTestEnv(t, Config{})
	zone := "us-central1-a"
	n0 := env.launch(t, InstanceSpec{Name: "node-0", Zone: "a"})
	n1 := env.launch(t, InstanceSpec{Name: "node-1", Zone: "a"})
	g1 := env.insertGroup(t, zone, "g1")
	g2 := env.insertGroup(t, zone, "g2")
	op, err := env.insertRegionHC(t, &computepb.HealthCheck{Name: proto.String("hc"), Type: proto.String("TCP")})
	wait(t, op, err)
	bsc := env.backendServices(t)
	insertBS := func(name string, backends ...*computepb.Backend) (*compute.Operation, error) {
		return bsc.Insert(t.Context(), &computepb.InsertRegionBackendServiceRequest{Project: env.project, Region: env.region,
			BackendServiceResource: &computepb.BackendService{Name: proto.String(name), HealthChecks: []string{"regions/us-central1/healthChecks/hc"}, Backends: backends}})
	}
	group := func(l string) *computepb.Backend { return &computepb.Backend{Group: proto.String(l)} }

	// An empty group has no network yet.
	_, err = insertBS("bs1", group(g1))
	wantCode(t, err, http.StatusBadRequest, "invalid")
	op, err = env.addToGroup(t, zone, "g1", n0.SelfLink)
	wait(t, op, err)
	_, err = insertBS("bs1", group(g1), group("zones/us-central1-a/instanceGroups/g1"))
	wantCode(t, err, http.StatusBadRequest, "invalid")
	if !strings.Contains(err.Error(), "Duplicate instance groups in backend service.") {
		t.Errorf("duplicate message: %v", err)
	}
	_, err = insertBS("bs1", &computepb.Backend{Group: proto.String(g1), BalancingMode: proto.String("UTILIZATION")})
	wantCode(t, err, http.StatusBadRequest, "invalid")
	op, err = insertBS("bs1", group(g1))
	wait(t, op, err)
	if bs := env.getBS(t, "bs1"); bs.GetBackends()[0].GetBalancingMode() != "CONNECTION" || bs.GetBackends()[0].GetGroup() != g1 {
		t.Errorf("backends %v", bs.GetBackends())
	}
	_, err = env.instanceGroups(t).Delete(t.Context(), &computepb.DeleteInstanceGroupRequest{Project: env.project, Zone: zone, InstanceGroup: "g1"})
	wantCode(t, err, http.StatusBadRequest, "resourceInUseByAnotherResource")

	// node-0 may be in g2 while g2 is not load-balanced...
	op, err = env.addToGroup(t, zone, "g2", n0.SelfLink, n1.SelfLink)
	wait(t, op, err)
	// ...but g2 cannot become load-balanced then.
	op, err = insertBS("bs2", group(g2))
	if err != nil {
		t.Fatal(err)
	}
	wantCodeOnly(t, op.Wait(t.Context()), http.StatusBadRequest)
	if code := op.Proto().GetError().GetErrors()[0].GetCode(); code != "INSTANCE_IN_MULTIPLE_LOAD_BALANCED_IGS" {
		t.Errorf("error code %s", code)
	}
	op, err = env.removeFromGroup(t, zone, "g2", n0.SelfLink)
	wait(t, op, err)
	op, err = insertBS("bs2", group(g2))
	wait(t, op, err)
	// Now both are load-balanced: node-1 cannot join g1.
	op, err = env.addToGroup(t, zone, "g1", n1.SelfLink)
	if err != nil {
		t.Fatal(err)
	}
	wantCodeOnly(t, op.Wait(t.Context()), http.StatusBadRequest)
	if got := env.groupInstances(t, zone, "g1", "ALL", 0); len(got) != 1 {
		t.Errorf("g1 members after the failed add %v", got)
	}
}
