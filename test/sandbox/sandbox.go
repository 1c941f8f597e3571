// Package sandbox is `make demo`: the whole CCM running locally on loopback.
// A real etcd + kube-apiserver, a cloud's emulator (chosen by name through
// its conformance adapter, test/conformance/clouds; default aws) with a few
// instances, the
// multicloud-ccm binary with a generated cloud-config, Nodes registered the
// way a --cloud-provider=external kubelet registers them, and one
// LoadBalancer Service. It prints a report a person can read and then keeps
// running (unless Once) with a kubeconfig for kubectl.
//
// Several clouds named at once (Cloud "openstack,aws") make a hybrid
// cluster: an emulator per cloud, one manager serving all of them from one
// cloud-config (the first cloud is the default load-balancer cloud),
// Nodes in every cloud, and a LoadBalancer Service per cloud.
package sandbox

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/multicloud-ccm/multicloud-ccm/providers/compose/hybrid"
	"github.com/multicloud-ccm/multicloud-ccm/test/ccmproc"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance/clouds"
	"github.com/multicloud-ccm/multicloud-ccm/test/controlplane"
)

// Options tune Run.
type Options struct {
	// Out receives progress and the report.
	Out io.Writer
	// Nodes is how many instances and Nodes to create in each cloud
	// (default 3).
	Nodes int
	// StateDir holds the binary, cloud-config, kubeconfig and logs
	// (default <repo>/test/sandbox/.state).
	StateDir string
	// Once exits after the report instead of running until ctx ends.
	Once bool
	// Cloud names the emulated cloud (an adapter in
	// test/conformance/clouds); empty means clouds.Default. A
	// comma-separated list ("openstack,aws") runs a hybrid cluster of
	// those clouds, the first the default load-balancer cloud.
	Cloud string
}

const (
	clusterID = "demo"
	podCIDR   = "10.244.0.0/16"
	// metricsReader is the ServiceAccount the demo creates to show how a
	// scraper (Prometheus) reads the manager's /metrics.
	metricsReader = "metrics-reader"

	// The hybrid cloud-config's keys a cluster uses.
	providerLabel      = hybrid.LabelProvider
	providerAnnotation = hybrid.AnnotationLoadBalancerProvider
)

// demoCloud is one of the sandbox's clouds: its emulator, its instances
// and its LoadBalancer Service.
type demoCloud struct {
	adapter conformance.Adapter
	cloud   conformance.Cloud
	insts   []conformance.Instance
	// svc is the Service whose load balancer is in this cloud;
	// annotations are what put it there (none for the default cloud).
	svc         string
	annotations map[string]string
}

func (d *demoCloud) name() string { return d.adapter.Name() }

func (d *demoCloud) routes() bool { return d.adapter.Features().Routes }

func (d *demoCloud) svcKey() types.NamespacedName {
	return types.NamespacedName{Namespace: "default", Name: d.svc}
}

// cloudNames splits Options.Cloud: one name (maybe empty: the default),
// or several distinct ones for a hybrid cluster.
func cloudNames(cloud string) ([]string, error) {
	names := strings.Split(cloud, ",")
	if len(names) == 1 {
		return names, nil
	}
	for i, n := range names {
		names[i] = strings.TrimSpace(n)
		if names[i] == "" {
			return nil, fmt.Errorf("cloud list %q has an empty name", cloud)
		}
		if slices.Contains(names[:i], names[i]) {
			return nil, fmt.Errorf("cloud list %q names %s twice", cloud, names[i])
		}
	}
	return names, nil
}

// Run runs the sandbox until ctx ends (or, with Once, until the report is
// printed) and stops everything it started.
func Run(ctx context.Context, o Options) error {
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.Nodes <= 0 {
		o.Nodes = 3
	}
	names, err := cloudNames(o.Cloud)
	if err != nil {
		return err
	}
	hybrid := len(names) > 1
	root, err := controlplane.RepoRoot()
	if err != nil {
		return err
	}
	if o.StateDir == "" {
		o.StateDir = filepath.Join(root, "test", "sandbox", ".state")
	}
	if err := os.MkdirAll(o.StateDir, 0o755); err != nil {
		return err
	}
	say := func(format string, args ...any) { fmt.Fprintf(o.Out, "==> "+format+"\n", args...) }

	say("control plane: building kube-apiserver and etcd if needed (the first run takes minutes; progress follows)")
	if _, _, err := controlplane.EnsureBinaries(o.Out); err != nil {
		return err
	}
	cpLog, err := os.Create(filepath.Join(o.StateDir, "controlplane.log"))
	if err != nil {
		return err
	}
	defer cpLog.Close()
	say("control plane: starting etcd + kube-apiserver on loopback")
	cp, err := controlplane.Start(controlplane.Options{Output: cpLog})
	if err != nil {
		return err
	}
	defer cp.Stop()

	say("building multicloud-ccm")
	binary := filepath.Join(o.StateDir, "multicloud-ccm")
	if err := ccmproc.Build(binary, "", o.Out); err != nil {
		return err
	}

	var demo []*demoCloud
	for i, name := range names {
		adapter, err := clouds.Get(name)
		if err != nil {
			return err
		}
		// One clusterID for every emulator: their fixtures are tagged
		// with it, and a hybrid cloud-config has one.
		cloud, err := adapter.Start(conformance.Options{ClusterID: clusterID, Routes: adapter.Features().Routes})
		if err != nil {
			return err
		}
		defer cloud.Close()
		d := &demoCloud{adapter: adapter, cloud: cloud, svc: "web"}
		// Node names must not collide across clouds (a name two clouds
		// have places the Node in neither), so in a hybrid cluster each
		// cloud's instances are named after it, where the cloud takes
		// the hint.
		hint := "demo-%d"
		if hybrid {
			d.svc = "web-" + adapter.Name()
			hint = "demo-" + adapter.Name() + "-%d"
			if i > 0 {
				d.annotations = map[string]string{providerAnnotation: adapter.Name()}
			}
		}
		zones := cloud.Zones()
		say("%s emulator: zones %s, %d instances", adapter.Name(), strings.Join(zones, ", "), o.Nodes)
		for j := range o.Nodes {
			inst, err := cloud.Launch(conformance.InstanceSpec{Zone: zones[j%len(zones)], PublicIP: true, NameHint: fmt.Sprintf(hint, j)})
			if err != nil {
				return err
			}
			d.insts = append(d.insts, inst)
		}
		demo = append(demo, d)
	}

	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	kubeconfig, err := cp.CCMKubeconfig(ctx, 24*time.Hour)
	if err != nil {
		return err
	}
	// Routes are configured when any cloud programs them; in a hybrid
	// cluster each Node's route is made in its own cloud, and a cloud
	// without routes makes none for its Nodes
	// (providers/compose/hybrid/routes.go), so only routed clouds'
	// Nodes are waited on for routes.
	routes := false
	var cfgs []conformance.CloudConfig
	var extraArgs []string
	for _, d := range demo {
		routes = routes || d.routes()
		cfgs = append(cfgs, d.cloud.Config())
		for _, a := range d.cloud.ExtraArgs() {
			if !slices.Contains(extraArgs, a) {
				extraArgs = append(extraArgs, a)
			}
		}
	}
	doc := cfgs[0].YAML()
	if hybrid {
		doc = conformance.HybridYAML(clusterID, cfgs...)
	}
	cloudConfig := filepath.Join(o.StateDir, "cloud-config.yaml")
	if err := os.WriteFile(cloudConfig, []byte(doc), 0o600); err != nil {
		return err
	}

	say("starting multicloud-ccm (log: %s)", filepath.Join(o.StateDir, "ccm.log"))
	ccmLog, err := os.Create(filepath.Join(o.StateDir, "ccm.log"))
	if err != nil {
		return err
	}
	defer ccmLog.Close()
	ccm, err := ccmproc.Start(ccmproc.Options{
		Binary: binary, CloudConfig: cloudConfig, Kubeconfig: kubeconfig, LeaderElect: true,
		Args: append([]string{"--cluster-cidr=" + podCIDR,
			fmt.Sprintf("--configure-cloud-routes=%t", routes), "--allocate-node-cidrs=false"},
			extraArgs...),
		Output: ccmLog,
	})
	if err != nil {
		return err
	}
	defer ccm.Stop()

	admin := cp.AdminClient
	total := 0
	for _, d := range demo {
		total += len(d.insts)
	}
	if hybrid {
		say("registering %d Nodes (%d in each cloud) as a --cloud-provider=external kubelet would (uninitialized taint, no providerID, no %s label: the manager finds each Node's cloud by its name)",
			total, o.Nodes, providerLabel)
	} else {
		say("registering %d Nodes as a --cloud-provider=external kubelet would (uninitialized taint, no providerID)", total)
	}
	// Pod CIDRs are numbered across the clouds: they share the cluster's.
	cidr := 0
	for _, d := range demo {
		for _, inst := range d.insts {
			node := ccmproc.KubeletNode(inst.NodeName, fmt.Sprintf("10.244.%d.0/24", cidr))
			cidr++
			if _, err := admin.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
				return err
			}
		}
	}
	for i, d := range demo {
		switch {
		case !hybrid:
			say("creating LoadBalancer Service default/%s (80 -> 8080)", d.svc)
		case i == 0:
			say("creating LoadBalancer Service default/%s (80 -> 8080) in %s, the default load-balancer cloud (no annotation)", d.svc, d.name())
		default:
			say("creating LoadBalancer Service default/%s (80 -> 8080) in %s (annotation %s: %s)", d.svc, d.name(), providerAnnotation, d.name())
		}
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: d.svc, Namespace: "default", Annotations: d.annotations},
			Spec: corev1.ServiceSpec{
				Type:     corev1.ServiceTypeLoadBalancer,
				Selector: map[string]string{"app": "web"},
				Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
			},
		}
		if _, err := admin.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			return err
		}
	}

	if hybrid {
		say("waiting for the CCM to initialize the Nodes, provision the load balancers (each with its cloud's Nodes) and program routes")
	} else {
		say("waiting for the CCM to initialize the Nodes, provision the load balancer and program routes")
	}
	if err := waitReady(ctx, admin, demo, hybrid, ccm); err != nil {
		return fmt.Errorf("%w (see %s)", err, filepath.Join(o.StateDir, "ccm.log"))
	}
	if hybrid {
		err = reportHybrid(ctx, o.Out, admin, demo)
	} else {
		err = report(ctx, o.Out, admin, demo[0].cloud)
	}
	if err != nil {
		return err
	}
	metricsKubeconfig, err := metricsAccess(ctx, cp, filepath.Join(o.StateDir, "metrics-kubeconfig"))
	if err != nil {
		return err
	}
	if err := reportMetrics(o.Out, ccm.Port, metricsKubeconfig, hybrid); err != nil {
		return err
	}

	adminKubeconfig, err := cp.WriteKubeconfig(cp.Admin, filepath.Join(o.StateDir, "kubeconfig"))
	if err != nil {
		return err
	}
	if o.Once {
		say("done (ONCE): stopping everything")
		return nil
	}
	if hybrid {
		fmt.Fprintf(o.Out, "\nThe sandbox is running. Try:\n  export KUBECONFIG=%s\n  kubectl get nodes -o wide -L %s\n  kubectl get svc\n",
			adminKubeconfig, providerLabel)
		for _, d := range demo {
			fmt.Fprintf(o.Out, "Emulator admin (%s): %s/admin/resources  %s/admin/calls\n", d.name(), d.cloud.Server().URL(), d.cloud.Server().URL())
		}
		fmt.Fprintf(o.Out, "Press Ctrl-C to stop everything.\n")
	} else {
		cloud := demo[0].cloud
		fmt.Fprintf(o.Out, "\nThe sandbox is running. Try:\n  export KUBECONFIG=%s\n  kubectl get nodes -o wide\n  kubectl get svc web\n"+
			"Emulator admin: %s/admin/resources  %s/admin/calls\nPress Ctrl-C to stop everything.\n", adminKubeconfig,
			cloud.Server().URL(), cloud.Server().URL())
	}
	select {
	case <-ctx.Done():
	case <-ccm.Done():
		return fmt.Errorf("multicloud-ccm exited: %v", ccm.Err())
	}
	say("stopping")
	return nil
}

// waitReady waits until every Node is initialized, every cloud's Service
// has an address and every routed cloud has its Nodes' routes; in a
// hybrid cluster also until each load balancer has exactly its cloud's
// Nodes, which the report shows.
func waitReady(ctx context.Context, c kubernetes.Interface, demo []*demoCloud, hybrid bool, ccm *ccmproc.Process) error {
	nodes := 0
	for _, d := range demo {
		nodes += len(d.insts)
	}
	var last string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if ccm.Exited() {
			return false, fmt.Errorf("multicloud-ccm exited: %v", ccm.Err())
		}
		list, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		initialized := 0
		for _, n := range list.Items {
			if ccmproc.Initialized(&n) && len(n.Status.Addresses) > 0 {
				initialized++
			}
		}
		ready := initialized == nodes
		var seen []string
		for _, d := range demo {
			svc, err := c.CoreV1().Services("default").Get(ctx, d.svc, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			hasLB := len(svc.Status.LoadBalancer.Ingress) > 0
			podRoutes := len(d.cloud.PodRoutes())
			ready = ready && hasLB && (!d.routes() || podRoutes >= len(d.insts))
			if !hybrid {
				seen = append(seen, fmt.Sprintf("load balancer address: %v, routes: %d", hasLB, podRoutes))
				continue
			}
			backends := "none"
			if lbs := d.cloud.LoadBalancers(d.svcKey()); len(lbs) == 1 {
				backends = fmt.Sprintf("%d/%d", len(lbs[0].Backends), len(d.insts))
				ready = ready && slices.Equal(lbs[0].Backends, d.instanceIDs())
			} else {
				ready = false
			}
			seen = append(seen, fmt.Sprintf("%s: %s address: %v, backends: %s, routes: %d", d.name(), d.svc, hasLB, backends, podRoutes))
		}
		last = fmt.Sprintf("%d/%d nodes initialized, %s", initialized, nodes, strings.Join(seen, "; "))
		return ready, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the CCM: %v; last seen: %s", err, last)
	}
	return nil
}

// instanceIDs are the cloud's instances' IDs, sorted as
// conformance.LoadBalancer.Backends are.
func (d *demoCloud) instanceIDs() []string {
	var ids []string
	for _, i := range d.insts {
		ids = append(ids, i.ID)
	}
	slices.Sort(ids)
	return ids
}

// report prints what the CCM did, from Kubernetes' side and the cloud's.
func report(ctx context.Context, out io.Writer, c kubernetes.Interface, cloud conformance.Cloud) error {
	list, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "\nNodes")
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAME\tPROVIDER ID\tZONE\tTYPE\tADDRESSES")
	for _, n := range list.Items {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", n.Name, n.Spec.ProviderID,
			n.Labels[corev1.LabelTopologyZone], n.Labels[corev1.LabelInstanceTypeStable], addresses(&n))
	}
	tw.Flush()

	svc, err := c.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "\nService default/web (type LoadBalancer)")
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		fmt.Fprintf(out, "  address: %s%s\n", ing.Hostname, ing.IP)
	}
	fmt.Fprintln(out, "\nCloud resources the CCM created for default/web")
	serviceResources(out, cloud, types.NamespacedName{Namespace: "default", Name: "web"})
	if routes := cloud.PodRoutes(); len(routes) > 0 {
		fmt.Fprintln(out, "\nPod routes the CCM programmed")
		podRoutes(out, routes)
	}
	fmt.Fprintln(out, "\nCloud API calls so far")
	cloudCalls(out, cloud)
	return nil
}

// reportHybrid is report for several clouds: each Node's cloud (the label
// the manager set), each Service's cloud, address and backends, and each
// cloud's resources, routes and calls.
func reportHybrid(ctx context.Context, out io.Writer, c kubernetes.Interface, demo []*demoCloud) error {
	list, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nNodes (CLOUD is their %s label, which the manager set)\n", providerLabel)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAME\tCLOUD\tPROVIDER ID\tZONE\tTYPE\tADDRESSES")
	for _, n := range list.Items {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", n.Name, n.Labels[providerLabel], n.Spec.ProviderID,
			n.Labels[corev1.LabelTopologyZone], n.Labels[corev1.LabelInstanceTypeStable], addresses(&n))
	}
	tw.Flush()

	fmt.Fprintln(out, "\nLoadBalancer Services")
	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  SERVICE\tCLOUD\tADDRESS\tBACKENDS")
	for i, d := range demo {
		svc, err := c.CoreV1().Services("default").Get(ctx, d.svc, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var addrs []string
		for _, ing := range svc.Status.LoadBalancer.Ingress {
			addrs = append(addrs, ing.Hostname+ing.IP)
		}
		where := d.name() + " (annotation)"
		if i == 0 {
			where = d.name() + " (default)"
		}
		fmt.Fprintf(tw, "  default/%s\t%s\t%s\t%s\n", d.svc, where, strings.Join(addrs, " "), d.backends())
	}
	tw.Flush()

	for _, d := range demo {
		fmt.Fprintf(out, "\nCloud resources the CCM created in %s for default/%s\n", d.name(), d.svc)
		serviceResources(out, d.cloud, d.svcKey())
	}
	for _, d := range demo {
		if routes := d.cloud.PodRoutes(); len(routes) > 0 {
			fmt.Fprintf(out, "\nPod routes the CCM programmed in %s\n", d.name())
			podRoutes(out, routes)
		}
	}
	for _, d := range demo {
		fmt.Fprintf(out, "\nCloud API calls so far to %s\n", d.name())
		cloudCalls(out, d.cloud)
	}
	return nil
}

// backends names the Nodes the cloud's load balancer of the Service sends
// traffic to (an instance ID that is none of the cloud's Nodes as is).
func (d *demoCloud) backends() string {
	byID := map[string]string{}
	for _, i := range d.insts {
		byID[i.ID] = i.NodeName
	}
	var out []string
	for _, lb := range d.cloud.LoadBalancers(d.svcKey()) {
		for _, id := range lb.Backends {
			if name, ok := byID[id]; ok {
				id = name
			}
			out = append(out, id)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func addresses(n *corev1.Node) string {
	var addrs []string
	for _, a := range n.Status.Addresses {
		addrs = append(addrs, string(a.Type)+"="+a.Address)
	}
	return strings.Join(addrs, " ")
}

func serviceResources(out io.Writer, cloud conformance.Cloud, svc types.NamespacedName) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  KIND\tNAME\tID")
	for _, r := range cloud.ServiceResources(svc) {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", r.Kind, r.Name, shorten(r.ID))
	}
	tw.Flush()
}

func podRoutes(out io.Writer, routes map[string]string) {
	var cidrs []string
	for cidr := range routes {
		cidrs = append(cidrs, cidr)
	}
	sort.Strings(cidrs)
	for _, cidr := range cidrs {
		fmt.Fprintf(out, "  %s via %s\n", cidr, routes[cidr])
	}
}

func cloudCalls(out io.Writer, cloud conformance.Cloud) {
	calls := cloud.Server().Calls()
	var ops []string
	for op := range calls {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	for _, op := range ops {
		fmt.Fprintf(out, "  %-40s %d\n", op, calls[op])
	}
}

func shorten(id string) string {
	if len(id) > 60 {
		return "..." + id[len(id)-57:]
	}
	return id
}
