package openstack

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// The network model: networks, subnets, ports and floating IPs, as
// Neutron holds them. Nova reads it for server addresses; the Neutron
// emulator will serve it.

type network struct {
	id, name  string
	projectID string
	external  bool
	subnetIDs []string
}

type subnet struct {
	id, name   string
	networkID  string
	projectID  string
	cidr       netip.Prefix
	gateway    netip.Addr
	used       map[netip.Addr]bool
	nextOffset uint32 // where the next allocation search starts
}

type port struct {
	id          string
	networkID   string
	subnetID    string
	projectID   string
	mac         string
	fixedIP     netip.Addr
	deviceID    string // the server's ID
	deviceOwner string // "compute:<zone>"
}

type floatingIP struct {
	id        string
	address   netip.Addr
	networkID string // the external network
	projectID string
	portID    string // "" when unassociated
}

// createNetwork adds a network. Callers hold e.mu.
func (e *Emulator) createNetwork(name, projectID string, external bool) *network {
	n := &network{id: e.ids.uuid(), name: name, projectID: projectID, external: external}
	e.networks.Put(n)
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
	}
	e.subnets.Put(s)
	n.subnetIDs = append(n.subnetIDs, s.id)
	return s, nil
}

// addrAt is the address offset hosts into prefix.
func addrAt(p netip.Prefix, offset uint32) netip.Addr {
	b := p.Addr().As4()
	v := binary.BigEndian.Uint32(b[:]) + offset
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b)
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
// Callers hold e.mu.
func (e *Emulator) createPort(subnetID, projectID, deviceID, deviceOwner string) (*port, error) {
	s, ok := e.subnets.Get(subnetID)
	if !ok {
		return nil, fmt.Errorf("unknown subnet %q", subnetID)
	}
	ip, err := e.allocateIP(s)
	if err != nil {
		return nil, err
	}
	seq := e.nextSeq()
	p := &port{
		id: e.ids.uuid(), networkID: s.networkID, subnetID: s.id, projectID: projectID,
		// fa:16:3e is Neutron's default base MAC.
		mac:     fmt.Sprintf("fa:16:3e:%02x:%02x:%02x", byte(seq>>16), byte(seq>>8), byte(seq)),
		fixedIP: ip, deviceID: deviceID, deviceOwner: deviceOwner,
	}
	e.ports.Put(p)
	return p, nil
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
	f := &floatingIP{id: e.ids.uuid(), address: ip, networkID: n.id, projectID: projectID}
	e.floatingIPs.Put(f)
	e.associateFloatingIP(f, portID)
	return f, nil
}

func (e *Emulator) deleteFloatingIP(id string) {
	f, ok := e.floatingIPs.Get(id)
	if !ok {
		return
	}
	if n, ok := e.networks.Get(f.networkID); ok && len(n.subnetIDs) > 0 {
		e.releaseIP(n.subnetIDs[0], f.address)
	}
	e.associateFloatingIP(f, "")
	e.floatingIPs.Delete(id)
}

// associateFloatingIP points f at portID ("" disassociates), keeping
// the port index that server views read. Every association change must
// go through it. Callers hold e.mu.
func (e *Emulator) associateFloatingIP(f *floatingIP, portID string) {
	if f.portID != "" && e.fipByPort[f.portID] == f {
		delete(e.fipByPort, f.portID)
	}
	f.portID = portID
	if portID != "" {
		e.fipByPort[portID] = f
	}
}

// floatingIPOf is the floating IP associated with a port, if any.
func (e *Emulator) floatingIPOf(portID string) *floatingIP {
	if portID == "" {
		return nil
	}
	return e.fipByPort[portID]
}
