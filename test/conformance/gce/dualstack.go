package gce

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

var _ conformance.DualStackCloud = (*Cloud)(nil)

// ipv6Suffix ends the names of the backend's IPv6 parts (ingress-gce's
// convention): "<rule>-ipv6", "k8s-fw-<base>-ipv6".
const ipv6Suffix = "-ipv6"

// ruleNamesOf are the names a Service's forwarding rules may have: per
// protocol and family.
func ruleNamesOf(base string) []string {
	var out []string
	for _, n := range []string{base, base + "-tcp", base + "-udp"} {
		out = append(out, n, n+ipv6Suffix)
	}
	return out
}

// DualStackCases: an internal Service (the fixture subnetwork has
// internal IPv6) is served on both families, whatever their order, with
// the status IPv4 then IPv6, or on IPv6 alone; an external one (a target
// pool, IPv4 only) is served on IPv4 when dual-stack and refused when
// IPv6-only.
func (c *Cloud) DualStackCases() []conformance.DualStackCase {
	internal := map[string]string{annotationLBType: "Internal"}
	return []conformance.DualStackCase{
		{Name: "ds-ilb", Families: conformance.IPv4First, Policy: corev1.IPFamilyPolicyRequireDualStack, Annotations: internal, Serves: conformance.IPv4First, StatusFamilies: conformance.IPv4First},
		{Name: "ds-ilb-v6-first", Families: conformance.IPv6First, Policy: corev1.IPFamilyPolicyPreferDualStack, Annotations: internal, Serves: conformance.IPv4First, StatusFamilies: conformance.IPv4First},
		{Name: "ds-ilb-v6-only", Families: conformance.IPv6Only, Policy: corev1.IPFamilyPolicySingleStack, Annotations: internal, Serves: conformance.IPv6Only, StatusFamilies: conformance.IPv6Only},
		// Upstream's internal load balancer of a dual-stack Service is
		// IPv4; taken over, it stays so.
		{Name: "ds-upstream-ilb", Families: conformance.IPv4First, Policy: corev1.IPFamilyPolicyRequireDualStack, Annotations: internal, Upstream: true, Serves: conformance.IPv4Only, StatusFamilies: conformance.IPv4Only},
		{Name: "ds-external", Families: conformance.IPv6First, Policy: corev1.IPFamilyPolicyRequireDualStack, Serves: conformance.IPv4Only, StatusFamilies: conformance.IPv4Only},
		{Name: "ds-external-v6-only", Families: conformance.IPv6Only, Policy: corev1.IPFamilyPolicySingleStack, Refusal: "a target pool, which takes IPv4 only"},
	}
}

// LoadBalancerFamilies: the families of the Service's forwarding rules
// (ipVersion IPV6, or IPv4).
func (c *Cloud) LoadBalancerFamilies(svc types.NamespacedName) []corev1.IPFamily {
	v := c.view()
	var out []corev1.IPFamily
	for _, base := range v.bases[svc.String()] {
		for _, name := range ruleNamesOf(base) {
			r, ok := v.rules[name]
			if !ok {
				continue
			}
			f := corev1.IPv4Protocol
			if r.GetIpVersion() == "IPV6" {
				f = corev1.IPv6Protocol
			}
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	slices.Sort(out)
	return out
}
