package e2e

import (
	"slices"
	"strings"
	"testing"

	"github.com/multicloud-ccm/multicloud-ccm/config"
	"github.com/multicloud-ccm/multicloud-ccm/providers"
	_ "github.com/multicloud-ccm/multicloud-ccm/providers/builtin"
	"github.com/multicloud-ccm/multicloud-ccm/providers/permissions"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

// enforcePolicy puts the emulator under the policy generated for the
// cloud-config and flags the manager is started with: the backend's
// declared permissions (providers/<cloud>/permissions.go) for exactly the
// features they turn on, as `multicloud-ccm permissions` prints it. A
// call outside it is denied as the cloud denies it, and the test fails
// naming the permission, so the declaration cannot lag the code. Backends
// that declare nothing yet run unchecked.
func (s *suiteCloud) enforcePolicy(t *testing.T, cfgYAML string, args []string) {
	t.Helper()
	b, ok := providers.Default.Lookup(s.adapter.Name())
	principal, enforces := s.cloud.(conformance.Principal)
	if !ok || !enforces || b.Permissions == nil || b.PermissionFeatures == nil {
		return
	}
	cfg, err := config.Parse([]byte(cfgYAML), providers.Default)
	if err != nil {
		t.Fatalf("the suite's cloud-config: %v", err)
	}
	features := b.PermissionFeatures(cfg.Section, cfg.DeleteOrphans())
	if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--controllers=") && strings.Contains(a, "tagging") }) {
		features = append(features, "tagging")
	}
	grants, err := b.Permissions().Grants(features...)
	if err != nil {
		t.Fatal(err)
	}
	srv := s.cloud.Server()
	srv.SetPolicy(principal.ManagerPrincipal(), permissions.Permissions(grants))
	t.Cleanup(func() {
		if denied := srv.Denied(); len(denied) > 0 {
			t.Errorf("the cloud denied %s: the manager called what the minimal policy of features %v lacks; declare it in providers/%s/permissions.go",
				strings.Join(denied, ", "), features, s.adapter.Name())
		}
	})
}
