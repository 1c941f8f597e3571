package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/multicloud-ccm/multicloud-ccm/providers/fakecloud"
	"github.com/multicloud-ccm/multicloud-ccm/test/ccmproc"
)

const (
	// fakeSecret is the fake backend's apiToken; it must never be printed.
	fakeSecret = "s3cr3t-token-value-7d1f"
	lbIP       = "203.0.113.10"
)

func fakeCloudConfig(callLog string, nodes ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: multicloud-ccm.io/v1alpha1
kind: CloudConfig
provider: e2e-fake
clusterID: e2e-foundation
e2e-fake:
  # Routes supported but no --cluster-cidr: the manager must still run.
  routes: true
  callLog: %s
  apiToken: %s
  loadBalancerIP: %s
  instances:
`, callLog, fakeSecret, lbIP)
	for i, n := range nodes {
		fmt.Fprintf(&b, `  - nodeName: %[1]s
    providerID: e2e-fake:///zone-%[2]d/%[1]s
    instanceType: fake.large
    zone: zone-%[2]d
    region: region-1
    addresses:
    - {type: InternalIP, address: 10.0.0.%[3]d}
    - {type: ExternalIP, address: 198.51.100.%[3]d}
    - {type: Hostname, address: %[1]s}
`, n, i%2, 10+i)
	}
	return b.String()
}

// TestManager runs two instances of the binary: the first leads and runs
// the controllers, the second waits on the Lease and takes over when the
// first stops.
func TestManager(t *testing.T) {
	callLog := filepath.Join(env.tmp, "calls.log")
	cfg := writeFile(t, "fake-cloud-config.yaml", fakeCloudConfig(callLog, "node-a", "node-b", "node-c"))

	a := env.startCCM(t, "ccm-a", env.fakeBinary, cfg)
	var holderA string
	poll(t, 60*time.Second, "ccm-a to hold the leader Lease", func(ctx context.Context) (bool, string, error) {
		if a.exited() {
			t.Fatalf("ccm-a exited: %v\n%s", a.Err(), tail(a.log.String(), 40))
		}
		h, err := leaseHolder(ctx)
		holderA = h
		return h != "" && a.acquired(), "holder=" + h, err
	})
	b := env.startCCM(t, "ccm-b", env.fakeBinary, cfg)

	t.Run("healthz answers ok on the secure port", func(t *testing.T) {
		for _, p := range []*ccmProcess{a, b} {
			poll(t, 30*time.Second, p.name+" /healthz", func(context.Context) (bool, string, error) {
				code, body, err := p.healthz()
				return code == 200 && body == "ok", fmt.Sprintf("%d %q", code, body), err
			})
		}
	})

	t.Run("empty cluster-cidr skips the route controller instead of exiting", func(t *testing.T) {
		poll(t, 30*time.Second, "route controller skip message", func(context.Context) (bool, string, error) {
			return strings.Contains(a.log.String(), "Not starting the node-route controller"), "", nil
		})
		if a.exited() {
			t.Fatalf("ccm-a exited: %v", a.Err())
		}
	})

	t.Run("an uninitialized node is initialized from the cloud", func(t *testing.T) {
		testNodeInitialized(t, "node-a", "zone-0", "10.0.0.10")
	})

	t.Run("a LoadBalancer service gets an address, a finalizer, and is cleaned up", func(t *testing.T) {
		testLoadBalancerLifecycle(t, callLog)
	})

	t.Run("configz is served to an authorized client and holds no secret", func(t *testing.T) {
		code, body, err := a.get("/configz", true)
		if err != nil || code != 200 {
			t.Fatalf("/configz: %d %v %s", code, err, body)
		}
		if !strings.Contains(body, "cloudcontrollermanager.config.k8s.io") {
			t.Fatalf("/configz body: %s", body)
		}
		if strings.Contains(body, fakeSecret) {
			t.Fatalf("/configz shows the cloud-config secret")
		}
		// Anonymous callers get nothing beyond the health endpoints.
		if code, _, err := a.get("/configz", false); err != nil || code != 401 && code != 403 {
			t.Fatalf("anonymous /configz: %d %v", code, err)
		}
	})

	t.Run("the standby stays standby while the leader runs", func(t *testing.T) {
		if b.acquired() {
			t.Fatalf("ccm-b acquired the lease while ccm-a leads")
		}
		if h, _ := leaseHolder(context.Background()); h != holderA {
			t.Fatalf("lease holder changed to %q", h)
		}
	})

	t.Run("the standby takes over within 30s when the leader stops", func(t *testing.T) {
		start := time.Now()
		a.stop()
		var holder string
		poll(t, 30*time.Second, "ccm-b to take the Lease", func(ctx context.Context) (bool, string, error) {
			h, err := leaseHolder(ctx)
			holder = h
			return h != "" && h != holderA && b.acquired(), "holder=" + h, err
		})
		t.Logf("failover took %v (holder %s -> %s)", time.Since(start).Round(100*time.Millisecond), holderA, holder)
		// The new leader runs the controllers.
		testNodeInitialized(t, "node-b", "zone-1", "10.0.0.11")
	})

	t.Run("no secret in any log", func(t *testing.T) {
		for _, p := range []*ccmProcess{a, b} {
			if strings.Contains(p.log.String(), fakeSecret) {
				t.Fatalf("%s logged the cloud-config secret", p.name)
			}
		}
	})
}

func testNodeInitialized(t *testing.T, name, zone, internalIP string) {
	t.Helper()
	ctx := context.Background()
	node := ccmproc.KubeletNode(name, "")
	if _, err := env.admin.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Other tests in the package run other backends against this cluster.
	t.Cleanup(func() { _ = env.admin.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	poll(t, 60*time.Second, "node "+name+" initialized", func(ctx context.Context) (bool, string, error) {
		n, err := env.admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		// Addresses land in a separate status patch.
		return ccmproc.Initialized(n) && len(n.Status.Addresses) >= 3,
			fmt.Sprintf("providerID=%q taints=%v addresses=%v", n.Spec.ProviderID, n.Spec.Taints, n.Status.Addresses), nil
	})
	n, err := env.admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "e2e-fake:///" + zone + "/" + name; n.Spec.ProviderID != want {
		t.Errorf("providerID = %q, want %q", n.Spec.ProviderID, want)
	}
	wantLabels := map[string]string{
		corev1.LabelInstanceTypeStable: "fake.large",
		corev1.LabelTopologyZone:       zone,
		corev1.LabelTopologyRegion:     "region-1",
	}
	for k, v := range wantLabels {
		if n.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, n.Labels[k], v)
		}
	}
	got := map[corev1.NodeAddressType]string{}
	for _, a := range n.Status.Addresses {
		got[a.Type] = a.Address
	}
	if got[corev1.NodeInternalIP] != internalIP || got[corev1.NodeHostName] != name || got[corev1.NodeExternalIP] == "" {
		t.Errorf("addresses = %v", n.Status.Addresses)
	}
}

func testLoadBalancerLifecycle(t *testing.T, callLog string) {
	t.Helper()
	ctx := context.Background()
	svcs := env.admin.CoreV1().Services("default")
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	if _, err := svcs.Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 60*time.Second, "service address and finalizer", func(ctx context.Context) (bool, string, error) {
		s, err := svcs.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		hasFinalizer := false
		for _, f := range s.Finalizers {
			hasFinalizer = hasFinalizer || f == "service.kubernetes.io/load-balancer-cleanup"
		}
		ing := s.Status.LoadBalancer.Ingress
		return hasFinalizer && len(ing) == 1 && ing[0].IP == lbIP, fmt.Sprintf("finalizers=%v ingress=%v", s.Finalizers, ing), nil
	})
	if !hasCall(t, callLog, "EnsureLoadBalancer", "default/web") {
		t.Fatalf("backend saw no EnsureLoadBalancer for default/web")
	}

	if err := svcs.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 60*time.Second, "service deleted", func(ctx context.Context) (bool, string, error) {
		_, err := svcs.Get(ctx, "web", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, "still present", err
	})
	if !hasCall(t, callLog, "EnsureLoadBalancerDeleted", "default/web") {
		t.Fatalf("backend saw no EnsureLoadBalancerDeleted for default/web")
	}
}

func hasCall(t *testing.T, log, op, svc string) bool {
	t.Helper()
	calls, err := fakecloud.ReadCalls(log)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range calls {
		if c.Op == op && c.Service == svc {
			return true
		}
	}
	return false
}

// TestBrokenCloudConfig: a bad cloud-config stops the command at start with
// the specific problem, before it touches the cluster or a cloud.
func TestBrokenCloudConfig(t *testing.T) {
	cases := []struct {
		name   string
		config string
		args   []string
		want   string
	}{
		{
			name: "unknown key in the provider section",
			config: "apiVersion: multicloud-ccm.io/v1alpha1\nkind: CloudConfig\nprovider: e2e-fake\nclusterID: c1\n" +
				"e2e-fake:\n  loadBalancerIP: 203.0.113.10\n  bogus: 1\n",
			want: `e2e-fake.bogus: unknown field "bogus" (line 7)`,
		},
		{
			name: "invalid value",
			config: "apiVersion: multicloud-ccm.io/v1alpha1\nkind: CloudConfig\nprovider: e2e-fake\nclusterID: c1\n" +
				"e2e-fake:\n  loadBalancerIP: not-an-ip\n",
			want: "e2e-fake.loadBalancerIP: Invalid value",
		},
		// A provider that is not compiled in: this binary has every
		// backend, so the slim builds show it (TestSlim*Build).
		{
			name:   "unknown provider",
			config: "apiVersion: multicloud-ccm.io/v1alpha1\nkind: CloudConfig\nprovider: digitalocean\nclusterID: c1\n",
			want:   `provider: Unsupported value: "digitalocean"`,
		},
		{
			name:   "cloud-provider flag disagrees with the file",
			config: "apiVersion: multicloud-ccm.io/v1alpha1\nkind: CloudConfig\nprovider: e2e-fake\nclusterID: c1\n",
			args:   []string{"--cloud-provider=aws"},
			want:   `--cloud-provider="aws" does not match provider "e2e-fake"`,
		},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, fmt.Sprintf("broken-%d.yaml", i), tc.config)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			args := append([]string{"--cloud-config=" + path, "--kubeconfig=" + env.saKubeconfig}, tc.args...)
			out, err := exec.CommandContext(ctx, env.fakeBinary, args...).CombinedOutput()
			if ctx.Err() != nil {
				t.Fatalf("command did not stop: %s", out)
			}
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
				t.Fatalf("exit = %v, want exit status 1; output:\n%s", err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Fatalf("output does not contain %q:\n%s", tc.want, out)
			}
		})
	}
}

// TestVersionListsCompiledBackends checks the honest provider list.
func TestVersionListsCompiledBackends(t *testing.T) {
	out, err := exec.Command(env.fakeBinary, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.Contains(string(out), "providers: aws,azure,e2e-fake,gce,openstack\n") {
		t.Fatalf("version output: %s", out)
	}
}
