package gce

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// Regional forwarding rules of passthrough load balancers: insert, get,
// list, aggregatedList, delete and setTarget. Two shapes are emulated,
// the two a CCM makes:
//
//   - EXTERNAL (the default scheme): target is a target pool, portRange
//     ("80" is kept as "80-80"; none: every port) is the only port field,
//     networkTier PREMIUM (default) or STANDARD.
//   - INTERNAL: backendService is a regional backend service of the
//     INTERNAL scheme and the rule's protocol, subnetwork is required
//     (the fixture's network is in custom mode) and network follows it,
//     ports (at most 5 single ports) or allPorts is required, portRange
//     is refused, allowGlobalAccess is allowed.
//
// These are the product limits GCE documents for portRange, ports and
// allPorts. IPProtocol is TCP (default), UDP or SCTP, which take ports,
// or ICMP, ESP or AH, which take none.
//
// The IP address (forwardingrules_ip.go) is a literal, or an address
// resource's URL (kept as the literal it reserves), or left out for an
// ephemeral one. The address a rule uses shows IN_USE with the rule among
// its users, but may still be deleted: the rule keeps the IP, which is
// what upstream's CCM does to release the address it reserved while the
// rule was made. Target pools and backend services cannot be deleted
// while a rule uses them (resourceInUseByAnotherResource).

func registerForwardingRules(t *kindTable) {
	t.add(&kind{
		Resource: "ForwardingRules", Collection: "forwardingRules", Scope: scopeRegional, Kind: "compute#forwardingRule",
		Singular:      "forwarding_rule",
		New:           func() proto.Message { return &computepb.ForwardingRule{} },
		NewList:       func() proto.Message { return &computepb.ForwardingRuleList{} },
		NewAggregated: func() proto.Message { return &computepb.ForwardingRuleAggregatedList{} },
		Verbs:         verbsCRUD,
		Prepare:       prepareForwardingRule,
		Removed:       removedForwardingRule,
		Refs:          forwardingRuleRefs,
		Actions: map[string]actionFunc{
			"setTarget": customAction("setTarget", newMsg[computepb.TargetReference], planSetTarget),
		},
	})
}

// Load balancing schemes and protocols emulated.
const (
	schemeExternal = "EXTERNAL"
	schemeInternal = "INTERNAL"
)

// ruleProtocols maps each protocol a passthrough rule takes to whether it
// has ports.
var ruleProtocols = map[string]bool{"TCP": true, "UDP": true, "SCTP": true, "ICMP": false, "ESP": false, "AH": false}

// maxRulePorts is how many ports an INTERNAL rule may list.
const maxRulePorts = 5

func prepareForwardingRule(e *Emulator, c *change) *apiError {
	fr := c.Msg.(*computepb.ForwardingRule)
	switch s := fr.GetLoadBalancingScheme(); s {
	case "":
		fr.LoadBalancingScheme = proto.String(schemeExternal)
	case schemeExternal, schemeInternal:
	default:
		return errInvalid("resource.loadBalancingScheme", s, "cloudsim emulates the EXTERNAL and INTERNAL passthrough schemes only.")
	}
	if fr.IPProtocol == nil {
		fr.IPProtocol = proto.String("TCP")
	}
	if _, ok := ruleProtocols[fr.GetIPProtocol()]; !ok {
		return errInvalid("resource.IPProtocol", fr.GetIPProtocol(), "Must be TCP, UDP, SCTP, ICMP, ESP or AH.")
	}
	switch v := fr.GetIpVersion(); v {
	case "", "IPV4":
	case "IPV6":
		if aerr := checkRulePorts(fr); aerr != nil {
			return aerr
		}
		return e.prepareIPv6Rule(c, fr)
	default:
		return errInvalid("resource.ipVersion", v, "Must be IPV4 or IPV6.")
	}
	if aerr := checkRulePorts(fr); aerr != nil {
		return aerr
	}
	var aerr *apiError
	if fr.GetLoadBalancingScheme() == schemeExternal {
		aerr = e.prepareExternalRule(fr)
	} else {
		aerr = e.prepareInternalRule(c.Obj, fr)
	}
	if aerr != nil {
		return aerr
	}
	if aerr := checkLabels(c); aerr != nil {
		return aerr
	}
	fr.Fingerprint = proto.String(fingerprint(c.Obj.path + "/" + strconv.FormatUint(fr.GetId(), 10)))
	return e.claimRuleIP(c.Obj, fr)
}

func (e *Emulator) prepareExternalRule(fr *computepb.ForwardingRule) *apiError {
	switch {
	case fr.BackendService != nil:
		return errInvalid("resource.backendService", fr.GetBackendService(), "cloudsim emulates target pool EXTERNAL rules only.")
	case fr.Network != nil || fr.Subnetwork != nil:
		return errInvalid("resource.network", fr.GetNetwork()+fr.GetSubnetwork(), "An EXTERNAL forwarding rule has no network or subnetwork.")
	case fr.GetAllowGlobalAccess():
		return errInvalid("resource.allowGlobalAccess", "true", "Global access is for INTERNAL forwarding rules only.")
	}
	l, aerr := e.requireRef("resource.target", fr.GetTarget(), "targetPools")
	if aerr != nil {
		return aerr
	}
	fr.Target = proto.String(l)
	switch t := fr.GetNetworkTier(); t {
	case "":
		fr.NetworkTier = proto.String("PREMIUM")
	case "PREMIUM", "STANDARD":
	default:
		return errInvalid("resource.networkTier", t, "Must be PREMIUM or STANDARD.")
	}
	return nil
}

func (e *Emulator) prepareInternalRule(o *object, fr *computepb.ForwardingRule) *apiError {
	if fr.Target != nil {
		return errInvalid("resource.target", fr.GetTarget(), "An INTERNAL forwarding rule has a backendService, not a target.")
	}
	if t := fr.GetNetworkTier(); t != "" && t != "PREMIUM" {
		return errInvalid("resource.networkTier", t, "An INTERNAL forwarding rule is PREMIUM.")
	}
	fr.NetworkTier = proto.String("PREMIUM")
	subnet, aerr := e.requireRef("resource.subnetwork", fr.GetSubnetwork(), "subnetworks")
	if aerr != nil {
		return aerr
	}
	sn := e.lookup(subnet)
	if sn.location != o.location {
		return errInvalid("resource.subnetwork", fr.GetSubnetwork(), "The subnetwork must be in the forwarding rule's region.")
	}
	fr.Subnetwork = proto.String(subnet)
	network := sn.msg.(*computepb.Subnetwork).GetNetwork()
	if fr.Network != nil {
		l, aerr := e.requireRef("resource.network", fr.GetNetwork(), "networks")
		if aerr != nil {
			return aerr
		}
		if l != network {
			return errInvalid("resource.network", fr.GetNetwork(), "The subnetwork is not in this network.")
		}
	}
	fr.Network = proto.String(network)
	l, aerr := e.requireRef("resource.backendService", fr.GetBackendService(), "backendServices")
	if aerr != nil {
		return aerr
	}
	fr.BackendService = proto.String(l)
	bs := e.lookup(l)
	if s := getString(bs.msg, "loadBalancingScheme"); s != schemeInternal {
		return errInvalid("resource.backendService", l, "The backend service's loadBalancingScheme is "+s+", not INTERNAL.")
	}
	// A rule forwards to a backend service of its own protocol, which is
	// why upstream's CCM deletes the rule before changing the protocol.
	if p := getString(bs.msg, "protocol"); p != fr.GetIPProtocol() {
		return errInvalid("resource.IPProtocol", fr.GetIPProtocol(), "The backend service's protocol is "+p+".")
	}
	return nil
}

// checkRulePorts checks portRange, ports and allPorts against the
// protocol and scheme, and normalises portRange to "lo-hi".
func checkRulePorts(fr *computepb.ForwardingRule) *apiError {
	set := 0
	for _, b := range []bool{fr.PortRange != nil, len(fr.Ports) > 0, fr.GetAllPorts()} {
		if b {
			set++
		}
	}
	if set > 1 {
		return errInvalid("resource.ports", strings.Join(fr.GetPorts(), ","), "Only one of portRange, ports and allPorts may be specified.")
	}
	if set > 0 && !ruleProtocols[fr.GetIPProtocol()] {
		return errInvalid("resource.IPProtocol", fr.GetIPProtocol(), "Ports may only be specified for TCP, UDP or SCTP.")
	}
	internal := fr.GetLoadBalancingScheme() == schemeInternal
	switch {
	case fr.PortRange != nil && internal:
		return errInvalid("resource.portRange", fr.GetPortRange(), "An INTERNAL passthrough forwarding rule takes ports or allPorts.")
	case (len(fr.Ports) > 0 || fr.GetAllPorts()) && !internal:
		return errInvalid("resource.ports", strings.Join(fr.GetPorts(), ","), "A target pool forwarding rule takes portRange.")
	case set == 0 && internal && ruleProtocols[fr.GetIPProtocol()]:
		return errRequired("resource.ports")
	case len(fr.Ports) > maxRulePorts:
		return errInvalid("resource.ports", strings.Join(fr.Ports, ","), fmt.Sprintf("At most %d ports may be specified; use allPorts for more.", maxRulePorts))
	}
	for i, p := range fr.Ports {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 || slices.Contains(fr.Ports[:i], p) {
			return errInvalid(fmt.Sprintf("resource.ports[%d]", i), p, "Must be a port between 1 and 65535, listed once.")
		}
	}
	if fr.PortRange != nil {
		lo, hi, isRange := strings.Cut(fr.GetPortRange(), "-")
		if !isRange {
			hi = lo
		}
		l, errL := strconv.Atoi(lo)
		h, errH := strconv.Atoi(hi)
		if errL != nil || errH != nil || l < 1 || h > 65535 || h < l {
			return errInvalid("resource.portRange", fr.GetPortRange(), "Must be a port or a range of ports such as 8000-9000.")
		}
		fr.PortRange = proto.String(fmt.Sprintf("%d-%d", l, h))
	}
	return nil
}

func forwardingRuleRefs(e *Emulator, o *object) []ref {
	fr := o.msg.(*computepb.ForwardingRule)
	var out []ref
	// Non-blocking: the address may go, the rule keeps its IP.
	if a := e.addressHolding(fr.GetIPAddress()); a != nil {
		out = append(out, ref{Path: a.path})
	}
	for _, l := range []string{fr.GetTarget(), fr.GetBackendService(), fr.GetNetwork(), fr.GetSubnetwork()} {
		out = append(out, e.refTo(l, true)...)
	}
	return out
}

func planSetTarget(e *Emulator, o *object, req *computepb.TargetReference) (func(), *apiError) {
	fr, apply := editCopy[*computepb.ForwardingRule](o)
	if fr.GetLoadBalancingScheme() != schemeExternal {
		return nil, errInvalid("resource.target", req.GetTarget(), "An INTERNAL forwarding rule has a backendService, not a target.")
	}
	l, aerr := e.requireRef("resource.target", req.GetTarget(), "targetPools")
	if aerr != nil {
		return nil, aerr
	}
	fr.Target = proto.String(l)
	return apply, nil
}

// errIPConflict refuses a rule whose IP, protocol and ports overlap
// another rule's, in GCE's words.
func errIPConflict(ip string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Reason: "invalid",
		Message: fmt.Sprintf("Invalid value for field 'resource.IPAddress': '%s'. Specified IP address is in-use and would result in a conflict.", ip)}
}
