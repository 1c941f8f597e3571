package deploy_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/multicloud-ccm/multicloud-ccm/test/controlplane"

	"github.com/multicloud-ccm/multicloud-ccm/config"
	"github.com/multicloud-ccm/multicloud-ccm/providers"
	_ "github.com/multicloud-ccm/multicloud-ccm/providers/builtin"
)

const (
	namespace      = "kube-system"
	saName         = "cloud-controller-manager"
	clusterRole    = "system:cloud-controller-manager"
	deploymentName = "cloud-controller-manager"
	secretName     = "cloud-config"
	// leaseName is the cloud-provider default --leader-elect-resource-name.
	leaseName = "cloud-controller-manager"
	mountPath = "/etc/multicloud-ccm"
	ccmPort   = 10258
)

// manifest is one YAML document of one file in deploy/.
type manifest struct {
	file string
	json []byte
	obj  *unstructured.Unstructured
}

func (m manifest) String() string {
	return m.file + ": " + m.obj.GetKind() + " " + m.obj.GetNamespace() + "/" + m.obj.GetName()
}

// manifestFiles lists the manifests in this directory, kustomization.yaml
// excluded (it is kustomize input, not an object for the apiserver).
func manifestFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{"*.yaml", "*.yml"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	files = slices.DeleteFunc(files, func(f string) bool { return f == "kustomization.yaml" })
	sort.Strings(files)
	if len(files) == 0 {
		t.Fatal("no manifests found in deploy/")
	}
	return files
}

// loadManifests reads every document of every manifest file, skipping
// documents that hold only comments.
func loadManifests(t *testing.T) []manifest {
	t.Helper()
	var out []manifest
	for _, file := range manifestFiles(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for i := 0; ; i++ {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: document %d: %v", file, i, err)
			}
			js, err := yaml.YAMLToJSON(doc)
			if err != nil {
				t.Fatalf("%s: document %d: %v", file, i, err)
			}
			if s := string(bytes.TrimSpace(js)); s == "null" || s == "" {
				continue
			}
			obj := &unstructured.Unstructured{}
			if err := obj.UnmarshalJSON(js); err != nil {
				t.Fatalf("%s: document %d: %v", file, i, err)
			}
			if obj.GetName() == "" {
				t.Fatalf("%s: document %d (%s) has no metadata.name", file, i, obj.GetKind())
			}
			out = append(out, manifest{file: file, json: js, obj: obj})
		}
	}
	return out
}

// decodeOne finds the single object of kind/name and decodes it strictly
// into out, so a misspelt field fails the test rather than being ignored.
func decodeOne(t *testing.T, ms []manifest, kind, name string, out any) {
	t.Helper()
	found := 0
	for _, m := range ms {
		if m.obj.GetKind() != kind || m.obj.GetName() != name {
			continue
		}
		found++
		dec := json.NewDecoder(bytes.NewReader(m.json))
		dec.DisallowUnknownFields()
		if err := dec.Decode(out); err != nil {
			t.Fatalf("%s: %v", m, err)
		}
	}
	if found != 1 {
		t.Fatalf("want exactly one %s %q, found %d", kind, name, found)
	}
}

func TestKustomizationListsEveryManifest(t *testing.T) {
	data, err := os.ReadFile("kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatal(err)
	}
	got := slices.Clone(k.Resources)
	sort.Strings(got)
	if want := manifestFiles(t); !slices.Equal(got, want) {
		t.Errorf("kustomization.yaml resources = %v, want the manifests in deploy/ %v", got, want)
	}
}

func TestManifestsNamespaces(t *testing.T) {
	clusterScoped := map[string]bool{"ClusterRole": true, "ClusterRoleBinding": true}
	for _, m := range loadManifests(t) {
		ns := m.obj.GetNamespace()
		if clusterScoped[m.obj.GetKind()] {
			if ns != "" {
				t.Errorf("%s: cluster-scoped object has a namespace", m)
			}
		} else if ns != namespace {
			t.Errorf("%s: namespace %q, want %q", m, ns, namespace)
		}
	}
}

// TestClusterRoleMatchesUpstream pins the ClusterRole to the upstream
// cloud-controller-manager documentation, plus services/status (the service
// controller patches Service status through that subresource) and GET on
// /metrics (reading the cloud API metrics with the CCM's own token).
func TestClusterRoleMatchesUpstream(t *testing.T) {
	ms := loadManifests(t)
	var role rbacv1.ClusterRole
	decodeOne(t, ms, "ClusterRole", clusterRole, &role)

	want := map[string][]string{
		"events":            {"create", "patch", "update"},
		"nodes":             {"*"},
		"nodes/status":      {"patch"},
		"services":          {"list", "patch", "update", "watch"},
		"services/status":   {"patch"},
		"serviceaccounts":   {"create"},
		"persistentvolumes": {"get", "list", "update", "watch"},
		"endpoints":         {"create", "get", "list", "update", "watch"},
	}
	got := map[string][]string{}
	metricsRules := 0
	for i, r := range role.Rules {
		if len(r.NonResourceURLs) != 0 {
			metricsRules++
			if !slices.Equal(r.NonResourceURLs, []string{"/metrics"}) || !slices.Equal(r.Verbs, []string{"get"}) ||
				len(r.APIGroups) != 0 || len(r.Resources) != 0 || len(r.ResourceNames) != 0 {
				t.Errorf("rule %d: %+v, want only nonResourceURLs [/metrics] with verbs [get]", i, r)
			}
			continue
		}
		if !slices.Equal(r.APIGroups, []string{""}) {
			t.Errorf("rule %d: apiGroups %q, want the core group only", i, r.APIGroups)
		}
		if len(r.ResourceNames) != 0 {
			t.Errorf("rule %d: unexpected resourceNames", i)
		}
		for _, res := range r.Resources {
			got[res] = append(got[res], r.Verbs...)
		}
	}
	for res := range got {
		slices.Sort(got[res])
		got[res] = slices.Compact(got[res])
	}
	for res, verbs := range want {
		if !slices.Equal(got[res], verbs) {
			t.Errorf("%s: verbs %q, want %q", res, got[res], verbs)
		}
	}
	for res, verbs := range got {
		if _, ok := want[res]; !ok {
			t.Errorf("unexpected resource %s (verbs %q)", res, verbs)
		}
	}
	if metricsRules != 1 {
		t.Errorf("%d nonResourceURLs rules, want exactly one for GET /metrics", metricsRules)
	}
	if role.AggregationRule != nil {
		t.Error("ClusterRole must not aggregate other roles")
	}

	var crb rbacv1.ClusterRoleBinding
	decodeOne(t, ms, "ClusterRoleBinding", clusterRole, &crb)
	checkBinding(t, "ClusterRoleBinding "+crb.Name, crb.RoleRef, crb.Subjects, "ClusterRole", clusterRole)
}

func checkBinding(t *testing.T, what string, ref rbacv1.RoleRef, subjects []rbacv1.Subject, kind, name string) {
	t.Helper()
	if ref != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: name}) {
		t.Errorf("%s: roleRef %+v, want %s %s", what, ref, kind, name)
	}
	want := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: saName, Namespace: namespace}}
	if !slices.Equal(subjects, want) {
		t.Errorf("%s: subjects %+v, want %+v", what, subjects, want)
	}
}

// TestLeaderElectionAndAuthDelegationRBAC checks that beyond the upstream
// ClusterRole the ServiceAccount gets only what leader election and delegated
// authentication need, and reading the one ConfigMap kube-system/ingress-uid.
func TestLeaderElectionAndAuthDelegationRBAC(t *testing.T) {
	ms := loadManifests(t)

	var roles, roleBindings, clusterRoleBindings []string
	for _, m := range ms {
		switch m.obj.GetKind() {
		case "Role":
			roles = append(roles, m.obj.GetName())
		case "RoleBinding":
			roleBindings = append(roleBindings, m.obj.GetName())
		case "ClusterRoleBinding":
			clusterRoleBindings = append(clusterRoleBindings, m.obj.GetName())
		case "ClusterRole":
			if m.obj.GetName() != clusterRole {
				t.Errorf("%s: unexpected extra ClusterRole", m)
			}
		}
	}
	if len(roles) != 1 || len(roleBindings) != 2 || len(clusterRoleBindings) != 2 {
		t.Fatalf("want 1 Role, 2 RoleBindings, 2 ClusterRoleBindings; got %v, %v, %v", roles, roleBindings, clusterRoleBindings)
	}

	var role rbacv1.Role
	decodeOne(t, ms, "Role", roles[0], &role)
	wantRules := []rbacv1.PolicyRule{
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{leaseName}, Verbs: []string{"get", "update"}},
		// GCE's cluster ID of the upstream CCM (providers/gce clusterid.go).
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"ingress-uid"}, Verbs: []string{"get"}},
	}
	if len(role.Rules) != len(wantRules) {
		t.Fatalf("Role %s: %d rules, want %d", role.Name, len(role.Rules), len(wantRules))
	}
	for i, r := range role.Rules {
		w := wantRules[i]
		slices.Sort(r.Verbs)
		if !slices.Equal(r.APIGroups, w.APIGroups) || !slices.Equal(r.Resources, w.Resources) ||
			!slices.Equal(r.ResourceNames, w.ResourceNames) || !slices.Equal(r.Verbs, w.Verbs) || len(r.NonResourceURLs) != 0 {
			t.Errorf("Role %s rule %d = %+v, want %+v", role.Name, i, r, w)
		}
	}

	// Each binding's roleRef, by what it grants.
	wantRefs := map[string]string{
		"Role/" + role.Name: "leader election",
		"Role/extension-apiserver-authentication-reader": "delegated authentication",
		"ClusterRole/" + clusterRole:                     "cloud controllers",
		"ClusterRole/system:auth-delegator":              "delegated authentication/authorization",
	}
	seen := map[string]bool{}
	for _, name := range roleBindings {
		var rb rbacv1.RoleBinding
		decodeOne(t, ms, "RoleBinding", name, &rb)
		key := rb.RoleRef.Kind + "/" + rb.RoleRef.Name
		checkBinding(t, "RoleBinding "+name, rb.RoleRef, rb.Subjects, rb.RoleRef.Kind, rb.RoleRef.Name)
		if rb.RoleRef.Kind != "Role" {
			t.Errorf("RoleBinding %s binds a %s; a namespaced grant should bind a Role", name, rb.RoleRef.Kind)
		}
		seen[key] = true
	}
	for _, name := range clusterRoleBindings {
		var crb rbacv1.ClusterRoleBinding
		decodeOne(t, ms, "ClusterRoleBinding", name, &crb)
		checkBinding(t, "ClusterRoleBinding "+name, crb.RoleRef, crb.Subjects, "ClusterRole", crb.RoleRef.Name)
		seen[crb.RoleRef.Kind+"/"+crb.RoleRef.Name] = true
	}
	for ref, why := range wantRefs {
		if !seen[ref] {
			t.Errorf("no binding to %s (%s)", ref, why)
		}
	}
	for ref := range seen {
		if _, ok := wantRefs[ref]; !ok {
			t.Errorf("unexpected binding to %s", ref)
		}
	}

	var sa corev1.ServiceAccount
	decodeOne(t, ms, "ServiceAccount", saName, &sa)
}

func TestDeployment(t *testing.T) {
	ms := loadManifests(t)
	var d appsv1.Deployment
	decodeOne(t, ms, "Deployment", deploymentName, &d)
	if d.Namespace != namespace {
		t.Errorf("namespace %q, want %q", d.Namespace, namespace)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas %v, want 2", d.Spec.Replicas)
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("selector %v (err %v) must be non-empty and match the template labels %v", d.Spec.Selector, err, d.Spec.Template.Labels)
	}

	pod := d.Spec.Template.Spec
	if pod.ServiceAccountName != saName {
		t.Errorf("serviceAccountName %q, want %q", pod.ServiceAccountName, saName)
	}
	if pod.PriorityClassName != "system-cluster-critical" {
		t.Errorf("priorityClassName %q, want system-cluster-critical", pod.PriorityClassName)
	}
	if !pod.HostNetwork {
		t.Error("hostNetwork must be true: the CCM runs before the CNI")
	}

	// Tolerations.
	wantTol := []corev1.Toleration{
		{Key: "node.cloudprovider.kubernetes.io/uninitialized", Value: "true", Effect: corev1.TaintEffectNoSchedule},
		{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule},
		{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule},
	}
	for _, w := range wantTol {
		taint := &corev1.Taint{Key: w.Key, Value: w.Value, Effect: w.Effect}
		if !slices.ContainsFunc(pod.Tolerations, func(tol corev1.Toleration) bool { return tol.ToleratesTaint(klog.Background(), taint, false) }) {
			t.Errorf("no toleration for taint %s=%s:%s", w.Key, w.Value, w.Effect)
		}
	}

	// Required anti-affinity against its own replicas, per node.
	antiOK := false
	if pod.Affinity != nil && pod.Affinity.PodAntiAffinity != nil {
		for _, term := range pod.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			s, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
			if err == nil && !s.Empty() && term.TopologyKey == "kubernetes.io/hostname" && s.Matches(labels.Set(d.Spec.Template.Labels)) {
				antiOK = true
			}
		}
	}
	if !antiOK {
		t.Error("want a required pod anti-affinity term on kubernetes.io/hostname selecting the Deployment's own pods")
	}
	if pod.Affinity != nil && pod.Affinity.NodeAffinity != nil && pod.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		t.Error("node affinity should be preferred, not required (clusters may hide their control-plane nodes)")
	}

	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if c.Image != "multicloud-ccm:latest" {
		t.Errorf("image %q, want the placeholder multicloud-ccm:latest", c.Image)
	}
	if !slices.Equal(c.Command, []string{"/multicloud-ccm"}) {
		t.Errorf("command %q, want [/multicloud-ccm]", c.Command)
	}
	wantArgs := []string{
		"--cloud-config=" + mountPath + "/cloud-config.yaml",
		"--leader-elect=true",
		"--use-service-account-credentials=false",
		"--bind-address=0.0.0.0",
		"--secure-port=10258",
		"--configure-cloud-routes=false",
		"--v=2",
	}
	if !slices.Equal(c.Args, wantArgs) {
		t.Errorf("args\n got %q\nwant %q", c.Args, wantArgs)
	}

	// Security settings, container level (the pod level may only add).
	sc := c.SecurityContext
	if sc == nil {
		t.Fatal("container has no securityContext")
	}
	if !ptr.Deref(sc.RunAsNonRoot, false) {
		t.Error("runAsNonRoot must be true")
	}
	if ptr.Deref(sc.RunAsUser, -1) != 65532 {
		t.Errorf("runAsUser %v, want 65532", sc.RunAsUser)
	}
	if !ptr.Deref(sc.ReadOnlyRootFilesystem, false) {
		t.Error("readOnlyRootFilesystem must be true")
	}
	if ptr.Deref(sc.AllowPrivilegeEscalation, true) {
		t.Error("allowPrivilegeEscalation must be false")
	}
	if ptr.Deref(sc.Privileged, false) {
		t.Error("container must not be privileged")
	}
	if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Errorf("capabilities %+v, want drop [ALL] and add nothing", sc.Capabilities)
	}
	seccomp := sc.SeccompProfile
	if seccomp == nil && pod.SecurityContext != nil {
		seccomp = pod.SecurityContext.SeccompProfile
	}
	if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("seccompProfile %+v, want RuntimeDefault", seccomp)
	}
	if psc := pod.SecurityContext; psc != nil {
		if psc.RunAsNonRoot != nil && !*psc.RunAsNonRoot {
			t.Error("pod securityContext sets runAsNonRoot false")
		}
		if psc.RunAsUser != nil && *psc.RunAsUser != 65532 {
			t.Errorf("pod runAsUser %d, want 65532", *psc.RunAsUser)
		}
	}

	// Liveness probe on the secure port.
	p := c.LivenessProbe
	if p == nil || p.HTTPGet == nil {
		t.Fatal("want an httpGet livenessProbe")
	}
	if p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port.IntValue() != ccmPort || p.HTTPGet.Scheme != corev1.URISchemeHTTPS {
		t.Errorf("livenessProbe %+v, want HTTPS /healthz on %d", p.HTTPGet, ccmPort)
	}

	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("want cpu and memory requests, got %v", c.Resources.Requests)
	}

	// The cloud-config Secret, mounted read-only where --cloud-config points.
	var vol *corev1.Volume
	for i := range pod.Volumes {
		if pod.Volumes[i].Secret != nil && pod.Volumes[i].Secret.SecretName == secretName {
			vol = &pod.Volumes[i]
		}
	}
	if vol == nil {
		t.Fatalf("no volume from Secret %q", secretName)
	}
	if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == vol.Name && m.MountPath == mountPath && m.ReadOnly && m.SubPath == ""
	}) {
		t.Errorf("Secret volume %q not mounted read-only at %s: %+v", vol.Name, mountPath, c.VolumeMounts)
	}
	if mode := ptr.Deref(vol.Secret.DefaultMode, 0o644); mode&0o007 != 0 {
		t.Errorf("Secret volume defaultMode %#o lets other users read the cloud-config", mode)
	}
}

func TestCloudConfigSecretExample(t *testing.T) {
	ms := loadManifests(t)
	var s corev1.Secret
	decodeOne(t, ms, "Secret", secretName, &s)
	data, ok := s.StringData["cloud-config.yaml"]
	if !ok || len(s.StringData) != 1 || len(s.Data) != 0 {
		t.Fatalf("want stringData with the single key cloud-config.yaml, got keys %v / %v", s.StringData, s.Data)
	}
	var cfg map[string]any
	if err := yaml.UnmarshalStrict([]byte(data), &cfg); err != nil {
		t.Fatalf("cloud-config.yaml: %v", err)
	}
	want := map[string]any{
		"apiVersion": "multicloud-ccm.io/v1alpha1",
		"kind":       "CloudConfig",
		"provider":   "aws",
		"clusterID":  "prod-eu-1",
		"aws":        map[string]any{"region": "eu-west-1"},
	}
	gotJSON, _ := json.Marshal(cfg)
	wantJSON, _ := json.Marshal(want)
	if !bytes.Equal(gotJSON, wantJSON) {
		t.Errorf("cloud-config.yaml = %s, want %s", gotJSON, wantJSON)
	}
	// The example must be one the binary accepts.
	if _, err := config.Parse([]byte(data), providers.Default); err != nil {
		t.Errorf("the example cloud-config does not validate:\n%v", err)
	}
}

// TestManifestsServerSideApplyDryRun applies every manifest to a real
// kube-apiserver with server-side apply in dry-run mode: schema, defaulting,
// validation, admission and RBAC escalation checks all run, nothing is stored.
func TestManifestsServerSideApplyDryRun(t *testing.T) {
	if testing.Short() {
		t.Skip("needs etcd and kube-apiserver (test/controlplane)")
	}
	ms := loadManifests(t)

	cp, err := controlplane.Start(controlplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()

	ctx := t.Context()
	objs, err := controlplane.ReadManifests(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != len(ms) {
		t.Fatalf("controlplane.ReadManifests found %d objects, the file walk %d", len(objs), len(ms))
	}
	// Strict field validation; any warning or scope mistake fails.
	if err := controlplane.Apply(ctx, cp.Admin, objs, true); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
	}

	want := map[string]int{
		"ServiceAccount":     1,
		"ClusterRole":        1,
		"ClusterRoleBinding": 2,
		"Role":               1,
		"RoleBinding":        2,
		"Deployment":         1,
		"Secret":             1,
	}
	for kind, n := range want {
		if kinds[kind] != n {
			t.Errorf("%d %s applied, want %d", kinds[kind], kind, n)
		}
	}
	for kind := range kinds {
		if _, ok := want[kind]; !ok {
			t.Errorf("unexpected kind %s", kind)
		}
	}

	// Dry run means nothing was stored.
	_, err = cp.AdminClient.AppsV1().Deployments(namespace).Get(ctx, deploymentName, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("Deployment exists after a dry-run apply (get error %v)", err)
	}
}

// TestCloudSecretExamples: each cloud's example (deploy/examples) is a
// Secret of the same name and key as the default one, and its
// cloud-config is one the binary accepts, with its secret (if it has one)
// marked secret.
func TestCloudSecretExamples(t *testing.T) {
	for _, tc := range []struct {
		provider, secret string
	}{
		{"openstack", "replace-with-the-application-credential-secret"},
		{"azure", "replace-with-the-service-principal-secret"},
		// Application Default Credentials: nothing secret in the file.
		{"gce", ""},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			raw, err := os.ReadFile("examples/cloud-config-secret-" + tc.provider + ".yaml")
			if err != nil {
				t.Fatal(err)
			}
			var s corev1.Secret
			if err := yaml.UnmarshalStrict(raw, &s); err != nil {
				t.Fatal(err)
			}
			data, ok := s.StringData["cloud-config.yaml"]
			if s.Kind != "Secret" || s.Name != secretName || s.Namespace != "kube-system" || !ok || len(s.StringData) != 1 {
				t.Fatalf("want Secret kube-system/%s with the single key cloud-config.yaml, got %s %s/%s keys %v", secretName, s.Kind, s.Namespace, s.Name, s.StringData)
			}
			cfg, err := config.Parse([]byte(data), providers.Default)
			if err != nil {
				t.Fatalf("the %s example cloud-config does not validate:\n%v", tc.provider, err)
			}
			if cfg.Provider != tc.provider {
				t.Errorf("provider %q", cfg.Provider)
			}
			if tc.secret != "" && strings.Contains(cfg.String(), tc.secret) {
				t.Errorf("the redacted config shows the secret: %s", cfg.String())
			}
		})
	}
}
