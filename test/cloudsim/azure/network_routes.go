package azure

import (
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
)

// Route tables: routes (nested, Routes_*), disableBgpRoutePropagation,
// and the subnets associated with the table.

const routeType = "Microsoft.Network/routeTables/routes"

var serviceTagRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9.]*$`)

func putRouteTable(e *Emulator, c *putCall) *armError {
	if op := e.busyFamily(c.ID, c.Old); op != nil {
		return errAnotherOperation(op, c.Host)
	}
	rt, aerr := decodeBody[armnetwork.RouteTable](c.Body)
	if aerr != nil {
		return aerr
	}
	if rt.Properties == nil {
		rt.Properties = &armnetwork.RouteTablePropertiesFormat{}
	}
	p := rt.Properties
	seen := newNames(c.ID)
	var routes []*armnetwork.Route
	for i, r := range p.Routes {
		if r == nil {
			continue
		}
		n := childName(r.Name, r.ID)
		if pr := seen.add(n, fmt.Sprintf("properties.routes[%d]", i)); pr != nil {
			return errInvalidFormat(pr)
		}
		if aerr := completeRoute(c.ID+"/routes/"+n, r); aerr != nil {
			return aerr
		}
		for _, q := range routes {
			if aerr := routeConflict(q, r); aerr != nil {
				return aerr
			}
		}
		routes = append(routes, r)
	}
	bodies := make([]map[string]any, 0, len(routes))
	for _, r := range routes {
		bodies = append(bodies, encodeJSON(r))
	}
	if p.DisableBgpRoutePropagation == nil {
		p.DisableBgpRoutePropagation = to.Ptr(false)
	}
	p.Routes, p.Subnets, p.ResourceGUID = nil, nil, nil
	if c.Old != nil {
		if g, _ := c.Old.props()["resourceGuid"].(string); g != "" {
			p.ResourceGUID = to.Ptr(g)
		}
	}
	if p.ResourceGUID == nil {
		p.ResourceGUID = to.Ptr(e.newGUID())
	}
	replaceBody(c.Body, rt)
	rg, names := c.names()
	e.setChildren(rg, names, c.ID, e.netKind("routeTables/routes"), bodies)
	return nil
}

// completeRoute checks a route and fills what the provider fills.
func completeRoute(id string, r *armnetwork.Route) *armError {
	name := lastSegment(id)
	r.ID, r.Name, r.Type, r.Etag = to.Ptr(id), to.Ptr(name), to.Ptr(routeType), nil
	if r.Properties == nil {
		return errMissing("properties")
	}
	rp := r.Properties
	prefix := deref(rp.AddressPrefix)
	if prefix == "" {
		return errMissing("properties.addressPrefix")
	}
	if pf, err := netip.ParsePrefix(prefix); err == nil {
		if pf.Masked() != pf {
			return errBadRequest("InvalidRouteAddressPrefix", "Route %s has address prefix %s, which is not a network address (%s).", name, prefix, pf.Masked())
		}
	} else if !serviceTagRE.MatchString(prefix) {
		return errBadRequest("InvalidRouteAddressPrefix", "Route %s has address prefix %s, which is neither a CIDR nor a service tag.", name, prefix)
	}
	hop, ok := canon(rp.NextHopType, armnetwork.PossibleRouteNextHopTypeValues(), "")
	if !ok {
		return errBadValue("properties.nextHopType", deref(rp.NextHopType))
	}
	rp.NextHopType = &hop
	ip := deref(rp.NextHopIPAddress)
	switch {
	case hop == armnetwork.RouteNextHopTypeVirtualAppliance && ip == "":
		return errBadRequest("MissingNextHopIpAddress", "NextHopIpAddress cannot be Null or Empty in route %s when NextHopType is VirtualAppliance.", name)
	case hop != armnetwork.RouteNextHopTypeVirtualAppliance && ip != "":
		return errBadRequest("InvalidNextHopIpAddress", "NextHopIpAddress %s is not allowed in route %s: it is only allowed when NextHopType is VirtualAppliance.", ip, name)
	case ip != "":
		if _, err := netip.ParseAddr(ip); err != nil {
			return errBadRequest("InvalidNextHopIpAddress", "NextHopIpAddress %s in route %s is not a valid IP address.", ip, name)
		}
	default:
		rp.NextHopIPAddress = nil
	}
	rp.HasBgpOverride = to.Ptr(false)
	return nil
}

// routeConflict: two routes of a table must not have the same address
// prefix.
func routeConflict(existing, r *armnetwork.Route) *armError {
	if strings.EqualFold(deref(existing.Properties.AddressPrefix), deref(r.Properties.AddressPrefix)) {
		return errBadRequest("RouteConflict", "Route %s conflicts with Route %s. Routes cannot have the same AddressPrefix.", deref(r.Name), deref(existing.Name))
	}
	return nil
}

// putRoute is Routes_CreateOrUpdate.
func putRoute(e *Emulator, c *putCall) *armError {
	rt, aerr := e.putChildPrologue(c)
	if aerr != nil {
		return aerr
	}
	r, aerr := decodeBody[armnetwork.Route](c.Body)
	if aerr != nil {
		return aerr
	}
	if aerr := completeRoute(c.ID, &r); aerr != nil {
		return aerr
	}
	for _, o := range e.childrenOf(rt.id, e.netKind("routeTables/routes")) {
		if o == c.Old {
			continue
		}
		other, _ := decodeAs[armnetwork.Route](o.body)
		if other.Properties != nil {
			if aerr := routeConflict(&other, &r); aerr != nil {
				return aerr
			}
		}
	}
	replaceBody(c.Body, r)
	e.touch(rt.id)
	return nil
}

func viewRouteTable(e *Emulator, o *object, _ url.Values) (map[string]any, *armError) {
	out := copyBody(o.body)
	p := propsOf(out)
	p["provisioningState"] = e.stateOf(o)
	routes, aerr := e.renderChildren(o, e.netKind("routeTables/routes"))
	if aerr != nil {
		return nil, aerr
	}
	p["routes"] = routes
	if ids := e.referrers("virtualNetworks/subnets", "routeTable", o.id); len(ids) > 0 {
		p["subnets"] = subResources(ids)
	}
	return out, nil
}

func delRouteTable(e *Emulator, o *object) *armError {
	if aerr := delFamily(e, o); aerr != nil {
		return aerr
	}
	if users := e.referrers("virtualNetworks/subnets", "routeTable", o.id); len(users) > 0 {
		return errBadRequest("InUseRouteTableCannotBeDeleted",
			"Route table %s is in use and cannot be deleted. It is associated with the following subnets: %s. In order to delete the route table, remove the association with the subnet(s).",
			o.id, strings.Join(users, ", "))
	}
	return nil
}
