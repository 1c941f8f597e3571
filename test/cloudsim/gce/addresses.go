package gce

import (
	"net/http"
	"net/netip"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// Regional addresses: insert, get, list, aggregatedList and delete. An
// EXTERNAL address (the default) comes from Config.ExternalCIDR, an
// INTERNAL one from its subnetwork (required). An insert naming an
// address claims it: an external address an instance holds as its
// ephemeral one is promoted (the instance keeps it, the address resource
// owns it); an address someone else holds fails the operation with
// IP_IN_USE_BY_ANOTHER_RESOURCE, as on GCE. Without an address the next
// free one is taken.
//
// status and users are computed on every read from the references to the
// address: IN_USE with the users' links when any resource references it
// (an instance holding its IP, a forwarding rule), else RESERVED. An
// address an instance uses cannot be deleted
// (resourceInUseByAnotherResource); one a forwarding rule uses can, and
// the rule keeps the IP as an ephemeral one, which upstream's CCM relies
// on when it releases the address it reserved while it made the rule. An
// insert naming a forwarding rule's ephemeral IP promotes it, as it does
// an instance's.
//
// A kind whose resources use addresses (forwarding rules) claims the IP
// from its pool with the address as owner left in place, and lists the
// address (addressHolding) among its Refs.

func registerAddresses(t *kindTable) {
	t.add(&kind{
		Resource: "Addresses", Collection: "addresses", Scope: scopeRegional, Kind: "compute#address", Singular: "address",
		New:           func() proto.Message { return &computepb.Address{} },
		NewList:       func() proto.Message { return &computepb.AddressList{} },
		NewAggregated: func() proto.Message { return &computepb.AddressAggregatedList{} },
		Verbs:         verbsCRUD,
		Prepare:       prepareAddress,
		Removed:       removedAddress,
		View: func(e *Emulator, o *object, m proto.Message) {
			a := m.(*computepb.Address)
			a.Status, a.Users = proto.String("RESERVED"), nil
			for _, u := range e.users(o.path, false) {
				a.Users = append(a.Users, link(u))
			}
			if len(a.Users) > 0 {
				a.Status = proto.String("IN_USE")
			}
		},
		Refs: func(e *Emulator, o *object) []ref {
			return e.refTo(o.msg.(*computepb.Address).GetSubnetwork(), true)
		},
	})
}

func prepareAddress(e *Emulator, c *change) *apiError {
	a := c.Msg.(*computepb.Address)
	a.Status, a.Users = proto.String("RESERVED"), nil
	if v := a.GetIpVersion(); v != "" && v != "IPV4" {
		return errInvalid("resource.ipVersion", v, "cloudsim emulates IPV4 addresses only.")
	}
	pool := externalPool
	switch a.GetAddressType() {
	case "":
		a.AddressType = proto.String("EXTERNAL")
		fallthrough
	case "EXTERNAL":
		if a.Subnetwork != nil {
			return errInvalid("resource.subnetwork", a.GetSubnetwork(), "An EXTERNAL address cannot have a subnetwork.")
		}
		switch a.GetNetworkTier() {
		case "":
			a.NetworkTier = proto.String("PREMIUM")
		case "PREMIUM", "STANDARD":
		default:
			return errInvalid("resource.networkTier", a.GetNetworkTier(), "Must be PREMIUM or STANDARD.")
		}
	case "INTERNAL":
		l, aerr := e.requireRef("resource.subnetwork", a.GetSubnetwork(), "subnetworks")
		if aerr != nil {
			return aerr
		}
		if p, _ := parsePath(strings.TrimPrefix(l, LinkBase)); p.Location != c.Obj.location {
			return errInvalid("resource.subnetwork", a.GetSubnetwork(), "The subnetwork must be in the address's region.")
		}
		a.Subnetwork = proto.String(l)
		pool = strings.TrimPrefix(l, LinkBase)
		if a.Purpose == nil {
			a.Purpose = proto.String("GCE_ENDPOINT")
		}
		if a.NetworkTier != nil {
			return errInvalid("resource.networkTier", a.GetNetworkTier(), "An INTERNAL address has no network tier.")
		}
	default:
		return errInvalid("resource.addressType", a.GetAddressType(), "Must be EXTERNAL or INTERNAL.")
	}
	if aerr := checkLabels(c); aerr != nil {
		return aerr
	}
	p := e.ips.pool(pool)
	if p == nil {
		return errInvalid("resource.subnetwork", a.GetSubnetwork(), "cloudsim has no address pool for it.")
	}
	if a.Address == nil {
		ip, ok := p.allocate(c.Obj.path)
		if !ok {
			return &apiError{Status: http.StatusBadRequest, Reason: "ipSpaceExhausted", async: true, opCode: "IP_SPACE_EXHAUSTED",
				Message: "IP space of '" + pool + "' is exhausted."}
		}
		a.Address = proto.String(ip.String())
		return nil
	}
	ip, err := netip.ParseAddr(a.GetAddress())
	if err != nil || !ip.Is4() {
		return errInvalid("resource.address", a.GetAddress(), "Must be an IPv4 address.")
	}
	a.Address = proto.String(ip.String())
	holder, ok := p.claim(ip, c.Obj.path)
	switch {
	case ok:
	case holder == "":
		return errInvalid("resource.address", a.GetAddress(), "The address is outside the range addresses of this type are reserved from.")
	case pool == externalPool && isInstancePath(holder), isForwardingRulePath(holder):
		// Promoting an instance's ephemeral external address, or a
		// forwarding rule's ephemeral address.
		e.ips.transfer(ip.String(), holder, c.Obj.path)
	default:
		return errIPInUse(ip.String())
	}
	return nil
}

func isInstancePath(p string) bool { return strings.Contains(p, "/instances/") }

// removedAddress releases the address, or hands it to the instance or
// the forwarding rule still using it.
func removedAddress(e *Emulator, o *object) {
	ip := o.msg.(*computepb.Address).GetAddress()
	if e.ips.owner(ip) != o.path {
		return
	}
	for _, inst := range e.kinds.get(scopeZonal, "instances").store.All() {
		if externalIP(inst.msg.(*computepb.Instance)) == ip {
			e.ips.transfer(ip, o.path, inst.path)
			return
		}
	}
	if rules := e.rulesUsing(ip, ""); len(rules) > 0 {
		e.ips.transfer(ip, o.path, rules[0].path)
		return
	}
	e.ips.release(ip, o.path)
}

// addressHolding is the address resource that owns ip, if one does: what
// a resource using a reserved IP lists among its Refs.
func (e *Emulator) addressHolding(ip string) *object {
	owner := e.ips.owner(ip)
	if owner == "" || isInstancePath(owner) {
		return nil
	}
	p, err := parsePath(owner)
	if err != nil {
		return nil
	}
	k := e.kinds.get(p.Scope, p.Collection)
	if k == nil || k.Collection != "addresses" {
		return nil
	}
	o, _ := k.store.Get(owner)
	return o
}
