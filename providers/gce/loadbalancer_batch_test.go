package gce

import (
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	gceemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/gce"
)

// TestNodeJoiningIsOneBatch: a node joining 20 external load balancers is
// one addInstance per target pool, each waited for with one operations
// wait (no get polls); a pool whose operation fails is read and retried
// alone.
func TestNodeJoiningIsOneBatch(t *testing.T) {
	env, lb, nodes := lbEnv(t, 2)
	ctx := t.Context()
	var svcs []*v1.Service
	for i := range 20 {
		svc := svcWith(nil)
		svc.Name, svc.UID = fmt.Sprintf("web-%02d", i), types.UID(fmt.Sprintf("%02dd7d4e-1b9a-4f3e-9d5c-0a1b2c3d4e5f", i))
		if _, err := lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes); err != nil {
			t.Fatal(err)
		}
		svcs = append(svcs, svc)
	}
	more := env.launch(t, cloudsim.InstanceSpec{Name: "lb-node-9"})
	md, err := env.cloud.instances.InstanceMetadata(ctx, more[0])
	if err != nil {
		t.Fatal(err)
	}
	more[0].Spec.ProviderID = md.ProviderID
	env.emu.SetOperationDelay(200 * time.Millisecond)
	if err := env.emu.FailOperations(gceemu.OperationFailure{Op: "compute:TargetPools.AddInstance", Code: "RESOURCE_NOT_READY", HTTPStatus: 400, Message: "The resource is not ready"}); err != nil {
		t.Fatal(err)
	}
	env.srv.ResetCalls()
	errs := lb.UpdateLoadBalancerHosts(ctx, "kubernetes", svcs, append(slices.Clone(nodes), more[0]))
	calls := env.srv.Calls()
	// The failed operation's pool is read and its addInstance made again
	// (as UpdateLoadBalancer does when a pool is not as recorded).
	if calls["compute:TargetPools.AddInstance"] != 21 || calls["compute:RegionOperations.Wait"] != 21 || calls["compute:RegionOperations.Get"] != 0 || calls["compute:TargetPools.Get"] != 1 {
		t.Errorf("calls %v: want 21 addInstance, 21 operation waits, one pool read, no operation reads", calls)
	}
	for i, err := range errs {
		if err != nil {
			t.Errorf("%s: %v", svcs[i].Name, err)
			continue
		}
		if got := poolMembers(t, env, lbName(svcs[i])); !slices.Contains(got, "lb-node-9") {
			t.Errorf("%s: members %v", svcs[i].Name, got)
		}
	}
}

// TestInternalServicesShareTheirGroupsInOneBatch: 12 internal Services,
// all in one batch at once, share the cluster's instance groups. A node
// leaving one zone and another joining a new zone change each group once
// (one removeInstances, one group made with one addInstances), whichever
// Service's update runs first; every backend service then spans the
// three zones' groups.
func TestInternalServicesShareTheirGroupsInOneBatch(t *testing.T) {
	env, lb, nodes := ilbEnv(t, 4)
	ctx := t.Context()
	zones := env.emu.Config().Zones
	var svcs []*v1.Service
	for i := range 12 {
		svc := internalSvc(fmt.Sprintf("%02da9a9a-1b9a-4f3e-9d5c-0a1b2c3d4e5f", i), nil, v1.ServicePort{Port: int32(8000 + i), Protocol: v1.ProtocolTCP, NodePort: int32(30000 + i)})
		if _, err := lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes); err != nil {
			t.Fatal(err)
		}
		svcs = append(svcs, svc)
	}
	more := env.launch(t, cloudsim.InstanceSpec{Name: "ilb-node-9", Zone: zones[2]})
	initNode(t, env, more[0])
	now := append(slices.Clone(nodes[1:]), more[0])
	env.emu.SetOperationDelay(100 * time.Millisecond)
	env.srv.ResetCalls()
	errs := lb.UpdateLoadBalancerHosts(ctx, "kubernetes", svcs, now)
	for i, err := range errs {
		if err != nil {
			t.Errorf("%s: %v", svcs[i].Name, err)
		}
	}
	calls := env.srv.Calls()
	if calls["compute:InstanceGroups.RemoveInstances"] != 1 || calls["compute:InstanceGroups.AddInstances"] != 1 || calls["compute:InstanceGroups.Insert"] != 1 {
		t.Errorf("group changes %v: want each group changed once for the 12 Services", calls)
	}
	if got := fmt.Sprint(groupMembers(env, zones[0]), groupMembers(env, zones[1]), groupMembers(env, zones[2])); got != "[ilb-node-2] [ilb-node-1 ilb-node-3] [ilb-node-9]" {
		t.Errorf("group members %s", got)
	}
	for _, svc := range svcs {
		if bs, _ := env.emu.RegionBackendService(lbName(svc)); len(bs.GetBackends()) != 3 {
			t.Errorf("%s: backends %v, want the three zones' groups", svc.Name, bs.GetBackends())
		}
	}
}
