package aws

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// Network interfaces, with what EC2 lets an interface hold beyond its
// primary address: prefixes delegated to it (IPv4 /28s from the subnet's
// IPv4 range, IPv6 /80s from its IPv6 /64) and IPv6 addresses. Node IPAM
// controllers (kops-controller, Gardener's aws-ipam-controller) make an
// instance's delegated prefixes its Node's pod CIDRs, reading them from
// DescribeInstances and asking for them with AssignIpv6Addresses
// (Ipv6PrefixCount) and AssignPrivateIpAddresses (Ipv4PrefixCount).
//
// Every instance has one interface, its primary (device index 0), made
// at launch and deleted at termination (DeleteOnTermination), which
// releases everything it holds. Load balancers' interfaces are not
// modelled here: DescribeNetworkInterfaces lists instances' alone.

const (
	ipv4PrefixBits = 28
	ipv4PrefixSize = 1 << (32 - ipv4PrefixBits) // addresses in a /28
	ipv6PrefixBits = 80
	subnetIPv6Bits = 64
	vpcIPv6Bits    = 56
	// lastIPv6Block is the index of a /64's last /80: like the first, it
	// holds an address AWS reserves, so neither is ever delegated.
	lastIPv6Block = 1<<(ipv6PrefixBits-subnetIPv6Bits) - 1
)

type networkInterface struct {
	id         string
	instanceID string
	subnetID   string
	tags       map[string]string
	// In assignment order, which is the order EC2 lists them in.
	ipv4Prefixes []netip.Prefix
	ipv6Prefixes []netip.Prefix
	ipv6Addrs    []netip.Addr
}

var eniIDPattern = regexp.MustCompile(`^eni-([0-9a-f]{8}|[0-9a-f]{17})$`)

var notFoundInterfaces = notFound{"InvalidNetworkInterfaceID.NotFound", "The networkInterface ID %s does not exist"}

// interfaceParam validates a network interface ID and looks it up, with
// EC2's distinction between malformed and unknown IDs.
func (e *Emulator) interfaceParam(id string) (*networkInterface, error) {
	if id == "" {
		return nil, missing("NetworkInterfaceId")
	}
	if !eniIDPattern.MatchString(id) {
		return nil, apiErr("InvalidNetworkInterfaceID.Malformed", "Invalid id: %q (expecting \"eni-...\")", id)
	}
	n, ok := e.networkInterfaces.Get(id)
	if !ok {
		return nil, apiErr(notFoundInterfaces.code, notFoundInterfaces.format, quoteList([]string{id}))
	}
	return n, nil
}

// createInterface records inst's primary interface, whose ID launch
// already chose (instances report it as eniID).
func (e *Emulator) createInterface(inst *instance) *networkInterface {
	n := &networkInterface{id: inst.eniID, instanceID: inst.id, subnetID: inst.subnetID, tags: map[string]string{}}
	e.networkInterfaces.Put(n)
	return n
}

// deleteInterface deletes inst's interface as termination does, giving
// its prefixes and IPv6 addresses back to the subnet.
func (e *Emulator) deleteInterface(inst *instance) {
	n, ok := e.networkInterfaces.Get(inst.eniID)
	if !ok {
		return
	}
	if s, ok := e.subnets.Get(n.subnetID); ok {
		for _, p := range n.ipv4Prefixes {
			delete(s.ipv4Prefixes, p)
		}
		for _, p := range n.ipv6Prefixes {
			delete(s.ipv6Prefixes, p)
		}
		for _, a := range n.ipv6Addrs {
			delete(s.ipv6Addrs, a)
		}
	}
	e.networkInterfaces.Delete(n.id)
}

func (n *networkInterface) holdIPv4Prefix(s *subnet, p netip.Prefix) {
	s.ipv4Prefixes[p] = n.id
	n.ipv4Prefixes = append(n.ipv4Prefixes, p)
}

func (n *networkInterface) holdIPv6Prefix(s *subnet, p netip.Prefix) {
	s.ipv6Prefixes[p] = n.id
	n.ipv6Prefixes = append(n.ipv6Prefixes, p)
}

func (n *networkInterface) holdIPv6Addr(s *subnet, a netip.Addr) {
	s.ipv6Addrs[a] = n.id
	n.ipv6Addrs = append(n.ipv6Addrs, a)
}

func (n *networkInterface) releaseIPv4Prefix(s *subnet, p netip.Prefix) {
	delete(s.ipv4Prefixes, p)
	n.ipv4Prefixes = slices.DeleteFunc(n.ipv4Prefixes, func(q netip.Prefix) bool { return q == p })
}

func (n *networkInterface) releaseIPv6Prefix(s *subnet, p netip.Prefix) {
	delete(s.ipv6Prefixes, p)
	n.ipv6Prefixes = slices.DeleteFunc(n.ipv6Prefixes, func(q netip.Prefix) bool { return q == p })
}

func (n *networkInterface) releaseIPv6Addr(s *subnet, a netip.Addr) {
	delete(s.ipv6Addrs, a)
	n.ipv6Addrs = slices.DeleteFunc(n.ipv6Addrs, func(b netip.Addr) bool { return b == a })
}

// podRanges are the interface's prefixes as InstanceInfo.PodRanges
// reports them: IPv4 first, then IPv6, each in assignment order.
func (n *networkInterface) podRanges() []string {
	var out []string
	for _, p := range n.ipv4Prefixes {
		out = append(out, p.String())
	}
	for _, p := range n.ipv6Prefixes {
		out = append(out, p.String())
	}
	return out
}

// --- IPv6 CIDR blocks ---

// associateVPCIPv6 gives v an Amazon-provided /56. The blocks come from
// 2001:db8::/32, the documentation range (as public IPv4 addresses come
// from shared address space): realistic-looking, nobody's real network.
func (e *Emulator) associateVPCIPv6(v *vpc) error {
	if v.ipv6CIDR.IsValid() {
		return fmt.Errorf("VPC %s already has the IPv6 CIDR block %s", v.id, v.ipv6CIDR)
	}
	e.ipv6Blocks++
	n := e.ipv6Blocks
	b := [16]byte{0x20, 0x01, 0x0d, 0xb8, byte(n >> 16), byte(n >> 8), byte(n)}
	v.ipv6CIDR = netip.PrefixFrom(netip.AddrFrom16(b), vpcIPv6Bits)
	// Every route table of the VPC gets the local route of the new block.
	for _, rt := range e.routeTables.All() {
		if rt.vpcID == v.id {
			rt.routes = append(rt.routes, &route{destination: v.ipv6CIDR.String(), gatewayID: "local", origin: "CreateRouteTable"})
		}
	}
	return nil
}

// nthSubnetIPv6 is the i-th /64 of a VPC's /56.
func nthSubnetIPv6(vpcBlock netip.Prefix, i int) netip.Prefix {
	b := vpcBlock.Addr().As16()
	b[7] = byte(i)
	return netip.PrefixFrom(netip.AddrFrom16(b), subnetIPv6Bits)
}

// checkSubnetIPv6 checks a requested subnet IPv6 block the way
// CreateSubnet does: a /64 of the VPC's block that no other subnet has.
func (e *Emulator) checkSubnetIPv6(v *vpc, cidr netip.Prefix) error {
	if !v.ipv6CIDR.IsValid() || !cidr.Addr().Is6() || cidr.Addr().Is4In6() || cidr.Bits() != subnetIPv6Bits ||
		cidr != cidr.Masked() || !v.ipv6CIDR.Contains(cidr.Addr()) {
		return apiErr("InvalidSubnet.Range", "The IPv6 CIDR '%s' is invalid.", cidr)
	}
	for _, s := range e.subnets.All() {
		if s.vpcID == v.id && s.ipv6CIDR == cidr {
			return apiErr("InvalidSubnet.Conflict", "The IPv6 CIDR '%s' conflicts with another subnet", cidr)
		}
	}
	return nil
}

// The association IDs are derived from the VPC's or subnet's own, so
// that giving the fixture IPv6 took no sequence numbers and every other
// ID stayed what it was. The VPC's IPv4 association already uses its ID
// as is; the IPv6 one's first digit is changed to tell them apart.
func vpcIPv6AssociationID(vpcID string) string { return "vpc-cidr-assoc-6" + vpcID[5:] }

func subnetIPv6AssociationID(subnetID string) string {
	return "subnet-cidr-assoc-" + strings.TrimPrefix(subnetID, "subnet-")
}

// --- choosing prefixes and addresses ---

// ipv4Block is the i-th /28 of the subnet.
func (s *subnet) ipv4Block(i uint32) netip.Prefix {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], binary.BigEndian.Uint32(s.cidr.Addr().AsSlice())+i*ipv4PrefixSize)
	return netip.PrefixFrom(netip.AddrFrom4(b), ipv4PrefixBits)
}

// ipv4Blocks is how many /28s the subnet has.
func (s *subnet) ipv4Blocks() uint32 { return 1 << (ipv4PrefixBits - s.cidr.Bits()) }

// ipv4BlockReserved reports whether p holds one of the addresses AWS
// reserves (the first four and the last of the subnet).
func (s *subnet) ipv4BlockReserved(p netip.Prefix) bool {
	return p == s.ipv4Block(0) || p == s.ipv4Block(s.ipv4Blocks()-1)
}

// ipv4PrefixHolder is the interface holding the /28 addr is in, or "".
func (s *subnet) ipv4PrefixHolder(addr netip.Addr) string {
	if len(s.ipv4Prefixes) == 0 {
		return ""
	}
	return s.ipv4Prefixes[netip.PrefixFrom(addr, ipv4PrefixBits).Masked()]
}

// ipv4BusyBlocks are the /28s of s that cannot be delegated: those
// delegated already and those holding an address in use (an instance's,
// a load balancer's, a pinned one). Addresses of terminated instances
// are free again, as on EC2.
func (e *Emulator) ipv4BusyBlocks(s *subnet) map[netip.Prefix]bool {
	busy := map[netip.Prefix]bool{}
	mark := func(ip string) {
		if a, err := netip.ParseAddr(ip); err == nil && s.cidr.Contains(a) {
			busy[netip.PrefixFrom(a, ipv4PrefixBits).Masked()] = true
		}
	}
	for _, i := range e.instances.All() {
		if i.subnetID == s.id {
			mark(i.privateIP)
		}
	}
	for _, lb := range e.loadBalancers.All() {
		if m, ok := lb.mappings[s.id]; ok {
			mark(m.privateIP)
		}
	}
	for ip := range s.pinned {
		mark(ip)
	}
	for p := range s.ipv4Prefixes {
		busy[p] = true
	}
	return busy
}

var errInsufficientCidrBlocks = apiErr("InsufficientCidrBlocks", "The specified subnet does not have enough free cidr blocks to satisfy the request.")

// freeIPv4Prefixes picks the n lowest /28s of s that are neither
// reserved nor busy, and marks them busy. EC2 documents no order; lowest
// first keeps results predictable.
func (s *subnet) freeIPv4Prefixes(n int, busy map[netip.Prefix]bool) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for i := uint32(0); i < s.ipv4Blocks() && len(out) < n; i++ {
		if p := s.ipv4Block(i); !busy[p] && !s.ipv4BlockReserved(p) {
			out = append(out, p)
		}
	}
	if len(out) < n {
		return nil, errInsufficientCidrBlocks
	}
	for _, p := range out {
		busy[p] = true
	}
	return out, nil
}

// checkIPv4Prefix checks a requested IPv4 prefix (Ipv4Prefix.N) and
// marks it busy.
func (s *subnet) checkIPv4Prefix(raw string, busy map[netip.Prefix]bool) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(raw)
	switch {
	case err != nil || !p.Addr().Is4() || p.Bits() != ipv4PrefixBits || p != p.Masked():
		return netip.Prefix{}, invalidValue("Ipv4Prefix", raw, "Expecting an IPv4 /28 CIDR block with no host bits set.")
	case !s.cidr.Contains(p.Addr()):
		return netip.Prefix{}, invalidValue("Ipv4Prefix", raw, fmt.Sprintf("The prefix is not within the CIDR block %s of subnet %s.", s.cidr, s.id))
	case s.ipv4BlockReserved(p):
		return netip.Prefix{}, invalidValue("Ipv4Prefix", raw, fmt.Sprintf("The prefix holds addresses reserved in subnet %s.", s.id))
	case busy[p]:
		return netip.Prefix{}, invalidValue("Ipv4Prefix", raw, fmt.Sprintf("The prefix is already in use in subnet %s.", s.id))
	}
	busy[p] = true
	return p, nil
}

// ipv6BlockIndex is which /80 of the subnet's /64 an address is in.
func ipv6BlockIndex(a netip.Addr) uint16 {
	b := a.As16()
	return binary.BigEndian.Uint16(b[8:10])
}

func (s *subnet) ipv6Block(k uint16) netip.Prefix {
	b := s.ipv6CIDR.Addr().As16()
	binary.BigEndian.PutUint16(b[8:10], k)
	return netip.PrefixFrom(netip.AddrFrom16(b), ipv6PrefixBits)
}

// ipv6BusyBlocks are the /80s holding an IPv6 address of the subnet's:
// an address belongs to one interface, so its /80 can go to none.
func (s *subnet) ipv6BusyBlocks() map[uint16]bool {
	busy := map[uint16]bool{}
	for a := range s.ipv6Addrs {
		busy[ipv6BlockIndex(a)] = true
	}
	return busy
}

// freeIPv6Prefixes picks the n lowest /80s of the subnet's /64 that are
// free, skipping those in taken (and adding the picks to it). The first
// and last /80 hold reserved addresses and are never picked.
func (s *subnet) freeIPv6Prefixes(n int, taken map[netip.Prefix]bool) ([]netip.Prefix, error) {
	withAddrs := s.ipv6BusyBlocks()
	var out []netip.Prefix
	for k := 1; k < lastIPv6Block && len(out) < n; k++ {
		p := s.ipv6Block(uint16(k))
		if _, held := s.ipv6Prefixes[p]; !held && !taken[p] && !withAddrs[uint16(k)] {
			out = append(out, p)
		}
	}
	if len(out) < n {
		return nil, errInsufficientCidrBlocks
	}
	for _, p := range out {
		taken[p] = true
	}
	return out, nil
}

// checkIPv6Prefix checks a requested IPv6 prefix (Ipv6Prefix.N) and adds
// it to taken.
func (s *subnet) checkIPv6Prefix(raw string, taken map[netip.Prefix]bool) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(raw)
	if err != nil || !p.Addr().Is6() || p.Addr().Is4In6() || p.Bits() != ipv6PrefixBits || p != p.Masked() {
		return netip.Prefix{}, invalidValue("Ipv6Prefix", raw, "Expecting an IPv6 /80 CIDR block with no host bits set.")
	}
	_, held := s.ipv6Prefixes[p]
	k := ipv6BlockIndex(p.Addr())
	switch {
	case !s.ipv6CIDR.Contains(p.Addr()):
		return netip.Prefix{}, invalidValue("Ipv6Prefix", raw, fmt.Sprintf("The prefix is not within the IPv6 CIDR block %s of subnet %s.", s.ipv6CIDR, s.id))
	case k == 0 || k == lastIPv6Block:
		return netip.Prefix{}, invalidValue("Ipv6Prefix", raw, fmt.Sprintf("The prefix holds addresses reserved in subnet %s.", s.id))
	case held || taken[p] || s.ipv6BusyBlocks()[k]:
		return netip.Prefix{}, invalidValue("Ipv6Prefix", raw, fmt.Sprintf("The prefix is already in use in subnet %s.", s.id))
	}
	taken[p] = true
	return p, nil
}

// ipv6Host is the address at offset off of the subnet's first /80.
func (s *subnet) ipv6Host(off uint64) netip.Addr {
	b := s.ipv6CIDR.Addr().As16()
	binary.BigEndian.PutUint64(b[8:], off)
	return netip.AddrFrom16(b)
}

// freeIPv6Addrs picks n free addresses, in order from the first one AWS
// does not reserve. They come from the /64's first /80, which is never
// delegated, so addresses and delegated prefixes never collide.
func (s *subnet) freeIPv6Addrs(n int, taken map[netip.Addr]bool) []netip.Addr {
	var out []netip.Addr
	for off := uint64(4); len(out) < n; off++ {
		a := s.ipv6Host(off)
		if _, used := s.ipv6Addrs[a]; !used && !taken[a] {
			out = append(out, a)
			taken[a] = true
		}
	}
	return out
}

// checkIPv6Addr checks a requested IPv6 address (Ipv6Addresses.N) and
// adds it to taken.
func (s *subnet) checkIPv6Addr(raw string, taken map[netip.Addr]bool) (netip.Addr, error) {
	a, err := netip.ParseAddr(raw)
	if err != nil || !a.Is6() || a.Is4In6() || a.Zone() != "" {
		return netip.Addr{}, invalidValue("Ipv6Addresses", raw, "Expecting an IPv6 address.")
	}
	b := a.As16()
	low := binary.BigEndian.Uint64(b[8:])
	_, used := s.ipv6Addrs[a]
	_, delegated := s.ipv6Prefixes[netip.PrefixFrom(a, ipv6PrefixBits).Masked()]
	switch {
	case !s.ipv6CIDR.Contains(a):
		return netip.Addr{}, invalidValue("Ipv6Addresses", raw, fmt.Sprintf("The address is not within the IPv6 CIDR block %s of subnet %s.", s.ipv6CIDR, s.id))
	case low < 4 || low == ^uint64(0):
		return netip.Addr{}, invalidValue("Ipv6Addresses", raw, fmt.Sprintf("The address is reserved in subnet %s.", s.id))
	case used || delegated || taken[a]:
		return netip.Addr{}, invalidValue("Ipv6Addresses", raw, fmt.Sprintf("The address is already in use in subnet %s.", s.id))
	}
	taken[a] = true
	return a, nil
}

// --- launching with pod ranges (LaunchSpec.PodRanges) ---

// podRange is one LaunchSpec.PodRanges entry: a family, and the prefix
// asked for, or the zero Prefix for any free one.
type podRange struct {
	ipv6   bool
	prefix netip.Prefix
}

// parsePodRanges reads LaunchSpec.PodRanges: "/28" and "/80" ask for a
// free prefix of that family, an IPv4 /28 or IPv6 /80 CIDR for that
// prefix. Those are the only sizes EC2 delegates to interfaces.
func parsePodRanges(ranges []string) ([]podRange, error) {
	var out []podRange
	seen := map[netip.Prefix]bool{}
	bad := func(r, why string) error {
		return fmt.Errorf("pod range %q: %s: %w", r, why, cloudsim.ErrInvalidRequest)
	}
	const sizes = "EC2 delegates IPv4 /28 and IPv6 /80 prefixes to network interfaces, no other size"
	for _, r := range ranges {
		if size, ok := strings.CutPrefix(r, "/"); ok {
			switch n, err := strconv.Atoi(size); {
			case err == nil && n == ipv4PrefixBits:
				out = append(out, podRange{})
			case err == nil && n == ipv6PrefixBits:
				out = append(out, podRange{ipv6: true})
			default:
				return nil, bad(r, sizes)
			}
			continue
		}
		p, err := netip.ParsePrefix(r)
		switch {
		case err != nil:
			return nil, bad(r, `neither a CIDR nor a size such as "/80"`)
		case !(p.Addr().Is4() && p.Bits() == ipv4PrefixBits) && !(p.Addr().Is6() && !p.Addr().Is4In6() && p.Bits() == ipv6PrefixBits):
			return nil, bad(r, sizes)
		case p != p.Masked():
			return nil, bad(r, fmt.Sprintf("host bits set (the prefix would be %s)", p.Masked()))
		case seen[p]:
			return nil, bad(r, "asked for twice")
		}
		seen[p] = true
		out = append(out, podRange{ipv6: p.Addr().Is6(), prefix: p})
	}
	return out, nil
}

// checkPodRanges checks before anything is launched what can be checked:
// explicit prefixes go to one instance only, IPv6 needs subnets with an
// IPv6 block, and explicit prefixes must be free in their subnet.
func (e *Emulator) checkPodRanges(ranges []podRange, subnets []*subnet) error {
	if len(ranges) == 0 {
		return nil
	}
	explicit := slices.ContainsFunc(ranges, func(r podRange) bool { return r.prefix.IsValid() })
	if explicit && len(subnets) > 1 {
		return fmt.Errorf("pod range CIDRs name prefixes for one instance; launch %d with sizes (\"/28\", \"/80\") instead: %w", len(subnets), cloudsim.ErrInvalidRequest)
	}
	wantsIPv6 := slices.ContainsFunc(ranges, func(r podRange) bool { return r.ipv6 })
	for _, s := range subnets {
		if wantsIPv6 && !s.ipv6CIDR.IsValid() {
			return fmt.Errorf("subnet %s has no IPv6 CIDR block to delegate /80 pod ranges from: %w", s.id, cloudsim.ErrInvalidRequest)
		}
	}
	if explicit {
		if _, _, err := e.pickPodRanges(subnets[0], ranges, ""); err != nil {
			return fmt.Errorf("%v: %w", err, cloudsim.ErrInvalidRequest)
		}
	}
	return nil
}

// pickPodRanges chooses the prefixes ranges ask for in s without taking
// them. newIP is the address the instance being launched was just given,
// which no instance holds yet.
func (e *Emulator) pickPodRanges(s *subnet, ranges []podRange, newIP string) (v4, v6 []netip.Prefix, err error) {
	busy := e.ipv4BusyBlocks(s)
	if a, err := netip.ParseAddr(newIP); err == nil {
		busy[netip.PrefixFrom(a, ipv4PrefixBits).Masked()] = true
	}
	taken := map[netip.Prefix]bool{}
	// Explicit prefixes first, so that free ones picked for sizes avoid them.
	for _, r := range ranges {
		var p netip.Prefix
		switch {
		case !r.prefix.IsValid():
			continue
		case r.ipv6:
			p, err = s.checkIPv6Prefix(r.prefix.String(), taken)
		default:
			p, err = s.checkIPv4Prefix(r.prefix.String(), busy)
		}
		if err != nil {
			return nil, nil, err
		}
		if r.ipv6 {
			v6 = append(v6, p)
		} else {
			v4 = append(v4, p)
		}
	}
	for _, r := range ranges {
		if r.prefix.IsValid() {
			continue
		}
		var ps []netip.Prefix
		if r.ipv6 {
			ps, err = s.freeIPv6Prefixes(1, taken)
			v6 = append(v6, ps...)
		} else {
			ps, err = s.freeIPv4Prefixes(1, busy)
			v4 = append(v4, ps...)
		}
		if err != nil {
			return nil, nil, err
		}
	}
	return v4, v6, nil
}

// --- AssignIpv6Addresses, UnassignIpv6Addresses ---

// countParam reads an optional count parameter, which must be positive.
func countParam(p params, name string) (int, bool, error) {
	n, ok, err := p.intParam(name)
	if err != nil || ok && n < 1 {
		return 0, false, invalidValue(name, p.get(name), "Expecting a positive integer.")
	}
	return n, ok, nil
}

// interfaceSubnet is the subnet of n, which always exists: the emulator
// never deletes subnets.
func (e *Emulator) interfaceSubnet(n *networkInterface) *subnet {
	s, _ := e.subnets.Get(n.subnetID)
	return s
}

type assignIPv6AddressesResponse struct {
	NetworkInterfaceID string   `xml:"networkInterfaceId"`
	Addresses          []string `xml:"assignedIpv6Addresses>item"`
	Prefixes           []string `xml:"assignedIpv6PrefixSet>item"`
}

func (e *Emulator) assignIPv6Addresses(p params) (any, error) {
	id := p.get("NetworkInterfaceId")
	if id == "" {
		return nil, missing("NetworkInterfaceId")
	}
	addrCount, hasAddrCount, err := countParam(p, "Ipv6AddressCount")
	if err != nil {
		return nil, err
	}
	prefixCount, hasPrefixCount, err := countParam(p, "Ipv6PrefixCount")
	if err != nil {
		return nil, err
	}
	addrs, prefixes := p.list("Ipv6Addresses"), p.list("Ipv6Prefix")
	switch {
	case hasAddrCount && len(addrs) > 0:
		return nil, apiErr("InvalidParameterCombination", "You may specify either Ipv6AddressCount or Ipv6Addresses, not both")
	case hasPrefixCount && len(prefixes) > 0:
		return nil, apiErr("InvalidParameterCombination", "You may specify either Ipv6PrefixCount or Ipv6Prefixes, not both")
	case !hasAddrCount && len(addrs) == 0 && !hasPrefixCount && len(prefixes) == 0:
		return nil, apiErr(codeMissingParameter, "The request must contain one of the parameters Ipv6AddressCount, Ipv6Addresses, Ipv6PrefixCount or Ipv6Prefixes")
	}
	n, err := e.interfaceParam(id)
	if err != nil {
		return nil, err
	}
	s := e.interfaceSubnet(n)
	if !s.ipv6CIDR.IsValid() {
		// The subnet, not the request, lacks something: EC2 answers with
		// InvalidParameterValue, as it does for the other IPv6 settings
		// (AssignIpv6AddressOnCreation) of a subnet without an IPv6 block.
		return nil, apiErr(codeInvalidParameterValue, "The subnet '%s' of network interface '%s' has no IPv6 CIDR block associated with it", s.id, n.id)
	}
	// Everything is chosen before anything is taken: a request either
	// gets all it asked for or changes nothing.
	takenAddrs, takenPrefixes := map[netip.Addr]bool{}, map[netip.Prefix]bool{}
	var newAddrs []netip.Addr
	var newPrefixes []netip.Prefix
	for _, raw := range addrs {
		a, err := s.checkIPv6Addr(raw, takenAddrs)
		if err != nil {
			return nil, err
		}
		newAddrs = append(newAddrs, a)
	}
	for _, raw := range prefixes {
		pr, err := s.checkIPv6Prefix(raw, takenPrefixes)
		if err != nil {
			return nil, err
		}
		newPrefixes = append(newPrefixes, pr)
	}
	for _, a := range newAddrs {
		if takenPrefixes[netip.PrefixFrom(a, ipv6PrefixBits).Masked()] {
			return nil, invalidValue("Ipv6Addresses", a.String(), "The address is within a prefix of the same request.")
		}
	}
	// Addresses picked by count come from the first /80, which is never
	// delegated; the /80s of all new addresses are off limits to the
	// prefixes picked by count.
	newAddrs = append(newAddrs, s.freeIPv6Addrs(addrCount, takenAddrs)...)
	for _, a := range newAddrs {
		takenPrefixes[netip.PrefixFrom(a, ipv6PrefixBits).Masked()] = true
	}
	picked, err := s.freeIPv6Prefixes(prefixCount, takenPrefixes)
	if err != nil {
		return nil, err
	}
	newPrefixes = append(newPrefixes, picked...)

	resp := assignIPv6AddressesResponse{NetworkInterfaceID: n.id}
	for _, a := range newAddrs {
		n.holdIPv6Addr(s, a)
		resp.Addresses = append(resp.Addresses, a.String())
	}
	for _, pr := range newPrefixes {
		n.holdIPv6Prefix(s, pr)
		resp.Prefixes = append(resp.Prefixes, pr.String())
	}
	return resp, nil
}

type unassignIPv6AddressesResponse struct {
	NetworkInterfaceID string   `xml:"networkInterfaceId"`
	Addresses          []string `xml:"unassignedIpv6Addresses>item"`
	Prefixes           []string `xml:"unassignedIpv6PrefixSet>item"`
}

// notAssigned is EC2's error for unassigning what an interface lacks.
func notAssigned(eniID string) *apiError {
	return apiErr(codeInvalidParameterValue, "Some of the specified addresses are not assigned to interface %s", eniID)
}

func (e *Emulator) unassignIPv6Addresses(p params) (any, error) {
	id := p.get("NetworkInterfaceId")
	if id == "" {
		return nil, missing("NetworkInterfaceId")
	}
	addrs, prefixes := p.list("Ipv6Addresses"), p.list("Ipv6Prefix")
	if len(addrs) == 0 && len(prefixes) == 0 {
		return nil, apiErr(codeMissingParameter, "The request must contain the parameter Ipv6Addresses or Ipv6Prefixes")
	}
	n, err := e.interfaceParam(id)
	if err != nil {
		return nil, err
	}
	var gone []netip.Addr
	for _, raw := range addrs {
		a, err := netip.ParseAddr(raw)
		if err != nil || !slices.Contains(n.ipv6Addrs, a) || slices.Contains(gone, a) {
			return nil, notAssigned(n.id)
		}
		gone = append(gone, a)
	}
	var goneP []netip.Prefix
	for _, raw := range prefixes {
		pr, err := netip.ParsePrefix(raw)
		if err != nil || !slices.Contains(n.ipv6Prefixes, pr) || slices.Contains(goneP, pr) {
			return nil, notAssigned(n.id)
		}
		goneP = append(goneP, pr)
	}
	s := e.interfaceSubnet(n)
	resp := unassignIPv6AddressesResponse{NetworkInterfaceID: n.id}
	for _, a := range gone {
		n.releaseIPv6Addr(s, a)
		resp.Addresses = append(resp.Addresses, a.String())
	}
	for _, pr := range goneP {
		n.releaseIPv6Prefix(s, pr)
		resp.Prefixes = append(resp.Prefixes, pr.String())
	}
	return resp, nil
}

// --- AssignPrivateIpAddresses, UnassignPrivateIpAddresses (prefixes) ---

type xmlIPv4Prefix struct {
	IPv4Prefix string `xml:"ipv4Prefix"`
}

type xmlIPv6Prefix struct {
	IPv6Prefix string `xml:"ipv6Prefix"`
}

type xmlIPv6Address struct {
	IPv6Address   string `xml:"ipv6Address"`
	IsPrimaryIPv6 bool   `xml:"isPrimaryIpv6"`
}

type assignPrivateIPAddressesResponse struct {
	NetworkInterfaceID string          `xml:"networkInterfaceId"`
	Prefixes           []xmlIPv4Prefix `xml:"assignedIpv4PrefixSet>item"`
}

// errSecondaryIPv4 answers what the emulator leaves out: interfaces have
// their primary private address and nothing else of IPv4 but prefixes.
var errSecondaryIPv4 = apiErr("UnsupportedOperation", "cloudsim: secondary private IPv4 addresses are not emulated; use Ipv4PrefixCount or Ipv4Prefix")

func (e *Emulator) assignPrivateIPAddresses(p params) (any, error) {
	id := p.get("NetworkInterfaceId")
	if id == "" {
		return nil, missing("NetworkInterfaceId")
	}
	if p.has("PrivateIpAddress") || p.get("SecondaryPrivateIpAddressCount") != "" {
		return nil, errSecondaryIPv4
	}
	count, hasCount, err := countParam(p, "Ipv4PrefixCount")
	if err != nil {
		return nil, err
	}
	prefixes := p.list("Ipv4Prefix")
	switch {
	case hasCount && len(prefixes) > 0:
		return nil, apiErr("InvalidParameterCombination", "You may specify either Ipv4PrefixCount or Ipv4Prefixes, not both")
	case !hasCount && len(prefixes) == 0:
		return nil, apiErr(codeMissingParameter, "The request must contain one of the parameters SecondaryPrivateIpAddressCount, PrivateIpAddresses, Ipv4PrefixCount or Ipv4Prefixes")
	}
	n, err := e.interfaceParam(id)
	if err != nil {
		return nil, err
	}
	s := e.interfaceSubnet(n)
	busy := e.ipv4BusyBlocks(s)
	var chosen []netip.Prefix
	for _, raw := range prefixes {
		pr, err := s.checkIPv4Prefix(raw, busy)
		if err != nil {
			return nil, err
		}
		chosen = append(chosen, pr)
	}
	if hasCount {
		if chosen, err = s.freeIPv4Prefixes(count, busy); err != nil {
			return nil, err
		}
	}
	resp := assignPrivateIPAddressesResponse{NetworkInterfaceID: n.id}
	for _, pr := range chosen {
		n.holdIPv4Prefix(s, pr)
		resp.Prefixes = append(resp.Prefixes, xmlIPv4Prefix{pr.String()})
	}
	return resp, nil
}

func (e *Emulator) unassignPrivateIPAddresses(p params) (any, error) {
	id := p.get("NetworkInterfaceId")
	if id == "" {
		return nil, missing("NetworkInterfaceId")
	}
	addrs, prefixes := p.list("PrivateIpAddress"), p.list("Ipv4Prefix")
	if len(addrs) == 0 && len(prefixes) == 0 {
		return nil, apiErr(codeMissingParameter, "The request must contain the parameter PrivateIpAddress or Ipv4Prefix")
	}
	n, err := e.interfaceParam(id)
	if err != nil {
		return nil, err
	}
	if len(addrs) > 0 {
		// The only private address an interface has here is its primary,
		// which EC2 never unassigns.
		if inst, ok := e.instances.Get(n.instanceID); ok && slices.Contains(addrs, inst.privateIP) {
			return nil, invalidValue("PrivateIpAddress", inst.privateIP, "The primary private IP address of a network interface cannot be unassigned.")
		}
		return nil, notAssigned(n.id)
	}
	var gone []netip.Prefix
	for _, raw := range prefixes {
		pr, err := netip.ParsePrefix(raw)
		if err != nil || !slices.Contains(n.ipv4Prefixes, pr) || slices.Contains(gone, pr) {
			return nil, notAssigned(n.id)
		}
		gone = append(gone, pr)
	}
	s := e.interfaceSubnet(n)
	for _, pr := range gone {
		n.releaseIPv4Prefix(s, pr)
	}
	return returnResponse{Return: true}, nil
}

// delegated fills in what an interface holds beyond its primary address,
// for DescribeInstances and DescribeNetworkInterfaces alike.
func (n *networkInterface) delegated() (addrs []xmlIPv6Address, v4 []xmlIPv4Prefix, v6 []xmlIPv6Prefix) {
	for _, a := range n.ipv6Addrs {
		addrs = append(addrs, xmlIPv6Address{IPv6Address: a.String()})
	}
	for _, p := range n.ipv4Prefixes {
		v4 = append(v4, xmlIPv4Prefix{p.String()})
	}
	for _, p := range n.ipv6Prefixes {
		v6 = append(v6, xmlIPv6Prefix{p.String()})
	}
	return addrs, v4, v6
}

// --- DescribeNetworkInterfaces ---

// xmlNetworkInterfaceDetail is DescribeNetworkInterfaces' NetworkInterface,
// which says more than DescribeInstances' InstanceNetworkInterface.
type xmlNetworkInterfaceDetail struct {
	NetworkInterfaceID string                 `xml:"networkInterfaceId"`
	SubnetID           string                 `xml:"subnetId"`
	VpcID              string                 `xml:"vpcId"`
	AvailabilityZone   string                 `xml:"availabilityZone"`
	AvailabilityZoneID string                 `xml:"availabilityZoneId"`
	Description        string                 `xml:"description"`
	OwnerID            string                 `xml:"ownerId"`
	RequesterManaged   bool                   `xml:"requesterManaged"`
	Status             string                 `xml:"status"`
	MacAddress         string                 `xml:"macAddress"`
	PrivateIPAddress   string                 `xml:"privateIpAddress"`
	PrivateDNSName     string                 `xml:"privateDnsName"`
	SourceDestCheck    bool                   `xml:"sourceDestCheck"`
	InterfaceType      string                 `xml:"interfaceType"`
	Groups             []xmlGroupIdentifier   `xml:"groupSet>item"`
	Attachment         xmlInterfaceAttachment `xml:"attachment"`
	Association        *xmlAssociation        `xml:"association,omitempty"`
	Tags               []ec2Tag               `xml:"tagSet>item"`
	PrivateIPs         []xmlPrivateIPAddress  `xml:"privateIpAddressesSet>item"`
	IPv6Addresses      []xmlIPv6Address       `xml:"ipv6AddressesSet>item"`
	IPv4Prefixes       []xmlIPv4Prefix        `xml:"ipv4PrefixSet>item"`
	IPv6Prefixes       []xmlIPv6Prefix        `xml:"ipv6PrefixSet>item"`
	IPv6Native         bool                   `xml:"ipv6Native"`
}

type xmlInterfaceAttachment struct {
	AttachmentID        string `xml:"attachmentId"`
	InstanceID          string `xml:"instanceId"`
	InstanceOwnerID     string `xml:"instanceOwnerId"`
	DeviceIndex         int    `xml:"deviceIndex"`
	NetworkCardIndex    int    `xml:"networkCardIndex"`
	Status              string `xml:"status"`
	AttachTime          string `xml:"attachTime"`
	DeleteOnTermination bool   `xml:"deleteOnTermination"`
}

type describeNetworkInterfacesResponse struct {
	Interfaces []xmlNetworkInterfaceDetail `xml:"networkInterfaceSet>item"`
	NextToken  string                      `xml:"nextToken,omitempty"`
}

// interfaceView is what filters and the response read of an interface:
// the interface as DescribeInstances reports it on its instance.
func (e *Emulator) interfaceView(n *networkInterface) (*instance, xmlNetworkInterface) {
	i, _ := e.instances.Get(n.instanceID)
	if x := e.xmlInstance(i); len(x.NetworkInterfaces) > 0 {
		return i, x.NetworkInterfaces[0]
	}
	return i, xmlNetworkInterface{}
}

func (e *Emulator) interfaceFields() fields[*networkInterface] {
	view := func(f func(i *instance, x xmlNetworkInterface) []string) func(*networkInterface) []string {
		return func(n *networkInterface) []string { return f(e.interfaceView(n)) }
	}
	one := func(f func(i *instance, x xmlNetworkInterface) string) func(*networkInterface) []string {
		return view(func(i *instance, x xmlNetworkInterface) []string {
			if v := f(i, x); v != "" {
				return []string{v}
			}
			return nil
		})
	}
	constant := func(v string) func(*networkInterface) []string {
		return func(*networkInterface) []string { return []string{v} }
	}
	return fields[*networkInterface]{
		"network-interface-id":             func(n *networkInterface) []string { return []string{n.id} },
		"subnet-id":                        func(n *networkInterface) []string { return []string{n.subnetID} },
		"vpc-id":                           one(func(i *instance, _ xmlNetworkInterface) string { return i.vpcID }),
		"availability-zone":                one(func(i *instance, _ xmlNetworkInterface) string { return i.zone }),
		"availability-zone-id":             one(func(i *instance, _ xmlNetworkInterface) string { return e.zoneID(i.zone) }),
		"attachment.instance-id":           func(n *networkInterface) []string { return []string{n.instanceID} },
		"attachment.instance-owner-id":     constant(e.cfg.AccountID),
		"attachment.attachment-id":         one(func(_ *instance, x xmlNetworkInterface) string { return x.Attachment.AttachmentID }),
		"attachment.device-index":          constant("0"),
		"attachment.status":                constant("attached"),
		"attachment.delete-on-termination": constant("true"),
		"status":                           constant("in-use"),
		"owner-id":                         constant(e.cfg.AccountID),
		"requester-managed":                constant("false"),
		"interface-type":                   constant("interface"),
		"description":                      constant(""),
		"mac-address":                      one(func(i *instance, _ xmlNetworkInterface) string { return i.mac }),
		"private-ip-address":               one(func(i *instance, _ xmlNetworkInterface) string { return i.privateIP }),
		"addresses.private-ip-address":     one(func(i *instance, _ xmlNetworkInterface) string { return i.privateIP }),
		"private-dns-name":                 one(func(_ *instance, x xmlNetworkInterface) string { return x.PrivateDNSName }),
		"source-dest-check":                one(func(i *instance, _ xmlNetworkInterface) string { return strconv.FormatBool(!i.srcDstCheckOff) }),
		"association.public-ip":            one(func(i *instance, _ xmlNetworkInterface) string { return i.publicIP }),
		"group-id":                         view(func(i *instance, _ xmlNetworkInterface) []string { return i.securityGroups }),
		"ipv6-addresses.ipv6-address": func(n *networkInterface) []string {
			var out []string
			for _, a := range n.ipv6Addrs {
				out = append(out, a.String())
			}
			return out
		},
	}
}

func (e *Emulator) describeNetworkInterfaces(p params) (any, error) {
	ids := p.list("NetworkInterfaceId")
	if len(ids) > 0 && p.get("MaxResults") != "" {
		return nil, apiErr("InvalidParameterCombination", "The parameter networkInterfaceIdSet cannot be used with the parameter maxResults")
	}
	for _, id := range ids {
		if !eniIDPattern.MatchString(id) {
			return nil, apiErr("InvalidNetworkInterfaceID.Malformed", "Invalid id: %q (expecting \"eni-...\")", id)
		}
	}
	ifaces, next, err := ec2Describe(e.networkInterfaces, p, ids, notFoundInterfaces, e.interfaceFields(),
		func(n *networkInterface) map[string]string { return n.tags })
	if err != nil {
		return nil, err
	}
	resp := describeNetworkInterfacesResponse{NextToken: next}
	for _, n := range ifaces {
		i, x := e.interfaceView(n)
		resp.Interfaces = append(resp.Interfaces, xmlNetworkInterfaceDetail{
			NetworkInterfaceID: n.id, SubnetID: n.subnetID, VpcID: x.VpcID,
			AvailabilityZone: i.zone, AvailabilityZoneID: e.zoneID(i.zone), OwnerID: e.cfg.AccountID,
			Status: x.Status, MacAddress: x.MacAddress, PrivateIPAddress: x.PrivateIPAddress, PrivateDNSName: x.PrivateDNSName,
			SourceDestCheck: x.SourceDestCheck, InterfaceType: x.InterfaceType, Groups: x.Groups,
			Attachment: xmlInterfaceAttachment{
				AttachmentID: x.Attachment.AttachmentID, InstanceID: i.id, InstanceOwnerID: e.cfg.AccountID,
				DeviceIndex: x.Attachment.DeviceIndex, Status: x.Attachment.Status, AttachTime: awsTime(i.launchTime),
				DeleteOnTermination: x.Attachment.DeleteOnTermination,
			},
			Association: x.Association, Tags: ec2Tags(n.tags), PrivateIPs: x.PrivateIPs,
			IPv6Addresses: x.IPv6Addresses, IPv4Prefixes: x.IPv4Prefixes, IPv6Prefixes: x.IPv6Prefixes,
		})
	}
	return resp, nil
}
