package gce

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	decl "github.com/multicloud-ccm/multicloud-ccm/providers/permissions"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	gceemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/gce"
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

// TestDeniedNamesPermissionAndFeature: a call Compute Engine refuses for
// want of a permission is an error naming the permission and the features
// that need it, through the real client: tried once, still the 403 the
// client read, and never "the instance is gone".
func TestDeniedNamesPermissionAndFeature(t *testing.T) {
	env := newTestEnv(t, gceemu.Config{}, nil)
	zones := env.emu.Config().Zones
	node := env.launch(t, cloudsim.InstanceSpec{Name: "denied-0", Zone: zones[0]})[0]
	md, err := env.cloud.instances.InstanceMetadata(t.Context(), node)
	if err != nil {
		t.Fatal(err)
	}
	node.Spec.ProviderID = md.ProviderID
	all, _ := Permissions().Grants()
	for _, withheld := range []string{"compute.instances.list", "compute.instances.get"} {
		env.srv.SetPolicy("", slices.DeleteFunc(decl.Permissions(all), func(p string) bool { return p == withheld }))
		env.srv.ResetCalls()
		fresh := &v1.Node{}
		fresh.Name, fresh.Spec.ProviderID = node.Name, node.Spec.ProviderID
		env.clk.Step(time.Hour) // past the snapshot's window: the lookup asks the cloud
		exists, err := env.cloud.instances.InstanceExists(t.Context(), fresh)
		if !slices.Contains(env.srv.Denied(), withheld) {
			// The lookup did not need it (the other permission served it).
			if err != nil || !exists {
				t.Errorf("without %s: InstanceExists = %v, %v; want true", withheld, exists, err)
			}
			continue
		}
		if err == nil || exists {
			t.Fatalf("InstanceExists without %s = %v, %v; want an error", withheld, exists, err)
		}
		t.Logf("without %s: %v", withheld, err)
		var denied *decl.DeniedError
		if !errors.As(err, &denied) || denied.Permission != withheld || !strings.Contains(denied.Features, "nodes") {
			t.Fatalf("error %v; want a DeniedError naming %s and the nodes feature", err, withheld)
		}
		if code, _ := errorCode(err); code != http.StatusForbidden || isNotFound(err) || retryable(err) {
			t.Errorf("error %v: want a 403, neither not-found nor retried", err)
		}
		if !strings.Contains(err.Error(), withheld) || !strings.Contains(err.Error(), "nodes") {
			t.Errorf("message does not say what to grant: %v", err)
		}
		if n := env.srv.CallCount(cloudsim.ReadOps); n > len(zones)+1 {
			t.Errorf("%d reads for one denied lookup: a denial must not be retried", n)
		}
	}
}

// TestDeniedPermission: the permission is read from Compute Engine's
// 403 forbidden body, and nothing from other 403s.
func TestDeniedPermission(t *testing.T) {
	for _, c := range []struct {
		body string
		want string
	}{
		{`{"error":{"code":403,"message":"Required 'compute.forwardingRules.create' permission for 'projects/p/regions/r/forwardingRules/a'","errors":[{"message":"Required 'compute.forwardingRules.create' permission for 'projects/p/regions/r/forwardingRules/a'","domain":"global","reason":"forbidden"}]}}`, "compute.forwardingRules.create"},
		{`{"error":{"code":403,"message":"Rate Limit Exceeded","errors":[{"message":"Rate Limit Exceeded","domain":"usageLimits","reason":"rateLimitExceeded"}]}}`, ""},
		{`{"error":{"code":403,"message":"Compute Engine API has not been used in project 1 before or it is disabled.","errors":[{"reason":"accessNotConfigured"}]}}`, ""},
		{`not json`, ""},
	} {
		got, ok := deniedPermission([]byte(c.body))
		if got != c.want || ok != (c.want != "") {
			t.Errorf("%s: %q, %v; want %q", c.body, got, ok, c.want)
		}
		// Throttling is the rate-limit reason, and only it: the cloud
		// health the service controller reads counts it as no answer.
		if want := strings.Contains(c.body, "rateLimitExceeded"); rateLimited([]byte(c.body)) != want {
			t.Errorf("%s: rateLimited = %v, want %v", c.body, !want, want)
		}
	}
}
