package openstack

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"
)

// The network model: networks, subnets, ports and floating IPs, as
// Neutron holds them. Nova reads it for server addresses, Octavia makes
// and removes VIP ports with createPort and deletePort, and the Neutron
// API (neutron*.go) serves it.

// stdAttrs are Neutron's standard attributes, which every resource here
// carries: description, tags, revision_number and the timestamps.
type stdAttrs struct {
	description string
	tags        []string
	// revision is revision_number: 1 at creation (SQLAlchemy's version
	// counter), one more for every change, tags included.
	revision int
	created  time.Time
	updated  time.Time
}

func newStdAttrs(now time.Time) stdAttrs {
	return stdAttrs{revision: 1, created: now, updated: now}
}

// bump records a change, as Neutron's revision plugin does on every
// flush that modifies the resource.
func (s *stdAttrs) bump(now time.Time) {
	s.revision++
	s.updated = now
}

type network struct {
	id, name     string
	projectID    string
	external     bool
	subnetIDs    []string
	mtu          int
	portSecurity bool // port_security_enabled, the default of its ports
	std          stdAttrs
}

type subnet struct {
	id, name   string
	networkID  string
	projectID  string
	cidr       netip.Prefix
	gateway    netip.Addr
	used       map[netip.Addr]bool
	nextOffset uint32 // where the next allocation search starts
	// ipv6AddressMode and ipv6RAMode are ipv6_address_mode and
	// ipv6_ra_mode (slaac, dhcpv6-stateful, dhcpv6-stateless), ""
	// for None; always "" on an IPv4 subnet.
	ipv6AddressMode, ipv6RAMode string
	std                         stdAttrs
}

// The IPv6 modes of a subnet (neutron_lib.constants.IPV6_MODES).
const (
	ipv6SLAAC           = "slaac"
	ipv6DHCPv6Stateful  = "dhcpv6-stateful"
	ipv6DHCPv6Stateless = "dhcpv6-stateless"
)

// autoAddress is ipv6_utils.is_auto_address_subnet
// (neutron/common/ipv6_utils.py:27-31): either mode SLAAC or
// DHCPv6-stateless, where a port's address is the EUI-64 of its MAC.
func (s *subnet) autoAddress() bool {
	auto := func(m string) bool { return m == ipv6SLAAC || m == ipv6DHCPv6Stateless }
	return auto(s.ipv6AddressMode) || auto(s.ipv6RAMode)
}

// ipVersion is the subnet's ip_version.
func (s *subnet) ipVersion() int {
	if s.cidr.Addr().Is4() {
		return 4
	}
	return 6
}

type port struct {
	id        string
	name      string
	networkID string
	// subnetID and fixedIP are the port's first address: the one it was
	// made for (a server's, a VIP's, a router interface's).
	subnetID  string
	projectID string
	mac       string
	fixedIP   netip.Addr
	// moreIPs are its further fixed IPs, on other subnets of its
	// network: the EUI-64 address Neutron gives every port on each
	// SLAAC or DHCPv6-stateless subnet, and any further subnet a
	// launch asked for (a dual-stack port).
	moreIPs     []ipAlloc
	deviceID    string // the server's, router's or load balancer's ID
	deviceOwner string // "compute:<zone>", "network:router_interface", "Octavia", ...
	// adminStateUp is admin_state_up.
	adminStateUp bool
	// portSecurity is port_security_enabled; without it the port can
	// have neither security groups nor allowed address pairs.
	portSecurity   bool
	securityGroups []string
	addressPairs   []addressPair
	std            stdAttrs
}

// ipAlloc is one of a port's fixed IPs and its subnet.
type ipAlloc struct {
	subnetID string
	ip       netip.Addr
}

// allocations are the port's fixed IPs, its first one first.
func (p *port) allocations() []ipAlloc {
	return append([]ipAlloc{{p.subnetID, p.fixedIP}}, p.moreIPs...)
}

// fixedIPs are the port's fixed IPs in the order Neutron's API gives
// them: the IPAllocation rows ordered by ip_address, a string, then by
// subnet_id (neutron/db/models_v2.py Port.fixed_ips, order_by). So a
// dual-stack port on 10.0.0.0/24 and fd00::/64 lists its IPv4 address
// first, one on 203.0.113.0/24 and 2001:db8::/64 its IPv6 address.
func (p *port) fixedIPs() []ipAlloc {
	out := p.allocations()
	slices.SortStableFunc(out, func(a, b ipAlloc) int {
		return cmp.Or(strings.Compare(a.ip.String(), b.ip.String()), strings.Compare(a.subnetID, b.subnetID))
	})
	return out
}

// hasIP reports whether a is one of the port's fixed IPs.
func (p *port) hasIP(a netip.Addr) bool {
	return slices.ContainsFunc(p.allocations(), func(x ipAlloc) bool { return x.ip == a })
}

// ipv4 is the port's IPv4 fixed IPs, in API order
// (l3_db._port_ipv4_fixed_ips).
func (p *port) ipv4() []ipAlloc {
	return slices.DeleteFunc(p.fixedIPs(), func(x ipAlloc) bool { return !x.ip.Is4() })
}

// addressPair is one of a port's allowed_address_pairs: an IP address
// or CIDR, and the MAC (the port's own when none was given).
type addressPair struct {
	ip  string
	mac string
}

// Device owners Neutron gives the ports it makes for routers.
const (
	ownerRouterInterface = "network:router_interface"
	ownerRouterGateway   = "network:router_gateway"
	ownerDHCP            = "network:dhcp"
)

// trustedOwner reports a port Neutron itself owns ("network:*"): it gets
// no security groups (neutron_lib.utils.net.is_port_trusted).
func trustedOwner(deviceOwner string) bool { return strings.HasPrefix(deviceOwner, "network:") }

type floatingIP struct {
	id        string
	address   netip.Addr
	networkID string // the external network
	projectID string
	portID    string     // "" when unassociated
	fixedIP   netip.Addr // the port's address the floating IP maps to
	routerID  string     // the router that does the NAT, "" when unassociated
	std       stdAttrs
}

// Default MTUs: a Geneve tenant network under ML2/OVN, and the flat
// provider network devstack's "public" is.
const (
	tenantMTU   = 1442
	providerMTU = 1500
)

// createNetwork adds a network. As in Neutron, creating a project's
// network makes sure the project has its default security group.
// Callers hold e.mu.
func (e *Emulator) createNetwork(name, projectID string, external bool) *network {
	n := &network{
		id: e.ids.uuid(), name: name, projectID: projectID, external: external, mtu: tenantMTU,
		portSecurity: true, std: newStdAttrs(e.now()),
	}
	if external {
		n.mtu = providerMTU
	}
	e.networks.Put(n)
	if projectID != "" {
		e.ensureDefaultSecurityGroup(projectID)
	}
	return n
}

// createSubnet adds a subnet whose first host address is the gateway:
// IPv4, /29 or larger, or IPv6, /120 or larger, with its IPv6 modes
// (checked as Neutron's _validate_subnet and _validate_ipv6_attributes
// do, neutron/db/db_base_plugin_v2.py:378-418). A SLAAC or
// DHCPv6-stateless subnet gives every port of the network but the
// router's its EUI-64 address, as create_subnet does (:873-887).
// Callers hold e.mu.
func (e *Emulator) createSubnet(networkID, name, projectID string, cidr netip.Prefix, addrMode, raMode string) (*subnet, error) {
	n, ok := e.networks.Get(networkID)
	if !ok {
		return nil, fmt.Errorf("unknown network %q", networkID)
	}
	if err := checkSubnet(cidr, addrMode, raMode); err != nil {
		return nil, err
	}
	cidr = cidr.Masked()
	s := &subnet{
		id: e.ids.uuid(), name: name, networkID: networkID, projectID: projectID, cidr: cidr,
		gateway: addrAt(cidr, 1), used: map[netip.Addr]bool{},
		// Neutron hands out addresses from .2 on; devstack's DHCP and
		// router ports take the first few, so servers start at .10.
		nextOffset:      10,
		ipv6AddressMode: addrMode, ipv6RAMode: raMode,
		std: newStdAttrs(e.now()),
	}
	e.subnets.Put(s)
	n.subnetIDs = append(n.subnetIDs, s.id)
	// Adding a subnet changes the network's "subnets".
	n.std.bump(e.now())
	if s.autoAddress() {
		for _, p := range e.ports.All() {
			if p.networkID == n.id && !routerOwner(p.deviceOwner) {
				if err := e.addAutoAddress(p, s); err != nil {
					return nil, err
				}
				p.std.bump(e.now())
			}
		}
	}
	return s, nil
}

// checkSubnet refuses what Neutron refuses of a new subnet's CIDR and
// IPv6 modes, with its messages, and what the emulator cannot hold.
func checkSubnet(cidr netip.Prefix, addrMode, raMode string) error {
	valid := []string{"", ipv6SLAAC, ipv6DHCPv6Stateful, ipv6DHCPv6Stateless}
	for k, m := range map[string]string{"ipv6_address_mode": addrMode, "ipv6_ra_mode": raMode} {
		if !slices.Contains(valid, m) {
			return fmt.Errorf("Invalid input for %s. Reason: %s is not in valid_values", k, m)
		}
	}
	switch {
	case cidr.Addr().Is4():
		if cidr.Bits() > 29 {
			return fmt.Errorf("subnet CIDR %s must be /29 or larger", cidr)
		}
		if raMode != "" {
			return fmt.Errorf("ipv6_ra_mode is not valid when ip_version is 4")
		}
		if addrMode != "" {
			return fmt.Errorf("ipv6_address_mode is not valid when ip_version is 4")
		}
	case cidr.Addr().Is4In6() || !cidr.IsValid():
		return fmt.Errorf("subnet CIDR %s is neither IPv4 nor IPv6", cidr)
	default:
		if cidr.Bits() > 120 {
			return fmt.Errorf("subnet CIDR %s must be /120 or larger", cidr)
		}
		if addrMode != "" && raMode != "" && addrMode != raMode {
			return fmt.Errorf("ipv6_ra_mode set to '%s' with ipv6_address_mode set to '%s' is not valid. "+
				"If both attributes are set, they must be the same value", raMode, addrMode)
		}
		auto := &subnet{ipv6AddressMode: addrMode, ipv6RAMode: raMode}
		if auto.autoAddress() && cidr.Bits() != 64 {
			return fmt.Errorf("Invalid CIDR %s for IPv6 address mode. OpenStack uses the EUI-64 address format, "+
				"which requires the prefix to be /64", cidr)
		}
	}
	return nil
}

// addrAt is the address offset hosts into prefix.
func addrAt(p netip.Prefix, offset uint32) netip.Addr {
	if p.Addr().Is4() {
		b := p.Addr().As4()
		v := binary.BigEndian.Uint32(b[:]) + offset
		binary.BigEndian.PutUint32(b[:], v)
		return netip.AddrFrom4(b)
	}
	// The emulator's IPv6 subnets are /120 or larger: the offset
	// stays in the low 64 bits, without a carry.
	b := p.Addr().As16()
	v := binary.BigEndian.Uint64(b[8:]) + uint64(offset)
	binary.BigEndian.PutUint64(b[8:], v)
	return netip.AddrFrom16(b)
}

// lastOffset is the offset of the subnet's last address a port may
// have: before the broadcast address in IPv4 (ipam.utils.generate_pools,
// which keeps IPv6's last address), at most 2^32-1 here.
func (s *subnet) lastOffset() uint32 {
	host := s.cidr.Addr().BitLen() - s.cidr.Bits()
	if host >= 32 {
		return 1<<32 - 1
	}
	last := uint32(1)<<host - 1
	if s.ipVersion() == 4 {
		last--
	}
	return last
}

// lastAddr is the last address of the subnet's allocation pool: before
// the broadcast address in IPv4, the subnet's last one in IPv6.
func (s *subnet) lastAddr() netip.Addr {
	if s.ipVersion() == 4 {
		return addrAt(s.cidr, s.lastOffset())
	}
	b := s.cidr.Addr().As16()
	host := 128 - s.cidr.Bits()
	for i := 15; i >= 0 && host > 0; i-- {
		n := min(host, 8)
		b[i] |= byte(1<<n - 1)
		host -= n
	}
	return netip.AddrFrom16(b)
}

// free counts the subnet's unallocated host addresses (those the
// emulator hands out: at most 2^32-2 on a large IPv6 subnet).
func (s *subnet) free() int {
	return int(s.lastOffset()) - 1 - len(s.used)
}

// hostAddress reports whether a is an address of s a port may have:
// inside it, neither its network nor (IPv4) its broadcast address
// (ipam.utils.check_subnet_ip).
func (s *subnet) hostAddress(a netip.Addr) bool {
	if !s.cidr.Contains(a) || a == s.cidr.Addr() {
		return false
	}
	if s.ipVersion() == 6 {
		return true
	}
	size := uint32(1) << (32 - s.cidr.Bits())
	return a != addrAt(s.cidr, size-1)
}

// allocateIP takes the next free address of s, skipping the network,
// gateway and (IPv4) broadcast addresses. Callers hold e.mu.
func (e *Emulator) allocateIP(s *subnet) (netip.Addr, error) {
	first, last := uint32(2), s.lastOffset()
	for range last - first + 1 {
		off := s.nextOffset
		if off < first || off > last {
			off = first
		}
		s.nextOffset = off + 1
		a := addrAt(s.cidr, off)
		if !s.used[a] {
			s.used[a] = true
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("no more IP addresses available on subnet %s (%s)", s.id, s.cidr)
}

func (e *Emulator) releaseIP(subnetID string, a netip.Addr) {
	if s, ok := e.subnets.Get(subnetID); ok {
		delete(s.used, a)
	}
}

// eui64 is the address of a port with mac on an auto-address subnet:
// the /64 prefix, then the MAC as a modified EUI-64 interface ID
// (ff:fe in the middle, the universal/local bit flipped), as oslo's
// netutils.get_ipv6_addr_by_EUI64 computes it.
func eui64(prefix netip.Prefix, mac string) (netip.Addr, error) {
	hw, err := net.ParseMAC(mac)
	if err != nil || len(hw) != 6 {
		return netip.Addr{}, fmt.Errorf("MAC %q is not an EUI-48 address", mac)
	}
	b := prefix.Masked().Addr().As16()
	copy(b[8:], []byte{hw[0] ^ 0x02, hw[1], hw[2], 0xff, 0xfe, hw[3], hw[4], hw[5]})
	return netip.AddrFrom16(b), nil
}

// routerOwner reports a router's port, which gets no EUI-64 address
// (ipam_pluggable_backend._get_auto_address_ips: ROUTER_INTERFACE_OWNERS_SNAT).
func routerOwner(deviceOwner string) bool {
	return deviceOwner == ownerRouterInterface || deviceOwner == ownerRouterGateway ||
		deviceOwner == "network:router_interface_distributed" || deviceOwner == "network:router_centralized_snat" ||
		deviceOwner == "network:ha_router_replicated_interface"
}

// addAutoAddress gives p its EUI-64 address on the auto-address subnet
// s, unless it has an address there. Callers hold e.mu.
func (e *Emulator) addAutoAddress(p *port, s *subnet) error {
	if slices.ContainsFunc(p.allocations(), func(x ipAlloc) bool { return x.subnetID == s.id && x.ip.IsValid() }) {
		return nil
	}
	a, err := eui64(s.cidr, p.mac)
	if err != nil {
		return err
	}
	if s.used[a] {
		return fmt.Errorf("EUI-64 address %s of MAC %s already allocated in subnet %s", a, p.mac, s.id)
	}
	s.used[a] = true
	if p.subnetID == s.id {
		p.fixedIP = a
	} else {
		p.moreIPs = append(p.moreIPs, ipAlloc{s.id, a})
	}
	return nil
}

// addAutoAddresses gives a port that is not a router's its EUI-64
// address on every auto-address subnet of its network, as Neutron does
// whatever fixed_ips asked for (ipam_pluggable_backend.py:248-305);
// on an auto-address first subnet that is its first address. Callers
// hold e.mu.
func (e *Emulator) addAutoAddresses(p *port) error {
	if routerOwner(p.deviceOwner) {
		return nil
	}
	n, ok := e.networks.Get(p.networkID)
	if !ok {
		return nil
	}
	for _, sid := range n.subnetIDs {
		if s, ok := e.subnets.Get(sid); ok && s.autoAddress() {
			if err := e.addAutoAddress(p, s); err != nil {
				return err
			}
		}
	}
	return nil
}

// releasePort frees every fixed IP of a port. Callers hold e.mu.
func (e *Emulator) releasePort(p *port) {
	for _, a := range p.allocations() {
		if a.ip.IsValid() {
			e.releaseIP(a.subnetID, a.ip)
		}
	}
}

// createPort makes a port with a fixed IP on subnetID for a server
// (plus the EUI-64 ones Neutron adds; on an auto-address subnetID that
// is its first address). Ports of devices Neutron does not own get the
// project's default security group, as Neutron gives every port
// created without security_groups. Callers hold e.mu.
func (e *Emulator) createPort(subnetID, projectID, deviceID, deviceOwner string) (*port, error) {
	s, ok := e.subnets.Get(subnetID)
	if !ok {
		return nil, fmt.Errorf("unknown subnet %q", subnetID)
	}
	var ip netip.Addr
	if !s.autoAddress() || routerOwner(deviceOwner) {
		var err error
		if ip, err = e.allocateIP(s); err != nil {
			return nil, err
		}
	}
	p := e.newPort(s, ip, projectID, deviceID, deviceOwner)
	if err := e.addAutoAddresses(p); err != nil {
		e.releasePort(p)
		return nil, err
	}
	if !trustedOwner(deviceOwner) && p.portSecurity {
		if sg := e.ensureDefaultSecurityGroup(projectID); sg != nil {
			p.securityGroups = []string{sg.id}
		}
	}
	e.ports.Put(p)
	return p, nil
}

// newPort builds a port with ip, which the caller has taken on s, and
// no security groups. Callers hold e.mu.
func (e *Emulator) newPort(s *subnet, ip netip.Addr, projectID, deviceID, deviceOwner string) *port {
	seq := e.nextSeq()
	portSecurity := true
	if n, ok := e.networks.Get(s.networkID); ok {
		portSecurity = n.portSecurity
	}
	return &port{
		id: e.ids.uuid(), networkID: s.networkID, subnetID: s.id, projectID: projectID,
		// fa:16:3e is Neutron's default base MAC.
		mac:     fmt.Sprintf("fa:16:3e:%02x:%02x:%02x", byte(seq>>16), byte(seq>>8), byte(seq)),
		fixedIP: ip, deviceID: deviceID, deviceOwner: deviceOwner,
		adminStateUp: true, portSecurity: portSecurity, std: newStdAttrs(e.now()),
	}
}

// addFixedIP gives p a further fixed IP on subnetID, a subnet of its
// network it has none on. Callers hold e.mu.
func (e *Emulator) addFixedIP(p *port, subnetID string) error {
	s, ok := e.subnets.Get(subnetID)
	if !ok || s.networkID != p.networkID {
		return fmt.Errorf("subnet %q is not on the network %s of port %s", subnetID, p.networkID, p.id)
	}
	if slices.ContainsFunc(p.allocations(), func(x ipAlloc) bool { return x.subnetID == s.id }) {
		return nil
	}
	ip, err := e.allocateIP(s)
	if err != nil {
		return err
	}
	p.moreIPs = append(p.moreIPs, ipAlloc{s.id, ip})
	return nil
}

// deletePort removes a port, its address and any floating IP's
// association with it (the floating IP itself stays, as in Neutron).
func (e *Emulator) deletePort(id string) {
	p, ok := e.ports.Get(id)
	if !ok {
		return
	}
	e.releasePort(p)
	if f := e.fipByPort[id]; f != nil {
		e.associateFloatingIP(f, "")
		f.std.bump(e.now())
	}
	e.ports.Delete(id)
}

// createFloatingIP allocates a floating IP on the external network and
// associates it with portID (when not ""). Callers hold e.mu.
func (e *Emulator) createFloatingIP(extNetworkID, projectID, portID string) (*floatingIP, error) {
	n, ok := e.networks.Get(extNetworkID)
	if !ok || !n.external || len(n.subnetIDs) == 0 {
		return nil, fmt.Errorf("no external network %q with a subnet", extNetworkID)
	}
	s, _ := e.subnets.Get(n.subnetIDs[0])
	ip, err := e.allocateIP(s)
	if err != nil {
		return nil, err
	}
	f := &floatingIP{id: e.ids.uuid(), address: ip, networkID: n.id, projectID: projectID, std: newStdAttrs(e.now())}
	e.floatingIPs.Put(f)
	e.associateFloatingIP(f, portID)
	return f, nil
}

// deleteFloatingIP releases a floating IP's address and removes it.
// Callers hold e.mu.
func (e *Emulator) deleteFloatingIP(id string) {
	f, ok := e.floatingIPs.Get(id)
	if !ok {
		return
	}
	if n, ok := e.networks.Get(f.networkID); ok {
		for _, sid := range n.subnetIDs {
			if s, ok := e.subnets.Get(sid); ok && s.cidr.Contains(f.address) {
				e.releaseIP(sid, f.address)
			}
		}
	}
	e.associateFloatingIP(f, "")
	e.floatingIPs.Delete(id)
}

// associateFloatingIP points f at portID ("" disassociates), keeping
// the port index that server views read, the fixed IP it maps to and
// the router that serves it. Every association change must go through
// it; callers bump f's revision when the change is an update. Callers
// hold e.mu.
func (e *Emulator) associateFloatingIP(f *floatingIP, portID string) {
	if f.portID != "" && e.fipByPort[f.portID] == f {
		delete(e.fipByPort, f.portID)
	}
	f.portID, f.fixedIP, f.routerID = portID, netip.Addr{}, ""
	if portID == "" {
		return
	}
	e.fipByPort[portID] = f
	if p, ok := e.ports.Get(portID); ok {
		// A floating IP maps to the port's IPv4 address
		// (l3_db._internal_fip_assoc_data); callers made sure it has one.
		if v4 := p.ipv4(); len(v4) > 0 {
			f.fixedIP = v4[0].ip
			if r := e.routerForFloatingIP(v4[0].subnetID, f.networkID); r != nil {
				f.routerID = r.id
			}
		}
	}
}

// floatingIPOf is the floating IP associated with a port, if any.
func (e *Emulator) floatingIPOf(portID string) *floatingIP {
	if portID == "" {
		return nil
	}
	return e.fipByPort[portID]
}
