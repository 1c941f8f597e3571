// Command upstreamazure runs the upstream Azure cloud-controller-manager
// (sigs.k8s.io/cloud-provider-azure, a binary built separately) against
// the Azure emulator and a real kube-apiserver, as a user would point it
// at Azure Stack Hub (AD FS, the hybrid profile's api-versions): the
// emulator must be faithful enough that upstream provisions a
// LoadBalancer Service unchanged, its NIC-based pool included. It is
// a developer's check of the emulator, not part of make test (upstream's
// binary is not built by the project).
//
//	go run ./hack/upstreamazure -binary /path/to/cloud-controller-manager
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/multicloud-ccm/multicloud-ccm/test/ccmproc"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimazure "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/azure"
	"github.com/multicloud-ccm/multicloud-ccm/test/controlplane"
)

func main() {
	binary := flag.String("binary", "", "the upstream Azure cloud-controller-manager binary")
	dir := flag.String("dir", "", "state directory (default a temporary one)")
	switchTo := flag.Bool("switch", true, "then switch the cluster to this manager (import-config) and check nothing changes")
	flag.BoolVar(&dualStack, "dual-stack", false, "a dual-stack network and a dual-stack Service (IPv4 and IPv6)")
	flag.Parse()
	if err := run(*binary, *dir, *switchTo); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
	fmt.Println("PASS")
}

// dualStack runs the check with a dual-stack network and Service.
var dualStack bool

func run(binary, dir string, switchTo bool) error {
	if binary == "" {
		return fmt.Errorf("-binary is required")
	}
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "upstreamazure-"); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	if _, _, err := controlplane.EnsureBinaries(os.Stdout); err != nil {
		return err
	}
	cpLog, _ := os.Create(filepath.Join(dir, "controlplane.log"))
	cpOpts := controlplane.Options{Output: cpLog}
	if dualStack {
		cpOpts.ExtraAPIServerArgs = map[string]string{"service-cluster-ip-range": "10.96.0.0/16,fd00:10:96::/112"}
	}
	cp, err := controlplane.Start(cpOpts)
	if err != nil {
		return err
	}
	defer cp.Stop()
	const cluster = "upstream"
	// AD FS, as a disconnected Azure Stack Hub: MSAL then looks nothing
	// up on the internet (Azure AD's instance discovery).
	emu := cloudsimazure.New(cloudsimazure.Config{ClusterID: cluster, TenantID: "adfs", DualStack: dualStack})
	srv, err := cloudsim.Start(emu)
	if err != nil {
		return err
	}
	defer srv.Close()
	fx := emu.Fixture()
	var vms []cloudsimazure.VMInfo
	for i := range 2 {
		vm, err := emu.LaunchVM(cloudsimazure.VMSpec{Name: fmt.Sprintf("up-%d", i)})
		if err != nil {
			return err
		}
		vms = append(vms, vm)
	}

	// Azure Stack Hub's way to name custom endpoints: an environment file.
	env := map[string]any{
		"name": "AzureStackCloud", "managementPortalURL": srv.URL() + "/",
		"resourceManagerEndpoint": srv.URL() + "/", "activeDirectoryEndpoint": srv.URL() + "/",
		"tokenAudience": srv.URL() + "/", "serviceManagementEndpoint": srv.URL() + "/",
		"resourceManagerVMDNSSuffix": "cloudapp.local", "storageEndpointSuffix": "local",
	}
	envFile := filepath.Join(dir, "environment.json")
	if err := writeJSON(envFile, env); err != nil {
		return err
	}
	cfg := map[string]any{
		"cloud": "AzureStackCloud", "tenantId": "adfs", "identitySystem": "adfs", "subscriptionId": fx.SubscriptionID,
		"aadClientId": fx.ClientID, "aadClientSecret": fx.ClientSecret,
		"resourceGroup": fx.ResourceGroup, "location": fx.Location,
		"vnetName": fx.VNetName, "subnetName": fx.SubnetName, "securityGroupName": fx.SecurityGroupName,
		"loadBalancerSku": "standard", "vmType": "standard", "useInstanceMetadata": false,
	}
	cfgFile := filepath.Join(dir, "azure.json")
	if err := writeJSON(cfgFile, cfg); err != nil {
		return err
	}
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, emu.CAPEM(), 0o600); err != nil {
		return err
	}
	// Upstream's RBAC is wider than this project's ClusterRole (leases for
	// its resource lock, EndpointSlices): it runs as the admin here.
	kubeconfig, err := cp.WriteKubeconfig(cp.Admin, filepath.Join(dir, "kubeconfig"))
	if err != nil {
		return err
	}
	logFile := filepath.Join(dir, "upstream-ccm.log")
	out, _ := os.Create(logFile)
	ccm, err := ccmproc.Start(ccmproc.Options{
		Binary: binary, CloudConfig: cfgFile, Kubeconfig: kubeconfig,
		// Upstream initializes Nodes with its cloud-node-manager DaemonSet
		// (on each node, through IMDS), and runs the manager with
		// --controllers=*,-cloud-node (helm/cloud-provider-azure); the
		// Nodes here are registered as that leaves them.
		Args: []string{"--cloud-provider=azure", "--cluster-name=" + cluster, "--controllers=service",
			"--configure-cloud-routes=false", "--allocate-node-cidrs=false"},
		Env:    []string{"AZURE_ENVIRONMENT_FILEPATH=" + envFile, "SSL_CERT_FILE=" + caFile},
		Output: out,
	})
	if err != nil {
		return err
	}
	defer ccm.Stop()
	admin := cp.AdminClient
	for i, vm := range vms {
		node := ccmproc.KubeletNode(strings.ToLower(vm.ComputerName), fmt.Sprintf("10.244.%d.0/24", i))
		node.Spec.Taints = nil
		node.Spec.ProviderID = "azure://" + vm.ID
		node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: vm.PrivateIP}, {Type: corev1.NodeHostName, Address: node.Name}}
		if vm.PrivateIPv6 != "" {
			node.Status.Addresses = append(node.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: vm.PrivateIPv6})
		}
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		created, err := admin.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		created.Status = node.Status
		if _, err := admin.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "web"},
		Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
	}}
	wantIngress, wantPools := 1, 1
	if dualStack {
		require := corev1.IPFamilyPolicyRequireDualStack
		svc.Spec.IPFamilyPolicy = &require
		svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
		wantIngress, wantPools = 2, 2
	}
	if _, err := admin.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out; see %s", logFile)
		case <-ccm.Done():
			return fmt.Errorf("the upstream CCM exited: %v; see %s", ccm.Err(), logFile)
		case <-time.After(2 * time.Second):
		}
		got, err := admin.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		// Upstream's default pool is NIC-based: each VM's NIC names it
		// (dual-stack: the IPv4 and the IPv6 configuration their pool).
		inPool := 0
		for _, vm := range vms {
			if pools, _ := emu.BackendPools(vm.Name); len(pools) >= wantPools {
				inPool++
			}
		}
		fmt.Printf("service ingress %v, VMs in the backend pools %d/%d\n", got.Status.LoadBalancer.Ingress, inPool, len(vms))
		if len(got.Status.LoadBalancer.Ingress) >= wantIngress && inPool == len(vms) {
			fmt.Printf("upstream's calls: %v\n", srv.Calls())
			break
		}
	}
	if !switchTo {
		return nil
	}

	// The switch, as README "Switching" says: stop upstream, import its
	// azure.json, run this manager.
	ccm.Stop()
	fmt.Println("PASS: the upstream Azure CCM provisioned the Service, its NIC-based pool holding both VMs, against the emulator")
	before := srv.Resources()
	svcBefore, err := admin.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		return err
	}
	addr := ingressIPs(svcBefore)
	ours := filepath.Join(dir, "multicloud-ccm")
	if err := ccmproc.Build(ours, "", os.Stdout); err != nil {
		return err
	}
	// It exits non-zero until the endpoints its notes ask for are added.
	imported, err := exec.Command(ours, "import-config", "--from", "azure", "--cluster-name", cluster, cfgFile).Output()
	if len(imported) == 0 {
		return fmt.Errorf("import-config: %w", err)
	}
	// What import-config's note asks to add for Azure Stack Hub: the
	// environment file's endpoints, and the private CA.
	conf := string(imported) + fmt.Sprintf("  activeDirectoryAuthorityHost: %s/\n  resourceManagerEndpoint: %s/\n  resourceManagerAudience: %s/\n  caFile: %s\n", srv.URL(), srv.URL(), srv.URL(), caFile)
	ourCfg := filepath.Join(dir, "cloud-config.yaml")
	if err := os.WriteFile(ourCfg, []byte(conf), 0o600); err != nil {
		return err
	}
	fmt.Printf("imported config:\n%s\n", conf)
	ccmKubeconfig, err := cp.CCMKubeconfig(ctx, time.Hour)
	if err != nil {
		return err
	}
	ourLog, _ := os.Create(filepath.Join(dir, "multicloud-ccm.log"))
	srv.ResetCalls()
	mine, err := ccmproc.Start(ccmproc.Options{Binary: ours, CloudConfig: ourCfg, Kubeconfig: ccmKubeconfig,
		Args: []string{"--configure-cloud-routes=false", "--allocate-node-cidrs=false"}, Output: ourLog})
	if err != nil {
		return err
	}
	defer mine.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out waiting for this manager's sync; see %s", filepath.Join(dir, "multicloud-ccm.log"))
		case <-mine.Done():
			return fmt.Errorf("multicloud-ccm exited: %v", mine.Err())
		case <-time.After(time.Second):
		}
		evs, err := admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web,reason=EnsuredLoadBalancer,source=service-controller"})
		if err != nil {
			return err
		}
		if len(evs.Items) > 1 { // upstream's, then ours
			break
		}
	}
	got, err := admin.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		return err
	}
	if a := ingressIPs(got); a != addr {
		return fmt.Errorf("the switch changed the addresses from %s to %s", addr, a)
	}
	added, removed := cloudsim.DiffResources(before, srv.Resources())
	fmt.Printf("this manager's calls: %v\nadded %v\nremoved %v\n", srv.Calls(), added, removed)
	if len(added) > 0 {
		return fmt.Errorf("the switch added %d resources: %v", len(added), added)
	}
	for _, vm := range vms {
		if pools, _ := emu.BackendPools(vm.Name); len(pools) < wantPools {
			return fmt.Errorf("VM %s left a pool: %v", vm.Name, pools)
		}
	}
	fmt.Printf("PASS: switched, address %s kept, nothing added\n", addr)
	if err := admin.CoreV1().Services("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out waiting for the deletion")
		case <-time.After(time.Second):
		}
		if _, err := admin.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{}); err != nil {
			break
		}
	}
	_, removed = cloudsim.DiffResources(before, srv.Resources())
	for _, vm := range vms {
		if pools, _ := emu.BackendPools(vm.Name); len(pools) != 0 {
			return fmt.Errorf("VM %s still names pools %v", vm.Name, pools)
		}
	}
	left := 0
	for _, r := range srv.Resources() {
		if strings.Contains(r.Kind, "loadBalancers") || strings.Contains(r.Name, cluster+"-a") || strings.Contains(r.Name, "k8s-azure-lb") {
			fmt.Printf("left: %s %s\n", r.Kind, r.ID)
			left++
		}
	}
	if left > 0 {
		return fmt.Errorf("%d of the Service's parts left after its deletion", left)
	}
	fmt.Printf("deleted: %d resources went, nothing left\n", len(removed))
	return nil
}

// ingressIPs are a Service's status addresses, in order.
func ingressIPs(svc *corev1.Service) string {
	var ips []string
	for _, in := range svc.Status.LoadBalancer.Ingress {
		ips = append(ips, in.IP)
	}
	return strings.Join(ips, ",")
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}
