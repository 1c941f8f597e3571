package chart_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/multicloud-ccm/multicloud-ccm/config"
	"github.com/multicloud-ccm/multicloud-ccm/providers"
	_ "github.com/multicloud-ccm/multicloud-ccm/providers/builtin"
	"github.com/multicloud-ccm/multicloud-ccm/test/chart"
	"github.com/multicloud-ccm/multicloud-ccm/test/controlplane"
)

const (
	ns         = "kube-system"
	secretName = "cloud-config"
	configKey  = "cloud-config.yaml"
	mountPath  = "/etc/multicloud-ccm"
)

var (
	clouds = []string{"aws", "azure", "gce", "openstack"}
	kinds  = []string{"Deployment", "DaemonSet"}
)

var (
	helmOnce sync.Once
	helm     *chart.Helm
	helmErr  error
	helmSkip string
	helmHome string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if helmHome != "" {
		_ = os.RemoveAll(helmHome)
	}
	os.Exit(code)
}

// getHelm returns the pinned helm, building it the first time (minutes;
// build.sh prints progress). With -short a missing helm skips the test
// instead: a short run should not spend minutes compiling.
func getHelm(t *testing.T) *chart.Helm {
	t.Helper()
	helmOnce.Do(func() {
		path, exists, err := chart.HelmPath()
		if err != nil {
			helmErr = err
			return
		}
		if !exists && testing.Short() {
			helmSkip = "-short and " + path + " is not built yet (test/chart/build.sh or make helm builds it)"
			return
		}
		if path, err = chart.EnsureHelm(os.Stderr); err != nil {
			helmErr = err
			return
		}
		if helmHome, err = os.MkdirTemp("", "mccm-helm-"); err != nil {
			helmErr = err
			return
		}
		helm, helmErr = chart.NewHelm(path, helmHome)
	})
	if helmSkip != "" {
		t.Skip(helmSkip)
	}
	if helmErr != nil {
		t.Fatal(helmErr)
	}
	return helm
}

// values is the path of a cloud's example values file.
func values(cloud string) string {
	return filepath.Join(chart.ChartDir, "examples", "values-"+cloud+".yaml")
}

// render runs helm template in namespace with args and fails the test on an
// error.
func render(t *testing.T, namespace string, args ...string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := getHelm(t).Template(namespace, args...)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// find returns the single object of kind and name (any name if empty).
func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind && (name == "" || o.GetName() == name) {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want exactly one %s %q, found %d", kind, name, len(found))
	}
	return found[0]
}

// decode converts obj into out strictly: a field the typed API does not
// have fails the test instead of being dropped.
func decode(t *testing.T, obj *unstructured.Unstructured, out any) {
	t.Helper()
	js, err := obj.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		t.Fatalf("%s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
}

// podTemplate returns the workload (Deployment or DaemonSet) and its pod
// template.
func podTemplate(t *testing.T, objs []*unstructured.Unstructured) (string, corev1.PodTemplateSpec) {
	t.Helper()
	for _, o := range objs {
		switch o.GetKind() {
		case "Deployment":
			var d appsv1.Deployment
			decode(t, o, &d)
			return o.GetKind(), d.Spec.Template
		case "DaemonSet":
			var d appsv1.DaemonSet
			decode(t, o, &d)
			return o.GetKind(), d.Spec.Template
		}
	}
	t.Fatal("no Deployment or DaemonSet rendered")
	return "", corev1.PodTemplateSpec{}
}

// deployExample is deploy/'s cloud-config Secret for cloud.
func deployExample(cloud string) string {
	if cloud == "aws" {
		return "deploy/cloud-config-secret.yaml"
	}
	return "deploy/examples/cloud-config-secret-" + cloud + ".yaml"
}

func readDeploy(t *testing.T, rel string) []*unstructured.Unstructured {
	t.Helper()
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := controlplane.ReadManifests(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// canonical is v as YAML, unmarshalled and marshalled again as JSON, so
// two configs compare by content, not by key order or layout.
func canonical(t *testing.T, v string) string {
	t.Helper()
	var m any
	if err := yaml.UnmarshalStrict([]byte(v), &m); err != nil {
		t.Fatalf("%v\n%s", err, v)
	}
	js, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(js)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	js, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(js)
}

// TestLint: helm lint --strict is clean (no warning, no error) for every
// cloud's example values and both workload kinds, and for the defaults
// (where lint reports the missing cloud-config as information only).
func TestLint(t *testing.T) {
	h := getHelm(t)
	type run struct {
		name string
		args []string
	}
	runs := []run{{"defaults", nil}}
	for _, cloud := range clouds {
		for _, kind := range kinds {
			runs = append(runs, run{cloud + "/" + kind, []string{"-f", values(cloud), "--set", "kind=" + kind}})
		}
	}
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			out, errOut, err := h.Run(append([]string{"lint", "--strict", h.Chart}, r.args...)...)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if !bytes.Contains(out, []byte("1 chart(s) linted, 0 chart(s) failed")) {
				t.Errorf("lint output:\n%s", out)
			}
			for _, bad := range []string{"[WARNING]", "[ERROR]"} {
				if bytes.Contains(out, []byte(bad)) {
					t.Errorf("lint reports %s:\n%s", bad, out)
				}
			}
			if r.args != nil && bytes.Contains(errOut, []byte("Fail:")) {
				t.Errorf("a template failed:\n%s", errOut)
			}
		})
	}
}

// TestCloudExamples renders every cloud's example values in both workload
// kinds and checks what each must have: the objects, the cloud-config the
// binary accepts (the same as deploy/'s example for that cloud), and the
// pod settings a CCM needs.
func TestCloudExamples(t *testing.T) {
	for _, cloud := range clouds {
		for _, kind := range kinds {
			t.Run(cloud+"/"+kind, func(t *testing.T) {
				t.Parallel()
				objs := render(t, ns, "-f", values(cloud), "--set", "kind="+kind)

				got := map[string]int{}
				for _, o := range objs {
					got[o.GetKind()]++
					cluster := o.GetKind() == "ClusterRole" || o.GetKind() == "ClusterRoleBinding"
					if cluster != (o.GetNamespace() == "") || (!cluster && o.GetNamespace() != ns) {
						t.Errorf("%s %s: namespace %q", o.GetKind(), o.GetName(), o.GetNamespace())
					}
					l := o.GetLabels()
					if l["app.kubernetes.io/name"] != "multicloud-ccm" || l["app.kubernetes.io/managed-by"] != "Helm" || l["app.kubernetes.io/instance"] != "multicloud-ccm" {
						t.Errorf("%s %s: labels %v", o.GetKind(), o.GetName(), l)
					}
				}
				want := map[string]int{
					"ServiceAccount": 1, "ClusterRole": 1, "ClusterRoleBinding": 2, "Role": 1, "RoleBinding": 2,
					"Secret": 1, kind: 1,
				}
				if kind == "Deployment" {
					want["PodDisruptionBudget"] = 1
				}
				if !maps.Equal(got, want) {
					t.Errorf("rendered kinds %v, want %v", got, want)
				}

				// The cloud-config: accepted by the binary, and deploy/'s example.
				var s corev1.Secret
				decode(t, find(t, objs, "Secret", secretName), &s)
				data, ok := s.StringData[configKey]
				if !ok || len(s.StringData) != 1 || len(s.Data) != 0 {
					t.Fatalf("Secret: want stringData with the single key %s, got %v", configKey, s.StringData)
				}
				cfg, err := config.Parse([]byte(data), providers.Default)
				if err != nil {
					t.Fatalf("the rendered cloud-config does not validate:\n%v\n%s", err, data)
				}
				if cfg.Provider != cloud {
					t.Errorf("provider %q, want %q", cfg.Provider, cloud)
				}
				var ex corev1.Secret
				decode(t, find(t, readDeploy(t, deployExample(cloud)), "Secret", secretName), &ex)
				if g, w := canonical(t, data), canonical(t, ex.StringData[configKey]); g != w {
					t.Errorf("%s's cloud-config differs from %s's:\n got %s\nwant %s", values(cloud), deployExample(cloud), g, w)
				}

				wkind, tmpl := podTemplate(t, objs)
				checkPod(t, wkind, tmpl)
				if kind == "Deployment" {
					var d appsv1.Deployment
					decode(t, find(t, objs, "Deployment", "cloud-controller-manager"), &d)
					if ptr.Deref(d.Spec.Replicas, 0) != 2 {
						t.Errorf("replicas %v, want 2", d.Spec.Replicas)
					}
				}
			})
		}
	}
}

// checkPod checks the pod template of either workload kind.
func checkPod(t *testing.T, kind string, tmpl corev1.PodTemplateSpec) {
	t.Helper()
	pod := tmpl.Spec
	if pod.ServiceAccountName != "cloud-controller-manager" {
		t.Errorf("serviceAccountName %q", pod.ServiceAccountName)
	}
	if pod.PriorityClassName != "system-cluster-critical" {
		t.Errorf("priorityClassName %q", pod.PriorityClassName)
	}
	if !pod.HostNetwork {
		t.Error("hostNetwork must default to true: the CCM runs before the CNI")
	}
	for _, taint := range []corev1.Taint{
		{Key: "node.cloudprovider.kubernetes.io/uninitialized", Value: "true", Effect: corev1.TaintEffectNoSchedule},
		{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule},
		{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule},
		{Key: "CriticalAddonsOnly", Value: "true", Effect: corev1.TaintEffectNoSchedule},
		{Key: "CriticalAddonsOnly", Effect: corev1.TaintEffectNoExecute},
	} {
		if !slices.ContainsFunc(pod.Tolerations, func(tol corev1.Toleration) bool { return tol.ToleratesTaint(klog.Background(), &taint, false) }) {
			t.Errorf("no toleration for taint %s=%s:%s", taint.Key, taint.Value, taint.Effect)
		}
	}
	switch kind {
	case "DaemonSet":
		// Only on control-plane nodes.
		na := pod.Affinity.NodeAffinity
		if na == nil || na.RequiredDuringSchedulingIgnoredDuringExecution == nil ||
			mustJSON(t, na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) != `[{"matchExpressions":[{"key":"node-role.kubernetes.io/control-plane","operator":"Exists"}]}]` {
			t.Errorf("DaemonSet: want required node affinity to control-plane nodes, got %+v", pod.Affinity)
		}
	case "Deployment":
		if pod.Affinity == nil || pod.Affinity.PodAntiAffinity == nil || len(pod.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 1 {
			t.Errorf("Deployment: want required pod anti-affinity, got %+v", pod.Affinity)
		}
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if !slices.Contains(c.Args, "--cloud-config="+mountPath+"/"+configKey) {
		t.Errorf("args %q lack --cloud-config", c.Args)
	}
	if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == mountPath && m.ReadOnly }) {
		t.Errorf("cloud-config not mounted read-only at %s", mountPath)
	}
	// The memory limit the binary derives its Go soft limit from.
	lim, req := c.Resources.Limits.Memory(), c.Resources.Requests.Memory()
	if lim.IsZero() || req.IsZero() || req.Cmp(*lim) > 0 {
		t.Errorf("memory request %v limit %v: want both, request <= limit", req, lim)
	}
	if q := c.Resources.Limits[corev1.ResourceCPU]; !q.IsZero() {
		t.Errorf("CPU limit %v: throttling delays leader-election renewals", q.String())
	}
	sc := c.SecurityContext
	if sc == nil || !ptr.Deref(sc.RunAsNonRoot, false) || !ptr.Deref(sc.ReadOnlyRootFilesystem, false) ||
		ptr.Deref(sc.AllowPrivilegeEscalation, true) || sc.Capabilities == nil ||
		!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 ||
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("container securityContext %s: want runAsNonRoot, readOnlyRootFilesystem, no privilege escalation, drop ALL, RuntimeDefault seccomp", mustJSON(t, sc))
	}
	if sum := tmpl.Annotations["checksum/cloud-config"]; !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(sum) {
		t.Errorf("checksum/cloud-config annotation %q, want a sha256", sum)
	}
}

// TestChecksumRollsPods: the pod template's checksum follows the
// cloud-config and nothing else, so only a config change rolls the pods.
func TestChecksumRollsPods(t *testing.T) {
	sum := func(args ...string) string {
		_, tmpl := podTemplate(t, render(t, ns, append([]string{"-f", values("aws")}, args...)...))
		return tmpl.Annotations["checksum/cloud-config"]
	}
	base := sum()
	if again := sum(); again != base {
		t.Errorf("two renderings of the same values differ: %s, %s", base, again)
	}
	if other := sum("--set", "cloudConfig.clusterID=prod-eu-2"); other == base {
		t.Error("a changed cloud-config keeps the checksum: the pods would not roll")
	}
	if other := sum("--set", "logVerbosity=4"); other != base {
		t.Error("a change outside the cloud-config changed the checksum")
	}
}

// TestCloudConfigString: cloudConfig as a string (e.g. --set-file) is used
// verbatim, comments included.
func TestCloudConfigString(t *testing.T) {
	raw := "# a comment survives\napiVersion: multicloud-ccm.io/v1alpha1\nkind: CloudConfig\nprovider: aws\nclusterID: c1\naws:\n  region: eu-west-1\n"
	file := filepath.Join(t.TempDir(), "cloud-config.yaml")
	if err := os.WriteFile(file, []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	var s corev1.Secret
	decode(t, find(t, render(t, ns, "--set-file", "cloudConfig="+file), "Secret", secretName), &s)
	if got := s.StringData[configKey]; strings.TrimSpace(got) != strings.TrimSpace(raw) {
		t.Errorf("cloud-config.yaml:\n%s\nwant\n%s", got, raw)
	}
}

// TestExistingSecret: no Secret of the chart's, the volume names the
// user's, no checksum (the chart cannot see that Secret's content).
func TestExistingSecret(t *testing.T) {
	objs := render(t, ns, "--set", "existingSecret=my-cloud-config")
	for _, o := range objs {
		if o.GetKind() == "Secret" {
			t.Errorf("Secret %s rendered with existingSecret set", o.GetName())
		}
	}
	_, tmpl := podTemplate(t, objs)
	if _, ok := tmpl.Annotations["checksum/cloud-config"]; ok {
		t.Error("checksum annotation with existingSecret")
	}
	if !slices.ContainsFunc(tmpl.Spec.Volumes, func(v corev1.Volume) bool {
		return v.Secret != nil && v.Secret.SecretName == "my-cloud-config"
	}) {
		t.Errorf("no volume of Secret my-cloud-config: %s", mustJSON(t, tmpl.Spec.Volumes))
	}
}

// TestInvalidValues: values that cannot work, or a misspelt key, fail the
// rendering with a message that says why.
func TestInvalidValues(t *testing.T) {
	h := getHelm(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "no cloud-config"},
		{[]string{"-f", values("aws"), "--set", "existingSecret=x"}, "not both"},
		// values.schema.json
		{[]string{"-f", values("aws"), "--set", "kind=StatefulSet"}, "/kind"},
		{[]string{"-f", values("aws"), "--set", "extraArg={--v=4}"}, "'extraArg' not allowed"},
		{[]string{"-f", values("aws"), "--set", "image.digest=latest"}, "/image/digest"},
		// ... and the templates, for what the schema does not catch (or
		// --skip-schema-validation).
		{[]string{"-f", values("aws"), "--set", "kind=StatefulSet", "--skip-schema-validation"}, "want Deployment or DaemonSet"},
		{[]string{"-f", values("aws"), "--set", "clusterCIDR=10.244.0.0/16"}, "configureCloudRoutes"},
		{[]string{"-f", values("aws"), "--set", "nodeIPAM.enabled=true"}, "nodeIPAM.enabled needs clusterCIDR"},
		{[]string{"-f", values("aws"), "--set", "nodeIPAM.nodeCIDRMaskSizeIPv4=40"}, "nodeCIDRMaskSizeIPv4"},
	} {
		_, err := h.Template(ns, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("helm template %q: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}

func TestImage(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(getHelm(t).Chart, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(raw, &meta); err != nil || meta.AppVersion == "" {
		t.Fatalf("Chart.yaml appVersion: %q, %v", meta.AppVersion, err)
	}
	digest := "sha256:" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "multicloud-ccm:" + meta.AppVersion},
		{[]string{"--set", "image.repository=registry.example.com/ccm", "--set", "image.tag=v9.9.9"}, "registry.example.com/ccm:v9.9.9"},
		{[]string{"--set", "image.tag=v9.9.9", "--set", "image.digest=" + digest}, "multicloud-ccm@" + digest},
	} {
		_, tmpl := podTemplate(t, render(t, ns, append([]string{"-f", values("aws")}, tc.args...)...))
		if got := tmpl.Spec.Containers[0].Image; got != tc.want {
			t.Errorf("%q: image %q, want %q", tc.args, got, tc.want)
		}
	}
}

// TestArgs: the values that become flags.
func TestArgs(t *testing.T) {
	_, tmpl := podTemplate(t, render(t, ns, "-f", values("aws"),
		"--set", "enabledControllers={*,-node-route}",
		"--set", "configureCloudRoutes=true", "--set", "clusterCIDR=10.244.0.0/16",
		"--set", "leaderElection.enabled=false", "--set", "securePort=10300", "--set", "logVerbosity=4",
		"--set", "extraArgs={--cluster-name=prod-eu-1,--concurrent-service-syncs=5}"))
	c := tmpl.Spec.Containers[0]
	want := []string{
		"--cloud-config=" + mountPath + "/" + configKey,
		"--leader-elect=false",
		"--use-service-account-credentials=false",
		"--bind-address=0.0.0.0",
		"--secure-port=10300",
		"--controllers=*,-node-route",
		"--configure-cloud-routes=true",
		"--cluster-cidr=10.244.0.0/16",
		"--v=4",
		"--cluster-name=prod-eu-1",
		"--concurrent-service-syncs=5",
	}
	if !slices.Equal(c.Args, want) {
		t.Errorf("args\n got %q\nwant %q", c.Args, want)
	}
	if len(c.Ports) != 1 || c.Ports[0].ContainerPort != 10300 || c.LivenessProbe.HTTPGet.Port.IntValue() != 10300 {
		t.Errorf("securePort not applied to the port %v and the probe %v", c.Ports, c.LivenessProbe.HTTPGet.Port)
	}
}

// TestServiceAccountAnnotations: workload identity's annotation lands on
// the ServiceAccount the pods run as.
func TestServiceAccountAnnotations(t *testing.T) {
	objs := render(t, ns, "-f", values("aws"), "--set", "serviceAccount.annotations.eks\\.amazonaws\\.com/role-arn=arn:aws:iam::123456789012:role/ccm")
	for _, o := range objs {
		if o.GetKind() == "ServiceAccount" {
			if got := o.GetAnnotations()["eks.amazonaws.com/role-arn"]; got != "arn:aws:iam::123456789012:role/ccm" {
				t.Errorf("ServiceAccount annotations %v", o.GetAnnotations())
			}
			return
		}
	}
	t.Fatal("no ServiceAccount rendered")
}

// TestNodeIPAMArgs: nodeIPAM turns the cloud allocator on with upstream's
// flags, as kOps passes them to the GCP CCM.
func TestNodeIPAMArgs(t *testing.T) {
	_, tmpl := podTemplate(t, render(t, ns, "-f", values("aws"),
		"--set", "clusterCIDR=10.4.0.0/14", "--set", "nodeIPAM.enabled=true",
		"--set", "nodeIPAM.nodeCIDRMaskSizeIPv4=26", "--set", "nodeIPAM.serviceClusterIPRange=10.96.0.0/12"))
	args := tmpl.Spec.Containers[0].Args
	for _, want := range []string{"--cluster-cidr=10.4.0.0/14", "--allocate-node-cidrs=true", "--cidr-allocator-type=CloudAllocator",
		"--node-cidr-mask-size-ipv4=26", "--service-cluster-ip-range=10.96.0.0/12", "--configure-cloud-routes=false"} {
		if !slices.Contains(args, want) {
			t.Errorf("args %q lack %s", args, want)
		}
	}
	if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--node-cidr-mask-size-ipv6") }) {
		t.Errorf("args %q set the IPv6 mask left at 0", args)
	}
}

// rbacKinds are the kinds deploy/'s RBAC consists of.
var rbacKinds = []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}

// stripMeta returns obj as JSON without the metadata the two sources may
// differ in (labels, annotations), after checking that obj's labels include
// base's.
func stripMeta(t *testing.T, obj *unstructured.Unstructured, base map[string]string) string {
	t.Helper()
	o := obj.DeepCopy()
	for k, v := range base {
		if o.GetLabels()[k] != v {
			t.Errorf("%s %s: label %s=%q, want %q (deploy/'s)", o.GetKind(), o.GetName(), k, o.GetLabels()[k], v)
		}
	}
	o.SetLabels(nil)
	o.SetAnnotations(nil)
	js, err := o.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return canonical(t, string(js))
}

// TestRBACMatchesDeploy: the chart's ServiceAccount, roles and bindings are
// deploy/'s, object for object (names, namespaces, rules, roleRefs,
// subjects); only the chart's labels are added. Installed elsewhere than
// kube-system, the subjects follow the release namespace and the two
// kube-system grants stay there.
func TestRBACMatchesDeploy(t *testing.T) {
	want := map[string]*unstructured.Unstructured{}
	for _, o := range readDeploy(t, "deploy") {
		if slices.Contains(rbacKinds, o.GetKind()) {
			want[o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName()] = o
		}
	}
	got := map[string]*unstructured.Unstructured{}
	for _, o := range render(t, ns, "-f", values("aws")) {
		if slices.Contains(rbacKinds, o.GetKind()) {
			got[o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName()] = o
		}
	}
	if g, w := slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)); !slices.Equal(g, w) {
		t.Fatalf("chart RBAC objects\n %q\ndeploy/'s\n %q", g, w)
	}
	for key, w := range want {
		g := got[key]
		if d := jsonDiff(t, stripMeta(t, g, w.GetLabels()), stripMeta(t, w, nil)); len(d) > 0 {
			t.Errorf("%s differs from deploy/'s:\n%s", key, strings.Join(d, "\n"))
		}
	}

	// Another namespace.
	for _, o := range render(t, "ccm-system", "-f", values("aws")) {
		if !slices.Contains(rbacKinds, o.GetKind()) {
			continue
		}
		key := o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
		switch {
		case o.GetKind() == "ServiceAccount" && o.GetNamespace() != "ccm-system":
			t.Errorf("%s: want the ServiceAccount in the release namespace", key)
		case (o.GetKind() == "Role" || o.GetKind() == "RoleBinding") && o.GetNamespace() != ns:
			t.Errorf("%s: the Lease, ingress-uid and extension-apiserver-authentication grants belong in kube-system", key)
		}
		subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
		for _, s := range subjects {
			if s.(map[string]any)["namespace"] != "ccm-system" {
				t.Errorf("%s: subject %v, want the release namespace ccm-system", key, s)
			}
		}
	}
}

// TestDeploymentMatchesDeploy: the chart's default Deployment is
// deploy/deployment.yaml's, field for field, except for the differences
// listed here, each intended: deploy/ is the source of truth and this test
// makes the chart follow it.
func TestDeploymentMatchesDeploy(t *testing.T) {
	var got, want appsv1.Deployment
	decode(t, find(t, render(t, ns, "-f", values("aws")), "Deployment", ""), &got)
	decode(t, find(t, readDeploy(t, "deploy/deployment.yaml"), "Deployment", ""), &want)

	if got.Name != want.Name || got.Namespace != want.Namespace {
		t.Errorf("Deployment %s/%s, want %s/%s", got.Namespace, got.Name, want.Namespace, want.Name)
	}
	// 1. The chart's labels (helm.sh/chart, instance, version, managed-by)
	// beside deploy/'s, and the checksum annotation.
	subset := func(what string, g, w map[string]string) {
		for k, v := range w {
			if g[k] != v {
				t.Errorf("%s: label %s=%q, want %q", what, k, g[k], v)
			}
		}
	}
	subset("Deployment", got.Labels, want.Labels)
	subset("pod template", got.Spec.Template.Labels, want.Spec.Template.Labels)
	got.Spec.Template.Labels, got.Spec.Template.Annotations = want.Spec.Template.Labels, want.Spec.Template.Annotations
	pod, wpod := &got.Spec.Template.Spec, &want.Spec.Template.Spec
	if len(pod.Containers) != 1 || len(wpod.Containers) != 1 {
		t.Fatalf("containers: chart %d, deploy %d; want 1", len(pod.Containers), len(wpod.Containers))
	}
	c, wc := &pod.Containers[0], &wpod.Containers[0]
	// 2. A real image reference (deploy/ has a placeholder) and its pull policy.
	c.Image, c.ImagePullPolicy = wc.Image, wc.ImagePullPolicy
	// 3. A memory limit, which the binary derives its Go soft limit from.
	if lim := c.Resources.Limits.Memory(); lim.Cmp(resource.MustParse("256Mi")) != 0 || len(c.Resources.Limits) != 1 {
		t.Errorf("limits %v, want memory: 256Mi only", c.Resources.Limits)
	}
	c.Resources.Limits = wc.Resources.Limits
	// 4. The CriticalAddonsOnly toleration, after deploy/'s.
	crit := corev1.Toleration{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists}
	if wantTol := append(slices.Clone(wpod.Tolerations), crit); mustJSON(t, pod.Tolerations) != mustJSON(t, wantTol) {
		t.Errorf("tolerations %s, want deploy/'s and CriticalAddonsOnly", mustJSON(t, pod.Tolerations))
	}
	pod.Tolerations = wpod.Tolerations

	// Everything else: replicas, strategy, selector, args, ports, probes,
	// security contexts, affinity, volumes.
	if d := jsonDiff(t, mustJSON(t, got.Spec), mustJSON(t, want.Spec)); len(d) > 0 {
		t.Errorf("the chart's Deployment spec differs from deploy/deployment.yaml's beyond the intended differences:\n%s", strings.Join(d, "\n"))
	}
}

// jsonDiff lists where two JSON documents differ, one line per path:
// "spec.x: chart V, deploy W".
func jsonDiff(t *testing.T, chartJSON, deployJSON string) []string {
	t.Helper()
	var a, b any
	if err := json.Unmarshal([]byte(chartJSON), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(deployJSON), &b); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(path string, a, b any)
	walk = func(path string, a, b any) {
		am, aok := a.(map[string]any)
		bm, bok := b.(map[string]any)
		if aok && bok {
			keys := maps.Clone(am)
			maps.Copy(keys, bm)
			for _, k := range slices.Sorted(maps.Keys(keys)) {
				walk(path+"."+k, am[k], bm[k])
			}
			return
		}
		as, aok := a.([]any)
		bs, bok := b.([]any)
		if aok && bok && len(as) == len(bs) {
			for i := range as {
				walk(fmt.Sprintf("%s[%d]", path, i), as[i], bs[i])
			}
			return
		}
		if aj, bj := mustJSON(t, a), mustJSON(t, b); aj != bj {
			out = append(out, fmt.Sprintf("  %s: chart %s, deploy %s", strings.TrimPrefix(path, "."), aj, bj))
		}
	}
	walk("", a, b)
	return out
}

// violations returns the names in a Pod Security message's list of
// violations ("...": name (detail), name (detail)); details may hold commas.
func violations(msg string) []string {
	i := strings.Index(msg, `":`)
	if i < 0 {
		return nil
	}
	msg = msg[i+2:]
	var names []string
	depth, start := 0, 0
	for j, r := range msg {
		switch r {
		case '(':
			if depth == 0 {
				names = append(names, strings.TrimSpace(msg[start:j]))
			}
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				start = j + 1
			}
		}
	}
	return names
}

func TestViolationsParser(t *testing.T) {
	got := violations(`pods "x" is forbidden: violates PodSecurity "restricted:latest": host namespaces (hostNetwork=true), hostPort (container "a", "b" uses hostPort 10258), runAsNonRoot != true (pod or container "a" must set securityContext.runAsNonRoot=true)`)
	if want := []string{"host namespaces", "hostPort", "runAsNonRoot != true"}; !slices.Equal(got, want) {
		t.Errorf("violations %q, want %q", got, want)
	}
}

func fmtObjs(objs []*unstructured.Unstructured) string {
	var b strings.Builder
	for _, o := range objs {
		fmt.Fprintf(&b, "%s %s/%s; ", o.GetKind(), o.GetNamespace(), o.GetName())
	}
	return b.String()
}

// TestValuesDocumented keeps values.yaml, values.schema.json and the
// README's values table in step: the schema knows exactly the keys
// values.yaml has (so a misspelt key is rejected, a new one cannot be
// forgotten), and the table has a row for each, nested keys of the
// schema's closed objects (image.tag, ...) one row each.
func TestValuesDocumented(t *testing.T) {
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, chart.ChartDir)
	read := func(name string, out any) {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	var vals map[string]any
	read("values.yaml", &vals)
	type schemaNode struct {
		AdditionalProperties *bool                 `json:"additionalProperties"`
		Properties           map[string]schemaNode `json:"properties"`
	}
	var schema schemaNode
	read("values.schema.json", &schema)

	var want []string
	props := maps.Clone(schema.Properties)
	delete(props, "global")
	if g, w := slices.Sorted(maps.Keys(vals)), slices.Sorted(maps.Keys(props)); !slices.Equal(g, w) {
		t.Errorf("values.yaml keys %q, values.schema.json properties %q", g, w)
	}
	for k, p := range props {
		if p.AdditionalProperties == nil || *p.AdditionalProperties || len(p.Properties) == 0 {
			want = append(want, k)
			continue
		}
		sub, _ := vals[k].(map[string]any)
		if g, w := slices.Sorted(maps.Keys(sub)), slices.Sorted(maps.Keys(p.Properties)); !slices.Equal(g, w) {
			t.Errorf("values.yaml %s keys %q, values.schema.json %q", k, g, w)
		}
		for s := range p.Properties {
			want = append(want, k+"."+s)
		}
	}
	slices.Sort(want)

	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|").FindAllSubmatch(readme, -1) {
		rows = append(rows, string(m[1]))
	}
	slices.Sort(rows)
	if !slices.Equal(rows, want) {
		t.Errorf("README.md values table rows\n %q\nwant\n %q", rows, want)
	}
}

// TestPackage: helm package builds the archive a chart repository would
// serve, and it renders exactly what the directory does.
func TestPackage(t *testing.T) {
	h := getHelm(t)
	dir := t.TempDir()
	if _, _, err := h.Run("package", h.Chart, "--destination", dir); err != nil {
		t.Fatal(err)
	}
	tgz, err := filepath.Glob(filepath.Join(dir, "multicloud-ccm-*.tgz"))
	if err != nil || len(tgz) != 1 {
		t.Fatalf("packaged %v (%v), want one multicloud-ccm-<version>.tgz", tgz, err)
	}
	args := []string{"--namespace", ns, "-f", values("openstack"), "--set", "kind=DaemonSet"}
	fromDir, _, err := h.Run(append([]string{"template", "multicloud-ccm", h.Chart}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	fromTgz, _, err := h.Run(append([]string{"template", "multicloud-ccm", tgz[0]}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fromDir, fromTgz) {
		t.Error("the packaged chart renders differently from the directory")
	}
}
