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
	e.create(e.kinds.get(scopeGlobal, "networks"), "", f.NetworkName, &computepb.Network{
		AutoCreateSubnetworks:                 proto.Bool(false),
		Mtu:                                   proto.Int32(1460),
		RoutingConfig:                         &computepb.NetworkRoutingConfig{RoutingMode: proto.String("REGIONAL")},
		NetworkFirewallPolicyEnforcementOrder: proto.String("AFTER_CLASSIC_FIREWALL"),
		Subnetworks:                           []string{f.SubnetworkURL},
	})
	prefix, _ := netip.ParsePrefix(e.cfg.SubnetCIDR)
	e.create(e.kinds.get(scopeRegional, "subnetworks"), e.cfg.Region, f.SubnetworkName, &computepb.Subnetwork{
		Network:               proto.String(f.NetworkURL),
		IpCidrRange:           proto.String(prefix.Masked().String()),
		GatewayAddress:        proto.String(f.GatewayIP),
		PrivateIpGoogleAccess: proto.Bool(false),
		Purpose:               proto.String("PRIVATE"),
		StackType:             proto.String("IPV4_ONLY"),
		Fingerprint:           proto.String(fingerprint(f.SubnetworkName)),
	})
	e.buildSystemRoutes(f)
	return nil
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
