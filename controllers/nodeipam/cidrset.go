package nodeipam

import (
	"fmt"
	"math/big"
	"net/netip"
	"slices"
)

// cidrSet hands out pod CIDRs of varying sizes from one cluster CIDR,
// never two that overlap. Sizes vary because upstream Azure's allocator
// takes each node pool's mask from a tag on its scale set or availability
// set (cloud-provider-azure pkg/nodeipam/ipam/cloud_cidr_allocator.go,
// updateNodeSubnetMaskSizes), so one cluster CIDR serves /24 and /26
// Nodes side by side. Upstream keeps a bitmap at the largest mask and
// rebuilds it when a new pool's mask is larger; keeping the used ranges
// themselves needs no rebuild and answers "does this overlap?" for any
// size.
//
// It is not safe for concurrent use: the controller holds its lock.
type cidrSet struct {
	cluster netip.Prefix
	// used is sorted by address and holds no two overlapping prefixes.
	used []netip.Prefix
	// next is, per mask size, where the last search for a free range of
	// that size stopped, so N allocations cost about N checks rather than
	// N² (as upstream cidrset's nextCandidate).
	next map[int]*big.Int
}

func newCIDRSet(cluster netip.Prefix) *cidrSet {
	return &cidrSet{cluster: cluster.Masked(), next: map[int]*big.Int{}}
}

// overlapping is the used prefix that overlaps p, if any.
func (s *cidrSet) overlapping(p netip.Prefix) (netip.Prefix, bool) {
	// The first used prefix starting after p's first address; the one
	// before it may contain p, it and those after may lie inside p.
	i, _ := slices.BinarySearchFunc(s.used, p.Addr(), func(u netip.Prefix, a netip.Addr) int { return u.Addr().Compare(a) })
	if i > 0 && s.used[i-1].Overlaps(p) {
		return s.used[i-1], true
	}
	if i < len(s.used) && s.used[i].Overlaps(p) {
		return s.used[i], true
	}
	return netip.Prefix{}, false
}

// occupy marks p used: a Node's existing pod CIDR, or a Service range.
// p outside the cluster CIDR is not this set's to track (false, no
// error). A p that overlaps a used range is an error naming that range:
// two Nodes sharing pod addresses, which the caller reports.
func (s *cidrSet) occupy(p netip.Prefix) (bool, error) {
	p = p.Masked()
	if !s.cluster.Overlaps(p) {
		return false, nil
	}
	if p.Bits() < s.cluster.Bits() {
		// A range wider than the cluster CIDR (a Service range around
		// it): everything is used.
		p = s.cluster
	}
	if u, ok := s.overlapping(p); ok {
		if u == p {
			return true, nil
		}
		return false, fmt.Errorf("%s overlaps %s, already in use", p, u)
	}
	i, _ := slices.BinarySearchFunc(s.used, p.Addr(), func(u netip.Prefix, a netip.Addr) int { return u.Addr().Compare(a) })
	s.used = slices.Insert(s.used, i, p)
	return true, nil
}

// release frees p if it is used exactly.
func (s *cidrSet) release(p netip.Prefix) {
	p = p.Masked()
	if i, ok := slices.BinarySearchFunc(s.used, p.Addr(), func(u netip.Prefix, a netip.Addr) int { return u.Addr().Compare(a) }); ok && s.used[i] == p {
		s.used = slices.Delete(s.used, i, i+1)
	}
}

// allocate takes the next free range of mask bits, searching on from
// where the last search of that size stopped and wrapping once, as
// upstream's cidrset does, so a released range is not handed out again at
// once.
func (s *cidrSet) allocate(mask int) (netip.Prefix, error) {
	addrBits := s.cluster.Addr().BitLen()
	if mask < s.cluster.Bits() || mask > addrBits {
		return netip.Prefix{}, fmt.Errorf("a /%d range does not fit the cluster CIDR %s", mask, s.cluster)
	}
	step := new(big.Int).Lsh(big.NewInt(1), uint(addrBits-mask))
	base := addrInt(s.cluster.Addr())
	end := new(big.Int).Add(base, new(big.Int).Lsh(big.NewInt(1), uint(addrBits-s.cluster.Bits())))
	start := s.next[mask]
	if start == nil || start.Cmp(base) < 0 || start.Cmp(end) >= 0 {
		start = new(big.Int).Set(base)
	}
	cand := new(big.Int).Set(start)
	wrapped := false
	for {
		if cand.Cmp(end) >= 0 {
			if wrapped {
				break
			}
			wrapped = true
			cand.Set(base)
		}
		if wrapped && cand.Cmp(start) >= 0 {
			break
		}
		p := netip.PrefixFrom(intAddr(cand, addrBits), mask)
		u, taken := s.overlapping(p)
		if !taken {
			s.used = slices.Insert(s.used, indexOf(s.used, p), p)
			s.next[mask] = new(big.Int).Add(cand, step)
			return p, nil
		}
		// Skip past the range in the way, aligned up to the next block.
		after := new(big.Int).Add(addrInt(u.Addr()), new(big.Int).Lsh(big.NewInt(1), uint(addrBits-u.Bits())))
		if after.Cmp(cand) <= 0 {
			after.Add(cand, step)
		}
		rem := new(big.Int).Mod(new(big.Int).Sub(after, base), step)
		if rem.Sign() != 0 {
			after.Add(after, new(big.Int).Sub(step, rem))
		}
		cand = after
	}
	return netip.Prefix{}, fmt.Errorf("the cluster CIDR %s has no free /%d range left", s.cluster, mask)
}

func indexOf(used []netip.Prefix, p netip.Prefix) int {
	i, _ := slices.BinarySearchFunc(used, p.Addr(), func(u netip.Prefix, a netip.Addr) int { return u.Addr().Compare(a) })
	return i
}

func addrInt(a netip.Addr) *big.Int {
	b := a.AsSlice()
	return new(big.Int).SetBytes(b)
}

func intAddr(i *big.Int, bits int) netip.Addr {
	b := make([]byte, bits/8)
	i.FillBytes(b)
	a, _ := netip.AddrFromSlice(b)
	return a
}
