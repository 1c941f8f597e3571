package aws

import (
	"encoding/binary"
	"net/netip"
	"slices"
	"strings"
)

// Static addresses of Network Load Balancers: SubnetMappings.member.N with
// an AllocationId (an Elastic IP, internet-facing only) or a
// PrivateIPv4Address (internal only), reported back in each availability
// zone's LoadBalancerAddresses.

// lbMapping is what a load balancer holds in one subnet beyond the subnet.
type lbMapping struct {
	allocationID string // the Elastic IP in use
	privateIP    string // the chosen private address (internal), or the ENI's (EIP)
	pinned       bool   // privateIP was chosen by the caller, not allocated
}

type xmlLBAddress struct {
	IPAddress          string `xml:"IpAddress,omitempty"`
	AllocationID       string `xml:"AllocationId,omitempty"`
	PrivateIPv4Address string `xml:"PrivateIPv4Address,omitempty"`
	IPv6Address        string `xml:"IPv6Address,omitempty"`
}

// lbAddresses is one zone's LoadBalancerAddresses as ELBv2 reports them:
// the Elastic IP with its allocation, or the chosen private address, with
// a dualstack load balancer's IPv6 address in the same entry.
func (e *Emulator) lbAddresses(lb *loadBalancer, subnetID string) []xmlLBAddress {
	var out xmlLBAddress
	if m, ok := lb.mappings[subnetID]; ok {
		switch {
		case m.allocationID != "":
			if a, ok := e.eips.store.Get(m.allocationID); ok {
				out.IPAddress, out.AllocationID = a.publicIP, a.allocationID
			}
		case m.pinned:
			out.PrivateIPv4Address = m.privateIP
		}
	}
	if a, ok := lb.ipv6[subnetID]; ok {
		out.IPv6Address = a.String()
	}
	if out == (xmlLBAddress{}) {
		return nil
	}
	return []xmlLBAddress{out}
}

// requestedMappings reads the AllocationId and PrivateIPv4Address of
// SubnetMappings.member.N, keyed by subnet, and checks what can be
// checked without looking at who uses what: the load balancer type and
// scheme, all-or-none, that allocations exist, that private addresses are
// usable addresses of their subnet.
func (e *Emulator) requestedMappings(p params, lbType, scheme string) (map[string]lbMapping, error) {
	maps := p.structs("SubnetMappings.member")
	out := map[string]lbMapping{}
	var allocs, ips int
	var unknown []string
	seen := map[string]bool{}
	for _, m := range maps {
		subnetID, alloc, ip := m.get("SubnetId"), m.get("AllocationId"), m.get("PrivateIPv4Address")
		if alloc == "" && ip == "" {
			continue
		}
		if lbType != lbTypeNetwork {
			return nil, apiErr("InvalidConfigurationRequest", "Elastic IP addresses and private IPv4 addresses can only be specified for Network Load Balancers")
		}
		if alloc != "" {
			allocs++
			if scheme != "internet-facing" {
				return nil, apiErr("InvalidConfigurationRequest", "Elastic IP addresses cannot be assigned to an internal load balancer")
			}
			if seen[alloc] {
				return nil, apiErr("InvalidConfigurationRequest", "Allocation ID '%s' is specified more than once", alloc)
			}
			seen[alloc] = true
			if !e.eips.store.Has(alloc) {
				unknown = append(unknown, alloc)
			}
		}
		if ip != "" {
			ips++
			if scheme != "internal" {
				return nil, apiErr("InvalidConfigurationRequest", "Private IPv4 addresses can only be specified for internal load balancers")
			}
			if err := e.checkLBPrivateIP(subnetID, ip); err != nil {
				return nil, err
			}
		}
		out[subnetID] = lbMapping{allocationID: alloc, privateIP: ip, pinned: ip != ""}
	}
	if allocs > 0 && allocs != len(maps) {
		return nil, apiErr("InvalidConfigurationRequest", "You must specify an Elastic IP address for every subnet mapping, or for none")
	}
	if ips > 0 && ips != len(maps) {
		return nil, apiErr("InvalidConfigurationRequest", "You must specify a private IPv4 address for every subnet mapping, or for none")
	}
	if len(unknown) == 1 {
		return nil, apiErr("AllocationIdNotFound", "The allocation ID '%s' does not exist", unknown[0])
	} else if len(unknown) > 1 {
		return nil, apiErr("AllocationIdNotFound", "The allocation IDs '%s' do not exist", strings.Join(unknown, "', '"))
	}
	return out, nil
}

// checkLBPrivateIP checks that ip is an address of the subnet that AWS
// lets a load balancer have: not one of the first four or the last.
func (e *Emulator) checkLBPrivateIP(subnetID, ip string) error {
	addr, err := netip.ParseAddr(ip)
	if err != nil || !addr.Is4() {
		return validation("The private IPv4 address '%s' is not a valid IPv4 address", ip)
	}
	s, ok := e.subnets.Get(subnetID)
	if !ok {
		return nil // lbSubnets reports the unknown subnet
	}
	if !s.cidr.Contains(addr) {
		return apiErr("InvalidConfigurationRequest", "The private IPv4 address '%s' is not in the CIDR block '%s' of subnet '%s'", ip, s.cidr, s.id)
	}
	base := binary.BigEndian.Uint32(s.cidr.Addr().AsSlice())
	off := binary.BigEndian.Uint32(addr.AsSlice()) - base
	if off < 4 || off == 1<<(32-s.cidr.Bits())-1 {
		return apiErr("InvalidConfigurationRequest", "The private IPv4 address '%s' is reserved in subnet '%s'", ip, s.id)
	}
	return nil
}

// sameMapping reports whether a requested mapping is one a load balancer
// holds; an Elastic IP's interface address is not the caller's to choose.
func sameMapping(old, m lbMapping) bool {
	return old.allocationID == m.allocationID && old.pinned == m.pinned && (!m.pinned || old.privateIP == m.privateIP)
}

// sameMappings reports whether a create request's mappings are those lb has.
func sameMappings(lb *loadBalancer, want map[string]lbMapping) bool {
	n := 0
	for id, m := range lb.mappings {
		if m.allocationID == "" && !m.pinned {
			continue
		}
		n++
		if w, ok := want[id]; !ok || !sameMapping(m, w) {
			return false
		}
	}
	return n == len(want)
}

// claimMappings checks that nothing else uses the requested allocations
// and private addresses, then gives them to lb: an Elastic IP gets an
// interface with an address in its subnet and an association. Mappings
// lb already holds for a subnet are kept.
func (e *Emulator) claimMappings(lb *loadBalancer, want map[string]lbMapping) error {
	var busy []string
	for subnetID, m := range want {
		if old, ok := lb.mappings[subnetID]; ok && sameMapping(old, m) {
			continue
		}
		if m.allocationID != "" {
			if a, _ := e.eips.store.Get(m.allocationID); a.inUse() && a.lbARN != lb.arn {
				busy = append(busy, m.allocationID)
			}
		}
		if m.pinned && e.privateIPInUse(subnetID, m.privateIP, lb.arn) {
			return apiErr("InvalidConfigurationRequest", "The private IPv4 address '%s' is already in use in subnet '%s'", m.privateIP, subnetID)
		}
	}
	if len(busy) > 0 {
		return apiErr("ResourceInUse", "The allocation IDs are not available for use")
	}
	var claimed []string
	for subnetID, m := range want {
		if old, ok := lb.mappings[subnetID]; ok && sameMapping(old, m) {
			continue
		}
		claimed = append(claimed, subnetID)
		s, _ := e.subnets.Get(subnetID)
		if m.allocationID != "" {
			ip, err := s.allocateIP()
			if err != nil {
				for _, id := range claimed {
					e.releaseMapping(lb, id)
				}
				return apiErr("InvalidSubnet", "Not enough IP space available in subnet '%s'", subnetID)
			}
			m.privateIP = ip
			a, _ := e.eips.store.Get(m.allocationID)
			a.lbARN, a.subnetID, a.privateIP = lb.arn, subnetID, ip
			a.eniID, _ = e.newID("eni")
			a.associationID, _ = e.newID("eipassoc")
		}
		if m.pinned {
			if s.pinned == nil {
				s.pinned = map[string]bool{}
			}
			s.pinned[m.privateIP] = true
		}
		if lb.mappings == nil {
			lb.mappings = map[string]lbMapping{}
		}
		lb.mappings[subnetID] = m
	}
	return nil
}

// privateIPInUse reports whether an instance or another load balancer
// holds ip in the subnet, or it is in a prefix delegated to an interface.
func (e *Emulator) privateIPInUse(subnetID, ip, exceptLB string) bool {
	if s, ok := e.subnets.Get(subnetID); ok {
		if a, err := netip.ParseAddr(ip); err == nil && s.ipv4PrefixHolder(a) != "" {
			return true
		}
	}
	for _, i := range e.instances.All() {
		if i.subnetID == subnetID && i.privateIP == ip {
			return true
		}
	}
	for _, other := range e.loadBalancers.All() {
		if other.arn == exceptLB {
			continue
		}
		if m, ok := other.mappings[subnetID]; ok && m.privateIP == ip {
			return true
		}
	}
	return false
}

// releaseMappings frees what lb holds in the subnets not in keep: its
// Elastic IPs stay allocated to the account, free for reuse.
func (e *Emulator) releaseMappings(lb *loadBalancer, keep []string) {
	for subnetID := range lb.mappings {
		if !slices.Contains(keep, subnetID) {
			e.releaseMapping(lb, subnetID)
		}
	}
}

// releaseMapping frees what lb holds in one subnet.
func (e *Emulator) releaseMapping(lb *loadBalancer, subnetID string) {
	m, ok := lb.mappings[subnetID]
	if !ok {
		return
	}
	if a, ok := e.eips.store.Get(m.allocationID); ok && a.lbARN == lb.arn {
		a.lbARN, a.subnetID, a.eniID, a.privateIP, a.associationID = "", "", "", "", ""
	}
	if s, ok := e.subnets.Get(subnetID); ok && m.pinned {
		delete(s.pinned, m.privateIP)
	}
	delete(lb.mappings, subnetID)
}

// setSubnetMappings applies a SetSubnets request's mappings: subnets the
// load balancer keeps keep their addresses (asking for different ones is
// an error), new subnets get what was asked, removed ones release theirs.
func (e *Emulator) setSubnetMappings(lb *loadBalancer, p params, subnets []string) error {
	want, err := e.requestedMappings(p, lb.lbType, lb.scheme)
	if err != nil {
		return err
	}
	for subnetID, m := range want {
		if old, ok := lb.mappings[subnetID]; ok && !sameMapping(old, m) {
			return apiErr("InvalidConfigurationRequest", "The addresses of subnet '%s' cannot be changed", subnetID)
		}
	}
	for subnetID, old := range lb.mappings {
		if _, ok := want[subnetID]; !ok && slices.Contains(subnets, subnetID) {
			want[subnetID] = old
		}
	}
	if err := e.claimMappings(lb, want); err != nil {
		return err
	}
	e.releaseMappings(lb, subnets)
	return nil
}
