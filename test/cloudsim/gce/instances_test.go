package gce

import (
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/iterator"
	"google.golang.org/protobuf/proto"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

func (env *testEnv) instances(t *testing.T) *compute.InstancesClient {
	return client(t, env, compute.NewInstancesRESTClient)
}

func (env *testEnv) launch(t *testing.T, spec InstanceSpec) InstanceInfo {
	t.Helper()
	info, err := env.emu.Launch(spec)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func (env *testEnv) getInstance(t *testing.T, zone, name string) (*computepb.Instance, error) {
	t.Helper()
	return env.instances(t).Get(t.Context(), &computepb.GetInstanceRequest{Project: env.project, Zone: zone, Instance: name})
}

// listNames lists a zone's instance names with filter ("" for none).
func listNames(t *testing.T, ic *compute.InstancesClient, env *testEnv, zone, filter string) []string {
	t.Helper()
	req := &computepb.ListInstancesRequest{Project: env.project, Zone: zone}
	if filter != "" {
		req.Filter = proto.String(filter)
	}
	var out []string
	it := ic.List(t.Context(), req)
	for {
		inst, err := it.Next()
		if err == iterator.Done {
			return out
		}
		if err != nil {
			t.Fatalf("list %s %q: %v", zone, filter, err)
		}
		out = append(out, inst.GetName())
	}
}

func TestInstanceGet(t *testing.T) {
	env := newTestEnv(t, Config{})
	fx := env.emu.Fixture()
	info := env.launch(t, InstanceSpec{Name: "node-a", Zone: "b", MachineType: "n2-standard-4", ExternalIP: true,
		Tags: []string{"k8s-node"}, Labels: map[string]string{"role": "worker"}})
	inst, err := env.getInstance(t, "us-central1-b", "node-a")
	if err != nil {
		t.Fatal(err)
	}
	if inst.GetName() != "node-a" || inst.GetKind() != "compute#instance" || inst.GetStatus() != "RUNNING" ||
		inst.GetMachineType() != LinkBase+"projects/test-project/zones/us-central1-b/machineTypes/n2-standard-4" ||
		inst.GetZone() != LinkBase+"projects/test-project/zones/us-central1-b" ||
		inst.GetSelfLink() != LinkBase+"projects/test-project/zones/us-central1-b/instances/node-a" ||
		fmt.Sprint(inst.GetId()) != info.ID || !slices.Equal(inst.GetTags().GetItems(), []string{"k8s-node"}) ||
		inst.GetLabels()["role"] != "worker" || !inst.GetCanIpForward() || inst.GetCreationTimestamp() == "" {
		t.Errorf("instance %v", inst)
	}
	nic := inst.GetNetworkInterfaces()[0]
	ip, err := netip.ParseAddr(nic.GetNetworkIP())
	if err != nil || !netip.MustParsePrefix(fx.SubnetworkCIDR).Contains(ip) || nic.GetNetwork() != fx.NetworkURL || nic.GetSubnetwork() != fx.SubnetworkURL {
		t.Errorf("network interface %v", nic)
	}
	nat, err := netip.ParseAddr(nic.GetAccessConfigs()[0].GetNatIP())
	if err != nil || !netip.MustParsePrefix(fx.ExternalCIDR).Contains(nat) || nat.String() != info.ExternalIP || ip.String() != info.InternalIP {
		t.Errorf("access config %v, info %+v", nic.GetAccessConfigs(), info)
	}
	if info.ProviderID != "gce://test-project/us-central1-b/node-a" {
		t.Errorf("providerID %s", info.ProviderID)
	}

	_, err = env.getInstance(t, "us-central1-a", "node-a")
	wantCode(t, err, http.StatusNotFound, "notFound")
	if !strings.Contains(err.Error(), "The resource 'projects/test-project/zones/us-central1-a/instances/node-a' was not found") {
		t.Errorf("message %v", err)
	}
	_, err = env.getInstance(t, "us-central1-z", "node-a")
	wantCode(t, err, http.StatusBadRequest, "invalid")
	// Instances are made by the admin API, not inserted.
	_, err = env.instances(t).Insert(t.Context(), &computepb.InsertInstanceRequest{Project: env.project, Zone: env.zone,
		InstanceResource: &computepb.Instance{Name: proto.String("x")}})
	wantCode(t, err, http.StatusNotImplemented, "notImplemented")
}

func TestInstanceListAndFilter(t *testing.T) {
	env := newTestEnv(t, Config{PageSize: 3})
	for i := range 7 {
		env.launch(t, InstanceSpec{Name: fmt.Sprintf("node-%d", i), Zone: "a", Labels: map[string]string{"pool": fmt.Sprint(i % 2)}})
	}
	env.launch(t, InstanceSpec{Name: "other", Zone: "a", Status: StatusTerminated})
	env.launch(t, InstanceSpec{Name: "node-b", Zone: "b"})
	ic := env.instances(t)

	all := listNames(t, ic, env, "us-central1-a", "")
	if len(all) != 8 || all[0] != "node-0" || all[7] != "other" {
		t.Errorf("zone a lists %v", all)
	}
	if n := env.srv.CallCount("compute:Instances.List"); n != 3 {
		t.Errorf("%d list calls for 8 instances in pages of 3", n)
	}
	for filter, want := range map[string][]string{
		`name eq "node-.*"`:                          {"node-0", "node-1", "node-2", "node-3", "node-4", "node-5", "node-6"},
		`name eq "(node-1|node-5|gone)"`:             {"node-1", "node-5"},
		`labels.pool = "1"`:                          {"node-1", "node-3", "node-5"},
		`(labels.pool = "1") AND (name != node-3)`:   {"node-1", "node-5"},
		`status = TERMINATED`:                        {"other"},
		`labels.pool:*`:                              {"node-0", "node-1", "node-2", "node-3", "node-4", "node-5", "node-6"},
		`networkInterfaces.networkIP = "10.128.0.2"`: {"node-0"},
	} {
		if got := listNames(t, ic, env, "us-central1-a", filter); !slices.Equal(got, want) {
			t.Errorf("filter %s: %v, want %v", filter, got, want)
		}
	}

	// aggregatedList: every zone, paged across all of them.
	env.srv.ResetCalls()
	byZone := map[string][]string{}
	it := ic.AggregatedList(t.Context(), &computepb.AggregatedListInstancesRequest{Project: env.project, Filter: proto.String(`name ne "other"`)})
	for {
		pair, err := it.Next()
		if err == iterator.Done {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, inst := range pair.Value.GetInstances() {
			byZone[pair.Key] = append(byZone[pair.Key], inst.GetName())
		}
		if len(pair.Value.GetInstances()) == 0 && pair.Value.GetWarning().GetCode() != "NO_RESULTS_ON_PAGE" {
			t.Errorf("empty scope %s without warning: %v", pair.Key, pair.Value)
		}
	}
	if len(byZone["zones/us-central1-a"]) != 7 || !slices.Equal(byZone["zones/us-central1-b"], []string{"node-b"}) || len(byZone["zones/us-central1-c"]) != 0 {
		t.Errorf("aggregated %v", byZone)
	}
	if n := env.srv.CallCount("compute:Instances.AggregatedList"); n != 3 {
		t.Errorf("%d aggregated calls for 8 instances in pages of 3", n)
	}

	// A throttled list is the 403 the backend must back off from.
	env.setFault(t, cloudsim.FaultSpec{Op: "compute:Instances.List", ThrottleNext: 1})
	_, err := ic.List(t.Context(), &computepb.ListInstancesRequest{Project: env.project, Zone: env.zone}).Next()
	wantCode(t, err, http.StatusForbidden, "rateLimitExceeded")
}

// stop, start and delete through the API, with operations that take
// time.
func TestInstanceLifecycleAPI(t *testing.T) {
	env := newTestEnv(t, Config{OperationDelay: 200 * time.Millisecond})
	first := env.launch(t, InstanceSpec{Name: "node-a", Zone: "a", ExternalIP: true})
	ic := env.instances(t)
	req := func() (string, string, string) { return env.project, "us-central1-a", "node-a" }
	p, z, n := req()

	op, err := ic.Stop(t.Context(), &computepb.StopInstanceRequest{Project: p, Zone: z, Instance: n})
	if err != nil {
		t.Fatal(err)
	}
	if op.Proto().GetZone() != LinkBase+"projects/test-project/zones/us-central1-a" || op.Proto().GetOperationType() != "stop" {
		t.Errorf("operation %v", op.Proto())
	}
	if inst, _ := env.getInstance(t, z, n); inst.GetStatus() != StatusStopping {
		t.Errorf("status %s while stopping", inst.GetStatus())
	}
	if err := op.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	inst, err := env.getInstance(t, z, n)
	if err != nil {
		t.Fatal(err)
	}
	if inst.GetStatus() != StatusTerminated || len(inst.GetNetworkInterfaces()[0].GetAccessConfigs()) != 1 || externalIP(inst) != "" {
		t.Errorf("stopped instance %v", inst)
	}

	op, err = ic.Start(t.Context(), &computepb.StartInstanceRequest{Project: p, Zone: z, Instance: n})
	if err != nil {
		t.Fatal(err)
	}
	done, err := env.zoneOps(t).Wait(t.Context(), &computepb.WaitZoneOperationRequest{Project: p, Zone: z, Operation: op.Name()})
	if err != nil || done.GetStatus() != computepb.Operation_DONE {
		t.Fatal(done, err)
	}
	info, _ := env.emu.Instance(n)
	if info.Status != StatusRunning || info.ExternalIP == "" || info.ExternalIP == first.ExternalIP || info.InternalIP != first.InternalIP {
		t.Errorf("restarted %+v (first %+v)", info, first)
	}

	// A stop that fails leaves the instance running.
	if err := env.emu.FailOperations(OperationFailure{Op: "compute:Instances.Stop", Code: "UNSUPPORTED_OPERATION", HTTPStatus: http.StatusBadRequest}); err != nil {
		t.Fatal(err)
	}
	op, err = ic.Stop(t.Context(), &computepb.StopInstanceRequest{Project: p, Zone: z, Instance: n})
	if err != nil {
		t.Fatal(err)
	}
	wantCodeOnly(t, op.Wait(t.Context()), http.StatusBadRequest)
	if info, _ := env.emu.Instance(n); info.Status != StatusRunning {
		t.Errorf("after a failed stop: %+v", info)
	}

	op, err = ic.Delete(t.Context(), &computepb.DeleteInstanceRequest{Project: p, Zone: z, Instance: n})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ic.Stop(t.Context(), &computepb.StopInstanceRequest{Project: p, Zone: z, Instance: n})
	wantCode(t, err, http.StatusBadRequest, "resourceNotReady")
	if err := op.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, err = env.getInstance(t, z, n)
	wantCode(t, err, http.StatusNotFound, "notFound")
	if len(env.emu.Instances()) != 0 || len(env.srv.Resources()) != 4 {
		t.Errorf("left behind: %v %v", env.emu.Instances(), env.srv.Resources())
	}
}

// The admin API, in Go and over HTTP, and its cloud-neutral face.
func TestInstanceAdmin(t *testing.T) {
	env := newTestEnv(t, Config{})
	var launched InstanceInfo
	body := strings.NewReader(`{"name":"node-x","zone":"c","externalIp":true,"tags":["web"]}`)
	if code := adminJSON(t, env, "POST", "/admin/gce/instances", body, &launched); code != http.StatusCreated || launched.Zone != "us-central1-c" {
		t.Fatalf("launch: %d %+v", code, launched)
	}
	var stopped InstanceInfo
	if code := adminJSON(t, env, "POST", "/admin/gce/instances/node-x/stop", nil, &stopped); code != http.StatusOK ||
		stopped.Status != StatusTerminated || stopped.ExternalIP != "" {
		t.Fatalf("stop: %d %+v", code, stopped)
	}
	if err := env.emu.Start("node-x"); err != nil {
		t.Fatal(err)
	}
	if err := env.emu.SetStatus("node-x", StatusSuspended); err != nil {
		t.Fatal(err)
	}
	_, err := env.instances(t).Start(t.Context(), &computepb.StartInstanceRequest{Project: env.project, Zone: "us-central1-c", Instance: "node-x"})
	wantCode(t, err, http.StatusBadRequest, "invalid")
	if err := env.emu.SetStatus("node-x", "ASLEEP"); err == nil {
		t.Error("unknown status accepted")
	}

	// cloudsim.Instances: IDs are names, zones spread round robin.
	var insts cloudsim.Instances = env.emu
	n0, err := insts.LaunchInstance(cloudsim.InstanceSpec{Name: "n0", PublicIP: true, Tags: map[string]string{"env": "test"}})
	if err != nil {
		t.Fatal(err)
	}
	n1, _ := insts.LaunchInstance(cloudsim.InstanceSpec{Name: "n1", InstanceType: "e2-medium"})
	if n0.ID != "n0" || n0.Zone == n1.Zone || n0.State != cloudsim.InstanceRunning || n0.PublicIP == "" ||
		n0.Hostname != "n0" || n0.Tags["env"] != "test" || n1.InstanceType != "e2-medium" {
		t.Errorf("launched %+v %+v", n0, n1)
	}
	if _, err := insts.LaunchInstance(cloudsim.InstanceSpec{Name: "n0"}); err == nil {
		t.Error("duplicate name accepted")
	}
	if _, err := insts.LaunchInstance(cloudsim.InstanceSpec{Name: "n2", Tags: map[string]string{"Bad Key": "x"}}); err == nil {
		t.Error("invalid label accepted")
	}
	if err := insts.StopInstance("n0"); err != nil {
		t.Fatal(err)
	}
	if got, _ := insts.GetInstance("n0"); got.State != cloudsim.InstanceStopped || got.CloudState != StatusTerminated {
		t.Errorf("stopped %+v", got)
	}
	if err := insts.TerminateInstance("n0"); err != nil {
		t.Fatal(err)
	}
	if _, ok := insts.GetInstance("n0"); ok {
		t.Error("terminated instance still there")
	}
	if err := insts.StopInstance("n0"); err == nil {
		t.Error("stopping a deleted instance")
	}
	var list []cloudsim.InstanceInfo
	if code := adminJSON(t, env, "GET", "/admin/instances", nil, &list); code != http.StatusOK || len(list) != 2 || list[0].ID != "node-x" {
		t.Errorf("neutral listing: %d %+v", code, list)
	}
	_, err = env.getInstance(t, n0.Zone, "n0")
	wantCode(t, err, http.StatusNotFound, "notFound")
}
