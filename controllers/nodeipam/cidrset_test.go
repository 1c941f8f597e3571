package nodeipam

import (
	"net/netip"
	"testing"
)

func TestCIDRSetAllocatesMixedSizesWithoutOverlap(t *testing.T) {
	s := newCIDRSet(netip.MustParsePrefix("10.244.0.0/22"))
	var got []netip.Prefix
	for _, m := range []int{24, 26, 24, 26, 26, 26} {
		p, err := s.allocate(m)
		if err != nil {
			t.Fatalf("allocate /%d: %v", m, err)
		}
		got = append(got, p)
	}
	want := []string{"10.244.0.0/24", "10.244.1.0/26", "10.244.2.0/24", "10.244.1.64/26", "10.244.1.128/26", "10.244.1.192/26"}
	for i, w := range want {
		if got[i].String() != w {
			t.Errorf("allocation %d = %s, want %s (all: %v)", i, got[i], w, got)
		}
	}
	for i := range got {
		for j := i + 1; j < len(got); j++ {
			if got[i].Overlaps(got[j]) {
				t.Errorf("%s overlaps %s", got[i], got[j])
			}
		}
	}
	if p, err := s.allocate(24); err != nil || p.String() != "10.244.3.0/24" {
		t.Fatalf("last /24 = %v, %v", p, err)
	}
	if _, err := s.allocate(24); err == nil {
		t.Fatal("a full cluster CIDR handed out another /24")
	}
	s.release(netip.MustParsePrefix("10.244.2.0/24"))
	if p, err := s.allocate(24); err != nil || p.String() != "10.244.2.0/24" {
		t.Fatalf("after release = %v, %v", p, err)
	}
}

func TestCIDRSetOccupy(t *testing.T) {
	s := newCIDRSet(netip.MustParsePrefix("10.244.0.0/16"))
	if ok, err := s.occupy(netip.MustParsePrefix("10.244.0.0/24")); !ok || err != nil {
		t.Fatalf("occupy = %v, %v", ok, err)
	}
	// The same range again is the same Node seen twice, not a clash.
	if ok, err := s.occupy(netip.MustParsePrefix("10.244.0.0/24")); !ok || err != nil {
		t.Fatalf("occupy again = %v, %v", ok, err)
	}
	if _, err := s.occupy(netip.MustParsePrefix("10.244.0.128/25")); err == nil {
		t.Fatal("an overlapping range was occupied")
	}
	if ok, _ := s.occupy(netip.MustParsePrefix("192.168.0.0/24")); ok {
		t.Fatal("a range outside the cluster CIDR was tracked")
	}
	if p, err := s.allocate(24); err != nil || p.String() != "10.244.1.0/24" {
		t.Fatalf("allocate after occupy = %v, %v", p, err)
	}
}

func TestCIDRSetIPv6(t *testing.T) {
	s := newCIDRSet(netip.MustParsePrefix("fd00:10:244::/56"))
	for i, w := range []string{"fd00:10:244::/64", "fd00:10:244:1::/64"} {
		p, err := s.allocate(64)
		if err != nil || p.String() != w {
			t.Fatalf("allocation %d = %v, %v; want %s", i, p, err, w)
		}
	}
	if _, err := s.allocate(48); err == nil {
		t.Fatal("a /48 from a /56 was handed out")
	}
}

// A service range inside the cluster CIDR is never handed to a Node, as
// upstream's filterOutServiceRange.
func TestCIDRSetServiceRangeSkipped(t *testing.T) {
	s := newCIDRSet(netip.MustParsePrefix("10.0.0.0/22"))
	if _, err := s.occupy(netip.MustParsePrefix("10.0.0.0/23")); err != nil {
		t.Fatal(err)
	}
	if p, err := s.allocate(24); err != nil || p.String() != "10.0.2.0/24" {
		t.Fatalf("allocate = %v, %v", p, err)
	}
}
