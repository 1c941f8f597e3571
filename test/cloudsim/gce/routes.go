package gce

import (
	"fmt"
	"net/netip"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// Global routes: insert, get, list (with filters: a route controller
// lists "<cluster>-.*" names) and delete; routes cannot be changed. A
// destination is an IPv4 or an IPv6 CIDR, an IPv6 one kept compressed
// (RFC 5952); a malformed one is 400 invalid. A
// route's next hop is exactly one of an instance (normalised to its link,
// which must exist when the route is made), an IP, the default internet
// gateway, an internal load balancer or a VPN tunnel. When the next-hop
// instance is later deleted the route stays, with GCE's
// NEXT_HOP_INSTANCE_NOT_FOUND warning; when it cannot forward IP
// (canIpForward false) the warning is NEXT_HOP_CANNOT_IP_FORWARD.

// defaultGateway is the one next-hop gateway GCE has.
const defaultGateway = "default-internet-gateway"

func registerRoutes(t *kindTable) {
	t.add(&kind{
		Resource: "Routes", Collection: "routes", Scope: scopeGlobal, Kind: "compute#route", Singular: "route",
		New:     func() proto.Message { return &computepb.Route{} },
		NewList: func() proto.Message { return &computepb.RouteList{} },
		Verbs:   verbsCRUD,
		Prepare: prepareRoute,
		CheckDelete: func(e *Emulator, o *object) *apiError {
			if o.msg.(*computepb.Route).GetRouteType() == "SUBNET" {
				return errInvalid("route", o.name, "A subnetwork route cannot be deleted; delete the subnetwork.")
			}
			return nil
		},
		View: viewRoute,
		Refs: func(e *Emulator, o *object) []ref {
			rt := o.msg.(*computepb.Route)
			return append(e.refTo(rt.GetNetwork(), true), e.refTo(rt.GetNextHopInstance(), false)...)
		},
	})
}

func prepareRoute(e *Emulator, c *change) *apiError {
	rt := c.Msg.(*computepb.Route)
	netLink, aerr := e.requireRef("resource.network", rt.GetNetwork(), "networks")
	if aerr != nil {
		return aerr
	}
	rt.Network = proto.String(netLink)
	if rt.DestRange == nil {
		return errRequired("resource.destRange")
	}
	dest, err := netip.ParsePrefix(rt.GetDestRange())
	if err != nil {
		// GCE's words after the field's are not known: "Must be a CIDR
		// range." is the emulator's.
		return errInvalid("resource.destRange", rt.GetDestRange(), "Must be a CIDR range.")
	}
	if dest.Addr().Is6() {
		// Both families are destinations ("Both IPv4 and IPv6 are
		// supported", compute/v1 Route.destRange); an IPv6 one is
		// returned as GCE writes IPv6, compressed (RFC 5952), so a caller
		// that compares what it listed with what it sent must compare
		// prefixes, not strings.
		rt.DestRange = proto.String(dest.String())
	}
	if rt.Priority == nil {
		rt.Priority = proto.Uint32(1000)
	} else if rt.GetPriority() > 65535 {
		return errInvalid("resource.priority", fmt.Sprint(rt.GetPriority()), "Must be less than or equal to 65535.")
	}
	hops := 0
	for _, h := range []*string{rt.NextHopInstance, rt.NextHopIp, rt.NextHopGateway, rt.NextHopIlb, rt.NextHopVpnTunnel} {
		if h != nil {
			hops++
		}
	}
	if hops != 1 {
		return errInvalid("resource", c.Obj.name,
			"Exactly one of nextHopInstance, nextHopIp, nextHopGateway, nextHopIlb and nextHopVpnTunnel must be specified.")
	}
	switch {
	case rt.NextHopInstance != nil:
		l, aerr := e.requireRef("resource.nextHopInstance", rt.GetNextHopInstance(), "instances")
		if aerr != nil {
			return aerr
		}
		rt.NextHopInstance = proto.String(l)
	case rt.NextHopGateway != nil:
		p, ok := e.refPath(rt.GetNextHopGateway())
		if !ok || p != "projects/"+e.cfg.Project+"/global/gateways/"+defaultGateway {
			return errInvalid("resource.nextHopGateway", rt.GetNextHopGateway(), "The only gateway is "+defaultGateway+".")
		}
		rt.NextHopGateway = proto.String(link(p))
	case rt.NextHopIp != nil:
		if _, err := netip.ParseAddr(rt.GetNextHopIp()); err != nil {
			return errInvalid("resource.nextHopIp", rt.GetNextHopIp(), "Must be an IP address.")
		}
	case rt.NextHopIlb != nil:
		if p, ok := e.refPath(rt.GetNextHopIlb()); ok {
			rt.NextHopIlb = proto.String(link(p))
		}
	}
	rt.RouteType = proto.String("STATIC")
	rt.Warnings = nil
	return nil
}

// requireRef normalises a reference to a resource of collection that
// must exist: 400 when it is missing or names something else, 404 when
// it names nothing.
func (e *Emulator) requireRef(field, ref, collection string) (string, *apiError) {
	if ref == "" {
		return "", errRequired(field)
	}
	p, ok := e.refPath(ref)
	if !ok {
		return "", errInvalid(field, ref, "Must be a URL to a resource.")
	}
	if rp, _ := parsePath(p); rp.Collection != collection {
		return "", errInvalid(field, ref, "Must be a URL to a "+collection+" resource.")
	}
	if e.lookup(p) == nil {
		return "", errNotFound(p)
	}
	return link(p), nil
}

func viewRoute(e *Emulator, o *object, m proto.Message) {
	rt := m.(*computepb.Route)
	hop := rt.GetNextHopInstance()
	if hop == "" {
		return
	}
	inst := e.lookup(hop)
	switch {
	case inst == nil:
		rt.Warnings = append(rt.Warnings, routeWarning("NEXT_HOP_INSTANCE_NOT_FOUND",
			fmt.Sprintf("Next hop instance '%s' does not exist.", hop), hop))
	case !inst.msg.(*computepb.Instance).GetCanIpForward():
		rt.Warnings = append(rt.Warnings, routeWarning("NEXT_HOP_CANNOT_IP_FORWARD",
			fmt.Sprintf("Next hop instance '%s' cannot ip forward.", hop), hop))
	}
}

func routeWarning(code, msg, instance string) *computepb.Warnings {
	return &computepb.Warnings{Code: proto.String(code), Message: proto.String(msg),
		Data: []*computepb.Data{{Key: proto.String("instance"), Value: proto.String(instance)}}}
}

// buildSystemRoutes creates the routes GCE makes with a network: the
// default route to the internet and the subnetwork's local route.
func (e *Emulator) buildSystemRoutes(f Fixture) {
	k := e.kinds.get(scopeGlobal, "routes")
	e.create(k, "", f.DefaultRouteName, &computepb.Route{
		Description:    proto.String("Default route to the Internet."),
		Network:        proto.String(f.NetworkURL),
		DestRange:      proto.String("0.0.0.0/0"),
		Priority:       proto.Uint32(1000),
		NextHopGateway: proto.String(link("projects/" + e.cfg.Project + "/global/gateways/" + defaultGateway)),
		RouteType:      proto.String("STATIC"),
	})
	e.create(k, "", f.SubnetRouteName, &computepb.Route{
		Description:    proto.String("Default local route to the subnetwork " + f.SubnetworkCIDR + "."),
		Network:        proto.String(f.NetworkURL),
		DestRange:      proto.String(f.SubnetworkCIDR),
		Priority:       proto.Uint32(0),
		NextHopNetwork: proto.String(f.NetworkURL),
		RouteType:      proto.String("SUBNET"),
	})
}
