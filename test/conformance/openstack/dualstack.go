package openstack

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"

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

// DualStackCases: from Octavia API 2.26 on (additional_vips), a
// dual-stack Service gets one load balancer with a VIP of each family,
// better than upstream: its status the first family's address then the
// other's (the floating IP for IPv4, the VIP for IPv6), and no Warning,
// the IPv4 address having its floating IP. The load balancers the
// upstream CCM made for dual-stack Services stay as upstream made them,
// of the first family (Octavia cannot add a VIP to a load balancer). An
// IPv6-only Service is served IPv6 (its status the IPv6 VIP, no floating
// IP, upstream's Warning).
//
// Below 2.26, as upstream: one load balancer of the Service's first
// family; a Service that requires dual-stack gets a Warning saying only
// that family is served, and why.
func (c *Cloud) DualStackCases() []conformance.DualStackCase {
	upstream := []conformance.DualStackCase{
		// Upstream's load balancer of an IPv4-first dual-stack Service,
		// taken over: still IPv4, its floating IP kept.
		{Name: "ds-upstream-v4-first", Families: conformance.IPv4First, Policy: corev1.IPFamilyPolicyRequireDualStack, Upstream: true, Serves: conformance.IPv4Only, StatusFamilies: conformance.IPv4Only},
		// Upstream's load balancer of an IPv6-first Service: an IPv6 VIP,
		// taken over as it is.
		{Name: "ds-upstream-v6-first", Families: conformance.IPv6First, Policy: corev1.IPFamilyPolicyRequireDualStack, Upstream: true, Serves: conformance.IPv6Only, StatusFamilies: conformance.IPv6Only, Warning: floatingIPSkipped},
		{Name: "ds-v6-only", Families: conformance.IPv6Only, Policy: corev1.IPFamilyPolicySingleStack, Serves: conformance.IPv6Only, StatusFamilies: conformance.IPv6Only, Warning: floatingIPSkipped},
	}
	if !c.additionalVIPs() {
		return append(upstream,
			conformance.DualStackCase{Name: "ds-v4-first", Families: conformance.IPv4First, Policy: corev1.IPFamilyPolicyRequireDualStack, Serves: conformance.IPv4Only, StatusFamilies: conformance.IPv4Only, Warning: firstFamilyOnly},
			conformance.DualStackCase{Name: "ds-v6-first", Families: conformance.IPv6First, Policy: corev1.IPFamilyPolicyPreferDualStack, Serves: conformance.IPv6Only, StatusFamilies: conformance.IPv6Only, Warning: floatingIPSkipped},
		)
	}
	return append(upstream,
		conformance.DualStackCase{Name: "ds-v4-first", Families: conformance.IPv4First, Policy: corev1.IPFamilyPolicyRequireDualStack, Serves: conformance.IPv4First, StatusFamilies: conformance.IPv4First},
		conformance.DualStackCase{Name: "ds-v6-first", Families: conformance.IPv6First, Policy: corev1.IPFamilyPolicyPreferDualStack, Serves: conformance.IPv4First, StatusFamilies: conformance.IPv6First},
	)
}

// firstFamilyOnly is the Warning a Service that requires dual-stack
// gets below Octavia API 2.26 (providers/openstack
// loadbalancer_additionalvips.go).
const firstFamilyOnly = "LoadBalancerFirstFamilyOnly: The load balancer serves IPv4 only, not IPv6: the cloud's Octavia API is version 2.25"

// additionalVIPs says the emulator's Octavia has additional_vips (API
// 2.26, its default).
func (c *Cloud) additionalVIPs() bool {
	v := c.adapter.OctaviaVersion
	if v == "" {
		return true
	}
	n, err := strconv.Atoi(strings.TrimPrefix(v, "v2."))
	return err == nil && n >= 26
}

// LoadBalancerFamilies: the families of the VIPs (primary and
// additional) of the Service's load balancers.
func (c *Cloud) LoadBalancerFamilies(svc types.NamespacedName) []corev1.IPFamily {
	tag := serviceTagPrefix + svc.String()
	name := c.lbName(svc)
	var out []corev1.IPFamily
	for _, lb := range c.emu.LoadBalancers() {
		if !slices.Contains(lb.Tags, tag) && lb.Name != name {
			continue
		}
		for _, vip := range append([]string{lb.VIPAddress}, lb.AdditionalVIPs...) {
			a, err := netip.ParseAddr(vip)
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
	}
	slices.Sort(out) // "IPv4" < "IPv6"
	return out
}
