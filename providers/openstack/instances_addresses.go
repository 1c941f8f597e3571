package openstack

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/url"
	"slices"
	"sort"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	v1 "k8s.io/api/core/v1"
)

// A Node's addresses, computed as the upstream CCM's nodeAddresses does
// (kubernetes/cloud-provider-openstack pkg/openstack/instances_addresses.go:142-293),
// so a Node keeps its InternalIPs and ExternalIPs, in the same order,
// after the switch: kube-proxy, the kubelet's node IP and routes use the
// first InternalIP. Two things differ, both for cost:
//   - Upstream lists the server's Neutron ports on every InstanceMetadata
//     call. Here the ports are read only for servers that have more than
//     one fixed address, where their order decides which InternalIP comes
//     first, in one listing per batch of up to maxDevicesPerPortFilter
//     servers. A server with one fixed address is taken to have it on one
//     ACTIVE port, which is what the listing would say unless the port is
//     DOWN (upstream then moves the address after the access IPs).
//   - Trunk subports' addresses (upstream reads each with two GETs) are
//     not reported.
// And, as before, a server without upstream's "hostname" metadata key
// gets its name as Hostname, last.

// metadataHostname is the server metadata key upstream reads the
// Hostname address from (pkg/openstack/openstack.go:55).
const metadataHostname = "hostname"

// maxDevicesPerPortFilter caps the servers one port listing asks for: a
// repeated device_id filter of UUIDs, keeping the URL under 8 KiB.
const maxDevicesPerPortFilter = 100

// attachedPort is the part of a server's Neutron port its Node's
// addresses come from.
type attachedPort struct {
	DeviceID string `json:"device_id"`
	Status   string `json:"status"`
	FixedIPs []struct {
		IPAddress string `json:"ip_address"`
	} `json:"fixed_ips"`
}

// fixedAddresses counts the server's fixed (non-floating) addresses.
func (s *novaServer) fixedAddresses() int {
	n := 0
	for _, list := range s.Addresses {
		for _, a := range list {
			if a.Type != "floating" {
				n++
			}
		}
	}
	return n
}

// needsPorts reports whether the server's ports can change its Node's
// addresses: only their order among several fixed addresses can.
func (s *novaServer) needsPorts() bool { return s.fixedAddresses() > 1 }

// assumedPorts stands for the ports of a server that needsPorts does
// not: its fixed address (if any) on one ACTIVE port.
func (s *novaServer) assumedPorts() []attachedPort {
	var p attachedPort
	for _, list := range s.Addresses {
		for _, a := range list {
			if a.Type != "floating" {
				p.FixedIPs = append(p.FixedIPs, struct {
					IPAddress string `json:"ip_address"`
				}{a.Addr})
			}
		}
	}
	if len(p.FixedIPs) == 0 {
		return nil
	}
	p.DeviceID, p.Status = s.ID, "ACTIVE"
	return []attachedPort{p}
}

// listAttachedPorts lists the ports of the servers ids, in Neutron's
// order, by server: one listing per maxDevicesPerPortFilter servers, as
// upstream's getAttachedPorts (instances.go:237-255) lists one server's.
func listAttachedPorts(ctx context.Context, network *gophercloud.ServiceClient, ids []string) (map[string][]attachedPort, error) {
	out := map[string][]attachedPort{}
	for chunk := range slices.Chunk(ids, maxDevicesPerPortFilter) {
		pages, err := ports.List(network, portsOfDevices(chunk)).AllPages(ctx)
		if err != nil {
			return nil, fmt.Errorf("list the ports of servers %v: %w", chunk, err)
		}
		var list []attachedPort
		if err := ports.ExtractPortsInto(pages, &list); err != nil {
			return nil, fmt.Errorf("list the ports of servers %v: %w", chunk, err)
		}
		for _, p := range list {
			out[p.DeviceID] = append(out[p.DeviceID], p)
		}
	}
	return out, nil
}

// portsOfDevices lists the ports of several devices in one call: Neutron
// takes a repeated filter as "any of" (gophercloud's ListOpts takes one
// device), and only the fields the addresses need are asked for.
type portsOfDevices []string

// ToPortListQuery implements ports.ListOptsBuilder.
func (ids portsOfDevices) ToPortListQuery() (string, error) {
	q := url.Values{}
	for _, id := range ids {
		q.Add("device_id", id)
	}
	for _, f := range []string{"device_id", "status", "fixed_ips"} {
		q.Add("fields", f)
	}
	return "?" + q.Encode(), nil
}

// nodeAddresses is upstream's nodeAddresses, step by step: the ports'
// fixed addresses (ACTIVE ports only) as InternalIPs, the access IPs as
// ExternalIPs, the "hostname" metadata as Hostname, then Nova's
// addresses network by network in name order (floating ones ExternalIPs;
// fixed ones ExternalIPs on publicNetworkNames, InternalIPs on
// internalNetworkNames or any network when it is empty, else left out
// even where a port put them), then sorted by addressSortOrder. IPv6
// addresses are left out with ipv6SupportDisabled.
//
// IPv6 is treated as upstream treats it, checked line by line against
// kubernetes/cloud-provider-openstack@c453fb7c
// pkg/openstack/instances_addresses.go: a port's IPv6 fixed IPs are
// InternalIPs in Neutron's fixed_ips order (:151-166; Neutron orders them
// by their text, so 10.0.0.5 comes before fd00::5 but 2001:db8::5
// before 203.0.113.5); accessIPv6 is an ExternalIP after accessIPv4
// (:169-185); ipv6SupportDisabled is applied to the ports' addresses and
// again to Nova's (:156-157, :275-283), never to the hostname; the
// sort order takes IPv6 CIDRs like IPv4 ones (:59-104).
func nodeAddresses(s *novaServer, attached []attachedPort, opts *NetworkingSection) []v1.NodeAddress {
	addrs := []v1.NodeAddress{}
	keepIP := func(a string) bool { return !isIPv6(a) || !opts.IPv6SupportDisabled }

	// upstream :151-166
	for _, p := range attached {
		if p.Status != "ACTIVE" {
			continue
		}
		for _, ip := range p.FixedIPs {
			if keepIP(ip.IPAddress) {
				addAddress(&addrs, v1.NodeInternalIP, ip.IPAddress)
			}
		}
	}
	// upstream :169-194
	if s.AccessIPv4 != "" {
		addAddress(&addrs, v1.NodeExternalIP, s.AccessIPv4)
	}
	if s.AccessIPv6 != "" && !opts.IPv6SupportDisabled {
		addAddress(&addrs, v1.NodeExternalIP, s.AccessIPv6)
	}
	if h := s.Metadata[metadataHostname]; h != "" {
		addAddress(&addrs, v1.NodeHostName, h)
	}

	// upstream :241-285 (trunk subports, :208-239, are not read)
	nets := make([]string, 0, len(s.Addresses))
	for n := range s.Addresses {
		nets = append(nets, n)
	}
	sort.Strings(nets)
	for _, n := range nets {
		for _, a := range s.Addresses[n] {
			var typ v1.NodeAddressType
			switch {
			case a.Type == "floating":
				typ = v1.NodeExternalIP
			case slices.Contains(opts.PublicNetworkNames, n):
				typ = v1.NodeExternalIP
				// A port put it in as an InternalIP: it is only
				// an ExternalIP.
				removeAddress(&addrs, a.Addr)
			case len(opts.InternalNetworkNames) == 0 || slices.Contains(opts.InternalNetworkNames, n):
				typ = v1.NodeInternalIP
			default:
				removeAddress(&addrs, a.Addr)
				continue
			}
			if keepIP(a.Addr) {
				addAddress(&addrs, typ, a.Addr)
			}
		}
	}
	// upstream :287-289
	if len(opts.AddressSortOrder) > 0 {
		sortAddresses(addrs, opts.AddressSortOrder)
	}
	if !slices.ContainsFunc(addrs, func(a v1.NodeAddress) bool { return a.Type == v1.NodeHostName }) && s.Name != "" {
		addrs = append(addrs, v1.NodeAddress{Type: v1.NodeHostName, Address: s.Name})
	}
	return addrs
}

// isIPv6 is upstream's test (:156, :224, :275): anything that is not an
// IPv4 address, so an IPv4-mapped ::ffff:a.b.c.d is IPv4 and a string
// that is no address at all is "IPv6".
func isIPv6(a string) bool { return net.ParseIP(a).To4() == nil }

// addAddress appends the address unless the list has it with that type
// (upstream's addToNodeAddresses).
func addAddress(addrs *[]v1.NodeAddress, typ v1.NodeAddressType, a string) {
	na := v1.NodeAddress{Type: typ, Address: a}
	if !slices.Contains(*addrs, na) {
		*addrs = append(*addrs, na)
	}
}

// removeAddress drops the address whatever its type (upstream's
// removeFromNodeAddresses with an empty type).
func removeAddress(addrs *[]v1.NodeAddress, a string) {
	*addrs = slices.DeleteFunc(*addrs, func(na v1.NodeAddress) bool { return na.Address == a })
}

// sortAddresses is upstream's sortNodeAddresses: a stable sort by the
// index of the first CIDR that holds the address (earlier first),
// ascending by address among those of one CIDR; addresses in none, and
// hostnames, keep their order after them. net (not netip) as upstream:
// IPNet.Contains never puts an IPv4 address in an IPv6 CIDR such as ::/0
// (but does in ::ffff:0:0/96), and the ascending order compares the
// 16-byte forms, so fd00::9 sorts before fd00::10.
// upstream: kubernetes/cloud-provider-openstack pkg/openstack/instances_addresses.go:41-104
func sortAddresses(addrs []v1.NodeAddress, order []string) {
	var cidrs []*net.IPNet
	for _, c := range order {
		// Validate refuses malformed CIDRs; upstream skips them.
		if _, n, err := net.ParseCIDR(c); err == nil {
			cidrs = append(cidrs, n)
		}
	}
	priority := func(a string) int {
		ip := net.ParseIP(a)
		if ip == nil {
			return 0
		}
		for i, n := range cidrs {
			if n.Contains(ip) {
				return len(cidrs) - i
			}
		}
		return 0
	}
	sort.SliceStable(addrs, func(i, j int) bool {
		pi, pj := priority(addrs[i].Address), priority(addrs[j].Address)
		if pi > 0 && pi == pj {
			return bytes.Compare(net.ParseIP(addrs[i].Address), net.ParseIP(addrs[j].Address)) < 0
		}
		return pi > pj
	})
}
