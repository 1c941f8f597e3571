package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/multicloud-ccm/multicloud-ccm/providers/compose/hybrid"
	"github.com/multicloud-ccm/multicloud-ccm/test/ccmproc"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance/clouds"
	"github.com/multicloud-ccm/multicloud-ccm/test/controlplane"
)

// The hybrid cloud-config's keys a cluster uses.
const (
	providerLabel      = hybrid.LabelProvider
	providerAnnotation = hybrid.AnnotationLoadBalancerProvider
)

const (
	// hybridPerCloud Nodes of each cloud register at once.
	hybridPerCloud = 500
	// hybridNotReady of each cloud's Nodes are NotReady in the steady
	// state, as in BenchmarkNodes.
	hybridNotReady = 100
	// steadyWindow is how long the steady state's calls are counted.
	steadyWindow = 3 * time.Minute
	// outageLength is how long one cloud's API answers 5xx.
	outageLength = 2 * time.Minute
	// pendingServices of the failing cloud wait on it during the outage:
	// more than the service controller's workers.
	pendingServices = 12
)

// hybridClouds is $CLOUD's list when it names several clouds (a hybrid
// cluster), else nil.
func hybridClouds() []string {
	c := os.Getenv("CLOUD")
	if !strings.Contains(c, ",") {
		return nil
	}
	var out []string
	for _, n := range strings.Split(c, ",") {
		out = append(out, strings.TrimSpace(n))
	}
	return out
}

// singleCloud skips a single-cloud benchmark when $CLOUD names several
// clouds: those measure one backend, BenchmarkHybrid the composite.
func singleCloud(b *testing.B) {
	if hybridClouds() != nil {
		b.Skipf("CLOUD=%s names several clouds: only BenchmarkHybrid runs", os.Getenv("CLOUD"))
	}
}

// nodeFigures are one cloud's figures of the Nodes scenario.
type nodeFigures struct {
	// init is until every Node of the cloud was initialized.
	init time.Duration
	// reads and writes are the calls of the registration, by operation.
	reads, writes string
	// steady is the steady state's calls per minute, steadyOps by
	// operation over the whole window.
	steady    float64
	steadyOps string
}

// alone holds each cloud's figures with a manager of that cloud only
// (BenchmarkHybrid/alone-<cloud>): the goals of the hybrid rows.
var alone = map[string]nodeFigures{}

// BenchmarkHybrid: one manager serving the clouds of $CLOUD (a
// comma-separated list, the first the default load-balancer cloud), at
// the latencies of the single-cloud rows. Each cloud first alone, with a
// manager of its own, as the goal: 500 Nodes registered at once, then 100
// of them NotReady. Then all clouds at once: 500 Nodes of each registered
// at once (by name, as a --cloud-provider=external kubelet does), 100 of
// each NotReady; then each cloud's API answering 5xx for 2 minutes, while
// a new Node and a new Service of the next cloud are timed against the
// same without the fault. Last, the registration again in a new cluster,
// each Node with the label naming its cloud.
func BenchmarkHybrid(b *testing.B) {
	names := hybridClouds()
	if names == nil {
		b.Skipf("CLOUD=%q names one cloud; BenchmarkHybrid needs a list (CLOUD=openstack,aws)", os.Getenv("CLOUD"))
	}
	for _, n := range names {
		if _, err := clouds.Get(n); err != nil {
			b.Fatal(err)
		}
	}
	bin := buildBinary(b)
	for _, name := range names {
		// A sub-benchmark each, so every world is cleaned up before the
		// next starts.
		b.Run("alone-"+name, func(b *testing.B) {
			for range b.N {
				w := newCloudWorld(b, bin, name, conformance.Options{ClusterID: clusterID}, nil)
				w.hint = "bench-" + name + "-"
				fig := nodesAndSteady(b, []*world{w})[0]
				alone[name] = fig
				scenario := fmt.Sprintf("%s alone: %d Nodes registered at once (50 ms/call)", name, hybridPerCloud)
				record(b, scenario, "time until all initialized", fig.init.Round(100*time.Millisecond).String(), "")
				record(b, scenario, "read calls", fig.reads, "")
				record(b, scenario, "mutating calls", fig.writes, "")
				scenario = fmt.Sprintf("%s alone: steady state, %d NotReady of %d Nodes (%s)", name, hybridNotReady, hybridPerCloud, steadyWindow)
				record(b, scenario, "calls per minute", fmt.Sprintf("%.1f", fig.steady), "")
				record(b, scenario, fmt.Sprintf("by operation over %s", steadyWindow), fig.steadyOps, "")
				w.recordRSS(b, fmt.Sprintf("%s alone: %d Nodes, %d NotReady", name, hybridPerCloud, hybridNotReady))
			}
		})
	}
	b.Run("hybrid", func(b *testing.B) {
		for range b.N {
			ws := newHybridWorld(b, bin, names)
			list := strings.Join(names, ",")
			figs := nodesAndSteady(b, ws)
			recordRegistration(b, ws, figs, fmt.Sprintf("hybrid %s: %d Nodes (%d per cloud) registered at once by name (50 ms/call)", list, hybridPerCloud*len(ws), hybridPerCloud))
			scenario := fmt.Sprintf("hybrid %s: steady state, %d NotReady of %d Nodes in each cloud (%s)", list, hybridNotReady, hybridPerCloud, steadyWindow)
			for i, w := range ws {
				a, measured := alone[w.cloudName]
				goal, opsGoal := "as alone (not measured in this run)", ""
				if measured {
					goal, opsGoal = fmt.Sprintf("as alone: %.1f", a.steady), "as alone: "+a.steadyOps
				}
				record(b, scenario, w.cloudName+": calls per minute", fmt.Sprintf("%.1f", figs[i].steady), goal)
				record(b, scenario, fmt.Sprintf("%s: by operation over %s", w.cloudName, steadyWindow), figs[i].steadyOps, opsGoal)
			}
			ws[0].recordRSS(b, fmt.Sprintf("hybrid %s: %d Nodes, %d NotReady in each cloud", list, hybridPerCloud*len(ws), hybridNotReady))
			outages(b, ws)
		}
	})
	// The same registration with each Node carrying the label that names
	// its cloud: a Node placed by its label is asked of its cloud only.
	b.Run("hybrid-labelled", func(b *testing.B) {
		for range b.N {
			ws := newHybridWorld(b, bin, names)
			figs := registerAll(b, ws, true)
			recordRegistration(b, ws, figs, fmt.Sprintf("hybrid %s: %d Nodes (%d per cloud) registered at once with their %s label (50 ms/call)",
				strings.Join(names, ","), hybridPerCloud*len(ws), hybridPerCloud, providerLabel))
		}
	})
}

// recordRegistration records each cloud's registration figures against
// its figures alone.
func recordRegistration(b *testing.B, ws []*world, figs []nodeFigures, scenario string) {
	for i, w := range ws {
		a, measured := alone[w.cloudName]
		as := func(v string) string {
			if !measured {
				return "as alone (not measured in this run)"
			}
			return "as alone: " + v
		}
		record(b, scenario, w.cloudName+": time until its Nodes initialized", figs[i].init.Round(100*time.Millisecond).String(), as(a.init.Round(100*time.Millisecond).String()))
		record(b, scenario, w.cloudName+": read calls", figs[i].reads, as(a.reads))
		record(b, scenario, w.cloudName+": mutating calls", figs[i].writes, as(a.writes))
	}
}

// newHybridWorld is one control plane, an emulator per cloud (one
// clusterID, as one cluster has) and one manager serving all of them
// from one cloud-config; a world per cloud, sharing the control plane and
// the manager.
func newHybridWorld(b *testing.B, binary string, names []string) []*world {
	b.Helper()
	dir := logDir(b)
	logf, _ := os.Create(filepath.Join(dir, "controlplane.log"))
	cp, err := controlplane.Start(controlplane.Options{Output: logf})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cp.Stop() })
	// The harness itself must not be the bottleneck when it creates
	// thousands of objects.
	fast := rest.CopyConfig(cp.Admin)
	fast.QPS, fast.Burst = 2000, 4000
	client := kubernetes.NewForConfigOrDie(fast)

	var ws []*world
	var cfgs []conformance.CloudConfig
	// Routes stay off: the benchmarks measure nodes and load balancers.
	args := []string{"--configure-cloud-routes=false", "--v=1"}
	for _, name := range names {
		adapter, err := clouds.Get(name)
		if err != nil {
			b.Fatal(err)
		}
		cloud, err := adapter.Start(conformance.Options{ClusterID: clusterID})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = cloud.Close() })
		w := &world{
			cp: cp, cloud: cloud, adapter: adapter, cloudName: name, srv: cloud.Server(),
			client: client, dir: dir, ids: map[string]string{},
			// Node names must not collide across the clouds.
			hint: "bench-" + name + "-",
		}
		cfgs = append(cfgs, cloud.Config())
		for _, a := range cloud.ExtraArgs() {
			if !slices.Contains(args, a) {
				args = append(args, a)
			}
		}
		ws = append(ws, w)
	}
	kubeconfig, err := cp.CCMKubeconfig(context.Background(), 4*time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	cfg := filepath.Join(dir, "cloud-config.yaml")
	if err := os.WriteFile(cfg, []byte(conformance.HybridYAML(clusterID, cfgs...)), 0o600); err != nil {
		b.Fatal(err)
	}
	ws[0].ccmOpts = ccmproc.Options{Binary: binary, CloudConfig: cfg, Kubeconfig: kubeconfig, Args: args}
	ws[0].startCCM(b)
	for _, w := range ws[1:] {
		w.ccm = ws[0].ccm
	}
	b.Cleanup(func() {
		ws[0].ccm.Stop()
		if os.Getenv("BENCH_KEEP_LOGS") != "" {
			b.Logf("logs in %s", dir)
		}
	})
	return ws
}

// nodesAndSteady is BenchmarkNodes' first two measures for each world's
// cloud at once (one world: a cloud alone): hybridPerCloud Nodes of each
// registered at once at 50 ms per call, and the calls of the steady
// state with hybridNotReady of each NotReady.
func nodesAndSteady(b *testing.B, ws []*world) []nodeFigures {
	b.Helper()
	figs := registerAll(b, ws, false)

	// Steady state: the NotReady Nodes make the lifecycle controller ask
	// InstanceExists and InstanceShutdown every 5 s for each.
	for _, w := range ws {
		w.setNotReady(b, w.nodes[:hybridNotReady])
	}
	time.Sleep(10 * time.Second) // let the controllers see the change
	for _, w := range ws {
		w.srv.ResetCalls()
	}
	time.Sleep(steadyWindow)
	for i, w := range ws {
		calls := w.srv.Calls()
		total := 0
		for _, n := range calls {
			total += n
		}
		figs[i].steady = float64(total) / steadyWindow.Minutes()
		figs[i].steadyOps = callsByOp(calls, func(string) bool { return true })
	}
	return figs
}

// registerAll registers hybridPerCloud Nodes of each world's cloud at
// once at 50 ms per call (with labelled, each with the label naming its
// cloud; else by name only, as a --cloud-provider=external kubelet does),
// and returns each cloud's time until its Nodes were initialized and
// its calls meanwhile.
func registerAll(b *testing.B, ws []*world, labelled bool) []nodeFigures {
	b.Helper()
	names := make([][]string, len(ws))
	for i, w := range ws {
		if err := w.srv.SetFault(cloudsim.FaultSpec{Op: "*", Latency: readDelay}); err != nil {
			b.Fatal(err)
		}
		names[i] = w.launch(b, hybridPerCloud)
	}
	for _, w := range ws {
		w.srv.ResetCalls()
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var labels map[string]string
			if labelled {
				labels = map[string]string{providerLabel: w.cloudName}
			}
			w.registerWith(b, names[i], labels)
		}()
	}
	wg.Wait()
	took := waitEachInitialized(b, ws, start, 10*time.Minute)
	figs := make([]nodeFigures, len(ws))
	for i, w := range ws {
		calls := w.srv.Calls()
		figs[i] = nodeFigures{
			init:   took[i],
			reads:  callsWithTotal(calls, func(op string) bool { return !w.mutating(op) }),
			writes: callsWithTotal(calls, w.mutating),
		}
	}
	return figs
}

// callsWithTotal is "<total>: <by operation>" of the calls filter keeps,
// or "0".
func callsWithTotal(calls map[string]int, filter func(string) bool) string {
	total := 0
	for op, n := range calls {
		if filter(op) {
			total += n
		}
	}
	if total == 0 {
		return "0"
	}
	return fmt.Sprintf("%d: %s", total, callsByOp(calls, filter))
}

// waitEachInitialized waits until every world's Nodes are initialized,
// and returns for each world how long after start its last one was.
func waitEachInitialized(b *testing.B, ws []*world, start time.Time, timeout time.Duration) []time.Duration {
	b.Helper()
	took := make([]time.Duration, len(ws))
	ws[0].waitFor(b, timeout, func(ctx context.Context) (bool, string) {
		list, err := ws[0].client.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, err.Error()
		}
		now := time.Since(start)
		initialized := map[string]bool{}
		for _, n := range list.Items {
			initialized[n.Name] = ccmproc.Initialized(&n)
		}
		all := true
		var seen []string
		for i, w := range ws {
			done := 0
			for _, n := range w.nodes {
				if initialized[n] {
					done++
				}
			}
			if done == len(w.nodes) && took[i] == 0 {
				took[i] = now
			}
			all = all && done == len(w.nodes)
			seen = append(seen, fmt.Sprintf("%s %d/%d", w.cloudName, done, len(w.nodes)))
		}
		return all, strings.Join(seen, ", ") + " initialized"
	})
	return took
}

// outages: each cloud's API in turn answers 5xx on every call for
// outageLength while the next cloud is served; every cloud at the load
// balancer rows' latencies. The hybrid composite bounds each cloud's
// calls in flight (providers/compose/hybrid/share.go) so one cloud's
// outage leaves the others the controllers' workers; the figures say
// whether the served cloud's new Node and Service take as long as
// without the fault.
func outages(b *testing.B, ws []*world) {
	b.Helper()
	var lat []string
	for _, w := range ws {
		w.srv.ClearFault("*")
		lat = append(lat, w.cloudName+": "+w.setLBLatency(b))
	}
	// One Service in each cloud first: the first load balancer of a
	// cloud may set its Nodes up once (OpenStack's member group on
	// every Node's port), which no sample below should pay.
	for _, w := range ws {
		w.createServicesAs(b, 1, "warm-"+w.cloudName, func(int) map[string]string {
			return map[string]string{providerAnnotation: w.cloudName}
		})
	}
	for _, w := range ws {
		w.waitServiceAddress(b, "warm-"+w.cloudName+"-0000", 15*time.Minute)
	}
	for down := range ws {
		outage(b, ws[down], ws[(down+1)%len(ws)], strings.Join(lat, "; "))
	}
}

// outage is one cloud's (d) API answering 5xx for outageLength, while up
// is served.
func outage(b *testing.B, d, up *world, latencies string) {
	b.Helper()
	scenario := fmt.Sprintf("hybrid: %s API answers 5xx to every call for %s, %s served (%s; %d NotReady Nodes and %d new Services of %s wait on it)",
		d.cloudName, outageLength, up.cloudName, latencies, hybridNotReady, pendingServices, d.cloudName)
	tag := "during-" + d.cloudName + "-down"

	// Without the fault: the same samples, the cloud answering.
	base := up.sample(b, "before-"+d.cloudName+"-down", true)
	byNameBase := <-base.byName
	burstBase := up.burst(b, "burst-before-"+d.cloudName+"-down")

	fault := cloudsim.FaultSpec{Op: cloudsim.AllOps, FailNext: math.MaxInt32}
	if err := d.srv.SetFault(fault); err != nil {
		b.Fatal(err)
	}
	begin := time.Now()
	cleared := false
	clear := func() {
		if !cleared {
			d.srv.ClearFault(cloudsim.AllOps)
			cleared = true
		}
	}
	defer clear()
	d.srv.ResetCalls()
	pending := "pending-" + d.cloudName
	d.createServicesAs(b, pendingServices, pending, func(int) map[string]string {
		return map[string]string{providerAnnotation: d.cloudName}
	})
	// Early in the outage (the failing cloud's work being retried), and
	// a minute in.
	time.Sleep(time.Until(begin.Add(10 * time.Second)))
	early := up.sample(b, tag+"-early", true)
	burstDuring := up.burst(b, "burst-"+tag)
	burstEnd := time.Since(begin)
	time.Sleep(time.Until(begin.Add(time.Minute)))
	late := up.sample(b, tag+"-late", false)
	time.Sleep(time.Until(begin.Add(outageLength)))
	during := time.Since(begin)
	calls := d.srv.Calls()
	harmed := d.lostNotReady(b)
	clear()
	clearedAt := time.Now()

	// Once it answers: its Services get their addresses; the Node
	// registered by name during the outage (which every cloud must
	// answer for) is initialized.
	for s := range pendingServices {
		d.waitServiceAddress(b, fmt.Sprintf("%s-%04d", pending, s), 15*time.Minute)
	}
	recovered := time.Since(clearedAt)
	byName := <-early.byName

	r := func(t time.Duration) string { return t.Round(100 * time.Millisecond).String() }
	record(b, scenario, fmt.Sprintf("new %s Node with its %s label: initialized after (without the fault / 10 s in / 60 s in)", up.cloudName, providerLabel),
		fmt.Sprintf("%s / %s / %s", r(base.node), r(early.node), r(late.node)), "as without the fault")
	record(b, scenario, fmt.Sprintf("then a new Service annotated %s: address after (without the fault / 10 s in / 60 s in)", up.cloudName),
		fmt.Sprintf("%s / %s / %s", r(base.svc), r(early.svc), r(late.svc)), "as without the fault")
	record(b, scenario, fmt.Sprintf("a burst of %d new Services annotated %s: time until all have an address (without the fault / during it)", burstServices, up.cloudName),
		fmt.Sprintf("%s / %s (ended %s into the outage)", r(burstBase), r(burstDuring), r(burstEnd)), "as without the fault")
	byNameDuring := "not initialized"
	if byName.took >= 0 {
		byNameDuring = r(byName.took) + " (during the outage)"
		if byName.at.After(clearedAt) {
			byNameDuring = fmt.Sprintf("%s (%s after the fault cleared)", r(byName.took), r(byName.at.Sub(clearedAt)))
		}
	}
	record(b, scenario, fmt.Sprintf("new %s Node registered by name only (no label; every cloud must say whether it has it): initialized after (without the fault / 10 s in)", up.cloudName),
		fmt.Sprintf("%s / %s", r(byNameBase.took), byNameDuring), "")
	total := 0
	for _, n := range calls {
		total += n
	}
	record(b, scenario, fmt.Sprintf("calls to %s during the outage (all answered 5xx)", d.cloudName),
		fmt.Sprintf("%.0f a minute: %s", float64(total)/during.Minutes(), callsByOp(calls, func(string) bool { return true })), "")
	record(b, scenario, fmt.Sprintf("%s's NotReady Nodes deleted or tainted shut down during the outage", d.cloudName), fmt.Sprint(harmed), "0")
	record(b, scenario, fmt.Sprintf("after the fault cleared: time until %s's %d Services have an address", d.cloudName, pendingServices), r(recovered), "")
}

// sampled is one sample's timings.
type sampled struct {
	// node: until the labelled Node was initialized; svc: from then until
	// the Service had an address.
	node, svc time.Duration
	// byName delivers the Node registered by name only, when asked for.
	byName <-chan initTime
}

// initTime is when a Node was initialized, and how long after its
// registration.
type initTime struct {
	at   time.Time
	took time.Duration
}

// sample times a new Node of w's cloud, registered with the label naming
// the cloud (as a hybrid cluster's kubelets are told to), until it is
// initialized, then a new LoadBalancer Service annotated for the cloud
// until it has an address. With byName, another new Node registered by
// its name only, at the same moment, is watched until it is initialized
// (its time comes on byName, which may be after the sample returns).
func (w *world) sample(b *testing.B, name string, byName bool) sampled {
	b.Helper()
	ctx := context.Background()
	n := 1
	if byName {
		n = 2
	}
	insts := w.launch(b, n)
	labelled := readyKubeletNode(insts[0])
	labelled.Labels[providerLabel] = w.cloudName
	start := time.Now()
	if _, err := w.client.CoreV1().Nodes().Create(ctx, labelled, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	var out sampled
	if byName {
		if _, err := w.client.CoreV1().Nodes().Create(ctx, readyKubeletNode(insts[1]), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		ch := make(chan initTime, 1)
		out.byName = ch
		go func() {
			// Until well after any outage: the result is read
			// once it is over.
			deadline := time.Now().Add(outageLength + 10*time.Minute)
			for time.Now().Before(deadline) && !w.ccm.Exited() {
				if node, err := w.client.CoreV1().Nodes().Get(ctx, insts[1], metav1.GetOptions{}); err == nil && ccmproc.Initialized(node) {
					ch <- initTime{at: time.Now(), took: time.Since(start)}
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
			ch <- initTime{at: time.Now(), took: -1}
		}()
	}
	w.nodes = append(w.nodes, insts...)
	w.pollFast(b, 5*time.Minute, "node "+insts[0]+" initialized", func(ctx context.Context) bool {
		n, err := w.client.CoreV1().Nodes().Get(ctx, insts[0], metav1.GetOptions{})
		return err == nil && ccmproc.Initialized(n)
	})
	out.node = time.Since(start)
	start = time.Now()
	w.createServicesAs(b, 1, name, func(int) map[string]string { return map[string]string{providerAnnotation: w.cloudName} })
	w.pollFast(b, 5*time.Minute, "Service "+name+"-0000's address", func(ctx context.Context) bool {
		return w.serviceHasAddress(ctx, name+"-0000")
	})
	out.svc = time.Since(start)
	return out
}

// burstServices new Services of the served cloud are created at once
// during another cloud's outage: more than the service controller's
// workers, so a cloud sharing them with a failing one would queue them.
const burstServices = 50

// burst creates burstServices Services of w's cloud at once and returns
// the time until all have an address.
func (w *world) burst(b *testing.B, prefix string) time.Duration {
	b.Helper()
	start := time.Now()
	w.createServicesAs(b, burstServices, prefix, func(int) map[string]string { return map[string]string{providerAnnotation: w.cloudName} })
	for i := range burstServices {
		name := fmt.Sprintf("%s-%04d", prefix, i)
		w.pollFast(b, 5*time.Minute, "Service "+name+"'s address", func(ctx context.Context) bool {
			return w.serviceHasAddress(ctx, name)
		})
	}
	return time.Since(start)
}

// pollFast polls cond every 50 ms (the samples take about a second; the
// 200 ms of waitFor would be a fifth of it).
func (w *world) pollFast(b *testing.B, timeout time.Duration, what string, cond func(context.Context) bool) {
	b.Helper()
	deadline := time.Now().Add(timeout)
	for !cond(context.Background()) {
		if w.ccm.Exited() {
			b.Fatalf("the CCM exited: %v (logs in %s)", w.ccm.Err(), w.dir)
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s: not within %s (logs in %s)", what, timeout, w.dir)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (w *world) serviceHasAddress(ctx context.Context, name string) bool {
	svc, err := w.client.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
	return err == nil && len(svc.Status.LoadBalancer.Ingress) > 0
}

// waitServiceAddress waits until the Service has a load balancer address.
func (w *world) waitServiceAddress(b *testing.B, name string, timeout time.Duration) {
	b.Helper()
	w.waitFor(b, timeout, func(ctx context.Context) (bool, string) {
		return w.serviceHasAddress(ctx, name), "Service " + name + " has no address"
	})
}

// lostNotReady counts the cloud's NotReady Nodes (the first
// hybridNotReady it registered) that are gone or tainted shut down.
func (w *world) lostNotReady(b *testing.B) int {
	b.Helper()
	lost := 0
	for _, name := range w.nodes[:hybridNotReady] {
		n, err := w.client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			lost++
		case err != nil:
			b.Fatal(err)
		case ccmproc.HasTaint(n, cloudproviderapi.TaintNodeShutdown):
			lost++
		}
	}
	return lost
}
