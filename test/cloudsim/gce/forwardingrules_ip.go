package gce

import (
	"net/netip"
	"strconv"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// A forwarding rule's IP address. An EXTERNAL rule's comes from the
// external pool, an INTERNAL rule's from its subnetwork. Without one the
// rule gets an ephemeral IP, which it owns (ipam.go) until it is deleted
// or an address resource promotes it. With one:
//
//   - an external IP must be reserved by an address of the rule's tier;
//     an internal one may be a free IP of the subnetwork, which the rule
//     then owns as an ephemeral one;
//   - an IP owned by an instance, or by another rule, is in use: the
//     operation fails with IP_IN_USE_BY_ANOTHER_RESOURCE;
//   - several rules may share the IP of an address (any external one; an
//     internal one only with purpose SHARED_LOADBALANCER_VIP, else
//     IP_IN_USE_BY_ANOTHER_RESOURCE as GCE answers), provided no two have
//     the same protocol and overlapping ports: that is refused at once
//     with GCE's "Specified IP address is in-use and would result in a
//     conflict."

// claimRuleIP resolves, checks and claims fr's IP for rule o.
func (e *Emulator) claimRuleIP(o *object, fr *computepb.ForwardingRule) *apiError {
	poolName := externalPool
	if fr.GetLoadBalancingScheme() == schemeInternal {
		poolName, _ = e.refPath(fr.GetSubnetwork())
	}
	pool := e.ips.pool(poolName)
	if pool == nil {
		return errInvalid("resource.subnetwork", fr.GetSubnetwork(), "cloudsim has no address pool for it.")
	}
	if fr.GetIPAddress() == "" {
		ip, ok := pool.allocate(o.path)
		if !ok {
			return &apiError{Status: 400, Reason: "ipSpaceExhausted", async: true, opCode: "IP_SPACE_EXHAUSTED",
				Message: "IP space of '" + poolName + "' is exhausted."}
		}
		fr.IPAddress = proto.String(ip.String())
		return nil
	}
	ip, aerr := e.ruleIPLiteral(fr)
	if aerr != nil {
		return aerr
	}
	fr.IPAddress = proto.String(ip.String())
	holder, ok := pool.claim(ip, o.path)
	switch {
	case ok && fr.GetLoadBalancingScheme() == schemeExternal:
		// Claimed a free external IP, which only an address reserves.
		e.ips.release(ip.String(), o.path)
		return errInvalid("resource.IPAddress", ip.String(), "An external IP address must be reserved by an address resource first.")
	case ok:
		return nil
	case holder == "":
		return errInvalid("resource.IPAddress", ip.String(), "The IP address is outside the range of "+poolName+".")
	}
	addr := e.addressHolding(ip.String())
	if addr == nil || e.heldByInstance(ip.String()) {
		return errIPInUse(ip.String())
	}
	a := addr.msg.(*computepb.Address)
	if fr.GetLoadBalancingScheme() == schemeExternal && a.GetNetworkTier() != fr.GetNetworkTier() {
		return errInvalid("resource.networkTier", fr.GetNetworkTier(),
			"The network tier of the forwarding rule must match its IP address's, "+a.GetNetworkTier()+".")
	}
	others := e.rulesUsing(ip.String(), o.path)
	if len(others) == 0 {
		return nil
	}
	if fr.GetLoadBalancingScheme() == schemeInternal && a.GetPurpose() != "SHARED_LOADBALANCER_VIP" {
		return errIPInUse(ip.String())
	}
	for _, other := range others {
		if rulesOverlap(fr, other.msg.(*computepb.ForwardingRule)) {
			return errIPConflict(ip.String())
		}
	}
	return nil
}

// ruleIPLiteral is the IP a rule names: a literal, or the one an address
// resource (by URL) reserves, which must be of the rule's type.
func (e *Emulator) ruleIPLiteral(fr *computepb.ForwardingRule) (netip.Addr, *apiError) {
	v := fr.GetIPAddress()
	if !strings.Contains(v, "/") {
		ip, err := netip.ParseAddr(v)
		if err != nil || !ip.Is4() {
			return netip.Addr{}, errInvalid("resource.IPAddress", v, "Must be an IPv4 address or the URL of an address.")
		}
		return ip, nil
	}
	l, aerr := e.requireRef("resource.IPAddress", v, "addresses")
	if aerr != nil {
		return netip.Addr{}, aerr
	}
	a := e.lookup(l).msg.(*computepb.Address)
	want := "EXTERNAL"
	if fr.GetLoadBalancingScheme() == schemeInternal {
		want = "INTERNAL"
	}
	if a.GetAddressType() != want {
		return netip.Addr{}, errInvalid("resource.IPAddress", v, "The address is "+a.GetAddressType()+"; this rule needs an "+want+" one.")
	}
	ip, _ := netip.ParseAddr(a.GetAddress())
	return ip, nil
}

// heldByInstance reports whether an instance uses ip (its own, or a
// static one an address owns).
func (e *Emulator) heldByInstance(ip string) bool {
	for _, inst := range e.kinds.get(scopeZonal, "instances").store.All() {
		for _, held := range instanceIPs(inst) {
			if held == ip {
				return true
			}
		}
	}
	return false
}

// rulesUsing are the forwarding rules (pending inserts included) using ip,
// but the one at except.
func (e *Emulator) rulesUsing(ip, except string) []*object {
	var out []*object
	for _, o := range e.kinds.get(scopeRegional, "forwardingRules").store.All() {
		if o.path != except && o.msg.(*computepb.ForwardingRule).GetIPAddress() == ip {
			out = append(out, o)
		}
	}
	return out
}

func isForwardingRulePath(p string) bool { return strings.Contains(p, "/forwardingRules/") }

// removedForwardingRule lets go of an IP the rule owned, or hands it to
// another rule still using it (which got it when its address went).
func removedForwardingRule(e *Emulator, o *object) {
	if isIPv6Rule(o.msg.(*computepb.ForwardingRule)) {
		// Its /96, which no other rule shares.
		e.ips.releaseOwner(o.path)
		return
	}
	ip := o.msg.(*computepb.ForwardingRule).GetIPAddress()
	if e.ips.owner(ip) != o.path {
		return
	}
	if others := e.rulesUsing(ip, o.path); len(others) > 0 {
		e.ips.transfer(ip, o.path, others[0].path)
		return
	}
	e.ips.release(ip, o.path)
}

// portSpan is an inclusive range of ports.
type portSpan struct{ lo, hi int }

// ruleSpans are the ports a rule forwards: all of them for allPorts, no
// port field, or a protocol without ports.
func ruleSpans(fr *computepb.ForwardingRule) []portSpan {
	if len(fr.GetPorts()) > 0 {
		var out []portSpan
		for _, p := range fr.GetPorts() {
			n, _ := strconv.Atoi(p)
			out = append(out, portSpan{n, n})
		}
		return out
	}
	if lo, hi, ok := strings.Cut(fr.GetPortRange(), "-"); ok {
		l, _ := strconv.Atoi(lo)
		h, _ := strconv.Atoi(hi)
		return []portSpan{{l, h}}
	}
	return []portSpan{{1, 65535}}
}

// rulesOverlap reports whether two rules on one IP would take the same
// packets: the same protocol and a port in common.
func rulesOverlap(a, b *computepb.ForwardingRule) bool {
	if a.GetIPProtocol() != b.GetIPProtocol() {
		return false
	}
	for _, x := range ruleSpans(a) {
		for _, y := range ruleSpans(b) {
			if x.lo <= y.hi && y.lo <= x.hi {
				return true
			}
		}
	}
	return false
}
