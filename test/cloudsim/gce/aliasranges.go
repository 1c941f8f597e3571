package gce

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math/bits"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// Alias IP ranges and IPv6 ranges of network interfaces.
//
// Besides its primary address a network interface may hold alias IP
// ranges: blocks of its subnetwork's primary range, or of one of the
// subnetwork's secondary ranges when subnetworkRangeName names one. A
// node-ipam controller (cloud-provider-gcp's CloudAllocator) makes nic0's
// first alias range the Node's IPv4 pod CIDR, which is why the emulator
// has them. An ipCidrRange is, as the API accepts it, a CIDR
// ("10.4.3.0/24"), a netmask ("/24": GCE picks a free block of that
// size, here the lowest free aligned one) or a single address (a /32).
// GCE shows every range as a CIDR once it is allocated.
//
// A dual-stack (IPV4_IPV6) or IPv6-only interface gets a /96 of its
// subnetwork's internal IPv6 /64, and its ipv6Address is the first
// address of the /96 (internalIpv6PrefixLength 96); CloudAllocator masks
// it to the Node's IPv6 pod CIDR.
//
// Bookkeeping: a block of a primary range marks each of its addresses in
// the subnetwork's address pool (ipam.go) with the instance as owner, so
// no single address (an instance's, a forwarding rule's, a reserved one)
// is ever handed out inside an alias range and no alias range covers one.
// Secondary ranges and IPv6 ranges are far too big to mark address by
// address; they hold whole blocks (blockRange). Everything an instance
// holds is released when it is deleted, and kept while it is stopped.

// PodRangeName names the fixture subnetwork's secondary range for pods,
// as kOps and GKE name it.
const PodRangeName = "pods"

// ipv6NICPrefixLength is the size of the IPv6 range of a network
// interface: GCE hands each one a /96.
const ipv6NICPrefixLength = 96

// AliasIPRange is one alias IP range of a network interface, as the API's
// AliasIpRange.
type AliasIPRange struct {
	// IPCIDRRange is a CIDR, a netmask ("/24") or a single address when
	// asked for; a CIDR once allocated.
	IPCIDRRange string `json:"ipCidrRange"`
	// SubnetworkRangeName names the subnetwork's secondary range the block
	// is from; empty for its primary range.
	SubnetworkRangeName string `json:"subnetworkRangeName,omitempty"`
}

func aliasesToAPI(in []AliasIPRange) []*computepb.AliasIpRange {
	var out []*computepb.AliasIpRange
	for _, r := range in {
		a := &computepb.AliasIpRange{IpCidrRange: proto.String(r.IPCIDRRange)}
		if r.SubnetworkRangeName != "" {
			a.SubnetworkRangeName = proto.String(r.SubnetworkRangeName)
		}
		out = append(out, a)
	}
	return out
}

func aliasesFromAPI(in []*computepb.AliasIpRange) []AliasIPRange {
	var out []AliasIPRange
	for _, r := range in {
		out = append(out, AliasIPRange{IPCIDRRange: r.GetIpCidrRange(), SubnetworkRangeName: r.GetSubnetworkRangeName()})
	}
	return out
}

// ---- address arithmetic ----

// u128 is an address as a number, so that blocks can be aligned and
// stepped over in IPv6 as in IPv4 (an IPv4 address is its IPv4-mapped
// IPv6 form; no block of an IPv4 range ever leaves it).
type u128 struct{ hi, lo uint64 }

func toU128(a netip.Addr) u128 {
	b := a.As16()
	return u128{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
}

func (x u128) addr(v4 bool) netip.Addr {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], x.hi)
	binary.BigEndian.PutUint64(b[8:], x.lo)
	a := netip.AddrFrom16(b)
	if v4 {
		a = a.Unmap()
	}
	return a
}

// add reports overflow past the last address.
func (x u128) add(y u128) (u128, bool) {
	lo, c := bits.Add64(x.lo, y.lo, 0)
	hi, c := bits.Add64(x.hi, y.hi, c)
	return u128{hi, lo}, c != 0
}

func (x u128) less(y u128) bool { return x.hi < y.hi || x.hi == y.hi && x.lo < y.lo }

func (x u128) andNot(y u128) u128 { return u128{x.hi &^ y.hi, x.lo &^ y.lo} }

// blockMask is the host part of a block with hostBits host bits: its
// size minus one.
func blockMask(hostBits int) u128 {
	switch {
	case hostBits >= 128:
		return u128{^uint64(0), ^uint64(0)}
	case hostBits >= 64:
		return u128{1<<(hostBits-64) - 1, ^uint64(0)}
	}
	return u128{0, 1<<hostBits - 1}
}

// span is an inclusive range of addresses.
type span struct{ lo, hi u128 }

func prefixSpan(p netip.Prefix) span {
	p = p.Masked()
	return span{toU128(p.Addr()), toU128(lastAddr(p))}
}

func (s span) overlaps(t span) bool { return !t.hi.less(s.lo) && !s.hi.less(t.lo) }

// lowestFree is the lowest block of size /bits inside space, aligned to
// its size, that overlaps none of taken.
func lowestFree(space netip.Prefix, taken []span, bits int) (netip.Prefix, bool) {
	space = space.Masked()
	v4 := space.Addr().Is4()
	width := space.Addr().BitLen()
	if bits < space.Bits() || bits > width {
		return netip.Prefix{}, false
	}
	mask := blockMask(width - bits)
	end := prefixSpan(space).hi
	taken = slices.SortedFunc(slices.Values(taken), func(a, b span) int {
		if a.lo == b.lo {
			return 0
		}
		if a.lo.less(b.lo) {
			return -1
		}
		return 1
	})
	cand := toU128(space.Addr())
	for _, t := range taken {
		last, ovf := cand.add(mask)
		if ovf || end.less(last) {
			return netip.Prefix{}, false
		}
		if t.hi.less(cand) {
			continue
		}
		if last.less(t.lo) {
			break
		}
		// The candidate overlaps t: the next one starts at the first
		// aligned address past it.
		next, ovf := t.hi.add(u128{0, 1})
		if ovf {
			return netip.Prefix{}, false
		}
		if next, ovf = next.add(mask); ovf {
			return netip.Prefix{}, false
		}
		cand = next.andNot(mask)
	}
	if last, ovf := cand.add(mask); ovf || end.less(last) {
		return netip.Prefix{}, false
	}
	return netip.PrefixFrom(cand.addr(v4), bits), true
}

// ---- ranges of blocks ----

// blockRange hands out blocks of a range too large to account address
// by address: a subnetwork's secondary range, its IPv6 range.
type blockRange struct {
	prefix netip.Prefix
	held   map[netip.Prefix]string
}

// addRange adds a block range under name.
func (a *ipam) addRange(name, cidr string) error {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return fmt.Errorf("range %s: %w", name, err)
	}
	if a.ranges == nil {
		a.ranges = map[string]*blockRange{}
	}
	a.ranges[name] = &blockRange{prefix: p.Masked(), held: map[netip.Prefix]string{}}
	return nil
}

func (a *ipam) blocks(name string) *blockRange { return a.ranges[name] }

func (r *blockRange) taken() []span {
	out := make([]span, 0, len(r.held))
	for p := range r.held {
		out = append(out, prefixSpan(p))
	}
	return out
}

// releaseOwner frees everything owner holds: its addresses in every pool
// and its blocks in every range. A deleted instance releases so what its
// interfaces hold, and what a change still in progress claimed for them.
func (a *ipam) releaseOwner(owner string) {
	for _, p := range a.pools {
		for ip, o := range p.used {
			if o == owner {
				delete(p.used, ip)
			}
		}
	}
	for _, r := range a.ranges {
		for b, o := range r.held {
			if o == owner {
				delete(r.held, b)
			}
		}
	}
}

// secondaryRangeKey and ipv6RangeKey name a subnetwork's block ranges in
// the ipam; its primary range is the pool named by its path.
func secondaryRangeKey(subnetPath, name string) string {
	return subnetPath + "/secondaryIpRanges/" + name
}

func ipv6RangeKey(subnetPath string) string { return subnetPath + "/internalIpv6Prefix" }

// poolTaken is what a primary range cannot give an alias block: the
// addresses GCE reserves at either end and every address in use.
func poolTaken(p *ipPool) []span {
	out := make([]span, 0, len(p.used)+2)
	start, end := prefixSpan(p.prefix).lo, prefixSpan(p.prefix).hi
	if first := toU128(p.first); start.less(first) {
		out = append(out, span{start, toU128(p.first.Prev())})
	}
	if last := toU128(p.last); last.less(end) {
		out = append(out, span{toU128(p.last.Next()), end})
	}
	for ip := range p.used {
		out = append(out, span{toU128(ip), toU128(ip)})
	}
	return out
}

// ---- claiming an interface's ranges ----

// aliasBlock is one alias range as held: the secondary range it is from
// ("" for the primary range) and the block.
type aliasBlock struct {
	rangeName string
	prefix    netip.Prefix
}

func blocksOf(ranges []*computepb.AliasIpRange) []aliasBlock {
	var out []aliasBlock
	for _, r := range ranges {
		if p, err := netip.ParsePrefix(r.GetIpCidrRange()); err == nil {
			out = append(out, aliasBlock{r.GetSubnetworkRangeName(), p})
		}
	}
	return out
}

// subnetwork is the stored subnetwork an interface names, and its path.
func (e *Emulator) subnetwork(ref string) (string, *computepb.Subnetwork, bool) {
	path, ok := e.refPath(ref)
	if !ok {
		return "", nil, false
	}
	o, ok := e.kinds.get(scopeRegional, "subnetworks").store.Get(path)
	if !ok {
		return "", nil, false
	}
	return path, o.msg.(*computepb.Subnetwork), true
}

// aliasAsk is one alias range as asked for, parsed.
type aliasAsk struct {
	i         int
	rangeName string
	// space is the range the block comes from.
	space netip.Prefix
	// exact is the block asked for; else bits is the netmask's size.
	exact netip.Prefix
	bits  int
	// kept: the interface holds exact already.
	kept bool
}

// claimAliasRanges checks the alias ranges an interface of subnetwork sn
// (at subnetPath) asks for, want, and claims for owner the ones it does
// not hold already (held). field names the request's list in errors
// ("resource.networkInterfaces[0].aliasIpRanges"). It answers the ranges
// as the API then shows them, every ipCidrRange a CIDR, and the blocks it
// claimed. A malformed request is refused at once; a block in use, or a
// range with no free block of the size asked for, is an async error, as
// GCE fails the operation with IP_IN_USE_BY_ANOTHER_RESOURCE or
// IP_SPACE_EXHAUSTED_WITH_DETAILS. Nothing stays claimed on an error.
func (e *Emulator) claimAliasRanges(owner, subnetPath string, sn *computepb.Subnetwork, field string,
	want []*computepb.AliasIpRange, held []aliasBlock) ([]*computepb.AliasIpRange, []aliasBlock, *apiError) {
	asks := make([]*aliasAsk, 0, len(want))
	for i, r := range want {
		ask, aerr := e.parseAliasAsk(subnetPath, sn, fmt.Sprintf("%s[%d]", field, i), r)
		if aerr != nil {
			return nil, nil, aerr
		}
		ask.i = i
		asks = append(asks, ask)
	}
	var claimed []aliasBlock
	undo := func() {
		for _, b := range claimed {
			e.releaseAliasBlock(owner, subnetPath, b)
		}
	}
	out := make([]*computepb.AliasIpRange, len(want))
	// Exact blocks first, so that a netmask asked for beside them does not
	// take one of them.
	slices.SortStableFunc(asks, func(a, b *aliasAsk) int { return cmp.Compare(a.bits, b.bits) })
	kept := map[aliasBlock]bool{}
	for _, ask := range asks {
		block := ask.exact
		if ask.bits == 0 {
			b := aliasBlock{ask.rangeName, block}
			if slices.Contains(held, b) && !kept[b] {
				kept[b] = true
				out[ask.i] = aliasAPI(b)
				continue
			}
			if e.aliasTaken(subnetPath, b) {
				undo()
				return nil, nil, errIPInUse(block.String())
			}
		} else {
			var ok bool
			if block, ok = e.freeAliasBlock(subnetPath, ask.rangeName, ask.space, ask.bits); !ok {
				undo()
				return nil, nil, errIPSpaceExhausted(subnetPath, ask.space)
			}
		}
		b := aliasBlock{ask.rangeName, block}
		e.claimAliasBlock(owner, subnetPath, b)
		claimed = append(claimed, b)
		out[ask.i] = aliasAPI(b)
	}
	return out, claimed, nil
}

func aliasAPI(b aliasBlock) *computepb.AliasIpRange {
	r := &computepb.AliasIpRange{IpCidrRange: proto.String(b.prefix.String())}
	if b.rangeName != "" {
		r.SubnetworkRangeName = proto.String(b.rangeName)
	}
	return r
}

// parseAliasAsk checks one alias range against its subnetwork.
func (e *Emulator) parseAliasAsk(subnetPath string, sn *computepb.Subnetwork, field string, r *computepb.AliasIpRange) (*aliasAsk, *apiError) {
	ask := &aliasAsk{rangeName: r.GetSubnetworkRangeName()}
	var where string
	if ask.rangeName == "" {
		p, err := netip.ParsePrefix(sn.GetIpCidrRange())
		if err != nil {
			return nil, errInvalid("subnetwork", subnetPath, "cloudsim: its ipCidrRange does not parse.")
		}
		ask.space, where = p.Masked(), "the primary range "+p.Masked().String()
	} else {
		i := slices.IndexFunc(sn.GetSecondaryIpRanges(), func(s *computepb.SubnetworkSecondaryRange) bool {
			return s.GetRangeName() == ask.rangeName
		})
		if i < 0 {
			return nil, errInvalid(field+".subnetworkRangeName", ask.rangeName,
				fmt.Sprintf("The subnetwork '%s' has no secondary range named '%s'.", subnetPath, ask.rangeName))
		}
		p, err := netip.ParsePrefix(sn.GetSecondaryIpRanges()[i].GetIpCidrRange())
		if err != nil {
			return nil, errInvalid("subnetwork", subnetPath, "cloudsim: a secondary range does not parse.")
		}
		ask.space, where = p.Masked(), fmt.Sprintf("the secondary range '%s' (%s)", ask.rangeName, p.Masked())
	}
	v := strings.TrimSpace(r.GetIpCidrRange())
	field += ".ipCidrRange"
	if v == "" {
		return nil, errRequired(field)
	}
	switch {
	case strings.HasPrefix(v, "/"):
		n, err := strconv.Atoi(v[1:])
		if err != nil || n < 0 || n > 32 {
			return nil, errInvalid(field, v, "A netmask is /0 to /32.")
		}
		if n < ask.space.Bits() {
			return nil, errInvalid(field, v, fmt.Sprintf("The netmask is larger than %s.", where))
		}
		ask.bits = n
		return ask, nil
	case strings.Contains(v, "/"):
		p, err := netip.ParsePrefix(v)
		if err != nil || !p.Addr().Is4() {
			return nil, errInvalid(field, v, "Must be an IPv4 CIDR range, a netmask (/24) or an IPv4 address.")
		}
		if p != p.Masked() {
			return nil, errInvalid(field, v, "The range has address bits set past its prefix length.")
		}
		ask.exact = p
	default:
		ip, err := netip.ParseAddr(v)
		if err != nil || !ip.Is4() {
			return nil, errInvalid(field, v, "Must be an IPv4 CIDR range, a netmask (/24) or an IPv4 address.")
		}
		ask.exact = netip.PrefixFrom(ip, 32)
	}
	if !ask.space.Contains(ask.exact.Addr()) || ask.exact.Bits() < ask.space.Bits() {
		return nil, errInvalid(field, v, fmt.Sprintf("The range is not within %s of subnetwork '%s'.", where, subnetPath))
	}
	if ask.rangeName == "" {
		// GCE keeps a primary range's first two and last two addresses.
		if p := e.ips.pool(subnetPath); p != nil {
			s := prefixSpan(ask.exact)
			if s.lo.less(toU128(p.first)) || toU128(p.last).less(s.hi) {
				return nil, errInvalid(field, v, "The range includes addresses the subnetwork reserves.")
			}
		}
	}
	return ask, nil
}

// aliasTaken reports whether any part of b is held by anyone, or
// reserved.
func (e *Emulator) aliasTaken(subnetPath string, b aliasBlock) bool {
	s := prefixSpan(b.prefix)
	var taken []span
	if b.rangeName == "" {
		p := e.ips.pool(subnetPath)
		if p == nil {
			return true
		}
		taken = poolTaken(p)
	} else {
		r := e.ips.blocks(secondaryRangeKey(subnetPath, b.rangeName))
		if r == nil {
			return true
		}
		taken = r.taken()
	}
	return slices.ContainsFunc(taken, s.overlaps)
}

func (e *Emulator) freeAliasBlock(subnetPath, rangeName string, space netip.Prefix, bits int) (netip.Prefix, bool) {
	if rangeName == "" {
		p := e.ips.pool(subnetPath)
		if p == nil {
			return netip.Prefix{}, false
		}
		return lowestFree(space, poolTaken(p), bits)
	}
	r := e.ips.blocks(secondaryRangeKey(subnetPath, rangeName))
	if r == nil {
		return netip.Prefix{}, false
	}
	return lowestFree(space, r.taken(), bits)
}

func (e *Emulator) claimAliasBlock(owner, subnetPath string, b aliasBlock) {
	if b.rangeName != "" {
		e.ips.blocks(secondaryRangeKey(subnetPath, b.rangeName)).held[b.prefix] = owner
		return
	}
	p := e.ips.pool(subnetPath)
	for ip := b.prefix.Addr(); b.prefix.Contains(ip); ip = ip.Next() {
		p.used[ip] = owner
	}
}

// releaseAliasBlock frees b if owner holds it.
func (e *Emulator) releaseAliasBlock(owner, subnetPath string, b aliasBlock) {
	if b.rangeName != "" {
		if r := e.ips.blocks(secondaryRangeKey(subnetPath, b.rangeName)); r != nil && r.held[b.prefix] == owner {
			delete(r.held, b.prefix)
		}
		return
	}
	p := e.ips.pool(subnetPath)
	if p == nil {
		return
	}
	for ip := b.prefix.Addr(); b.prefix.Contains(ip); ip = ip.Next() {
		if p.used[ip] == owner {
			delete(p.used, ip)
		}
	}
}

// claimIPv6 claims for owner a /96 of the subnetwork's internal IPv6
// range, or with external its external one: the one starting at addr, or
// the lowest free one when addr is empty. nicField names the interface
// in errors ("resource.networkInterfaces[0]").
func (e *Emulator) claimIPv6(owner, subnetPath string, sn *computepb.Subnetwork, nicField, addr string, external bool) (netip.Prefix, *apiError) {
	key, field := ipv6RangeKey(subnetPath), nicField+".ipv6Address"
	if external {
		key, field = externalIPv6RangeKey(subnetPath), nicField+".ipv6AccessConfigs[0].externalIpv6"
	}
	r := e.ips.blocks(key)
	if sn.GetStackType() != "IPV4_IPV6" && sn.GetStackType() != "IPV6_ONLY" || r == nil {
		return netip.Prefix{}, errInvalid(nicField+".stackType", "IPV4_IPV6",
			fmt.Sprintf("The subnetwork '%s' has no IPv6 range.", subnetPath))
	}
	if addr == "" {
		p, ok := lowestFree(r.prefix, r.taken(), ipv6NICPrefixLength)
		if !ok {
			return netip.Prefix{}, errIPSpaceExhausted(subnetPath, r.prefix)
		}
		r.held[p] = owner
		return p, nil
	}
	ip, err := netip.ParseAddr(addr)
	if err != nil || !ip.Is6() || ip.Is4In6() {
		return netip.Prefix{}, errInvalid(field, addr, "Must be an IPv6 address.")
	}
	p := netip.PrefixFrom(ip, ipv6NICPrefixLength)
	if !r.prefix.Contains(ip) || p.Masked().Addr() != ip {
		return netip.Prefix{}, errInvalid(field, addr,
			fmt.Sprintf("Must be the first address of a /96 in the subnetwork's IPv6 range %s.", r.prefix))
	}
	if slices.ContainsFunc(r.taken(), prefixSpan(p).overlaps) {
		return netip.Prefix{}, errIPInUse(p.String())
	}
	r.held[p] = owner
	return p, nil
}

// nicIPv6Range is the /96 an interface holds, if it has one.
func nicIPv6Range(nic *computepb.NetworkInterface) (netip.Prefix, bool) {
	ip, err := netip.ParseAddr(nic.GetIpv6Address())
	if err != nil {
		return netip.Prefix{}, false
	}
	bits := int(nic.GetInternalIpv6PrefixLength())
	if bits == 0 {
		bits = ipv6NICPrefixLength
	}
	return netip.PrefixFrom(ip, bits).Masked(), true
}

// errIPSpaceExhausted fails an operation that needs a block of a range
// with none free, worded as GCE's.
func errIPSpaceExhausted(subnetPath string, space netip.Prefix) *apiError {
	return &apiError{Status: http.StatusBadRequest, Reason: "ipSpaceExhausted", async: true,
		opCode: "IP_SPACE_EXHAUSTED_WITH_DETAILS",
		Message: fmt.Sprintf("IP space of '%s' is exhausted. Insufficient free IP addresses in the IP range '%s'.",
			subnetPath, space)}
}

// nicFingerprint is a network interface's fingerprint: a hash of what
// updateNetworkInterface can change, so it moves with every change (and
// an interface without alias ranges keeps the one it always had).
func nicFingerprint(instPath string, nic *computepb.NetworkInterface) string {
	s := instPath + "/" + nic.GetName()
	for _, r := range nic.GetAliasIpRanges() {
		s += "|" + r.GetSubnetworkRangeName() + ":" + r.GetIpCidrRange()
	}
	return fingerprint(s)
}
