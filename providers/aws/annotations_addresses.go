package aws

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/svcopts"
)

// Pinned NLB addresses, with the upstream AWS CCM's names and meanings
// (kubernetes/cloud-provider-aws pkg/providers/v1/aws.go:228-236,
// aws_loadbalancer.go:173-191): one entry per subnet of the NLB, paired
// with the subnets in order. An NLB's addresses are fixed when it is
// created.
const (
	// annotationEIPAllocations gives an internet-facing NLB these Elastic
	// IPs, one per subnet, paired with the subnets in zone order (the
	// order of the subnets annotation or config when they are given).
	// They are the user's: never released. Changing them on an existing
	// NLB is refused (AWS cannot); delete the Service to move to others.
	//
	// Type: comma-separated allocation IDs (eipalloc-...)
	// Default: none (AWS assigns addresses)
	annotationEIPAllocations svcopts.Annotation = "service.beta.kubernetes.io/aws-load-balancer-eip-allocations"
	// annotationPrivateIPv4 gives an internal NLB these private addresses,
	// one per subnet and inside it, paired as the Elastic IPs are.
	//
	// Type: comma-separated IPv4 addresses
	// Default: none (AWS assigns addresses)
	annotationPrivateIPv4 svcopts.Annotation = "service.beta.kubernetes.io/aws-load-balancer-private-ipv4-addresses"
)

var allocationIDRE = regexp.MustCompile(`^eipalloc-[0-9a-f]{8}([0-9a-f]{9})?$`)

// addressPins are the addresses a Service pins its NLB to.
type addressPins struct {
	allocations []string
	privateIPs  []string
}

func (p addressPins) empty() bool { return len(p.allocations) == 0 && len(p.privateIPs) == 0 }

// parseAddressPins checks the two annotations' syntax and that each fits
// the scheme: Elastic IPs only for internet-facing NLBs, private
// addresses only for internal ones.
func parseAddressPins(svc *v1.Service, internal bool) (addressPins, error) {
	var p addressPins
	allocs, _, err := annotationEIPAllocations.List(svc)
	if err != nil {
		return p, err
	}
	for _, a := range allocs {
		if !allocationIDRE.MatchString(a) {
			return p, fmt.Errorf("annotation %s: %q is not an allocation ID such as eipalloc-0abc1234", annotationEIPAllocations, a)
		}
	}
	ips, _, err := annotationPrivateIPv4.List(svc)
	if err != nil {
		return p, err
	}
	for _, ip := range ips {
		if a, err := netip.ParseAddr(ip); err != nil || !a.Is4() {
			return p, fmt.Errorf("annotation %s: %q is not an IPv4 address", annotationPrivateIPv4, ip)
		}
	}
	switch {
	case len(allocs) > 0 && internal:
		return p, fmt.Errorf("annotation %s: Elastic IPs are for internet-facing load balancers, and this Service is internal; use %s", annotationEIPAllocations, annotationPrivateIPv4)
	case len(ips) > 0 && !internal:
		return p, fmt.Errorf("annotation %s: private addresses are for internal load balancers, and this Service is internet-facing; use %s", annotationPrivateIPv4, annotationEIPAllocations)
	}
	p.allocations, p.privateIPs = allocs, ips
	return p, nil
}

// subnetMappings pairs the subnets, in order, with the pinned addresses,
// as upstream's createSubnetMappings does; the counts must match.
func (p addressPins) subnetMappings(subnets []string) ([]elbv2types.SubnetMapping, error) {
	for _, c := range []struct {
		a svcopts.Annotation
		n int
	}{{annotationEIPAllocations, len(p.allocations)}, {annotationPrivateIPv4, len(p.privateIPs)}} {
		if c.n > 0 && c.n != len(subnets) {
			return nil, fmt.Errorf("annotation %s: %d addresses for %d subnets (%s); give one per subnet", c.a, c.n, len(subnets), strings.Join(subnets, ", "))
		}
	}
	out := make([]elbv2types.SubnetMapping, len(subnets))
	for i, s := range subnets {
		out[i] = elbv2types.SubnetMapping{SubnetId: aws.String(s)}
		if len(p.allocations) > 0 {
			out[i].AllocationId = aws.String(p.allocations[i])
		}
		if len(p.privateIPs) > 0 {
			out[i].PrivateIPv4Address = aws.String(p.privateIPs[i])
		}
	}
	return out, nil
}

// matches says an existing NLB has the pinned addresses (in any order):
// an NLB's addresses cannot change, so a mismatch is the user's to solve.
func (p addressPins) matches(lb *elbv2types.LoadBalancer) bool {
	var allocs, ips []string
	for _, az := range lb.AvailabilityZones {
		for _, a := range az.LoadBalancerAddresses {
			if v := aws.ToString(a.AllocationId); v != "" {
				allocs = append(allocs, v)
			}
			if v := aws.ToString(a.PrivateIPv4Address); v != "" {
				ips = append(ips, v)
			}
		}
	}
	same := func(want, have []string) bool {
		if len(want) == 0 {
			return true
		}
		w, h := slices.Clone(want), slices.Clone(have)
		slices.Sort(w)
		slices.Sort(h)
		return slices.Equal(w, h)
	}
	return same(p.allocations, allocs) && same(p.privateIPs, ips)
}
