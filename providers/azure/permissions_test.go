package azure

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/component-base/metrics"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/cloudmetrics"
	decl "github.com/multicloud-ccm/multicloud-ccm/providers/permissions"
	azemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/azure"
)

// TestPermissionsDeclared: the declaration is well-formed; the always-on
// features are on for every config; the optional ones are turned on by
// their settings only (node-ipam by a flag, so by none).
func TestPermissionsDeclared(t *testing.T) {
	d := Permissions()
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	bare := &Section{}
	bare.SetDefaults()
	full := &Section{SecurityGroupName: "nsg", RouteTableName: "rt", LoadBalancerBackendPoolConfigurationType: PoolNodeIPConfiguration}
	full.SetDefaults()
	if got, want := PermissionFeatures(bare, false), []string{"nodes", "load-balancers", "drift-repair-and-orphans", "ip-backend-pools"}; !slices.Equal(got, want) {
		t.Errorf("features of a bare config %v, want %v", got, want)
	}
	if got, want := PermissionFeatures(full, true), []string{"nodes", "load-balancers", "drift-repair-and-orphans", "nic-backend-pools", "security-rules", "orphan-deletion", "routes"}; !slices.Equal(got, want) {
		t.Errorf("features of a full config %v, want %v", got, want)
	}
	on := append(PermissionFeatures(full, true), PermissionFeatures(bare, false)...)
	for _, f := range d.Features {
		switch {
		case !f.Optional && !slices.Contains(PermissionFeatures(bare, false), f.Name):
			t.Errorf("feature %s is always on but a bare config does not turn it on", f.Name)
		case f.Optional && f.Name != "node-ipam" && !slices.Contains(on, f.Name):
			t.Errorf("optional feature %s is turned on by no config", f.Name)
		}
	}
	if _, err := d.Grants(PermissionFeatures(full, true)...); err != nil {
		t.Error(err)
	}
}

// underPolicy puts env's emulator under the declared policy of the
// features its section turns on (and extra ones), for the service
// principal the backend calls as; at cleanup no call may have been
// denied.
func underPolicy(t *testing.T, env *testEnv, extra ...string) {
	t.Helper()
	grants, err := Permissions().Grants(append(PermissionFeatures(env.s, false), extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	env.srv.SetPolicy(strings.ToLower(env.fx.ClientID), decl.Permissions(grants))
	t.Cleanup(func() {
		if denied := env.srv.Denied(); len(denied) > 0 {
			t.Errorf("the emulator denied %v: declare them in permissions.go", denied)
		}
	})
}

// TestDeclaredPermissionsSuffice: the backend's calls for NIC-based
// pools with a scale set (model and instance writes), address-based
// pools with internal and public Services, routes and the cloud
// allocator's availability set tags all go through under the declared
// policy of the features their config turns on. The conformance suite
// runs the release binary the same way; these are the paths it does not
// take (scale set writes).
func TestDeclaredPermissionsSuffice(t *testing.T) {
	t.Run("nic-backend-pools with a scale set", func(t *testing.T) {
		env := newTestEnv(t, azemu.Config{}, func(s *Section) { s.LoadBalancerBackendPoolConfigurationType = PoolNodeIPConfiguration })
		underPolicy(t, env)
		ctx := t.Context()
		nodes := env.lbNodes(t, 1)
		ss, err := env.emu.CreateScaleSet(azemu.ScaleSetSpec{Name: "perm-pool", Capacity: 2})
		if err != nil {
			t.Fatal(err)
		}
		for _, inst := range ss.Instances {
			nodes = append(nodes, env.initialized(t, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: strings.ToLower(inst.ComputerName)}}))
		}
		internal := lbService("perm-int", 8080)
		internal.Annotations = map[string]string{string(annotationInternal): "true"}
		svcs := []*v1.Service{lbService("perm-pub", 80), internal}
		for _, s := range svcs {
			if _, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", s, nodes); err != nil {
				t.Fatal(err)
			}
		}
		// A scale set instance leaves, then every Service goes.
		for _, s := range svcs {
			if err := env.cloud.lb.UpdateLoadBalancer(ctx, "kubernetes", s, nodes[:2]); err != nil {
				t.Fatal(err)
			}
		}
		for _, s := range svcs {
			if err := env.cloud.lb.EnsureLoadBalancerDeleted(ctx, "kubernetes", s); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("ip-backend-pools, routes and node-ipam", func(t *testing.T) {
		env := newTestEnv(t, azemu.Config{}, func(s *Section) { s.RouteTableName = "kubernetes-routetable" })
		underPolicy(t, env, "node-ipam")
		ctx := t.Context()
		nodes := env.lbNodes(t, 2)
		internal := lbService("perm-int", 8080)
		internal.Annotations = map[string]string{string(annotationInternal): "true"}
		svcs := []*v1.Service{lbService("perm-pub", 80), internal}
		for _, s := range svcs {
			if _, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", s, nodes); err != nil {
				t.Fatal(err)
			}
		}
		if err := env.cloud.routes.CreateRoute(ctx, "kubernetes", "", &cloudprovider.Route{TargetNode: types.NodeName(nodes[0].Name), DestinationCIDR: "10.244.1.0/24"}); err != nil {
			t.Fatal(err)
		}
		if err := env.cloud.routes.DeleteRoute(ctx, "kubernetes", &cloudprovider.Route{TargetNode: types.NodeName(nodes[0].Name), DestinationCIDR: "10.244.1.0/24"}); err != nil {
			t.Fatal(err)
		}
		set := env.launch(t, azemu.VMSpec{Name: "perm-as-vm", AvailabilitySet: "perm-as"})
		if _, err := env.cloud.instances.PodCIDRs(ctx, env.initialized(t, set[0])); err != nil {
			t.Fatal(err)
		}
		for _, s := range svcs {
			if err := env.cloud.lb.EnsureLoadBalancerDeleted(ctx, "kubernetes", s); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// deniedCounts registers env's recorder in a registry of its own (a
// metric counts only once registered) and returns a reading of its
// multicloud_ccm_cloud_permission_denied_total samples, by "permission
// features".
func deniedCounts(t *testing.T, env *testEnv) func() map[string]float64 {
	t.Helper()
	reg := metrics.NewKubeRegistry()
	reg.MustRegister(env.rec.Collectors()...)
	return func() map[string]float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, mf := range mfs {
			if mf.GetName() != cloudmetrics.PermissionDeniedName {
				continue
			}
			for _, m := range mf.GetMetric() {
				l := map[string]string{}
				for _, p := range m.GetLabel() {
					l[p.GetName()] = p.GetValue()
				}
				out[l["permission"]+" "+l["features"]] += m.GetCounter().GetValue()
			}
		}
		return out
	}
}

// TestDeniedNamesPermissionAndFeature: a call ARM refuses for want of an
// RBAC action (AuthorizationFailed) or of a linked resource's join action
// (LinkedAuthorizationFailed) is an error naming the action and the
// features that need it, through the real clients: made once, counted
// once, still the 403 *azcore.ResponseError the client read, and never
// "the VM is gone".
func TestDeniedNamesPermissionAndFeature(t *testing.T) {
	all, _ := Permissions().Grants()
	without := func(perm string) []string {
		return slices.DeleteFunc(decl.Permissions(all), func(p string) bool { return p == perm })
	}
	check := func(t *testing.T, counts func() map[string]float64, err error, perm, feature, code string) {
		t.Helper()
		if err == nil {
			t.Fatalf("without %s: no error", perm)
		}
		t.Logf("without %s: %v", perm, err)
		var denied *decl.DeniedError
		if !errors.As(err, &denied) || denied.Permission != perm || !slices.Contains(strings.Split(denied.Features, ","), feature) {
			t.Fatalf("error %v; want a DeniedError naming %s and the %s feature", err, perm, feature)
		}
		if !strings.Contains(err.Error(), perm) || !strings.Contains(err.Error(), feature) {
			t.Errorf("message does not say what to grant: %v", err)
		}
		var re *azcore.ResponseError
		if !errors.As(err, &re) || re.StatusCode != http.StatusForbidden || re.ErrorCode != code || isNotFound(err) {
			t.Errorf("error %v: want the 403 %s ResponseError, not a not-found", err, code)
		}
		if got := counts(); got[perm+" "+denied.Features] != 1 || len(got) != 1 {
			t.Errorf("denials counted %v; want one of %s", got, perm)
		}
	}

	t.Run("instance lookup", func(t *testing.T) {
		env := newTestEnv(t, azemu.Config{}, nil)
		counts := deniedCounts(t, env)
		node := env.initialized(t, env.launch(t, azemu.VMSpec{Name: "denied-0"})[0])
		const perm = "Microsoft.Compute/virtualMachines/read"
		env.srv.SetPolicy(strings.ToLower(env.fx.ClientID), without(perm))
		env.srv.ResetCalls()
		env.clk.Step(time.Hour) // past the snapshot's window: the lookup asks ARM
		exists, err := env.cloud.instances.InstanceExists(t.Context(), node)
		if exists {
			t.Errorf("InstanceExists without %s = true", perm)
		}
		check(t, counts, err, perm, "nodes", "AuthorizationFailed")
		t.Logf("calls: %v", env.srv.Calls())
		for op, n := range env.srv.Calls() {
			if n > 1 {
				t.Errorf("%s called %d times: a denial must not be retried", op, n)
			}
		}
	})
	t.Run("load balancer write", func(t *testing.T) {
		env := newTestEnv(t, azemu.Config{}, nil)
		counts := deniedCounts(t, env)
		nodes := env.lbNodes(t, 1)
		const perm = "Microsoft.Network/loadBalancers/write"
		env.srv.SetPolicy(strings.ToLower(env.fx.ClientID), without(perm))
		env.srv.ResetCalls()
		_, err := env.cloud.lb.EnsureLoadBalancer(t.Context(), "kubernetes", lbService("denied-lb", 80), nodes)
		check(t, counts, err, perm, "load-balancers", "AuthorizationFailed")
		if n := env.srv.CallCount("network:LoadBalancers_CreateOrUpdate"); n != 1 {
			t.Errorf("%d load balancer writes: a denial must not be retried", n)
		}
	})
	t.Run("linked public IP", func(t *testing.T) {
		env := newTestEnv(t, azemu.Config{}, nil)
		counts := deniedCounts(t, env)
		nodes := env.lbNodes(t, 1)
		const perm = "Microsoft.Network/publicIPAddresses/join/action"
		env.srv.SetPolicy(strings.ToLower(env.fx.ClientID), without(perm))
		_, err := env.cloud.lb.EnsureLoadBalancer(t.Context(), "kubernetes", lbService("denied-link", 80), nodes)
		check(t, counts, err, perm, "load-balancers", "LinkedAuthorizationFailed")
	})
}

// TestDeniedAction: the missing action is read from ARM's denial
// messages (the second action of a linked one), spelled as declared
// whatever ARM's casing, and nothing is read from other errors.
func TestDeniedAction(t *testing.T) {
	for _, c := range []struct {
		code, message, want string
	}{
		{"AuthorizationFailed", "The client 'c0ffee00-0000-0000-0000-000000000001' with object id 'c0ffee00-0000-0000-0000-000000000002' does not have authorization to perform action 'Microsoft.Network/loadBalancers/write' over scope '/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/loadBalancers/kubernetes' or the scope is invalid. If access was recently granted, please refresh your credentials.",
			"Microsoft.Network/loadBalancers/write"},
		{"AuthorizationFailed", "The client 'x' with object id 'y' does not have authorization to perform action 'microsoft.compute/virtualmachines/read' over scope '/subscriptions/s/resourceGroups/rg' or the scope is invalid.",
			"Microsoft.Compute/virtualMachines/read"},
		{"AuthorizationFailed", "The client 'x' with object id 'y' does not have authorization or an ABAC condition not fulfilled to perform action 'Microsoft.Network/publicIPAddresses/write' over scope '/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/publicIPAddresses/pip' or the scope is invalid. If access was recently granted, please refresh your credentials.",
			"Microsoft.Network/publicIPAddresses/write"},
		{"LinkedAuthorizationFailed", "The client 'x' with object id 'y' has permission to perform action 'Microsoft.Network/loadBalancers/write' on scope '/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/loadBalancers/kubernetes'; however, it does not have permission to perform action 'Microsoft.Network/publicIPAddresses/join/action' on the linked scope(s) '/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/publicIPAddresses/pip' or the linked scope(s) are invalid.",
			"Microsoft.Network/publicIPAddresses/join/action"},
		{"LinkedAuthorizationFailed", "The client 'x' with object id 'y' has permission to perform action 'Microsoft.Network/networkInterfaces/write' on scope '/n'; however, it does not have permission to perform action 'microsoft.network/virtualnetworks/subnets/join/action' on the linked scope(s) '/s' or the linked scope(s) are invalid.",
			"Microsoft.Network/virtualNetworks/subnets/join/action"},
		// Not declared: named as ARM sent it.
		{"AuthorizationFailed", "The client 'x' with object id 'y' does not have authorization to perform action 'Microsoft.Storage/storageAccounts/read' over scope '/s' or the scope is invalid.",
			"Microsoft.Storage/storageAccounts/read"},
		// No action named.
		{"AuthorizationFailed", "The client does not have authorization to perform this action.", ""},
		// Not RBAC: Azure Policy, a wrong token, throttling.
		{"RequestDisallowedByPolicy", "Resource 'pip' was disallowed by policy. Policy identifiers: '[{\"policyAssignment\":{}}]'.", ""},
		{"InvalidAuthenticationToken", "The access token is invalid.", ""},
		{"LinkedAuthorizationFailed", "The client 'x' has permission to perform action 'Microsoft.Network/loadBalancers/write' on scope '/l'.", ""},
	} {
		got, ok := deniedAction(c.code, c.message)
		if ok {
			got = declaredSpelling(got)
		}
		if got != c.want || ok != (c.want != "") {
			t.Errorf("%s %q: %q, %v; want %q", c.code, c.message, got, ok, c.want)
		}
	}
}
