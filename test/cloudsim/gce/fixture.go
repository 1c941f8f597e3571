package gce

import (
	"fmt"
	"net/netip"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// Fixture is the network a cluster installer would have made: a custom
// mode VPC network "<ClusterID>-net" with one subnetwork
// "<ClusterID>-subnet" (Config.SubnetCIDR, 10.128.0.0/20) in the region,
// and the routes GCE makes for such a network itself (the default route
// to the internet gateway and the subnetwork's route).
//
// The subnetwork is laid out for a cluster whose pods get their ranges
// from the cloud, as kOps makes it for GCE IPAM: a secondary range "pods"
// (Config.PodCIDR) for nodes' alias IP ranges, and dual-stack
// (stackType IPV4_IPV6) with an internal IPv6 /64 for nodes' IPv6 /96s.
// The network has ULA internal IPv6 on, so the /64 is out of the
// network's /48 of fd20::/20, as GCE allocates them; the /48 is fixed by
// the project and the network's name, so the fixture reads the same
// every time.
type Fixture struct {
	Project string   `json:"project"`
	Region  string   `json:"region"`
	Zones   []string `json:"zones"`

	NetworkName string `json:"networkName"`
	// NetworkURL is the network's selfLink.
	NetworkURL string `json:"networkUrl"`

	SubnetworkName string `json:"subnetworkName"`
	SubnetworkURL  string `json:"subnetworkUrl"`
	SubnetworkCIDR string `json:"subnetworkCidr"`
	// GatewayIP is the subnetwork's gateway address.
	GatewayIP string `json:"gatewayIp"`
	// PodRangeName ("pods") and PodCIDR are the subnetwork's secondary
	// range for pods.
	PodRangeName string `json:"podRangeName"`
	PodCIDR      string `json:"podCidr"`
	// SubnetworkIPv6CIDR is the subnetwork's internalIpv6Prefix, a /64;
	// NetworkIPv6CIDR the network's internalIpv6Range, the /48 it is from.
	SubnetworkIPv6CIDR string `json:"subnetworkIpv6Cidr"`
	NetworkIPv6CIDR    string `json:"networkIpv6Cidr"`

	// ExternalCIDR is where external addresses come from.
	ExternalCIDR string `json:"externalCidr"`
	// DefaultRouteName and SubnetRouteName are GCE's own routes.
	DefaultRouteName string `json:"defaultRouteName"`
	SubnetRouteName  string `json:"subnetRouteName"`
}

func (e *Emulator) fixture() Fixture {
	c := e.cfg.ClusterID
	f := Fixture{
		Project: e.cfg.Project, Region: e.cfg.Region, Zones: append([]string(nil), e.cfg.Zones...),
		NetworkName: c + "-net", SubnetworkName: c + "-subnet",
		SubnetworkCIDR: e.cfg.SubnetCIDR, ExternalCIDR: e.cfg.ExternalCIDR,
	}
	f.NetworkURL = link(e.objectPath(e.kinds.get(scopeGlobal, "networks"), "", f.NetworkName))
	f.SubnetworkURL = link(e.objectPath(e.kinds.get(scopeRegional, "subnetworks"), e.cfg.Region, f.SubnetworkName))
	if p, err := netip.ParsePrefix(e.cfg.SubnetCIDR); err == nil {
		f.GatewayIP = p.Masked().Addr().Next().String()
	}
	f.PodRangeName = PodRangeName
	if p, err := netip.ParsePrefix(e.cfg.PodCIDR); err == nil {
		f.PodCIDR = p.Masked().String()
	}
	ula := ulaRange(e.cfg.Project + "/" + f.NetworkName)
	f.NetworkIPv6CIDR = ula.String()
	// The network's first /64 for its one subnetwork.
	f.SubnetworkIPv6CIDR = netip.PrefixFrom(ula.Addr(), 64).String()
	// GCE names its routes default-route-<16 hex>; ours are fixed by the
	// cluster ID so the fixture reads the same every time.
	f.DefaultRouteName = fmt.Sprintf("default-route-%016x", fnv64(c+"/default"))
	f.SubnetRouteName = fmt.Sprintf("default-route-%016x", fnv64(c+"/subnet"))
	return f
}

// Fixture reports the fixture's names and links.
func (e *Emulator) Fixture() Fixture {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.fixture()
}

// buildFixture creates the geography, the network, its subnetwork and
// routes, and the address pools (e.mu held).
func (e *Emulator) buildFixture() error {
	f := e.fixture()
	e.buildGeography()
	if err := e.ips.addPool(externalPool, e.cfg.ExternalCIDR, 2, 1); err != nil {
		return err
	}
	subnetPath := e.objectPath(e.kinds.get(scopeRegional, "subnetworks"), e.cfg.Region, f.SubnetworkName)
	// GCE keeps a subnetwork's first two and last two addresses.
	if err := e.ips.addPool(subnetPath, e.cfg.SubnetCIDR, 2, 2); err != nil {
		return err
	}
	// GCE keeps no addresses of a secondary range: all of it is for alias
	// ranges.
	pods, err := netip.ParsePrefix(e.cfg.PodCIDR)
	if err != nil || !pods.Addr().Is4() {
		return fmt.Errorf("pod CIDR %q is not an IPv4 CIDR", e.cfg.PodCIDR)
	}
	if prefix, _ := netip.ParsePrefix(e.cfg.SubnetCIDR); prefix.Overlaps(pods) {
		// GCE refuses a secondary range overlapping the primary one.
		return fmt.Errorf("pod CIDR %s overlaps the subnetwork's %s", pods, prefix)
	}
	if err := e.ips.addRange(secondaryRangeKey(subnetPath, f.PodRangeName), f.PodCIDR); err != nil {
		return err
	}
	if err := e.ips.addRange(ipv6RangeKey(subnetPath), f.SubnetworkIPv6CIDR); err != nil {
		return err
	}
	e.create(e.kinds.get(scopeGlobal, "networks"), "", f.NetworkName, &computepb.Network{
		AutoCreateSubnetworks:                 proto.Bool(false),
		Mtu:                                   proto.Int32(1460),
		RoutingConfig:                         &computepb.NetworkRoutingConfig{RoutingMode: proto.String("REGIONAL")},
		NetworkFirewallPolicyEnforcementOrder: proto.String("AFTER_CLASSIC_FIREWALL"),
		Subnetworks:                           []string{f.SubnetworkURL},
		EnableUlaInternalIpv6:                 proto.Bool(true),
		InternalIpv6Range:                     proto.String(f.NetworkIPv6CIDR),
	})
	prefix, _ := netip.ParsePrefix(e.cfg.SubnetCIDR)
	e.create(e.kinds.get(scopeRegional, "subnetworks"), e.cfg.Region, f.SubnetworkName, &computepb.Subnetwork{
		Network:               proto.String(f.NetworkURL),
		IpCidrRange:           proto.String(prefix.Masked().String()),
		GatewayAddress:        proto.String(f.GatewayIP),
		PrivateIpGoogleAccess: proto.Bool(false),
		Purpose:               proto.String("PRIVATE"),
		SecondaryIpRanges: []*computepb.SubnetworkSecondaryRange{{
			RangeName: proto.String(f.PodRangeName), IpCidrRange: proto.String(f.PodCIDR),
		}},
		StackType:          proto.String("IPV4_IPV6"),
		Ipv6AccessType:     proto.String("INTERNAL"),
		InternalIpv6Prefix: proto.String(f.SubnetworkIPv6CIDR),
		Fingerprint:        proto.String(fingerprint(f.SubnetworkName)),
	})
	e.buildSystemRoutes(f)
	return nil
}

// ulaRange is a network's /48 of fd20::/20, GCE's range for ULA internal
// IPv6, picked by hashing key.
func ulaRange(key string) netip.Prefix {
	h := fnv64(key)
	var b [16]byte
	b[0], b[1] = 0xfd, 0x20
	// fd20::/20 fixes the first 20 bits; the next 28 are the network's.
	b[2], b[3], b[4], b[5] = byte(h>>24)&0x0f, byte(h>>16), byte(h>>8), byte(h)
	return netip.PrefixFrom(netip.AddrFrom16(b), 48)
}

// fnv64 is FNV-1a, for names and fingerprints fixed by their input.
func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := range len(s) {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
