package gce

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// Global firewall rules: insert, get, list, delete, patch (JSON merge
// patch: the fields sent replace the stored ones) and update (the whole
// rule replaced). What GCE checks and fills in is kept: the network must
// exist (default: the project's "default" network, which the fixture does
// not have), exactly one of allowed and denied, protocols and port
// ranges, CIDRs, direction INGRESS or EGRESS with its default ranges
// (0.0.0.0/0 as the source of an ingress rule with no source, as the
// destination of an egress rule), priority 1000, disabled false.

func registerFirewalls(t *kindTable) {
	t.add(&kind{
		Resource: "Firewalls", Collection: "firewalls", Scope: scopeGlobal, Kind: "compute#firewall", Singular: "firewall",
		New:     func() proto.Message { return &computepb.Firewall{} },
		NewList: func() proto.Message { return &computepb.FirewallList{} },
		Verbs:   verbsCRUD | verbPatch | verbUpdate,
		Prepare: prepareFirewall,
		Refs: func(e *Emulator, o *object) []ref {
			return e.refTo(o.msg.(*computepb.Firewall).GetNetwork(), true)
		},
	})
}

// protocols are the names GCE accepts besides protocol numbers; ports
// only go with those that have them.
var protocols = map[string]bool{"tcp": true, "udp": true, "sctp": true, "icmp": false, "esp": false, "ah": false, "ipip": false, "all": false}

func prepareFirewall(e *Emulator, c *change) *apiError {
	fw := c.Msg.(*computepb.Firewall)
	if fw.GetNetwork() == "" {
		fw.Network = proto.String("global/networks/default")
	}
	netLink, aerr := e.requireRef("resource.network", fw.GetNetwork(), "networks")
	if aerr != nil {
		return aerr
	}
	if c.Old != nil && netLink != c.Old.(*computepb.Firewall).GetNetwork() {
		return errInvalid("resource.network", fw.GetNetwork(), "The network of a firewall cannot be changed.")
	}
	fw.Network = proto.String(netLink)
	switch fw.GetDirection() {
	case "":
		fw.Direction = proto.String("INGRESS")
	case "INGRESS", "EGRESS":
	default:
		return errInvalid("resource.direction", fw.GetDirection(), "Must be INGRESS or EGRESS.")
	}
	if fw.Priority == nil {
		fw.Priority = proto.Int32(1000)
	} else if p := fw.GetPriority(); p < 0 || p > 65535 {
		return errInvalid("resource.priority", fmt.Sprint(p), "Must be between 0 and 65535.")
	}
	if (len(fw.GetAllowed()) == 0) == (len(fw.GetDenied()) == 0) {
		return errInvalid("resource", c.Obj.name, "Exactly one of allowed and denied must be specified.")
	}
	for i, a := range fw.GetAllowed() {
		if aerr := checkRule(fmt.Sprintf("resource.allowed[%d]", i), a.IPProtocol, a.GetPorts()); aerr != nil {
			return aerr
		}
	}
	for i, d := range fw.GetDenied() {
		if aerr := checkRule(fmt.Sprintf("resource.denied[%d]", i), d.IPProtocol, d.GetPorts()); aerr != nil {
			return aerr
		}
	}
	for field, ranges := range map[string][]string{"resource.sourceRanges": fw.GetSourceRanges(), "resource.destinationRanges": fw.GetDestinationRanges()} {
		for i, r := range ranges {
			if !validRange(r) {
				return errInvalid(fmt.Sprintf("%s[%d]", field, i), r, "Must be an IP address or a CIDR range.")
			}
		}
	}
	for field, tags := range map[string][]string{"resource.sourceTags": fw.GetSourceTags(), "resource.targetTags": fw.GetTargetTags()} {
		for i, tag := range tags {
			if !nameRE.MatchString(tag) {
				return errInvalid(fmt.Sprintf("%s[%d]", field, i), tag, "Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'")
			}
		}
	}
	if len(fw.GetTargetTags()) > 0 && len(fw.GetTargetServiceAccounts()) > 0 {
		return errInvalid("resource.targetTags", strings.Join(fw.GetTargetTags(), ","), "Target tags and target service accounts cannot both be specified.")
	}
	if fw.GetDirection() == "INGRESS" {
		if len(fw.GetSourceRanges()) == 0 && len(fw.GetSourceTags()) == 0 && len(fw.GetSourceServiceAccounts()) == 0 {
			fw.SourceRanges = []string{"0.0.0.0/0"}
		}
	} else {
		if len(fw.GetSourceTags()) > 0 {
			return errInvalid("resource.sourceTags", strings.Join(fw.GetSourceTags(), ","), "Source tags cannot be specified for an EGRESS firewall.")
		}
		if len(fw.GetDestinationRanges()) == 0 {
			fw.DestinationRanges = []string{"0.0.0.0/0"}
		}
	}
	if fw.Disabled == nil {
		fw.Disabled = proto.Bool(false)
	}
	if fw.LogConfig == nil {
		fw.LogConfig = &computepb.FirewallLogConfig{Enable: proto.Bool(false)}
	}
	return nil
}

// checkRule checks one allowed or denied entry.
func checkRule(field string, protocol *string, ports []string) *apiError {
	if protocol == nil {
		return errRequired(field + ".IPProtocol")
	}
	p := strings.ToLower(*protocol)
	hasPorts, named := protocols[p]
	if !named {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 255 {
			return errInvalid(field+".IPProtocol", *protocol, "Must be a protocol name or number.")
		}
		hasPorts = n == 6 || n == 17 || n == 132
	}
	if len(ports) > 0 && !hasPorts {
		return errInvalid(field+".ports", strings.Join(ports, ","), "Ports may only be specified for tcp, udp or sctp.")
	}
	for i, port := range ports {
		lo, hi, isRange := strings.Cut(port, "-")
		if !validPort(lo) || isRange && (!validPort(hi) || atoi(hi) < atoi(lo)) {
			return errInvalid(fmt.Sprintf("%s.ports[%d]", field, i), port, "Must be a port or a range of ports such as 8000-9000.")
		}
	}
	return nil
}

func validPort(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 0 && n <= 65535
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// validRange accepts a CIDR or a single address, as GCE does.
func validRange(s string) bool {
	if _, err := netip.ParsePrefix(s); err == nil {
		return true
	}
	_, err := netip.ParseAddr(s)
	return err == nil
}
