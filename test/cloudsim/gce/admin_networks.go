package gce

import (
	"fmt"
	"net/http"
	"net/netip"
	"slices"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// More networks, made by the admin API as an installer would make them
// (networks.insert and subnetworks.insert are not emulated): each a
// custom-mode VPC network with one subnetwork in the region, for
// instances with more than one network interface (GCE puts every
// interface of an instance on a network of its own) or on a subnetwork
// with another stack type or IPv6 access type than the fixture's.
//
// A subnetwork's IPv6 range is a /64, as on GCE: an INTERNAL one's
// internalIpv6Prefix comes from the network's ULA /48 (fd20::/20, as the
// fixture's), an EXTERNAL one's externalIpv6Prefix from Google's
// 2600:1900:4000::/36; each interface on it gets a /96 of it. Unlike
// GCE, which requires it only within a network, every subnetwork's IPv4
// range must be apart from every other range the emulator hands addresses
// out of, so an address names its pool.

// IPv6 access types of a subnetwork, which its interfaces inherit.
const (
	IPv6Internal = "INTERNAL"
	IPv6External = "EXTERNAL"
)

// externalIPv6Space is where EXTERNAL subnetworks' /64s come from.
var externalIPv6Space = netip.MustParsePrefix("2600:1900:4000::/36")

// NetworkSpec describes a network with one subnetwork.
type NetworkSpec struct {
	// Name is the network's; its subnetwork is "<Name>-subnet".
	Name string `json:"name"`
	// SubnetCIDR is the subnetwork's IPv4 range, required unless
	// StackType is IPV6_ONLY, which has none.
	SubnetCIDR string `json:"subnetCidr,omitempty"`
	// StackType is the subnetwork's: IPV4_ONLY (the default), IPV4_IPV6
	// or IPV6_ONLY.
	StackType string `json:"stackType,omitempty"`
	// IPv6AccessType is the subnetwork's, INTERNAL or EXTERNAL: required
	// with an IPv6 stack type, refused without one.
	IPv6AccessType string `json:"ipv6AccessType,omitempty"`
}

// NetworkInfo is a network made by AddNetwork.
type NetworkInfo struct {
	NetworkName    string `json:"networkName"`
	NetworkURL     string `json:"networkUrl"`
	SubnetworkName string `json:"subnetworkName"`
	SubnetworkURL  string `json:"subnetworkUrl"`
	SubnetworkCIDR string `json:"subnetworkCidr,omitempty"`
	StackType      string `json:"stackType"`
	IPv6AccessType string `json:"ipv6AccessType,omitempty"`
	// IPv6CIDR is the subnetwork's internalIpv6Prefix or
	// externalIpv6Prefix, a /64.
	IPv6CIDR string `json:"ipv6Cidr,omitempty"`
}

// externalIPv6RangeKey names an EXTERNAL subnetwork's IPv6 range in the
// ipam (ipv6RangeKey is an INTERNAL one's).
func externalIPv6RangeKey(subnetPath string) string { return subnetPath + "/externalIpv6Prefix" }

// AddNetwork makes a network and its subnetwork, checked as
// subnetworks.insert checks them: an IPv6 access type only with an IPv6
// stack type, and then required.
func (e *Emulator) AddNetwork(spec NetworkSpec) (NetworkInfo, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settle(e.cfg.Now())
	if aerr := validName("name", spec.Name); aerr != nil {
		return NetworkInfo{}, errAdmin("network name: %s", aerr.Message)
	}
	nk, sk := e.kinds.get(scopeGlobal, "networks"), e.kinds.get(scopeRegional, "subnetworks")
	subnetName := spec.Name + "-subnet"
	if aerr := validName("name", subnetName); aerr != nil {
		return NetworkInfo{}, errAdmin("subnetwork name %s: %s", subnetName, aerr.Message)
	}
	netPath, subnetPath := e.objectPath(nk, "", spec.Name), e.objectPath(sk, e.cfg.Region, subnetName)
	if _, ok := nk.store.Get(netPath); ok {
		return NetworkInfo{}, errAdminAPI(errAlreadyExists(netPath))
	}
	if spec.StackType == "" {
		spec.StackType = StackIPv4Only
	}
	switch {
	case !slices.Contains([]string{StackIPv4Only, StackDual, StackIPv6Only}, spec.StackType):
		return NetworkInfo{}, errAdminAPI(errInvalid("resource.stackType", spec.StackType, "Must be one of IPV4_ONLY, IPV4_IPV6, IPV6_ONLY."))
	case spec.StackType == StackIPv4Only && spec.IPv6AccessType != "":
		return NetworkInfo{}, errAdminAPI(errInvalid("resource.ipv6AccessType", spec.IPv6AccessType,
			"An IPv6 access type is valid only with stack type IPV4_IPV6 or IPV6_ONLY."))
	case spec.StackType != StackIPv4Only && spec.IPv6AccessType == "":
		return NetworkInfo{}, errAdminAPI(errRequired("resource.ipv6AccessType"))
	case spec.StackType != StackIPv4Only && spec.IPv6AccessType != IPv6Internal && spec.IPv6AccessType != IPv6External:
		return NetworkInfo{}, errAdminAPI(errInvalid("resource.ipv6AccessType", spec.IPv6AccessType, "Must be one of INTERNAL, EXTERNAL."))
	case spec.StackType == StackIPv6Only && spec.SubnetCIDR != "":
		return NetworkInfo{}, errAdminAPI(errInvalid("resource.ipCidrRange", spec.SubnetCIDR, "An IPV6_ONLY subnetwork has no IPv4 range."))
	case spec.StackType != StackIPv6Only && spec.SubnetCIDR == "":
		return NetworkInfo{}, errAdminAPI(errRequired("resource.ipCidrRange"))
	}
	info := NetworkInfo{
		NetworkName: spec.Name, NetworkURL: link(netPath), SubnetworkName: subnetName, SubnetworkURL: link(subnetPath),
		StackType: spec.StackType, IPv6AccessType: spec.IPv6AccessType,
	}
	sn := &computepb.Subnetwork{
		Network: proto.String(info.NetworkURL), Purpose: proto.String("PRIVATE"),
		PrivateIpGoogleAccess: proto.Bool(false), StackType: proto.String(spec.StackType),
		Fingerprint: proto.String(fingerprint(subnetName)),
	}
	if spec.SubnetCIDR != "" {
		p, err := netip.ParsePrefix(spec.SubnetCIDR)
		if err != nil || !p.Addr().Is4() || p.Bits() < 8 || p.Bits() > 29 {
			return NetworkInfo{}, errAdminAPI(errInvalid("resource.ipCidrRange", spec.SubnetCIDR, "Must be an IPv4 CIDR range from /8 to /29."))
		}
		p = p.Masked()
		if e.overlapsPool(p) {
			return NetworkInfo{}, errAdmin("subnetwork range %s overlaps a range the emulator already hands out (it keeps every range apart, GCE only those of a network)", p)
		}
		if err := e.ips.addPool(subnetPath, p.String(), 2, 2); err != nil {
			return NetworkInfo{}, errAdmin("%v", err)
		}
		info.SubnetworkCIDR = p.String()
		sn.IpCidrRange = proto.String(p.String())
		sn.GatewayAddress = proto.String(p.Addr().Next().String())
	}
	ula := ulaRange(e.cfg.Project + "/" + spec.Name)
	nw := &computepb.Network{
		AutoCreateSubnetworks:                 proto.Bool(false),
		Mtu:                                   proto.Int32(1460),
		RoutingConfig:                         &computepb.NetworkRoutingConfig{RoutingMode: proto.String("REGIONAL")},
		NetworkFirewallPolicyEnforcementOrder: proto.String("AFTER_CLASSIC_FIREWALL"),
		Subnetworks:                           []string{info.SubnetworkURL},
	}
	switch spec.IPv6AccessType {
	case IPv6Internal:
		nw.EnableUlaInternalIpv6 = proto.Bool(true)
		nw.InternalIpv6Range = proto.String(ula.String())
		info.IPv6CIDR = netip.PrefixFrom(ula.Addr(), 64).String()
		sn.InternalIpv6Prefix = proto.String(info.IPv6CIDR)
		_ = e.ips.addRange(ipv6RangeKey(subnetPath), info.IPv6CIDR)
	case IPv6External:
		info.IPv6CIDR = externalIPv6Range(e.cfg.Project + "/" + spec.Name).String()
		sn.ExternalIpv6Prefix = proto.String(info.IPv6CIDR)
		_ = e.ips.addRange(externalIPv6RangeKey(subnetPath), info.IPv6CIDR)
	}
	if spec.IPv6AccessType != "" {
		sn.Ipv6AccessType = proto.String(spec.IPv6AccessType)
	}
	e.create(nk, "", spec.Name, nw)
	e.create(sk, e.cfg.Region, subnetName, sn)
	return info, nil
}

// overlapsPool says whether p overlaps a range addresses are handed out
// of: a subnetwork's primary range or the external pool.
func (e *Emulator) overlapsPool(p netip.Prefix) bool {
	for _, pool := range e.ips.pools {
		if pool.prefix.Overlaps(p) {
			return true
		}
	}
	return false
}

// externalIPv6Range is an EXTERNAL subnetwork's /64 of
// externalIPv6Space, picked by hashing key, so it reads the same every
// time.
func externalIPv6Range(key string) netip.Prefix {
	h := fnv64(key)
	b := externalIPv6Space.Addr().As16()
	// The /36 fixes 36 bits; the next 28 are the subnetwork's.
	b[4] |= byte(h>>24) & 0x0f
	b[5], b[6], b[7] = byte(h>>16), byte(h>>8), byte(h)
	return netip.PrefixFrom(netip.AddrFrom16(b), 64)
}

// networksAdmin serves the network admin API under /admin/gce/:
//
//	POST /networks   NetworkSpec -> 201 NetworkInfo
func (e *Emulator) networksAdmin(mux *http.ServeMux) {
	mux.HandleFunc("POST /networks", func(w http.ResponseWriter, r *http.Request) {
		var spec NetworkSpec
		if err := cloudsim.ReadJSON(r, &spec); err != nil {
			cloudsim.WriteJSONError(w, http.StatusBadRequest, err)
			return
		}
		info, err := e.AddNetwork(spec)
		if err != nil {
			cloudsim.WriteJSONError(w, cloudsim.InstanceErrorStatus(err), err)
			return
		}
		cloudsim.WriteJSON(w, http.StatusCreated, info)
	})
}

// errNICNetworks refuses a second interface on a network an instance
// already has one on, worded as GCE's.
func errNICNetworks(i int, network string) *apiError {
	return errInvalid(fmt.Sprintf("resource.networkInterfaces[%d].network", i), network,
		"Networks must be distinct for NICs attached to a VM.")
}
