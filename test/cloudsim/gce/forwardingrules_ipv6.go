package gce

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// IPv6 forwarding rules (ipVersion IPV6), as the compute API reference
// (google.golang.org/api compute/v1 compute-gen.go, ForwardingRule) and
// GKE's L4 controllers (kubernetes/ingress-gce, which make them) describe
// them:
//
//   - INTERNAL: the rule's subnetwork must have an internal IPv6 range
//     (stackType IPV4_IPV6 or IPV6_ONLY, ipv6AccessType INTERNAL; ingress-gce
//     pkg/utils/utils.go SubnetHasIPv6Range checks the same before it
//     asks). The rule gets a /96 of the subnetwork's /64, from the same
//     blocks the interfaces' /96s come from, or the one it names: a bare
//     address or the /96 (ingress-gce passes the address its earlier rule
//     had, pkg/l4/address/to_use.go:67-80).
//   - EXTERNAL: a subnetwork with an external IPv6 range is required ("a
//     subnetwork must be specified ... when creating external forwarding
//     rule with IPv6", compute-gen.go ForwardingRule.Subnetwork), an
//     address must be given as a /96 (ingress-gce
//     pkg/l4/resources/forwarding_rules_ipv6.go:323-329: "or API will return
//     error"), STANDARD tier is refused (:221-225), and a target pool is
//     refused: target pools are IPv4 only. The emulator makes no EXTERNAL
//     backend-service rules, so every EXTERNAL IPv6 rule ends in a
//     refusal; these come first, each in its own words.
//
// GCE shows an IPv6 rule's IPAddress as its /96 with every group written
// out ("fd20:1:2:3:4:0:0:0/96"), which is why ingress-gce cuts at the "/"
// (pkg/l4/resources/l4ipv6.go:60-61, l4netlbipv6.go:66) and canonicalises
// the rest (pkg/l4/controllers/standalonenegcontroller.go:506-510); the
// written-out groups are the form its tests give GCE's answers
// (pkg/l4/address/manager_test.go:358-394). [unverified] against a live
// project; so are the refusals' messages, each kept to GCE's 400 invalid
// (or required) shape.

// ipv6RulePrefixLength is the size of an IPv6 forwarding rule's range.
const ipv6RulePrefixLength = 96

// prepareIPv6Rule checks an IPV6 rule and claims its /96.
func (e *Emulator) prepareIPv6Rule(c *change, fr *computepb.ForwardingRule) *apiError {
	if fr.GetLoadBalancingScheme() == schemeExternal {
		return e.prepareExternalIPv6Rule(fr)
	}
	if aerr := e.prepareInternalRule(c.Obj, fr); aerr != nil {
		return aerr
	}
	subnetPath, sn, _ := e.subnetwork(fr.GetSubnetwork())
	if !hasIPv6Range(sn, IPv6Internal) {
		return errInvalid("resource.subnetwork", fr.GetSubnetwork(),
			"The subnetwork has no internal IPv6 range: an INTERNAL IPv6 forwarding rule needs stackType IPV4_IPV6 or IPV6_ONLY with ipv6AccessType INTERNAL.")
	}
	if aerr := checkLabels(c); aerr != nil {
		return aerr
	}
	fr.Fingerprint = proto.String(fingerprint(c.Obj.path + "/" + strconv.FormatUint(fr.GetId(), 10)))
	return e.claimRuleIPv6(c.Obj, subnetPath, fr)
}

// hasIPv6Range says the subnetwork has an IPv6 range of the access type.
func hasIPv6Range(sn *computepb.Subnetwork, access string) bool {
	st := sn.GetStackType()
	return (st == StackDual || st == StackIPv6Only) && sn.GetIpv6AccessType() == access
}

// prepareExternalIPv6Rule refuses an EXTERNAL IPv6 rule, naming the first
// thing GCE would refuse in it.
func (e *Emulator) prepareExternalIPv6Rule(fr *computepb.ForwardingRule) *apiError {
	if fr.GetNetworkTier() == tierStandardName {
		return errInvalid("resource.networkTier", fr.GetNetworkTier(), "IPv6 forwarding rules are in the PREMIUM network tier only.")
	}
	if fr.GetSubnetwork() == "" {
		return errRequired("resource.subnetwork")
	}
	l, aerr := e.requireRef("resource.subnetwork", fr.GetSubnetwork(), "subnetworks")
	if aerr != nil {
		return aerr
	}
	if _, sn, _ := e.subnetwork(l); !hasIPv6Range(sn, IPv6External) {
		return errInvalid("resource.subnetwork", fr.GetSubnetwork(),
			"The subnetwork has no external IPv6 range: an EXTERNAL IPv6 forwarding rule needs ipv6AccessType EXTERNAL.")
	}
	if v := fr.GetIPAddress(); v != "" && !strings.HasSuffix(v, "/96") {
		return errInvalid("resource.IPAddress", v, "An external IPv6 address must be given as its /96 range, such as 2600:1900:4000:1:0:0:0:0/96.")
	}
	if fr.Target != nil {
		return errInvalid("resource.target", fr.GetTarget(), "A target pool takes IPv4 forwarding rules only; an IPv6 forwarding rule needs a backendService.")
	}
	return errInvalid("resource.backendService", fr.GetBackendService(), "cloudsim emulates no EXTERNAL backend service rules.")
}

// tierStandardName is the STANDARD network tier.
const tierStandardName = "STANDARD"

// claimRuleIPv6 gives the INTERNAL rule o its /96 of the subnetwork's
// internal IPv6 range: the one it names, if free, else the lowest free.
// Rules never share one (GCE's SHARED_LOADBALANCER_VIP sharing is of IPv4
// addresses; [unverified] for IPv6).
func (e *Emulator) claimRuleIPv6(o *object, subnetPath string, fr *computepb.ForwardingRule) *apiError {
	r := e.ips.blocks(ipv6RangeKey(subnetPath))
	if r == nil {
		return errInvalid("resource.subnetwork", fr.GetSubnetwork(), "cloudsim has no IPv6 range for it.")
	}
	var p netip.Prefix
	if v := fr.GetIPAddress(); v != "" {
		a, aerr := ruleIPv6Literal(v)
		if aerr != nil {
			return aerr
		}
		p = netip.PrefixFrom(a, ipv6RulePrefixLength)
		if !r.prefix.Contains(a) || p.Masked().Addr() != a {
			return errInvalid("resource.IPAddress", v, fmt.Sprintf("Must be the first address of a /96 in the subnetwork's IPv6 range %s.", r.prefix))
		}
		if r.held[p] != o.path && slices.ContainsFunc(r.taken(), prefixSpan(p).overlaps) {
			return errIPInUse(v)
		}
	} else {
		var ok bool
		if p, ok = lowestFree(r.prefix, r.taken(), ipv6RulePrefixLength); !ok {
			return errIPSpaceExhausted(subnetPath, r.prefix)
		}
	}
	r.held[p] = o.path
	fr.IPAddress = proto.String(ipv6RuleAddress(p))
	return nil
}

// ruleIPv6Literal reads the IPv6 address a rule names: an address or its
// /96. Address resources of IPv6 are not emulated.
func ruleIPv6Literal(v string) (netip.Addr, *apiError) {
	s := v
	if addr, bits, ok := strings.Cut(v, "/"); ok {
		if bits != strconv.Itoa(ipv6RulePrefixLength) {
			return netip.Addr{}, errInvalid("resource.IPAddress", v, "Must be an IPv6 address or its /96 range; cloudsim emulates no IPv6 address resources.")
		}
		s = addr
	}
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is6() || a.Is4In6() {
		return netip.Addr{}, errInvalid("resource.IPAddress", v, "Must be an IPv6 address or its /96 range.")
	}
	return a, nil
}

// ipv6RuleAddress is a rule's /96 as GCE shows it: every group written
// out, without leading zeros, and the length.
func ipv6RuleAddress(p netip.Prefix) string {
	b := p.Addr().As16()
	groups := make([]string, 8)
	for i := range groups {
		groups[i] = strconv.FormatUint(uint64(b[2*i])<<8|uint64(b[2*i+1]), 16)
	}
	return strings.Join(groups, ":") + "/" + strconv.Itoa(p.Bits())
}

// isIPv6Rule says the rule is an IPv6 one.
func isIPv6Rule(fr *computepb.ForwardingRule) bool { return fr.GetIpVersion() == "IPV6" }
