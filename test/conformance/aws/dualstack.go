package aws

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

var _ conformance.DualStackCloud = (*Cloud)(nil)

// annotationIPAddressType is the AWS Load Balancer Controller's annotation
// the backend reads for an NLB's IP address type.
const (
	annotationIPAddressType = "service.beta.kubernetes.io/aws-load-balancer-ip-address-type"
	annotationLBType        = "service.beta.kubernetes.io/aws-load-balancer-type"
)

// DualStackCases: a dual-stack Service of either order gets a dualstack
// NLB (its DNS name in status); the annotation keeps one ipv4; an
// IPv6-only Service and a dualstack Classic ELB are refused.
func (c *Cloud) DualStackCases() []conformance.DualStackCase {
	return []conformance.DualStackCase{
		{Name: "ds-nlb", Families: conformance.IPv4First, Policy: corev1.IPFamilyPolicyRequireDualStack, Serves: conformance.IPv4First},
		{Name: "ds-nlb-v6-first", Families: conformance.IPv6First, Policy: corev1.IPFamilyPolicyPreferDualStack, Serves: conformance.IPv4First},
		{Name: "ds-nlb-asked-ipv4", Families: conformance.IPv4First, Policy: corev1.IPFamilyPolicyRequireDualStack,
			Annotations: map[string]string{annotationIPAddressType: "ipv4"}, Serves: conformance.IPv4Only},
		// Upstream's NLB of a dual-stack Service is ipv4; taken over, it
		// stays so (no annotation asks for dualstack).
		{Name: "ds-upstream-nlb", Families: conformance.IPv4First, Policy: corev1.IPFamilyPolicyRequireDualStack,
			Annotations: map[string]string{annotationLBType: "nlb"}, Upstream: true, Serves: conformance.IPv4Only},
		{Name: "ds-v6-only", Families: conformance.IPv6Only, Policy: corev1.IPFamilyPolicySingleStack, Refusal: "an NLB always has IPv4 addresses"},
		{Name: "ds-classic", Families: conformance.IPv4First, Policy: corev1.IPFamilyPolicyRequireDualStack,
			Annotations: map[string]string{annotationLBType: "classic", annotationIPAddressType: "dualstack"}, Refusal: "a Classic ELB has no IPv6 addresses"},
	}
}

// LoadBalancerFamilies: a dualstack NLB serves both families, an ipv4 one
// and a Classic ELB IPv4.
func (c *Cloud) LoadBalancerFamilies(svc types.NamespacedName) []corev1.IPFamily {
	key := svc.String()
	var out []corev1.IPFamily
	add := func(f corev1.IPFamily) {
		for _, g := range out {
			if g == f {
				return
			}
		}
		out = append(out, f)
	}
	for _, r := range c.emu.Resources() {
		if r.Tags[serviceTag] != key {
			continue
		}
		switch r.Kind {
		case cloudsimaws.KindLoadBalancer:
			add(corev1.IPv4Protocol)
			if c.emu.LoadBalancerIPAddressType(r.ID) == "dualstack" {
				add(corev1.IPv6Protocol)
			}
		case cloudsimaws.KindClassicLoadBalancer:
			add(corev1.IPv4Protocol)
		}
	}
	return out
}
