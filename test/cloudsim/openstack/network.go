package openstack

import (
	"encoding/binary"
	"fmt"
	"net/netip"
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
	std        stdAttrs
}

type port struct {
	id          string
	name        string
	networkID   string
	subnetID    string
	projectID   string
	mac         string
	fixedIP     netip.Addr
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

// createSubnet adds an IPv4 subnet whose first address is the gateway.
// Callers hold e.mu.
func (e *Emulator) createSubnet(networkID, name, projectID string, cidr netip.Prefix) (*subnet, error) {
	n, ok := e.networks.Get(networkID)
	if !ok {
		return nil, fmt.Errorf("unknown network %q", networkID)
	}
	if !cidr.Addr().Is4() || cidr.Bits() > 29 {
		return nil, fmt.Errorf("subnet CIDR %s must be IPv4, /29 or larger", cidr)
	}
	cidr = cidr.Masked()
	s := &subnet{
		id: e.ids.uuid(), name: name, networkID: networkID, projectID: projectID, cidr: cidr,
		gateway: addrAt(cidr, 1), used: map[netip.Addr]bool{},
		// Neutron hands out addresses from .2 on; devstack's DHCP and
		// router ports take the first few, so servers start at .10.
		nextOffset: 10,
		std:        newStdAttrs(e.now()),
	}
	e.subnets.Put(s)
	n.subnetIDs = append(n.subnetIDs, s.id)
	// Adding a subnet changes the network's "subnets".
	n.std.bump(e.now())
	return s, nil
}

// addrAt is the address offset hosts into prefix.
func addrAt(p netip.Prefix, offset uint32) netip.Addr {
	b := p.Addr().As4()
	v := binary.BigEndian.Uint32(b[:]) + offset
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b)
}

// hostAddress reports whether a is an address of s a port may have:
// inside it, neither its network nor its broadcast address
// (ipam.utils.check_subnet_ip).
func (s *subnet) hostAddress(a netip.Addr) bool {
	size := uint32(1) << (32 - s.cidr.Bits())
	return s.cidr.Contains(a) && a != s.cidr.Addr() && a != addrAt(s.cidr, size-1)
}

// allocateIP takes the next free address of s, skipping the network,
// gateway and broadcast addresses. Callers hold e.mu.
func (e *Emulator) allocateIP(s *subnet) (netip.Addr, error) {
	size := uint32(1) << (32 - s.cidr.Bits())
	first, last := uint32(2), size-2
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

// createPort makes a port with a fixed IP on subnetID for a server.
// Ports of devices Neutron does not own get the project's default
// security group, as Neutron gives every port created without
// security_groups. Callers hold e.mu.
func (e *Emulator) createPort(subnetID, projectID, deviceID, deviceOwner string) (*port, error) {
	s, ok := e.subnets.Get(subnetID)
	if !ok {
		return nil, fmt.Errorf("unknown subnet %q", subnetID)
	}
	ip, err := e.allocateIP(s)
	if err != nil {
		return nil, err
	}
	p := e.newPort(s, ip, projectID, deviceID, deviceOwner)
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

// deletePort removes a port, its address and any floating IP's
// association with it (the floating IP itself stays, as in Neutron).
func (e *Emulator) deletePort(id string) {
	p, ok := e.ports.Get(id)
	if !ok {
		return
	}
	e.releaseIP(p.subnetID, p.fixedIP)
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
		f.fixedIP = p.fixedIP
		if r := e.routerForFloatingIP(p, f.networkID); r != nil {
			f.routerID = r.id
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
