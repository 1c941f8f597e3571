package openstack

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/svcopts"
)

// subnetInfo is what the backend keeps of a Neutron subnet.
type subnetInfo struct {
	id, networkID string
	cidr          netip.Prefix
}

// lbSubnets are the subnets a Service's load balancer uses.
type lbSubnets struct {
	vipSubnetID    string
	vipCIDR        netip.Prefix
	memberSubnetID string
	memberCIDR     netip.Prefix
	// memberNetworkID is the nodes' network, whose ports get the member
	// security group.
	memberNetworkID string
	// vipNetworkID is the VIP subnet's network, where known.
	vipNetworkID string
	// other are the subnets of the second family of a load balancer
	// with a VIP of each (loadbalancer_additionalvips.go), nil for one
	// family.
	other *lbSubnets
}

// errStaleRecord says a load balancer record no longer describes the
// Service (a port without a pool); the caller syncs in full.
var errStaleRecord = errors.New("the load balancer record lacks a pool the Service needs")

// listSubnets is the project's subnets, from a cache at most
// subnetCacheTTL old: one call serves every Service.
func (l *loadBalancers) listSubnets(ctx context.Context) ([]subnetInfo, error) {
	if s, ok := l.subnets.Get("all"); ok {
		return s, nil
	}
	// Services synced together share one listing.
	return l.subnetFill.Do(ctx, "all", l.fetchSubnets)
}

func (l *loadBalancers) fetchSubnets(ctx context.Context) ([]subnetInfo, error) {
	pages, err := subnets.List(l.api.network, subnets.ListOpts{}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list subnets: %w", err)
	}
	list, err := subnets.ExtractSubnets(pages)
	if err != nil {
		return nil, err
	}
	out := make([]subnetInfo, 0, len(list))
	for _, s := range list {
		p, err := netip.ParsePrefix(s.CIDR)
		if err != nil {
			continue
		}
		out = append(out, subnetInfo{id: s.ID, networkID: s.NetworkID, cidr: p.Masked()})
	}
	l.subnets.Set("all", out)
	return out, nil
}

// resolveSubnets finds the VIP and member subnets of the load
// balancer's family (opts.family): the annotated ones, the
// cloud-config's when of that family, else the subnet holding the
// nodes' addresses of that family (of the first node by name that has
// one, so every sync picks the same), as upstream's getSubnetIDForLB
// and nodeAddressForLB (loadbalancer.go:385-412, :494-520) find the
// subnet of node 0's address of the family. A VIP placed by port
// (port-id) has its subnet chosen by Octavia, as one placed by network
// (network-id without a subnet) for IPv4, which Octavia prefers: it is
// left empty here and filled from the load balancer by withVIPSubnet.
// An IPv6 VIP placed by network goes in the network's first IPv6 subnet.
func (l *loadBalancers) resolveSubnets(ctx context.Context, opts *lbOptions, nodes []*v1.Node) (lbSubnets, error) {
	all, err := l.listSubnets(ctx)
	if err != nil {
		return lbSubnets{}, err
	}
	fam := opts.family
	// own is the named subnet if it is of the family; a cloud-config
	// one of the other family is not the Service's (""), an annotated
	// one is an error.
	own := func(id string, configured bool, ann svcopts.Annotation, field string) (string, error) {
		if id == "" {
			return "", nil
		}
		i := slices.IndexFunc(all, func(s subnetInfo) bool { return s.id == id })
		if i < 0 {
			// A new subnet may not be cached yet; pick says so if
			// it is still missing.
			return id, nil
		}
		if f := ipFamily(all[i].cidr.Addr()); f != fam {
			if configured {
				klog.FromContext(ctx).V(2).Info("Cloud-config subnet is of the other IP family; using the nodes' subnet", "field", field, "subnet", id, "family", fam)
				return "", nil
			}
			return "", ann.Invalid(id, fmt.Sprintf("a subnet of family %s, which the Service's load balancer serves (spec.ipFamilies %v); subnet %s is %s (%s)", fam, opts.families, id, f, all[i].cidr))
		}
		return id, nil
	}
	vipSubnetID, err := own(opts.vipSubnetID, opts.vipSubnetConfigured, annotationSubnetID, "loadBalancer.subnetID")
	if err != nil {
		return lbSubnets{}, err
	}
	memberSubnetID, err := own(opts.memberSubnetID, opts.memberSubnetConfigured, annotationMemberSubnetID, "loadBalancer.memberSubnetID")
	if err != nil {
		return lbSubnets{}, err
	}
	if opts.vipPortID == "" && opts.vipNetworkID != "" && vipSubnetID == "" && fam == v1.IPv6Protocol {
		// Octavia would pick an IPv4 subnet of the network before an
		// IPv6 one (octavia/api/v2/controllers/load_balancer.py:160-196).
		i := slices.IndexFunc(all, func(s subnetInfo) bool { return s.networkID == opts.vipNetworkID && s.cidr.Addr().Is6() })
		if i < 0 {
			return lbSubnets{}, fmt.Errorf("VIP network %s (%s or loadBalancer.networkID) has no IPv6 subnet for the VIP of an IPv6 load balancer (spec.ipFamilies %v); add one, or name a subnet with %s",
				opts.vipNetworkID, annotationNetworkID, opts.families, annotationSubnetID)
		}
		vipSubnetID = all[i].id
	}
	vipByOctavia := opts.vipPortID != "" || (opts.vipNetworkID != "" && vipSubnetID == "")
	var nodeSubnet *subnetInfo
	if (vipSubnetID == "" && !vipByOctavia) || memberSubnetID == "" {
		sorted := slices.Clone(nodes)
		slices.SortFunc(sorted, func(a, b *v1.Node) int { return strings.Compare(a.Name, b.Name) })
	search:
		for _, n := range sorted {
			for _, a := range n.Status.Addresses {
				ip, err := netip.ParseAddr(a.Address)
				if a.Type != v1.NodeInternalIP || err != nil || ipFamily(ip) != fam {
					continue
				}
				for i := range all {
					if all[i].cidr.Contains(ip) {
						nodeSubnet = &all[i]
						break search
					}
				}
			}
		}
		if nodeSubnet == nil {
			return lbSubnets{}, fmt.Errorf("no subnet of the project holds a node's %s InternalIP (%d nodes), and the Service's load balancer serves %s (spec.ipFamilies %v): give the nodes %s addresses, or set loadBalancer.subnetID and loadBalancer.memberSubnetID in the cloud-config (or annotations %s, %s) to subnets of that family",
				fam, len(nodes), fam, opts.families, fam, annotationSubnetID, annotationMemberSubnetID)
		}
	}
	pick := func(id, what string) (subnetInfo, error) {
		if id == "" {
			return *nodeSubnet, nil
		}
		i := slices.IndexFunc(all, func(s subnetInfo) bool { return s.id == id })
		if i < 0 {
			l.subnets.Delete("all") // a new subnet may not be cached yet
			return subnetInfo{}, fmt.Errorf("%s %s is not a subnet of the project", what, id)
		}
		return all[i], nil
	}
	var out lbSubnets
	if !vipByOctavia {
		vip, err := pick(vipSubnetID, "VIP subnet")
		if err != nil {
			return out, err
		}
		if opts.vipNetworkID != "" && opts.vipPortID == "" && vip.networkID != opts.vipNetworkID {
			// Octavia would refuse it (Invalid subnet); say which.
			return out, fmt.Errorf("VIP subnet %s is in network %s, not in the VIP network %s (%s or loadBalancer.networkID)",
				vip.id, vip.networkID, opts.vipNetworkID, annotationNetworkID)
		}
		out.vipSubnetID, out.vipCIDR = vip.id, vip.cidr
	}
	mem, err := pick(memberSubnetID, "member subnet")
	if err != nil {
		return out, err
	}
	out.memberSubnetID, out.memberCIDR, out.memberNetworkID = mem.id, mem.cidr, mem.networkID
	return out, nil
}

// subnet is the project's subnet id, from the cached listing, read again
// once when it is not there (it may be newer); what names where the ID
// comes from.
func (l *loadBalancers) subnet(ctx context.Context, id, what string) (subnetInfo, error) {
	for range 2 {
		all, err := l.listSubnets(ctx)
		if err != nil {
			return subnetInfo{}, err
		}
		if i := slices.IndexFunc(all, func(s subnetInfo) bool { return s.id == id }); i >= 0 {
			return all[i], nil
		}
		l.subnets.Delete("all")
	}
	return subnetInfo{}, fmt.Errorf("%s: %s is not a subnet of the project", what, id)
}

// withVIPSubnet is subnets with the VIP subnet the load balancer has: it
// was fixed at creation (by the Service, another Service sharing it, or
// Octavia's choice in a network or the user's port), and the member
// security group must admit that one, whatever the Service says now.
func (l *loadBalancers) withVIPSubnet(ctx context.Context, subnets lbSubnets, lb *loadbalancers.LoadBalancer) (lbSubnets, error) {
	if lb.VipSubnetID == "" || lb.VipSubnetID == subnets.vipSubnetID {
		return subnets, nil
	}
	all, err := l.listSubnets(ctx)
	if err != nil {
		return subnets, err
	}
	i := slices.IndexFunc(all, func(s subnetInfo) bool { return s.id == lb.VipSubnetID })
	if i < 0 {
		// Made since the cached listing: refresh it once.
		l.subnets.Delete("all")
		if all, err = l.listSubnets(ctx); err != nil {
			return subnets, err
		}
		if i = slices.IndexFunc(all, func(s subnetInfo) bool { return s.id == lb.VipSubnetID }); i < 0 {
			return subnets, fmt.Errorf("load balancer %s: its VIP subnet %s is not a subnet the project can list", lb.ID, lb.VipSubnetID)
		}
	}
	subnets.vipSubnetID, subnets.vipCIDR = all[i].id, all[i].cidr
	return subnets, nil
}
