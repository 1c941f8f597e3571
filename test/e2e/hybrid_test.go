package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/multicloud-ccm/multicloud-ccm/providers/compose/hybrid"
	"github.com/multicloud-ccm/multicloud-ccm/test/ccmproc"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

// The hybrid cloud-config's keys a cluster uses.
const (
	providerLabel      = hybrid.LabelProvider
	providerAnnotation = hybrid.AnnotationLoadBalancerProvider
)

// hybridPairs are the hybrid runs of the suite: each pair's emulators at
// once behind one manager. Together they cover all four backends; the
// first of a pair is its default load-balancer cloud.
var hybridPairs = [][2]string{{"openstack", "aws"}, {"gce", "azure"}}

// hybridSuite is one manager serving several clouds from one cloud-config.
// Each cloud's scenarios use their own namespace, Node names and pod
// CIDRs, so the clouds' scenarios run side by side in the one cluster.
type hybridSuite struct {
	// cluster is the run's control plane, every cloud's too.
	*cluster
	name   string
	clouds []*suiteCloud
	path   string
	args   []string
}

// startHybridSuite starts an emulator per adapter (one clusterID, as one
// cluster has) and the release binary serving all of them; the first
// adapter's cloud is the default load-balancer cloud, the others' Services
// carry the annotation naming theirs.
func startHybridSuite(t *testing.T, cl *cluster, run string, adapters ...conformance.Adapter) *hybridSuite {
	t.Helper()
	var names []string
	for _, a := range adapters {
		names = append(names, a.Name())
	}
	pair := strings.Join(names, "-")
	hs := &hybridSuite{cluster: cl, name: pair + "-" + run}
	clusterID := "conf-hy-" + pair
	var cfgs []conformance.CloudConfig
	var extra []string
	routes := false
	for i, a := range adapters {
		c, err := a.Start(conformance.Options{ClusterID: clusterID, Routes: a.Features().Routes, QuickErrors: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		s := &suiteCloud{
			cluster: cl, adapter: a, cloud: c, cfg: c.Config(),
			prefix: "hy-" + a.Name() + "-", ns: "hy-" + a.Name(),
			routeNet:  strconv.Itoa(11 + i),
			foreignID: "k3s://conformance-foreign",
		}
		if i > 0 {
			s.annotations = map[string]string{providerAnnotation: a.Name()}
		}
		s.ensureNamespace(t, s.ns)
		routes = routes || a.Features().Routes
		cfgs = append(cfgs, s.cfg)
		for _, arg := range c.ExtraArgs() {
			if !slices.Contains(extra, arg) {
				extra = append(extra, arg)
			}
		}
		hs.clouds = append(hs.clouds, s)
	}
	hs.path = writeFile(t, "hybrid-"+hs.name+"-cloud-config.yaml", conformance.HybridYAML(clusterID, cfgs...))
	hs.args = append([]string{
		"--leader-elect=false",
		"--cluster-cidr=10.244.0.0/16",
		fmt.Sprintf("--configure-cloud-routes=%t", routes),
		"--allocate-node-cidrs=false",
		"--node-monitor-period=1s",
		"--route-reconciliation-period=2s",
		"--load-balancer-repair-period=" + repairPeriod.String(),
	}, extra...)
	hs.startCCM(t, run)
	return hs
}

// startCCM starts the manager and hands it to every cloud's scenarios.
func (hs *hybridSuite) startCCM(t *testing.T, name string) {
	t.Helper()
	data, err := os.ReadFile(hs.path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range hs.clouds {
		s.enforcePolicy(t, string(data), hs.args)
	}
	p := hs.cluster.startCCM(t, "ccm-hybrid-"+hs.name+"-"+name, release(t), hs.path, hs.args...)
	for _, s := range hs.clouds {
		s.ccm = p
	}
}

func (hs *hybridSuite) ccm() *ccmProcess { return hs.clouds[0].ccm }

// runHybridConformance is the suite's hybrid run: the clouds' own
// scenarios side by side under one manager (each cloud's Nodes initialized
// by it, its Services' load balancers with its Nodes only while the other
// cloud's Nodes come and go, its routes, its shutdown and termination
// detection), then what only a hybrid cluster has: a Node of no
// configured cloud, a name two clouds know, a Service moving between
// clouds, one cloud's API down for a minute (down is its index), and
// crash safety across the clouds.
func runHybridConformance(t *testing.T, cl *cluster, down int, fault cloudsim.FaultSpec, adapters ...conformance.Adapter) {
	hs := startHybridSuite(t, cl, "shared", adapters...)
	ccm := hs.ccm()
	t.Run("each cloud's scenarios side by side", func(t *testing.T) {
		for _, s := range hs.clouds {
			t.Run(s.adapter.Name(), func(t *testing.T) {
				t.Parallel()
				for _, sc := range hybridCloudScenarios(s.adapter.Features()) {
					t.Run(sc.name, func(t *testing.T) {
						sc.run(s, t)
						if ccm.exited() {
							t.Fatalf("the manager exited: %v", ccm.Err())
						}
					})
				}
			})
		}
	})
	for _, sc := range []struct {
		name string
		run  func(*testing.T)
	}{
		// A providerID of a cloud the run does not serve (k3s://).
		{"node of no configured cloud stays tainted, is never deleted while NotReady, and is counted once", hs.clouds[0].foreignNode},
		{"node whose name two clouds have is an error naming both and stays tainted", hs.ambiguousName},
		{"changing the annotation moves the load balancer to the other cloud", hs.move},
		{fmt.Sprintf("with %s's API down for a minute the other clouds are served as usual", hs.clouds[down].adapter.Name()), func(t *testing.T) {
			hs.outage(t, down, fault)
		}},
	} {
		t.Run(sc.name, func(t *testing.T) {
			sc.run(t)
			if ccm.exited() {
				t.Fatalf("the manager exited: %v", ccm.Err())
			}
		})
	}
	ccm.stop()
	t.Run("manager never logs a secret", func(t *testing.T) {
		for _, s := range hs.clouds {
			for _, secret := range s.cfg.Secrets {
				if strings.Contains(ccm.log.String(), secret) {
					t.Errorf("the manager logged a credential from the %s section", s.adapter.Name())
				}
			}
		}
	})
	t.Run("crash during provisioning on every cloud converges without duplicates or leaks", func(t *testing.T) {
		cs := startHybridSuite(t, cl, "crash", adapters...)
		crashSafety(t, cs.clouds, func(t *testing.T) { cs.startCCM(t, "crash-restarted") })
	})
}

// hybridCloudScenarios are the single-cloud scenarios each cloud of a
// hybrid run passes beside the other: its Nodes, a load balancer with its
// Nodes only, its lifecycle detection, drift repair, its routes.
func hybridCloudScenarios(f conformance.Features) []scenario {
	out := []scenario{
		{"node initialization", (*suiteCloud).nodeInitialization},
		{"node named unlike its instance initializes through its providerID", (*suiteCloud).nodeByProviderID},
		{"a load balancer has this cloud's nodes only, as they join and leave", (*suiteCloud).ownNodesOnly},
		{"stopped instance gets the shutdown taint and loses it when started", (*suiteCloud).stoppedInstance},
		{"terminated instance's node is deleted", (*suiteCloud).terminatedInstance},
		{"a load balancer changed outside the manager is repaired", (*suiteCloud).driftRepair},
	}
	if f.Routes {
		out = append(out, scenario{"routes follow pod CIDRs", (*suiteCloud).routes})
	}
	return out
}

// ownNodesOnly: the Service's load balancer in this cloud has exactly
// this cloud's Nodes as backends, and follows them, while the other
// clouds' scenarios register theirs; deleting it leaves the cloud as it
// was. Each Node carries the label naming its cloud.
func (s *suiteCloud) ownNodesOnly(t *testing.T) {
	zones := s.cloud.Zones()
	var insts []conformance.Instance
	for i := range 3 {
		insts = append(insts, s.launch(t, zones[i%len(zones)], fmt.Sprintf("own-%d", i)))
	}
	n1, n2, n3 := insts[0], insts[1], insts[2]
	for _, i := range []conformance.Instance{n1, n2} {
		s.registerNode(t, i.NodeName, "", "")
		if n := s.waitInitialized(t, i.NodeName); n.Labels[providerLabel] != s.adapter.Name() {
			t.Errorf("node %s: label %s=%q, want %q", n.Name, providerLabel, n.Labels[providerLabel], s.adapter.Name())
		}
	}
	before := s.cloud.Inventory()
	k := s.createService(t, s.lbService("conf-own", 80))
	s.waitService(t, k, "an address", hasAddress)
	s.waitLB(t, k, []int32{80}, n1, n2)
	s.registerNode(t, n3.NodeName, "", "")
	s.waitLB(t, k, []int32{80}, n1, n2, n3)
	s.deleteNode(t, n3.NodeName)
	s.waitLB(t, k, []int32{80}, n1, n2)
	if ws, err := s.warnings(context.Background(), k); err != nil || len(ws) != 0 {
		t.Errorf("Warning events on %s: %v %v", k, ws, err)
	}
	s.deleteServiceAndWait(t, k)
	waitInventory(t, s.cloud, before, "the cloud's whole inventory back to what it was before the Service")
}

// ambiguousName: a Node registered by a name an instance of each of two
// clouds has is initialized by neither; one Event names both clouds, and
// the gauge counts it. It needs a cloud that names instances after the
// hint; a pair without one skips.
func (hs *hybridSuite) ambiguousName(t *testing.T) {
	for _, pair := range [][2]*suiteCloud{{hs.clouds[1], hs.clouds[0]}, {hs.clouds[0], hs.clouds[1]}} {
		first, second := pair[0], pair[1]
		a, err := first.cloud.Launch(conformance.InstanceSpec{Zone: first.cloud.Zones()[0], NameHint: "hy-twice"})
		if err != nil {
			t.Fatal(err)
		}
		b, err := second.cloud.Launch(conformance.InstanceSpec{Zone: second.cloud.Zones()[0], NameHint: a.NodeName})
		if err != nil {
			t.Fatal(err)
		}
		if b.NodeName != a.NodeName {
			continue // second names its instances itself; try the other way round
		}
		name := hs.registerNode(t, a.NodeName, "", "")
		want := []string{first.adapter.Name(), second.adapter.Name()}
		poll(t, converge, "an Event on node "+name+" naming both clouds", func(ctx context.Context) (bool, string, error) {
			evs, err := hs.admin.CoreV1().Events("").List(ctx, metav1.ListOptions{
				FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + name + ",reason=NodeNotServed",
			})
			if err != nil {
				return false, "", err
			}
			for _, ev := range evs.Items {
				if strings.Contains(ev.Message, want[0]) && strings.Contains(ev.Message, want[1]) {
					return true, ev.Message, nil
				}
			}
			return false, fmt.Sprint(len(evs.Items), " events"), nil
		})
		n, err := hs.getNode(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		if ccmproc.Initialized(n) || n.Spec.ProviderID != "" {
			t.Errorf("the node both clouds know was initialized: %s", describeNode(n))
		}
		code, body, err := hs.ccm().get("/metrics", true)
		if err != nil || code != 200 {
			t.Fatalf("GET /metrics: %d %v", code, err)
		}
		if !strings.Contains(body, `multicloud_ccm_unowned_nodes{reason="ambiguous-name"} 1`) {
			t.Errorf("/metrics does not count the node:\n%s", grepLines(body, "multicloud_ccm_unowned_nodes"))
		}
		// Its kubelet is told which: the label places it.
		n.Labels[providerLabel] = second.adapter.Name()
		if _, err := hs.admin.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		got := hs.waitInitialized(t, name)
		if want, err := second.cloud.ExpectedNode(b.ID); err != nil || got.Spec.ProviderID != want.ProviderID {
			t.Errorf("the labelled node: providerID %q, want %q (%v)", got.Spec.ProviderID, want.ProviderID, err)
		}
		return
	}
	t.Skip("neither cloud names its instances after the hint")
}

// move: a Service of the default cloud gets the annotation naming the
// other: the other cloud's load balancer is made with its Nodes, the
// status follows it, and nothing is left in the cloud it left.
func (hs *hybridSuite) move(t *testing.T) {
	from, to := hs.clouds[0], hs.clouds[1]
	fi := from.launchNode(t, from.cloud.Zones()[0], "move", "")
	ti := to.launchNode(t, to.cloud.Zones()[0], "move", "")
	hs.waitInitialized(t, fi.NodeName)
	hs.waitInitialized(t, ti.NodeName)
	fromBefore, toBefore := from.cloud.Inventory(), to.cloud.Inventory()

	k := hs.createService(t, from.lbService("conf-moving", 80))
	first := ingressAddrs(hs.waitService(t, k, "an address", hasAddress).Status.LoadBalancer)
	from.waitLB(t, k, []int32{80}, fi)
	hs.updateService(t, k, func(s *corev1.Service) {
		metav1.SetMetaDataAnnotation(&s.ObjectMeta, providerAnnotation, to.adapter.Name())
	})
	to.waitLB(t, k, []int32{80}, ti)
	waitInventory(t, from.cloud, fromBefore, "nothing left in "+from.adapter.Name())
	svc := hs.waitService(t, k, "an address", hasAddress)
	// Two emulators may hand out the same address; the event says which
	// cloud's load balancer the status now is.
	t.Logf("address %s in %s, then %s in %s", first, from.adapter.Name(), ingressAddrs(svc.Status.LoadBalancer), to.adapter.Name())
	hs.deleteServiceAndWait(t, k)
	waitInventory(t, to.cloud, toBefore, "nothing left in "+to.adapter.Name())
}

// outage: the cloud at index down stops answering (fault on every call)
// for a minute. Its NotReady Node stays, and Services waiting on it hold
// more than the service controller's workers; meanwhile a new Node of
// another cloud (registered with its cloud's label, as a hybrid cluster's
// kubelets should: a Node known only by name waits for every cloud's
// answer) is initialized and a new Service there gets its address as
// without the outage. Once the cloud answers, everything converges.
func (hs *hybridSuite) outage(t *testing.T, down int, fault cloudsim.FaultSpec) {
	dc, up := hs.clouds[down], hs.clouds[(down+1)%len(hs.clouds)]
	di := dc.launchNode(t, dc.cloud.Zones()[0], "outage", "")
	ui := up.launchNode(t, up.cloud.Zones()[0], "outage", "")
	hs.waitInitialized(t, di.NodeName)
	hs.waitInitialized(t, ui.NodeName)
	hs.setReady(t, di.NodeName, corev1.ConditionTrue)
	// A Service of the dead cloud served before: neither repaired nor
	// replaced on the errors (no repair storm, nothing deleted).
	kept := hs.createService(t, dc.lbService("conf-outage-kept", 80))
	hs.waitService(t, kept, "an address", hasAddress)
	keptLB := dc.waitLB(t, kept, []int32{80}, di)
	repairsBefore := dc.metricSum("multicloud_ccm_lb_repairs_total", "")
	// A Service of the other cloud served before: a Node joining that
	// cloud during the outage must reach its load balancer as fast as
	// without it (each cloud's Services have their own queue, workers and
	// node set in the service controller).
	upKept := hs.createService(t, up.lbService("conf-outage-up", 80))
	hs.waitService(t, upKept, "an address", hasAddress)
	up.waitLB(t, upKept, []int32{80}, ui)

	fault.Op = "*"
	srv := dc.cloud.Server()
	if err := srv.SetFault(fault); err != nil {
		t.Fatal(err)
	}
	outage := time.Now()
	cleared := false
	clear := func() {
		if !cleared {
			srv.ClearFaults()
			cleared = true
		}
	}
	defer clear()
	hs.setReady(t, di.NodeName, corev1.ConditionFalse)
	var pending []types.NamespacedName
	for i := range 12 {
		pending = append(pending, hs.createService(t, dc.lbService(fmt.Sprintf("conf-outage-%d", i), 80)))
	}
	time.Sleep(2 * time.Second)

	start := time.Now()
	u2, err := up.cloud.Launch(conformance.InstanceSpec{Zone: up.cloud.Zones()[0], PublicIP: true, NameHint: up.prefix + "outage-late"})
	if err != nil {
		t.Fatal(err)
	}
	labelled := ccmproc.KubeletNode(u2.NodeName, "")
	labelled.Labels[providerLabel] = up.adapter.Name()
	hs.createNode(t, labelled)
	// Bounds well above what these take with every cloud up (about 1 s
	// and 3 s), well below what waiting on the dead cloud would cost.
	within(t, start, 15*time.Second, "a new "+up.adapter.Name()+" Node initialized during the outage", func(ctx context.Context) (bool, string, error) {
		n, err := hs.getNode(ctx, u2.NodeName)
		if err != nil {
			return false, "", err
		}
		return ccmproc.Initialized(n), describeNode(n), nil
	})
	within(t, start, 15*time.Second, "the new "+up.adapter.Name()+" Node in its cloud's load balancer during the outage", func(context.Context) (bool, string, error) {
		lbs := up.cloud.LoadBalancers(upKept)
		if len(lbs) != 1 {
			return false, fmt.Sprintf("%d load balancers", len(lbs)), nil
		}
		want := []string{ui.ID, u2.ID}
		slices.Sort(want)
		return slices.Equal(lbs[0].Backends, want), fmt.Sprintf("backends %v, want %v", lbs[0].Backends, want), nil
	})
	k := hs.createService(t, up.lbService("conf-during-outage", 80))
	within(t, time.Now(), 20*time.Second, "a new "+up.adapter.Name()+" Service's address during the outage", func(ctx context.Context) (bool, string, error) {
		svc, err := hs.getService(ctx, k)
		if err != nil {
			return false, "", err
		}
		ok, seen := hasAddress(svc)
		return ok, seen, nil
	})
	up.waitLB(t, k, []int32{80}, ui, u2)

	time.Sleep(time.Until(outage.Add(time.Minute)))
	n, err := hs.getNode(context.Background(), di.NodeName)
	if err != nil {
		t.Errorf("%s's NotReady Node during the outage: %v", dc.adapter.Name(), err)
	} else if ccmproc.HasTaint(n, cloudproviderapi.TaintNodeShutdown) {
		t.Errorf("%s's NotReady Node was tainted shut down while its cloud did not answer", dc.adapter.Name())
	}
	clear()
	answered := time.Now()
	hs.setReady(t, di.NodeName, corev1.ConditionTrue)
	// Retried as soon as the cloud answers (a probe every 5 s), not after
	// their backoff: the bound leaves room for a probe, a 12-Service
	// round of ensures and the slowest cloud's operations.
	for _, p := range pending {
		within(t, answered, 45*time.Second, p.String()+"'s address once "+dc.adapter.Name()+" answers again", func(ctx context.Context) (bool, string, error) {
			svc, err := hs.getService(ctx, p)
			if err != nil {
				return false, "", err
			}
			ok, seen := hasAddress(svc)
			return ok, seen, nil
		})
	}
	if !strings.Contains(hs.ccm().log.String(), "Retrying the Services that failed while the cloud did not answer") {
		t.Errorf("the service controller never retried %s's waiting Services when it answered again (they waited out their backoff)", dc.adapter.Name())
	}
	if lbs := dc.cloud.LoadBalancers(kept); len(lbs) != 1 || lbs[0].ID != keptLB.ID {
		t.Errorf("the load balancer served before the outage: %+v, want %s only", lbs, keptLB.ID)
	}
	if n := dc.metricSum("multicloud_ccm_lb_repairs_total", "") - repairsBefore; n != 0 {
		t.Errorf("%d load-balancer repairs in %s during and after its outage", n, dc.adapter.Name())
	}
	if n, msgs, err := hs.repairEvents(context.Background(), kept); err != nil || n != 0 {
		t.Errorf("repair events on %s: %s %v", kept, msgs, err)
	}
	for _, p := range append(pending, k, kept, upKept) {
		hs.deleteServiceAndWait(t, p)
	}
}
