package gce

import (
	"slices"
	"strings"
	"testing"
)

// TestPermissionsDeclared: the declaration is well-formed, every feature
// always on is one the config turns on and every optional one a setting
// turns on, and every permission is a Compute Engine one.
func TestPermissionsDeclared(t *testing.T) {
	d := Permissions()
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	on := PermissionFeatures(&Section{}, true)
	for _, f := range d.Features {
		if !slices.Contains(on, f.Name) {
			t.Errorf("feature %s: no config turns it on", f.Name)
		}
		if !f.Optional && !slices.Contains(PermissionFeatures(&Section{}, false), f.Name) {
			t.Errorf("feature %s is always on but not in every config's features", f.Name)
		}
		for _, g := range f.Grants {
			if parts := strings.Split(g.Permission, "."); len(parts) != 3 || parts[0] != "compute" {
				t.Errorf("feature %s: %s is not compute.<collection>.<verb>", f.Name, g.Permission)
			}
		}
	}
}
