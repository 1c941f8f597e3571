// Package sandbox is `make demo`: the whole CCM running locally on loopback.
// A real etcd + kube-apiserver, a cloud's emulator (chosen by name through
// its conformance adapter, test/conformance/clouds; default aws) with a few
// instances, the
// multicloud-ccm binary with a generated cloud-config, Nodes registered the
// way a --cloud-provider=external kubelet registers them, and one
// LoadBalancer Service. It prints a report a person can read and then keeps
// running (unless Once) with a kubeconfig for kubectl.
package sandbox

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
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

	"github.com/multicloud-ccm/multicloud-ccm/test/ccmproc"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance/clouds"
	"github.com/multicloud-ccm/multicloud-ccm/test/controlplane"
)

// Options tune Run.
type Options struct {
	// Out receives progress and the report.
	Out io.Writer
	// Nodes is how many instances and Nodes to create (default 3).
	Nodes int
	// StateDir holds the binary, cloud-config, kubeconfig and logs
	// (default <repo>/test/sandbox/.state).
	StateDir string
	// Once exits after the report instead of running until ctx ends.
	Once bool
	// Cloud names the emulated cloud (an adapter in
	// test/conformance/clouds); empty means clouds.Default.
	Cloud string
}

const (
	clusterID = "demo"
	podCIDR   = "10.244.0.0/16"
	// metricsReader is the ServiceAccount the demo creates to show how a
	// scraper (Prometheus) reads the manager's /metrics.
	metricsReader = "metrics-reader"
)

// Run runs the sandbox until ctx ends (or, with Once, until the report is
// printed) and stops everything it started.
func Run(ctx context.Context, o Options) error {
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.Nodes <= 0 {
		o.Nodes = 3
	}
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

	adapter, err := clouds.Get(o.Cloud)
	if err != nil {
		return err
	}
	cloud, err := adapter.Start(conformance.Options{ClusterID: clusterID, Routes: adapter.Features().Routes})
	if err != nil {
		return err
	}
	defer cloud.Close()
	zones := cloud.Zones()
	say("%s emulator: zones %s, %d instances", adapter.Name(), strings.Join(zones, ", "), o.Nodes)
	var insts []conformance.Instance
	for i := range o.Nodes {
		inst, err := cloud.Launch(conformance.InstanceSpec{Zone: zones[i%len(zones)], PublicIP: true, NameHint: fmt.Sprintf("demo-%d", i)})
		if err != nil {
			return err
		}
		insts = append(insts, inst)
	}

	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	kubeconfig, err := cp.CCMKubeconfig(ctx, 24*time.Hour)
	if err != nil {
		return err
	}
	cloudConfig := filepath.Join(o.StateDir, "cloud-config.yaml")
	if err := os.WriteFile(cloudConfig, []byte(cloud.Config().YAML()), 0o600); err != nil {
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
			fmt.Sprintf("--configure-cloud-routes=%t", adapter.Features().Routes), "--allocate-node-cidrs=false"},
			cloud.ExtraArgs()...),
		Output: ccmLog,
	})
	if err != nil {
		return err
	}
	defer ccm.Stop()

	admin := cp.AdminClient
	say("registering %d Nodes as a --cloud-provider=external kubelet would (uninitialized taint, no providerID)", len(insts))
	for i, inst := range insts {
		node := ccmproc.KubeletNode(inst.NodeName, fmt.Sprintf("10.244.%d.0/24", i))
		if _, err := admin.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	say("creating LoadBalancer Service default/web (80 -> 8080)")
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
		},
	}
	if _, err := admin.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return err
	}

	say("waiting for the CCM to initialize the Nodes, provision the load balancer and program routes")
	if err := waitReady(ctx, admin, cloud, adapter.Features().Routes, len(insts), ccm); err != nil {
		return fmt.Errorf("%w (see %s)", err, filepath.Join(o.StateDir, "ccm.log"))
	}
	if err := report(ctx, o.Out, admin, cloud); err != nil {
		return err
	}
	metricsKubeconfig, err := metricsAccess(ctx, cp, filepath.Join(o.StateDir, "metrics-kubeconfig"))
	if err != nil {
		return err
	}
	if err := reportMetrics(o.Out, ccm.Port, metricsKubeconfig); err != nil {
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
	fmt.Fprintf(o.Out, "\nThe sandbox is running. Try:\n  export KUBECONFIG=%s\n  kubectl get nodes -o wide\n  kubectl get svc web\n"+
		"Emulator admin: %s/admin/resources  %s/admin/calls\nPress Ctrl-C to stop everything.\n", adminKubeconfig,
		cloud.Server().URL(), cloud.Server().URL())
	select {
	case <-ctx.Done():
	case <-ccm.Done():
		return fmt.Errorf("multicloud-ccm exited: %v", ccm.Err())
	}
	say("stopping")
	return nil
}

func waitReady(ctx context.Context, c kubernetes.Interface, cloud conformance.Cloud, routes bool, nodes int, ccm *ccmproc.Process) error {
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
		svc, err := c.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		hasLB := len(svc.Status.LoadBalancer.Ingress) > 0
		podRoutes := len(cloud.PodRoutes())
		last = fmt.Sprintf("%d/%d nodes initialized, load balancer address: %v, routes: %d", initialized, nodes, hasLB, podRoutes)
		return initialized == nodes && hasLB && (!routes || podRoutes >= nodes), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the CCM: %v; last seen: %s", err, last)
	}
	return nil
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
		var addrs []string
		for _, a := range n.Status.Addresses {
			addrs = append(addrs, string(a.Type)+"="+a.Address)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", n.Name, n.Spec.ProviderID,
			n.Labels[corev1.LabelTopologyZone], n.Labels[corev1.LabelInstanceTypeStable], strings.Join(addrs, " "))
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
	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  KIND\tNAME\tID")
	for _, r := range cloud.ServiceResources(types.NamespacedName{Namespace: "default", Name: "web"}) {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", r.Kind, r.Name, shorten(r.ID))
	}
	tw.Flush()
	if routes := cloud.PodRoutes(); len(routes) > 0 {
		fmt.Fprintln(out, "\nPod routes the CCM programmed")
		var cidrs []string
		for cidr := range routes {
			cidrs = append(cidrs, cidr)
		}
		sort.Strings(cidrs)
		for _, cidr := range cidrs {
			fmt.Fprintf(out, "  %s via %s\n", cidr, routes[cidr])
		}
	}

	srv := cloud.Server()
	calls := srv.Calls()
	var ops []string
	for op := range calls {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	fmt.Fprintln(out, "\nCloud API calls so far")
	for _, op := range ops {
		fmt.Fprintf(out, "  %-40s %d\n", op, calls[op])
	}
	return nil
}

func shorten(id string) string {
	if len(id) > 60 {
		return "..." + id[len(id)-57:]
	}
	return id
}
