package gce

import (
	"context"
	"fmt"
	"net/netip"

	"cloud.google.com/go/compute/apiv1/computepb"
	v1 "k8s.io/api/core/v1"

	"github.com/multicloud-ccm/multicloud-ccm/providers/podcidrs"
)

// The cloud allocator's answer on GCE, as upstream cloud-provider-gcp's
// CloudAllocator reads an instance (pkg/controller/nodeipam/ipam/
// cloud_cidr_allocator.go updateCIDRAllocation, without multi-networking):
// of the interface named nic0 (else the first), the first alias IP range
// is the IPv4 pod CIDR, and its IPv6 address, masked to /112, the IPv6
// one (providers/gce/gce_instances.go GetIPV6Address: "the podCIDR range
// is the first /112 subrange from the /96 assigned to the node";
// getIPV6AddressFromInterface: ipv6Address, else with ipv6AccessType
// EXTERNAL the access configs' externalIpv6). GCE routes both to the
// instance, so no route is needed. Read from the instance snapshot: N
// Nodes cost the node controller's listings, no call each.

// ipv6PodMask is upstream's /112.
const ipv6PodMask = 112

var _ podcidrs.Allocator = (*instances)(nil)

// podRanges are an instance's pod ranges, from its interfaces.
func podRanges(nics []*computepb.NetworkInterface) (alias, ipv6 string) {
	nic := nics[0]
	for _, n := range nics {
		if n.GetName() == "nic0" {
			nic = n
			break
		}
	}
	if r := nic.GetAliasIpRanges(); len(r) > 0 {
		alias = r[0].GetIpCidrRange()
	}
	addr := nic.GetIpv6Address()
	if addr == "" && nic.GetIpv6AccessType() == "EXTERNAL" {
		for _, ac := range nic.GetIpv6AccessConfigs() {
			addr = ac.GetExternalIpv6()
		}
	}
	if a, err := netip.ParseAddr(addr); err == nil && a.Is6() {
		ipv6 = netip.PrefixFrom(a, ipv6PodMask).Masked().String()
	}
	return alias, ipv6
}

// PodCIDRs implements podcidrs.Allocator. A Node labelled unmanaged is
// not served, as upstream's filtering informer hides it from its
// node-ipam controller too (instances_unmanaged.go).
func (in *instances) PodCIDRs(ctx context.Context, node *v1.Node) (podcidrs.Answer, error) {
	if unmanagedNode(node) {
		return podcidrs.Answer{}, fmt.Errorf("%w: node %s is labelled %s=%s", podcidrs.ErrNotServed, node.Name, labelUnmanagedNode, unmanagedNodeValue)
	}
	i, err := in.Lookup(ctx, node)
	if err != nil {
		return podcidrs.Answer{}, err
	}
	if i.aliasRange == "" && i.ipv6Range == "" {
		return podcidrs.Answer{}, fmt.Errorf("%w: instance %s has neither an alias IP range nor an IPv6 range on nic0", podcidrs.ErrNoRanges, i.ref.key())
	}
	return podcidrs.Answer{
		IPv4:        podcidrs.Family{CIDR: i.aliasRange},
		IPv6:        podcidrs.Family{CIDR: i.ipv6Range},
		CloudRouted: true,
	}, nil
}
