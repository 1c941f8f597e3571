package gce

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// An internal IPv6 rule gets a /96 of the subnetwork's internal IPv6
// range, shown written out with its length; it keeps a /96 named for it,
// never one an instance or another rule holds, and lets it go when
// deleted. An IPv4 rule and an IPv6 one share one backend service.
func TestForwardingRuleInternalIPv6(t *testing.T) {
	env := newTestEnv(t, Config{})
	fx := env.emu.Fixture()
	bsLink := env.ilbBase(t, "a1", "TCP")
	rule := func(name, ip string) *computepb.ForwardingRule {
		fr := &computepb.ForwardingRule{Name: proto.String(name), LoadBalancingScheme: proto.String("INTERNAL"), IPProtocol: proto.String("TCP"),
			IpVersion: proto.String("IPV6"), BackendService: proto.String(bsLink), Subnetwork: proto.String(fx.SubnetworkURL), Ports: []string{"80"}}
		if ip != "" {
			fr.IPAddress = proto.String(ip)
		}
		return fr
	}
	inst := env.launch(t, InstanceSpec{Name: "node-1", StackType: StackDual})
	op, err := env.insertRule(t, &computepb.ForwardingRule{Name: proto.String("a1"), LoadBalancingScheme: proto.String("INTERNAL"), IPProtocol: proto.String("TCP"),
		BackendService: proto.String(bsLink), Subnetwork: proto.String(fx.SubnetworkURL), Ports: []string{"80"}})
	wait(t, op, err)
	op, err = env.insertRule(t, rule("a1-ipv6", ""))
	wait(t, op, err)
	got := env.getRule(t, "a1-ipv6")
	addr, length, _ := strings.Cut(got.GetIPAddress(), "/")
	a, perr := netip.ParseAddr(addr)
	subnet := netip.MustParsePrefix(fx.SubnetworkIPv6CIDR)
	if perr != nil || length != "96" || !subnet.Contains(a) || got.GetIpVersion() != "IPV6" || strings.Contains(addr, "::") {
		t.Fatalf("IPv6 rule address %q (version %q), want a written-out /96 of %s", got.GetIPAddress(), got.GetIpVersion(), subnet)
	}
	if netip.PrefixFrom(a, 96).Contains(netip.MustParseAddr(inst.IPv6Address)) {
		t.Errorf("rule's /96 %s holds node-1's %s", got.GetIPAddress(), inst.IPv6Address)
	}
	if bs := env.getBS(t, "a1"); len(bs.GetUsedBy()) != 2 {
		t.Errorf("backend service used by %v, want both rules", bs.GetUsedBy())
	}

	// Its /96 is its own: another rule naming it, or node-1's, is refused.
	for _, ip := range []string{got.GetIPAddress(), a.String(), inst.IPv6Address} {
		op, err = env.insertRule(t, rule("other", ip))
		if err == nil {
			err = op.Wait(t.Context())
		}
		if err == nil || !strings.Contains(err.Error(), "IP_IN_USE_BY_ANOTHER_RESOURCE") && !strings.Contains(err.Error(), "already being used") {
			t.Errorf("a rule on %s: %v, want IP in use", ip, err)
		}
	}
	// Deleted, the /96 is free: a rule made again on it gets it.
	env.deleteRule(t, "a1-ipv6")
	op, err = env.insertRule(t, rule("a1-ipv6", a.String()))
	wait(t, op, err)
	if again := env.getRule(t, "a1-ipv6").GetIPAddress(); again != got.GetIPAddress() {
		t.Errorf("made again on %s: %s, want %s", a, again, got.GetIPAddress())
	}
}

// What GCE refuses of IPv6 rules, each with its field.
func TestForwardingRuleIPv6Refused(t *testing.T) {
	env := newTestEnv(t, Config{})
	fx := env.emu.Fixture()
	bsLink := env.ilbBase(t, "a1", "TCP")
	pool := env.insertPool(t, "pool")
	v4, err := env.emu.AddNetwork(NetworkSpec{Name: "v4", SubnetCIDR: "10.1.0.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	ext, err := env.emu.AddNetwork(NetworkSpec{Name: "ext", SubnetCIDR: "10.2.0.0/24", StackType: StackDual, IPv6AccessType: IPv6External})
	if err != nil {
		t.Fatal(err)
	}
	internal := func(subnet string) *computepb.ForwardingRule {
		return &computepb.ForwardingRule{Name: proto.String("r"), LoadBalancingScheme: proto.String("INTERNAL"), IPProtocol: proto.String("TCP"),
			IpVersion: proto.String("IPV6"), BackendService: proto.String(bsLink), Subnetwork: proto.String(subnet), Ports: []string{"80"}}
	}
	external := func(f func(*computepb.ForwardingRule)) *computepb.ForwardingRule {
		fr := &computepb.ForwardingRule{Name: proto.String("r"), IpVersion: proto.String("IPV6"), IPProtocol: proto.String("TCP"),
			PortRange: proto.String("80"), Target: proto.String(pool), Subnetwork: proto.String(ext.SubnetworkURL)}
		f(fr)
		return fr
	}
	for _, tt := range []struct {
		name   string
		fr     *computepb.ForwardingRule
		reason string
		text   string
	}{
		{"unknown version", &computepb.ForwardingRule{Name: proto.String("r"), IpVersion: proto.String("IPV5"), Target: proto.String(pool)}, "invalid", "resource.ipVersion"},
		{"internal on an IPv4-only subnetwork", internal(v4.SubnetworkURL), "invalid", "no internal IPv6 range"},
		{"internal on an external IPv6 subnetwork", internal(ext.SubnetworkURL), "invalid", "no internal IPv6 range"},
		{"internal with an IPv4 address", func() *computepb.ForwardingRule {
			fr := internal(fx.SubnetworkURL)
			fr.IPAddress = proto.String("10.128.0.9")
			return fr
		}(), "invalid", "resource.IPAddress"},
		{"external in the standard tier", external(func(fr *computepb.ForwardingRule) { fr.NetworkTier = proto.String("STANDARD") }), "invalid", "resource.networkTier"},
		{"external without a subnetwork", external(func(fr *computepb.ForwardingRule) { fr.Subnetwork = nil }), "required", "resource.subnetwork"},
		{"external on an internal IPv6 subnetwork", external(func(fr *computepb.ForwardingRule) { fr.Subnetwork = proto.String(fx.SubnetworkURL) }), "invalid", "no external IPv6 range"},
		{"external address without /96", external(func(fr *computepb.ForwardingRule) { fr.IPAddress = proto.String("2600:1900:4000:1::") }), "invalid", "/96"},
		{"external to a target pool", external(func(*computepb.ForwardingRule) {}), "invalid", "A target pool takes IPv4 forwarding rules only"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := env.insertRule(t, tt.fr)
			wantCode(t, err, http.StatusBadRequest, tt.reason)
			if !strings.Contains(err.Error(), tt.text) {
				t.Errorf("error %v does not say %q", err, tt.text)
			}
		})
	}
	if n := len(env.emu.ForwardingRules()); n != 0 {
		t.Errorf("%d rules left by refused inserts", n)
	}
}

// Firewall rules take IPv6 source and destination ranges, kept as given.
func TestFirewallIPv6Ranges(t *testing.T) {
	env := newTestEnv(t, Config{})
	fx := env.emu.Fixture()
	fw := &computepb.Firewall{Name: proto.String("k8s-fw-a1-ipv6"), Network: proto.String(fx.NetworkURL),
		SourceRanges: []string{"::/0"}, DestinationRanges: []string{"fd20:1:2:3:4::"}, TargetTags: []string{"node"},
		Allowed: []*computepb.Allowed{{IPProtocol: proto.String("tcp"), Ports: []string{"80"}}}}
	op, err := env.firewalls(t).Insert(t.Context(), &computepb.InsertFirewallRequest{Project: env.project, FirewallResource: fw})
	wait(t, op, err)
	got, err := env.firewalls(t).Get(t.Context(), &computepb.GetFirewallRequest{Project: env.project, Firewall: "k8s-fw-a1-ipv6"})
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(&computepb.Firewall{SourceRanges: got.SourceRanges, DestinationRanges: got.DestinationRanges},
		&computepb.Firewall{SourceRanges: fw.SourceRanges, DestinationRanges: fw.DestinationRanges}) {
		t.Errorf("ranges %v -> %v, want as given", got.GetSourceRanges(), got.GetDestinationRanges())
	}
}

// cloudsim.Instances with IPv6: nic0 dual-stack, its IPv6 reported.
func TestLaunchInstanceIPv6(t *testing.T) {
	env := newTestEnv(t, Config{})
	fx := env.emu.Fixture()
	info, err := env.emu.LaunchInstance(cloudsim.InstanceSpec{Name: "node-1", IPv6: true})
	if err != nil {
		t.Fatal(err)
	}
	a, err := netip.ParseAddr(info.PrivateIPv6)
	if err != nil || !netip.MustParsePrefix(fx.SubnetworkIPv6CIDR).Contains(a) || info.PrivateIP == "" || info.PrivateIP == info.PrivateIPv6 {
		t.Errorf("launched %+v, want an IPv4 and an IPv6 of %s", info, fx.SubnetworkIPv6CIDR)
	}
	if gi, _ := env.emu.Instance("node-1"); gi.StackType != StackDual {
		t.Errorf("nic0 stack type %s", gi.StackType)
	}
	plain, err := env.emu.LaunchInstance(cloudsim.InstanceSpec{Name: "node-2"})
	if err != nil || plain.PrivateIPv6 != "" {
		t.Errorf("launched without IPv6: %+v, %v", plain, err)
	}
}
