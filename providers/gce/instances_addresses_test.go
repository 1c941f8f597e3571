package gce

import (
	"slices"
	"strings"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	nodehelpers "k8s.io/cloud-provider/node/helpers"

	gceemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/gce"
)

// nicOf is a network interface as the API returns it: networkIP, access
// configs' natIPs ("" for one without), and the IPv6 fields.
type nicOf struct {
	ip         string
	nat        []string
	ipv6       string
	accessType string
	extIPv6    []string
}

func (n nicOf) api() *computepb.NetworkInterface {
	nic := &computepb.NetworkInterface{}
	if n.ip != "" {
		nic.NetworkIP = proto.String(n.ip)
	}
	for _, ip := range n.nat {
		ac := &computepb.AccessConfig{Type: proto.String("ONE_TO_ONE_NAT")}
		if ip != "" {
			ac.NatIP = proto.String(ip)
		}
		nic.AccessConfigs = append(nic.AccessConfigs, ac)
	}
	if n.ipv6 != "" {
		nic.Ipv6Address = proto.String(n.ipv6)
	}
	if n.accessType != "" {
		nic.StackType = proto.String("IPV4_IPV6")
		nic.Ipv6AccessType = proto.String(n.accessType)
	}
	for _, ip := range n.extIPv6 {
		nic.Ipv6AccessConfigs = append(nic.Ipv6AccessConfigs, &computepb.AccessConfig{
			Type: proto.String("DIRECT_IPV6"), ExternalIpv6: proto.String(ip), ExternalIpv6PrefixLength: proto.Int32(96)})
	}
	return nic
}

// addrList writes addresses as "Internal 10.0.0.2, External 35.0.0.1".
func addrList(addrs []v1.NodeAddress) string {
	var out []string
	for _, a := range addrs {
		out = append(out, strings.TrimSuffix(strings.TrimPrefix(string(a.Type), "Node"), "IP")+" "+a.Address)
	}
	return strings.Join(out, ", ")
}

// TestNodeAddressesGolden pins the Node addresses of an instance to the
// upstream GCE CCM's (cloud-provider-gcp providers/gce/gce_instances.go:
// nodeAddressesFromInstance 287-306, getIPV6AddressFromInterface 308-316,
// orderAddresses 96-122): every interface in order, networkIP, natIPs,
// then the IPv6 (internal, else the last external one when the access type
// is EXTERNAL), all IPv6 as InternalIP; then a stable partition by family,
// IPv6 first with stackType IPV6 only. The one divergence: an access
// config without a natIP gives no address (upstream's is empty). These
// lists MUST NOT change: a kubelet's --node-ip is checked against them.
func TestNodeAddressesGolden(t *testing.T) {
	for _, tt := range []struct {
		name string
		nics []nicOf
		// v4 is the answer for IPV4 and IPV4_IPV6, v6 for IPV6.
		v4, v6 string
	}{
		{"no interface", nil, "", ""},
		{"IPv4 only, no external IP",
			[]nicOf{{ip: "10.0.0.2"}},
			"Internal 10.0.0.2", "Internal 10.0.0.2"},
		{"IPv4 with an external IP",
			[]nicOf{{ip: "10.0.0.2", nat: []string{"35.0.0.1"}}},
			"Internal 10.0.0.2, External 35.0.0.1", "Internal 10.0.0.2, External 35.0.0.1"},
		{"stopped: the access config has no natIP (upstream: an empty ExternalIP)",
			[]nicOf{{ip: "10.0.0.2", nat: []string{""}}},
			"Internal 10.0.0.2", "Internal 10.0.0.2"},
		{"dual-stack, internal IPv6",
			[]nicOf{{ip: "10.0.0.2", nat: []string{"35.0.0.1"}, ipv6: "fd20:1:2:0:0:1::", accessType: "INTERNAL"}},
			"Internal 10.0.0.2, External 35.0.0.1, Internal fd20:1:2:0:0:1::",
			"Internal fd20:1:2:0:0:1::, Internal 10.0.0.2, External 35.0.0.1"},
		{"dual-stack, external IPv6 is an InternalIP",
			[]nicOf{{ip: "10.0.0.2", accessType: "EXTERNAL", extIPv6: []string{"2600:1900:4000:1:0:1::"}}},
			"Internal 10.0.0.2, Internal 2600:1900:4000:1:0:1::",
			"Internal 2600:1900:4000:1:0:1::, Internal 10.0.0.2"},
		{"external IPv6: the last access config's",
			[]nicOf{{ip: "10.0.0.2", accessType: "EXTERNAL", extIPv6: []string{"2600:1900:4000:1:0:1::", "2600:1900:4000:1:0:2::"}}},
			"Internal 10.0.0.2, Internal 2600:1900:4000:1:0:2::",
			"Internal 2600:1900:4000:1:0:2::, Internal 10.0.0.2"},
		{"internal ipv6Address before an external one",
			[]nicOf{{ip: "10.0.0.2", ipv6: "fd20:1:2:0:0:1::", accessType: "EXTERNAL", extIPv6: []string{"2600:1900:4000:1:0:1::"}}},
			"Internal 10.0.0.2, Internal fd20:1:2:0:0:1::",
			"Internal fd20:1:2:0:0:1::, Internal 10.0.0.2"},
		{"IPv6 access configs of an INTERNAL interface are not read",
			[]nicOf{{ip: "10.0.0.2", accessType: "INTERNAL", extIPv6: []string{"2600:1900:4000:1:0:1::"}}},
			"Internal 10.0.0.2", "Internal 10.0.0.2"},
		{"IPv6-only interface",
			[]nicOf{{ipv6: "fd20:1:2:0:0:1::", accessType: "INTERNAL"}},
			"Internal fd20:1:2:0:0:1::", "Internal fd20:1:2:0:0:1::"},
		{"every interface, in order; families partitioned stably",
			[]nicOf{
				{ip: "10.0.0.2", nat: []string{"35.0.0.1"}, ipv6: "fd20:1:2:0:0:1::", accessType: "INTERNAL"},
				{ip: "10.1.0.2", nat: []string{"35.0.0.2"}, accessType: "EXTERNAL", extIPv6: []string{"2600:1900:4000:1:0:1::"}},
				{ip: "10.2.0.2"},
			},
			"Internal 10.0.0.2, External 35.0.0.1, Internal 10.1.0.2, External 35.0.0.2, Internal 10.2.0.2, Internal fd20:1:2:0:0:1::, Internal 2600:1900:4000:1:0:1::",
			"Internal fd20:1:2:0:0:1::, Internal 2600:1900:4000:1:0:1::, Internal 10.0.0.2, External 35.0.0.1, Internal 10.1.0.2, External 35.0.0.2, Internal 10.2.0.2"},
		{"IPv6-only first interface, IPv4 second: the partition moves the IPv4 ahead",
			[]nicOf{{ipv6: "fd20:1:2:0:0:1::", accessType: "INTERNAL"}, {ip: "10.1.0.2"}},
			"Internal 10.1.0.2, Internal fd20:1:2:0:0:1::", "Internal fd20:1:2:0:0:1::, Internal 10.1.0.2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := &computepb.Instance{Name: proto.String("node-0"), Zone: proto.String("zones/europe-west1-b")}
			for _, n := range tt.nics {
				in.NetworkInterfaces = append(in.NetworkInterfaces, n.api())
			}
			i := fromInstance("my-project-123", in)
			for _, st := range stackTypes {
				want := tt.v4
				if st == StackIPv6 {
					want = tt.v6
				}
				if got := addrList(orderAddresses(i.addrs, st == StackIPv6)); got != want {
					t.Errorf("stackType %s:\n got %s\nwant %s", st, got, want)
				}
			}
		})
	}
}

// TestOrderAddresses: what is no IP (a host name) goes with the preferred
// family, as upstream's net.ParseIP gives it nil; an IPv4-mapped IPv6
// address is IPv4, as utilnet.IsIPv6 says.
func TestOrderAddresses(t *testing.T) {
	in := []v1.NodeAddress{
		{Type: v1.NodeInternalIP, Address: "fd20::1"},
		{Type: v1.NodeInternalIP, Address: "10.0.0.2"},
		{Type: v1.NodeHostName, Address: "node-0"},
		{Type: v1.NodeInternalIP, Address: "::ffff:10.0.0.3"},
		{Type: v1.NodeInternalIP, Address: "fe80::1%eth0"},
	}
	orig := slices.Clone(in)
	for _, tt := range []struct {
		preferIPv6 bool
		want       string
	}{
		{false, "Internal 10.0.0.2, Host node-0, Internal ::ffff:10.0.0.3, Internal fe80::1%eth0, Internal fd20::1"},
		{true, "Internal fd20::1, Host node-0, Internal fe80::1%eth0, Internal 10.0.0.2, Internal ::ffff:10.0.0.3"},
	} {
		got := orderAddresses(in, tt.preferIPv6)
		if s := strings.ReplaceAll(addrList(got), "Hostname", "Host"); s != tt.want {
			t.Errorf("preferIPv6 %v:\n got %s\nwant %s", tt.preferIPv6, s, tt.want)
		}
		if len(got) != len(in) || !slices.Equal(in, orig) {
			t.Error("orderAddresses lost an address or changed its input")
		}
	}
}

// TestNodeAddressesThroughAPI: an instance with three interfaces, read by
// InstanceMetadata through the real client from the emulator: nic0
// dual-stack with an internal IPv6 and an external IPv4, nic1 on an
// EXTERNAL-IPv6 subnetwork (its IPv6 only in an IPv6 access config),
// nic2 IPv4 only. Every interface's addresses are there, IPv4 first
// unless stackType is IPV6, and the Hostname last. The cloud-node
// controller's own check of a kubelet's dual-stack --node-ip
// (k8s.io/cloud-provider node/helpers GetNodeAddressesFromNodeIP) keeps
// both of nic0's addresses.
func TestNodeAddressesThroughAPI(t *testing.T) {
	for _, stack := range stackTypes {
		t.Run(stack, func(t *testing.T) {
			env := newTestEnv(t, gceemu.Config{}, func(s *Section) { s.StackType = stack })
			ext, err := env.emu.AddNetwork(gceemu.NetworkSpec{Name: "ext", SubnetCIDR: "10.1.0.0/24", StackType: gceemu.StackDual, IPv6AccessType: gceemu.IPv6External})
			if err != nil {
				t.Fatal(err)
			}
			v4, err := env.emu.AddNetwork(gceemu.NetworkSpec{Name: "v4", SubnetCIDR: "10.2.0.0/24"})
			if err != nil {
				t.Fatal(err)
			}
			info, err := env.emu.Launch(gceemu.InstanceSpec{Name: "multi", StackType: gceemu.StackDual, ExternalIP: true, Interfaces: []gceemu.InterfaceSpec{
				{Subnetwork: ext.SubnetworkName, StackType: gceemu.StackDual, ExternalIPv6: true},
				{Subnetwork: v4.SubnetworkName},
			}})
			if err != nil {
				t.Fatal(err)
			}
			nic := info.Interfaces
			v4s := []string{"Internal " + nic[0].InternalIP, "External " + nic[0].ExternalIP, "Internal " + nic[1].InternalIP, "Internal " + nic[2].InternalIP}
			v6s := []string{"Internal " + nic[0].IPv6Address, "Internal " + nic[1].ExternalIPv6}
			want := append(slices.Clone(v4s), v6s...)
			if stack == StackIPv6 {
				want = append(slices.Clone(v6s), v4s...)
			}
			want = append(want, "Host multi")
			node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "multi"}}
			md, err := env.cloud.instances.InstanceMetadata(t.Context(), node)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.ReplaceAll(addrList(md.NodeAddresses), "Hostname", "Host"); got != strings.Join(want, ", ") {
				t.Errorf("addresses\n got %s\nwant %s", got, strings.Join(want, ", "))
			}
			kept, err := nodehelpers.GetNodeAddressesFromNodeIP(nic[0].InternalIP+","+nic[0].IPv6Address, md.NodeAddresses)
			if err != nil {
				t.Fatalf("dual-stack --node-ip: %v", err)
			}
			if kept[0].Address != nic[0].InternalIP || kept[1].Address != nic[0].IPv6Address {
				t.Errorf("dual-stack --node-ip keeps %v", kept)
			}
		})
	}
}
