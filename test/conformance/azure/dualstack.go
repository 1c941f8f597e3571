package azure

import (
	"path"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

var _ conformance.DualStackCloud = (*Cloud)(nil)

// DualStackCases: Azure serves every family, as upstream: a frontend per
// family, the status's addresses in the Service's order. Azure keeps no
// IPv6 frontend on a load balancer without an IPv4 one, and the
// emulator's cluster load balancer has none that is no Service's (a real
// AKS or CAPZ one has its outbound frontend): so an IPv6-only Service is
// refused, whatever other Service's IPv4 frontend is there, before
// anything is made for it (providers/azure/loadbalancer_families.go).
// Upstream makes dual-stack load balancers too (MakeUpstreamLoadBalancer):
// one is taken over as it is.
func (c *Cloud) DualStackCases() []conformance.DualStackCase {
	return []conformance.DualStackCase{
		{Name: "ds-public", Families: conformance.IPv4First, Policy: corev1.IPFamilyPolicyRequireDualStack, Serves: conformance.IPv4First, StatusFamilies: conformance.IPv4First},
		{Name: "ds-public-v6-first", Families: conformance.IPv6First, Policy: corev1.IPFamilyPolicyPreferDualStack, Serves: conformance.IPv4First, StatusFamilies: conformance.IPv6First},
		// Upstream's load balancer of a dual-stack Service, taken over
		// with both frontends and their addresses.
		{Name: "ds-upstream-public", Families: conformance.IPv4First, Policy: corev1.IPFamilyPolicyRequireDualStack, Upstream: true, Serves: conformance.IPv4First, StatusFamilies: conformance.IPv4First},
		{Name: "ds-v6-only", Families: conformance.IPv6Only, Policy: corev1.IPFamilyPolicySingleStack, Refusal: "an IPv6-only Service needs an IPv4 frontend on load balancer"},
	}
}

// LoadBalancerFamilies: the family of each of the Service's frontends,
// from its private address version or its public IP's.
func (c *Cloud) LoadBalancerFamilies(svc types.NamespacedName) []corev1.IPFamily {
	fes, _ := c.serviceFrontends(c.view(), svc)
	var out []corev1.IPFamily
	for _, fe := range fes {
		f := corev1.IPv4Protocol
		if c.frontendIPv6(fe) {
			f = corev1.IPv6Protocol
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out
}

func (c *Cloud) frontendIPv6(fe frontend) bool {
	for _, cfg := range fe.lb.Properties.FrontendIPConfigurations {
		if !strings.EqualFold(deref(cfg.Name), fe.name) || cfg.Properties == nil {
			continue
		}
		p := cfg.Properties
		if p.PublicIPAddress != nil {
			pip, ok := c.emu.PublicIP(c.fx.ResourceGroup, path.Base(deref(p.PublicIPAddress.ID)))
			return ok && pip.Properties != nil && deref(pip.Properties.PublicIPAddressVersion) == armnetwork.IPVersionIPv6
		}
		return deref(p.PrivateIPAddressVersion) == armnetwork.IPVersionIPv6
	}
	return false
}
