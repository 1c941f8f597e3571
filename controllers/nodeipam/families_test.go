package nodeipam

import (
	"fmt"
	"net/netip"
	"testing"
)

// TestFamilyOrder: the pod CIDRs' order is the service ranges', else the
// cluster CIDRs', else IPv4 alone, as upstream GCP derives its stack type
// (dual-stack either way, IPv6-only).
func TestFamilyOrder(t *testing.T) {
	p := func(s ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, x := range s {
			out = append(out, netip.MustParsePrefix(x))
		}
		return out
	}
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{}, "[IPv4]"},
		{Options{ClusterCIDRs: p("10.4.0.0/14")}, "[IPv4]"},
		{Options{ClusterCIDRs: p("fd00::/48")}, "[IPv6]"},
		{Options{ClusterCIDRs: p("10.4.0.0/14", "fd00::/48")}, "[IPv4 IPv6]"},
		{Options{ClusterCIDRs: p("10.4.0.0/14", "fd00::/48"), ServiceCIDRs: p("fd00:96::/112", "10.96.0.0/12")}, "[IPv6 IPv4]"},
		{Options{ClusterCIDRs: p("10.4.0.0/14", "fd00::/48"), ServiceCIDRs: p("fd00:96::/112")}, "[IPv6]"},
	} {
		if got := fmt.Sprint(tc.o.families()); got != tc.want {
			t.Errorf("%+v: families %s, want %s", tc.o, got, tc.want)
		}
	}
}
