package azure

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

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
