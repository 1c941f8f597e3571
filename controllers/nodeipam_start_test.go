package controllers

import (
	"strings"
	"testing"
)

// TestNodeIPAMFlags: the flags are read as upstream's starter reads them
// (cloud-provider-gcp pkg/controller/nodeipam/starter.go), and a mistake
// names the flag.
func TestNodeIPAMFlags(t *testing.T) {
	for _, tc := range []struct {
		name, cluster string
		f             NodeIPAMFlags
		err           string
		v4, v6        int
	}{
		{name: "single stack", cluster: "10.4.0.0/14", v4: 0},
		{name: "single stack mask", cluster: "10.4.0.0/14", f: NodeIPAMFlags{MaskSize: 26}, v4: 26},
		{name: "IPv6 single stack mask", cluster: "fd00::/48", f: NodeIPAMFlags{MaskSize: 80}, v6: 80},
		{name: "dual stack", cluster: "10.4.0.0/14,fd00::/48", f: NodeIPAMFlags{MaskSizeIPv4: 25, MaskSizeIPv6: 80}, v4: 25, v6: 80},
		{name: "no cluster CIDR", cluster: "", err: "--cluster-cidr is required"},
		{name: "bad cluster CIDR", cluster: "10.4.0.0/33", err: "--cluster-cidr"},
		{name: "two IPv4", cluster: "10.4.0.0/14,10.8.0.0/14", err: "second IPv4"},
		{name: "mask with dual stack", cluster: "10.4.0.0/14,fd00::/48", f: NodeIPAMFlags{MaskSize: 24}, err: "not allowed with a dual-stack"},
		{name: "mask beside family masks", cluster: "10.4.0.0/14", f: NodeIPAMFlags{MaskSize: 24, MaskSizeIPv4: 24}, err: "not allowed beside"},
		{name: "service ranges of one family", cluster: "10.4.0.0/14", f: NodeIPAMFlags{ServiceClusterIPRange: "10.96.0.0/12,10.100.0.0/16"}, err: "--service-cluster-ip-range"},
		{name: "bad mask", cluster: "10.4.0.0/14", f: NodeIPAMFlags{MaskSizeIPv4: 40}, err: "--node-cidr-mask-size-ipv4"},
	} {
		o, err := nodeIPAMOptions(tc.cluster, tc.f)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want one naming %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if o.MaskIPv4 != tc.v4 || o.MaskIPv6 != tc.v6 {
			t.Errorf("%s: masks %d/%d, want %d/%d", tc.name, o.MaskIPv4, o.MaskIPv6, tc.v4, tc.v6)
		}
	}
}
