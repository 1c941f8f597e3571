package chart_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/multicloud-ccm/multicloud-ccm/test/controlplane"
)

// Namespaces of the Pod Security checks: one enforcing restricted, one
// enforcing privileged that warns about what restricted would reject.
const (
	nsRestricted = "psa-restricted"
	nsWarn       = "psa-warn"
	nsOther      = "ccm-system"
)

// hostNetworkViolations are what restricted (through baseline) rejects in a
// hostNetwork pod: the host network namespace itself, and the host port
// that the apiserver's defaulting sets to the container port on such a pod.
var hostNetworkViolations = []string{"host namespaces", "hostPort"}

// TestServerSideDryRun applies every rendering the tests use to a real
// kube-apiserver with server-side apply in dry-run mode and strict field
// validation (an unknown field, a warning or a wrong scope fails), with the
// Prometheus Operator's real ServiceMonitor CRD installed; then it
// dry-run-creates a Pod from each rendered pod template under Pod Security
// admission: with hostNetwork: false it passes "restricted" (enforced);
// with hostNetwork: true (the default) restricted rejects it for host
// namespaces (and the implied hostPort) and nothing else.
func TestServerSideDryRun(t *testing.T) {
	if testing.Short() {
		t.Skip("needs etcd and kube-apiserver (test/controlplane)")
	}
	// The control plane's start (seconds) overlaps the rendering tests.
	t.Parallel()
	type rendering struct {
		name, namespace string
		args            []string
		objs            []*unstructured.Unstructured
	}
	var rs []*rendering
	for _, cloud := range clouds {
		for _, kind := range kinds {
			rs = append(rs, &rendering{name: cloud + "/" + kind, namespace: ns, args: []string{"-f", values(cloud), "--set", "kind=" + kind}})
		}
	}
	rs = append(rs,
		&rendering{name: "hostNetwork=false", namespace: ns, args: []string{"-f", values("aws"), "--set", "hostNetwork=false", "--set", "dnsPolicy=ClusterFirst"}},
		&rendering{name: "hostNetwork=false/DaemonSet", namespace: ns, args: []string{"-f", values("aws"), "--set", "hostNetwork=false", "--set", "kind=DaemonSet"}},
		&rendering{name: "serviceMonitor", namespace: ns, args: []string{"-f", values("aws"), "--set", "serviceMonitor.enabled=true", "--set", "serviceMonitor.labels.release=prometheus"}},
		&rendering{name: "existingSecret", namespace: ns, args: []string{"--set", "existingSecret=my-cloud-config", "--set", "replicas=3"}},
		&rendering{name: "namespace=" + nsOther, namespace: nsOther, args: []string{"-f", values("gce"), "--set", "enabledControllers={*,-node-route}", "--set", "extraArgs={--cluster-name=c1}"}},
	)
	// Render (and fail) before paying for a control plane.
	for _, r := range rs {
		r.objs = render(t, r.namespace, r.args...)
	}

	cp, err := controlplane.Start(controlplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	ctx := t.Context()

	installServiceMonitorCRD(ctx, t, cp)
	for name, labels := range map[string]map[string]string{
		nsOther:      nil,
		nsRestricted: {"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"},
		nsWarn: {"pod-security.kubernetes.io/enforce": "privileged",
			"pod-security.kubernetes.io/warn": "restricted", "pod-security.kubernetes.io/warn-version": "latest"},
	} {
		if _, err := cp.AdminClient.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The ServiceAccount admission plugin rejects a Pod whose
		// ServiceAccount does not exist.
		if name != nsOther {
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "cloud-controller-manager"}}
			if _, err := cp.AdminClient.CoreV1().ServiceAccounts(name).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}

	warn := &controlplane.Warnings{}
	cfg := rest.CopyConfig(cp.Admin)
	cfg.WarningHandler = warn
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}

	for _, r := range rs {
		t.Run(r.name, func(t *testing.T) {
			if err := controlplane.Apply(ctx, cp.Admin, r.objs, true); err != nil {
				t.Fatalf("%s\nobjects: %s", err, fmtObjs(r.objs))
			}
			kind, tmpl := podTemplate(t, r.objs)
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "pod-security-check", Labels: tmpl.Labels, Annotations: tmpl.Annotations},
				Spec:       tmpl.Spec,
			}
			dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict}
			create := func(namespace string) ([]string, error) {
				p := pod.DeepCopy()
				p.Namespace = namespace
				warn.Take()
				_, err := client.CoreV1().Pods(namespace).Create(ctx, p, dry)
				return warn.Take(), err
			}

			if !tmpl.Spec.HostNetwork {
				w, err := create(nsRestricted)
				if err != nil || len(w) != 0 {
					t.Errorf("%s pod with hostNetwork: false in a namespace enforcing restricted: error %v, warnings %q", kind, err, w)
				}
				return
			}
			// Enforced: rejected, for host namespaces only.
			_, err := create(nsRestricted)
			if !apierrors.IsForbidden(err) {
				t.Fatalf("%s pod with hostNetwork in a namespace enforcing restricted: error %v, want Forbidden by Pod Security", kind, err)
			}
			checkViolations(t, "rejection", err.Error())
			// Warned: admitted, with the same violations only.
			w, err := create(nsWarn)
			if err != nil {
				t.Fatalf("%s pod in a privileged namespace: %v", kind, err)
			}
			if len(w) != 1 {
				t.Fatalf("warnings %q, want one from Pod Security (warn=restricted)", w)
			}
			checkViolations(t, "warning", w[0])
		})
	}
}

// checkViolations fails unless msg is a Pod Security "restricted" message
// whose violations are exactly host namespaces and hostPort.
func checkViolations(t *testing.T, what, msg string) {
	t.Helper()
	if !strings.Contains(msg, `PodSecurity "restricted:latest"`) {
		t.Errorf("%s %q is not from Pod Security restricted", what, msg)
		return
	}
	got := violations(msg)
	slices.Sort(got)
	want := slices.Clone(hostNetworkViolations)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s names the violations %q, want only %q (all from hostNetwork): %s", what, got, want, msg)
	}
}

// installServiceMonitorCRD creates the Prometheus Operator's
// ServiceMonitor CRD, from the module pinned in tools/crds/go.mod (the Go
// module proxy serves it; only its YAML is used), and waits until the
// apiserver serves the kind.
func installServiceMonitorCRD(ctx context.Context, t *testing.T, cp *controlplane.ControlPlane) {
	t.Helper()
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", "github.com/prometheus-operator/prometheus-operator")
	cmd.Dir = filepath.Join(root, "test", "chart", "tools", "crds")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download the prometheus-operator module (test/chart/tools/crds): %v\n%s", err, out)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download -json: %v %s\n%s", err, mod.Error, out)
	}
	objs, err := controlplane.ReadManifests(filepath.Join(mod.Dir, "example", "prometheus-operator-crd", "monitoring.coreos.com_servicemonitors.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := controlplane.Apply(ctx, cp.Admin, objs, false); err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		list, err := dc.ServerResourcesForGroupVersion("monitoring.coreos.com/v1")
		if err == nil && slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Kind == "ServiceMonitor" }) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("ServiceMonitor not served 30s after creating its CRD: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
