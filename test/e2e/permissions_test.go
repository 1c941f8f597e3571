package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/multicloud-ccm/multicloud-ccm/test/ccmproc"

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
	cfg, err := config.Parse([]byte(cfgYAML), providers.Default)
	if err != nil {
		t.Fatalf("the suite's cloud-config: %v", err)
	}
	section := cfg.Section
	if section == nil {
		section = cfg.Sections[s.adapter.Name()]
	}
	s.enforceSection(t, section, cfg.DeleteOrphans(), args)
}

// enforceSection is enforcePolicy for one cloud's section of a config
// (a hybrid config's sections each get their cloud's policy).
func (s *suiteCloud) enforceSection(t *testing.T, section config.Section, deleteOrphans bool, args []string) {
	t.Helper()
	s.policy = nil
	b, ok := providers.Default.Lookup(s.adapter.Name())
	principal, enforces := s.cloud.(conformance.Principal)
	if !ok || !enforces || b.Permissions == nil || b.PermissionFeatures == nil || section == nil {
		return
	}
	features := b.PermissionFeatures(section, deleteOrphans)
	if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--controllers=") && strings.Contains(a, "tagging") }) {
		features = append(features, "tagging")
	}
	// The cloud allocator is a flag's too (node-ipam, where a backend
	// declares reads of its own for it).
	if _, ok := b.Permissions().Feature("node-ipam"); ok && slices.Contains(args, "--cidr-allocator-type=CloudAllocator") {
		features = append(features, "node-ipam")
	}
	grants, err := b.Permissions().Grants(features...)
	if err != nil {
		t.Fatal(err)
	}
	srv := s.cloud.Server()
	s.policy = permissions.Permissions(grants)
	s.principal = principal.ManagerPrincipal()
	srv.SetPolicy(s.principal, s.policy)
	t.Cleanup(func() {
		if s.withholding {
			return
		}
		if denied := srv.Denied(); len(denied) > 0 {
			t.Errorf("the cloud denied %s: the manager called what the minimal policy of features %v lacks; declare it in providers/%s/permissions.go",
				strings.Join(denied, ", "), features, s.adapter.Name())
		}
	})
}

// permissionWithheld is the scenario "a permission withheld gives a clear
// message and loses nothing": under the minimal policy less the
// permission a new Service's load balancer needs, the Service gets a
// Warning Event naming the permission and its feature, and the denial is
// counted; given back, the Service is served and, deleted, leaves
// nothing. Less the permission instance lookups need, a NotReady Node's
// lifecycle checks are denied (counted, and a Warning Event on the Node
// names the permission) and the Node is neither deleted nor tainted.
func permissionWithheld(t *testing.T, cl *cluster, a conformance.Adapter) {
	s := startSuiteCloud(t, cl, a, "withheld")
	w, ok := s.cloud.(conformance.PermissionWithholder)
	if !ok || s.policy == nil {
		t.Skipf("%s declares no permissions or names none to withhold yet", a.Name())
	}
	s.withholding = true
	lbPerm, lbFeature, instPerm := w.WithheldPermissions()
	srv := s.cloud.Server()
	minimal := s.policy
	without := func(p string) []string {
		return slices.DeleteFunc(slices.Clone(minimal), func(x string) bool { return x == p })
	}
	zones := s.cloud.Zones()
	n1 := s.launchNode(t, zones[0], "withheld-0", "")
	n2 := s.launchNode(t, zones[1%len(zones)], "withheld-1", "")
	s.waitInitialized(t, n1.NodeName)
	s.waitInitialized(t, n2.NodeName)
	before := s.cloud.Inventory()

	srv.SetPolicy(s.principal, without(lbPerm))
	svc := s.createService(t, s.lbService("conf-withheld", 80))
	poll(t, converge, "a Warning naming "+lbPerm+" and "+lbFeature, func(ctx context.Context) (bool, string, error) {
		ws, err := s.warnings(ctx, svc)
		return slices.ContainsFunc(ws, func(w string) bool { return strings.Contains(w, lbPerm) && strings.Contains(w, lbFeature) }), fmt.Sprint(ws), err
	})
	if n := s.metricSum("multicloud_ccm_cloud_permission_denied_total", `permission="`+lbPerm+`"`); n == 0 {
		t.Errorf("the denial of %s is not counted on /metrics", lbPerm)
	}
	srv.SetPolicy(s.principal, minimal)
	s.waitService(t, svc, "an address once the permission is back", hasAddress)
	s.waitLB(t, svc, []int32{80}, n1, n2)
	s.deleteServiceAndWait(t, svc)
	waitInventory(t, s.cloud, before, "after the Service served once the permission came back was deleted")

	// Instance lookups denied: a NotReady Node is checked every second
	// and must stay as it is.
	srv.SetPolicy(s.principal, without(instPerm))
	from := s.metricSum("multicloud_ccm_cloud_permission_denied_total", `permission="`+instPerm+`"`)
	s.setReady(t, n1.NodeName, corev1.ConditionFalse)
	poll(t, converge, "lifecycle checks denied "+instPerm+" (counted)", func(context.Context) (bool, string, error) {
		n := s.metricSum("multicloud_ccm_cloud_permission_denied_total", `permission="`+instPerm+`"`) - from
		return n >= 3, fmt.Sprintf("%d denials", n), nil
	})
	poll(t, converge, "a Warning Event on the Node naming "+instPerm, func(ctx context.Context) (bool, string, error) {
		evs, err := s.admin.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + n1.NodeName + ",reason=CloudPermissionDenied",
		})
		if err != nil {
			return false, "", err
		}
		var seen []string
		for _, ev := range evs.Items {
			if ev.Type == corev1.EventTypeWarning && strings.Contains(ev.Message, instPerm) {
				return true, "", nil
			}
			seen = append(seen, ev.Message)
		}
		return false, fmt.Sprint(seen), nil
	})
	n, err := s.getNode(context.Background(), n1.NodeName)
	if err != nil {
		t.Fatalf("the NotReady node whose instance could not be read: %v", err)
	}
	if ccmproc.HasTaint(n, cloudproviderapi.TaintNodeShutdown) {
		t.Errorf("a denied lookup tainted the node shut down: %s", describeNode(n))
	}
	srv.SetPolicy(s.principal, minimal)
	s.setReady(t, n1.NodeName, corev1.ConditionTrue)
	if !strings.Contains(s.ccm.log.String(), instPerm) {
		t.Errorf("the manager never logged the denied %s", instPerm)
	}
}
