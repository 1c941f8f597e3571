package gce

import (
	"slices"
	"strings"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
	"google.golang.org/protobuf/proto"
)

// TestPolicyDeniesAsGCEDoes: under a policy for the service account a
// key belongs to, a call through the real REST clients needing a
// permission outside it is a 403 forbidden "Required '<permission>'
// permission for '<resource>'" and changes nothing: a list is checked on
// the project, a create on the resource to be made, and a call using
// another resource needs that resource's permission too (a firewall
// rule's network, a target pool's instance). What the account's calls
// needed is recorded; calls without credentials (another principal) are
// neither checked nor recorded.
func TestPolicyDeniesAsGCEDoes(t *testing.T) {
	env := newTestEnv(t, Config{})
	ctx := t.Context()
	key, err := env.emu.NewServiceAccountKey(testSA, env.srv.URL()+TokenPath)
	if err != nil {
		t.Fatal(err)
	}
	//nolint:staticcheck // the key is ours, a service account key, as the backend's is.
	creds, err := google.CredentialsFromJSON(ctx, key, "https://www.googleapis.com/auth/compute")
	if err != nil {
		t.Fatal(err)
	}
	authed := []option.ClientOption{option.WithEndpoint(env.srv.URL()), option.WithHTTPClient(oauth2.NewClient(ctx, creds.TokenSource))}
	zones, err := compute.NewZonesRESTClient(ctx, authed...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = zones.Close() })
	instances, err := compute.NewInstancesRESTClient(ctx, authed...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = instances.Close() })
	firewalls, err := compute.NewFirewallsRESTClient(ctx, authed...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = firewalls.Close() })
	pools, err := compute.NewTargetPoolsRESTClient(ctx, authed...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pools.Close() })
	fx := env.emu.Fixture()
	inst, err := env.emu.Launch(InstanceSpec{Name: "node-1", Zone: env.zone})
	if err != nil {
		t.Fatal(err)
	}

	env.srv.SetPolicy(testSA, []string{"compute.zones.list", "compute.firewalls.create", "compute.targetPools.create", "compute.targetPools.addInstance"})
	if _, err := zones.List(ctx, &computepb.ListZonesRequest{Project: env.project}).Next(); err != nil {
		t.Fatalf("an allowed call: %v", err)
	}
	_, err = instances.List(ctx, &computepb.ListInstancesRequest{Project: env.project, Zone: env.zone}).Next()
	wantCode(t, err, 403, "forbidden")
	if want := "Required 'compute.instances.list' permission for 'projects/" + env.project + "'"; !strings.Contains(err.Error(), want) {
		t.Errorf("the denial %v does not say %q", err, want)
	}

	// A firewall rule needs the network's updatePolicy too.
	_, err = firewalls.Insert(ctx, &computepb.InsertFirewallRequest{Project: env.project, FirewallResource: &computepb.Firewall{
		Name: proto.String("fw-1"), Network: proto.String(fx.NetworkURL),
		Allowed:      []*computepb.Allowed{{IPProtocol: proto.String("tcp"), Ports: []string{"80"}}},
		SourceRanges: []string{"0.0.0.0/0"},
	}})
	wantCode(t, err, 403, "forbidden")
	if want := "Required 'compute.networks.updatePolicy' permission for 'projects/" + env.project + "/global/networks/" + fx.NetworkName + "'"; !strings.Contains(err.Error(), want) {
		t.Errorf("the denial %v does not say %q", err, want)
	}
	if len(env.emu.Firewalls()) != 0 {
		t.Errorf("a denied insert made %v", env.emu.Firewalls())
	}

	// A target pool is made; adding an instance needs the instance's use.
	_, err = pools.Insert(ctx, &computepb.InsertTargetPoolRequest{Project: env.project, Region: env.region, TargetPoolResource: &computepb.TargetPool{Name: proto.String("pool-1")}})
	if err != nil {
		t.Fatalf("an allowed insert: %v", err)
	}
	_, err = pools.AddInstance(ctx, &computepb.AddInstanceTargetPoolRequest{Project: env.project, Region: env.region, TargetPool: "pool-1",
		TargetPoolsAddInstanceRequestResource: &computepb.TargetPoolsAddInstanceRequest{Instances: []*computepb.InstanceReference{{Instance: proto.String(inst.SelfLink)}}}})
	wantCode(t, err, 403, "forbidden")
	if want := "Required 'compute.instances.use' permission for 'projects/" + env.project + "/zones/" + env.zone + "/instances/node-1'"; !strings.Contains(err.Error(), want) {
		t.Errorf("the denial %v does not say %q", err, want)
	}

	wantUsed := []string{"compute.firewalls.create", "compute.instances.list", "compute.instances.use", "compute.networks.updatePolicy",
		"compute.targetPools.addInstance", "compute.targetPools.create", "compute.zones.list"}
	if got := env.srv.Used(); !slices.Equal(got, wantUsed) {
		t.Errorf("used %v, want %v", got, wantUsed)
	}
	if got := env.srv.Denied(); !slices.Equal(got, []string{"compute.instances.list", "compute.instances.use", "compute.networks.updatePolicy"}) {
		t.Errorf("denied %v", got)
	}

	// Calls without credentials are another principal's.
	env.srv.ResetUsed()
	if _, err := env.routes(t).List(ctx, &computepb.ListRoutesRequest{Project: env.project}).Next(); err != nil && err != iterator.Done {
		t.Errorf("another principal's call: %v", err)
	}
	if got := env.srv.Used(); len(got) != 0 {
		t.Errorf("another principal's calls recorded: %v", got)
	}
	// No policy: everything is served.
	env.srv.SetPolicy("", nil)
	if _, err := instances.List(ctx, &computepb.ListInstancesRequest{Project: env.project, Zone: env.zone}).Next(); err != nil {
		t.Errorf("without a policy: %v", err)
	}
}

// TestPermissionsOfCalls: the permissions calls need, besides their
// method's, as Compute Engine names them (each waited for, which reads
// its operation: the operations' get).
func TestPermissionsOfCalls(t *testing.T) {
	env := newTestEnv(t, Config{})
	ctx := t.Context()
	fx := env.emu.Fixture()
	inst, err := env.emu.Launch(InstanceSpec{Name: "node-1", Zone: env.zone})
	if err != nil {
		t.Fatal(err)
	}
	addresses := client(t, env, compute.NewAddressesRESTClient)
	rules := client(t, env, compute.NewForwardingRulesRESTClient)
	groups := client(t, env, compute.NewInstanceGroupsRESTClient)
	checks := client(t, env, compute.NewHealthChecksRESTClient)
	services := client(t, env, compute.NewRegionBackendServicesRESTClient)
	env.srv.SetPolicy("", nil)
	step := func(what string, want []string, call func() error) {
		t.Helper()
		env.srv.ResetUsed()
		if err := call(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := env.srv.Used(); !slices.Equal(got, want) {
			t.Errorf("%s needs %v, want %v", what, got, want)
		}
	}
	wait := func(op *compute.Operation, err error) error {
		if err != nil {
			return err
		}
		return op.Wait(ctx)
	}
	step("an internal address", []string{"compute.addresses.createInternal", "compute.regionOperations.get", "compute.subnetworks.use"}, func() error {
		return wait(addresses.Insert(ctx, &computepb.InsertAddressRequest{Project: env.project, Region: env.region, AddressResource: &computepb.Address{
			Name: proto.String("ilb"), AddressType: proto.String("INTERNAL"), Subnetwork: proto.String(fx.SubnetworkURL)}}))
	})
	step("an instance group with an instance", []string{"compute.instanceGroups.create", "compute.instanceGroups.update", "compute.instances.use", "compute.zoneOperations.get"}, func() error {
		if err := wait(groups.Insert(ctx, &computepb.InsertInstanceGroupRequest{Project: env.project, Zone: env.zone, InstanceGroupResource: &computepb.InstanceGroup{Name: proto.String("ig")}})); err != nil {
			return err
		}
		return wait(groups.AddInstances(ctx, &computepb.AddInstancesInstanceGroupRequest{Project: env.project, Zone: env.zone, InstanceGroup: "ig",
			InstanceGroupsAddInstancesRequestResource: &computepb.InstanceGroupsAddInstancesRequest{Instances: []*computepb.InstanceReference{{Instance: proto.String(inst.SelfLink)}}}}))
	})
	step("a health check", []string{"compute.globalOperations.get", "compute.healthChecks.create"}, func() error {
		return wait(checks.Insert(ctx, &computepb.InsertHealthCheckRequest{Project: env.project, HealthCheckResource: &computepb.HealthCheck{
			Name: proto.String("hc"), Type: proto.String("HTTP"), HttpHealthCheck: &computepb.HTTPHealthCheck{Port: proto.Int32(10256)}}}))
	})
	step("a backend service", []string{"compute.healthChecks.useReadOnly", "compute.instanceGroups.use", "compute.regionBackendServices.create", "compute.regionOperations.get"}, func() error {
		return wait(services.Insert(ctx, &computepb.InsertRegionBackendServiceRequest{Project: env.project, Region: env.region, BackendServiceResource: &computepb.BackendService{
			Name: proto.String("bs"), LoadBalancingScheme: proto.String("INTERNAL"), Protocol: proto.String("TCP"),
			HealthChecks: []string{"projects/" + env.project + "/global/healthChecks/hc"},
			Backends:     []*computepb.Backend{{Group: proto.String("projects/" + env.project + "/zones/" + env.zone + "/instanceGroups/ig")}}}}))
	})
	step("an internal forwarding rule on the address", []string{"compute.addresses.get", "compute.addresses.useInternal", "compute.forwardingRules.create", "compute.regionBackendServices.use", "compute.regionOperations.get", "compute.subnetworks.use"}, func() error {
		a, err := addresses.Get(ctx, &computepb.GetAddressRequest{Project: env.project, Region: env.region, Address: "ilb"})
		if err != nil {
			return err
		}
		return wait(rules.Insert(ctx, &computepb.InsertForwardingRuleRequest{Project: env.project, Region: env.region, ForwardingRuleResource: &computepb.ForwardingRule{
			Name: proto.String("ilb"), LoadBalancingScheme: proto.String("INTERNAL"), IPAddress: a.Address, IPProtocol: proto.String("TCP"), Ports: []string{"80"},
			Network: proto.String(fx.NetworkURL), Subnetwork: proto.String(fx.SubnetworkURL),
			BackendService: proto.String("projects/" + env.project + "/regions/" + env.region + "/backendServices/bs")}}))
	})
	step("deleting the rule and the internal address", []string{"compute.addresses.deleteInternal", "compute.forwardingRules.delete", "compute.regionOperations.get"}, func() error {
		if err := wait(rules.Delete(ctx, &computepb.DeleteForwardingRuleRequest{Project: env.project, Region: env.region, ForwardingRule: "ilb"})); err != nil {
			return err
		}
		return wait(addresses.Delete(ctx, &computepb.DeleteAddressRequest{Project: env.project, Region: env.region, Address: "ilb"}))
	})
	step("a route to an instance", []string{"compute.globalOperations.get", "compute.instances.use", "compute.networks.updatePolicy", "compute.routes.create"}, func() error {
		return wait(env.routes(t).Insert(ctx, &computepb.InsertRouteRequest{Project: env.project, RouteResource: &computepb.Route{
			Name: proto.String("r"), Network: proto.String(fx.NetworkURL), DestRange: proto.String("10.4.0.0/24"), NextHopInstance: proto.String(inst.SelfLink)}}))
	})
}
