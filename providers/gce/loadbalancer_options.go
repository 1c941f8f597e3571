package gce

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/svcopts"
)

// Service annotations, with upstream's names so Services move between the
// upstream GCE CCM and this one unchanged.
const (
	// annotationLBType makes the Service an internal passthrough load
	// balancer (a regional backend service over per-zone instance groups)
	// when "Internal"; otherwise it is external (a target pool).
	//
	// Type: "Internal" or "External"
	// Default: External
	annotationLBType svcopts.Annotation = "networking.gke.io/load-balancer-type"
	// annotationLBTypeLegacy is the older name of
	// networking.gke.io/load-balancer-type, still honoured.
	//
	// Type: "Internal"
	// Default: External
	annotationLBTypeLegacy svcopts.Annotation = "cloud.google.com/load-balancer-type"
	// annotationILBSubnet names the subnetwork of the nodes' network an
	// internal Service's address comes from, instead of subnetworkName.
	//
	// Type: string (a subnetwork name)
	// Default: the config's subnetworkName
	annotationILBSubnet svcopts.Annotation = "networking.gke.io/internal-load-balancer-subnet"
	// annotationILBGlobalAccess lets clients in every region reach an
	// internal Service.
	//
	// Type: bool
	// Default: false
	annotationILBGlobalAccess svcopts.Annotation = "networking.gke.io/internal-load-balancer-allow-global-access"
	// annotationNetworkTier is the network tier of an external Service's
	// address and forwarding rule.
	//
	// Type: "Premium" or "Standard"
	// Default: Premium
	annotationNetworkTier svcopts.Annotation = "cloud.google.com/network-tier"
	// annotationRBS marks a Service for the backend-service-based external
	// load balancer controller (GKE's), which this manager leaves it to.
	//
	// Type: "enabled"
	// Default: absent (this manager serves the Service)
	annotationRBS svcopts.Annotation = "cloud.google.com/l4-rbs"
)

// Network tiers.
const (
	tierPremium  = "PREMIUM"
	tierStandard = "STANDARD"
)

// lbSpec is what a Service asks of its load balancer, read and checked
// before any call.
type lbSpec struct {
	internal bool
	// subnet is the internal forwarding rule's subnetwork name.
	subnet       string
	globalAccess bool
	tier         string
	// staticIP is spec.loadBalancerIP: an address the user reserved,
	// used and never released.
	staticIP string
	ports    []v1.ServicePort
	// protocols are the ports' protocols, sorted: one forwarding rule each.
	protocols []v1.Protocol
	// v4 and v6 are the families the load balancer serves
	// (loadbalancer_families.go); preferDual says IPv6 may be left out
	// when the subnetwork cannot serve it (ipFamilyPolicy
	// PreferDualStack with IPv4 beside it).
	v4, v6, preferDual bool
	// sources and sources6 are the client firewalls' IPv4 and IPv6
	// source ranges; a family without any gets no client firewall rule.
	sources, sources6 []string
	// healthPath/healthPort: the Service's own health check node port
	// (externalTrafficPolicy Local); else the shared kube-proxy check.
	healthPath string
	healthPort int32
	local      bool
	sessionIP  bool
}

// serviceSpec reads svc. Every error names the annotation or field and
// what would be valid, and becomes a Warning Event on that Service. A
// Service for GKE's backend-service controller is
// cloudprovider.ImplementedElsewhere, which the service controller skips.
func serviceSpec(s *Section, svc *v1.Service) (*lbSpec, error) {
	// Exactly "enabled", as upstream compares it (kubernetes/cloud-provider-gcp
	// providers/gce/gce_util.go:467-490): another spelling is served here,
	// as it was there.
	if v, ok := annotationRBS.Lookup(svc); ok && v == "enabled" {
		return nil, cloudprovider.ImplementedElsewhere
	}
	sp := &lbSpec{subnet: s.SubnetworkName, tier: tierPremium}
	typ, ok := annotationLBType.Lookup(svc)
	ann := annotationLBType
	if !ok {
		typ, ok = annotationLBTypeLegacy.Lookup(svc)
		ann = annotationLBTypeLegacy
	}
	if ok {
		switch strings.ToLower(strings.TrimSpace(typ)) {
		case "internal":
			sp.internal = true
		case "external", "":
		default:
			return nil, ann.Invalid(typ, `"Internal" or "External"`)
		}
	}
	if v, ok := annotationILBSubnet.Lookup(svc); ok {
		if !sp.internal {
			return nil, fmt.Errorf("annotation %s is only for internal Services (%s: Internal)", annotationILBSubnet, annotationLBType)
		}
		if !nameRE.MatchString(v) {
			return nil, annotationILBSubnet.Invalid(v, "a subnetwork name of the nodes' network")
		}
		sp.subnet = v
	}
	var err error
	if sp.globalAccess, _, err = annotationILBGlobalAccess.Bool(svc); err != nil {
		return nil, err
	}
	if sp.globalAccess && !sp.internal {
		return nil, fmt.Errorf("annotation %s is only for internal Services (%s: Internal)", annotationILBGlobalAccess, annotationLBType)
	}
	if v, ok := annotationNetworkTier.Lookup(svc); ok {
		switch strings.ToUpper(strings.TrimSpace(v)) {
		case tierPremium:
		case tierStandard:
			if sp.internal {
				return nil, fmt.Errorf("annotation %s is only for external Services", annotationNetworkTier)
			}
			sp.tier = tierStandard
		default:
			return nil, annotationNetworkTier.Invalid(v, `"Premium" or "Standard"`)
		}
	}
	if sp.internal && sp.subnet == "" {
		return nil, fmt.Errorf("an internal Service needs a subnetwork: set gce.subnetworkName or annotation %s", annotationILBSubnet)
	}
	if ip := svc.Spec.LoadBalancerIP; ip != "" {
		a, perr := netip.ParseAddr(ip)
		if perr != nil || !a.Is4() {
			return nil, fmt.Errorf("spec.loadBalancerIP %q: want an IPv4 address (an IPv6 forwarding rule's address is Compute Engine's choice)", ip)
		}
		sp.staticIP = a.String()
	}
	if sp.ports, err = svcopts.Ports(svc, "GCE load balancers", v1.ProtocolTCP, v1.ProtocolUDP); err != nil {
		return nil, err
	}
	// A forwarding rule carries one protocol: a Service with TCP and UDP
	// ports gets one rule for each.
	for _, p := range sp.ports {
		if !slices.Contains(sp.protocols, p.Protocol) {
			sp.protocols = append(sp.protocols, p.Protocol)
		}
	}
	slices.Sort(sp.protocols)
	if err := readFamilies(svc, sp); err != nil {
		return nil, err
	}
	sp.healthPath, sp.healthPort, sp.local = svcopts.HealthCheck(svc)
	sp.sessionIP = svc.Spec.SessionAffinity == v1.ServiceAffinityClientIP
	return sp, nil
}
