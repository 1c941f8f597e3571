//go:build upstreamcheck

// Package upstreamcheck switches a cluster between a cloud's real upstream
// cloud-controller-manager and ours, both ways, against the cloud's
// emulator (issue 32).
//
// Usage:
//
//	make upstream-check CLOUD=aws
//	# = go test -tags upstreamcheck ./test/upstreamcheck -run 'TestUpstreamCheck/aws$' -v -count=1 -timeout 60m
//
// The first run builds the upstream CCM from the Go module proxy at the
// version pinned in tools/<cloud>/go.mod into bin/ (build.sh; AWS: 6-9
// minutes on 2 cores), and the control plane as `make controlplane` does.
// The build tag keeps it out of `make test`. Each run keeps the managers'
// logs in a directory it names in its first lines.
//
// The flow, on a real kube-apiserver and the in-process emulator:
//
//	a. upstream makes a Service of every kind our tables support; the
//	   addresses and the cloud inventory are recorded;
//	b. upstream stops; `multicloud-ccm import-config` turns its config file
//	   into ours; ours starts and must keep every address and load balancer
//	   (no second one), apply a port change, add a joining Node, and make a
//	   new Service of every kind;
//	c. ours stops; upstream starts again with its original file and must
//	   serve every Service, ours' too, with the same address, making no
//	   duplicate load balancer, target group or security group, and
//	   logging no sync error;
//	d. every Service is deleted with upstream running; the inventory must
//	   end as it was before the first Service.
//
// Every cloud plugs in (<cloud>_test.go); `make upstream-check CLOUD=all`
// runs them one after another.
package upstreamcheck

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/multicloud-ccm/multicloud-ccm/test/ccmproc"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
	"github.com/multicloud-ccm/multicloud-ccm/test/controlplane"
)

const (
	// clusterID names the cluster in both managers' configs and tags the
	// emulator's fixture.
	clusterID = "upcheck"
	namespace = "default"
	// converge bounds each wait for a manager to act.
	converge = 3 * time.Minute
	// settle is how long a phase watches after its managers' first
	// passes, so a late duplicate or retry shows up.
	settle = 20 * time.Second
)

// upstreamCCM plugs one cloud's upstream CCM into the check.
type upstreamCCM interface {
	// adapter starts the cloud's emulator (the conformance adapter).
	adapter() conformance.Adapter
	// shapes are the kinds of Service to make in each manager's turn.
	shapes() []shape
	// duplicateKinds are the inventory kinds of which a manager taking
	// over must make none for a Service already served: each new one is a
	// duplicate (a second load balancer, frontend, pool, group).
	duplicateKinds() []string
	// prepare writes upstream's config file for the emulator and starts
	// whatever else upstream needs (a metadata stand-in).
	prepare(t *testing.T, c conformance.Cloud, dir string) upstreamSetup
}

// upstreamSetup is how to run one cloud's upstream CCM.
type upstreamSetup struct {
	// configFile is upstream's --cloud-config, and import-config's input.
	configFile string
	// args are upstream's flags beyond the common ones (--cloud-provider).
	args []string
	// env is given to both managers (credentials from the environment).
	env []string
	// secrets must appear in neither manager's log.
	secrets []string
	// importArgs are import-config's flags beyond --from (the upstream
	// manager's --cluster-name).
	importArgs []string
	// nodeAgent, when set, is the command line of the agent upstream's
	// install runs on every Node beside its CCM (Azure's
	// cloud-node-manager DaemonSet, which initializes the Nodes): the
	// check runs one per registered Node while upstream runs, none while
	// ours does (ours initializes Nodes centrally).
	nodeAgent func(nodeName, kubeconfig string) []string
	// knownErrors are error lines upstream logs on its own, switch or
	// not, each with why it is not the switch's doing: shown, not failed.
	knownErrors []knownError
	// widerRBAC runs upstream as a cluster admin: its own install grants
	// more than this project's ClusterRole (the upstream Azure CCM lists
	// EndpointSlices, helm/cloud-provider-azure's ClusterRole). Ours
	// always runs with deploy/'s role.
	widerRBAC bool
}

// knownError is an error line upstream logs whatever manager ran before.
type knownError struct {
	line *regexp.Regexp
	why  string
}

// shape is one kind of LoadBalancer Service.
type shape struct {
	name        string
	annotations map[string]string
	mutate      func(*corev1.Service)
}

// clouds maps each cloud to its plug, or to why it has none yet.
var clouds = map[string]struct {
	ccm  upstreamCCM
	skip string
}{
	"aws":       {ccm: awsUpstream{}},
	"azure":     {ccm: azureUpstream{}},
	"gce":       {ccm: gceUpstream{}},
	"openstack": {ccm: openstackUpstream{}},
}

func TestUpstreamCheck(t *testing.T) {
	for _, name := range slices.Sorted(maps.Keys(clouds)) {
		t.Run(name, func(t *testing.T) {
			c := clouds[name]
			if c.ccm == nil {
				t.Skip(c.skip)
			}
			run(t, name, c.ccm)
		})
	}
}

// env is one run's cluster, cloud and binaries.
type env struct {
	name    string
	ccm     upstreamCCM
	cloud   conformance.Cloud
	admin   kubernetes.Interface
	kubecfg string
	// adminKubecfg is a cluster admin's, for upstreams with widerRBAC.
	adminKubecfg string
	upstream     string // upstream binary
	ours         string // our binary
	setup        upstreamSetup
	logs         string // directory kept after the run
	// root is the cloud's test: managers are stopped at its end, not at
	// the end of the phase that started them (upstream's second run
	// serves phases c and d).
	root *testing.T
	// nodes are the Nodes registered so far; current is the manager
	// running now (its node agents run one per Node).
	nodes   []string
	current *manager
}

func run(t *testing.T, name string, ccm upstreamCCM) {
	ctx := context.Background()
	logs, err := os.MkdirTemp("", "upstream-check-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("logs of this run: %s", logs)
	e := &env{name: name, ccm: ccm, logs: logs, root: t}

	start := time.Now()
	e.upstream = buildUpstream(t, name)
	t.Logf("upstream CCM %s (ready in %s)", e.upstream, time.Since(start).Round(time.Second))
	start = time.Now()
	// Built into the test's own temp dir: the logs directory outlives the run.
	e.ours = filepath.Join(t.TempDir(), "multicloud-ccm")
	if err := ccmproc.Build(e.ours, "", os.Stderr); err != nil {
		t.Fatal(err)
	}
	t.Logf("our CCM built in %s", time.Since(start).Round(time.Second))

	cpLog, err := os.Create(filepath.Join(logs, "controlplane.log"))
	if err != nil {
		t.Fatal(err)
	}
	cp, err := controlplane.Start(controlplane.Options{Output: cpLog})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	e.admin = cp.AdminClient
	if e.kubecfg, err = cp.CCMKubeconfig(ctx, 2*time.Hour); err != nil {
		t.Fatal(err)
	}
	if e.adminKubecfg, err = cp.WriteKubeconfig(cp.Admin, filepath.Join(logs, "admin.kubeconfig")); err != nil {
		t.Fatal(err)
	}

	e.cloud, err = ccm.adapter().Start(conformance.Options{ClusterID: clusterID})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.cloud.Close() })
	e.setup = ccm.prepare(t, e.cloud, logs)

	// Three instances, launched now so the baseline inventory holds them;
	// the third's Node joins in ours' turn.
	zones := e.cloud.Zones()
	var insts []conformance.Instance
	for i := range 3 {
		inst, err := e.cloud.Launch(conformance.InstanceSpec{Zone: zones[i%len(zones)], PublicIP: true, NameHint: fmt.Sprintf("upcheck-%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		insts = append(insts, inst)
	}
	n1, n2, n3 := insts[0], insts[1], insts[2]

	var (
		up        *manager
		svcs      []*service
		baseline  []cloudsim.Resource
		afterOurs []cloudsim.Resource
	)
	// What upstream keeps in the cluster beside its config (GCE's cluster
	// ID in kube-system/ingress-uid), as the conformance suite's adoption
	// makes it.
	if cm, ok := e.cloud.(interface{ UpstreamConfigMaps() []*corev1.ConfigMap }); ok {
		for _, m := range cm.UpstreamConfigMaps() {
			if _, err := e.admin.CoreV1().ConfigMaps(m.Namespace).Create(ctx, m, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	phaseStart := time.Now()
	ok := t.Run("a upstream makes a Service of every kind", func(t *testing.T) {
		up = e.startUpstream(t, "upstream-1")
		for _, n := range []conformance.Instance{n1, n2} {
			e.registerNode(t, n)
		}
		for _, n := range []conformance.Instance{n1, n2} {
			e.waitInitialized(t, up, n.NodeName)
		}
		baseline = e.inventory()
		for _, sh := range ccm.shapes() {
			svcs = append(svcs, e.createService(t, "up-"+sh.name, sh))
		}
		for _, s := range svcs {
			e.waitServed(t, up, s, n1, n2)
		}
		for _, s := range svcs {
			t.Logf("%s: load balancer %s, address %s", s.key, s.lbID, s.addr)
		}
		t.Logf("inventory: %s", kindCounts(e.inventory()))
		e.checkLog(t, up)
		e.checkWarnings(t, up, svcs)
	})
	t.Logf("phase a took %s", time.Since(phaseStart).Round(time.Second))
	if !ok {
		t.Fatal("upstream did not serve its own Services; nothing to switch")
	}
	upMade := e.inventory()
	up.stop()

	var ours *manager
	phaseStart = time.Now()
	t.Run("b the switch to ours", func(t *testing.T) {
		cfg := e.importConfig(t)
		ours = e.startOurs(t, cfg)
		t.Run("keeps every address and load balancer", func(t *testing.T) {
			e.waitSynced(t, ours, svcs)
			for _, s := range svcs {
				e.checkServed(t, s, n1, n2)
			}
			e.checkNoDuplicate(t, upMade, e.inventory())
		})
		t.Run("applies two port changes while a Node joins, and adds it to every load balancer", func(t *testing.T) {
			// At once, as a user's rollout and an autoscaler would: the
			// shared parts (Azure's NIC-based pool, the node groups)
			// must take the Node once, not once per sync racing it.
			before := e.cloud.Server().Calls()
			for _, s := range svcs[:2] {
				e.updateService(t, s.key, func(svc *corev1.Service) { svc.Spec.Ports[0].Port = 8080; svc.Spec.Ports[0].Name = "p8080" })
				s.ports = []int32{8080}
			}
			e.registerNode(t, n3)
			e.waitInitialized(t, ours, n3.NodeName)
			for _, s := range svcs {
				e.waitServed(t, ours, s, n1, n2, n3)
			}
			t.Logf("cloud calls while two ports changed and a Node joined: %s", callDiff(before, e.cloud.Server().Calls()))
		})
		t.Run("makes a new Service of every kind", func(t *testing.T) {
			var made []*service
			for _, sh := range ccm.shapes() {
				made = append(made, e.createService(t, "ours-"+sh.name, sh))
			}
			for _, s := range made {
				e.waitServed(t, ours, s, n1, n2, n3)
				t.Logf("%s: load balancer %s, address %s", s.key, s.lbID, s.addr)
			}
			svcs = append(svcs, made...)
		})
		time.Sleep(settle)
		e.checkLog(t, ours)
		e.checkWarnings(t, ours, svcs)
	})
	t.Logf("phase b took %s", time.Since(phaseStart).Round(time.Second))
	afterOurs = e.inventory()
	t.Logf("inventory after ours: %s", kindCounts(afterOurs))
	if ours != nil {
		ours.stop()
	}

	phaseStart = time.Now()
	t.Run("c the switch back to upstream", func(t *testing.T) {
		up = e.startUpstream(t, "upstream-2")
		e.waitSynced(t, up, svcs)
		time.Sleep(settle)
		// What the guide's way back asks the user to do once upstream
		// serves every Service again (docs/tutorials/switching-from-upstream.md).
		if sb, ok := e.ccm.(interface {
			stepBack(t *testing.T, c conformance.Cloud)
		}); ok {
			sb.stepBack(t, e.cloud)
		}
		byMaker := map[string][]string{}
		for _, s := range svcs {
			if err := e.served(s, n1, n2, n3); err != nil {
				t.Errorf("%s (made by %s): %v", s.key, s.maker, err)
				byMaker[s.maker] = append(byMaker[s.maker], s.key.Name)
			}
		}
		if bad := e.checkNoDuplicate(t, afterOurs, e.inventory()); bad > 0 {
			t.Errorf("upstream made %d duplicate load balancer parts", bad)
		}
		e.checkLog(t, up)
		e.checkWarnings(t, up, svcs)
		for maker, names := range byMaker {
			t.Errorf("not served the same by upstream after the switch back: %d Services %s made: %v", len(names), maker, names)
		}
	})
	t.Logf("phase c took %s", time.Since(phaseStart).Round(time.Second))

	phaseStart = time.Now()
	t.Run("d upstream deletes every Service and the inventory is as before", func(t *testing.T) {
		if up == nil || up.proc.Exited() {
			up = e.startUpstream(t, "upstream-3")
		}
		for _, s := range svcs {
			err := e.admin.CoreV1().Services(s.key.Namespace).Delete(ctx, s.key.Name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
		}
		// One deadline for all: a Service upstream cannot delete keeps its
		// finalizer, and the others are not held up by it.
		var stuck []string
		_ = pollErr(converge, func(ctx context.Context) (bool, string, error) {
			stuck = nil
			for _, s := range svcs {
				_, err := e.admin.CoreV1().Services(s.key.Namespace).Get(ctx, s.key.Name, metav1.GetOptions{})
				if !apierrors.IsNotFound(err) {
					stuck = append(stuck, fmt.Sprintf("%s (made by %s)", s.key, s.maker))
				}
			}
			return len(stuck) == 0, "", nil
		})
		if len(stuck) > 0 {
			t.Errorf("Services whose deletion upstream never finished (finalizer kept): %v", stuck)
		}
		if err := pollErr(converge, func(context.Context) (bool, string, error) {
			added, removed := cloudsim.DiffResources(baseline, e.inventory())
			return len(added) == 0 && len(removed) == 0, "", nil
		}); err != nil {
			added, removed := cloudsim.DiffResources(baseline, e.inventory())
			t.Errorf("the inventory is not as before the first Service:\n  left behind: %s\n  removed: %s", resList(added), resList(removed))
		}
		e.checkLog(t, up)
		e.checkWarnings(t, up, svcs)
	})
	t.Logf("phase d took %s", time.Since(phaseStart).Round(time.Second))
	if up != nil {
		up.stop()
	}
	for _, m := range []*manager{up, ours} {
		if m == nil {
			continue
		}
		for _, s := range e.setup.secrets {
			if strings.Contains(m.log.String(), s) {
				t.Errorf("%s logged a credential", m.name)
			}
		}
	}
}

// buildUpstream runs build.sh for the cloud (cached in bin/) and returns
// the binary's path. Its progress lines go to stderr.
func buildUpstream(t *testing.T, cloud string, what ...string) string {
	t.Helper()
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", append([]string{filepath.Join(root, "test/upstreamcheck/build.sh"), cloud}, what...)...)
	cmd.Dir, cmd.Stderr = root, os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("build the upstream %s CCM: %v", cloud, err)
	}
	return strings.TrimSpace(string(out))
}

// ---- managers ----

// manager is one running CCM process and its log, and the node agents
// that run beside it (their output goes to the same log).
type manager struct {
	name   string
	proc   *ccmproc.Process
	log    *ccmproc.Output
	file   string
	agents []*ccmproc.Process
}

func (m *manager) stop() {
	if m == nil {
		return
	}
	m.proc.Stop()
	for _, a := range m.agents {
		a.Stop()
	}
	_ = os.WriteFile(m.file, []byte(m.log.String()), 0o644)
}

// startAgent runs upstream's node agent for one Node beside m, when the
// cloud has one.
func (e *env) startAgent(t *testing.T, m *manager, node string) {
	t.Helper()
	if e.setup.nodeAgent == nil || m.name == "ours" {
		return
	}
	kubeconfig := e.kubecfg
	if e.setup.widerRBAC {
		kubeconfig = e.adminKubecfg
	}
	p, err := ccmproc.Start(ccmproc.Options{Argv: e.setup.nodeAgent(node, kubeconfig), Output: m.log, Env: e.setup.env})
	if err != nil {
		t.Fatalf("node agent for %s: %v", node, err)
	}
	m.agents = append(m.agents, p)
}

// commonArgs are both managers' flags: the three controllers a switch
// hands over, no routes (a separate concern), no leader election (one
// manager at a time, stopped before the next starts).
var commonArgs = []string{
	"--controllers=cloud-node,cloud-node-lifecycle,service",
	"--configure-cloud-routes=false",
	"--allocate-node-cidrs=false",
	"--node-monitor-period=5s",
}

func (e *env) start(t *testing.T, name, binary, cloudConfig, kubeconfig string, args ...string) *manager {
	t.Helper()
	log := &ccmproc.Output{}
	p, err := ccmproc.Start(ccmproc.Options{
		Binary: binary, CloudConfig: cloudConfig, Kubeconfig: kubeconfig,
		Args: append(withoutOverridden(commonArgs, args), args...), Output: log, Env: e.setup.env,
	})
	if err != nil {
		t.Fatal(err)
	}
	m := &manager{name: name, proc: p, log: log, file: filepath.Join(e.logs, name+".log")}
	e.root.Cleanup(m.stop)
	e.current = m
	for _, n := range e.nodes {
		e.startAgent(t, m, n)
	}
	return m
}

// withoutOverridden drops the common flags args sets again: a list flag
// such as --controllers appends when given twice (pflag), it does not
// replace.
func withoutOverridden(common, args []string) []string {
	var out []string
	for _, c := range common {
		name, _, _ := strings.Cut(c, "=")
		if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, name+"=") }) {
			out = append(out, c)
		}
	}
	return out
}

func (e *env) startUpstream(t *testing.T, name string) *manager {
	t.Helper()
	kubeconfig := e.kubecfg
	if e.setup.widerRBAC {
		kubeconfig = e.adminKubecfg
	}
	return e.start(t, name, e.upstream, e.setup.configFile, kubeconfig, e.setup.args...)
}

func (e *env) startOurs(t *testing.T, cloudConfig string) *manager {
	t.Helper()
	return e.start(t, "ours", e.ours, cloudConfig, e.kubecfg)
}

// importConfig runs `multicloud-ccm import-config` on upstream's file, as
// docs/tutorials/switching-from-upstream.md does, and writes the result.
func (e *env) importConfig(t *testing.T) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	args := append([]string{"import-config", "--from", e.name}, e.setup.importArgs...)
	cmd := exec.Command(e.ours, append(args, e.setup.configFile)...)
	// The environment upstream ran with (Azure Stack's
	// AZURE_ENVIRONMENT_FILEPATH is read from it).
	cmd.Env = append(os.Environ(), e.setup.env...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("import-config: %v\n%s", err, stderr.String())
	}
	t.Logf("import-config notes:\n%s", stderr.String())
	t.Logf("our cloud-config:\n%s", stdout.String())
	path := filepath.Join(e.logs, "cloud-config.yaml")
	if err := os.WriteFile(path, stdout.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// errorLine is a klog error line ("E1128 12:00:00.000000 ...").
var errorLine = regexp.MustCompile(`(?m)^E\d{4} .*$`)

// checkLog fails on every error line the manager logged about Services,
// load balancers or Nodes; other error lines are only shown.
func (e *env) checkLog(t *testing.T, m *manager) {
	t.Helper()
	var bad, other []string
	known := map[string]int{}
lines:
	for _, l := range errorLine.FindAllString(m.log.String(), -1) {
		// Delegated authentication's request-header CA: the test's
		// apiserver has no front proxy; unrelated to the switch.
		if strings.Contains(l, "extension-apiserver-authentication") {
			continue
		}
		if m.name != "ours" {
			for _, k := range e.setup.knownErrors {
				if k.line.MatchString(l) {
					known[k.why]++
					continue lines
				}
			}
		}
		low := strings.ToLower(l)
		if strings.Contains(low, "service") || strings.Contains(low, "load balancer") || strings.Contains(low, "loadbalancer") || strings.Contains(low, "node") {
			bad = append(bad, l)
		} else {
			other = append(other, l)
		}
	}
	for why, n := range known {
		t.Logf("%s logged %d error lines of its own (not the switch's: %s)", m.name, n, why)
	}
	if len(other) > 0 {
		t.Logf("%s logged %d other error lines:\n%s", m.name, len(other), strings.Join(firstN(other, 10), "\n"))
	}
	if len(bad) > 0 {
		t.Errorf("%s logged %d errors syncing Services or Nodes:\n%s", m.name, len(bad), strings.Join(firstN(bad, 20), "\n"))
	}
	if m.proc.Exited() {
		t.Errorf("%s exited: %v\n%s", m.name, m.proc.Err(), tail(m.log.String(), 40))
	}
}

// ---- Nodes ----

// registerNode creates the Node a kubelet with --cloud-provider=external
// and --provider-id registers: tainted uninitialized, Ready.
func (e *env) registerNode(t *testing.T, inst conformance.Instance) {
	t.Helper()
	ctx := context.Background()
	n := ccmproc.KubeletNode(inst.NodeName, "")
	pid, err := e.cloud.KubeletProviderID(inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	n.Spec.ProviderID = pid
	if _, err := e.admin.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.nodes = append(e.nodes, inst.NodeName)
	if e.current != nil && !e.current.proc.Exited() {
		e.startAgent(t, e.current, inst.NodeName)
	}
	// The running manager may update the new Node first.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		err := ccmproc.SetReady(ctx, e.admin, inst.NodeName, corev1.ConditionTrue)
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("node %s Ready: %v", inst.NodeName, err)
	}
}

func (e *env) waitInitialized(t *testing.T, m *manager, name string) {
	t.Helper()
	e.poll(t, m, "node "+name+" initialized by "+m.name, func(ctx context.Context) (bool, string, error) {
		n, err := e.admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return ccmproc.Initialized(n) && len(n.Status.Addresses) > 0,
			fmt.Sprintf("providerID=%q taints=%v addresses=%v", n.Spec.ProviderID, n.Spec.Taints, n.Status.Addresses), nil
	})
}

// ---- Services ----

// service is one Service of the check and what it was first served with.
type service struct {
	key   types.NamespacedName
	maker string // "upstream" or "ours"
	ports []int32
	lbID  string // the load balancer first serving it
	addr  string // its first address
}

func (e *env) createService(t *testing.T, name string, sh shape) *service {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Annotations: maps.Clone(sh.annotations)},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Name: "p80", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
		},
	}
	if sh.mutate != nil {
		sh.mutate(svc)
	}
	made, err := e.admin.CoreV1().Services(namespace).Create(context.Background(), svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A cloud that finds some load balancers by the Service's UID (Azure's
	// internal frontends) is told it.
	if tr, ok := e.cloud.(interface {
		TrackUID(types.NamespacedName, types.UID)
	}); ok {
		tr.TrackUID(types.NamespacedName{Namespace: namespace, Name: name}, made.UID)
	}
	maker := "upstream"
	if strings.HasPrefix(name, "ours-") {
		maker = "ours"
	}
	return &service{key: types.NamespacedName{Namespace: namespace, Name: name}, maker: maker, ports: []int32{80}}
}

// served checks that the Service has its first address and exactly one
// load balancer, its first, on its ports with these backends.
func (e *env) served(s *service, backends ...conformance.Instance) error {
	svc, err := e.admin.CoreV1().Services(s.key.Namespace).Get(context.Background(), s.key.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	addr := ingressAddrs(svc.Status.LoadBalancer)
	lbs := e.cloud.LoadBalancers(s.key)
	var want []string
	for _, b := range backends {
		want = append(want, b.ID)
	}
	slices.Sort(want)
	var problems []string
	switch {
	case addr == "":
		problems = append(problems, "no address")
	case s.addr != "" && addr != s.addr:
		problems = append(problems, fmt.Sprintf("address changed from %s to %s", s.addr, addr))
	}
	if len(lbs) != 1 {
		problems = append(problems, fmt.Sprintf("%d load balancers %+v, want 1", len(lbs), lbs))
	} else {
		lb := lbs[0]
		if s.lbID != "" && lb.ID != s.lbID {
			problems = append(problems, fmt.Sprintf("served by load balancer %s, not %s", lb.ID, s.lbID))
		}
		if !slices.Equal(lb.Ports, s.ports) {
			problems = append(problems, fmt.Sprintf("ports %v, want %v", lb.Ports, s.ports))
		}
		if !slices.Equal(lb.Backends, want) || len(lb.Inconsistent) > 0 {
			problems = append(problems, fmt.Sprintf("backends %v %v, want %v", lb.Backends, lb.Inconsistent, want))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	if s.lbID == "" {
		s.lbID, s.addr = lbs[0].ID, addr
	}
	return nil
}

// waitServed waits until served holds.
func (e *env) waitServed(t *testing.T, m *manager, s *service, backends ...conformance.Instance) {
	t.Helper()
	e.poll(t, m, fmt.Sprintf("%s served by %s", s.key, m.name), func(context.Context) (bool, string, error) {
		if err := e.served(s, backends...); err != nil {
			return false, fmt.Sprintf("%v; %s's events %v", err, m.name, m.events(s.key)), nil
		}
		return true, "", nil
	})
}

// checkServed is served once, an error when it does not hold.
func (e *env) checkServed(t *testing.T, s *service, backends ...conformance.Instance) {
	t.Helper()
	if err := e.served(s, backends...); err != nil {
		t.Errorf("%s (made by %s): %v", s.key, s.maker, err)
	}
}

// waitSynced waits until the manager has synced every Service once
// since it started: its own log (so no other manager's Event counts)
// records an EnsuredLoadBalancer or a SyncLoadBalancerFailed Event on it.
func (e *env) waitSynced(t *testing.T, m *manager, svcs []*service) {
	t.Helper()
	for _, s := range svcs {
		e.poll(t, m, fmt.Sprintf("%s synced by %s", s.key, m.name), func(context.Context) (bool, string, error) {
			for _, ev := range m.events(s.key) {
				if ev.reason == "EnsuredLoadBalancer" || ev.reason == "SyncLoadBalancerFailed" {
					return true, "", nil
				}
			}
			return false, fmt.Sprint(m.events(s.key)), nil
		})
	}
}

// loggedEvent is one Event a manager logged recording it ("Event
// occurred" object="ns/name" ... type="Warning" reason="..." message="...").
type loggedEvent struct{ typ, reason, message string }

var eventLine = regexp.MustCompile(`"Event occurred" object="([^"]*)".* type="([^"]*)" reason="([^"]*)" message="((?:[^"\\]|\\.)*)"`)

// events are the Events this manager recorded on the Service.
func (m *manager) events(key types.NamespacedName) []loggedEvent {
	var out []loggedEvent
	for _, g := range eventLine.FindAllStringSubmatch(m.log.String(), -1) {
		if g[1] == key.String() {
			out = append(out, loggedEvent{typ: g[2], reason: g[3], message: g[4]})
		}
	}
	return out
}

// checkWarnings fails on every Warning Event the manager recorded on the
// Services.
func (e *env) checkWarnings(t *testing.T, m *manager, svcs []*service) {
	t.Helper()
	for _, s := range svcs {
		var ws []string
		for _, ev := range m.events(s.key) {
			if ev.typ == corev1.EventTypeWarning {
				ws = append(ws, ev.reason+": "+ev.message)
			}
		}
		if len(ws) > 0 {
			t.Errorf("%s (made by %s): %s warned %q", s.key, s.maker, m.name, ws)
		}
	}
}

func (e *env) updateService(t *testing.T, key types.NamespacedName, change func(*corev1.Service)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		svc, err := e.admin.CoreV1().Services(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		change(svc)
		_, err = e.admin.CoreV1().Services(key.Namespace).Update(ctx, svc, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("update service %s: %v", key, err)
	}
}

// ---- the inventory ----

// checkNoDuplicate compares two inventories kind by kind: it fails on
// every load balancer, target group or security group added, and on
// every resource removed (a switch must keep everything serving), and
// shows the other additions. It returns how many duplicates it found.
func (e *env) checkNoDuplicate(t *testing.T, before, after []cloudsim.Resource) int {
	t.Helper()
	added, removed := cloudsim.DiffResources(before, after)
	dups := 0
	var other []cloudsim.Resource
	for _, r := range added {
		if slices.Contains(e.ccm.duplicateKinds(), r.Kind) {
			dups++
			t.Errorf("a second %s appeared: %s (%s) tagged %v", r.Kind, r.ID, r.Name, r.Tags)
		} else {
			other = append(other, r)
		}
	}
	rm, expects := e.ccm.(interface {
		// expectedRemoval says why the switch removes r (before is the
		// inventory it was in), or "" when it must not.
		expectedRemoval(r cloudsim.Resource, before []cloudsim.Resource) string
	})
	for _, r := range removed {
		if expects {
			if why := rm.expectedRemoval(r, before); why != "" {
				t.Logf("removed by the switch, as it must be: %s %s (%s): %s", r.Kind, r.ID, r.Name, why)
				continue
			}
		}
		t.Errorf("removed by the switch: %s %s (%s)", r.Kind, r.ID, r.Name)
	}
	if len(other) > 0 {
		t.Logf("also added: %s", resList(other))
	}
	if b, a := kindCounts(before), kindCounts(after); b != a {
		t.Logf("resources by kind:\n  before %s\n  after  %s", b, a)
	}
	return dups
}

// callDiff renders the calls made between two counts, by operation.
func callDiff(before, after map[string]int) string {
	var out []string
	for _, op := range slices.Sorted(maps.Keys(after)) {
		if n := after[op] - before[op]; n > 0 {
			out = append(out, fmt.Sprintf("%s=%d", op, n))
		}
	}
	return strings.Join(out, " ")
}

// inventory is everything the emulator holds: the adapters' Inventory
// leaves out parts that come and go with other Services (OpenStack's member
// group), which a switch must account for too.
func (e *env) inventory() []cloudsim.Resource { return e.cloud.Server().Resources() }

// kindCounts renders how many resources of each kind an inventory holds.
func kindCounts(inv []cloudsim.Resource) string {
	n := map[string]int{}
	for _, r := range inv {
		n[r.Kind]++
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(n)) {
		out = append(out, fmt.Sprintf("%s=%d", k, n[k]))
	}
	return strings.Join(out, " ")
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

// ---- helpers ----

// poll waits for cond, failing the test with the last thing seen (and the
// manager's recent log) if it never holds or the manager exits.
func (e *env) poll(t *testing.T, m *manager, what string, cond func(ctx context.Context) (bool, string, error)) {
	t.Helper()
	var seen string
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, converge, true, func(ctx context.Context) (bool, error) {
		if m != nil && m.proc.Exited() {
			return false, fmt.Errorf("%s exited: %v", m.name, m.proc.Err())
		}
		ok, s, err := cond(ctx)
		seen = s
		return ok, err
	})
	if err != nil {
		msg := fmt.Sprintf("waiting for %s: %v; last seen: %s", what, err, seen)
		if m != nil {
			msg += fmt.Sprintf("\n---- %s log (tail) ----\n%s", m.name, tail(m.log.String(), 30))
		}
		t.Fatal(msg)
	}
}

// pollErr is poll without a test: the error when cond never holds.
func pollErr(timeout time.Duration, cond func(ctx context.Context) (bool, string, error)) error {
	return wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, _, err := cond(ctx)
		return ok, err
	})
}

func ingressAddrs(st corev1.LoadBalancerStatus) string {
	var out []string
	for _, in := range st.Ingress {
		out = append(out, in.IP+in.Hostname)
	}
	return strings.Join(out, ",")
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("... and %d more", len(s)-n))
	}
	return s
}
