// Package aws plugs the AWS backend and its emulator (test/cloudsim/aws)
// into the conformance suite, the sandbox and the benchmarks. It is the
// only place outside providers/aws and test/e2e/aws_test.go that knows
// EC2 and ELBv2: resource kinds, tags and the providerID format.
package aws

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

const (
	region = "eu-west-1"
	// accessKeyID and SecretAccessKey are fake static credentials: the
	// emulator does not check signatures, but the secret must still never
	// show up in the manager's output (or the demo's report).
	accessKeyID = "AKIACONFORMANCE00000"
	// adminKeyID is the harness's own identity (a user's console, the
	// upstream CCM): never held to the manager's policy.
	adminKeyID      = "AKIACONFORMANCEADMIN"
	SecretAccessKey = "conformance-secret-9f3e1c"
	// serviceTag is the tag providers/aws puts on everything it creates
	// for a Service, valued "<namespace>/<name>".
	serviceTag = "kubernetes.io/service-name"
)

// Adapter is the AWS adapter.
type Adapter struct{}

var _ conformance.Adapter = Adapter{}

// Name implements conformance.Adapter.
func (Adapter) Name() string { return "aws" }

// Features implements conformance.Adapter: VPC route tables carry pod routes.
func (Adapter) Features() conformance.Features {
	return conformance.Features{Routes: true, AdoptionShapes: map[string]map[string]string{
		// Upstream's default kind, and the NLB the type annotation asks for.
		"classic": nil,
		"nlb":     {"service.beta.kubernetes.io/aws-load-balancer-type": "nlb"},
	}, DualStack: true}
}

// Start implements conformance.Adapter.
func (Adapter) Start(opts conformance.Options) (conformance.Cloud, error) {
	clusterID := opts.ClusterID
	if clusterID == "" {
		clusterID = "kubernetes"
	}
	emu := cloudsimaws.NewDefault(cloudsimaws.Config{Region: region, ClusterID: clusterID})
	srv, err := cloudsim.Start(emu)
	if err != nil {
		return nil, err
	}
	return &Cloud{Instances: conformance.Instances{Admin: emu}, emu: emu, srv: srv, fx: emu.Fixture(), clusterID: clusterID, opts: opts}, nil
}

// Cloud is one AWS emulator behind the adapter. AWS-only tests reach the
// emulator through it (Emulator, Fixture).
type Cloud struct {
	// Instances stops, starts and terminates through the emulator's
	// cloud-neutral admin shape.
	conformance.Instances
	emu       *cloudsimaws.Emulator
	srv       *cloudsim.Server
	fx        cloudsimaws.Fixture
	clusterID string
	opts      conformance.Options
}

var _ conformance.Cloud = (*Cloud)(nil)

func (c *Cloud) Server() *cloudsim.Server { return c.srv }
func (c *Cloud) Close() error             { return c.srv.Close() }

// Emulator exposes the AWS emulator to AWS-only tests (TestAWS), which
// check what no other cloud has: listeners, security-group rules, subnets.
func (c *Cloud) Emulator() *cloudsimaws.Emulator { return c.emu }

// Fixture is the emulator's network fixture, for AWS-only tests.
func (c *Cloud) Fixture() cloudsimaws.Fixture { return c.fx }

func (c *Cloud) Config() conformance.CloudConfig {
	var b strings.Builder
	fmt.Fprintf(&b, "  region: %s\n  vpcID: %s\n", region, c.fx.VPCID)
	if c.opts.Routes {
		fmt.Fprintf(&b, "  routeTables: {ids: [%s]}\n", c.fx.RouteTableID)
	}
	fmt.Fprintf(&b, "  endpoints: {ec2: %q, elbv2: %q, elb: %q}\n", c.srv.URL(), c.srv.URL(), c.srv.URL())
	if c.opts.Switched {
		// What import-config writes: upstream's default kind, and new
		// load balancers made as upstream makes them.
		b.WriteString("  loadBalancer: {defaultType: classic, upstreamShape: true}\n")
	}
	fmt.Fprintf(&b, "  credentials: {accessKeyID: %s, secretAccessKey: %s}\n", accessKeyID, SecretAccessKey)
	if c.opts.DualStack {
		// Upstream's NodeIPFamilies, as kOps sets it for IPv6 clusters
		// but IPv4 first: the Nodes get an InternalIP of each family.
		b.WriteString("  nodeIPFamilies: [ipv4, ipv6]\n")
	}
	if c.opts.QuickErrors {
		// The default 8 attempts with backoff can hold one call for most
		// of a minute; 3 attempts of at most 5 s surface a fault quickly.
		b.WriteString("  requestTimeout: 5s\n  maxAttempts: 3\n")
	}
	return conformance.CloudConfig{Provider: "aws", ClusterID: c.clusterID, Section: b.String(), Secrets: []string{SecretAccessKey}}
}

func (c *Cloud) ExtraArgs() []string         { return nil }
func (c *Cloud) Zones() []string             { return c.emu.Zones() }
func (c *Cloud) Region() string              { return c.emu.Region() }
func (c *Cloud) DefaultInstanceType() string { return "m5.large" }
func (c *Cloud) ReadFaultOp() string         { return cloudsim.ReadOps }
func (c *Cloud) ForeignProviderID() string {
	return "gce://conformance-project/europe-west1-b/foreign-node"
}
func (c *Cloud) Inventory() []cloudsim.Resource { return c.srv.Resources() }

// MalformedAnnotation: "subnet-zz" is not a subnet ID (and, starting
// with subnet-, not a Name tag either).
func (c *Cloud) MalformedAnnotation() (string, string) {
	return "service.beta.kubernetes.io/aws-load-balancer-subnets", "subnet-zz"
}

// UpstreamAnnotations: a Classic ELB's idle timeout has no effect on an
// NLB (ignored); TLS and the user's security groups are served on NLBs
// and Classic ELBs alike, so the refused ask is a Classic ELB's PROXY
// protocol on an NLB, whose backends would then get no PROXY header.
func (c *Cloud) UpstreamAnnotations() (ignored, refused map[string]string) {
	return map[string]string{"service.beta.kubernetes.io/aws-load-balancer-connection-idle-timeout": "120"},
		map[string]string{"service.beta.kubernetes.io/aws-load-balancer-proxy-protocol": "*"}
}

func (c *Cloud) Launch(spec conformance.InstanceSpec) (conformance.Instance, error) {
	it := spec.InstanceType
	if it == "" {
		it = c.DefaultInstanceType()
	}
	// The cluster tag is what the upstream CCM and ours list instances
	// by; a cluster installer sets it.
	info, err := c.emu.LaunchInstance(cloudsim.InstanceSpec{
		Name: spec.NameHint, Zone: spec.Zone, InstanceType: it, PublicIP: spec.PublicIP,
		Tags: map[string]string{c.fx.ClusterTagKey: "owned"}, IPv6: c.opts.DualStack,
	})
	if err != nil {
		return conformance.Instance{}, err
	}
	// A kubelet on EC2 names its Node after the private DNS name, which
	// the neutral shape reports as the hostname.
	return conformance.Instance{ID: info.ID, NodeName: info.Hostname, Zone: info.Zone}, nil
}

func (c *Cloud) KubeletProviderID(id string) (string, error) {
	info, ok := c.emu.Instance(id)
	if !ok {
		return "", fmt.Errorf("unknown instance %s", id)
	}
	return "aws:///" + info.Zone + "/" + info.ID, nil
}

func (c *Cloud) ExpectedNode(id string) (conformance.NodeExpectation, error) {
	info, ok := c.emu.Instance(id)
	if !ok {
		return conformance.NodeExpectation{}, fmt.Errorf("unknown instance %s", id)
	}
	var addrs []corev1.NodeAddress
	add := func(t corev1.NodeAddressType, a string) {
		if a != "" {
			addrs = append(addrs, corev1.NodeAddress{Type: t, Address: a})
		}
	}
	add(corev1.NodeInternalIP, info.PrivateIP)
	add(corev1.NodeExternalIP, info.PublicIP)
	add(corev1.NodeInternalDNS, info.PrivateDNSName)
	add(corev1.NodeExternalDNS, info.PublicDNSName)
	add(corev1.NodeHostName, info.PrivateDNSName)
	for _, a := range info.IPv6Addresses {
		add(corev1.NodeInternalIP, a)
	}
	pid, _ := c.KubeletProviderID(id)
	return conformance.NodeExpectation{
		ProviderID: pid,
		Labels: map[string]string{
			corev1.LabelInstanceTypeStable: info.InstanceType,
			corev1.LabelTopologyZone:       info.Zone,
			corev1.LabelTopologyRegion:     c.emu.Region(),
		},
		Addresses: addrs,
	}, nil
}

// LoadBalancers: an NLB per Service, a listener per port, a target group
// per port. The resource listing does not link listeners to target groups,
// so every NLB of the Service is given the union of its target groups'
// targets; with the single NLB a healthy Service has, that is exact.
func (c *Cloud) LoadBalancers(svc types.NamespacedName) []conformance.LoadBalancer {
	key := svc.String()
	inv := c.emu.Resources()
	var out []conformance.LoadBalancer
	tgTargets := map[string][]string{}
	for _, r := range inv {
		if r.Kind == cloudsimaws.KindTargetGroup && r.Tags[serviceTag] == key {
			tgTargets[r.ID] = []string{}
		}
	}
	for _, r := range inv {
		if r.Kind == cloudsimaws.KindTarget {
			if ts, ok := tgTargets[r.Parent]; ok {
				tgTargets[r.Parent] = append(ts, r.Name)
			}
		}
	}
	var backends, inconsistent []string
	var first string
	tgIDs := make([]string, 0, len(tgTargets))
	for id := range tgTargets {
		tgIDs = append(tgIDs, id)
	}
	sort.Strings(tgIDs)
	for i, id := range tgIDs {
		ts := slices.Compact(slices.Sorted(slices.Values(tgTargets[id])))
		if i == 0 {
			first = strings.Join(ts, ",")
		} else if strings.Join(ts, ",") != first {
			inconsistent = append(inconsistent, fmt.Sprintf("target group %s has %v", id, ts))
		}
		backends = append(backends, ts...)
	}
	backends = slices.Compact(slices.Sorted(slices.Values(backends)))
	for _, r := range inv {
		if r.Kind != cloudsimaws.KindLoadBalancer || r.Tags[serviceTag] != key {
			continue
		}
		lb := conformance.LoadBalancer{ID: r.ID, Backends: backends, Inconsistent: inconsistent}
		for _, l := range inv {
			if l.Kind == cloudsimaws.KindListener && l.Parent == r.ID {
				// Listener names are "<protocol>:<port>".
				if _, p, ok := strings.Cut(l.Name, ":"); ok {
					if n, err := strconv.Atoi(p); err == nil {
						lb.Ports = append(lb.Ports, int32(n))
					}
				}
			}
		}
		slices.Sort(lb.Ports)
		out = append(out, lb)
	}
	return append(out, classicLoadBalancers(inv, key)...)
}

// classicLoadBalancers are the Service's Classic ELBs (by the service tag
// the backend and the upstream CCM both write): ports from the listeners
// ("<name>:<port>"), backends from the registered instances.
func classicLoadBalancers(inv []cloudsim.Resource, key string) []conformance.LoadBalancer {
	var out []conformance.LoadBalancer
	for _, r := range inv {
		if r.Kind != cloudsimaws.KindClassicLoadBalancer || r.Tags[serviceTag] != key {
			continue
		}
		lb := conformance.LoadBalancer{ID: r.ID}
		for _, c := range inv {
			if c.Parent != r.ID {
				continue
			}
			switch c.Kind {
			case cloudsimaws.KindClassicListener:
				if _, p, ok := strings.Cut(c.ID, ":"); ok {
					if n, err := strconv.Atoi(p); err == nil {
						lb.Ports = append(lb.Ports, int32(n))
					}
				}
			case cloudsimaws.KindClassicInstance:
				lb.Backends = append(lb.Backends, c.Name)
			}
		}
		slices.Sort(lb.Ports)
		lb.Backends = slices.Compact(slices.Sorted(slices.Values(lb.Backends)))
		out = append(out, lb)
	}
	return out
}

// ServiceResources: everything tagged for the Service, their listeners,
// targets and rules, and the rules on the node security group that admit
// the Service's own security group.
func (c *Cloud) ServiceResources(svc types.NamespacedName) []cloudsim.Resource {
	key := svc.String()
	inv := c.emu.Resources()
	owned := map[string]bool{}
	var out []cloudsim.Resource
	for _, r := range inv {
		if r.Tags[serviceTag] == key {
			owned[r.ID] = true
			out = append(out, r)
		}
	}
	for _, r := range inv {
		if owned[r.ID] {
			continue
		}
		child := owned[r.Parent] && (r.Kind == cloudsimaws.KindListener || r.Kind == cloudsimaws.KindTarget ||
			r.Kind == cloudsimaws.KindSecurityGroupRule || r.Kind == cloudsimaws.KindClassicListener ||
			r.Kind == cloudsimaws.KindClassicPolicy || r.Kind == cloudsimaws.KindClassicInstance)
		nodeRule := false
		if r.Kind == cloudsimaws.KindSecurityGroupRule && r.Parent == c.fx.NodeSecurityGroupID {
			for id := range owned {
				if strings.HasPrefix(id, "sg-") && strings.Contains(r.Name, "peer: "+id+",") {
					nodeRule = true
				}
			}
		}
		if child || nodeRule {
			out = append(out, r)
		}
	}
	cloudsim.SortResources(out)
	return out
}

// PodRoutes: routes in the cluster's route table that target an instance.
// Resource names are "<destination> via <target>".
func (c *Cloud) PodRoutes() map[string]string {
	out := map[string]string{}
	for _, r := range c.emu.Resources() {
		if r.Kind != cloudsimaws.KindRoute || r.Parent != c.fx.RouteTableID {
			continue
		}
		dst, target, ok := strings.Cut(r.Name, " via ")
		if ok && strings.HasPrefix(target, "i-") {
			out[dst] = target
		}
	}
	return out
}

var _ conformance.Principal = (*Cloud)(nil)

// ManagerPrincipal is the manager's access key ID.
func (c *Cloud) ManagerPrincipal() string { return accessKeyID }

var _ conformance.PermissionWithholder = (*Cloud)(nil)

// WithheldPermissions: creating the NLB, and reading instances.
func (c *Cloud) WithheldPermissions() (string, string, string) {
	return "elasticloadbalancing:CreateLoadBalancer", "network-load-balancers", "ec2:DescribeInstances"
}
