package gce

import (
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

// TestDualStackNodes: in a dual-stack cluster every launched instance's
// nic0 has an IPv6 of the fixture subnetwork, which the Node is expected
// to carry as an InternalIP beside its IPv4 one.
func TestDualStackNodes(t *testing.T) {
	cl, err := Adapter{}.Start(conformance.Options{ClusterID: "ds", DualStack: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	c := cl.(*Cloud)
	inst, err := c.Launch(conformance.InstanceSpec{NameHint: "node-1"})
	if err != nil {
		t.Fatal(err)
	}
	want, err := c.ExpectedNode(inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	var v4, v6 int
	for _, a := range want.Addresses {
		if a.Type != corev1.NodeInternalIP {
			continue
		}
		ip := netip.MustParseAddr(a.Address)
		switch {
		case ip.Is4():
			v4++
		case netip.MustParsePrefix(c.Fixture().SubnetworkIPv6CIDR).Contains(ip):
			v6++
		}
	}
	if v4 != 1 || v6 != 1 {
		t.Errorf("expected addresses %v, want an IPv4 and an IPv6 InternalIP", want.Addresses)
	}
	if got := c.LoadBalancerFamilies(types.NamespacedName{Namespace: "default", Name: "none"}); len(got) != 0 {
		t.Errorf("families of a Service without load balancer: %v", got)
	}
	if got := ruleNamesOf("a1"); len(got) != 6 || got[1] != "a1-ipv6" || got[5] != "a1-udp-ipv6" {
		t.Errorf("rule names %v", got)
	}
}
