package aws

import (
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/svcopts"
)

// Service annotations this backend reads. The names are the upstream AWS
// CCM's, so Services written for it keep their meaning. The doc comments
// are the reference docs (docs/reference/aws.md, made by hack/refdocs).
const (
	// annotationLBType chooses who makes the Service's load balancer: "nlb"
	// (or unset) for a Network Load Balancer from this controller;
	// "external" or "nlb-ip" hand the Service to the AWS Load Balancer
	// Controller, and any NLB this controller made for it before is
	// removed. Classic ELBs are not supported.
	//
	// Type: string (nlb, external, nlb-ip)
	// Default: nlb
	annotationLBType svcopts.Annotation = "service.beta.kubernetes.io/aws-load-balancer-type"
	// annotationInternal makes the NLB internal (scheme internal, placed
	// in the internal subnets). A CIDR such as 0.0.0.0/0 also means
	// internal, as the upstream CCM documents. Changing it re-creates the
	// NLB, since a scheme is fixed at creation.
	//
	// Type: bool, or a CIDR
	// Default: false
	annotationInternal svcopts.Annotation = "service.beta.kubernetes.io/aws-load-balancer-internal"
	// annotationSubnets places the NLB in these subnets, one per zone,
	// instead of the configured or discovered ones. Entries are subnet IDs
	// or Name tags, resolved in the cluster VPC when the NLB is created.
	//
	// Type: comma-separated subnet IDs or Name tags
	// Default: the cloud-config's subnets, else discovery by role and cluster tags
	annotationSubnets svcopts.Annotation = "service.beta.kubernetes.io/aws-load-balancer-subnets"
	// annotationSourceRanges admits only these client CIDRs to the
	// listeners, when spec.loadBalancerSourceRanges is empty.
	//
	// Type: comma-separated CIDRs
	// Default: 0.0.0.0/0
	annotationSourceRanges svcopts.Annotation = v1.AnnotationLoadBalancerSourceRangesKey
)

// Values of annotationLBType.
const (
	lbTypeNLB      = "nlb"
	lbTypeExternal = "external"
	lbTypeNLBIP    = "nlb-ip"
)

// lbOptions is everything a Service's annotations and spec say about its
// load balancer, parsed and validated before any cloud call, so a malformed
// Service gets a precise error and nothing is created for it.
type lbOptions struct {
	internal bool
	// subnets are subnet IDs or Name tags from annotationSubnets; empty
	// means "from the config, else discovery".
	subnets []string
	// sourceRanges are the CIDRs allowed to reach the listeners.
	sourceRanges []netip.Prefix
	// ports are the listeners, one per port number.
	ports []listenerSpec
	// healthCheck is the target groups' health check.
	healthCheck healthCheckSpec
}

// implementedElsewhere reports whether the Service asks for a load balancer
// the AWS Load Balancer Controller owns, and rejects types we don't know.
func implementedElsewhere(svc *v1.Service) (bool, error) {
	switch t, _ := annotationLBType.Lookup(svc); t {
	case "", lbTypeNLB:
		return false, nil
	case lbTypeExternal, lbTypeNLBIP:
		return true, nil
	default:
		return false, annotationLBType.Invalid(t, fmt.Sprintf("%q (or unset) for a Network Load Balancer from this controller, or %q/%q for the AWS Load Balancer Controller; classic ELBs are not supported",
			lbTypeNLB, lbTypeExternal, lbTypeNLBIP))
	}
}

// parseLBOptions validates the Service. Every error names the annotation or
// field at fault, because it becomes a Warning Event on the Service.
func parseLBOptions(svc *v1.Service) (*lbOptions, error) {
	internal, err := parseInternal(svc)
	if err != nil {
		return nil, err
	}
	subnets, err := parseSubnetList(svc)
	if err != nil {
		return nil, err
	}
	ranges, err := svcopts.SourceRanges(svc)
	if err != nil {
		return nil, err
	}
	ports, err := listenerSpecs(svc)
	if err != nil {
		return nil, err
	}
	return &lbOptions{
		internal:     internal,
		subnets:      subnets,
		sourceRanges: ranges,
		ports:        ports,
		healthCheck:  healthCheckFor(svc),
	}, nil
}

// parseInternal accepts what the upstream CCM documents: a boolean, or a
// CIDR (historically "0.0.0.0/0") which means internal.
func parseInternal(svc *v1.Service) (bool, error) {
	v, ok := annotationInternal.Lookup(svc)
	if !ok {
		return false, nil
	}
	v = strings.TrimSpace(v)
	if b, err := strconv.ParseBool(v); err == nil {
		return b, nil
	}
	if _, err := netip.ParsePrefix(v); err == nil {
		return true, nil
	}
	return false, annotationInternal.Invalid(v, `"true", "false" or a CIDR such as 0.0.0.0/0`)
}

var (
	subnetIDRE = regexp.MustCompile(`^subnet-[0-9a-f]{8}([0-9a-f]{9})?$`)
	// The 256-character limit of a tag value is checked apart:
	// {1,256} on these Unicode classes compiles to 6 MB of automaton,
	// held for the life of the process.
	subnetNameRE = regexp.MustCompile(`^[\p{L}\p{Z}\p{N}_.:/=+\-@]+$`)
)

// validSubnetName says s can be a subnet's Name tag value.
func validSubnetName(s string) bool {
	return utf8.RuneCountInString(s) <= 256 && subnetNameRE.MatchString(s)
}

// parseSubnetList checks the syntax of annotationSubnets; the names are
// resolved against the VPC only when a load balancer is created.
func parseSubnetList(svc *v1.Service) ([]string, error) {
	entries, _, err := annotationSubnets.List(svc)
	if err != nil {
		return nil, err
	}
	for _, s := range entries {
		switch {
		case strings.HasPrefix(s, "subnet-") && !subnetIDRE.MatchString(s):
			return nil, fmt.Errorf("annotation %s: %q is not a valid subnet ID such as subnet-0abc1234", annotationSubnets, s)
		case !validSubnetName(s):
			return nil, fmt.Errorf("annotation %s: %q is neither a subnet ID nor a valid Name tag", annotationSubnets, s)
		}
	}
	return entries, nil
}

// listenerSpecs maps Service ports to listeners. A TCP and a UDP port with
// the same number share one TCP_UDP listener, because an NLB allows one
// listener per port.
func listenerSpecs(svc *v1.Service) ([]listenerSpec, error) {
	ports, err := svcopts.Ports(svc, "a Network Load Balancer", v1.ProtocolTCP, v1.ProtocolUDP)
	if err != nil {
		return nil, err
	}
	byPort := map[int32]*listenerSpec{}
	var order []int32
	for _, p := range ports {
		l, ok := byPort[p.Port]
		if !ok {
			l = &listenerSpec{port: p.Port, nodePort: p.NodePort}
			byPort[p.Port] = l
			order = append(order, p.Port)
		} else if l.nodePort != p.NodePort {
			// One target group per listener means one target port.
			return nil, fmt.Errorf("service port %d: TCP and UDP use different nodePorts (%d, %d); a TCP_UDP listener needs them equal", p.Port, l.nodePort, p.NodePort)
		}
		switch p.Protocol {
		case v1.ProtocolTCP:
			l.tcp = true
		case v1.ProtocolUDP:
			l.udp = true
		}
	}
	out := make([]listenerSpec, 0, len(order))
	for _, port := range order {
		out = append(out, *byPort[port])
	}
	return out, nil
}

// ensureSupported is the type gate every Ensure/Update/Get goes through.
// ImplementedElsewhere is returned unwrapped: the service controller
// compares it with ==.
func ensureSupported(svc *v1.Service) error {
	elsewhere, err := implementedElsewhere(svc)
	if err != nil {
		return err
	}
	if elsewhere {
		return cloudprovider.ImplementedElsewhere
	}
	return nil
}
