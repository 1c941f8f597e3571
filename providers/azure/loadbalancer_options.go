package azure

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
	v1 "k8s.io/api/core/v1"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/svcopts"
)

// Service annotations, with upstream's names so Services move between the
// upstream Azure CCM and this one unchanged.
const (
	// annotationInternal puts the Service on the cluster's internal load
	// balancer (<loadBalancerName>-internal) with a private address in
	// the nodes' subnet.
	//
	// Type: bool
	// Default: false
	annotationInternal svcopts.Annotation = "service.beta.kubernetes.io/azure-load-balancer-internal"
	// annotationInternalSubnet names the subnet of the nodes' virtual
	// network an internal Service's address is taken from, instead of
	// subnetName.
	//
	// Type: string (a subnet name)
	// Default: the config's subnetName
	annotationInternalSubnet svcopts.Annotation = "service.beta.kubernetes.io/azure-load-balancer-internal-subnet"
	// annotationPIPName names an existing public IP in the load
	// balancer's resource group to use as the Service's address; the
	// manager never deletes it.
	//
	// Type: string (a public IP name)
	// Default: a public IP the manager creates and deletes
	annotationPIPName svcopts.Annotation = "service.beta.kubernetes.io/azure-pip-name"
	// annotationDNSLabel sets the DNS label of the public IP the manager
	// created for the Service (<label>.<location>.cloudapp.azure.com).
	//
	// Type: string (a DNS label)
	// Default: none
	annotationDNSLabel svcopts.Annotation = "service.beta.kubernetes.io/azure-dns-label-name"
	// annotationAllowedIPRanges are the client CIDRs the network security
	// group admits (with spec.loadBalancerSourceRanges).
	//
	// Type: comma-separated CIDRs
	// Default: Internet (any client) when no source range or service tag is given
	annotationAllowedIPRanges svcopts.Annotation = "service.beta.kubernetes.io/azure-allowed-ip-ranges"
	// annotationAllowedServiceTags are Azure service tags (e.g.
	// AzureFrontDoor.Backend) the network security group admits.
	//
	// Type: comma-separated service tags
	// Default: none
	annotationAllowedServiceTags svcopts.Annotation = "service.beta.kubernetes.io/azure-allowed-service-tags"
	// annotationIdleTimeout is the TCP idle timeout of the Service's
	// load-balancing rules, in minutes.
	//
	// Type: integer, 4 to 100
	// Default: 4
	annotationIdleTimeout svcopts.Annotation = "service.beta.kubernetes.io/azure-load-balancer-tcp-idle-timeout"
	// annotationDisableFloatingIP "true" (any case) turns floating IP off,
	// as upstream (cloud-provider-azure pkg/consts/consts.go:331, read at
	// provider/azure_loadbalancer.go:3356-3380): each rule then sends its
	// port's traffic to the nodes' NodePort instead of the Service port
	// on the frontend's address.
	//
	// Type: bool
	// Default: false (floating IP on)
	annotationDisableFloatingIP svcopts.Annotation = "service.beta.kubernetes.io/azure-disable-load-balancer-floating-ip"
	// annotationPIPResourceGroup is the resource group of the Service's
	// public IP (the one the manager makes, azure-pip-name's or
	// spec.loadBalancerIP's), as upstream (pkg/consts/consts.go:280).
	//
	// Type: string (a resource group name)
	// Default: the config's resourceGroup
	annotationPIPResourceGroup svcopts.Annotation = "service.beta.kubernetes.io/azure-load-balancer-resource-group"
	// annotationIPv4 pins the Service's IPv4 address, as
	// spec.loadBalancerIP does and ahead of it, as upstream
	// (pkg/consts/consts.go:212, azure_utils.go:318-334): an existing
	// public IP's address, or an internal Service's private address.
	//
	// Type: string (an IPv4 address)
	// Default: spec.loadBalancerIP
	annotationIPv4 svcopts.Annotation = "service.beta.kubernetes.io/azure-load-balancer-ipv4"
	// annotationIPv6 pins the IPv6 address of an IPv6 or dual-stack
	// Service, as azure-load-balancer-ipv4 pins the IPv4 one, as upstream
	// (pkg/consts/consts.go:213): an existing public IP's address, or an
	// internal Service's private address.
	//
	// Type: string (an IPv6 address)
	// Default: spec.loadBalancerIP when it is an IPv6 address
	annotationIPv6 svcopts.Annotation = "service.beta.kubernetes.io/azure-load-balancer-ipv6"
	// annotationPIPNameIPv6 names an existing public IP to use as the
	// IPv6 address of a dual-stack Service, or of an IPv6 Service ahead
	// of azure-pip-name, as upstream's getServicePIPName
	// (pkg/consts/consts.go:217, azure_utils.go:375-394).
	//
	// Type: string (a public IP name)
	// Default: a public IP the manager creates and deletes
	annotationPIPNameIPv6 svcopts.Annotation = "service.beta.kubernetes.io/azure-pip-name-ipv6"
	// annotationDisableTCPReset "true" (any case) turns off TCP reset on
	// idle timeout for the Service's TCP rules, as upstream
	// (pkg/consts/consts.go:348, azure_loadbalancer.go:3371-3373).
	//
	// Type: bool
	// Default: false (reset on)
	annotationDisableTCPReset svcopts.Annotation = "service.beta.kubernetes.io/azure-load-balancer-disable-tcp-reset"
	// annotationPIPTags adds tags, "k1=v1,k2=v2", to the public IP the
	// manager makes for the Service, as upstream (pkg/consts/consts.go:327,
	// ensurePIPTagged azure_loadbalancer.go:3607-3648); tags it no longer
	// lists stay, as upstream leaves them.
	//
	// Type: string
	// Default: none
	annotationPIPTags svcopts.Annotation = "service.beta.kubernetes.io/azure-pip-tags"
	// annotationDisableNSGRule "true" (any case) adds no security rule for
	// the Service, as upstream (pkg/consts/consts.go:336,
	// azure_loadbalancer.go:3490-3497): the operator admits its traffic;
	// the manager still takes the Service's addresses out of its rules.
	//
	// Type: bool
	// Default: false
	annotationDisableNSGRule svcopts.Annotation = "service.beta.kubernetes.io/azure-disable-load-balancer-nsg-rule"
	// annotationDenyAllExceptSourceRanges "true" (any case), on a Service
	// with source ranges, adds the k8s-azure-lb_deny-all_IPv4 rule for its
	// addresses, so clients in the virtual network outside the ranges are
	// refused too, as upstream (pkg/consts/consts.go:297,
	// loadbalancer/accesscontrol.go:156-163).
	//
	// Type: bool
	// Default: false
	annotationDenyAllExceptSourceRanges svcopts.Annotation = "service.beta.kubernetes.io/azure-deny-all-except-load-balancer-source-ranges"
	// annotationHAPorts "true" (any case) on an internal Service makes one
	// HA-ports rule (every port and protocol to the backends) instead of
	// a rule per port, as upstream (pkg/consts/consts.go:305,
	// azure_loadbalancer.go:3213-3256); on a public Service it does
	// nothing, as upstream's.
	//
	// Type: bool
	// Default: false
	annotationHAPorts svcopts.Annotation = "service.beta.kubernetes.io/azure-load-balancer-enable-high-availability-ports"
)

// lbSpec is what a Service asks of its load balancer, read and checked
// before any call.
type lbSpec struct {
	internal bool
	// subnet is the internal frontend's subnet name.
	subnet string
	// fams are the Service's IP families (spec.ipFamilies, in its order;
	// IPv4 when it names none), each a frontend with its rules.
	fams []famSpec
	// dualStack is two families: the IPv6 parts' names then carry
	// "-IPv6" (lbNames.forFamily).
	dualStack bool
	dnsLabel  string
	ports     []v1.ServicePort
	local     bool
	// access is what the Service asks of the network security group
	// (loadbalancer_nsg.go).
	access      *access
	idleTimeout int32
	sessionIP   bool
	// floatingIP is upstream's default: rules keep the frontend address
	// and the Service port, which kube-proxy serves on every node.
	floatingIP bool
	// probes are the ports' probes and rules, by index of ports, and
	// localProbe the externalTrafficPolicy Local probe
	// (loadbalancer_probes.go).
	probes     []portProbe
	localProbe *armnetwork.ProbePropertiesFormat
	// tcpReset is upstream's default, off with annotationDisableTCPReset.
	tcpReset bool
	// pipTags are annotationPIPTags' tags for the manager's public IP.
	pipTags map[string]string
	// haPorts is annotationHAPorts on an internal Service.
	haPorts bool
}

// famSpec is what a Service asks of one IP family.
type famSpec struct {
	v6 bool
	// staticIP is the family's pinned address (azure-load-balancer-ipv4
	// or -ipv6, else spec.loadBalancerIP of this family): for an internal
	// Service the private address to take; for a public one, the address
	// of an existing public IP to use.
	staticIP string
	// pipName is an existing public IP to use (azure-pip-name, or
	// azure-pip-name-ipv6).
	pipName string
	// floatingIP is the Service's, except on an internal Service's IPv6
	// frontend: Azure's internal load balancer does not take the nodes'
	// secondary (IPv6) addresses as floating IP targets, so upstream
	// turns it off there and sends the traffic to the NodePort
	// (azure_loadbalancer.go:3375-3380).
	floatingIP bool
}

// backendPort is where a rule sends a port's traffic: the Service port
// with floating IP, else the NodePort.
func (f famSpec) backendPort(p v1.ServicePort) int32 {
	if f.floatingIP {
		return p.Port
	}
	return p.NodePort
}

func familyName(v6 bool) string {
	if v6 {
		return "IPv6"
	}
	return "IPv4"
}

// serviceFamilies are the Service's IP families as IPv6 flags, in
// spec.ipFamilies' order, IPv4 when it names none (upstream's
// getIPFamiliesEnabled).
func serviceFamilies(svc *v1.Service) []bool {
	var out []bool
	for _, f := range svc.Spec.IPFamilies {
		switch f {
		case v1.IPv4Protocol:
			out = append(out, false)
		case v1.IPv6Protocol:
			out = append(out, true)
		}
	}
	if len(out) == 0 {
		out = []bool{false}
	}
	return out
}

// readFamilies fills sp.fams: each family's pinned address and public IP
// name, read as upstream's getServiceLoadBalancerIP and getServicePIPName
// (azure_utils.go:318-334, 375-394). As upstream, an address annotation of
// a family the Service does not have is not read.
func readFamilies(svc *v1.Service, sp *lbSpec) error {
	fams := serviceFamilies(svc)
	sp.dualStack = len(fams) == 2
	for _, v6 := range fams {
		f := famSpec{v6: v6, floatingIP: sp.floatingIP && !(sp.internal && v6)}
		ann := annotationIPv4
		if v6 {
			ann = annotationIPv6
		}
		ip, field := "", ""
		if v, ok := ann.Lookup(svc); ok && strings.TrimSpace(v) != "" {
			ip, field = strings.TrimSpace(v), "annotation "+string(ann)
		} else if a, err := netip.ParseAddr(svc.Spec.LoadBalancerIP); err == nil && a.Is6() == v6 {
			ip, field = svc.Spec.LoadBalancerIP, "spec.loadBalancerIP"
		}
		if ip != "" {
			a, err := netip.ParseAddr(ip)
			if err != nil || a.Is6() != v6 || a.Is4In6() {
				return fmt.Errorf("%s %q: want an %s address", field, ip, familyName(v6))
			}
			f.staticIP = a.String()
		}
		name, nameAnn := "", annotationPIPName
		switch {
		case v6 && sp.dualStack:
			nameAnn = annotationPIPNameIPv6
		case v6:
			if v, ok := annotationPIPNameIPv6.Lookup(svc); ok && v != "" {
				nameAnn = annotationPIPNameIPv6
			}
		}
		if v, ok := nameAnn.Lookup(svc); ok {
			if sp.internal {
				return fmt.Errorf("annotation %s names a public IP; an internal Service has none", nameAnn)
			}
			if !nameRE.MatchString(v) {
				return nameAnn.Invalid(v, "a public IP name in the load balancer's resource group")
			}
			name = v
		}
		if name != "" && f.staticIP != "" {
			return fmt.Errorf("%s and annotation %s both choose the %s public IP; set one", field, nameAnn, familyName(v6))
		}
		f.pipName = name
		sp.fams = append(sp.fams, f)
	}
	return nil
}

var (
	dnsLabelRE   = regexp.MustCompile(`^[a-z][a-z0-9-]{1,61}[a-z0-9]$`)
	serviceTagRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*(\.[A-Za-z0-9]+)*$`)
)

// serviceSpec reads svc. Every error names the annotation or field and
// what would be valid, and becomes a Warning Event on that Service.
func serviceSpec(s *Section, svc *v1.Service) (*lbSpec, error) {
	sp := &lbSpec{subnet: s.SubnetName, idleTimeout: 4}
	sp.floatingIP = floatingIPOf(svc)
	var err error
	if sp.internal, _, err = annotationInternal.Bool(svc); err != nil {
		return nil, err
	}
	if v, ok := annotationInternalSubnet.Lookup(svc); ok {
		if !sp.internal {
			return nil, fmt.Errorf("annotation %s is only for internal Services (%s: \"true\")", annotationInternalSubnet, annotationInternal)
		}
		if !nameRE.MatchString(v) {
			return nil, annotationInternalSubnet.Invalid(v, "a subnet name of the nodes' virtual network")
		}
		sp.subnet = v
	}
	if err := readFamilies(svc, sp); err != nil {
		return nil, err
	}
	if v, ok := annotationDNSLabel.Lookup(svc); ok && v != "" {
		if sp.internal || slices.ContainsFunc(sp.fams, func(f famSpec) bool { return f.pipName != "" }) {
			return nil, fmt.Errorf("annotation %s sets the DNS label of a public IP the manager creates; this Service has none", annotationDNSLabel)
		}
		if !dnsLabelRE.MatchString(v) {
			return nil, annotationDNSLabel.Invalid(v, "a DNS label of 3-63 lower-case letters, digits and '-', starting with a letter")
		}
		sp.dnsLabel = v
	}
	sp.haPorts = sp.internal && annotationTrue(annotationHAPorts, svc)
	sp.tcpReset = !annotationTrue(annotationDisableTCPReset, svc)
	if v, ok := annotationPIPTags.Lookup(svc); ok {
		sp.pipTags = map[string]string{}
		for _, kv := range strings.Split(v, ",") {
			k, val, _ := strings.Cut(kv, "=")
			if k = strings.TrimSpace(k); k == "" {
				if strings.TrimSpace(kv) != "" {
					return nil, annotationPIPTags.Invalid(v, "comma-separated key=value pairs such as \"team=web,env=prod\"")
				}
				continue
			}
			if k == tagService || k == tagCluster || k == tagLegacyService || k == tagLegacyCluster {
				return nil, fmt.Errorf("annotation %s: tag %q is the manager's own", annotationPIPTags, k)
			}
			sp.pipTags[k] = strings.TrimSpace(val)
		}
	}
	if v, ok := annotationIdleTimeout.Lookup(svc); ok {
		n, perr := strconv.Atoi(strings.TrimSpace(v))
		if perr != nil || n < 4 || n > 100 {
			return nil, annotationIdleTimeout.Invalid(v, "a whole number of minutes from 4 to 100")
		}
		sp.idleTimeout = int32(n)
	}
	if sp.ports, err = svcopts.Ports(svc, "Azure load balancers", v1.ProtocolTCP, v1.ProtocolUDP); err != nil {
		return nil, err
	}
	for _, p := range sp.ports {
		if p.NodePort == 0 {
			return nil, fmt.Errorf("port %d has no nodePort yet", p.Port)
		}
	}
	_, _, sp.local = svcopts.HealthCheck(svc)
	sp.sessionIP = svc.Spec.SessionAffinity == v1.ServiceAffinityClientIP
	if sp.access, err = readAccess(svc, sp); err != nil {
		return nil, err
	}
	if sp.probes, sp.localProbe, err = probeSettings(svc, sp); err != nil {
		return nil, err
	}
	return sp, nil
}
