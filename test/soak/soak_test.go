// Package soak runs the built multicloud-ccm binary for minutes against a
// real etcd + kube-apiserver and in-process cloud emulators, to show what
// only time shows: that a state the manager must leave alone stays left
// alone, quietly and cheaply.
//
// It is its own package, with its own control plane, rather than a test in
// test/e2e, because that package runs its tests one after another against
// one shared control plane for about 13 minutes: a 10-minute wait there
// would add 10 minutes to `make test`. `go test ./...` runs two packages
// at a time on a 2-core machine, so this one can run beside test/e2e
// instead of after it, costing the suite little wall time while it mostly
// sleeps (the manager, its control plane and the emulators are idle).
//
// The soak lasts 10 minutes (soakDuration); SOAK_DURATION (a Go duration)
// shortens it for local runs. The test needs a -timeout of its duration
// plus 3 minutes (make test passes 30m); under go test's default of 10m it
// fails at once and says so rather than panicking at the timeout. It is
// skipped under -short. SOAK_KEEP=1 keeps the manager's log and the
// cloud-config.
//
//	SOAK_DURATION=1m go test ./test/soak -count=1 -v
//	go test ./test/soak -count=1 -v -timeout 20m
package soak

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/multicloud-ccm/multicloud-ccm/test/ccmproc"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance/clouds"
	"github.com/multicloud-ccm/multicloud-ccm/test/controlplane"
)

const (
	// soakDuration is how long the foreign Node stays NotReady under the
	// manager's eyes: the acceptance says 10 minutes.
	soakDuration = 10 * time.Minute
	// pollEvery is how often the soak looks at the Nodes and the manager.
	pollEvery = 10 * time.Second
	// endChecks is what the test needs beyond the soak itself: emulators,
	// manager start, Node initialization and the final checks.
	endChecks = 3 * time.Minute
	// converge is the generous wait for what has no stated bound.
	converge = 90 * time.Second

	clusterID         = "soak-hybrid"
	foreignName       = "soak-foreign"
	foreignProviderID = "k3s://soak-foreign"
	labelProvider     = "multicloud-ccm.io/provider"
	unownedSeries     = `multicloud_ccm_unowned_nodes{reason="foreign-provider-id"} 1`

	// maxForeignLogLines bounds the manager's log lines naming the foreign
	// Node over the whole run. The design (providers/compose/hybrid,
	// unowned.go and instances.go) is that such a Node is told about once,
	// in an Event, and logged once ("Node not served"), never at each of
	// the lifecycle controller's checks (120 in 10 minutes at the default
	// 5 s), and that the cloud-node controller skips it without retrying:
	// two Info lines ("Initializing node", "Skip sync node ... nil
	// metadata") for each change of the Node, of which this test makes two
	// (it registers it, then makes it NotReady). 1 + 2*2 = 5, and a line of
	// start-up chatter.
	maxForeignLogLines = 6
)

// env is the package's control plane and release binary, shared by its
// tests.
var env struct {
	cp *controlplane.ControlPlane
	// tmp holds the binary, configs and logs; removed unless SOAK_KEEP.
	tmp string
	// binary is the release build of cmd/multicloud-ccm.
	binary string
	// saKubeconfig authenticates as kube-system/cloud-controller-manager,
	// bound only by deploy/'s RBAC.
	saKubeconfig string
	admin        kubernetes.Interface
}

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		// The tests skip themselves; no control plane for them.
		os.Exit(m.Run())
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if err := setup(); err != nil {
		fmt.Fprintf(os.Stderr, "soak setup: %v\n", err)
		teardown()
		return 1
	}
	code := m.Run()
	teardown()
	return code
}

func setup() error {
	if _, _, err := controlplane.EnsureBinaries(os.Stderr); err != nil {
		return err
	}
	var err error
	if env.tmp, err = os.MkdirTemp("", "mccm-soak-"); err != nil {
		return err
	}
	// The release binary, as test/e2e's release(t) builds it: every
	// backend, no build tags.
	env.binary = filepath.Join(env.tmp, "multicloud-ccm")
	if err := ccmproc.Build(env.binary, "", os.Stderr); err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(env.tmp, "controlplane.log"))
	if err != nil {
		return err
	}
	if env.cp, err = controlplane.Start(controlplane.Options{Output: logf}); err != nil {
		return err
	}
	env.admin = env.cp.AdminClient
	// deploy/'s RBAC, for real: the manager gets exactly these permissions.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	env.saKubeconfig, err = env.cp.CCMKubeconfig(ctx, 2*time.Hour)
	return err
}

func teardown() {
	if env.cp != nil {
		if err := env.cp.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stop control plane: %v\n", err)
		}
	}
	if env.tmp == "" {
		return
	}
	if os.Getenv("SOAK_KEEP") != "" {
		fmt.Fprintf(os.Stderr, "soak: logs and configs kept in %s\n", env.tmp)
		return
	}
	_ = os.RemoveAll(env.tmp)
}

// TestForeignNodeSoak: one manager serving OpenStack and AWS, each with an
// initialized Node, and a Node with a providerID of no configured cloud
// (k3s://) that is NotReady for soakDuration. Throughout, polled every
// pollEvery: the foreign Node exists, is never tainted shut down, keeps the
// uninitialized taint it registered with and its providerID; both clouds'
// Nodes stay; the manager runs. At the end: /metrics counts the foreign
// Node, it has exactly one NodeNotServed Event (count 1) and no other, and
// the manager's log names it at most maxForeignLogLines times. The reads
// each emulator answered are logged per minute.
//
// The manager runs with the product's default --node-monitor-period (5 s),
// not the 1 s test/e2e uses to keep its bounds short: the soak shows what
// a cluster with default settings sees.
func TestForeignNodeSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("a soak of minutes; skipped under -short")
	}
	dur := soakDuration
	if s := os.Getenv("SOAK_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("SOAK_DURATION=%q: want a positive Go duration (10m, 90s)", s)
		}
		dur = d
	}
	t.Logf("soak duration %v (default %v; SOAK_DURATION overrides)", dur, soakDuration)
	if dl, ok := t.Deadline(); ok && time.Until(dl) < dur+endChecks {
		t.Fatalf("the test timeout ends in %v, too soon for a %v soak and its %v of set-up and checks: run with -timeout %v or more (make test passes 30m), or shorten it with SOAK_DURATION",
			time.Until(dl).Round(time.Second), dur, endChecks, dur+endChecks)
	}

	// One emulator per cloud, started through its conformance adapter,
	// sharing the cluster ID that the one cloud-config names.
	var (
		hy   []hybridCloud
		cfgs []conformance.CloudConfig
		args = []string{
			// One manager, no rival: leader election would only add
			// its Lease traffic.
			"--leader-elect=false",
			"--cluster-cidr=10.244.0.0/16",
			"--configure-cloud-routes=false",
			"--allocate-node-cidrs=false",
		}
	)
	for _, name := range []string{"openstack", "aws"} {
		a, err := clouds.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		c, err := a.Start(conformance.Options{ClusterID: clusterID, QuickErrors: true})
		if err != nil {
			t.Fatalf("start the %s emulator: %v", name, err)
		}
		t.Cleanup(func() { _ = c.Close() })
		cfgs = append(cfgs, c.Config())
		args = append(args, c.ExtraArgs()...)
		hy = append(hy, hybridCloud{name: a.Name(), cloud: c})
	}
	cloudConfig := filepath.Join(env.tmp, "hybrid-cloud-config.yaml")
	if err := os.WriteFile(cloudConfig, []byte(conformance.HybridYAML(clusterID, cfgs...)), 0o600); err != nil {
		t.Fatal(err)
	}
	ccm := startCCM(t, cloudConfig, args)

	// Each cloud's instance, its Node registered by name as its kubelet
	// does, and initialized by the manager with the label naming its cloud.
	for i := range hy {
		c := &hy[i]
		inst, err := c.cloud.Launch(conformance.InstanceSpec{Zone: c.cloud.Zones()[0], PublicIP: true, NameHint: "soak-" + c.name})
		if err != nil {
			t.Fatalf("launch in %s: %v", c.name, err)
		}
		c.node = createNode(t, ccmproc.KubeletNode(inst.NodeName, ""))
		n := waitInitialized(t, ccm, c.node)
		want, err := c.cloud.ExpectedNode(inst.ID)
		if err != nil {
			t.Fatal(err)
		}
		if n.Spec.ProviderID != want.ProviderID || n.Labels[labelProvider] != c.name {
			t.Fatalf("%s Node %s: providerID %q (want %q), %s=%q (want %q)",
				c.name, c.node, n.Spec.ProviderID, want.ProviderID, labelProvider, n.Labels[labelProvider], c.name)
		}
		// Ready, as its running kubelet reports it: the lifecycle
		// controller asks the clouds only about NotReady Nodes, so the
		// reads counted below are the foreign Node's cost and the
		// manager's background, not these two Nodes' checks.
		setReady(t, c.node, corev1.ConditionTrue)
	}

	// The foreign Node, as a k3s agent registers it beside the manager's
	// clouds (providerID set, the uninitialized taint of any kubelet run
	// with --cloud-provider=external), then NotReady, as a Node another
	// manager serves may be for any length of time.
	reg := ccmproc.KubeletNode(foreignName, "")
	reg.Spec.ProviderID = foreignProviderID
	registered := time.Now()
	createNode(t, reg)
	setReady(t, foreignName, corev1.ConditionFalse)
	foreign, err := env.admin.CoreV1().Nodes().Get(context.Background(), foreignName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	registeredTaints := foreign.Spec.Taints

	// The soak: mostly idle, looking every pollEvery.
	start := time.Now()
	calls := newCallLog(hy, start)
	polls := 0
	check := func() {
		t.Helper()
		polls++
		at := time.Since(start).Round(time.Second)
		if ccm.Exited() {
			t.Fatalf("%v into the soak: the manager exited: %v", at, ccm.Err())
		}
		n, err := getNode(foreignName)
		if err != nil {
			t.Fatalf("%v into the soak: the foreign Node: %v", at, err)
		}
		if ccmproc.HasTaint(n, cloudproviderapi.TaintNodeShutdown) {
			t.Fatalf("%v into the soak: the foreign Node was tainted shut down: %s", at, describeNode(n))
		}
		if !reflect.DeepEqual(n.Spec.Taints, registeredTaints) || n.Spec.ProviderID != foreignProviderID {
			t.Fatalf("%v into the soak: the foreign Node changed: %s (registered with taints %v)", at, describeNode(n), registeredTaints)
		}
		if ready := readyOf(n); ready != corev1.ConditionFalse {
			t.Fatalf("%v into the soak: the foreign Node is no longer NotReady (Ready=%q), the soak tests nothing", at, ready)
		}
		for _, c := range hy {
			cn, err := getNode(c.node)
			if err != nil {
				t.Fatalf("%v into the soak: %s's Node: %v", at, c.name, err)
			}
			if !ccmproc.Initialized(cn) || ccmproc.HasTaint(cn, cloudproviderapi.TaintNodeShutdown) {
				t.Fatalf("%v into the soak: %s's Node changed: %s", at, c.name, describeNode(cn))
			}
		}
	}
	ticker := time.NewTicker(pollEvery)
	defer ticker.Stop()
	end := time.After(dur)
soak:
	for {
		select {
		case <-ccm.Done():
			t.Fatalf("the manager exited %v into the soak: %v", time.Since(start).Round(time.Second), ccm.Err())
		case <-end:
			break soak
		case <-ticker.C:
			check()
			calls.tick(t)
		}
	}
	check()
	calls.finish(t)
	t.Logf("soak of %v done: %d polls, the foreign Node untouched, both clouds' Nodes in place, the manager running",
		time.Since(start).Round(time.Second), polls)

	t.Run("metrics count the foreign Node", func(t *testing.T) {
		code, body, err := ccmproc.GetSecure(context.Background(), ccm.Port, "/metrics", saToken(t))
		if err != nil || code != http.StatusOK {
			t.Fatalf("GET /metrics as the manager's ServiceAccount: %d %v", code, err)
		}
		if !strings.Contains(body, unownedSeries) {
			t.Errorf("/metrics lacks %s:\n%s", unownedSeries, grepLines(body, "multicloud_ccm_unowned_nodes"))
		}
	})

	t.Run("one NodeNotServed Event, once, and no other", func(t *testing.T) {
		evs, err := env.admin.CoreV1().Events("").List(context.Background(), metav1.ListOptions{
			FieldSelector: "involvedObject.kind=Node,involvedObject.uid=" + string(foreign.UID),
		})
		if err != nil {
			t.Fatal(err)
		}
		var notServed, other []corev1.Event
		for _, e := range evs.Items {
			if e.Reason == "NodeNotServed" {
				notServed = append(notServed, e)
			} else {
				other = append(other, e)
			}
		}
		if len(notServed) != 1 || notServed[0].Count != 1 || !strings.Contains(notServed[0].Message, foreignProviderID) {
			t.Errorf("NodeNotServed Events: %s; want exactly one, count 1, naming %s", describeEvents(notServed), foreignProviderID)
		} else {
			t.Logf("NodeNotServed: %q (count %d, from %s)", notServed[0].Message, notServed[0].Count, notServed[0].Source.Component)
		}
		if len(other) > 0 {
			t.Errorf("other Events about the foreign Node: %s", describeEvents(other))
		}
	})

	t.Run("the manager's log names the foreign Node a handful of times, not at every check", func(t *testing.T) {
		var lines []string
		for _, l := range strings.Split(ccm.log.String(), "\n") {
			if strings.Contains(l, foreignName) {
				lines = append(lines, l)
			}
		}
		t.Logf("over %v since the foreign Node registered, the manager's log names %s in %d lines (bound %d)",
			time.Since(registered).Round(time.Second), foreignName, len(lines), maxForeignLogLines)
		if len(lines) > maxForeignLogLines {
			t.Errorf("%d lines name %s, want at most %d:\n%s", len(lines), foreignName, maxForeignLogLines, tail(strings.Join(lines, "\n"), 30))
		}
	})
}

// hybridCloud is one of the manager's clouds, through its conformance
// adapter, with the Node of its instance.
type hybridCloud struct {
	name  string
	cloud conformance.Cloud
	node  string
}

// callLog logs the reads each emulator answered, minute by minute.
type callLog struct {
	clouds []hybridCloud
	start  time.Time
	// minute is the number of whole minutes logged so far; last and first
	// are each cloud's read and mutating counts then and at the start.
	minute int
	last   []int
	first  []int
	firstM []int
}

func newCallLog(hy []hybridCloud, start time.Time) *callLog {
	l := &callLog{clouds: hy, start: start}
	for _, c := range hy {
		srv := c.cloud.Server()
		l.last = append(l.last, srv.CallCount(cloudsim.ReadOps))
		l.first = append(l.first, srv.CallCount(cloudsim.ReadOps))
		l.firstM = append(l.firstM, srv.CallCount(cloudsim.MutatingOps))
	}
	return l
}

// tick logs each minute that has passed since the last one logged.
func (l *callLog) tick(t *testing.T) {
	t.Helper()
	if m := int(time.Since(l.start) / time.Minute); m > l.minute {
		l.minute = m
		l.log(t, fmt.Sprintf("minute %d", m))
	}
}

func (l *callLog) log(t *testing.T, what string) {
	t.Helper()
	var parts []string
	for i, c := range l.clouds {
		now := c.cloud.Server().CallCount(cloudsim.ReadOps)
		parts = append(parts, fmt.Sprintf("%s %d", c.name, now-l.last[i]))
		l.last[i] = now
	}
	t.Logf("cloud reads in %s: %s", what, strings.Join(parts, ", "))
}

// finish logs the partial last minute, if any, and the whole soak's totals.
func (l *callLog) finish(t *testing.T) {
	t.Helper()
	el := time.Since(l.start)
	if el-time.Duration(l.minute)*time.Minute >= time.Second {
		l.log(t, fmt.Sprintf("the last %v", (el-time.Duration(l.minute)*time.Minute).Round(time.Second)))
	}
	for i, c := range l.clouds {
		srv := c.cloud.Server()
		reads := srv.CallCount(cloudsim.ReadOps) - l.first[i]
		t.Logf("%s over the soak (%v): %d reads (%.1f/min), %d mutating calls; all calls since its start by operation: %v",
			c.name, el.Round(time.Second), reads, float64(reads)/el.Minutes(), srv.CallCount(cloudsim.MutatingOps)-l.firstM[i], srv.Calls())
	}
}

// ccmProcess is the running manager with its output captured.
type ccmProcess struct {
	*ccmproc.Process
	log *ccmproc.Output
}

// startCCM runs the release binary as deploy/ runs it: the
// cloud-controller-manager ServiceAccount, bound only by deploy/'s RBAC,
// for the API and for delegated authentication and authorization; --v=2
// as deploy/ sets it. It is stopped at cleanup; its output is dumped on
// failure and kept in the temp dir.
func startCCM(t *testing.T, cloudConfig string, args []string) *ccmProcess {
	t.Helper()
	buf := &ccmproc.Output{}
	f, err := os.Create(filepath.Join(env.tmp, "ccm.log"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := ccmproc.Start(ccmproc.Options{
		Binary: env.binary, CloudConfig: cloudConfig, Kubeconfig: env.saKubeconfig,
		Args: args, Output: io.MultiWriter(buf, f),
	})
	if err != nil {
		_ = f.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop()
		_ = f.Close()
		if t.Failed() {
			t.Logf("---- manager output (last 80 lines) ----\n%s", tail(buf.String(), 80))
		}
	})
	return &ccmProcess{Process: p, log: buf}
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// grepLines are the lines of s containing sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// createNode creates n as its kubelet registers it and deletes it at
// cleanup.
func createNode(t *testing.T, n *corev1.Node) string {
	t.Helper()
	if _, err := env.admin.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		err := env.admin.CoreV1().Nodes().Delete(context.Background(), n.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete Node %s: %v", n.Name, err)
		}
	})
	return n.Name
}

func getNode(name string) (*corev1.Node, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return env.admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
}

func describeNode(n *corev1.Node) string {
	return fmt.Sprintf("%s: providerID=%q taints=%v labels=%v", n.Name, n.Spec.ProviderID, n.Spec.Taints, n.Labels)
}

func readyOf(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

// setReady writes the Node's Ready condition as its kubelet would.
func setReady(t *testing.T, name string, status corev1.ConditionStatus) {
	t.Helper()
	if err := ccmproc.SetReady(context.Background(), env.admin, name, status); err != nil {
		t.Fatal(err)
	}
}

// waitInitialized waits until the manager has initialized the Node (taint
// gone, providerID set) and written its addresses, failing at once if the
// manager exits.
func waitInitialized(t *testing.T, ccm *ccmProcess, name string) *corev1.Node {
	t.Helper()
	var node *corev1.Node
	var last string
	ctx, cancel := context.WithTimeout(context.Background(), converge)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if ccm.Exited() {
			return false, fmt.Errorf("the manager exited: %v", ccm.Err())
		}
		n, err := env.admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		node, last = n, describeNode(n)
		return ccmproc.Initialized(n) && len(n.Status.Addresses) > 0, nil
	})
	if err != nil {
		t.Fatalf("Node %s initialized: %v; last seen: %s", name, err, last)
	}
	return node
}

// saToken is the bearer token of deploy/'s ServiceAccount.
func saToken(t *testing.T) string {
	t.Helper()
	token, err := ccmproc.BearerToken(env.saKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return token
}

func describeEvents(evs []corev1.Event) string {
	if len(evs) == 0 {
		return "none"
	}
	var out []string
	for _, e := range evs {
		out = append(out, fmt.Sprintf("%s/%s count %d from %s: %q", e.Type, e.Reason, e.Count, e.Source.Component, e.Message))
	}
	return strings.Join(out, "; ")
}
