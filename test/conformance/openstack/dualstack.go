package openstack

import (
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

// dualStackCIDR is the node network's IPv6 subnet with Options.DualStack.
const dualStackCIDR = "fd00:10::/64"

// floatingIPSkipped is upstream's Warning on an external IPv6 Service
// (cloud-provider-openstack pkg/openstack/loadbalancer.go:1813-1818).
const floatingIPSkipped = "LoadBalancerFloatingIPSkipped: Floating IP not supported for IPv6 Service"

var _ conformance.DualStackCloud = (*Cloud)(nil)

var (
	v4  = []corev1.IPFamily{corev1.IPv4Protocol}
	v6  = []corev1.IPFamily{corev1.IPv6Protocol}
	v46 = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	v64 = []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}
)

// DualStackCases: as upstream, one Octavia load balancer of the Service's
// first family. A dual-stack Service with IPv4 first is served IPv4 (its
// status the floating IP), with IPv6 first IPv6 (its status the IPv6
// VIP, no floating IP); an IPv6-only Service is served IPv6.
func (c *Cloud) DualStackCases() []conformance.DualStackCase {
	return []conformance.DualStackCase{
		{Name: "ds-v4-first", Families: v46, Policy: corev1.IPFamilyPolicyRequireDualStack, Serves: v4, StatusFamilies: v4},
		// Upstream's load balancer of an IPv4-first dual-stack Service,
		// taken over: still IPv4, its floating IP kept.
		{Name: "ds-upstream-v4-first", Families: v46, Policy: corev1.IPFamilyPolicyRequireDualStack, Upstream: true, Serves: v4, StatusFamilies: v4},
		// Upstream's load balancer of an IPv6-first Service: an IPv6 VIP,
		// taken over as it is.
		{Name: "ds-upstream-v6-first", Families: v64, Policy: corev1.IPFamilyPolicyRequireDualStack, Upstream: true, Serves: v6, StatusFamilies: v6, Warning: floatingIPSkipped},
		{Name: "ds-v6-first", Families: v64, Policy: corev1.IPFamilyPolicyPreferDualStack, Serves: v6, StatusFamilies: v6, Warning: floatingIPSkipped},
		{Name: "ds-v6-only", Families: v6, Policy: corev1.IPFamilyPolicySingleStack, Serves: v6, StatusFamilies: v6, Warning: floatingIPSkipped},
	}
}

// LoadBalancerFamilies: the families of the VIPs of the Service's load
// balancers (one each: Octavia's additional_vips is not used).
func (c *Cloud) LoadBalancerFamilies(svc types.NamespacedName) []corev1.IPFamily {
	tag := serviceTagPrefix + svc.String()
	name := c.lbName(svc)
	var out []corev1.IPFamily
	for _, lb := range c.emu.LoadBalancers() {
		if !slices.Contains(lb.Tags, tag) && lb.Name != name {
			continue
		}
		a, err := netip.ParseAddr(lb.VIPAddress)
		if err != nil {
			continue
		}
		f := corev1.IPv6Protocol
		if a.Is4() {
			f = corev1.IPv4Protocol
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	slices.Sort(out) // "IPv4" < "IPv6"
	return out
}
