package azure

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Addresses: private ones from subnets, public ones from the emulator's
// public pool (20.64.0.0/10 for IPv4, 2603:1030:20e:3::/64 for IPv6).

// ipConfigRef is one IP configuration anywhere: a network interface's
// (properties.ipConfigurations, also the compute half's scale set VM
// interfaces) or a load balancer's frontend
// (properties.frontendIPConfigurations).
type ipConfigRef struct {
	owner *object
	id    string
	props map[string]any
	key   string // lower-cased id, for ordering
}

// ipConfigsWhere returns the IP configurations keep accepts, by ID.
func (e *Emulator) ipConfigsWhere(keep func(ipConfigRef) bool) []ipConfigRef {
	var out []ipConfigRef
	for _, o := range e.objs {
		p, ok := o.body["properties"].(map[string]any)
		if !ok {
			continue
		}
		for _, key := range []string{"ipConfigurations", "frontendIPConfigurations"} {
			items, _ := p[key].([]any)
			for _, item := range items {
				m, _ := item.(map[string]any)
				props, _ := m["properties"].(map[string]any)
				if props == nil {
					continue
				}
				id, _ := m["id"].(string)
				if id == "" {
					name, _ := m["name"].(string)
					id = o.id + "/" + key + "/" + name
				}
				if r := (ipConfigRef{owner: o, id: id, props: props}); keep(r) {
					r.key = strings.ToLower(id)
					out = append(out, r)
				}
			}
		}
	}
	if len(out) > 1 {
		slices.SortFunc(out, func(a, b ipConfigRef) int { return strings.Compare(a.key, b.key) })
	}
	return out
}

// ipConfigsInSubnet returns the IP configurations in a subnet.
func (e *Emulator) ipConfigsInSubnet(subnetID string) []ipConfigRef {
	return e.ipConfigsWhere(func(r ipConfigRef) bool { return sameID(refID(r.props, "subnet"), subnetID) })
}

// publicIPUsers returns the IP configurations using a public IP address.
func (e *Emulator) publicIPUsers(pipID string) []ipConfigRef {
	return e.ipConfigsWhere(func(r ipConfigRef) bool { return sameID(refID(r.props, "publicIPAddress"), pipID) })
}

// usedPrivateIPs maps the addresses in use in a subnet to the IP
// configurations holding them, leaving out those of except (the resource
// being rewritten).
func (e *Emulator) usedPrivateIPs(subnetID string, except *object) map[netip.Addr]string {
	used := map[netip.Addr]string{}
	for _, r := range e.ipConfigsInSubnet(subnetID) {
		if except != nil && r.owner == except {
			continue
		}
		if s, _ := r.props["privateIPAddress"].(string); s != "" {
			if a, err := netip.ParseAddr(s); err == nil {
				used[a] = r.id
			}
		}
	}
	return used
}

// subnetPrefixes are a subnet's addressPrefix and addressPrefixes.
func subnetPrefixes(body map[string]any) []netip.Prefix {
	p := propsOf(body)
	var ss []string
	if s, _ := p["addressPrefix"].(string); s != "" {
		ss = append(ss, s)
	}
	if arr, ok := p["addressPrefixes"].([]any); ok {
		for _, v := range arr {
			if s, _ := v.(string); s != "" {
				ss = append(ss, s)
			}
		}
	}
	var out []netip.Prefix
	for _, s := range ss {
		if pf, err := netip.ParsePrefix(s); err == nil {
			out = append(out, pf)
		}
	}
	return out
}

// lastAddr is the highest address of a prefix (IPv4's broadcast).
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	bits := p.Bits()
	for i := range b {
		for j := 0; j < 8; j++ {
			if i*8+j >= bits {
				b[i] |= 1 << (7 - j)
			}
		}
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// reservedIn says a is one of the addresses Azure keeps in every subnet:
// the network address, the next three (gateway and DNS) and the last.
func reservedIn(p netip.Prefix, a netip.Addr) bool {
	n := p.Masked().Addr()
	for range 4 {
		if a == n {
			return true
		}
		n = n.Next()
	}
	return a == lastAddr(p)
}

// firstFree is the lowest address of p that is neither reserved nor used.
func firstFree(p netip.Prefix, used map[netip.Addr]string) (netip.Addr, bool) {
	last := lastAddr(p)
	a := p.Masked().Addr()
	for range 4 {
		a = a.Next()
	}
	for ; a.IsValid() && p.Contains(a) && a != last; a = a.Next() {
		if _, taken := used[a]; !taken {
			return a, true
		}
	}
	return netip.Addr{}, false
}

func errSubnetFull(subnetID string, prefixes []netip.Prefix) *armError {
	ps := make([]string, 0, len(prefixes))
	for _, p := range prefixes {
		ps = append(ps, p.String())
	}
	return errBadRequest("SubnetIsFull", "Subnet %s with address prefix %s does not have enough capacity for 1 IP addresses.", lastSegment(subnetID), strings.Join(ps, ","))
}

// allocatePrivateIP hands out the lowest free IPv4 address of the subnet
// subnetID (e.mu held), as Azure's dynamic allocation does: never one of
// the subnet's five reserved addresses, never one in use.
func (e *Emulator) allocatePrivateIP(subnetID string) (string, error) {
	return e.allocateAddress(subnetID, false, nil)
}

// allocateAddress is allocatePrivateIP for either family (v6 picks
// IPv6), also skipping the addresses in taken: those handed out to a
// resource not yet stored.
func (e *Emulator) allocateAddress(subnetID string, v6 bool, taken []string) (string, error) {
	s := e.lookupKind(subnetID, "virtualNetworks/subnets")
	if s == nil {
		return "", errNestedNotFound(subnetID)
	}
	if v6 && !hasFamily(s.body, true) {
		return "", errNoIPv6Prefix("An allocation", s.id)
	}
	used := e.usedPrivateIPs(s.id, nil)
	for _, t := range taken {
		if a, err := netip.ParseAddr(t); err == nil {
			used[a] = ""
		}
	}
	prefixes := subnetPrefixes(s.body)
	if a, ok := firstFreeOf(prefixes, v6, used); ok {
		return a.String(), nil
	}
	return "", errSubnetFull(s.id, prefixes)
}

// firstFreeOf is the lowest free address of the first of prefixes, of
// the family v6 picks, that has one.
func firstFreeOf(prefixes []netip.Prefix, v6 bool, used map[netip.Addr]string) (netip.Addr, bool) {
	for _, p := range prefixes {
		if p.Addr().Is6() != v6 {
			continue
		}
		if a, ok := firstFree(p, used); ok {
			return a, true
		}
	}
	return netip.Addr{}, false
}

// hasFamily says a subnet body has an address prefix of the family v6
// picks.
func hasFamily(body map[string]any, v6 bool) bool {
	for _, p := range subnetPrefixes(body) {
		if p.Addr().Is6() == v6 {
			return true
		}
	}
	return false
}

// errNoIPv6Prefix refuses an IPv6 IP configuration (or a frontend; who
// says which) in a subnet without an IPv6 prefix. The network provider's own code for
// this was not found documented; PrivateIPAddressNotInSubnet ("the
// specified IP address is outside of the subnet range", Azure Resource
// Manager's common deployment errors) is the closest documented one.
func errNoIPv6Prefix(who, subnetID string) *armError {
	return errBadRequest("PrivateIPAddressNotInSubnet",
		"%s requests a private IPv6 address, but subnet %s has no IPv6 address prefix.", who, subnetID)
}

// IP versions as the network provider spells them.
const (
	ipv4 = "IPv4"
	ipv6 = "IPv6"
)

// versionOf is an IP configuration's privateIPAddressVersion (stored
// properties), IPv4 when unset as the provider defaults it.
func versionOf(props map[string]any) string {
	if v := jsonStr(props, "privateIPAddressVersion"); strings.EqualFold(v, ipv6) {
		return ipv6
	}
	return ipv4
}

// ipRequest is one IP configuration's private address in a PUT.
type ipRequest struct {
	ipConfigID string
	subnet     *object
	static     bool
	// v6 asks for an IPv6 address.
	v6 bool
	// addr is the requested address (static) or the one to keep
	// (dynamic, already allocated); "" allocates.
	addr   string
	result string
}

// assignPrivateIPs settles the private addresses of one resource's IP
// configurations: static ones checked (in the subnet, not reserved, not
// taken), dynamic ones kept when still valid or allocated. owner is the
// resource being replaced (its own addresses are free to it).
func (e *Emulator) assignPrivateIPs(owner *object, reqs []*ipRequest) *armError {
	used := map[string]map[netip.Addr]string{}
	usedIn := func(s *object) map[netip.Addr]string {
		key := strings.ToLower(s.id)
		if used[key] == nil {
			used[key] = e.usedPrivateIPs(s.id, owner)
		}
		return used[key]
	}
	inSubnet := func(s *object, a netip.Addr) (netip.Prefix, bool) {
		for _, p := range subnetPrefixes(s.body) {
			if p.Contains(a) {
				return p, true
			}
		}
		return netip.Prefix{}, false
	}
	mine := map[string]map[netip.Addr]string{}
	take := func(r *ipRequest, a netip.Addr) {
		key := strings.ToLower(r.subnet.id)
		if mine[key] == nil {
			mine[key] = map[netip.Addr]string{}
		}
		mine[key][a] = r.ipConfigID
		r.result = a.String()
	}
	for _, r := range reqs {
		if r.addr == "" {
			continue
		}
		a, err := netip.ParseAddr(r.addr)
		if err != nil || a.Is6() != r.v6 {
			if r.static {
				return errBadRequest("PrivateIPAddressInvalid", "IP configuration %s has an invalid private IP address %s.", r.ipConfigID, r.addr)
			}
			continue
		}
		p, ok := inSubnet(r.subnet, a)
		other, taken := usedIn(r.subnet)[a]
		sibling, twice := mine[strings.ToLower(r.subnet.id)][a]
		switch {
		case !r.static && (!ok || reservedIn(p, a) || taken || twice):
			continue // allocate afresh below
		case !ok:
			return errBadRequest("PrivateIPAddressNotInSubnet", "IP configuration %s is using the private IP address %s which is not in the range of subnet %s.", r.ipConfigID, r.addr, r.subnet.id)
		case reservedIn(p, a):
			return errBadRequest("PrivateIPAddressInReservedRange", "Private static IP address %s falls within reserved IP range of subnet prefix %s.", r.addr, p)
		case taken:
			return errBadRequest("PrivateIPAddressIsAllocated", "IP configuration %s is using the private IP address %s which is already allocated to resource %s.", r.ipConfigID, r.addr, other)
		case twice:
			return errBadRequest("MultipleIpConfigsRequestSamePrivateIpAddress",
				"IP configuration %s is requesting the same private IP address %s as IP Configurations %s. Private IP address %s from the subnet can be assigned to only one IP configuration.",
				r.ipConfigID, r.addr, sibling, r.addr)
		}
		take(r, a)
	}
	for _, r := range reqs {
		if r.result != "" {
			continue
		}
		all := map[netip.Addr]string{}
		for a, id := range usedIn(r.subnet) {
			all[a] = id
		}
		for a, id := range mine[strings.ToLower(r.subnet.id)] {
			all[a] = id
		}
		prefixes := subnetPrefixes(r.subnet.body)
		a, ok := firstFreeOf(prefixes, r.v6, all)
		if !ok {
			return errSubnetFull(r.subnet.id, prefixes)
		}
		take(r, a)
	}
	return nil
}

// allocatePublicAddress hands out a public address no public IP holds.
// Successive calls walk the pool, so an address just released is not
// handed out again at once.
func (e *Emulator) allocatePublicAddress(v6 bool) string {
	used := map[string]bool{}
	for _, o := range e.objs {
		if strings.EqualFold(o.kind.typ, "publicIPAddresses") {
			if s, _ := o.props()["ipAddress"].(string); s != "" {
				used[s] = true
			}
		}
	}
	for i := e.seq; ; i++ {
		var a string
		if v6 {
			a = fmt.Sprintf("2603:1030:20e:3::%x", i%0xfffe+1)
		} else {
			a = fmt.Sprintf("20.%d.%d.%d", 64+(i/(254*256))%64, (i/254)%256, 1+i%254)
		}
		if !used[a] {
			return a
		}
	}
}
