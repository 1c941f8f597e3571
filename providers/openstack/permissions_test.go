package openstack

import (
	"slices"
	"testing"
)

// TestPermissionsDeclared: the declaration is well-formed, every
// optional feature is one a setting turns on, and a config naming its
// floating network (or making every Service internal) needs no network
// lookup.
func TestPermissionsDeclared(t *testing.T) {
	d := Permissions()
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	on := PermissionFeatures(&Section{
		LoadBalancer: LoadBalancerSection{ManageSecurityGroups: true},
		Routes:       RoutesSection{RouterID: "5f0d1e1c-9a4b-4c43-9f57-1d5e3a7b2c10"},
	}, true)
	for _, f := range d.Features {
		if !slices.Contains(on, f.Name) {
			t.Errorf("feature %s: no config turns it on", f.Name)
		}
	}
	for _, lb := range []LoadBalancerSection{{FloatingNetworkID: "5f0d1e1c-9a4b-4c43-9f57-1d5e3a7b2c10"}, {InternalLB: true}} {
		if got := PermissionFeatures(&Section{LoadBalancer: lb}, false); slices.Contains(got, "floating-network-lookup") || slices.Contains(got, "orphan-deletion") {
			t.Errorf("%+v: features %v", lb, got)
		}
	}
	if _, err := d.Grants(on...); err != nil {
		t.Error(err)
	}
}
