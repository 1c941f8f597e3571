package azure

import (
	"crypto/md5" //nolint:gosec // upstream's rule names are MD5 sums
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
)

// The names providers/azure gives a Service's parts, upstream's
// (cloud-provider-azure v1.36.5; providers/azure naming.go and
// loadbalancer_nsg.go), for Azure-only tests to find them by. A public
// Service, or an internal one without an internal-subnet annotation:
// the base is cloudprovider.DefaultLoadBalancerName ("a" and the
// dashless UID, 32 characters).

// DenyAllRuleName is the security rule that refuses every client but a
// Service's source ranges (azure-deny-all-except-load-balancer-source-ranges).
const DenyAllRuleName = "k8s-azure-lb_deny-all_IPv4"

// FrontendName is the Service's frontend IP configuration.
func FrontendName(svc *corev1.Service) string { return cloudprovider.DefaultLoadBalancerName(svc) }

// RuleName is the load-balancing rule, and probe, of a Service port:
// "<base>-<PROTOCOL>-<port>".
func RuleName(svc *corev1.Service, p corev1.ServicePort) string {
	return fmt.Sprintf("%s-%s-%d", cloudprovider.DefaultLoadBalancerName(svc), p.Protocol, p.Port)
}

// PublicIPName is the public IP the manager makes for the Service:
// "<cluster>-<base>", its first 75 characters.
func PublicIPName(clusterID string, svc *corev1.Service) string {
	n := clusterID + "-" + cloudprovider.DefaultLoadBalancerName(svc)
	if len(n) > 75 {
		n = n[:75]
	}
	return n
}

// AllowRuleName is the security rule admitting sources to ports over
// protocol ("Tcp" or "Udp"), shared by every Service asking the same:
// "k8s-azure-lb_allow_IPv4_" and the hex MD5 of "<protocol>_<sources,
// sorted, joined by ','>_<ports as strings, sorted as strings, joined
// by ','>".
func AllowRuleName(protocol string, sources []string, ports ...int32) string {
	return allowRuleName("IPv4", protocol, sources, ports)
}

// AllowRuleNameIPv6 is AllowRuleName's IPv6 rule: the family is in the
// name, not in the hash ("k8s-azure-lb_allow_IPv6_<the same MD5>").
func AllowRuleNameIPv6(protocol string, sources []string, ports ...int32) string {
	return allowRuleName("IPv6", protocol, sources, ports)
}

func allowRuleName(family, protocol string, sources []string, ports []int32) string {
	srcs := slices.Clone(sources)
	slices.Sort(srcs)
	var ps []string
	for _, p := range ports {
		ps = append(ps, strconv.Itoa(int(p)))
	}
	slices.Sort(ps)
	ps = slices.Compact(ps)
	sum := md5.Sum([]byte(protocol + "_" + strings.Join(srcs, ",") + "_" + strings.Join(ps, ","))) //nolint:gosec
	return "k8s-azure-lb_allow_" + family + "_" + hex.EncodeToString(sum[:])
}
