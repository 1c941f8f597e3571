// Package azure plugs the Azure backend and its emulator
// (test/cloudsim/azure) into the conformance suite, the sandbox and the
// benchmarks. It is the only place outside providers/azure that knows how
// the backend names and tags what it creates.
package azure

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v6"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimazure "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/azure"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

// What providers/azure puts on what it creates (upstream's names).
const (
	// tagService is on a Service's own public IP: "<namespace>/<name>".
	tagService = "k8s-azure-service"
	tagCluster = "k8s-azure-cluster-name"
)

// Options tune the emulator beyond conformance.Options; the benchmarks
// set slower operations.
type Options struct {
	// OperationDelay is how long ARM's long-running operations stay in
	// progress (default 0: done at the first poll).
	OperationDelay time.Duration
	// ExtraConfig is appended to the cloud-config's azure section: YAML
	// lines, each indented by two spaces (`  tags: "team=web"\n`), for
	// Azure-only tests of a config setting.
	ExtraConfig string
	// DualStack gives the emulator's network and every VM an IPv6
	// address beside the IPv4 one, for dual-stack Services.
	DualStack bool
	// TenantID is the emulator's tenant (default cloudsimazure's). "adfs"
	// makes it an AD FS authority as on Azure Stack Hub, which the
	// upstream Azure CCM needs offline (test/upstreamcheck).
	TenantID string
}

// Adapter is the Azure adapter.
type Adapter struct {
	Options Options
}

var _ conformance.Adapter = Adapter{}

// Name implements conformance.Adapter.
func (Adapter) Name() string { return "azure" }

// Features implements conformance.Adapter: the route table carries pod
// routes; the upstream CCM makes a frontend on the public load balancer,
// or on the internal one when asked.
func (Adapter) Features() conformance.Features {
	return conformance.Features{Routes: true, DualStack: true, AdoptionShapes: map[string]map[string]string{
		"public":   nil,
		"internal": {annotationInternal: "true"},
	}}
}

// Start implements conformance.Adapter.
func (a Adapter) Start(opts conformance.Options) (conformance.Cloud, error) {
	clusterID := opts.ClusterID
	if clusterID == "" {
		clusterID = "kubernetes"
	}
	emu := cloudsimazure.New(cloudsimazure.Config{ClusterID: clusterID, OperationDelay: a.Options.OperationDelay, DualStack: a.Options.DualStack || opts.DualStack, TenantID: a.Options.TenantID})
	srv, err := cloudsim.Start(emu)
	if err != nil {
		return nil, err
	}
	// The manager runs out of process and trusts the emulator's CA
	// through caFile, as an Azure Stack Hub cluster trusts its own.
	dir, err := os.MkdirTemp("", "cloudsim-azure-")
	if err != nil {
		_ = srv.Close()
		return nil, err
	}
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, emu.CAPEM(), 0o600); err != nil {
		_ = srv.Close()
		return nil, err
	}
	return &Cloud{Instances: conformance.Instances{Admin: emu}, emu: emu, srv: srv, fx: emu.Fixture(), clusterID: clusterID, opts: opts,
		extraConfig: a.Options.ExtraConfig, dir: dir, caFile: caFile}, nil
}

// Cloud is one Azure emulator behind the adapter. Azure-only tests reach
// the emulator through it.
type Cloud struct {
	conformance.Instances
	emu       *cloudsimazure.Emulator
	srv       *cloudsim.Server
	fx        cloudsimazure.Fixture
	clusterID string
	opts      conformance.Options
	// extraConfig is Options.ExtraConfig.
	extraConfig string
	dir         string
	caFile      string

	mu     sync.Mutex
	cached *view
	// upstream are the frontends MakeUpstreamLoadBalancer made, by
	// Service; clusterNames the cluster names it was given (its load
	// balancers' names and its public IPs' cluster tag).
	upstream     map[types.NamespacedName]upstreamFrontend
	clusterNames []string
	// userPIPs are the IDs of the public IPs ReserveUserAddress made, by
	// the Service that names one: tagged for no Service, so a frontend on
	// one is found by its ID.
	userPIPs map[types.NamespacedName]string
	// uids are the UIDs TrackUID was given: a frontend named after one
	// (internal Services made by a real upstream CCM) is its Service's.
	uids map[types.NamespacedName]types.UID
}

var (
	_ conformance.Cloud     = (*Cloud)(nil)
	_ conformance.Principal = (*Cloud)(nil)
)

// ManagerPrincipal is the manager's application (client) ID, as the
// emulator tells callers apart (cloudsimazure's Principal: the token's
// appid, lower-cased). The harness's own clients call as the operator's
// application (adminToken), never held to the manager's policy.
func (c *Cloud) ManagerPrincipal() string { return strings.ToLower(c.fx.ClientID) }

var _ conformance.PermissionWithholder = (*Cloud)(nil)

// WithheldPermissions: writing the cluster's load balancer, which a new
// Service's frontend needs (its public IP is made first, and must be
// taken down with the Service), and reading VMs, which the lifecycle
// checks of a NotReady Node need (the listing or a GET by ID).
func (c *Cloud) WithheldPermissions() (string, string, string) {
	return "Microsoft.Network/loadBalancers/write", "load-balancers", "Microsoft.Compute/virtualMachines/read"
}

// adminToken is a token of the operator's application: a user's console,
// another controller, the upstream CCM.
func (c *Cloud) adminToken() staticToken {
	return staticToken{token: c.emu.IssueTokenFor(cloudsimazure.AdminClientID)}
}

func (c *Cloud) Server() *cloudsim.Server { return c.srv }

func (c *Cloud) Close() error {
	err := c.srv.Close()
	_ = os.RemoveAll(c.dir)
	return err
}

// Emulator exposes the Azure emulator to Azure-only tests.
func (c *Cloud) Emulator() *cloudsimazure.Emulator { return c.emu }

// Fixture is the emulator's fixture, for Azure-only tests.
func (c *Cloud) Fixture() cloudsimazure.Fixture { return c.fx }

// ClusterID is the cloud-config's clusterID.
func (c *Cloud) ClusterID() string { return c.clusterID }

// Config authenticates with the fixture's client secret against the
// emulator as a custom cloud, and manages the fixture's security group
// rules, so the suite covers them.
func (c *Cloud) Config() conformance.CloudConfig {
	var b strings.Builder
	fmt.Fprintf(&b, "  activeDirectoryAuthorityHost: %s/\n  resourceManagerEndpoint: %s/\n  caFile: %s\n", c.srv.URL(), c.srv.URL(), c.caFile)
	fmt.Fprintf(&b, "  tenantId: %s\n  subscriptionId: %s\n  location: %s\n  resourceGroup: %s\n", c.fx.TenantID, c.fx.SubscriptionID, c.fx.Location, c.fx.ResourceGroup)
	fmt.Fprintf(&b, "  aadClientId: %s\n  aadClientSecret: %s\n", c.fx.ClientID, c.fx.ClientSecret)
	fmt.Fprintf(&b, "  vnetName: %s\n  subnetName: %s\n  securityGroupName: %s\n", c.fx.VNetName, c.fx.SubnetName, c.fx.SecurityGroupName)
	if c.opts.Routes {
		fmt.Fprintf(&b, "  routeTableName: %s\n", c.fx.RouteTableName)
	}
	// What import-config carries over: upstream's default pool type. The
	// suite's dual-stack cluster is one switched from upstream too (its
	// ds-upstream-public case): on the default address-based pools the
	// manager would first take upstream's NIC pool apart, which needs
	// nic-backend-pools' grants that config's policy leaves out
	// (providers/azure permissions.go ip-backend-pools). TestAzureDualStack
	// (Options.DualStack) keeps the default pools.
	if c.opts.Switched || c.opts.DualStack {
		b.WriteString("  loadBalancerBackendPoolConfigurationType: nodeIPConfiguration\n")
	}
	if c.opts.QuickErrors {
		b.WriteString("  requestTimeout: 5s\n  maxAttempts: 3\n")
	}
	b.WriteString(c.extraConfig)
	return conformance.CloudConfig{Provider: "azure", ClusterID: c.clusterID, Section: b.String(), Secrets: []string{c.fx.ClientSecret}}
}

func (c *Cloud) ExtraArgs() []string { return nil }

// Zones are the location's zones as Nodes are labelled: "<location>-<n>".
func (c *Cloud) Zones() []string {
	var out []string
	for _, z := range c.emu.Config().Zones {
		out = append(out, c.fx.Location+"-"+z)
	}
	return out
}

func (c *Cloud) Region() string              { return c.fx.Location }
func (c *Cloud) DefaultInstanceType() string { return cloudsimazure.DefaultVMSize }
func (c *Cloud) ReadFaultOp() string         { return cloudsim.ReadOps }
func (c *Cloud) ForeignProviderID() string {
	return "aws:///eu-west-1a/i-0123456789abcdef0"
}

// Inventory is everything the emulator holds.
func (c *Cloud) Inventory() []cloudsim.Resource { return c.srv.Resources() }

// MalformedAnnotation: "maybe" is not a boolean.
func (c *Cloud) MalformedAnnotation() (string, string) {
	return "service.beta.kubernetes.io/azure-load-balancer-internal", "maybe"
}

// UpstreamAnnotations: a Private Link Service's name without its
// creation asks for nothing served here (ignored); the upstream Azure
// CCM terminates no TLS (its load balancers are layer 4), so the refused
// ask is an address from a public IP prefix, which the Service here would
// not get.
func (c *Cloud) UpstreamAnnotations() (ignored, refused map[string]string) {
	return map[string]string{"service.beta.kubernetes.io/azure-pls-name": "web-pls"}, map[string]string{
		"service.beta.kubernetes.io/azure-pip-prefix-id": "/subscriptions/" + c.fx.SubscriptionID + "/resourceGroups/" + c.fx.ResourceGroup + "/providers/Microsoft.Network/publicIPPrefixes/web-prefix",
	}
}

func (c *Cloud) Launch(spec conformance.InstanceSpec) (conformance.Instance, error) {
	it := spec.InstanceType
	if it == "" {
		it = c.DefaultInstanceType()
	}
	vm, err := c.emu.LaunchVM(cloudsimazure.VMSpec{Name: vmName(spec.NameHint), Zone: spec.Zone, Size: it, PublicIP: spec.PublicIP})
	if err != nil {
		return conformance.Instance{}, err
	}
	// A kubelet registers its Node under the machine's hostname, the VM's
	// computer name.
	return conformance.Instance{ID: vm.Name, NodeName: strings.ToLower(vm.ComputerName), Zone: zoneLabel(vm)}, nil
}

// vmName makes a name hint a VM name (no dots, at most 64 characters).
func vmName(hint string) string {
	if hint == "" {
		return ""
	}
	n := strings.ReplaceAll(strings.ToLower(hint), ".", "-")
	if len(n) > 60 {
		n = n[:60]
	}
	return strings.Trim(n, "-")
}

func zoneLabel(vm cloudsimazure.VMInfo) string {
	if vm.Zone != "" {
		return vm.Location + "-" + vm.Zone
	}
	return fmt.Sprint(vm.FaultDomain)
}

// providerID is the providerID upstream writes: the VM's ID with its
// resource group lower-cased.
func providerID(armID string) string {
	segs := strings.Split(armID, "/")
	if len(segs) > 4 {
		segs[4] = strings.ToLower(segs[4])
	}
	return "azure://" + strings.Join(segs, "/")
}

func (c *Cloud) KubeletProviderID(id string) (string, error) {
	vm, ok := c.emu.VM(id)
	if !ok {
		return "", fmt.Errorf("unknown VM %s", id)
	}
	return providerID(vm.ID), nil
}

func (c *Cloud) ExpectedNode(id string) (conformance.NodeExpectation, error) {
	vm, ok := c.emu.VM(id)
	if !ok {
		return conformance.NodeExpectation{}, fmt.Errorf("unknown VM %s", id)
	}
	addrs := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: vm.PrivateIP}}
	if vm.PrivateIPv6 != "" {
		addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: vm.PrivateIPv6})
	}
	if vm.PublicIP != "" {
		addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: vm.PublicIP})
	}
	addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeHostName, Address: strings.ToLower(vm.ComputerName)})
	return conformance.NodeExpectation{
		ProviderID: providerID(vm.ID),
		Labels: map[string]string{
			corev1.LabelInstanceTypeStable: vm.Size,
			corev1.LabelTopologyZone:       zoneLabel(vm),
			corev1.LabelTopologyRegion:     vm.Location,
		},
		Addresses: addrs,
	}, nil
}

// view is what LoadBalancers, ServiceResources and PodRoutes read from
// the emulator, built once per emulator generation: a benchmark polls
// 200 Services several times a second, and rebuilding it per Service
// (every public IP, both load balancers, every VM) made the polling,
// not the manager, the slow part.
type view struct {
	gen uint64
	// byIP maps private addresses to VM names, byNIC the lower-cased IDs
	// of their network interfaces.
	byIP  map[string]string
	byNIC map[string]string
	// pips are the IDs of the cluster's public IPs by the Service
	// ("<ns>/<name>") they are tagged with.
	pips map[string][]string
	lbs  []armnetwork.LoadBalancer
}

func (c *Cloud) view() *view {
	gen := c.emu.Generation()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cached != nil && c.cached.gen == gen {
		return c.cached
	}
	v := &view{gen: gen, byIP: map[string]string{}, byNIC: map[string]string{}, pips: map[string][]string{}}
	vms := c.emu.VMs()
	// A Uniform scale set's instances are members by their own NICs,
	// named "<scale set>_<instance ID>".
	for _, ss := range c.emu.ScaleSets() {
		if !ss.Flexible {
			vms = append(vms, ss.Instances...)
		}
	}
	for _, vm := range vms {
		v.byIP[vm.PrivateIP] = vm.Name
		if vm.NICID != "" {
			v.byNIC[strings.ToLower(vm.NICID)] = vm.Name
		}
	}
	clusters := c.clusterNamesLocked()
	for _, id := range c.emu.ListNetwork("publicIPAddresses") {
		segs := strings.Split(id, "/")
		pip, ok := c.emu.PublicIP(segs[4], segs[len(segs)-1])
		if !ok || !slices.Contains(clusters, deref(pip.Tags[tagCluster])) || pip.Tags[tagService] == nil {
			continue
		}
		// Upstream lists every Service sharing a public IP in its tag.
		for _, svc := range strings.Split(*pip.Tags[tagService], ",") {
			if svc = strings.TrimSpace(svc); svc != "" {
				v.pips[svc] = append(v.pips[svc], id)
			}
		}
	}
	for _, cl := range clusters {
		for _, name := range []string{cl, cl + "-internal"} {
			if l, ok := c.emu.LoadBalancer(c.fx.ResourceGroup, name); ok && l.Properties != nil {
				v.lbs = append(v.lbs, l)
			}
		}
	}
	c.cached = v
	return v
}

// clusterNamesLocked are the names the cluster's load balancers and
// public IP tags carry: the clusterID, and any other cluster name the
// upstream CCM was given (c.mu held).
func (c *Cloud) clusterNamesLocked() []string {
	out := []string{c.clusterID}
	for _, n := range c.clusterNames {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// vmByIP maps private addresses to VM names.
func (c *Cloud) vmByIP() map[string]string { return c.view().byIP }

// member is the VM of a pool member: by address for an IP-based one, by
// network interface for an IP configuration (".../networkInterfaces/<nic>/
// ipConfigurations/<cfg>"); "unknown:<what>" when no VM has it.
func (v *view) member(ip, ipConfigID string) string {
	if ip != "" {
		if vm := v.byIP[ip]; vm != "" {
			return vm
		}
		return "unknown:" + ip
	}
	if i := strings.Index(strings.ToLower(ipConfigID), "/ipconfigurations/"); i > 0 {
		if vm := v.byNIC[strings.ToLower(ipConfigID[:i])]; vm != "" {
			return vm
		}
	}
	return "unknown:" + ipConfigID
}

// poolMembers are the VMs in a backend pool: its IP-based addresses, and
// for a NIC-based pool its IP configurations, which ARM lists both as
// backendIPConfigurations and as addresses without an ipAddress.
func (v *view) poolMembers(p *armnetwork.BackendAddressPool) []string {
	var ids []string
	for _, a := range p.Properties.LoadBalancerBackendAddresses {
		var ip, cfg string
		if a.Properties != nil {
			ip = deref(a.Properties.IPAddress)
			if a.Properties.NetworkInterfaceIPConfiguration != nil {
				cfg = deref(a.Properties.NetworkInterfaceIPConfiguration.ID)
			}
		}
		ids = append(ids, v.member(ip, cfg))
	}
	for _, cfg := range p.Properties.BackendIPConfigurations {
		ids = append(ids, v.member("", deref(cfg.ID)))
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// frontend is one of a Service's frontends and the load balancer it is on.
type frontend struct {
	lb   *armnetwork.LoadBalancer
	name string
}

// TrackUID tells the adapter a Service's UID, so its frontends are found
// by name (cloudprovider.DefaultLoadBalancerName, what both managers name
// them) even when no public IP is tagged with it: an internal Service a
// real upstream CCM made (test/upstreamcheck).
func (c *Cloud) TrackUID(svc types.NamespacedName, uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.uids == nil {
		c.uids = map[types.NamespacedName]types.UID{}
	}
	c.uids[svc] = uid
}

// serviceFrontends finds the Service's frontends: those whose public IP
// is tagged with the Service, those MakeUpstreamLoadBalancer made for it,
// and those named after a UID TrackUID was given (the backend names
// frontends after the Service's UID, which the suite's neutral
// NamespacedName does not carry; other internal Services are found by
// Azure-only tests through the UID).
func (c *Cloud) serviceFrontends(v *view, svc types.NamespacedName) (fes []frontend, pips []string) {
	c.mu.Lock()
	up, made := c.upstream[svc]
	user, named := c.userPIPs[svc]
	uid, tracked := c.uids[svc]
	c.mu.Unlock()
	byUID := ""
	if tracked {
		byUID = cloudprovider.DefaultLoadBalancerName(&corev1.Service{ObjectMeta: metav1.ObjectMeta{UID: uid}})
	}
	pips = v.pips[svc.String()]
	for i := range v.lbs {
		l := &v.lbs[i]
		for _, fe := range l.Properties.FrontendIPConfigurations {
			// The IPv6 frontend of a dual-stack Service is "<base>-IPv6".
			mine := made && strings.EqualFold(deref(l.Name), up.lb) &&
				(strings.EqualFold(deref(fe.Name), up.frontend) || strings.EqualFold(deref(fe.Name), up.frontend+upstreamIPv6Suffix))
			mine = mine || (byUID != "" && (strings.EqualFold(deref(fe.Name), byUID) || strings.EqualFold(deref(fe.Name), byUID+"-IPv6")))
			if !mine && fe.Properties != nil && fe.Properties.PublicIPAddress != nil {
				id := deref(fe.Properties.PublicIPAddress.ID)
				mine = (named && strings.EqualFold(id, user)) || slices.ContainsFunc(pips, func(p string) bool { return strings.EqualFold(p, id) })
			}
			if mine {
				fes = append(fes, frontend{lb: l, name: deref(fe.Name)})
			}
		}
	}
	return fes, pips
}

func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// LoadBalancers: one per frontend of the Service on the shared load
// balancers, with its rules' frontend ports and its pools' members as
// VMs.
func (c *Cloud) LoadBalancers(svc types.NamespacedName) []conformance.LoadBalancer {
	v := c.view()
	fes, _ := c.serviceFrontends(v, svc)
	var out []conformance.LoadBalancer
	for _, fe := range fes {
		lb := fe.lb
		cl := conformance.LoadBalancer{ID: deref(lb.ID) + "/frontendIPConfigurations/" + fe.name}
		pools := map[string]bool{}
		for _, r := range lb.Properties.LoadBalancingRules {
			if r.Properties == nil || !strings.HasSuffix(strings.ToLower(deref(r.Properties.FrontendIPConfiguration.ID)), "/"+strings.ToLower(fe.name)) {
				continue
			}
			cl.Ports = append(cl.Ports, deref(r.Properties.FrontendPort))
			if r.Properties.BackendAddressPool != nil {
				pools[strings.ToLower(deref(r.Properties.BackendAddressPool.ID))] = true
			}
		}
		slices.Sort(cl.Ports)
		var first string
		i := 0
		for _, p := range lb.Properties.BackendAddressPools {
			if !pools[strings.ToLower(deref(p.ID))] || p.Properties == nil {
				continue
			}
			ids := v.poolMembers(p)
			if i == 0 {
				first = strings.Join(ids, ",")
			} else if strings.Join(ids, ",") != first {
				cl.Inconsistent = append(cl.Inconsistent, fmt.Sprintf("pool %s has %v", deref(p.Name), ids))
			}
			i++
			cl.Backends = append(cl.Backends, ids...)
		}
		slices.Sort(cl.Backends)
		cl.Backends = slices.Compact(cl.Backends)
		out = append(out, cl)
	}
	return out
}

// ServiceResources: the Service's public IP, its frontend, rules and
// probes on the shared load balancers.
func (c *Cloud) ServiceResources(svc types.NamespacedName) []cloudsim.Resource {
	fes, pips := c.serviceFrontends(c.view(), svc)
	var out []cloudsim.Resource
	for _, r := range c.srv.Resources() {
		switch {
		case slices.ContainsFunc(pips, func(p string) bool { return strings.EqualFold(p, r.ID) }):
			out = append(out, r)
		case slices.ContainsFunc(fes, func(fe frontend) bool {
			last := r.ID[strings.LastIndex(r.ID, "/")+1:]
			return strings.EqualFold(last, fe.name) || strings.HasPrefix(strings.ToLower(last), strings.ToLower(fe.name)+"-")
		}):
			out = append(out, r)
		}
	}
	cloudsim.SortResources(out)
	return out
}

// PodRoutes: the route table's virtual appliance routes, by next hop VM.
func (c *Cloud) PodRoutes() map[string]string {
	rt, ok := c.emu.RouteTable(c.fx.RouteTableResourceGroup, c.fx.RouteTableName)
	if !ok || rt.Properties == nil {
		return nil
	}
	byIP := c.vmByIP()
	out := map[string]string{}
	for _, r := range rt.Properties.Routes {
		if r.Properties == nil || deref(r.Properties.NextHopType) != armnetwork.RouteNextHopTypeVirtualAppliance {
			continue
		}
		if id := byIP[deref(r.Properties.NextHopIPAddress)]; id != "" {
			out[deref(r.Properties.AddressPrefix)] = id
		}
	}
	return out
}

// SetOperationDelay changes how long ARM's long-running operations take,
// for the benchmarks.
func (c *Cloud) SetOperationDelay(d time.Duration) { c.emu.SetOperationDelay(d) }

// staticToken is a credential holding one token the emulator issued.
type staticToken struct{ token string }

func (s staticToken) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: s.token, ExpiresOn: time.Now().Add(time.Hour)}, nil
}

// clients are the network clients of another ARM client (an operator,
// the upstream CCM), authenticated as the operator's application.
func (c *Cloud) clients() (*armnetwork.ClientFactory, error) {
	return armnetwork.NewClientFactory(c.fx.SubscriptionID, c.adminToken(), c.clientOptions())
}

// clientOptions point an ARM client at the emulator.
func (c *Cloud) clientOptions() *arm.ClientOptions {
	return &arm.ClientOptions{ClientOptions: policy.ClientOptions{
		Cloud: cloud.Configuration{
			ActiveDirectoryAuthorityHost: c.srv.URL() + "/",
			Services: map[cloud.ServiceName]cloud.ServiceConfiguration{
				cloud.ResourceManager: {Endpoint: c.srv.URL(), Audience: c.srv.URL()},
			},
		},
		Transport: c.emu.TestHTTPClient(),
	}, DisableRPRegistration: true}
}

// ScaleSetModelPools are the backend pools a scale set's model names on
// its primary network configuration's primary IP configuration, read
// through ARM: the pools the instances it adds next come up in.
func (c *Cloud) ScaleSetModelPools(ctx context.Context, name string) ([]string, error) {
	client, err := armcompute.NewVirtualMachineScaleSetsClient(c.fx.SubscriptionID, c.adminToken(), c.clientOptions())
	if err != nil {
		return nil, err
	}
	resp, err := client.Get(ctx, c.fx.ResourceGroup, name, nil)
	if err != nil {
		return nil, fmt.Errorf("get scale set %s: %w", name, err)
	}
	p := resp.Properties
	if p == nil || p.VirtualMachineProfile == nil || p.VirtualMachineProfile.NetworkProfile == nil {
		return nil, nil
	}
	var pools []string
	for _, nic := range p.VirtualMachineProfile.NetworkProfile.NetworkInterfaceConfigurations {
		if nic.Properties == nil || !deref(nic.Properties.Primary) {
			continue
		}
		for _, cfg := range nic.Properties.IPConfigurations {
			if cfg.Properties == nil || (len(nic.Properties.IPConfigurations) > 1 && !deref(cfg.Properties.Primary)) {
				continue
			}
			for _, ref := range cfg.Properties.LoadBalancerBackendAddressPools {
				pools = append(pools, deref(ref.ID))
			}
		}
	}
	return pools, nil
}

// PutLoadBalancer writes lb through ARM as another client (an operator,
// another controller) would: a plain PUT with no precondition, which
// changes the load balancer's ETag under the manager.
func (c *Cloud) PutLoadBalancer(ctx context.Context, lb armnetwork.LoadBalancer) error {
	f, err := c.clients()
	if err != nil {
		return err
	}
	p, err := f.NewLoadBalancersClient().BeginCreateOrUpdate(ctx, c.fx.ResourceGroup, deref(lb.Name), lb, nil)
	if err != nil {
		return err
	}
	_, err = p.PollUntilDone(ctx, &runtime.PollUntilDoneOptions{Frequency: time.Second})
	return err
}
