package controlplane

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestStartServesAndStopsCleanly starts a control plane, checks RBAC is
// enforced for a ServiceAccount with no bindings, and stops it.
func TestStartServesAndStopsCleanly(t *testing.T) {
	cp, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	ctx := context.Background()
	v, err := cp.AdminClient.Discovery().ServerVersion()
	if err != nil || !strings.HasPrefix(v.GitVersion, "v1.37.") {
		t.Fatalf("server version %v, %v", v, err)
	}
	saCfg, err := cp.ServiceAccountConfig(ctx, "default", "nobody", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cs := mustClient(t, saCfg)
	if _, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("unbound ServiceAccount listed nodes: %v", err)
	}
	// Apply is strict: an unknown field or a missing namespace fails, a
	// clean object passes (dry run: nothing stored).
	good := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c", "namespace": "default"}, "data": map[string]any{"k": "v"},
	}}
	if err := Apply(ctx, cp.Admin, []*unstructured.Unstructured{good}, true); err != nil {
		t.Fatalf("clean ConfigMap: %v", err)
	}
	typo := good.DeepCopy()
	typo.Object["dta"] = map[string]any{"k": "v"}
	if err := Apply(ctx, cp.Admin, []*unstructured.Unstructured{typo}, true); err == nil || !strings.Contains(err.Error(), "dta") {
		t.Errorf("unknown field: err = %v", err)
	}
	noNS := good.DeepCopy()
	noNS.SetNamespace("")
	if err := Apply(ctx, cp.Admin, []*unstructured.Unstructured{noNS}, true); err == nil || !strings.Contains(err.Error(), "namespaced") {
		t.Errorf("namespaced object without namespace: err = %v", err)
	}

	marks := []string{cp.env.ControlPlane.APIServer.CertDir, cp.env.ControlPlane.Etcd.DataDir}
	if err := cp.Stop(); err != nil {
		t.Fatal(err)
	}
	if left := processesMentioning(marks); len(left) > 0 {
		t.Fatalf("processes left after Stop: %v", left)
	}
}

// TestNoProcessLeftWhenTheTestDies runs a child test binary that starts a
// control plane and exits without stopping it, as a killed or timed-out
// test would; the watchdog must end etcd and kube-apiserver.
func TestNoProcessLeftWhenTheTestDies(t *testing.T) {
	if os.Getenv("CONTROLPLANE_DIE_CHILD") != "" {
		cp, err := Start(Options{})
		if err != nil {
			t.Fatal(err)
		}
		os.Stdout.WriteString("MARKS " + cp.env.ControlPlane.APIServer.CertDir + " " + cp.env.ControlPlane.Etcd.DataDir + "\n")
		os.Exit(3)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNoProcessLeftWhenTheTestDies$")
	cmd.Env = append(os.Environ(), "CONTROLPLANE_DIE_CHILD=1")
	out, _ := cmd.Output()
	var marks []string
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "MARKS "); ok {
			marks = strings.Fields(rest)
		}
	}
	if len(marks) != 2 {
		t.Fatalf("child did not start a control plane: %s", out)
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if len(processesMentioning(marks)) == 0 {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	left := processesMentioning(marks)
	t.Fatalf("processes left behind after the test process died: %v", left)
}

func mustClient(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
