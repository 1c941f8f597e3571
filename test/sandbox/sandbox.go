// Package sandbox is `make demo`: the whole CCM running locally on loopback.
// A real etcd + kube-apiserver, the AWS emulator with a few instances, the
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
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/multicloud-ccm/multicloud-ccm/test/ccmproc"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
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
}

const (
	clusterID = "demo"
	region    = "eu-west-1"
	podCIDR   = "10.244.0.0/16"
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

	say("AWS emulator: one VPC, subnets in 3 zones, %d instances", o.Nodes)
	emu := cloudsimaws.NewDefault(cloudsimaws.Config{Region: region, ClusterID: clusterID})
	srv, err := cloudsim.Start(emu)
	if err != nil {
		return err
	}
	defer srv.Close()
	fx := emu.Fixture()
	ids, err := emu.Launch(cloudsimaws.LaunchSpec{
		Count: o.Nodes, InstanceType: "m5.large", PublicIP: true,
		Tags: map[string]string{fx.ClusterTagKey: "owned"},
	})
	if err != nil {
		return err
	}

	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	kubeconfig, err := cp.CCMKubeconfig(ctx, 24*time.Hour)
	if err != nil {
		return err
	}
	cloudConfig := filepath.Join(o.StateDir, "cloud-config.yaml")
	if err := os.WriteFile(cloudConfig, []byte(fmt.Sprintf(`apiVersion: multicloud-ccm.io/v1alpha1
kind: CloudConfig
provider: aws
clusterID: %s
aws:
  region: %s
  vpcID: %s
  routeTables:
    ids: [%s]
  endpoints:
    ec2: %s
    elbv2: %s
  credentials:
    accessKeyID: AKIASANDBOXDEMO00000
    secretAccessKey: sandbox-secret-not-real
`, clusterID, region, fx.VPCID, fx.RouteTableID, srv.URL(), srv.URL())), 0o600); err != nil {
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
		Args:   []string{"--cluster-cidr=" + podCIDR, "--configure-cloud-routes=true", "--allocate-node-cidrs=false"},
		Output: ccmLog,
	})
	if err != nil {
		return err
	}
	defer ccm.Stop()

	admin := cp.AdminClient
	say("registering %d Nodes as a --cloud-provider=external kubelet would (uninitialized taint, no providerID)", len(ids))
	for i, id := range ids {
		info, _ := emu.Instance(id)
		node := ccmproc.KubeletNode(info.PrivateDNSName, fmt.Sprintf("10.244.%d.0/24", i))
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
	if err := waitReady(ctx, admin, emu, len(ids), ccm); err != nil {
		return fmt.Errorf("%w (see %s)", err, filepath.Join(o.StateDir, "ccm.log"))
	}
	if err := report(ctx, o.Out, admin, srv, emu); err != nil {
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
		"Emulator admin: %s/admin/resources  %s/admin/calls\nPress Ctrl-C to stop everything.\n", adminKubeconfig, srv.URL(), srv.URL())
	select {
	case <-ctx.Done():
	case <-ccm.Done():
		return fmt.Errorf("multicloud-ccm exited: %v", ccm.Err())
	}
	say("stopping")
	return nil
}

func waitReady(ctx context.Context, c kubernetes.Interface, emu *cloudsimaws.Emulator, nodes int, ccm *ccmproc.Process) error {
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
		routes := 0
		for _, r := range emu.Resources() {
			if r.Kind == cloudsimaws.KindRoute && strings.HasPrefix(r.Name, "10.244.") {
				routes++
			}
		}
		last = fmt.Sprintf("%d/%d nodes initialized, load balancer address: %v, routes: %d", initialized, nodes, hasLB, routes)
		return initialized == nodes && hasLB && routes >= nodes, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the CCM: %v; last seen: %s", err, last)
	}
	return nil
}

// report prints what the CCM did, from Kubernetes' side and the cloud's.
func report(ctx context.Context, out io.Writer, c kubernetes.Interface, srv *cloudsim.Server, emu *cloudsimaws.Emulator) error {
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
	fmt.Fprintln(out, "\nCloud resources the CCM created (tagged for the cluster)")
	resources := emu.Resources()
	sort.Slice(resources, func(i, j int) bool {
		if resources[i].Kind != resources[j].Kind {
			return resources[i].Kind < resources[j].Kind
		}
		return resources[i].ID < resources[j].ID
	})
	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  KIND\tNAME\tID\tSERVICE")
	for _, r := range resources {
		svcTag := r.Tags["kubernetes.io/service-name"]
		podRoute := r.Kind == cloudsimaws.KindRoute && strings.HasPrefix(r.Name, "10.244.")
		if svcTag == "" && !podRoute {
			continue
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", r.Kind, r.Name, shorten(r.ID), svcTag)
	}
	tw.Flush()

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
