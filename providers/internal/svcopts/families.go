package svcopts

import (
	"net/netip"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Families are the IP families a Service asks its load balancer to
// serve: spec.ipFamilies in order (the first is the primary family, whose
// ClusterIP is spec.clusterIP), IPv4 when the list is empty, as on a
// cluster older than dual-stack Services or a headless Service before the
// apiserver filled it in.
func Families(svc *v1.Service) []v1.IPFamily {
	var out []v1.IPFamily
	for _, f := range svc.Spec.IPFamilies {
		if f == v1.IPv4Protocol || f == v1.IPv6Protocol {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		out = []v1.IPFamily{v1.IPv4Protocol}
	}
	return out
}

// HasFamily says whether the Service asks for family f.
func HasFamily(svc *v1.Service, f v1.IPFamily) bool {
	for _, g := range Families(svc) {
		if g == f {
			return true
		}
	}
	return false
}

// SourceRangesGiven says whether the Service limits its clients, in
// spec.loadBalancerSourceRanges or the source-ranges annotation. Without
// either, SourceRanges is the IPv4 default 0.0.0.0/0 alone, and a load
// balancer serving IPv6 adds ::/0 (AllClients).
func SourceRangesGiven(svc *v1.Service) bool {
	if len(svc.Spec.LoadBalancerSourceRanges) > 0 {
		return true
	}
	v, ok := svc.Annotations[v1.AnnotationLoadBalancerSourceRangesKey]
	return ok && strings.TrimSpace(v) != ""
}

// AllClients are the source ranges that admit every client of the
// families: 0.0.0.0/0 for IPv4, ::/0 for IPv6.
func AllClients(families ...v1.IPFamily) []netip.Prefix {
	var out []netip.Prefix
	for _, f := range families {
		switch f {
		case v1.IPv4Protocol:
			out = append(out, netip.MustParsePrefix("0.0.0.0/0"))
		case v1.IPv6Protocol:
			out = append(out, netip.MustParsePrefix("::/0"))
		}
	}
	return out
}
