package gce

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/svcopts"
)

// IPv6 and dual-stack Services. The upstream GCE CCM has none: its load
// balancer code never reads spec.ipFamilies (kubernetes/cloud-provider-gcp
// providers/gce/gce_loadbalancer*.go), so a dual-stack Service gets an
// IPv4 load balancer. GKE's dual-stack L4 load balancers are
// kubernetes/ingress-gce's (pkg/l4/resources), the reference here:
//   - internal (backend service): per family, forwarding rules and a
//     client firewall rule, the IPv6 ones named as the IPv4 ones with
//     "-ipv6" after (ingress-gce pkg/utils/namer/l4_namer.go:22,159-161,
//     236-238), so the IPv4 parts keep upstream's names and a Service
//     switched from upstream keeps them untouched; one backend service and
//     health check for both (pkg/l4/resources/l4.go:694-705); a family the
//     Service dropped is removed in the same sync (ensureDualStackResources
//     deletes the other family's parts, l4.go:697-704); the status IPv4
//     first, then IPv6, whatever the order of spec.ipFamilies (l4.go:735,
//     l4ipv6.go:69).
//   - external (target pool): target pools are IPv4 only, and an IPv6
//     external rule needs a backend service (ingress-gce's L4 NetLB, not
//     made here): a dual-stack Service is served on IPv4, as upstream
//     serves it, so a switch keeps upstream's load balancer; an IPv6-only
//     one is refused.
//
// Where this differs from ingress-gce (docs/guides/gce.md, "Dual-stack
// Services"): a family's client firewall rule admits only that family's
// entries of loadBalancerSourceRanges, and none at all when the Service
// names ranges of the other family only (ingress-gce opens "0::0/0" then,
// pkg/l4/utils/sourceranges.go:35-51: a Service limited to some IPv4
// clients would be open to every IPv6 one); PreferDualStack is served
// IPv4-only where the subnetwork has no internal IPv6 range or the
// Service mixes TCP and UDP (ingress-gce fails the Service,
// l4ipv6.go:271-285); an IPv6 Service with both TCP and UDP ports is
// refused otherwise (ingress-gce makes one L3_DEFAULT rule, which this
// backend's IPv4 half does not use).

// Names of a Service's IPv6 parts. These MUST NOT change: a Service's
// IPv6 parts are found again by them.

// ipv6Suffix is ingress-gce's suffix of IPv6 parts (l4_namer.go:22).
const ipv6Suffix = "-ipv6"

// ipv6RuleName is the IPv6 forwarding rule beside the IPv4 rule v4Name;
// both use the backend service named v4Name.
func ipv6RuleName(v4Name string) string { return v4Name + ipv6Suffix }

// backendServiceOf is the backend service of the rule name, of either
// family: its IPv4 rule's name.
func backendServiceOf(rule string) string { return strings.TrimSuffix(rule, ipv6Suffix) }

// isIPv6RuleName says the rule name is an IPv6 rule's.
func isIPv6RuleName(name string) bool { return strings.HasSuffix(name, ipv6Suffix) }

// ipv6FirewallName admits IPv6 clients to the Service's ports:
// "k8s-fw-<base>-ipv6".
func ipv6FirewallName(base string) string { return firewallName(base) + ipv6Suffix }

// ipv6HealthCheckFirewallName admits the IPv6 health checkers to an
// internal load balancer's health check: "<check>-hc-ipv6", the shared
// one's "k8s-<cluster ID>-node-hc-ipv6".
func ipv6HealthCheckFirewallName(healthCheck string) string {
	return internalHealthCheckFirewallName(healthCheck) + ipv6Suffix
}

// ilbHealthCheckRangesIPv6 are where Google's health checkers probe an
// internal passthrough load balancer's IPv6 backends from (ingress-gce
// pkg/l4/healthchecks/healthchecksl4.go:51-52, L4ILBIPv6HCRange).
var ilbHealthCheckRangesIPv6 = []string{"2600:2d00:1:b029::/64"}

// readFamilies fills in the families the Service's load balancer serves
// and each family's client source ranges, refusing what it cannot serve.
func readFamilies(svc *v1.Service, sp *lbSpec) error {
	sp.v4, sp.v6 = svcopts.HasFamily(svc, v1.IPv4Protocol), svcopts.HasFamily(svc, v1.IPv6Protocol)
	if !sp.internal {
		if !sp.v4 {
			return fmt.Errorf("spec.ipFamilies is [IPv6]: an external GCE load balancer from this manager is a target pool, which takes IPv4 only; make the Service dual-stack (spec.ipFamilyPolicy: PreferDualStack or RequireDualStack) to be served on IPv4, or internal (%s: Internal) for an IPv6 address", annotationLBType)
		}
		// Served on IPv4, as upstream serves it.
		sp.v6 = false
	}
	sp.preferDual = sp.v4 && sp.v6 && svc.Spec.IPFamilyPolicy != nil && *svc.Spec.IPFamilyPolicy == v1.IPFamilyPolicyPreferDualStack
	if sp.v6 && len(sp.protocols) > 1 {
		if !sp.preferDual {
			return fmt.Errorf("the Service has TCP and UDP ports and spec.ipFamilies includes IPv6: an internal IPv6 forwarding rule carries one protocol and this manager shares no IPv6 address between two; use one protocol, or spec.ipFamilyPolicy: PreferDualStack to be served on IPv4 alone")
		}
		sp.v6 = false
	}
	if sp.staticIP != "" && !sp.v4 {
		return fmt.Errorf("spec.loadBalancerIP %s is IPv4 and spec.ipFamilies is [IPv6]: an IPv6 forwarding rule's address is Compute Engine's choice; remove spec.loadBalancerIP", sp.staticIP)
	}
	ranges, err := svcopts.SourceRanges(svc)
	if err != nil {
		return err
	}
	given := svcopts.SourceRangesGiven(svc)
	if !given {
		ranges = svcopts.AllClients(v1.IPv4Protocol, v1.IPv6Protocol)
	}
	for _, r := range ranges {
		if r.Addr().Is4() {
			sp.sources = append(sp.sources, r.String())
		} else {
			sp.sources6 = append(sp.sources6, r.String())
		}
	}
	return nil
}

// internalIPv6 says whether the internal Service gets its IPv6 half: the
// subnetwork must have an internal IPv6 range, as ingress-gce requires
// (serviceSubnetHasInternalIPv6Range, l4ipv6.go:271-285, with
// pkg/utils/utils.go SubnetHasIPv6Range); without one a PreferDualStack
// Service is served on IPv4 alone, anything else is refused naming the
// subnetwork. One read of the subnetwork, only for Services asking for
// IPv6.
func (l *loadBalancers) internalIPv6(ctx context.Context, svcKey string, sp *lbSpec) (bool, error) {
	if !sp.v6 {
		return false, nil
	}
	sn, err := l.api.subnetworks.Get(ctx, &computepb.GetSubnetworkRequest{Project: l.cfg.NetworkProjectID, Region: l.cfg.Region, Subnetwork: sp.subnet}, l.api.retry)
	if err != nil {
		return false, fmt.Errorf("get subnetwork %s: %w", sp.subnet, err)
	}
	st := sn.GetStackType()
	if (st == "IPV4_IPV6" || st == "IPV6_ONLY") && sn.GetIpv6AccessType() == "INTERNAL" {
		return true, nil
	}
	if sp.preferDual {
		klog.FromContext(ctx).Info("Subnetwork has no internal IPv6 range; the PreferDualStack Service is served on IPv4 alone", "service", svcKey, "subnetwork", sp.subnet)
		return false, nil
	}
	return false, fmt.Errorf("subnet %s does not have internal IPv6 ranges, required for an internal IPv6 Service (its stackType is %q, ipv6AccessType %q): name a dual-stack subnetwork with internal IPv6 in annotation %s, or make the Service IPv4 or PreferDualStack",
		sp.subnet, st, sn.GetIpv6AccessType(), annotationILBSubnet)
}

// ruleAddress is the address a forwarding rule serves: an IPv4 rule's
// as it is, an IPv6 rule's /96 (GCE shows the range, every group written
// out: ingress-gce cuts at the "/", l4ipv6.go:60-61) as its first address
// in its canonical form, as the Service's status takes it.
func ruleAddress(fr *computepb.ForwardingRule) string {
	ip := fr.GetIPAddress()
	if fr.GetIpVersion() != "IPV6" && !strings.Contains(ip, ":") {
		return ip
	}
	addr, _, _ := strings.Cut(ip, "/")
	if a, err := netip.ParseAddr(addr); err == nil {
		return a.String()
	}
	return addr
}

// lbStatus is the status of the Service's load balancer: the IPv4
// address first, then the IPv6 one (ingress-gce's order, l4.go:735 then
// l4ipv6.go:69), each at most once.
func lbStatus(v4, v6 string) *v1.LoadBalancerStatus {
	st := &v1.LoadBalancerStatus{}
	for _, ip := range []string{v4, v6} {
		if ip != "" {
			st.Ingress = append(st.Ingress, v1.LoadBalancerIngress{IP: ip})
		}
	}
	return st
}
