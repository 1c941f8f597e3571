package gce

import (
	"net/netip"

	"cloud.google.com/go/compute/apiv1/computepb"
	v1 "k8s.io/api/core/v1"
)

// Node addresses, read from the API as the upstream GCE CCM reads them
// (kubernetes/cloud-provider-gcp at 4e24531247d7, providers/gce/
// gce_instances.go), so a kubelet's --node-ip that upstream's addresses
// satisfied is satisfied here too: the cloud-node controller keeps a Node
// tainted while an address the kubelet named is missing. Upstream's
// other path, the metadata server's view of the instance the manager
// itself runs on (gce_instances.go:131-217), is not taken here: every
// Node is read from the API.

// nicAddresses are the Node addresses of an instance's interfaces as the
// upstream GCE CCM reads them from the API, before ordering (cloud-
// provider-gcp providers/gce/gce_instances.go:287-306,
// nodeAddressesFromInstance): interface by interface in the API's order,
// its networkIP as an InternalIP, each access config's natIP as an
// ExternalIP, then its IPv6 address as an InternalIP (nicIPv6). One
// divergence: an access config without a natIP (a stopped instance's
// ephemeral one) is skipped; upstream appends an ExternalIP with an
// empty address, which no Node should carry.
func nicAddresses(nics []*computepb.NetworkInterface) []v1.NodeAddress {
	var out []v1.NodeAddress
	for _, nic := range nics {
		if ip := nic.GetNetworkIP(); ip != "" {
			out = append(out, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip})
		}
		for _, ac := range nic.GetAccessConfigs() {
			if ip := ac.GetNatIP(); ip != "" {
				out = append(out, v1.NodeAddress{Type: v1.NodeExternalIP, Address: ip})
			}
		}
		if ip := nicIPv6(nic); ip != "" {
			out = append(out, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip})
		}
	}
	return out
}

// nicIPv6 is an interface's IPv6 address as upstream picks it
// (gce_instances.go:308-316, getIPV6AddressFromInterface): its internal
// ipv6Address, else, when its ipv6AccessType is EXTERNAL, the externalIpv6
// of the last of its IPv6 access configs. An external IPv6 address is
// thus an InternalIP, as upstream reports it.
func nicIPv6(nic *computepb.NetworkInterface) string {
	ip := nic.GetIpv6Address()
	if ip == "" && nic.GetIpv6AccessType() == "EXTERNAL" {
		for _, ac := range nic.GetIpv6AccessConfigs() {
			ip = ac.GetExternalIpv6()
		}
	}
	return ip
}

// orderAddresses is upstream's stable partition by family
// (gce_instances.go:96-122, orderAddresses): the addresses of the
// preferred family, and those that are no IP at all, first, each group in
// the order given. IPv6 is preferred only with stackType IPV6.
func orderAddresses(addrs []v1.NodeAddress, preferIPv6 bool) []v1.NodeAddress {
	out := make([]v1.NodeAddress, 0, len(addrs))
	for _, first := range []bool{true, false} {
		for _, a := range addrs {
			// As upstream's net.ParseIP and utilnet.IsIPv6: an address with
			// a zone is no IP, an IPv4-mapped one is IPv4.
			ip, err := netip.ParseAddr(a.Address)
			preferred := err != nil || ip.Zone() != "" || (ip.Is6() && !ip.Is4In6()) == preferIPv6
			if preferred == first {
				out = append(out, a)
			}
		}
	}
	return out
}
