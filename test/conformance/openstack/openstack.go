// Package openstack plugs the OpenStack backend and its emulator
// (test/cloudsim/openstack) into the conformance suite, the sandbox and
// the benchmarks. It is the only place outside providers/openstack that
// knows how the backend names and marks what it creates.
package openstack

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimopenstack "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

const (
	// serviceTagPrefix starts the tag providers/openstack puts on a
	// Service's load balancer, "kube_service=<namespace>/<name>"; the
	// member security group's rules carry it as their description.
	serviceTagPrefix = "kube_service="
	// memberGroupPrefix names the cluster's member security group
	// ("k8s-lb-members-<clusterID>"): shared by every Service, made
	// with the first and deleted with the last, so a whole-cloud leak
	// check taken while another Service still exists would see it come
	// or go with no Service's fault; such checks leave it out (the
	// provider's own tests prove it goes with the last Service).
	memberGroupPrefix = "k8s-lb-members-"
)

// Options tune the emulator beyond conformance.Options; the benchmarks
// set a slower Octavia.
type Options struct {
	// ProvisioningDelay is how long Octavia keeps changes PENDING_*
	// (default 1s: a real amphora takes far longer, and the suite's
	// crash scenario needs provisioning to outlast its 0-3 s kill).
	ProvisioningDelay time.Duration
	// Flavors and AvailabilityZones are Octavia's, for the tests of the
	// flavor-id and availability-zone annotations (default none).
	Flavors           []cloudsimopenstack.OctaviaFlavor
	AvailabilityZones []cloudsimopenstack.OctaviaAvailabilityZone
	// DetectFloatingNetwork leaves loadBalancer.floatingNetworkID out of
	// the config, so the manager finds the project's only external
	// network at start, as upstream does.
	DetectFloatingNetwork bool
	// NodeNetworkOnly sets networking.internalNetworkNames to the
	// fixture's node network: a server's fixed addresses on other
	// networks are not its Node's.
	NodeNetworkOnly bool
	// OctaviaVersion is the newest Octavia API version the emulator
	// serves ("v2.0" to "v2.30"), default the emulator's (v2.26, Zed):
	// from v2.26 on, a dual-stack Service's load balancer has a VIP of
	// each family (DualStackCases).
	OctaviaVersion string
}

// Adapter is the OpenStack adapter.
type Adapter struct {
	Options Options
}

var _ conformance.Adapter = Adapter{}

// Name implements conformance.Adapter.
func (Adapter) Name() string { return "openstack" }

// Features implements conformance.Adapter: the router's extra routes carry
// pod routes.
func (Adapter) Features() conformance.Features {
	return conformance.Features{Routes: true, DualStack: true}
}

// Start implements conformance.Adapter.
func (a Adapter) Start(opts conformance.Options) (conformance.Cloud, error) {
	clusterID := opts.ClusterID
	if clusterID == "" {
		clusterID = "kubernetes"
	}
	delay := a.Options.ProvisioningDelay
	if delay == 0 {
		delay = time.Second
	}
	cfg := cloudsimopenstack.Config{
		ClusterID: clusterID,
		// A cluster's router holds a route per node; operators raise
		// Neutron's default quota of 30 for that.
		Neutron: cloudsimopenstack.NeutronConfig{RouterRouteQuota: -1},
		Octavia: cloudsimopenstack.OctaviaConfig{
			ProvisioningDelay: delay, Flavors: a.Options.Flavors, AvailabilityZones: a.Options.AvailabilityZones,
			MaxVersion: a.Options.OctaviaVersion,
		},
	}
	if opts.DualStack {
		// A dual-stack node network: a stateful DHCPv6 subnet beside the
		// IPv4 one, the router on both; each launch asks for an
		// address on it.
		cfg.NodeIPv6CIDR, cfg.NodeIPv6Mode = dualStackCIDR, "dhcpv6-stateful"
	}
	emu := cloudsimopenstack.NewDefault(cfg)
	srv, err := cloudsim.Start(emu)
	if err != nil {
		return nil, err
	}
	return &Cloud{Instances: conformance.Instances{Admin: emu}, emu: emu, srv: srv, fx: emu.Fixture(), clusterID: clusterID, opts: opts, adapter: a.Options}, nil
}

// Cloud is one OpenStack emulator behind the adapter. OpenStack-only
// tests reach the emulator through it.
type Cloud struct {
	conformance.Instances
	emu       *cloudsimopenstack.Emulator
	srv       *cloudsim.Server
	fx        cloudsimopenstack.Fixture
	clusterID string
	opts      conformance.Options
	adapter   Options
}

var _ conformance.Cloud = (*Cloud)(nil)

func (c *Cloud) Server() *cloudsim.Server { return c.srv }
func (c *Cloud) Close() error             { return c.srv.Close() }

// Emulator exposes the OpenStack emulator to OpenStack-only tests.
func (c *Cloud) Emulator() *cloudsimopenstack.Emulator { return c.emu }

// Fixture is the emulator's fixture, for OpenStack-only tests.
func (c *Cloud) Fixture() cloudsimopenstack.Fixture { return c.fx }

// Config authenticates with the fixture user's password and turns on
// health monitors and the member security group, so the suite covers
// them; the switched config is what import-config makes of a cloud.conf
// with upstream's defaults (create-monitor and manage-security-groups
// off, the floating network found at start).
func (c *Cloud) Config() conformance.CloudConfig {
	var b strings.Builder
	fmt.Fprintf(&b, "  authURL: %s\n  region: %s\n", c.fx.IdentityEndpoint(c.srv.URL()), c.fx.Region)
	fmt.Fprintf(&b, "  username: %s\n  userDomainName: %s\n  password: %s\n", c.fx.Username, c.fx.DomainName, c.fx.Password)
	fmt.Fprintf(&b, "  projectName: %s\n  projectDomainID: %s\n", c.fx.ProjectName, c.fx.DomainID)
	if c.opts.Switched {
		b.WriteString("  loadBalancer:\n    createMonitor: false\n")
	} else {
		b.WriteString("  loadBalancer:\n    createMonitor: true\n    manageSecurityGroups: true\n")
		if !c.adapter.DetectFloatingNetwork {
			fmt.Fprintf(&b, "    floatingNetworkID: %s\n", c.fx.ExternalNetworkID)
		}
	}
	if c.opts.QuickErrors {
		// A load balancer stuck PENDING becomes a retry after 10 s
		// instead of holding a worker for the default 5 minutes.
		b.WriteString("    waitActiveTimeout: 10s\n")
	}
	if c.opts.Routes {
		fmt.Fprintf(&b, "  routes:\n    routerID: %s\n", c.fx.RouterID)
	}
	if c.adapter.NodeNetworkOnly {
		fmt.Fprintf(&b, "  networking:\n    internalNetworkNames: [%s]\n", c.fx.NetworkName)
	}
	if c.opts.QuickErrors {
		b.WriteString("  requestTimeout: 5s\n  maxAttempts: 3\n")
	}
	return conformance.CloudConfig{Provider: "openstack", ClusterID: c.clusterID, Section: b.String(), Secrets: []string{c.fx.Password}}
}

func (c *Cloud) ExtraArgs() []string         { return nil }
func (c *Cloud) Zones() []string             { return c.emu.Zones() }
func (c *Cloud) Region() string              { return c.emu.Region() }
func (c *Cloud) DefaultInstanceType() string { return "m1.small" }
func (c *Cloud) ReadFaultOp() string         { return cloudsim.ReadOps }
func (c *Cloud) ForeignProviderID() string {
	return "aws:///eu-west-1a/i-0123456789abcdef0"
}

// Inventory is everything the emulator holds but the cluster's member
// security group and its egress rules (see memberGroupPrefix).
func (c *Cloud) Inventory() []cloudsim.Resource {
	all := c.srv.Resources()
	group := map[string]bool{}
	for _, r := range all {
		if r.Kind == cloudsimopenstack.KindSecurityGroup && strings.HasPrefix(r.Name, memberGroupPrefix) {
			group[r.ID] = true
		}
	}
	return slices.DeleteFunc(all, func(r cloudsim.Resource) bool {
		return group[r.ID] || (r.Kind == cloudsimopenstack.KindSecurityGroupRule && group[r.Parent] && strings.Contains(r.Name, "egress"))
	})
}

// MalformedAnnotation: "maybe" is not a boolean.
func (c *Cloud) MalformedAnnotation() (string, string) {
	return "service.beta.kubernetes.io/openstack-internal-load-balancer", "maybe"
}

func (c *Cloud) Launch(spec conformance.InstanceSpec) (conformance.Instance, error) {
	it := spec.InstanceType
	if it == "" {
		it = c.DefaultInstanceType()
	}
	info, err := c.emu.LaunchInstance(cloudsim.InstanceSpec{
		Name: spec.NameHint, Zone: spec.Zone, InstanceType: it, PublicIP: spec.PublicIP, IPv6: c.opts.DualStack,
	})
	if err != nil {
		return conformance.Instance{}, err
	}
	// A kubelet registers its Node under the machine's hostname, which
	// cloud-init takes from the server name.
	return conformance.Instance{ID: info.ID, NodeName: info.Name, Zone: info.Zone}, nil
}

func (c *Cloud) KubeletProviderID(id string) (string, error) {
	if _, ok := c.emu.Server(id); !ok {
		return "", fmt.Errorf("unknown server %s", id)
	}
	return cloudsimopenstack.ProviderID(id), nil
}

func (c *Cloud) ExpectedNode(id string) (conformance.NodeExpectation, error) {
	info, ok := c.emu.Server(id)
	if !ok {
		return conformance.NodeExpectation{}, fmt.Errorf("unknown server %s", id)
	}
	// The port's fixed IPs in Neutron's order (by address text: the
	// node subnet's 10.x before fd00:), each an InternalIP, as upstream's
	// nodeAddresses lists them (instances_addresses.go:151-166).
	addrs := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: info.PrivateIP}}
	if info.PrivateIPv6 != "" {
		addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: info.PrivateIPv6})
	}
	if info.PublicIP != "" {
		addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: info.PublicIP})
	}
	addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeHostName, Address: info.Name})
	return conformance.NodeExpectation{
		ProviderID: cloudsimopenstack.ProviderID(id),
		Labels: map[string]string{
			corev1.LabelInstanceTypeStable: info.FlavorName,
			corev1.LabelTopologyZone:       info.Zone,
			corev1.LabelTopologyRegion:     c.emu.Region(),
		},
		Addresses: addrs,
	}, nil
}

// serverByIP maps fixed addresses to server IDs.
func (c *Cloud) serverByIP() map[string]string {
	out := map[string]string{}
	for _, s := range c.emu.Servers() {
		out[s.PrivateIP] = s.ID
		if s.PrivateIPv6 != "" {
			out[s.PrivateIPv6] = s.ID
		}
	}
	return out
}

// LoadBalancers: the Service's Octavia load balancers (by the backend's
// tag, or by the name the upstream CCM gives and the backend keeps), with
// their listeners' ports and their pools' members as servers.
func (c *Cloud) LoadBalancers(svc types.NamespacedName) []conformance.LoadBalancer {
	tag := serviceTagPrefix + svc.String()
	name := c.lbName(svc)
	byIP := c.serverByIP()
	var out []conformance.LoadBalancer
	for _, lb := range c.emu.LoadBalancers() {
		if !slices.Contains(lb.Tags, tag) && lb.Name != name {
			continue
		}
		cl := conformance.LoadBalancer{ID: lb.ID}
		for _, l := range lb.Listeners {
			cl.Ports = append(cl.Ports, int32(l.ProtocolPort))
		}
		slices.Sort(cl.Ports)
		var first string
		for i, p := range lb.Pools {
			var ids []string
			for _, m := range p.Members {
				id := byIP[m.Address]
				if id == "" {
					id = "unknown:" + m.Address
				}
				ids = append(ids, id)
			}
			slices.Sort(ids)
			ids = slices.Compact(ids)
			if i == 0 {
				first = strings.Join(ids, ",")
			} else if strings.Join(ids, ",") != first {
				cl.Inconsistent = append(cl.Inconsistent, fmt.Sprintf("pool %s has %v", p.Name, ids))
			}
			cl.Backends = append(cl.Backends, ids...)
		}
		slices.Sort(cl.Backends)
		cl.Backends = slices.Compact(cl.Backends)
		out = append(out, cl)
	}
	return out
}

// ServiceResources: the Service's load balancer tree, its floating IPs
// (by the description the backend gives them) and its rules in the
// member security group.
func (c *Cloud) ServiceResources(svc types.NamespacedName) []cloudsim.Resource {
	tag := serviceTagPrefix + svc.String()
	name := c.lbName(svc)
	inv := c.srv.Resources()
	owned := map[string]bool{}
	var out []cloudsim.Resource
	for _, r := range inv {
		if _, ok := r.Tags[tag]; (ok || r.Name == name) && r.Kind == cloudsimopenstack.KindLoadBalancer {
			owned[r.ID] = true
			out = append(out, r)
		}
	}
	// Children point at their load balancer, members and monitors at
	// their pool: two rounds reach them all.
	for range 2 {
		for _, r := range inv {
			if !owned[r.ID] && owned[r.Parent] {
				owned[r.ID] = true
				out = append(out, r)
			}
		}
	}
	fipDesc := fmt.Sprintf("Floating IP for Kubernetes external service %s from cluster %s", svc, c.clusterID)
	for _, f := range c.emu.FloatingIPs() {
		if f.Description == fipDesc {
			out = append(out, cloudsim.Resource{Kind: cloudsimopenstack.KindFloatingIP, ID: f.ID, Name: f.Address, Parent: f.NetworkID})
		}
	}
	for _, g := range c.emu.SecurityGroups() {
		for _, r := range g.Rules {
			if r.Description == tag {
				out = append(out, cloudsim.Resource{Kind: cloudsimopenstack.KindSecurityGroupRule, ID: r.ID, Name: r.Description, Parent: g.ID})
			}
		}
	}
	cloudsim.SortResources(out)
	return out
}

// lbName is the Service's load balancer name, upstream's and the
// backend's: kube_service_<clusterID>_<namespace>_<name>.
func (c *Cloud) lbName(svc types.NamespacedName) string {
	return "kube_service_" + c.clusterID + "_" + svc.Namespace + "_" + svc.Name
}

// PodRoutes: the router's extra routes whose next hop is a server.
func (c *Cloud) PodRoutes() map[string]string {
	routes, err := c.emu.RouterRoutes(c.fx.RouterID)
	if err != nil {
		return nil
	}
	byIP := c.serverByIP()
	out := map[string]string{}
	for _, r := range routes {
		if id := byIP[r.NextHop]; id != "" {
			out[r.Destination] = id
		}
	}
	return out
}

// SetProvisioningDelay changes how long Octavia keeps changes PENDING_*,
// for the benchmarks' slow-provider scenario.
func (c *Cloud) SetProvisioningDelay(d time.Duration) { c.emu.SetOctaviaProvisioningDelay(d) }

var _ conformance.Principal = (*Cloud)(nil)

// ManagerPrincipal is the Keystone user the manager's config
// authenticates as (the emulator tells callers apart by their token's
// user); the harness calls as the project's operator (Clients).
func (c *Cloud) ManagerPrincipal() string { return c.fx.UserID }

var _ conformance.PermissionWithholder = (*Cloud)(nil)

// WithheldPermissions: creating the Octavia load balancer, and Nova's
// GET of one server, which the lifecycle checks of a NotReady Node make.
func (c *Cloud) WithheldPermissions() (string, string, string) {
	return "os_load-balancer_api:loadbalancer:post", "load-balancers", "os_compute_api:servers:show"
}
