package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/wait"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/multicloud-ccm/multicloud-ccm/test/ccmproc"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance/clouds"
)

// TestConformance runs the backend-agnostic scenarios against every cloud
// that has an adapter (test/conformance/clouds), as subtests named
// <cloud>/<scenario>. Each cloud gets one emulator and one manager shared
// by the independent scenarios, each of which cleans up the Nodes and
// Services it made; crash safety gets its own emulator and manager because
// it kills the process.
//
// Bounds are the ones the scenarios state (10 s for lifecycle detection);
// everything else polls generously, since a slow 2-core machine must not
// fail a correct manager.
//
// Then the hybrid runs (hybridPairs, hybrid_test.go): each pair's
// emulators at once behind one manager, as <cloud>+<cloud>/<scenario>.
func TestConformance(t *testing.T) {
	// Parallel with the other top-level tests that run whole clusters
	// (TestUpstreamServiceControllerStillServes): their clouds' runs fill
	// the -parallel slots this test's last runs leave free.
	t.Parallel()
	for _, a := range clouds.All() {
		t.Run(a.Name(), func(t *testing.T) {
			t.Parallel()
			runConformance(t, newCluster(t, a.Name()), a)
		})
	}
	// One pair's second cloud hangs (calls hold the workers until they
	// time out), the other's default cloud throttles every call (the
	// single-cloud runs fail every read with 5xx).
	faults := []struct {
		down  int
		fault cloudsim.FaultSpec
	}{{1, cloudsim.FaultSpec{Hang: true}}, {0, cloudsim.FaultSpec{ThrottleNext: 1 << 30}}}
	for i, pair := range hybridPairs {
		var as []conformance.Adapter
		for _, name := range pair {
			a, err := clouds.Get(name)
			if err != nil {
				t.Fatal(err)
			}
			as = append(as, a)
		}
		f := faults[i%len(faults)]
		name := pair[0] + "+" + pair[1]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runHybridConformance(t, newCluster(t, name), f.down, f.fault, as...)
		})
	}
}

// scenario is one of the suite's scenarios on one cloud.
type scenario struct {
	name string
	run  func(*suiteCloud, *testing.T)
}

const (
	// lifecycleBound is how soon after an instance stops or disappears
	// (or its Node goes NotReady, whichever is later) the manager must
	// taint or delete the Node.
	lifecycleBound = 10 * time.Second
	// converge is the generous wait for everything without a stated bound.
	converge = 90 * time.Second
	// faultWindow keeps a fault on for well beyond the lifecycle
	// controller's 1 s check interval.
	faultWindow = 15 * time.Second
	// repairPeriod is the suite's --load-balancer-repair-period (default
	// 5 minutes): drift is repaired within one period after the listing
	// that sees it.
	repairPeriod = 3 * time.Second
	// orphanScanPeriod and orphanGrace are the suite's
	// --orphan-scan-period and --orphan-grace-period (30 minutes and an
	// hour by default).
	orphanScanPeriod = 2 * time.Second
	orphanGrace      = 8 * time.Second
	// throttleWindow is how long the orphan scenario throttles every
	// cloud read, with orphans past their grace period and drift checks
	// due.
	throttleWindow = time.Minute
	confNS         = "default"
)

// suiteCloud is one emulator plus the manager pointed at it: its own in a
// single-cloud run, one shared by the clouds of a hybrid run.
type suiteCloud struct {
	// cluster is the control plane this cloud's manager and scenarios
	// use: the run's own.
	*cluster
	adapter conformance.Adapter
	cloud   conformance.Cloud
	ccm     *ccmProcess
	cfg     conformance.CloudConfig

	// What a hybrid run sets so that its clouds' scenarios can run side
	// by side in one cluster; the zero values are the single-cloud run's.
	// prefix starts every instance name hint and Node name the scenarios
	// choose.
	prefix string
	// ns holds the scenarios' Services (confNS when empty).
	ns string
	// annotations go on every Service the scenarios make (the hybrid
	// load-balancer-provider annotation).
	annotations map[string]string
	// routeNet is the third octet's first two digits of the routes
	// scenario's pod CIDRs ("10" when empty: 10.244.101.0/24, ...).
	routeNet string
	// foreignID is the foreignNode scenario's providerID (the adapter's
	// ForeignProviderID when empty).
	foreignID string
	// policy and principal are the minimal policy enforcePolicy set on
	// the emulator for the manager's identity (nil: none); withholding
	// says a scenario withholds permissions on purpose, so denials are
	// expected.
	policy      []string
	principal   string
	withholding bool
}

// lbService is the package's lbService in this cloud's namespace with its
// annotations.
func (s *suiteCloud) lbService(name string, ports ...int32) *corev1.Service {
	svc := lbService(name, ports...)
	if s.ns != "" {
		svc.Namespace = s.ns
	}
	for k, v := range s.annotations {
		metav1.SetMetaDataAnnotation(&svc.ObjectMeta, k, v)
	}
	return svc
}

// foreignProviderID is a providerID no cloud of this run serves.
func (s *suiteCloud) foreignProviderID() string {
	if s.foreignID != "" {
		return s.foreignID
	}
	return s.cloud.ForeignProviderID()
}

// podCIDR is the routes scenario's i-th pod CIDR (1-based).
func (s *suiteCloud) podCIDR(i int) string {
	net := s.routeNet
	if net == "" {
		net = "10"
	}
	return fmt.Sprintf("10.244.%s%d.0/24", net, i)
}

// startSuiteCloud starts a fresh emulator through the adapter and the
// release binary against it, as deploy/ runs it (deploy/'s RBAC), with the
// suite's flags.
func startSuiteCloud(t *testing.T, cl *cluster, a conformance.Adapter, name string, tweak ...func(*conformance.Options)) *suiteCloud {
	t.Helper()
	f := a.Features()
	opts := conformance.Options{ClusterID: "conf-" + a.Name(), Routes: f.Routes, QuickErrors: true}
	for _, tw := range tweak {
		tw(&opts)
	}
	c, err := a.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	s := &suiteCloud{cluster: cl, adapter: a, cloud: c, cfg: c.Config()}
	s.ccm = s.startCCM(t, name)
	return s
}

func (s *suiteCloud) startCCM(t *testing.T, name string, extra ...string) *ccmProcess {
	t.Helper()
	path := writeFile(t, s.adapter.Name()+"-"+name+"-cloud-config.yaml", s.cfg.YAML())
	args := []string{
		// Leader election is TestManager's subject; here it would only
		// add a wait for the previous test's Lease to expire.
		"--leader-elect=false",
		"--cluster-cidr=10.244.0.0/16",
		fmt.Sprintf("--configure-cloud-routes=%t", s.adapter.Features().Routes),
		"--allocate-node-cidrs=false",
		"--node-monitor-period=1s",
		"--route-reconciliation-period=2s",
		"--load-balancer-repair-period=" + repairPeriod.String(),
		"--orphan-scan-period=" + orphanScanPeriod.String(),
		"--orphan-grace-period=" + orphanGrace.String(),
	}
	args = append(append(args, s.cloud.ExtraArgs()...), extra...)
	s.enforcePolicy(t, s.cfg.YAML(), args)
	return s.cluster.startCCM(t, "ccm-"+s.adapter.Name()+"-"+name, release(t), path, args...)
}

func runConformance(t *testing.T, cl *cluster, a conformance.Adapter) {
	s := startSuiteCloud(t, cl, a, "shared")
	scenarios := []scenario{
		{"node initialization", (*suiteCloud).nodeInitialization},
		{"node named unlike its instance initializes through its providerID", (*suiteCloud).nodeByProviderID},
		{"node with a foreign providerID stays tainted and the others are served", (*suiteCloud).foreignNode},
		{"load balancers", (*suiteCloud).loadBalancers},
		{"stopped instance gets the shutdown taint and loses it when started", (*suiteCloud).stoppedInstance},
		{"terminated instance's node is deleted", (*suiteCloud).terminatedInstance},
		{"a load balancer changed outside the manager is repaired", (*suiteCloud).driftRepair},
		{"services sharing cloud parts deleted at once leave nothing and no warning", (*suiteCloud).sharedPartsDeletedAtOnce},
		{"throttled reads never delete a node", func(s *suiteCloud, t *testing.T) { s.faultyReads(t, "throttled") }},
		{"failing reads never delete a node", func(s *suiteCloud, t *testing.T) { s.faultyReads(t, "5xx") }},
	}
	if a.Features().Routes {
		scenarios = append(scenarios, scenario{"routes follow pod CIDRs", (*suiteCloud).routes})
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			sc.run(s, t)
			if s.ccm.exited() {
				t.Fatalf("the manager exited: %v", s.ccm.Err())
			}
		})
	}
	// Only now: the crash scenario's manager must not share Services with
	// a second live manager.
	s.ccm.stop()
	t.Run("manager never logs a secret", func(t *testing.T) {
		for _, secret := range s.cfg.Secrets {
			if strings.Contains(s.ccm.log.String(), secret) {
				t.Errorf("the manager logged a credential from the cloud-config")
			}
		}
	})
	t.Run("crash during provisioning converges without duplicates or leaks", func(t *testing.T) {
		s := startSuiteCloud(t, cl, a, "crash")
		crashSafety(t, []*suiteCloud{s}, func(t *testing.T) { s.ccm = s.startCCM(t, "crash-restarted") })
	})
	t.Run("resources no Service owns are reported, and deleted after the grace period with orphans: delete", func(t *testing.T) {
		orphanCleanup(t, cl, a)
	})
	t.Run("pod CIDRs come from the cloud", func(t *testing.T) {
		podCIDRsFromTheCloud(t, cl, a)
	})
	t.Run("a permission withheld gives a clear message and loses nothing", func(t *testing.T) {
		permissionWithheld(t, cl, a)
	})
	t.Run("a load balancer the upstream CCM made is adopted with its address", func(t *testing.T) {
		if why := a.Features().NoAdoption; why != "" {
			t.Skip(why)
		}
		adoption(t, cl, a)
	})
	t.Run("dual-stack and IPv6-only Services are served or refused as the cloud can", func(t *testing.T) {
		dualStack(t, cl, a)
	})
}

// ---- Nodes ----

// launch starts an instance through the adapter.
func (s *suiteCloud) launch(t *testing.T, zone, hint string) conformance.Instance {
	t.Helper()
	inst, err := s.cloud.Launch(conformance.InstanceSpec{Zone: zone, PublicIP: true, NameHint: s.prefix + hint})
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// launchNode launches an instance and registers its Node by default name.
func (s *suiteCloud) launchNode(t *testing.T, zone, hint, podCIDR string) conformance.Instance {
	t.Helper()
	inst := s.launch(t, zone, hint)
	s.registerNode(t, inst.NodeName, "", podCIDR)
	return inst
}

func describeNode(n *corev1.Node) string {
	return fmt.Sprintf("providerID=%q taints=%v labels=%v addresses=%v", n.Spec.ProviderID, n.Spec.Taints, n.Labels, n.Status.Addresses)
}

// checkNode compares an initialized Node with the adapter's expectation:
// exact providerID, the labels, and (when addrs) the exact address set.
func checkNode(t *testing.T, n *corev1.Node, want conformance.NodeExpectation, addrs bool) {
	t.Helper()
	if n.Spec.ProviderID != want.ProviderID {
		t.Errorf("node %s providerID = %q, want %q", n.Name, n.Spec.ProviderID, want.ProviderID)
	}
	for k, v := range want.Labels {
		if n.Labels[k] != v {
			t.Errorf("node %s label %s = %q, want %q", n.Name, k, n.Labels[k], v)
		}
	}
	if addrs {
		if got, exp := addressSet(n.Status.Addresses), addressSet(want.Addresses); got != exp {
			t.Errorf("node %s addresses = %s, want %s", n.Name, got, exp)
		}
	}
}

func addressSet(as []corev1.NodeAddress) string {
	var out []string
	for _, a := range as {
		out = append(out, string(a.Type)+"="+a.Address)
	}
	sort.Strings(out)
	return strings.Join(slices.Compact(out), " ")
}

func (s *suiteCloud) nodeInitialization(t *testing.T) {
	zones := s.cloud.Zones()
	var insts []conformance.Instance
	for i := range 2 {
		insts = append(insts, s.launchNode(t, zones[i%len(zones)], fmt.Sprintf("init-%d", i), ""))
	}
	for _, inst := range insts {
		n := s.waitInitialized(t, inst.NodeName)
		// Addresses are written right after the taint goes; wait for them
		// rather than racing the controller's second write.
		want, err := s.cloud.ExpectedNode(inst.ID)
		if err != nil {
			t.Fatal(err)
		}
		poll(t, converge, "node "+inst.NodeName+" addresses", func(ctx context.Context) (bool, string, error) {
			got, err := s.getNode(ctx, inst.NodeName)
			if err != nil {
				return false, "", err
			}
			n = got
			return addressSet(got.Status.Addresses) == addressSet(want.Addresses), describeNode(got), nil
		})
		checkNode(t, n, want, true)
	}
}

func (s *suiteCloud) nodeByProviderID(t *testing.T) {
	inst := s.launch(t, s.cloud.Zones()[0], "renamed")
	pid, err := s.cloud.KubeletProviderID(inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	// A name no instance has: only the providerID can find the instance.
	name := s.registerNode(t, s.prefix+"conformance-renamed-"+strings.ToLower(s.adapter.Name()), pid, "")
	n := s.waitInitialized(t, name)
	want, err := s.cloud.ExpectedNode(inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	// Addresses of a renamed Node may legitimately differ in the
	// hostname; identity and topology must not.
	checkNode(t, n, want, false)
}

func (s *suiteCloud) foreignNode(t *testing.T) {
	// With a pod CIDR, as node IPAM gives every Node: no cloud of this
	// manager can route it, and it is not the manager's to try.
	foreign := s.registerNode(t, s.prefix+"conformance-foreign", s.foreignProviderID(), s.podCIDR(9))
	inst := s.launchNode(t, s.cloud.Zones()[1], "beside-foreign", "")
	s.waitInitialized(t, inst.NodeName)
	// Once the manager has recorded NodeNotServed on the foreign Node it
	// has decided about it: only then is "not initialized" its answer
	// rather than a Node it has not reached yet.
	var n *corev1.Node
	poll(t, converge, "the NodeNotServed Event on the foreign node", func(ctx context.Context) (bool, string, error) {
		var err error
		if n, err = s.getNode(ctx, foreign); err != nil {
			return false, "", err
		}
		evs, err := s.admin.CoreV1().Events("").List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.kind=Node,involvedObject.uid=" + string(n.UID) + ",reason=NodeNotServed",
		})
		return err == nil && len(evs.Items) > 0, describeNode(n), err
	})
	n, err := s.getNode(context.Background(), foreign)
	if err != nil {
		t.Fatalf("foreign node: %v", err)
	}
	if ccmproc.Initialized(n) || !ccmproc.HasTaint(n, cloudproviderapi.TaintExternalCloudProvider) {
		t.Errorf("node with foreign providerID was initialized: %s", describeNode(n))
	}
	if n.Spec.ProviderID != s.foreignProviderID() {
		t.Errorf("foreign providerID rewritten to %q", n.Spec.ProviderID)
	}
	if s.ccm.exited() {
		t.Fatalf("the manager exited on a foreign providerID: %v", s.ccm.Err())
	}

	// NotReady, as a Node another manager serves may be: the lifecycle
	// controller asks about it every second (--node-monitor-period=1s),
	// and it is never deleted or tainted shut down, nor logged each time.
	// A Node of ours beside it, stopped and NotReady: its shutdown taint
	// shows a lifecycle pass has run since the foreign Node went NotReady,
	// so the foreign Node's state after it is that pass's answer.
	s.setReady(t, foreign, corev1.ConditionFalse)
	if err := s.cloud.Stop(inst.ID); err != nil {
		t.Fatal(err)
	}
	s.setReady(t, inst.NodeName, corev1.ConditionFalse)
	poll(t, converge, "a lifecycle pass since the foreign node went NotReady (the shutdown taint on the stopped node beside it)",
		s.hasTaintCond(inst.NodeName, cloudproviderapi.TaintNodeShutdown, true))
	defer func() {
		if err := s.cloud.Start(inst.ID); err != nil {
			t.Error(err)
		}
		s.setReady(t, inst.NodeName, corev1.ConditionTrue)
	}()
	if n, err = s.getNode(context.Background(), foreign); err != nil {
		t.Fatalf("the NotReady foreign node: %v", err)
	}
	if ccmproc.HasTaint(n, cloudproviderapi.TaintNodeShutdown) || ccmproc.Initialized(n) {
		t.Errorf("NotReady node with foreign providerID was touched: %s", describeNode(n))
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeNetworkUnavailable && c.Status == corev1.ConditionTrue {
			t.Errorf("the route controller marked the foreign node NetworkUnavailable: %s", c.Message)
		}
	}
	if k := strings.Count(s.ccm.log.String(), "error checking if node "+foreign); k > 0 {
		t.Errorf("the lifecycle controller logged an error about the foreign node %d times", k)
	}
	code, body, err := s.ccm.get("/metrics", true)
	if err != nil || code != 200 {
		t.Fatalf("GET /metrics: %d %v", code, err)
	}
	if !strings.Contains(body, `multicloud_ccm_unowned_nodes{reason="foreign-provider-id"} 1`) {
		t.Errorf("/metrics does not count the foreign node:\n%s", grepLines(body, "multicloud_ccm_unowned_nodes"))
	}
	evs, err := s.admin.CoreV1().Events("").List(context.Background(), metav1.ListOptions{
		// By UID: every cloud's run registers a Node of this name.
		FieldSelector: "involvedObject.kind=Node,involvedObject.uid=" + string(n.UID) + ",reason=NodeNotServed",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs.Items) != 1 || evs.Items[0].Count > 1 || !strings.Contains(evs.Items[0].Message, "of no configured cloud") {
		t.Errorf("NodeNotServed events %+v, want one, once", evs.Items)
	}
	if evs, err = s.admin.CoreV1().Events("").List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.kind=Node,involvedObject.uid=" + string(n.UID) + ",reason=FailedToCreateRoute",
	}); err != nil || len(evs.Items) != 0 {
		t.Errorf("FailedToCreateRoute events on the foreign node: %+v %v", evs.Items, err)
	}
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

// ---- lifecycle ----

// within waits for cond and fails the test if it took longer than bound,
// measured from start. It keeps watching up to converge after the bound
// so a failure says how late the manager was (or that it never acted),
// and later steps still run.
func within(t *testing.T, start time.Time, bound time.Duration, what string, cond func(ctx context.Context) (bool, string, error)) bool {
	t.Helper()
	var last string
	var took time.Duration
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(converge))
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		ok, seen, err := cond(ctx)
		last = seen
		if err != nil {
			last = err.Error()
		}
		took = time.Since(start)
		return ok, nil
	})
	if err != nil {
		t.Errorf("%s: not within %v, nor after %v; last seen: %s", what, bound, converge, last)
		return false
	}
	if took > bound {
		t.Errorf("%s: took %v, want within %v", what, took.Round(100*time.Millisecond), bound)
		return true
	}
	t.Logf("%s: took %v (bound %v)", what, took.Round(100*time.Millisecond), bound)
	return true
}

// goesNotReady launches an instance with an initialized, Ready Node, then
// changes the instance (change) and makes the Node NotReady as its kubelet
// stopping to report would; the lifecycle bound runs from then.
func (s *suiteCloud) goesNotReady(t *testing.T, zone, hint string, change func(id string) error) conformance.Instance {
	t.Helper()
	inst := s.launchNode(t, zone, hint, "")
	s.waitInitialized(t, inst.NodeName)
	s.setReady(t, inst.NodeName, corev1.ConditionTrue)
	if err := change(inst.ID); err != nil {
		t.Fatal(err)
	}
	s.setReady(t, inst.NodeName, corev1.ConditionFalse)
	return inst
}

func (s *suiteCloud) stoppedInstance(t *testing.T) {
	inst := s.goesNotReady(t, s.cloud.Zones()[0], "stopped", s.cloud.Stop)
	start := time.Now()
	if !within(t, start, lifecycleBound, "shutdown taint on the stopped instance's node",
		s.hasTaintCond(inst.NodeName, cloudproviderapi.TaintNodeShutdown, true)) {
		return
	}
	if err := s.cloud.Start(inst.ID); err != nil {
		t.Fatal(err)
	}
	s.setReady(t, inst.NodeName, corev1.ConditionTrue)
	poll(t, converge, "shutdown taint removed after start", s.hasTaintCond(inst.NodeName, cloudproviderapi.TaintNodeShutdown, false))
	if _, err := s.getNode(context.Background(), inst.NodeName); err != nil {
		t.Errorf("a stopped-then-started instance's node: %v", err)
	}
}

func (s *suiteCloud) terminatedInstance(t *testing.T) {
	inst := s.goesNotReady(t, s.cloud.Zones()[1], "terminated", s.cloud.Terminate)
	within(t, time.Now(), lifecycleBound, "terminated instance's NotReady node deleted", func(ctx context.Context) (bool, string, error) {
		_, err := s.getNode(ctx, inst.NodeName)
		return apierrors.IsNotFound(err), fmt.Sprint(err), nil
	})
}

// faultyReads fails every read the backend makes (throttled or 5xx) for
// faultWindow while a Node is NotReady on a running instance and another
// registers: the lifecycle controller must see errors, not "gone", and
// everything must converge once the cloud answers again.
func (s *suiteCloud) faultyReads(t *testing.T, kind string) {
	ctx := context.Background()
	notReady := s.launchNode(t, s.cloud.Zones()[0], "fault-notready-"+kind, "")
	s.waitInitialized(t, notReady.NodeName)
	late := s.launch(t, s.cloud.Zones()[1], "fault-late-"+kind)

	spec := cloudsim.FaultSpec{Op: s.cloud.ReadFaultOp()}
	switch kind {
	case "throttled":
		spec.ThrottleNext = 1 << 30
	default:
		spec.FailNext = 1 << 30
	}
	logFrom := len(s.ccm.log.String())
	callsBefore := s.cloud.Server().CallCount(spec.Op)
	if err := s.cloud.Server().SetFault(spec); err != nil {
		t.Fatal(err)
	}
	cleared := false
	clear := func() {
		if !cleared {
			s.cloud.Server().ClearFault(spec.Op)
			cleared = true
		}
	}
	t.Cleanup(clear)
	s.setReady(t, notReady.NodeName, corev1.ConditionFalse)
	s.registerNode(t, late.NodeName, "", "")

	deadline := time.Now().Add(faultWindow)
	for time.Now().Before(deadline) {
		if _, err := s.getNode(ctx, notReady.NodeName); err != nil {
			clear()
			t.Fatalf("node %s went while every cloud read was %s: %v", notReady.NodeName, kind, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if _, err := s.getNode(ctx, late.NodeName); err != nil {
		t.Errorf("node %s (registered during the fault) went: %v", late.NodeName, err)
	}
	// The lifecycle controller did ask and got an error, not "gone". Its
	// message is upstream's (k8s.io/cloud-provider nodelifecycle).
	if want := "error checking if node " + notReady.NodeName; !strings.Contains(s.ccm.log.String()[logFrom:], want) {
		t.Errorf("the lifecycle controller never saw the %s reads (no %q in the manager's log during the fault)", kind, want)
	}
	calls := s.cloud.Server().CallCount(spec.Op) - callsBefore
	clear()
	t.Logf("%d cloud reads answered %s during the %v fault", calls, kind, faultWindow)

	s.setReady(t, notReady.NodeName, corev1.ConditionTrue)
	n := s.waitInitialized(t, late.NodeName)
	want, err := s.cloud.ExpectedNode(late.ID)
	if err != nil {
		t.Fatal(err)
	}
	checkNode(t, n, want, false)
	for _, name := range []string{notReady.NodeName, late.NodeName} {
		if _, err := s.getNode(ctx, name); err != nil {
			t.Errorf("node %s after the fault: %v", name, err)
		}
	}
}

// ---- routes ----

func (s *suiteCloud) routes(t *testing.T) {
	zones := s.cloud.Zones()
	a := s.launchNode(t, zones[0], "route-a", s.podCIDR(1))
	b := s.launchNode(t, zones[1], "route-b", s.podCIDR(2))
	r := s.launch(t, zones[0], "route-renamed")
	pid, err := s.cloud.KubeletProviderID(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	renamed := s.registerNode(t, s.prefix+"conformance-route-renamed", pid, s.podCIDR(3))
	want := map[string]string{s.podCIDR(1): a.ID, s.podCIDR(2): b.ID, s.podCIDR(3): r.ID}
	ok := eventually(t, converge, "a route per pod CIDR, to the node's instance", func(context.Context) (bool, string, error) {
		got := s.suiteRoutes()
		return fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprintf("got %v, want %v", got, want), nil
	})
	if !ok {
		// Still prove the routes that were made go with their Nodes.
		t.Logf("continuing with the routes that exist")
	}
	for _, name := range []string{a.NodeName, b.NodeName, renamed} {
		s.deleteNode(t, name)
	}
	poll(t, converge, "routes removed with their nodes", func(context.Context) (bool, string, error) {
		got := s.suiteRoutes()
		return len(got) == 0, fmt.Sprint(got), nil
	})
}

// suiteRoutes are the cloud's routes of the routes scenario's pod CIDRs.
func (s *suiteCloud) suiteRoutes() map[string]string {
	out := map[string]string{}
	for cidr, id := range s.cloud.PodRoutes() {
		for i := 1; i <= 3; i++ {
			if cidr == s.podCIDR(i) {
				out[cidr] = id
			}
		}
	}
	return out
}

// eventually is poll that reports a timeout with Errorf, so the scenario
// can go on to check what does not depend on it.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, string, error)) bool {
	t.Helper()
	if last, err := waitFor(timeout, cond); err != nil {
		t.Errorf("timed out after %v waiting for %s; last seen: %s", timeout, what, last)
		return false
	}
	return true
}

// ---- Services ----

func lbService(name string, ports ...int32) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: confNS},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": name},
		},
	}
	for _, p := range ports {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{
			Name: fmt.Sprintf("p%d", p), Port: p, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP,
		})
	}
	return svc
}

func hasAddress(s *corev1.Service) (bool, string) {
	ing := s.Status.LoadBalancer.Ingress
	return len(ing) > 0 && (ing[0].IP != "" || ing[0].Hostname != ""), fmt.Sprint(ing)
}

// waitLB waits until the Service has exactly one load balancer with these
// frontend ports whose backends are exactly these instances.
func (s *suiteCloud) waitLB(t *testing.T, key types.NamespacedName, ports []int32, insts ...conformance.Instance) conformance.LoadBalancer {
	t.Helper()
	var want []string
	for _, i := range insts {
		want = append(want, i.ID)
	}
	sort.Strings(want)
	var lb conformance.LoadBalancer
	poll(t, converge, fmt.Sprintf("%s: one load balancer on ports %v with backends %v", key, ports, want), func(context.Context) (bool, string, error) {
		lbs := s.cloud.LoadBalancers(key)
		if len(lbs) != 1 {
			return false, fmt.Sprintf("%d load balancers: %+v", len(lbs), lbs), nil
		}
		lb = lbs[0]
		return slices.Equal(lb.Ports, ports) && slices.Equal(lb.Backends, want) && len(lb.Inconsistent) == 0, fmt.Sprintf("%+v", lb), nil
	})
	return lb
}

// waitInventory waits until the emulator's whole inventory equals before
// (kind and ID), and reports what was added or removed if it never does.
func waitInventory(t *testing.T, c conformance.Cloud, before []cloudsim.Resource, what string) {
	t.Helper()
	poll(t, converge, what, func(context.Context) (bool, string, error) {
		added, removed := cloudsim.DiffResources(before, c.Inventory())
		return len(added) == 0 && len(removed) == 0, fmt.Sprintf("added %s; removed %s", resList(added), resList(removed)), nil
	})
}

func resList(rs []cloudsim.Resource) string {
	if len(rs) == 0 {
		return "nothing"
	}
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%s %s (%s)", r.Kind, r.ID, r.Name))
	}
	return strings.Join(out, ", ")
}

func (s *suiteCloud) loadBalancers(t *testing.T) {
	ctx := context.Background()
	zones := s.cloud.Zones()
	// Every instance this group will use exists before the inventory
	// snapshot, so the leak check compares only what Services caused.
	// Nodes have no pod CIDR here: routes are the routes scenario's.
	var insts []conformance.Instance
	for i := range 4 {
		insts = append(insts, s.launch(t, zones[i%len(zones)], fmt.Sprintf("lb-%d", i)))
	}
	n1, n2, n3, n4 := insts[0], insts[1], insts[2], insts[3]
	for _, i := range []conformance.Instance{n1, n2} {
		s.registerNode(t, i.NodeName, "", "")
		s.waitInitialized(t, i.NodeName)
	}
	before := s.cloud.Inventory()

	// web lives through the subtests below, so its cleanup is the group's.
	web := s.createService(t, s.lbService("conf-web", 80, 443))
	t.Run("gets an address and the nodes as backends", func(t *testing.T) {
		s.waitService(t, web, "an address", hasAddress)
		s.waitLB(t, web, []int32{80, 443}, n1, n2)
	})

	t.Run("frontend ports follow the service's ports", func(t *testing.T) {
		svc, err := s.getService(ctx, web)
		if err != nil {
			t.Fatal(err)
		}
		svc.Spec.Ports = s.lbService(web.Name, 8080).Spec.Ports
		if _, err := s.admin.CoreV1().Services(web.Namespace).Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		s.waitLB(t, web, []int32{8080}, n1, n2)
	})

	t.Run("backends follow nodes joining and leaving", func(t *testing.T) {
		s.registerNode(t, n3.NodeName, "", "")
		s.waitLB(t, web, []int32{8080}, n1, n2, n3)
		s.deleteNode(t, n3.NodeName)
		s.waitLB(t, web, []int32{8080}, n1, n2)
	})

	t.Run("a service with a loadBalancerClass is left alone", func(t *testing.T) {
		classed := s.lbService("conf-classed", 80)
		class := "example.com/another-controller"
		classed.Spec.LoadBalancerClass = &class
		ck := s.createService(t, classed)
		sibling := s.createService(t, s.lbService("conf-sibling", 80))
		// The sibling, created with it, proves the controller has been
		// through both.
		s.waitService(t, sibling, "an address", hasAddress)
		s.waitLB(t, sibling, []int32{80}, n1, n2)
		got, err := s.getService(ctx, ck)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Status.LoadBalancer.Ingress) != 0 || len(got.Finalizers) != 0 {
			t.Errorf("classed service touched: status %v finalizers %v", got.Status.LoadBalancer.Ingress, got.Finalizers)
		}
		if rs := s.cloud.ServiceResources(ck); len(rs) != 0 {
			t.Errorf("cloud resources for a classed service: %s", resList(rs))
		}
		s.deleteServiceAndWait(t, sibling)
		s.deleteServiceAndWait(t, ck)
	})

	t.Run("type ClusterIP removes every cloud resource and LoadBalancer brings them back", func(t *testing.T) {
		setType := func(typ corev1.ServiceType) {
			s.updateService(t, web, func(svc *corev1.Service) {
				svc.Spec.Type = typ
				if typ == corev1.ServiceTypeClusterIP {
					for i := range svc.Spec.Ports {
						svc.Spec.Ports[i].NodePort = 0
					}
				}
			})
		}

		setType(corev1.ServiceTypeClusterIP)
		poll(t, converge, "no cloud resource left for the ClusterIP service", func(context.Context) (bool, string, error) {
			rs := s.cloud.ServiceResources(web)
			return len(rs) == 0, resList(rs), nil
		})
		s.waitService(t, web, "no load-balancer status", func(s *corev1.Service) (bool, string) {
			return len(s.Status.LoadBalancer.Ingress) == 0, fmt.Sprint(s.Status.LoadBalancer.Ingress)
		})
		setType(corev1.ServiceTypeLoadBalancer)
		s.waitService(t, web, "an address again", hasAddress)
		s.waitLB(t, web, []int32{8080}, n1, n2)
	})

	t.Run("names sharing a long prefix get distinct resources", func(t *testing.T) {
		prefix := "conf-long-" + strings.Repeat("x", 50) // 60 characters
		a := s.createService(t, s.lbService(prefix+"-a1", 80))
		b := s.createService(t, s.lbService(prefix+"-b2", 80))
		sa := s.waitService(t, a, "an address", hasAddress)
		sb := s.waitService(t, b, "an address", hasAddress)
		la := s.waitLB(t, a, []int32{80}, n1, n2)
		lb := s.waitLB(t, b, []int32{80}, n1, n2)
		if la.ID == lb.ID {
			t.Errorf("both services share load balancer %s", la.ID)
		}
		if fmt.Sprint(sa.Status.LoadBalancer.Ingress) == fmt.Sprint(sb.Status.LoadBalancer.Ingress) {
			t.Errorf("both services got the address %v", sa.Status.LoadBalancer.Ingress)
		}
		ids := map[string]bool{}
		for _, r := range s.cloud.ServiceResources(a) {
			ids[r.Kind+" "+r.ID] = true
		}
		for _, r := range s.cloud.ServiceResources(b) {
			if ids[r.Kind+" "+r.ID] {
				t.Errorf("%s %s belongs to both services", r.Kind, r.ID)
			}
		}
		s.deleteServiceAndWait(t, a)
		s.deleteServiceAndWait(t, b)
	})

	t.Run("a malformed annotation is a warning on that service only", func(t *testing.T) {
		k, v := s.cloud.MalformedAnnotation()
		badSvc := s.lbService("conf-bad", 80)
		badSvc.Annotations = map[string]string{k: v}
		bad := s.createService(t, badSvc)
		good := s.createService(t, s.lbService("conf-good", 80))
		poll(t, converge, "a Warning event on the bad service naming the annotation", func(ctx context.Context) (bool, string, error) {
			ws, err := s.warnings(ctx, bad)
			return slices.ContainsFunc(ws, func(w string) bool { return strings.Contains(w, k) }), fmt.Sprint(ws), err
		})
		s.waitService(t, good, "an address", hasAddress)
		s.waitLB(t, good, []int32{80}, n1, n2)
		if rs := s.cloud.ServiceResources(bad); len(rs) != 0 {
			t.Errorf("cloud resources for the service with a malformed annotation: %s", resList(rs))
		}
		if ws, err := s.warnings(ctx, good); err != nil || len(ws) != 0 {
			t.Errorf("warnings on the well-formed service: %v %v", ws, err)
		}
		s.deleteServiceAndWait(t, bad)
		s.deleteServiceAndWait(t, good)
	})

	t.Run("an upstream annotation with no effect here is a warning and the service is served", func(t *testing.T) {
		ignored, _ := s.cloud.UpstreamAnnotations()
		if len(ignored) == 0 {
			t.Skip("every upstream annotation of this cloud is served or refused: none is only warned about")
		}
		warnedSvc := s.lbService("conf-upstream-warned", 80)
		warnedSvc.Annotations = ignored
		warned := s.createService(t, warnedSvc)
		s.waitService(t, warned, "an address", hasAddress)
		s.waitLB(t, warned, []int32{80}, n1, n2)
		for k := range ignored {
			poll(t, converge, "a Warning event naming "+k, func(ctx context.Context) (bool, string, error) {
				ws, err := s.warnings(ctx, warned)
				return slices.ContainsFunc(ws, func(w string) bool {
					return strings.HasPrefix(w, "UnsupportedAnnotation: ") && strings.Contains(w, k) && strings.Contains(w, "has no effect here")
				}), fmt.Sprint(ws), err
			})
		}
		s.deleteServiceAndWait(t, warned)
	})

	t.Run("a service asking for what is not supported here (TLS) is refused and the others are served", func(t *testing.T) {
		_, refused := s.cloud.UpstreamAnnotations()
		refusedSvc := s.lbService("conf-upstream-refused", 443)
		refusedSvc.Annotations = refused
		ref := s.createService(t, refusedSvc)
		good := s.createService(t, s.lbService("conf-upstream-good", 80))
		// The map may hold companions of the refused annotation
		// (ssl-ports beside ssl-cert); one of them must be named.
		poll(t, converge, fmt.Sprintf("a Warning event on the refused service naming one of %v", refused), func(ctx context.Context) (bool, string, error) {
			ws, err := s.warnings(ctx, ref)
			return slices.ContainsFunc(ws, func(w string) bool {
				named := false
				for k := range refused {
					named = named || strings.Contains(w, k)
				}
				return named && strings.Contains(w, "is not supported here") && strings.Contains(w, "not provisioned")
			}), fmt.Sprint(ws), err
		})
		s.waitService(t, good, "an address", hasAddress)
		s.waitLB(t, good, []int32{80}, n1, n2)
		got, err := s.getService(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Status.LoadBalancer.Ingress) != 0 {
			t.Errorf("the refused service got an address: %v", got.Status.LoadBalancer.Ingress)
		}
		if rs := s.cloud.ServiceResources(ref); len(rs) != 0 {
			t.Errorf("cloud resources for the refused service: %s", resList(rs))
		}
		s.deleteServiceAndWait(t, ref)
		s.deleteServiceAndWait(t, good)
	})

	t.Run("a service provisioned while nodes join gets no warning", func(t *testing.T) {
		joining := s.createService(t, s.lbService("conf-joining", 80))
		s.registerNode(t, n3.NodeName, "", "")
		s.registerNode(t, n4.NodeName, "", "")
		s.waitService(t, joining, "an address", hasAddress)
		s.waitLB(t, joining, []int32{80}, n1, n2, n3, n4)
		ws, err := s.warnings(ctx, joining)
		if err != nil {
			t.Fatal(err)
		}
		if len(ws) != 0 {
			t.Errorf("Warning events on %s: %s", joining, strings.Join(ws, "; "))
		}
		s.deleteServiceAndWait(t, joining)
		s.deleteNode(t, n3.NodeName)
		s.deleteNode(t, n4.NodeName)
	})

	t.Run("deleting services leaves nothing behind", func(t *testing.T) {
		s.deleteServiceAndWait(t, web)
		waitInventory(t, s.cloud, before, "the cloud's whole inventory back to what it was before any Service")
	})
}

// ---- shared parts ----

// sharedPartsDeletedAtOnce: two Services of every kind of load balancer
// the cloud makes (its AdoptionShapes), which share that kind's cloud
// parts (a load balancer and its backend pool, a health check and its
// firewall rule, an instance group, a node security group's rules), and,
// where Services can ask to share one load balancer (conformance.Sharer),
// one sharing the first's, are served, then deleted at once, so that the
// manager's service workers (--concurrent-service-syncs, 10 by default
// here: cmd/multicloud-ccm) delete them side by side. Every shared part must be
// decided from what the cloud holds after the other workers' writes: the
// cloud's inventory goes back to what it was before them, and no Service
// gets a Warning on the way.
func (s *suiteCloud) sharedPartsDeletedAtOnce(t *testing.T) {
	ctx := context.Background()
	zones := s.cloud.Zones()
	var insts []conformance.Instance
	for i := range 2 {
		inst := s.launch(t, zones[i%len(zones)], fmt.Sprintf("share-%d", i))
		s.registerNode(t, inst.NodeName, "", "")
		s.waitInitialized(t, inst.NodeName)
		insts = append(insts, inst)
	}
	before := s.cloud.Inventory()

	shapes := s.adapter.Features().AdoptionShapes
	if shapes == nil {
		shapes = map[string]map[string]string{"": nil}
	}
	var keys []types.NamespacedName
	port := int32(80)
	for _, shape := range slices.Sorted(maps.Keys(shapes)) {
		for i := range 2 {
			spec := s.lbService(fmt.Sprintf("conf-share%s-%d", shape, i), port)
			for k, v := range shapes[shape] {
				metav1.SetMetaDataAnnotation(&spec.ObjectMeta, k, v)
			}
			keys = append(keys, s.createService(t, spec))
			port++
		}
	}
	for _, k := range keys {
		s.waitService(t, k, "an address", hasAddress)
	}
	if sh, ok := s.cloud.(conformance.Sharer); ok {
		first, err := s.getService(ctx, keys[0])
		if err != nil {
			t.Fatal(err)
		}
		spec := s.lbService("conf-share-sharing", port)
		for k, v := range sh.ShareAnnotations(first) {
			metav1.SetMetaDataAnnotation(&spec.ObjectMeta, k, v)
		}
		k := s.createService(t, spec)
		s.waitService(t, k, "the shared address", func(svc *corev1.Service) (bool, string) {
			return ingressAddrs(svc.Status.LoadBalancer) == ingressAddrs(first.Status.LoadBalancer), ingressAddrs(svc.Status.LoadBalancer)
		})
		keys = append(keys, k)
	}
	var uids []types.UID
	for _, k := range keys {
		svc, err := s.getService(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		uids = append(uids, svc.UID)
	}

	slowWrites(t, s.cloud)
	for _, k := range keys {
		s.deleteService(t, k)
	}
	for _, k := range keys {
		s.deleteServiceAndWait(t, k)
	}
	waitInventory(t, s.cloud, before, "the cloud's whole inventory back to what it was before the Services")
	for i, k := range keys {
		ws, err := s.warningsOf(ctx, k.Namespace, uids[i])
		if err != nil || len(ws) != 0 {
			t.Errorf("warnings on %s: %v %v", k, ws, err)
		}
	}
	for _, inst := range insts {
		s.deleteNode(t, inst.NodeName)
	}
}

// slowWrites makes every write to the cloud take 100 ms until the test
// ends.
func slowWrites(t *testing.T, c conformance.Cloud) {
	t.Helper()
	spec := cloudsim.FaultSpec{Op: cloudsim.MutatingOps, Latency: 100 * time.Millisecond}
	if err := c.Server().SetFault(spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Server().ClearFault(spec.Op) })
}

// ---- drift repair ----

// driftRepair: one part of a Service's load balancer deleted behind the
// manager's back, then the whole of it, are each made again within a few
// repair periods (--load-balancer-repair-period), with an Event saying
// what was wrong, the Service's address following a new load balancer,
// nothing made twice, and nothing left once the Service goes.
func (s *suiteCloud) driftRepair(t *testing.T) {
	dm, ok := s.cloud.(conformance.DriftMaker)
	if !ok {
		t.Skipf("the %s adapter cannot change a load balancer behind the manager's back yet (conformance.DriftMaker)", s.adapter.Name())
	}
	zones := s.cloud.Zones()
	var insts []conformance.Instance
	for i := range 2 {
		insts = append(insts, s.launch(t, zones[i%len(zones)], fmt.Sprintf("drift-%d", i)))
	}
	for _, i := range insts {
		s.registerNode(t, i.NodeName, "", "")
		s.waitInitialized(t, i.NodeName)
	}
	before := s.cloud.Inventory()
	k := s.createService(t, s.lbService("conf-drift", 80, 443))
	first := ingressAddrs(s.waitService(t, k, "an address", hasAddress).Status.LoadBalancer)
	s.waitLB(t, k, []int32{80, 443}, insts...)

	// The check compares with a listing after the last sync: wait for it.
	listings := func() int { return s.metricSum("multicloud_ccm_lb_drift_checks_total", `result="ok"`) }
	settled := func(what string) {
		t.Helper()
		from := listings()
		poll(t, converge, "two listings of the cloud "+what, func(context.Context) (bool, string, error) {
			n := listings()
			return n >= from+2, fmt.Sprintf("%d listings", n-from), nil
		})
	}
	repaired := func(after time.Time, what string) {
		t.Helper()
		// The Event follows the repair's ensure, which may still wait for
		// the new load balancer after it looks whole: count from here.
		had, _, _ := s.repairEvents(context.Background(), k)
		within(t, after, 5*repairPeriod+10*time.Second, what+" repaired", func(ctx context.Context) (bool, string, error) {
			lbs := s.cloud.LoadBalancers(k)
			if len(lbs) != 1 {
				return false, fmt.Sprintf("%d load balancers", len(lbs)), nil
			}
			lb := lbs[0]
			return slices.Equal(lb.Ports, []int32{80, 443}) && len(lb.Backends) == len(insts) && len(lb.Inconsistent) == 0, fmt.Sprintf("%+v", lb), nil
		})
		poll(t, converge, "a LoadBalancerRepaired Event on "+k.String(), func(ctx context.Context) (bool, string, error) {
			n, msgs, err := s.repairEvents(ctx, k)
			return n > had, msgs, err
		})
	}

	settled("after the Service's sync")
	part, err := dm.DeletePart(k)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("deleted %s", part)
	repaired(time.Now(), part)
	s.waitLB(t, k, []int32{80, 443}, insts...)

	settled("after the repair")
	if err := dm.DeleteLoadBalancer(k); err != nil {
		t.Fatal(err)
	}
	repaired(time.Now(), "the whole load balancer")
	s.waitLB(t, k, []int32{80, 443}, insts...)
	svc := s.waitService(t, k, "an address", hasAddress)
	t.Logf("address %s before, %s after the whole load balancer was made again", first, ingressAddrs(svc.Status.LoadBalancer))
	if n, msgs, _ := s.repairEvents(context.Background(), k); n < 2 {
		t.Errorf("LoadBalancerRepaired events: %s", msgs)
	}
	if ws, err := s.warnings(context.Background(), k); err != nil || len(ws) != 0 {
		t.Errorf("Warning events on %s: %v %v", k, ws, err)
	}
	s.deleteServiceAndWait(t, k)
	waitInventory(t, s.cloud, before, "the cloud's whole inventory back to what it was before the Service")
}

// Drift repair's series on /metrics (controllers/lbrepair).
const (
	lbDriftChecksMetric = "multicloud_ccm_lb_drift_checks_total"
	lbRepairsMetric     = "multicloud_ccm_lb_repairs_total"
)

// pastRepairs waits until drift repair has listed the cloud three more
// times with the result match (`result="ok"`, `result="error"`): past
// the point where any repair due now would have been made. The first
// listing takes the baseline of a sync made before it, the second
// compares with it and repairs in the same check, and the counter moves
// as a listing starts, so the third's count says the second's repairs
// are done.
func (s *suiteCloud) pastRepairs(t *testing.T, match, what string) {
	t.Helper()
	from := s.metricSum(lbDriftChecksMetric, match)
	poll(t, converge, "three listings by drift repair "+what, func(context.Context) (bool, string, error) {
		n := s.metricSum(lbDriftChecksMetric, match) - from
		return n >= 3, fmt.Sprintf("%d listings", n), nil
	})
}

// metricSum adds up the manager's samples of the metric whose labels
// contain match and this cloud's provider label.
func (s *suiteCloud) metricSum(name, match string) int {
	code, body, err := s.ccm.get("/metrics", true)
	if err != nil || code != 200 {
		return 0
	}
	sum := 0
	for _, l := range strings.Split(body, "\n") {
		if !strings.HasPrefix(l, name+"{") || !strings.Contains(l, match) || !strings.Contains(l, `provider="`+s.adapter.Name()+`"`) {
			continue
		}
		f := strings.Fields(l)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum += int(v)
		}
	}
	return sum
}

// ---- orphans ----

// orphanCleanup: a Service deleted while the manager was down, its
// finalizer removed by hand, leaves its load balancer behind. The manager
// (orphans: report, the default) counts it on /metrics and deletes
// nothing; the dry-run command lists the same. Restarted with orphans:
// delete while every cloud read is throttled for a minute, it repairs
// nothing and deletes nothing; once reads answer, it deletes exactly what
// the Service had after the grace period, and the cloud is as before the
// Service: another Service's load balancer and what it shares with the
// gone one, a load balancer another cluster made in the same account for
// a Service this cluster does not have, and the address the user
// reserved and named on the gone Service, all stay.
func orphanCleanup(t *testing.T, cl *cluster, a conformance.Adapter) {
	ctx := context.Background()
	s := startSuiteCloud(t, cl, a, "orphans")
	if s.metricSum("multicloud_ccm_orphan_scans_total", "") == 0 {
		time.Sleep(3 * orphanScanPeriod)
		if s.metricSum("multicloud_ccm_orphan_scans_total", "") == 0 {
			t.Fatalf("the %s backend does not list its load balancers' parts yet (inventory.Inventory): no orphan scans", a.Name())
		}
	}
	zones := s.cloud.Zones()
	var insts []conformance.Instance
	for i := range 2 {
		insts = append(insts, s.launchNode(t, zones[i%len(zones)], fmt.Sprintf("orphan-%d", i), ""))
	}
	for _, i := range insts {
		s.waitInitialized(t, i.NodeName)
	}
	// Another cluster's load balancer, tagged or named for it the way its
	// (upstream) manager makes them, for a Service this cluster has not.
	other := s.lbService("conf-orphan-other", 82)
	other.UID = uuid.NewUUID()
	other.Spec.Ports[0].NodePort = 31982
	if _, err := s.cloud.MakeUpstreamLoadBalancer(other, "conf-other-cluster", insts); err != nil {
		t.Fatalf("another cluster's load balancer: %v", err)
	}
	// An address the user reserved, named on the Service that goes.
	var user *conformance.UserAddress
	if ua, ok := s.cloud.(conformance.UserAddresser); ok {
		u, err := ua.ReserveUserAddress()
		if err != nil {
			t.Fatalf("reserve a user address: %v", err)
		}
		user = &u
	} else {
		t.Errorf("the %s adapter cannot reserve a user address (conformance.UserAddresser)", a.Name())
	}
	// A Service that stays: its load balancer, and what Services share
	// (a cluster's shared health check), are no orphans.
	live := s.createService(t, s.lbService("conf-orphan-live", 81))
	s.waitService(t, live, "an address", hasAddress)
	s.waitLB(t, live, []int32{81}, insts...)
	before := s.cloud.Inventory()
	spec := s.lbService("conf-orphan", 80)
	if user != nil {
		user.Use(spec)
	}
	k := s.createService(t, spec)
	svc := s.waitService(t, k, "an address", hasAddress)
	if user != nil && user.IP != "" && ingressAddrs(svc.Status.LoadBalancer) != user.IP {
		t.Errorf("the Service's address is %s, not the user's %s", ingressAddrs(svc.Status.LoadBalancer), user.IP)
	}
	s.waitLB(t, k, []int32{80}, insts...)
	res := s.cloud.ServiceResources(k)

	// The manager is down as the Service goes, and someone removes the
	// finalizer that would have had it delete the load balancer.
	s.ccm.stop()
	s.updateService(t, k, func(svc *corev1.Service) { svc.Finalizers = nil })
	s.deleteServiceAndWait(t, k)

	s.ccm = s.startCCM(t, "orphans-report")
	orphaned := func() int { return s.metricSum("multicloud_ccm_orphaned_resources", "") }
	poll(t, converge, "the orphans counted on /metrics", func(context.Context) (bool, string, error) {
		n := orphaned()
		return n > 0, fmt.Sprintf("%d orphans", n), nil
	})
	scans := s.metricSum("multicloud_ccm_orphan_scans_total", `result="ok"`)
	poll(t, converge, "more scans past the grace period", func(context.Context) (bool, string, error) {
		n := s.metricSum("multicloud_ccm_orphan_scans_total", `result="ok"`)
		return n >= scans+int(orphanGrace/orphanScanPeriod)+2, fmt.Sprintf("%d scans", n-scans), nil
	})
	if got := s.cloud.ServiceResources(k); resList(got) != resList(res) {
		t.Errorf("report mode changed the orphans: had %s, now %s", resList(res), resList(got))
	}
	count := orphaned()
	t.Logf("%d orphans counted; the Service had %s", count, resList(res))

	// The dry run lists the same, from outside the cluster, and nothing
	// of the other cluster's.
	rows := s.dryRunOrphans(t, cl, "report")
	n := 0
	for _, r := range rows {
		switch {
		case strings.Contains(r, other.Name):
			t.Errorf("the dry run lists another cluster's resource as an orphan: %s", r)
		case (strings.Contains(r, k.String()) || strings.Contains(r, "uid "+string(svc.UID)[:35])) && strings.Contains(r, "its Service does not exist"):
			// A part the cloud marks with the Service's UID alone (an
			// Azure frontend on the user's address) is listed by it,
			// 31 of its 32 hex digits (the a<uid> name's).
			n++
		default:
			t.Errorf("the dry run lists what is no orphan of %s: %s", k, r)
		}
	}
	if n != count {
		t.Errorf("the dry run lists %d orphans of %s, the manager counts %d:\n%s", n, k, count, strings.Join(rows, "\n"))
	}

	// Delete mode, then every read throttled for a minute: a listing that
	// fails is no evidence, so nothing is repaired and nothing is deleted;
	// the other Service's load balancer is untouched. The fault starts
	// once the manager serves (a backend must reach its cloud to start at
	// all), before its orphans' grace period can have passed.
	s.ccm.stop()
	s.cfg.Orphans = "delete"
	started := time.Now()
	s.ccm = s.startCCM(t, "orphans-delete")
	poll(t, converge, "the manager serving /metrics", func(context.Context) (bool, string, error) {
		code, _, err := s.ccm.get("/metrics", true)
		return err == nil && code == 200, fmt.Sprint("status ", code), err
	})
	fault := cloudsim.FaultSpec{Op: s.cloud.ReadFaultOp(), ThrottleNext: 1 << 30}
	if err := s.cloud.Server().SetFault(fault); err != nil {
		t.Fatal(err)
	}
	cleared := false
	clear := func() {
		if !cleared {
			s.cloud.Server().ClearFault(fault.Op)
			cleared = true
		}
	}
	t.Cleanup(clear)
	if took := time.Since(started); took >= orphanGrace {
		t.Fatalf("the manager took %v to serve, past the %v grace period: the scenario cannot throttle reads before deletions are due", took, orphanGrace)
	}
	calls := s.cloud.Server().Calls()
	repairs := s.metricSum("multicloud_ccm_lb_repairs_total", "")
	deletions := s.metricSum("multicloud_ccm_orphan_deletions_total", "")
	throttled := time.Now().Add(throttleWindow)
	for time.Now().Before(throttled) {
		if got := s.cloud.ServiceResources(k); resList(got) != resList(res) {
			clear()
			t.Fatalf("orphans deleted while every read was throttled: had %s, now %s", resList(res), resList(got))
		}
		time.Sleep(time.Second)
	}
	repairs = s.metricSum("multicloud_ccm_lb_repairs_total", "") - repairs
	deletions = s.metricSum("multicloud_ccm_orphan_deletions_total", "") - deletions
	ev, _, err := s.repairEvents(ctx, live)
	if err != nil {
		t.Fatal(err)
	}
	if repairs != 0 || deletions != 0 || ev != 0 {
		t.Errorf("while every read was throttled: %d repairs, %d orphan deletions, %d LoadBalancerRepaired events; want none", repairs, deletions, ev)
	}
	reads, writes := map[string]int{}, map[string]int{}
	srv := s.cloud.Server()
	for op, n := range srv.Calls() {
		n -= calls[op]
		switch {
		case n == 0:
		case !srv.Cloud().Mutating(op):
			reads[op] = n
		case !strings.Contains(strings.ToLower(op), "token"):
			// Signing in again (a token) changes nothing in the cloud.
			writes[op] = n
		}
	}
	if len(writes) != 0 {
		t.Errorf("cloud writes while every read was throttled, want none: %v", writes)
	}
	t.Logf("cloud reads throttled in %v: %v", throttleWindow, reads)
	clear()

	// Reads answer again: the orphans, orphans for longer than the grace
	// period by now, are deleted, and nothing else.
	waitInventory(t, s.cloud, before, "the orphans deleted: the cloud's whole inventory back to what it was before the Service")
	// What stays listed is what orphan cleanup keeps (the user's address,
	// while the cloud still ties it to the gone Service), and the count
	// says so too.
	poll(t, converge, "only kept orphans counted", func(context.Context) (bool, string, error) {
		rows := s.dryRunOrphans(t, cl, "delete")
		for _, r := range rows {
			if !strings.Contains(r, " kept ") {
				return false, "listed: " + r, nil
			}
		}
		n := orphaned()
		return n == len(rows), fmt.Sprintf("%d counted, %d kept listed", n, len(rows)), nil
	})
	s.waitLB(t, live, []int32{81}, insts...)
	s.deleteServiceAndWait(t, live)
	if s.ccm.exited() {
		t.Fatalf("the manager exited: %v", s.ccm.Err())
	}
}

// dryRunOrphans runs `multicloud-ccm orphans` against this cloud and the
// run's cluster and returns its rows (no header).
func (s *suiteCloud) dryRunOrphans(t *testing.T, cl *cluster, name string) []string {
	t.Helper()
	kubeconfig, err := cl.cp.WriteKubeconfig(cl.cp.Admin, "admin-orphans.kubeconfig")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(release(t), "orphans", "--kubeconfig", kubeconfig,
		writeFile(t, s.adapter.Name()+"-orphans-"+name+"-cloud-config.yaml", s.cfg.YAML())).CombinedOutput()
	if err != nil {
		t.Fatalf("multicloud-ccm orphans: %v\n%s", err, out)
	}
	for _, secret := range s.cfg.Secrets {
		if strings.Contains(string(out), secret) {
			t.Errorf("the dry run printed a credential from the cloud-config")
		}
	}
	var rows []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n")[1:] {
		if strings.HasPrefix(l, s.adapter.Name()+" ") {
			rows = append(rows, l)
		}
	}
	return rows
}

// ---- crash safety ----

// crashSafety kills the manager serving cs (one cloud, or a hybrid run's
// clouds sharing it) while it provisions 30 Services spread over them,
// starts it again with restart, and checks every Service converges with
// one load balancer of its cloud and that deleting them leaves every
// cloud as it was.
func crashSafety(t *testing.T, cs []*suiteCloud, restart func(t *testing.T)) {
	ctx := context.Background()
	cl := cs[0].cluster
	insts := map[*suiteCloud][]conformance.Instance{}
	before := map[*suiteCloud][]cloudsim.Resource{}
	for _, s := range cs {
		zones := s.cloud.Zones()
		for i := range 2 {
			insts[s] = append(insts[s], s.launchNode(t, zones[i%len(zones)], fmt.Sprintf("crash-%d", i), ""))
		}
	}
	for _, s := range cs {
		for _, i := range insts[s] {
			s.waitInitialized(t, i.NodeName)
		}
		before[s] = s.cloud.Inventory()
	}
	mutating := func() int {
		n := 0
		for _, s := range cs {
			n += s.cloud.Server().CallCount(cloudsim.MutatingOps)
		}
		return n
	}

	seed := time.Now().UnixNano()
	if v := envSeed(); v != 0 {
		seed = v
	}
	// The kill lands after the 1st to 20th mutating call: every cloud
	// needs at least one write per Service, so 30 Services are never all
	// provisioned by then, however well a backend batches (a time-based
	// kill let Azure's coalesced writes finish first).
	killAt := int(seed%20) + 1
	if killAt < 1 {
		killAt = -killAt + 2
	}
	t.Logf("crash seed %d (CONFORMANCE_SEED=%d reproduces): SIGKILL after mutating cloud call %d", seed, seed, killAt)
	for _, s := range cs {
		if err := s.cloud.Server().SetFault(cloudsim.FaultSpec{Op: cloudsim.MutatingOps, Latency: 200 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		s.cloud.Server().ResetCalls()
	}

	const n = 30
	type crashed struct {
		key types.NamespacedName
		s   *suiteCloud
	}
	var keys []crashed
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := range n {
		s := cs[i%len(cs)]
		wg.Go(func() {
			svc := s.lbService(fmt.Sprintf("conf-crash-%02d", i), 80)
			if _, err := s.admin.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			keys = append(keys, crashed{types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}, s})
			mu.Unlock()
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, k := range keys {
			_ = cl.admin.CoreV1().Services(k.key.Namespace).Delete(context.Background(), k.key.Name, metav1.DeleteOptions{})
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	// Watched closely (a poll every 250 ms would let a fast backend
	// overshoot by many calls).
	for deadline := time.Now().Add(converge); mutating() < killAt; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("provisioning never reached mutating call %d (%d made)", killAt, mutating())
		}
	}
	if err := cs[0].ccm.Kill(); err != nil {
		t.Fatal(err)
	}
	done := 0
	for _, k := range keys {
		if svc, err := cl.getService(ctx, k.key); err == nil && len(svc.Status.LoadBalancer.Ingress) > 0 {
			done++
		}
	}
	t.Logf("killed with %d/%d services provisioned and %d mutating calls made", done, n, mutating())
	if done == n {
		t.Errorf("the kill came after provisioning finished; it proves nothing")
	}
	for _, s := range cs {
		s.cloud.Server().ClearFaults()
	}
	restart(t)

	for _, k := range keys {
		cl.waitService(t, k.key, "an address after the restart", hasAddress)
	}
	for _, k := range keys {
		k.s.waitLB(t, k.key, []int32{80}, insts[k.s]...)
	}
	// A duplicate made before the crash and never adopted would show as
	// a second load balancer above or as an untagged leftover below.
	for _, k := range keys {
		cl.deleteService(t, k.key)
	}
	for _, k := range keys {
		poll(t, converge, "service "+k.key.String()+" gone", func(ctx context.Context) (bool, string, error) {
			_, err := cl.getService(ctx, k.key)
			return apierrors.IsNotFound(err), fmt.Sprint(err), nil
		})
	}
	for _, s := range cs {
		waitInventory(t, s.cloud, before[s], "the "+s.adapter.Name()+" inventory back to what it was before the 30 Services")
	}
	if cs[0].ccm.exited() {
		t.Fatalf("the restarted manager exited: %v", cs[0].ccm.Err())
	}
}

// ---- switching from the upstream CCM ----

// adoption is the in-place switch: Services whose load balancers the
// upstream CCM made (the adapter makes them through the emulator's API
// the way upstream does, one per shape it makes, while no manager runs)
// keep their addresses and load balancers when this manager starts,
// follow port and node changes on them, and leave nothing of either shape
// when deleted.
func adoption(t *testing.T, cl *cluster, a conformance.Adapter) {
	ctx := context.Background()
	// The cloud-config import-config makes from the upstream file.
	s := startSuiteCloud(t, cl, a, "adopt", func(o *conformance.Options) { o.Switched = true })
	zones := s.cloud.Zones()
	var insts []conformance.Instance
	for i := range 3 {
		insts = append(insts, s.launch(t, zones[i%len(zones)], fmt.Sprintf("adopt-%d", i)))
	}
	n1, n2, n3 := insts[0], insts[1], insts[2]
	for _, i := range []conformance.Instance{n1, n2} {
		s.registerNode(t, i.NodeName, "", "")
		s.waitInitialized(t, i.NodeName)
	}
	before := s.cloud.Inventory()
	// The upstream CCM's turn: this manager is not running.
	s.ccm.stop()

	shapes := a.Features().AdoptionShapes
	if shapes == nil {
		shapes = map[string]map[string]string{"": nil}
	}
	type adopted struct {
		key        types.NamespacedName
		up         conformance.UpstreamLoadBalancer
		wantStatus string
	}
	var svcs []adopted
	// Two of each shape, so that the parts upstream shares between
	// Services of a shape (AWS's NLB MTU rule, Azure's load balancer and
	// its NIC pool, GCE's node health check and instance groups) are
	// adopted and, at the end, deleted by several workers at once.
	for _, shape := range slices.Sorted(maps.Keys(shapes)) {
		for copy := range 2 {
			name := "conf-adopted"
			if shape != "" {
				name += "-" + shape
			}
			if copy > 0 {
				name += fmt.Sprint("-", copy)
			}
			spec := lbService(name, 80)
			for k, v := range shapes[shape] {
				metav1.SetMetaDataAnnotation(&spec.ObjectMeta, k, v)
			}
			key := s.createService(t, spec)
			up := s.playUpstream(t, key, []conformance.Instance{n1, n2})
			svcs = append(svcs, adopted{key: key, up: up, wantStatus: ingressAddrs(up.Status)})
		}
	}
	made := s.cloud.Inventory()
	if st, ok := s.cloud.(conformance.UpstreamClusterState); ok {
		for _, cm := range st.UpstreamConfigMaps() {
			if _, err := s.admin.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = s.admin.CoreV1().ConfigMaps(cm.Namespace).Delete(context.Background(), cm.Name, metav1.DeleteOptions{})
			})
		}
	}

	s.ccm = s.startCCM(t, "adopt-switched")
	sameLB := func(t *testing.T, ports []int32, backends ...conformance.Instance) {
		t.Helper()
		for _, sv := range svcs {
			lb := s.waitLB(t, sv.key, ports, backends...)
			if lb.ID != sv.up.ID {
				t.Errorf("%s: load balancer %s serves the Service, not the upstream one %s", sv.key, lb.ID, sv.up.ID)
			}
			got, err := s.getService(ctx, sv.key)
			if err != nil {
				t.Fatal(err)
			}
			if st := ingressAddrs(got.Status.LoadBalancer); st != sv.wantStatus {
				t.Errorf("%s: the Service's address changed from %s to %s", sv.key, sv.wantStatus, st)
			}
		}
		added, _ := cloudsim.DiffResources(made, s.cloud.Inventory())
		for _, r := range added {
			for _, sv := range svcs {
				if slices.Contains(sv.up.Exclusive, r.Kind) {
					t.Errorf("a second %s appeared: %s (%s)", r.Kind, r.ID, r.Name)
					break
				}
			}
		}
	}
	t.Run("keeps its load balancer and address", func(t *testing.T) {
		for _, sv := range svcs {
			poll(t, converge, "the switched manager synced "+sv.key.String(), func(ctx context.Context) (bool, string, error) {
				evs, err := s.admin.CoreV1().Events(sv.key.Namespace).List(ctx, metav1.ListOptions{
					FieldSelector: "involvedObject.kind=Service,involvedObject.name=" + sv.key.Name + ",reason=EnsuredLoadBalancer",
				})
				if err != nil {
					return false, "", err
				}
				return len(evs.Items) > 0, fmt.Sprintf("%d EnsuredLoadBalancer events", len(evs.Items)), nil
			})
		}
		sameLB(t, []int32{80}, n1, n2)
		_, removed := cloudsim.DiffResources(made, s.cloud.Inventory())
		for _, r := range removed {
			for _, sv := range svcs {
				if slices.Contains(sv.up.Kept, r.Kind) {
					t.Errorf("adopting removed a part: %s %s (%s)", r.Kind, r.ID, r.Name)
					break
				}
			}
		}
		for _, sv := range svcs {
			if ws, err := s.warnings(ctx, sv.key); err != nil || len(ws) != 0 {
				t.Errorf("warnings on the adopted Service %s: %v %v", sv.key, ws, err)
			}
		}
	})
	t.Run("a port change is applied to it", func(t *testing.T) {
		for _, sv := range svcs {
			err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
				cur, err := s.getService(ctx, sv.key)
				if err != nil {
					return false, err
				}
				cur.Spec.Ports = lbService(sv.key.Name, 8080).Spec.Ports
				_, err = s.admin.CoreV1().Services(sv.key.Namespace).Update(ctx, cur, metav1.UpdateOptions{})
				if apierrors.IsConflict(err) {
					return false, nil
				}
				return err == nil, err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		sameLB(t, []int32{8080}, n1, n2)
	})
	t.Run("a joining node is added to it", func(t *testing.T) {
		s.registerNode(t, n3.NodeName, "", "")
		sameLB(t, []int32{8080}, n1, n2, n3)
	})
	t.Run("deleting the services at once leaves nothing of any shape and no warning", func(t *testing.T) {
		var uids []types.UID
		for _, sv := range svcs {
			svc, err := s.getService(ctx, sv.key)
			if err != nil {
				t.Fatal(err)
			}
			uids = append(uids, svc.UID)
		}
		// Writes that take a moment, as a real cloud's do, so that the
		// workers' deletions overlap: each one's read of a shared part
		// comes before the others' writes.
		slowWrites(t, s.cloud)
		for _, sv := range svcs {
			s.deleteService(t, sv.key)
		}
		for _, sv := range svcs {
			s.deleteServiceAndWait(t, sv.key)
		}
		waitInventory(t, s.cloud, before, "the cloud's whole inventory back to what it was before the upstream load balancers")
		for i, sv := range svcs {
			if ws, err := s.warningsOf(ctx, sv.key.Namespace, uids[i]); err != nil || len(ws) != 0 {
				t.Errorf("warnings on %s: %v %v", sv.key, ws, err)
			}
		}
	})
	if s.ccm.exited() {
		t.Fatalf("the switched manager exited: %v", s.ccm.Err())
	}
}

// ingressAddrs is what clients use of a load balancer status: its IPs and
// hostnames.
func ingressAddrs(st corev1.LoadBalancerStatus) string {
	var out []string
	for _, in := range st.Ingress {
		out = append(out, in.IP+in.Hostname)
	}
	return strings.Join(out, ",")
}

// playUpstream plays the upstream CCM for the Service (this manager must
// not be running): its load balancer made through the adapter, with the
// backends, and what upstream leaves on the Service (its annotations, the
// cleanup finalizer and its own, the status).
func (s *suiteCloud) playUpstream(t *testing.T, key types.NamespacedName, backends []conformance.Instance) conformance.UpstreamLoadBalancer {
	t.Helper()
	ctx := context.Background()
	svc, err := s.getService(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	up, err := s.cloud.MakeUpstreamLoadBalancer(svc, s.cfg.ClusterID, backends)
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	for k, v := range up.Annotations {
		metav1.SetMetaDataAnnotation(&svc.ObjectMeta, k, v)
	}
	svc.Finalizers = append(svc.Finalizers, "service.kubernetes.io/load-balancer-cleanup")
	svc.Finalizers = append(svc.Finalizers, up.Finalizers...)
	if svc, err = s.admin.CoreV1().Services(key.Namespace).Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc.Status.LoadBalancer = up.Status
	if _, err = s.admin.CoreV1().Services(key.Namespace).UpdateStatus(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return up
}

// envSeed reads CONFORMANCE_SEED, so a failed crash run can be replayed.
func envSeed() int64 {
	v, _ := strconv.ParseInt(os.Getenv("CONFORMANCE_SEED"), 10, 64)
	return v
}
