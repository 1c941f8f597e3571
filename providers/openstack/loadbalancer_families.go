package openstack

import (
	"context"
	"fmt"
	"net/netip"
	"slices"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/svcopts"
)

// IPv6 and dual-stack Services, as the upstream OpenStack CCM serves
// them (kubernetes/cloud-provider-openstack pkg/openstack/loadbalancer.go
// at c453fb7c, PR #1901): one Octavia load balancer of one IP family,
// the Service's first (spec.ipFamilies[0], :1305-1309 and :1368-1372:
// "the first IP family will determine the IP family of the
// load-balancer"). Its VIP subnet, its members, its listeners'
// allowed_cidrs and the member security group's rules are all of that
// family; an IPv6 VIP gets no floating IP and is the Service's address.
// A dual-stack Service therefore has one address, of its first family.
//
// Where the cloud's Octavia has additional_vips (API 2.26, one VIP per
// subnet of one network, create-only), a new load balancer of a
// dual-stack Service gets a VIP of each family instead, which upstream
// never does (loadbalancer_additionalvips.go); everything here is then
// its first family's, and the second family is added on top.
//
// Where this backend differs from upstream (docs/guides/openstack.md,
// "Dual-stack Services"):
//   - an existing load balancer keeps the family of its VIP, which
//     Octavia cannot change; it must be a family of the Service;
//   - a VIP subnet named by annotation decides the family when the
//     Service has it (upstream uses the subnet with members of the first
//     family, which Octavia then refuses or cannot reach);
//   - a cluster-wide subnet of the cloud-config (loadBalancer.subnetID,
//     memberSubnetID) of the other family is not used;
//   - with network-id alone, an IPv6 VIP is asked for in an IPv6 subnet
//     of that network (upstream leaves the choice to Octavia, which
//     prefers IPv4: upstream issue #2333);
//   - source ranges of the other family are left out of allowed_cidrs
//     rather than sent for Octavia to refuse.

// ipFamily is the family of an address.
func ipFamily(a netip.Addr) v1.IPFamily {
	if a.Is4() || a.Is4In6() {
		return v1.IPv4Protocol
	}
	return v1.IPv6Protocol
}

// everyone reports source ranges that admit every client: none given,
// or only /0s.
func everyone(ranges []netip.Prefix) bool {
	for _, r := range ranges {
		if r.Bits() != 0 {
			return false
		}
	}
	return true
}

// vipFamily is the family of the load balancer's VIP, "" when it has
// none Octavia reports.
func vipFamily(lb *loadbalancers.LoadBalancer) v1.IPFamily {
	a, err := netip.ParseAddr(lb.VipAddress)
	if err != nil {
		return ""
	}
	return ipFamily(a)
}

// serveFamily is the family the Service's load balancer serves: an
// existing one's VIP family (fixed at creation, by us, by the upstream
// CCM, or by a person for a shared one), else the family of the VIP
// subnet the Service's annotation names, else the Service's first. It
// must be one of the Service's families: kube-proxy opens a Service's
// NodePorts on its families only.
func (l *loadBalancers) serveFamily(ctx context.Context, opts *lbOptions, lb *loadbalancers.LoadBalancer) (v1.IPFamily, error) {
	if lb != nil {
		f := vipFamily(lb)
		if f == "" {
			return opts.families[0], nil
		}
		if !slices.Contains(opts.families, f) {
			return "", fmt.Errorf("load balancer %s has an %s VIP %s, and the Service's spec.ipFamilies %v has no %s: Octavia cannot change a VIP's family; delete the load balancer (openstack loadbalancer delete --cascade %s) to have one of family %s made",
				lb.ID, f, lb.VipAddress, opts.families, f, lb.ID, opts.families[0])
		}
		return f, nil
	}
	if opts.vipSubnetID == "" || opts.vipSubnetConfigured || opts.vipPortID != "" {
		return opts.families[0], nil
	}
	s, err := l.subnet(ctx, opts.vipSubnetID, "annotation "+annotationSubnetID.String())
	if err != nil {
		return "", err
	}
	f := ipFamily(s.cidr.Addr())
	if !slices.Contains(opts.families, f) {
		return "", annotationSubnetID.Invalid(opts.vipSubnetID, fmt.Sprintf("a subnet of a family of the Service (spec.ipFamilies %v); subnet %s is %s (%s)", opts.families, s.id, f, s.cidr))
	}
	return f, nil
}

// setFamily makes the options those of a load balancer of family f: the
// source ranges of f (a range of the other family could only be refused
// by Octavia: "CIDR ... IP version incompatible with all VIPs",
// octavia/api/v2/controllers/listener.py:172-191), and
// spec.loadBalancerIP checked against f.
func (o *lbOptions) setFamily(f v1.IPFamily) error {
	o.family = f
	o.sourceRanges = nil
	if len(o.ranges) > 0 {
		var of []netip.Prefix
		for _, r := range o.ranges {
			if ipFamily(r.Addr()) == f {
				of = append(of, r)
			}
		}
		if len(of) == 0 {
			// Admitting everyone instead would open what the Service
			// closed.
			return fmt.Errorf("the Service's source ranges (spec.loadBalancerSourceRanges or annotation %s) %v have no %s range, and its load balancer serves %s (spec.ipFamilies %v): add the %s clients to admit, such as %s",
				v1.AnnotationLoadBalancerSourceRangesKey, o.ranges, f, f, o.families, f, svcopts.AllClients(f)[0])
		}
		if !everyone(of) {
			for _, r := range of {
				o.sourceRanges = append(o.sourceRanges, r.String())
			}
		}
	}
	if o.loadBalancerIP != "" {
		a, _ := netip.ParseAddr(o.loadBalancerIP)
		if ipFamily(a) != f {
			return fmt.Errorf("spec.loadBalancerIP %s is %s, and the Service's load balancer is %s (spec.ipFamilies %v): give an %s address or none",
				o.loadBalancerIP, ipFamily(a), f, o.families, f)
		}
	}
	if f == v1.IPv4Protocol && !o.internal && o.floatingNetworkID == "" && o.floatingNetworkErr != nil {
		return o.floatingNetworkErr
	}
	return nil
}

// vipAddress is the address a new load balancer's VIP asks for:
// spec.loadBalancerIP when the Service is internal or IPv6, whose VIP is
// its address; an external IPv4 Service's is its floating IP
// (upstream: loadbalancer.go:270-275).
func (o *lbOptions) vipAddress() string {
	if o.internal || o.family == v1.IPv6Protocol {
		return o.loadBalancerIP
	}
	return ""
}

// ReasonFloatingIPSkipped: an external Service's load balancer has an
// IPv6 VIP, which Neutron cannot give a floating IP (floating IPs are
// IPv4); the VIP is the Service's address. Upstream's reason and
// message (kubernetes/cloud-provider-openstack pkg/openstack/events.go:24,
// loadbalancer.go:1813-1818), recorded at every EnsureLoadBalancer as
// upstream does, but for external Services only.
// Object: Service
const ReasonFloatingIPSkipped = "LoadBalancerFloatingIPSkipped"

// warnNoFloatingIP records ReasonFloatingIPSkipped on an external
// Service with an IPv6 VIP.
func (l *loadBalancers) warnNoFloatingIP(ctx context.Context, svc *v1.Service, vip string) {
	msg := "Floating IP not supported for IPv6 Service %s. Using IPv6 address instead %s."
	klog.FromContext(ctx).Info("No floating IP for an IPv6 VIP; the VIP is the Service's address", "vip", vip)
	if l.recorder != nil {
		l.recorder.Eventf(svc, v1.EventTypeWarning, ReasonFloatingIPSkipped, msg, serviceKey(svc), vip)
	}
}
