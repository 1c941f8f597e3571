package gce

import (
	"fmt"
	"net/netip"
)

// Address pools: the external pool ephemeral and reserved external
// addresses come from, and one pool per subnetwork for internal ones
// (alias IP ranges of the primary range included: aliasranges.go).
// Each address has an owner, the path of the resource holding it (an
// instance, an address resource, a forwarding rule), so that releasing
// checks who holds it: an ephemeral address promoted to a static one
// belongs to the address resource from then on, and the instance using
// it no longer releases it.

// externalPool names the external pool.
const externalPool = "external"

type ipam struct {
	pools map[string]*ipPool
	order []string
	// ranges hand out blocks rather than addresses: a subnetwork's
	// secondary ranges and IPv6 range (aliasranges.go).
	ranges map[string]*blockRange
}

// ipPool hands out the addresses of a range. It searches from where the
// last allocation stopped, so a released address is not handed out again
// at once (a Node and a newer one never share an IP by accident).
type ipPool struct {
	prefix      netip.Prefix
	first, last netip.Addr
	next        netip.Addr
	used        map[netip.Addr]string
}

func newIPAM() *ipam { return &ipam{pools: map[string]*ipPool{}} }

// addPool adds a pool for cidr minus skipLow addresses at its start and
// skipHigh at its end (a subnetwork's network and gateway addresses, and
// the two GCE keeps at the top).
func (a *ipam) addPool(name, cidr string, skipLow, skipHigh int) error {
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil {
		return fmt.Errorf("pool %s: %w", name, err)
	}
	prefix = prefix.Masked()
	first := prefix.Addr()
	for range skipLow {
		first = first.Next()
	}
	last := lastAddr(prefix)
	for range skipHigh {
		last = last.Prev()
	}
	if !prefix.Contains(first) || !prefix.Contains(last) || last.Less(first) {
		return fmt.Errorf("pool %s: %s is too small", name, cidr)
	}
	a.pools[name] = &ipPool{prefix: prefix, first: first, last: last, next: first, used: map[netip.Addr]string{}}
	a.order = append(a.order, name)
	return nil
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := range b {
		bits := p.Bits() - i*8
		switch {
		case bits <= 0:
			b[i] = 0xff
		case bits < 8:
			b[i] |= 0xff >> bits
		}
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

func (a *ipam) pool(name string) *ipPool { return a.pools[name] }

// poolOf finds the pool holding ip, and its name.
func (a *ipam) poolOf(ip netip.Addr) (string, *ipPool) {
	for _, n := range a.order {
		if p := a.pools[n]; p.prefix.Contains(ip) {
			return n, p
		}
	}
	return "", nil
}

// owner is who holds ip ("" when no one does).
func (a *ipam) owner(ip string) string {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return ""
	}
	if _, p := a.poolOf(addr); p != nil {
		return p.used[addr]
	}
	return ""
}

// release frees ip if owner holds it.
func (a *ipam) release(ip, owner string) {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return
	}
	if _, p := a.poolOf(addr); p != nil && p.used[addr] == owner {
		delete(p.used, addr)
	}
}

// transfer hands ip from one owner to another.
func (a *ipam) transfer(ip, from, to string) {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return
	}
	if _, p := a.poolOf(addr); p != nil && p.used[addr] == from {
		p.used[addr] = to
	}
}

// allocate hands out a free address to owner.
func (p *ipPool) allocate(owner string) (netip.Addr, bool) {
	ip := p.next
	for {
		if _, used := p.used[ip]; !used {
			p.used[ip] = owner
			p.next = ip.Next()
			if p.last.Less(p.next) {
				p.next = p.first
			}
			return ip, true
		}
		ip = ip.Next()
		if p.last.Less(ip) {
			ip = p.first
		}
		if ip == p.next {
			return netip.Addr{}, false
		}
	}
}

// claim gives ip to owner; it fails, naming the holder, when someone
// else holds it, or when ip is outside what the pool hands out.
func (p *ipPool) claim(ip netip.Addr, owner string) (holder string, ok bool) {
	if ip.Less(p.first) || p.last.Less(ip) {
		return "", false
	}
	if h, used := p.used[ip]; used && h != owner {
		return h, false
	}
	p.used[ip] = owner
	return "", true
}
