package openstack

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/apiversions"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// Dual-stack Services on one Octavia load balancer with a VIP of each
// family, better than upstream (which serves the first family only,
// loadbalancer_families.go): Octavia's additional_vips (API 2.26,
// octavia/api/root_controller.py:145-147; api-ref/source/parameters.yaml:
// 138-149) puts a further VIP on another subnet of the primary VIP's
// network. The amphora driver makes them fixed IPs of the one VIP port
// (octavia/network/drivers/neutron/allowed_address_pairs.py:550-591), and
// every listener serves them all: haproxy binds each additional VIP
// (octavia/common/jinja/haproxy/combined_listeners/templates/macros.j2:
// 168-185), keepalived's LVS (UDP, SCTP) has a virtual server per family
// with the members of that family (octavia/common/jinja/lvs/templates/
// macros.j2:106-155), and the driver refuses an LVS member of a family no
// VIP has (octavia/api/drivers/amphora_driver/v2/driver.py:343-367). So a
// pool has members of both families: each Node's InternalIP of each,
// each in its family's member subnet.
//
// additional_vips can only be given at creation (it is in LoadBalancerPOST,
// not LoadBalancerPUT: octavia/api/v2/types/load_balancer.py:140-175). A
// load balancer that exists keeps the VIPs it has: one made with a single
// VIP (by this manager before the Service became dual-stack, below API
// 2.26, or by the upstream CCM) stays single-family, since making it again
// would change the Service's address behind its back. Only a load
// balancer this manager made (its cluster tag) serves an additional VIP's
// family. One it made with a VIP of each family serves the families the
// Service still has: a Service that
// drops its second family keeps its load balancer, whose other VIP
// Octavia cannot remove, and its status and members lose that family.
//
// Not used (the first family only, as upstream): below API 2.26; with
// the ovn provider (whether ovn-octavia-provider takes additional VIPs is
// unverified); with a user's VIP port (port-id); when the nodes have no
// subnet of the second family on the VIP's network (Octavia: "All VIP
// subnets must belong to the same network.", octavia/api/v2/controllers/
// load_balancer.py:270-274); when source ranges name none of the second
// family; for an external Service whose second family is IPv4 without a
// floating network.

// additionalVIPsMinor is the Octavia API version 2.N that added
// additional_vips.
const additionalVIPsMinor = 26

// octaviaVersionTTL bounds how long the discovered Octavia API version
// is trusted: an upgrade is seen within it.
const octaviaVersionTTL = time.Hour

// octaviaMinor is N of the newest Octavia API version 2.N the cloud
// serves, from the version document at the endpoint's root (GET
// /load-balancer/, octavia/api/root_controller.py), cached. A cloud that
// hides the document (404, 403) counts as 2.0: only what every version
// has is used.
func (l *loadBalancers) octaviaMinor(ctx context.Context) (int, error) {
	if n, ok := l.versions.Get("octavia"); ok {
		return n, nil
	}
	return l.versionFill.Do(ctx, "octavia", func(ctx context.Context) (int, error) {
		pages, err := apiversions.List(l.api.lb).AllPages(ctx)
		if isNotFound(err) || statusOf(err) == http.StatusForbidden {
			klog.FromContext(ctx).Info("Octavia's version document is not readable; using only what API 2.0 has", "err", err)
			l.versions.Set("octavia", 0)
			return 0, nil
		}
		if err != nil {
			return 0, fmt.Errorf("list Octavia API versions: %w", err)
		}
		vs, err := apiversions.ExtractAPIVersions(pages)
		if err != nil {
			return 0, fmt.Errorf("list Octavia API versions: %w", err)
		}
		n := 0
		for _, v := range vs {
			if m, ok := strings.CutPrefix(v.ID, "v2."); ok {
				if i, err := strconv.Atoi(m); err == nil && i > n {
					n = i
				}
			}
		}
		l.versions.Set("octavia", n)
		return n, nil
	})
}

// otherFamily is the family of a two-family Service that is not f, ""
// when the Service has one.
func otherFamily(families []v1.IPFamily, f v1.IPFamily) v1.IPFamily {
	for _, x := range families {
		if x != f {
			return x
		}
	}
	return ""
}

// additionalVIP is the load balancer's additional VIP of family f, nil
// when it has none.
func additionalVIP(lb *loadbalancers.LoadBalancer, f v1.IPFamily) *loadbalancers.AdditionalVip {
	for i, v := range lb.AdditionalVips {
		if a, err := netip.ParseAddr(v.IPAddress); err == nil && ipFamily(a) == f {
			return &lb.AdditionalVips[i]
		}
	}
	return nil
}

// planSecondFamily decides whether the Service's load balancer serves
// its second family too, and finds that family's subnets: of an existing
// load balancer, its additional VIP's subnet; of one to be made, the
// nodes' subnet of the family, which must be on the primary VIP's
// network. It returns nil to serve the first family only, with the
// reason a Service that requires both gets in a Warning ("" for none).
func (l *loadBalancers) planSecondFamily(ctx context.Context, opts *lbOptions, lb *loadbalancers.LoadBalancer, subnets lbSubnets, nodes []*v1.Node) (*lbSubnets, string, error) {
	other := otherFamily(opts.families, opts.family)
	if other == "" {
		return nil, "", nil
	}
	logger := klog.FromContext(ctx)
	if lb != nil {
		v := additionalVIP(lb, other)
		if v == nil {
			logger.Info("The load balancer has no VIP of the Service's other family, and Octavia cannot add one to a load balancer that exists (additional_vips is create-only): it serves one family",
				"id", lb.ID, "serves", opts.family, "families", opts.families)
			return nil, "", nil
		}
		if !slices.Contains(lb.Tags, clusterTag(l.clusterID)) {
			// Not made by this manager: the upstream CCM's (or a
			// person's) load balancer keeps the shape it had. On a
			// network with a SLAAC subnet Octavia reports the VIP
			// port's EUI-64 address as an additional VIP of a load
			// balancer that never asked for one
			// (octavia/network/drivers/neutron/base.py:75-109), and
			// the switch must not add it to the Service's status.
			logger.Info("The load balancer was not made by this manager; it keeps serving one family", "id", lb.ID, "serves", opts.family)
			return nil, "", nil
		}
		if reason := opts.secondFamilyRefused(other); reason != "" {
			logger.Info("The load balancer serves the Service's first family only", "reason", reason)
			return nil, reason, nil
		}
		s, err := l.otherSubnets(ctx, opts, other, nodes, v.SubnetID)
		if err != nil {
			return nil, "", err
		}
		return &s, "", nil
	}
	reason := opts.secondFamilyRefused(other)
	switch {
	case reason != "":
	case l.cfg.LoadBalancer.Provider == "ovn":
		reason = "the ovn provider is not known to support Octavia's additional_vips"
	case opts.vipPortID != "":
		reason = fmt.Sprintf("annotation %s gives the VIP port, and additional VIPs are fixed IPs of a port Octavia makes", annotationPortID)
	default:
		minor, err := l.octaviaMinor(ctx)
		if err != nil {
			return nil, "", err
		}
		if minor < additionalVIPsMinor {
			reason = fmt.Sprintf("the cloud's Octavia API is version 2.%d, and a VIP of each family (additional_vips) needs 2.%d", minor, additionalVIPsMinor)
		}
	}
	if reason == "" {
		s, err := l.otherSubnets(ctx, opts, other, nodes, "")
		if err != nil {
			reason = err.Error()
		} else if vipNet, err := l.vipNetwork(ctx, opts, subnets); err != nil {
			return nil, "", err
		} else if vipNet != "" && s.vipNetworkID != vipNet {
			reason = fmt.Sprintf("the %s VIP subnet %s is in network %s, not in the VIP's network %s, and Octavia puts all VIPs of a load balancer in one network", other, s.vipSubnetID, s.vipNetworkID, vipNet)
		} else {
			return &s, "", nil
		}
	}
	logger.Info("The new load balancer serves the Service's first family only", "family", opts.family, "reason", reason)
	return nil, reason, nil
}

// secondFamilyRefused says why the Service's options keep its second
// family f off its load balancer, "" when nothing does.
func (o *lbOptions) secondFamilyRefused(f v1.IPFamily) string {
	if len(o.ranges) > 0 && !slices.ContainsFunc(o.ranges, func(r netip.Prefix) bool { return ipFamily(r.Addr()) == f }) {
		return fmt.Sprintf("the Service's source ranges %v have no %s range", o.ranges, f)
	}
	if f == v1.IPv4Protocol && !o.internal && o.floatingNetworkID == "" && o.floatingNetworkErr != nil {
		return "there is no floating network for the IPv4 address"
	}
	return ""
}

// otherSubnets are the VIP and member subnets of the second family f:
// the VIP's the load balancer has (vipSubnetID), else the cloud-config's
// subnet when of f, else the nodes' subnet of f (resolveSubnets); the
// annotated subnets are the first family's.
func (l *loadBalancers) otherSubnets(ctx context.Context, opts *lbOptions, f v1.IPFamily, nodes []*v1.Node, vipSubnetID string) (lbSubnets, error) {
	o := *opts
	o.family = f
	if !o.vipSubnetConfigured {
		o.vipSubnetID = ""
	}
	if !o.memberSubnetConfigured {
		o.memberSubnetID = ""
	}
	if vipSubnetID != "" {
		o.vipSubnetID, o.vipSubnetConfigured = vipSubnetID, false
	}
	o.vipPortID = ""
	if f == v1.IPv4Protocol && o.vipNetworkID != "" && o.vipSubnetID == "" {
		// resolveSubnets leaves an IPv4 VIP placed by network to
		// Octavia; an additional VIP needs its subnet.
		all, err := l.listSubnets(ctx)
		if err != nil {
			return lbSubnets{}, err
		}
		i := slices.IndexFunc(all, func(s subnetInfo) bool { return s.networkID == o.vipNetworkID && s.cidr.Addr().Is4() })
		if i < 0 {
			return lbSubnets{}, fmt.Errorf("VIP network %s has no IPv4 subnet", o.vipNetworkID)
		}
		o.vipSubnetID = all[i].id
	}
	s, err := l.resolveSubnets(ctx, &o, nodes)
	if err != nil {
		return lbSubnets{}, err
	}
	info, err := l.subnet(ctx, s.vipSubnetID, string(f)+" VIP subnet")
	if err != nil {
		return lbSubnets{}, err
	}
	s.vipNetworkID = info.networkID
	return s, nil
}

// vipNetwork is the network of the primary VIP: the network it is
// placed in, else its subnet's.
func (l *loadBalancers) vipNetwork(ctx context.Context, opts *lbOptions, subnets lbSubnets) (string, error) {
	if opts.vipNetworkID != "" {
		return opts.vipNetworkID, nil
	}
	if subnets.vipSubnetID == "" {
		return "", nil
	}
	s, err := l.subnet(ctx, subnets.vipSubnetID, "VIP subnet")
	if err != nil {
		return "", err
	}
	return s.networkID, nil
}

// ReasonDualStackFirstFamilyOnly: a Service that requires dual-stack
// (ipFamilyPolicy RequireDualStack) gets a new load balancer of its
// first family only; the message says why (the cloud's Octavia API
// version, most often). A Warning: the Service asked for both families,
// and clients of the second get no address until the cloud can give one,
// which needs the load balancer made again (delete and re-create the
// Service). PreferDualStack Services get a log line only: their policy
// asks for the second family only where it is available.
// Object: Service
const ReasonDualStackFirstFamilyOnly = "LoadBalancerFirstFamilyOnly"

// warnFirstFamilyOnly records ReasonDualStackFirstFamilyOnly on a
// Service that requires dual-stack.
func (l *loadBalancers) warnFirstFamilyOnly(svc *v1.Service, opts *lbOptions, reason string) {
	if l.recorder == nil || svc.Spec.IPFamilyPolicy == nil || *svc.Spec.IPFamilyPolicy != v1.IPFamilyPolicyRequireDualStack {
		return
	}
	l.recorder.Eventf(svc, v1.EventTypeWarning, ReasonDualStackFirstFamilyOnly,
		"The load balancer serves %s only, not %s: %s", opts.family, otherFamily(opts.families, opts.family), reason)
}

// familyAddresses are the Service's addresses on the load balancer, in
// spec.ipFamilies order: of each family the load balancer serves (its
// VIP's, and its additional VIP's when served), the floating IP for
// IPv4 when there is one, else the VIP.
func familyAddresses(families []v1.IPFamily, served []v1.IPFamily, lb *loadbalancers.LoadBalancer, fip string) []string {
	var out []string
	for _, f := range families {
		if !slices.Contains(served, f) {
			continue
		}
		addr := ""
		if vipFamily(lb) == f {
			addr = lb.VipAddress
		} else if v := additionalVIP(lb, f); v != nil {
			addr = v.IPAddress
		}
		if f == v1.IPv4Protocol && fip != "" {
			addr = fip
		}
		if addr != "" {
			out = append(out, addr)
		}
	}
	return out
}

// widen makes the options those of a load balancer that serves the
// second family f too: the source ranges of both families.
func (o *lbOptions) widen(f v1.IPFamily) {
	o.also = f
	o.sourceRanges = nil
	var of []netip.Prefix
	for _, r := range o.ranges {
		if fam := ipFamily(r.Addr()); fam == o.family || fam == f {
			of = append(of, r)
		}
	}
	if !everyone(of) {
		for _, r := range of {
			o.sourceRanges = append(o.sourceRanges, r.String())
		}
	}
}

// served are the families the load balancer serves for the Service.
func (o *lbOptions) served() []v1.IPFamily {
	if o.also == "" {
		return []v1.IPFamily{o.family}
	}
	return []v1.IPFamily{o.family, o.also}
}

// lbServes are the Service's families that the load balancer has a VIP
// of, for GetLoadBalancer.
func lbServes(families []v1.IPFamily, lb *loadbalancers.LoadBalancer) []v1.IPFamily {
	var out []v1.IPFamily
	for _, f := range families {
		if vipFamily(lb) == f || additionalVIP(lb, f) != nil {
			out = append(out, f)
		}
	}
	return out
}

// familyMembers are the members of both families the load balancer
// serves, each with its family's member subnet, sorted by address.
func (l *loadBalancers) familyMembers(ctx context.Context, nodes []*v1.Node, subnets lbSubnets) ([]member, error) {
	out, err := l.members(ctx, nodes, subnets.memberCIDR)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].subnetID = subnets.memberSubnetID
	}
	if subnets.other == nil {
		return out, nil
	}
	more, err := l.members(ctx, nodes, subnets.other.memberCIDR)
	if err != nil {
		return nil, err
	}
	for i := range more {
		more[i].subnetID = subnets.other.memberSubnetID
	}
	out = append(out, more...)
	slices.SortFunc(out, func(a, b member) int { return strings.Compare(a.address, b.address) })
	return slices.CompactFunc(out, func(a, b member) bool { return a.address == b.address }), nil
}
