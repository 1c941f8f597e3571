// Package bench measures a backend at scale against its emulator with
// injected latency, running the real binary against a real kube-apiserver.
// The cloud comes through its conformance adapter (test/conformance/clouds),
// named by $CLOUD (default aws). It is a Go benchmark so it never runs in
// `make test`:
//
//	make bench [CLOUD=aws] (CLOUD=... go test ./test/bench -run '^$' -bench . -benchtime 1x -timeout 60m)
//
// It prints a table; docs/explanation/performance.md quotes it.
//
// A comma-separated CLOUD (CLOUD=openstack,aws) names a hybrid cluster:
// then only BenchmarkHybrid (hybrid_test.go) runs, and it runs only then.
package bench

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/multicloud-ccm/multicloud-ccm/test/ccmproc"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance/clouds"
	"github.com/multicloud-ccm/multicloud-ccm/test/controlplane"
)

const (
	clusterID  = "bench"
	readDelay  = 50 * time.Millisecond
	writeDelay = 200 * time.Millisecond
)

// world is one control plane, one emulator and one CCM process.
type world struct {
	cp      *controlplane.ControlPlane
	cloud   conformance.Cloud
	adapter conformance.Adapter
	ccmOpts ccmproc.Options
	ccmRuns int
	// cloudName is the adapter's name.
	cloudName string
	srv       *cloudsim.Server
	ccm       *ccmproc.Process
	client    kubernetes.Interface
	dir       string
	nodes     []string
	// ids maps node name to instance ID.
	ids map[string]string
	// hint, when set, names launched instances hint<n> where the cloud
	// takes a name: a hybrid cluster's clouds must not share a name.
	hint string
}

func newWorld(b *testing.B, binary string, extraArgs ...string) *world {
	return newWorldWithEnv(b, binary, nil, extraArgs...)
}

// newWorldWithEnv is newWorld with extra environment for the CCM.
func newWorldWithEnv(b *testing.B, binary string, env []string, extraArgs ...string) *world {
	return newWorldWith(b, binary, conformance.Options{ClusterID: clusterID}, env, extraArgs...)
}

// newWorldWith is newWorld with the cloud started with opts.
func newWorldWith(b *testing.B, binary string, opts conformance.Options, env []string, extraArgs ...string) *world {
	b.Helper()
	return newCloudWorld(b, binary, os.Getenv("CLOUD"), opts, env, extraArgs...)
}

// newCloudWorld is newWorldWith for the cloud named (not $CLOUD's).
func newCloudWorld(b *testing.B, binary, cloud string, opts conformance.Options, env []string, extraArgs ...string) *world {
	b.Helper()
	w := &world{dir: logDir(b), ids: map[string]string{}}
	var err error
	logf, _ := os.Create(filepath.Join(w.dir, "controlplane.log"))
	if w.cp, err = controlplane.Start(controlplane.Options{Output: logf}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = w.cp.Stop() })
	// The harness itself must not be the bottleneck when it creates
	// thousands of objects.
	fast := rest.CopyConfig(w.cp.Admin)
	fast.QPS, fast.Burst = 2000, 4000
	w.client = kubernetes.NewForConfigOrDie(fast)

	adapter, err := clouds.Get(cloud)
	if err != nil {
		b.Fatal(err)
	}
	// Routes stay off: the benchmarks measure nodes and load balancers.
	w.adapter = adapter
	if w.cloud, err = adapter.Start(opts); err != nil {
		b.Fatal(err)
	}
	w.cloudName = adapter.Name()
	w.srv = w.cloud.Server()
	b.Cleanup(func() { _ = w.cloud.Close() })

	kubeconfig, err := w.cp.CCMKubeconfig(context.Background(), 4*time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	cfg := filepath.Join(w.dir, "cloud-config.yaml")
	if err := os.WriteFile(cfg, []byte(w.cloud.Config().YAML()), 0o600); err != nil {
		b.Fatal(err)
	}
	w.ccmOpts = ccmproc.Options{
		Binary: binary, CloudConfig: cfg, Kubeconfig: kubeconfig,
		// BENCH_CCM_ARGS adds flags to every manager, for before/after rows
		// (BENCH_CCM_ARGS=--use-upstream-service-controller).
		Args: append(append(append([]string{"--configure-cloud-routes=false", "--v=1"}, w.cloud.ExtraArgs()...), extraArgs...), strings.Fields(os.Getenv("BENCH_CCM_ARGS"))...),
		Env:  env,
	}
	w.startCCM(b)
	b.Cleanup(func() {
		w.ccm.Stop()
		if os.Getenv("BENCH_KEEP_LOGS") != "" {
			b.Logf("logs in %s", w.dir)
		}
	})
	return w
}

// startCCM (re)starts the manager; each run logs to its own file.
func (w *world) startCCM(b *testing.B) {
	b.Helper()
	w.ccmRuns++
	logFile, _ := os.Create(filepath.Join(w.dir, fmt.Sprintf("ccm-%d.log", w.ccmRuns)))
	o := w.ccmOpts
	o.Output = logFile
	var err error
	if w.ccm, err = ccmproc.Start(o); err != nil {
		b.Fatal(err)
	}
}

// launch starts n instances, spread over the zones, and returns the
// names their kubelets would register.
func (w *world) launch(b *testing.B, n int) []string {
	b.Helper()
	zones := w.cloud.Zones()
	var names []string
	for i := range n {
		spec := conformance.InstanceSpec{Zone: zones[(len(w.ids)+i)%len(zones)]}
		if w.hint != "" {
			spec.NameHint = fmt.Sprintf("%s%d", w.hint, len(w.ids))
		}
		inst, err := w.cloud.Launch(spec)
		if err != nil {
			b.Fatal(err)
		}
		names = append(names, inst.NodeName)
		w.ids[inst.NodeName] = inst.ID
	}
	return names
}

// register creates Nodes the way kubelets do, all at once, Ready as a
// kubelet reports once its runtime is up (the apiserver takes a Node's
// status on create). NotReady Nodes cost lifecycle checks on top; the
// steady-state scenario makes some NotReady on purpose.
func (w *world) register(b *testing.B, names []string) {
	b.Helper()
	w.registerWith(b, names, nil)
}

// registerWith is register with labels on every Node (as a kubelet's
// --node-labels sets them).
func (w *world) registerWith(b *testing.B, names []string, labels map[string]string) {
	b.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for _, name := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			node := readyKubeletNode(name)
			maps.Copy(node.Labels, labels)
			if _, err := w.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
				b.Error(err)
			}
		}()
	}
	wg.Wait()
	w.nodes = append(w.nodes, names...)
}

// readyKubeletNode is the Node a kubelet registers, Ready.
func readyKubeletNode(name string) *corev1.Node {
	node := ccmproc.KubeletNode(name, "")
	now := metav1.Now()
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}}
	return node
}

// setNotReady reports the Nodes NotReady, as their kubelets would, so the
// cloud node lifecycle controller checks their instances every period.
func (w *world) setNotReady(b *testing.B, names []string) {
	b.Helper()
	ctx := context.Background()
	for _, name := range names {
		n, err := w.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		now := metav1.Now()
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, LastHeartbeatTime: now, LastTransitionTime: now}}
		if _, err := w.client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func (w *world) waitInitialized(b *testing.B, want int, timeout time.Duration) {
	b.Helper()
	w.waitFor(b, timeout, func(ctx context.Context) (bool, string) {
		list, err := w.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, err.Error()
		}
		done := 0
		for _, n := range list.Items {
			if ccmproc.Initialized(&n) {
				done++
			}
		}
		return done >= want, fmt.Sprintf("%d/%d initialized", done, want)
	})
}

func (w *world) waitFor(b *testing.B, timeout time.Duration, cond func(context.Context) (bool, string)) {
	b.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if w.ccm.Exited() {
			return false, fmt.Errorf("the CCM exited: %v (logs in %s)", w.ccm.Err(), w.dir)
		}
		ok, seen := cond(ctx)
		last = seen
		return ok, nil
	})
	if err != nil {
		b.Fatalf("%v; last seen: %s (logs in %s)", err, last, w.dir)
	}
}

func (w *world) reads() int { return w.srv.CallCount(cloudsim.ReadOps) }

func (w *world) mutating(op string) bool { return w.srv.Cloud().Mutating(op) }

func buildBinary(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "multicloud-ccm")
	if err := ccmproc.Build(bin, "", os.Stderr); err != nil {
		b.Fatal(err)
	}
	return bin
}

// row is one line of the printed table.
type row struct{ scenario, metric, value, goal string }

var (
	tableMu sync.Mutex
	table   []row
)

// logDir is the directory a world's manager writes its log and config
// to: kept after the run under BENCH_KEEP_LOGS (a test's TempDir is
// removed with it).
func logDir(b *testing.B) string {
	b.Helper()
	if os.Getenv("BENCH_KEEP_LOGS") == "" {
		return b.TempDir()
	}
	dir, err := os.MkdirTemp("", "bench-logs-")
	if err != nil {
		b.Fatal(err)
	}
	return dir
}

func record(b *testing.B, scenario, metric, value, goal string) {
	tableMu.Lock()
	defer tableMu.Unlock()
	table = append(table, row{scenario, metric, value, goal})
	b.Logf("%s | %s | %s", scenario, metric, value)
}

func printTable() {
	tableMu.Lock()
	defer tableMu.Unlock()
	if len(table) == 0 {
		return
	}
	fmt.Println()
	fmt.Println("| scenario | metric | measured | goal |")
	fmt.Println("|---|---|---|---|")
	for _, r := range table {
		fmt.Printf("| %s | %s | %s | %s |\n", r.scenario, r.metric, r.value, r.goal)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	printTable()
	os.Exit(code)
}

func callsByOp(calls map[string]int, filter func(string) bool) string {
	// Operations are "<service>:<Action>"; the action reads best, unless
	// two services have it (AWS's two ELB APIs).
	services := map[string]int{}
	for op := range calls {
		_, action, _ := strings.Cut(op, ":")
		services[action]++
	}
	var ops []string
	for op, n := range calls {
		if n > 0 && filter(op) {
			_, action, _ := strings.Cut(op, ":")
			if action == "" || services[action] > 1 {
				action = op
			}
			ops = append(ops, fmt.Sprintf("%s %d", action, n))
		}
	}
	sort.Strings(ops)
	return strings.Join(ops, ", ")
}

// BenchmarkNodes: 1000 Nodes registered at once, then 100 of them NotReady.
func BenchmarkNodes(b *testing.B) {
	singleCloud(b)
	for i := 0; i < b.N; i++ {
		w := newWorld(b, buildBinary(b))
		if err := w.srv.SetFault(cloudsim.FaultSpec{Op: "*", Latency: readDelay}); err != nil {
			b.Fatal(err)
		}
		names := w.launch(b, 1000)
		w.srv.ResetCalls()
		start := time.Now()
		w.register(b, names)
		w.waitInitialized(b, len(names), 10*time.Minute)
		elapsed := time.Since(start)
		record(b, "1000 Nodes registered at once (50 ms/call)", "time until all initialized", elapsed.Round(100*time.Millisecond).String(), "<= 30s")
		record(b, "1000 Nodes registered at once (50 ms/call)", "read calls by operation", callsByOp(w.srv.Calls(), func(op string) bool { return !w.mutating(op) }), "<= 15 read calls")
		record(b, "1000 Nodes registered at once (50 ms/call)", "all cloud read calls", fmt.Sprint(w.reads()), "<= 15")
		b.ReportMetric(elapsed.Seconds(), "s-init-1000")

		// Steady state: 100 NotReady nodes make the lifecycle controller
		// ask InstanceExists and InstanceShutdown every 5s for each.
		w.setNotReady(b, names[:100])
		time.Sleep(10 * time.Second) // let the controllers see the change
		w.srv.ResetCalls()
		window := 60 * time.Second
		time.Sleep(window)
		reads := w.reads()
		record(b, "steady state, 100 NotReady of 1000 nodes", "cloud read calls per minute", fmt.Sprint(reads), "<= 15")
		record(b, "steady state, 100 NotReady of 1000 nodes", "by operation", callsByOp(w.srv.Calls(), func(string) bool { return true }), "")
		b.ReportMetric(float64(reads), "reads/min-steady")

		// Detection: among the NotReady Nodes, one instance is stopped and
		// another terminated; the shutdown taint and the deletion must
		// follow within 10 s, at the call rate measured above. One sample
		// is mostly the wait for the next 5 s lifecycle pass, so there are
		// detectionSamples, changed 0.1 s, 1.1 s, ... 4.1 s after the
		// previous one was detected (just after a pass), and each is set
		// against the cloud reads after the change: no design that asks
		// the cloud could see the change before the first answered (a
		// direct read per Node, as the upstream CCMs do, is made in the
		// same pass); the batched read may take further calls (pages, a
		// GET confirming a server is gone); detection minus the last is
		// the manager's own time, which answers older than the pass
		// would add to.
		var taints, deletes, floors, lasts []time.Duration
		for k := range detectionSamples {
			time.Sleep(time.Duration(k)*time.Second + 100*time.Millisecond)
			t, d, f, l := w.detectOnce(b, names[2*k], names[2*k+1])
			taints, deletes, floors, lasts = append(taints, t), append(deletes, d), append(floors, f), append(lasts, l)
		}
		scenario := fmt.Sprintf("detection (100 NotReady of 1000 nodes, %d samples)", detectionSamples)
		record(b, scenario, "stopped instance -> shutdown taint, mean (min-max)", spread(taints), "<= 10s")
		record(b, scenario, "terminated instance -> Node deleted, mean (min-max)", spread(deletes), "<= 10s")
		record(b, scenario, "first cloud read after the change answered, mean (min-max)", spread(floors), "")
		var reading []time.Duration
		for i := range floors {
			reading = append(reading, lasts[i]-floors[i])
		}
		record(b, scenario, "further reads of that pass (pages, confirming GETs), mean (min-max)", spread(reading), "")
		var over []time.Duration
		for i := range floors {
			over = append(over, max(taints[i], deletes[i])-lasts[i])
		}
		record(b, scenario, "detection after the pass's last read (the manager's own time: answers, Node writes), mean (min-max)", spread(over), "< 1s")
		b.ReportMetric(mean(taints).Seconds(), "s-detect-stopped")
		b.ReportMetric(mean(deletes).Seconds(), "s-detect-terminated")
		w.recordRSS(b, "1000 Nodes, 100 NotReady")
	}
}

// detectionSamples is how many stop/terminate pairs the detection
// figures average over.
const detectionSamples = 5

// detectOnce stops stopped's instance and terminates terminated's, then
// returns how long until the shutdown taint and the Node's deletion,
// until the first cloud read received after the change had answered, and
// until the last read answered before the detection (a paged listing or
// a confirming GET comes after the first).
func (w *world) detectOnce(b *testing.B, stopped, terminated string) (tainted, deleted, firstRead, lastRead time.Duration) {
	b.Helper()
	changed := time.Now()
	if err := w.cloud.Stop(w.ids[stopped]); err != nil {
		b.Fatal(err)
	}
	if err := w.cloud.Terminate(w.ids[terminated]); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	deadline := changed.Add(2 * time.Minute)
	for tainted == 0 || deleted == 0 {
		if time.Now().After(deadline) {
			b.Fatalf("detection: tainted after %s, deleted after %s, 2 minutes after the change (logs in %s)", tainted, deleted, w.dir)
		}
		if tainted == 0 {
			if n, err := w.client.CoreV1().Nodes().Get(ctx, stopped, metav1.GetOptions{}); err == nil && ccmproc.HasTaint(n, cloudproviderapi.TaintNodeShutdown) {
				tainted = time.Since(changed)
			}
		}
		if deleted == 0 {
			if _, err := w.client.CoreV1().Nodes().Get(ctx, terminated, metav1.GetOptions{}); apierrors.IsNotFound(err) {
				deleted = time.Since(changed)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	detected := changed.Add(min(tainted, deleted))
	var reads []cloudsim.CallTiming
	for _, c := range w.srv.CallsSince(changed) {
		if !w.mutating(c.Op) && c.End.Before(detected) {
			reads = append(reads, c)
		}
	}
	if len(reads) == 0 {
		b.Fatalf("detection without a cloud read after the change (logs in %s)", w.dir)
	}
	// The reads of the pass that saw the change: from the first one
	// received after it until the last answered before the detection.
	last := reads[len(reads)-1]
	b.Logf("detection: %d reads answered %s-%s after the change, detected after %s/%s", len(reads),
		reads[0].End.Sub(changed).Round(10*time.Millisecond), last.End.Sub(changed).Round(10*time.Millisecond), tainted, deleted)
	return tainted, deleted, reads[0].End.Sub(changed), last.End.Sub(changed)
}

func mean(ds []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

// spread is "mean (min-max)" of ds, to 0.1 s.
func spread(ds []time.Duration) string {
	r := func(d time.Duration) string { return d.Round(100 * time.Millisecond).String() }
	return fmt.Sprintf("%s (%s-%s)", r(mean(ds)), r(slices.Min(ds)), r(slices.Max(ds)))
}

// recordRSS records the manager's peak resident memory so far.
func (w *world) recordRSS(b *testing.B, scenario string) {
	b.Helper()
	rss, err := w.ccm.PeakRSS()
	if err != nil {
		b.Fatalf("peak RSS: %v", err)
	}
	goal := ""
	if strings.HasPrefix(scenario, "5000 Nodes") {
		goal = "< 200 MB"
	}
	file, err := ccmproc.FileRSS(w.ccm.Pid())
	if err != nil {
		b.Fatalf("file RSS: %v", err)
	}
	record(b, scenario, "CCM peak RSS", fmt.Sprintf("%d MB (%d MB of it the executable's file pages now)", rss>>20, file>>20), goal)
	if cpu, err := ccmproc.CPUTime(w.ccm.Pid()); err == nil {
		// What the memory costs in collector work shows here.
		record(b, scenario, "CCM CPU time so far", cpu.Round(100*time.Millisecond).String(), "")
	}
	w.saveHeapProfile(b, scenario)
}

// saveHeapProfile writes the CCM's heap profile to $BENCH_PROFILE_DIR, when
// set, for `go tool pprof`: where the memory of a scenario goes.
func (w *world) saveHeapProfile(b *testing.B, scenario string) {
	dir := os.Getenv("BENCH_PROFILE_DIR")
	if dir == "" {
		return
	}
	cfg := rest.CopyConfig(w.cp.Admin)
	cfg.Host = fmt.Sprintf("https://127.0.0.1:%d", w.ccm.Port)
	// The CCM's serving certificate is self-signed; the client
	// certificate is what authorizes the request.
	cfg.TLSClientConfig = rest.TLSClientConfig{Insecure: true, CertData: cfg.CertData, KeyData: cfg.KeyData}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		b.Fatalf("heap profile: %v", err)
	}
	resp, err := hc.Get(cfg.Host + "/debug/pprof/heap")
	if err != nil {
		b.Fatalf("heap profile: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("heap profile: status %d, %v", resp.StatusCode, err)
	}
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, scenario) + ".heap.pb.gz"
	if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
		b.Fatalf("heap profile: %v", err)
	}
}

// BenchmarkLoadBalancers: 200 LoadBalancer Services at once with 200 ms per
// mutating call, then one node added.
func BenchmarkLoadBalancers(b *testing.B) {
	singleCloud(b)
	for i := 0; i < b.N; i++ {
		w := newWorld(b, buildBinary(b))
		const nodes, services = 20, 200
		names := w.launch(b, nodes)
		w.register(b, names)
		w.waitInitialized(b, nodes, 5*time.Minute)
		scenario := "200 LB Services at once (" + w.setLBLatency(b) + ")"
		w.srv.ResetCalls()
		start := time.Now()
		w.createServices(b, services)
		w.waitAddresses(b, services, 30*time.Minute)
		elapsed := time.Since(start)
		calls := w.srv.Calls()
		record(b, scenario, "time until all have an address", elapsed.Round(100*time.Millisecond).String(), "")
		record(b, scenario, "mutating calls", callsByOp(calls, w.mutating), "")
		record(b, scenario, "read calls", callsByOp(calls, func(op string) bool { return !w.mutating(op) }), "")
		b.ReportMetric(elapsed.Seconds(), "s-200-lbs")

		time.Sleep(5 * time.Second)
		w.srv.ResetCalls()
		extra := w.launch(b, 1)
		start = time.Now()
		w.register(b, extra)
		w.waitInitialized(b, nodes+1, 5*time.Minute)
		var keys []types.NamespacedName
		for s := range services {
			keys = append(keys, types.NamespacedName{Namespace: "default", Name: fmt.Sprintf("svc-%04d", s)})
		}
		w.waitBackend(b, keys, w.ids[extra[0]])
		elapsed = time.Since(start)
		time.Sleep(5 * time.Second)
		calls = w.srv.Calls()
		total := 0
		for _, n := range calls {
			total += n
		}
		record(b, "1 node added with 200 LB Services", "calls used", fmt.Sprintf("%d (%s)", total, callsByOp(calls, func(string) bool { return true })), "")
		record(b, "1 node added with 200 LB Services", "time until every load balancer has it", elapsed.Round(100*time.Millisecond).String(), "")
		w.recordRSS(b, "200 LB Services, 21 nodes")
	}
}

// BenchmarkScale: 5000 Nodes, then 1000 LoadBalancer Services, no injected
// latency: the manager's memory at a large cluster's size, with the Go
// runtime's defaults and with the soft memory limit the binary derives
// from a 200Mi container memory limit.
func BenchmarkScale(b *testing.B) {
	singleCloud(b)
	for _, run := range []struct {
		label, name string
		env         []string
	}{
		{"runtime-defaults", "", nil},
		{"gomemlimit-180MiB", ", GOMEMLIMIT=180MiB (what a 200Mi container limit sets)", []string{"GOMEMLIMIT=180MiB"}},
	} {
		// A sub-benchmark each, so the first world is cleaned up before
		// the second starts.
		b.Run(run.label, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				scenario := "5000 Nodes, 1000 LB Services" + run.name
				w := newWorldWithEnv(b, buildBinary(b), run.env)
				const nodes, services = 5000, 1000
				names := w.launch(b, nodes)
				start := time.Now()
				w.register(b, names)
				w.waitInitialized(b, nodes, 20*time.Minute)
				record(b, scenario, "time until 5000 Nodes initialized", time.Since(start).Round(100*time.Millisecond).String(), "")
				w.recordRSS(b, scenario+" (after the Nodes, before the Services)")
				w.createServices(b, services)
				start = time.Now()
				w.waitAddresses(b, services, 60*time.Minute)
				record(b, scenario, "time until 1000 Services have an address", time.Since(start).Round(100*time.Millisecond).String(), "")
				w.recordRSS(b, scenario)
			}
		})
	}
}

// createServices creates n LoadBalancer Services at once.
func (w *world) createServices(b *testing.B, n int) {
	w.createServicesAs(b, n, "svc", nil)
}

// createServicesAs creates n LoadBalancer Services named <prefix>-NNNN
// at once, the i-th with annotations(i) when annotations is set.
func (w *world) createServicesAs(b *testing.B, n int, prefix string, annotations func(int) map[string]string) {
	b.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	errs := make(chan error, n)
	for s := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			svc := &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%04d", prefix, s), Namespace: "default"},
				Spec: corev1.ServiceSpec{
					Type:     corev1.ServiceTypeLoadBalancer,
					Selector: map[string]string{"app": "x"},
					Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
				},
			}
			if annotations != nil {
				svc.Annotations = annotations(s)
			}
			if _, err := w.client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
				errs <- fmt.Errorf("create service %s: %w", svc.Name, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	// Fail now: waiting for addresses of Services never created would
	// only time out.
	if err, failed := <-errs; failed {
		b.Fatalf("%v (and %d more)", err, len(errs))
	}
}

// waitAddresses waits until n Services have a load balancer address.
func (w *world) waitAddresses(b *testing.B, n int, timeout time.Duration) {
	b.Helper()
	w.waitFor(b, timeout, func(ctx context.Context) (bool, string) {
		list, err := w.client.CoreV1().Services("default").List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, err.Error()
		}
		done := 0
		for _, s := range list.Items {
			if len(s.Status.LoadBalancer.Ingress) > 0 {
				done++
			}
		}
		return done >= n, fmt.Sprintf("%d/%d have an address", done, n)
	})
}

// BenchmarkAdoption: a cluster switched from the upstream CCM. 200
// Services whose load balancers the upstream CCM made (its shapes in
// turn: on AWS 100 Classic ELBs and 100 NLBs) exist when the manager
// starts with the config import-config writes; then 200 new Services at
// once with that config (on AWS, Classic ELBs).
func BenchmarkAdoption(b *testing.B) {
	singleCloud(b)
	for i := 0; i < b.N; i++ {
		w := newWorldWith(b, buildBinary(b), conformance.Options{ClusterID: clusterID, Switched: true}, nil)
		if why := w.adapter.Features().NoAdoption; why != "" {
			b.Skip(why)
		}
		const nodes, services = 20, 200
		names := w.launch(b, nodes)
		w.register(b, names)
		w.waitInitialized(b, nodes, 5*time.Minute)
		var backends []conformance.Instance
		for _, n := range names {
			backends = append(backends, conformance.Instance{ID: w.ids[n], NodeName: n})
		}
		shapes := w.adapter.Features().AdoptionShapes
		if shapes == nil {
			shapes = map[string]map[string]string{"": nil}
		}
		kinds := slices.Sorted(maps.Keys(shapes))

		// The upstream CCM's turn: this manager is not running.
		w.ccm.Stop()
		ctx := context.Background()
		w.createServicesAs(b, services, "up", func(i int) map[string]string { return maps.Clone(shapes[kinds[i%len(kinds)]]) })
		want := map[string]string{}
		ids := map[string]string{}
		for s := range services {
			name := fmt.Sprintf("up-%04d", s)
			svc, err := w.client.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				b.Fatal(err)
			}
			up, err := w.cloud.MakeUpstreamLoadBalancer(svc, clusterID, backends)
			if err != nil {
				b.Fatalf("%s: %v", name, err)
			}
			for k, v := range up.Annotations {
				metav1.SetMetaDataAnnotation(&svc.ObjectMeta, k, v)
			}
			svc.Finalizers = append(svc.Finalizers, "service.kubernetes.io/load-balancer-cleanup")
			svc.Finalizers = append(svc.Finalizers, up.Finalizers...)
			if svc, err = w.client.CoreV1().Services("default").Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
				b.Fatal(err)
			}
			svc.Status.LoadBalancer = up.Status
			if _, err := w.client.CoreV1().Services("default").UpdateStatus(ctx, svc, metav1.UpdateOptions{}); err != nil {
				b.Fatal(err)
			}
			want[name] = statusAddrs(up.Status)
			ids[name] = up.ID
		}
		// What the upstream CCM keeps in the cluster (GCE's cluster ID).
		if st, ok := w.cloud.(conformance.UpstreamClusterState); ok {
			for _, cm := range st.UpstreamConfigMaps() {
				if _, err := w.client.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		}
		lbsBefore := len(w.cloud.Inventory())

		w.setLatency(b)
		scenario := fmt.Sprintf("%d upstream-made load balancers adopted (%s; 50 ms reads, 200 ms writes)", services, shapeCounts(kinds, services))
		w.srv.ResetCalls()
		start := time.Now()
		w.startCCM(b)
		w.waitFor(b, 30*time.Minute, func(ctx context.Context) (bool, string) {
			evs, err := w.client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Service,reason=EnsuredLoadBalancer"})
			if err != nil {
				return false, err.Error()
			}
			synced := map[string]bool{}
			for _, e := range evs.Items {
				synced[e.InvolvedObject.Name] = true
			}
			return len(synced) >= services, fmt.Sprintf("%d/%d Services synced", len(synced), services)
		})
		elapsed := time.Since(start)
		calls := w.srv.Calls()
		changed, moved := 0, 0
		list, err := w.client.CoreV1().Services("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for _, svc := range list.Items {
			if _, adopted := want[svc.Name]; !adopted {
				continue // the apiserver's own "kubernetes" Service
			}
			if got := statusAddrs(svc.Status.LoadBalancer); got != want[svc.Name] {
				changed++
				b.Logf("%s: address %s, was %s", svc.Name, got, want[svc.Name])
			}
			key := types.NamespacedName{Namespace: "default", Name: svc.Name}
			if lbs := w.cloud.LoadBalancers(key); len(lbs) != 1 || lbs[0].ID != ids[svc.Name] {
				moved++
				b.Logf("%s: load balancers %+v, upstream's %s", svc.Name, lbs, ids[svc.Name])
			}
		}
		record(b, scenario, "time until every Service is synced", elapsed.Round(100*time.Millisecond).String(), "")
		record(b, scenario, "mutating calls", callsByOp(calls, w.mutating), "")
		record(b, scenario, "read calls", callsByOp(calls, func(op string) bool { return !w.mutating(op) }), "")
		record(b, scenario, "changed addresses / Services not on their upstream load balancer", fmt.Sprintf("%d / %d", changed, moved), "0 / 0")
		record(b, scenario, "cloud resources added", fmt.Sprint(len(w.cloud.Inventory())-lbsBefore), "")
		if changed+moved > 0 {
			b.Errorf("%d Services changed address and %d moved off their upstream load balancer", changed, moved)
		}

		// New Services with the switched config.
		time.Sleep(5 * time.Second)
		w.srv.ResetCalls()
		start = time.Now()
		w.createServicesAs(b, services, "svc", nil)
		w.waitAddresses(b, 2*services, 30*time.Minute)
		elapsed = time.Since(start)
		calls = w.srv.Calls()
		scenario = fmt.Sprintf("%d new LB Services at once, switched config (50 ms reads, 200 ms writes)", services)
		record(b, scenario, "time until all have an address", elapsed.Round(100*time.Millisecond).String(), "")
		record(b, scenario, "mutating calls", callsByOp(calls, w.mutating), "")
		record(b, scenario, "read calls", callsByOp(calls, func(op string) bool { return !w.mutating(op) }), "")

		// A node joins every Service, adopted and new, with the switched
		// config (Azure: the NIC-based pool upstream made).
		time.Sleep(5 * time.Second)
		w.srv.ResetCalls()
		extra := w.launch(b, 1)
		start = time.Now()
		w.register(b, extra)
		w.waitInitialized(b, nodes+1, 5*time.Minute)
		var keys []types.NamespacedName
		for s := range services {
			keys = append(keys, types.NamespacedName{Namespace: "default", Name: fmt.Sprintf("up-%04d", s)}, types.NamespacedName{Namespace: "default", Name: fmt.Sprintf("svc-%04d", s)})
		}
		w.waitBackend(b, keys, w.ids[extra[0]])
		elapsed = time.Since(start)
		time.Sleep(5 * time.Second)
		calls = w.srv.Calls()
		scenario = fmt.Sprintf("1 node added with %d LB Services, switched config", 2*services)
		record(b, scenario, "time until every load balancer has it", elapsed.Round(100*time.Millisecond).String(), "")
		record(b, scenario, "mutating calls", callsByOp(calls, w.mutating), "")
		record(b, scenario, "read calls", callsByOp(calls, func(op string) bool { return !w.mutating(op) }), "")
	}
}

// waitBackend waits until every Service's load balancer has the instance
// id among its backends, consistently.
func (w *world) waitBackend(b *testing.B, keys []types.NamespacedName, id string) {
	b.Helper()
	w.waitFor(b, 30*time.Minute, func(context.Context) (bool, string) {
		n := 0
		for _, k := range keys {
			for _, lb := range w.cloud.LoadBalancers(k) {
				if slices.Contains(lb.Backends, id) && len(lb.Inconsistent) == 0 {
					n++
				}
			}
		}
		return n >= len(keys), fmt.Sprintf("%d/%d load balancers have the new node", n, len(keys))
	})
}

// setLBLatency injects the latencies of the load balancer rows: the
// cloud-wide ones (setLatency), and the cloud's own slowness where it has
// one; it returns them in the rows' words.
func (w *world) setLBLatency(b *testing.B) string {
	b.Helper()
	w.setLatency(b)
	desc := "50 ms reads, 200 ms writes"
	// Clouds whose load balancers provision asynchronously (Octavia)
	// take 2 s per change here, as a fast provider does.
	if slow, ok := w.cloud.(interface{ SetProvisioningDelay(time.Duration) }); ok {
		slow.SetProvisioningDelay(2 * time.Second)
		desc = "50 ms reads, 200 ms writes, 2 s provisioning"
	}
	// ARM: reads take 100 ms and every write is a long-running
	// operation that stays InProgress for 500 ms (azcore then polls
	// no more often than once a second, as it does against Azure).
	// Compute Engine: every write returns an Operation that is DONE
	// after 1 s, reads take 50 ms.
	if slow, ok := w.cloud.(interface{ SetOperationDelay(time.Duration) }); ok {
		read, op := 100*time.Millisecond, 500*time.Millisecond
		desc = "100 ms reads, 500 ms long-running writes"
		if w.cloudName == "gce" {
			read, op = readDelay, time.Second
			desc = "50 ms reads, 1 s operations"
		}
		if err := w.srv.SetFault(cloudsim.FaultSpec{Op: "read", Latency: read}); err != nil {
			b.Fatal(err)
		}
		if err := w.srv.SetFault(cloudsim.FaultSpec{Op: "mutating"}); err != nil {
			b.Fatal(err)
		}
		slow.SetOperationDelay(op)
	}
	return desc
}

// setLatency injects the cloud-wide latencies the load balancer rows use.
func (w *world) setLatency(b *testing.B) {
	b.Helper()
	if err := w.srv.SetFault(cloudsim.FaultSpec{Op: "read", Latency: readDelay}); err != nil {
		b.Fatal(err)
	}
	if err := w.srv.SetFault(cloudsim.FaultSpec{Op: "mutating", Latency: writeDelay}); err != nil {
		b.Fatal(err)
	}
}

func statusAddrs(st corev1.LoadBalancerStatus) string {
	var out []string
	for _, in := range st.Ingress {
		out = append(out, in.IP+in.Hostname)
	}
	return strings.Join(out, ",")
}

// shapeCounts says how many Services of each shape n Services in turn
// make, e.g. "100 classic, 100 nlb".
func shapeCounts(kinds []string, n int) string {
	var out []string
	for i, k := range kinds {
		c := n / len(kinds)
		if i < n%len(kinds) {
			c++
		}
		if k == "" {
			k = "default"
		}
		out = append(out, fmt.Sprintf("%d %s", c, k))
	}
	return strings.Join(out, ", ")
}
