package azure

import (
	"context"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
	v1 "k8s.io/api/core/v1"
)

// The edits a Service makes to the shared load balancer and security
// group. Each is idempotent and touches only what is named after the
// Service (its frontend, rules and probes "a<uid>", "a<uid>-TCP-80") and
// the cluster's backend pool; whatever else the resource holds (outbound
// rules, another controller's frontends) is kept.

// backend is one node of the pools: its addresses, and with NIC-based
// pools its primary NIC's IP configurations' IDs, of each family (the
// IPv6 ones empty on a node without IPv6).
type backend struct{ node, ip, ipConfig, ip6, ipConfig6 string }

// addr is the node's address of a family.
func (b backend) addr(v6 bool) string {
	if v6 {
		return b.ip6
	}
	return b.ip
}

// config is the node's IP configuration of a family.
func (b backend) config(v6 bool) string {
	if v6 {
		return b.ipConfig6
	}
	return b.ipConfig
}

// Probe settings, as upstream's defaults: every 5 s, two failures mark a
// node down.
const (
	probeInterval = 5
	probeCount    = 2
)

func findFrontend(lb *armnetwork.LoadBalancer, name string) *armnetwork.FrontendIPConfiguration {
	if lb == nil || lb.Properties == nil {
		return nil
	}
	for _, fe := range lb.Properties.FrontendIPConfigurations {
		if fe != nil && strings.EqualFold(deref(fe.Name), name) {
			return fe
		}
	}
	return nil
}

// frontendFor is the Service's desired frontend of family f: a private
// address in its subnet, or a public IP (the manager's own, created if
// missing, or the user's); pipAddress is the public address.
func (l *loadBalancers) frontendFor(ctx context.Context, svc *v1.Service, sp *lbSpec, f famSpec, names lbNames) (fe *armnetwork.FrontendIPConfiguration, pipAddress string, err error) {
	name := names.frontend
	if sp.internal {
		props := &armnetwork.FrontendIPConfigurationPropertiesFormat{
			Subnet:                    &armnetwork.Subnet{ID: to.Ptr(l.subnetID(sp.subnet))},
			PrivateIPAllocationMethod: to.Ptr(armnetwork.IPAllocationMethodDynamic),
		}
		if f.v6 {
			props.PrivateIPAddressVersion = to.Ptr(armnetwork.IPVersionIPv6)
		}
		if f.staticIP != "" {
			props.PrivateIPAllocationMethod = to.Ptr(armnetwork.IPAllocationMethodStatic)
			props.PrivateIPAddress = to.Ptr(f.staticIP)
		}
		return &armnetwork.FrontendIPConfiguration{Name: to.Ptr(name), Properties: props}, "", nil
	}
	id, addr, err := l.ensurePublicIP(ctx, svc, sp, f, names)
	if err != nil {
		return nil, "", err
	}
	return &armnetwork.FrontendIPConfiguration{Name: to.Ptr(name), Properties: &armnetwork.FrontendIPConfigurationPropertiesFormat{
		PublicIPAddress: &armnetwork.PublicIPAddress{ID: to.Ptr(id)},
	}}, addr, nil
}

func (l *loadBalancers) subnetID(subnet string) string {
	return l.vnetID() + "/subnets/" + subnet
}

func (l *loadBalancers) vnetID() string {
	return "/subscriptions/" + l.cfg.SubscriptionID + "/resourceGroups/" + l.cfg.VnetResourceGroup +
		"/providers/Microsoft.Network/virtualNetworks/" + l.cfg.VnetName
}

func sameID(a, b *string) bool { return strings.EqualFold(deref(a), deref(b)) }

// sameFrontend compares what the manager sets on a frontend.
func sameFrontend(a, b *armnetwork.FrontendIPConfigurationPropertiesFormat) bool {
	if a == nil || b == nil {
		return a == b
	}
	idOf := func(p *armnetwork.PublicIPAddress) *string {
		if p == nil {
			return nil
		}
		return p.ID
	}
	subnetOf := func(s *armnetwork.Subnet) *string {
		if s == nil {
			return nil
		}
		return s.ID
	}
	if !sameID(idOf(a.PublicIPAddress), idOf(b.PublicIPAddress)) || !sameID(subnetOf(a.Subnet), subnetOf(b.Subnet)) {
		return false
	}
	if a.Subnet == nil {
		return true
	}
	am, bm := deref(a.PrivateIPAllocationMethod), deref(b.PrivateIPAllocationMethod)
	if am != bm || privateVersion(a) != privateVersion(b) {
		return false
	}
	return am != armnetwork.IPAllocationMethodStatic || deref(a.PrivateIPAddress) == deref(b.PrivateIPAddress)
}

// privateVersion is a private frontend's IP version, IPv4 when unset as
// ARM defaults it.
func privateVersion(p *armnetwork.FrontendIPConfigurationPropertiesFormat) armnetwork.IPVersion {
	if v := deref(p.PrivateIPAddressVersion); v != "" {
		return v
	}
	return armnetwork.IPVersionIPv4
}

// feWant is one IP family's frontend as a sync wants it.
type feWant struct {
	f     famSpec
	names lbNames
	fe    *armnetwork.FrontendIPConfiguration
	// pool is the family's backend pool.
	pool string
	// frontend is the name of the frontend its rules use, set by
	// ensureService.
	frontend string
}

// ensureService makes lb hold the Service's frontend of each family, and
// a rule and a probe per port and family, and nothing else named after
// the Service (a family it no longer has loses its frontend too). A
// Service asking for the address of another Service's frontend (several
// Services on one IP with distinct ports, as upstream allows) puts its
// rules on that frontend and has none of its own.
func ensureService(lb *armnetwork.LoadBalancer, lbID string, wants []*feWant, sp *lbSpec) (changed bool) {
	if lb.Properties == nil {
		lb.Properties = &armnetwork.LoadBalancerPropertiesFormat{}
	}
	p := lb.Properties
	rules := map[string]*armnetwork.LoadBalancingRule{}
	probes := map[string]*armnetwork.Probe{}
	own := map[string]bool{}
	for _, w := range wants {
		names, fe := w.names, w.fe
		own[strings.ToLower(names.frontend)] = true
		w.frontend = names.frontend
		cur := findFrontend(lb, names.frontend)
		switch shared := sharedFrontend(lb, names.frontend, fe.Properties); {
		case cur == nil && shared != nil:
			w.frontend = deref(shared.Name)
		case cur == nil:
			p.FrontendIPConfigurations = append(p.FrontendIPConfigurations, &armnetwork.FrontendIPConfiguration{Name: to.Ptr(names.frontend), Properties: fe.Properties})
			changed = true
		case !sameFrontend(cur.Properties, fe.Properties):
			cur.Properties = fe.Properties
			changed = true
		}
		desiredRules(rules, probes, lbID, w.pool, names, w.frontend, sp, w.f)
	}
	base := wants[0].names.base
	var rulesChanged, probesChanged bool
	p.LoadBalancingRules, rulesChanged = reconcileOwned(p.LoadBalancingRules, rules, base,
		func(r *armnetwork.LoadBalancingRule) *string { return r.Name },
		func(a, b *armnetwork.LoadBalancingRule) bool { return sameRule(a.Properties, b.Properties) })
	p.Probes, probesChanged = reconcileOwned(p.Probes, probes, base,
		func(r *armnetwork.Probe) *string { return r.Name },
		func(a, b *armnetwork.Probe) bool { return sameProbe(a.Properties, b.Properties) })
	// The frontend of a family the Service no longer has (dual-stack
	// made single-stack) goes once no rule uses it.
	plain := wants[0].names.forFamily(false, false).frontend
	stale := map[string]bool{}
	for _, n := range []string{plain, plain + ipv6Suffix} {
		if !own[strings.ToLower(n)] {
			stale[strings.ToLower(n)] = true
		}
	}
	used := frontendsInUse(p)
	n := len(p.FrontendIPConfigurations)
	p.FrontendIPConfigurations = slices.DeleteFunc(p.FrontendIPConfigurations, func(fe *armnetwork.FrontendIPConfiguration) bool {
		if fe == nil {
			return false
		}
		k := strings.ToLower(deref(fe.Name))
		return stale[k] && !used[k]
	})
	return changed || rulesChanged || probesChanged || n != len(p.FrontendIPConfigurations)
}

// sharedFrontend is another frontend with the address want asks for: the
// same public IP, or the same static private address in the same subnet.
func sharedFrontend(lb *armnetwork.LoadBalancer, own string, want *armnetwork.FrontendIPConfigurationPropertiesFormat) *armnetwork.FrontendIPConfiguration {
	if want == nil {
		return nil
	}
	for _, f := range lb.Properties.FrontendIPConfigurations {
		if f == nil || f.Properties == nil || strings.EqualFold(deref(f.Name), own) {
			continue
		}
		fp := f.Properties
		switch {
		case want.PublicIPAddress != nil && fp.PublicIPAddress != nil && sameID(want.PublicIPAddress.ID, fp.PublicIPAddress.ID):
			return f
		case want.Subnet != nil && deref(want.PrivateIPAllocationMethod) == armnetwork.IPAllocationMethodStatic &&
			fp.Subnet != nil && sameID(want.Subnet.ID, fp.Subnet.ID) && deref(fp.PrivateIPAddress) == deref(want.PrivateIPAddress):
			return f
		}
	}
	return nil
}

// ruleFrontend is the frontend the Service's rules use: its own, or the
// one it shares.
func ruleFrontend(lb *armnetwork.LoadBalancer, names lbNames) *armnetwork.FrontendIPConfiguration {
	if fe := findFrontend(lb, names.frontend); fe != nil {
		return fe
	}
	if lb == nil || lb.Properties == nil {
		return nil
	}
	for _, r := range lb.Properties.LoadBalancingRules {
		if r != nil && names.ownsRule(deref(r.Name)) && r.Properties != nil && r.Properties.FrontendIPConfiguration != nil {
			id := deref(r.Properties.FrontendIPConfiguration.ID)
			return findFrontend(lb, id[strings.LastIndex(id, "/")+1:])
		}
	}
	return nil
}

// reconcileOwned makes the Service's parts of list (those ownedBy name)
// exactly want (by lower-cased name): a part that is as wanted stays as
// it is, one that differs is replaced under its existing name, one not
// wanted goes, and missing ones are appended in name order. Other parts
// are kept untouched and in place.
func reconcileOwned[T any](list []*T, want map[string]*T, name string, nameOf func(*T) *string, same func(a, b *T) bool) ([]*T, bool) {
	changed := false
	var keep []*T
	for _, cur := range list {
		if cur == nil || !ownedBy(deref(nameOf(cur)), name) {
			keep = append(keep, cur)
			continue
		}
		key := strings.ToLower(deref(nameOf(cur)))
		w, ok := want[key]
		switch {
		case !ok:
			changed = true
		case same(cur, w):
			keep = append(keep, cur)
		default:
			*nameOf(w) = deref(nameOf(cur))
			keep = append(keep, w)
			changed = true
		}
		delete(want, key)
	}
	for _, k := range sortedKeys(want) {
		keep = append(keep, want[k])
		changed = true
	}
	return keep, changed
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// ownedBy says a rule, probe or NSG rule name is the Service's: its name
// and a dash, then the protocol and port.
func ownedBy(part, name string) bool {
	return len(part) > len(name) && strings.EqualFold(part[:len(name)+1], name+"-")
}

// desiredRules adds the Service's rules and probes of family f to rules
// and probes, by lower-cased name. With floating IP on (upstream's
// default) a rule keeps the frontend's address and the Service port,
// which kube-proxy answers on every node; off, it sends the port's
// traffic to the nodes' NodePort. Probes go to the NodePort either way,
// as upstream's.
func desiredRules(rules map[string]*armnetwork.LoadBalancingRule, probes map[string]*armnetwork.Probe, lbID, pool string, names lbNames, frontend string, sp *lbSpec, f famSpec) {
	if sp.haPorts {
		haRule(rules, probes, lbID, pool, names, frontend, sp, f)
		return
	}
	for i, port := range sp.ports {
		rn := names.rule(port)
		props := &armnetwork.LoadBalancingRulePropertiesFormat{
			FrontendIPConfiguration: &armnetwork.SubResource{ID: to.Ptr(lbID + "/frontendIPConfigurations/" + frontend)},
			BackendAddressPool:      &armnetwork.SubResource{ID: to.Ptr(lbID + "/backendAddressPools/" + pool)},
			Protocol:                to.Ptr(armnetwork.TransportProtocol(protocolName(port.Protocol))),
			FrontendPort:            to.Ptr(port.Port),
			BackendPort:             to.Ptr(f.backendPort(port)),
			EnableFloatingIP:        to.Ptr(f.floatingIP),
			IdleTimeoutInMinutes:    to.Ptr(sp.idleTimeout),
			LoadDistribution:        to.Ptr(armnetwork.LoadDistributionDefault),
			EnableTCPReset:          to.Ptr(port.Protocol == v1.ProtocolTCP && sp.tcpReset),
			DisableOutboundSnat:     to.Ptr(false),
		}
		if sp.sessionIP {
			props.LoadDistribution = to.Ptr(armnetwork.LoadDistributionSourceIP)
		}
		// A UDP port of a Cluster-policy Service has nothing to probe:
		// without a probe every node in the pool receives traffic.
		pp := portProbe{}
		if i < len(sp.probes) {
			pp = sp.probes[i]
		}
		if pp.noRule {
			continue
		}
		probeName, probe := rn, pp.probe
		if probe == nil && pp.useLocal {
			// One probe of kube-proxy's health check for all the rules.
			probeName, probe = names.rule(v1.ServicePort{Protocol: v1.ProtocolTCP, Port: deref(sp.localProbe.Port)}), sp.localProbe
		}
		if probe != nil {
			cp := *probe
			probes[strings.ToLower(probeName)] = &armnetwork.Probe{Name: to.Ptr(probeName), Properties: &cp}
			props.Probe = &armnetwork.SubResource{ID: to.Ptr(lbID + "/probes/" + probeName)}
		}
		rules[strings.ToLower(rn)] = &armnetwork.LoadBalancingRule{Name: to.Ptr(rn), Properties: props}
	}
}

func protocolName(p v1.Protocol) string {
	if p == v1.ProtocolUDP {
		return "Udp"
	}
	return "Tcp"
}

func subID(r *armnetwork.SubResource) *string {
	if r == nil {
		return nil
	}
	return r.ID
}

func sameRule(a, b *armnetwork.LoadBalancingRulePropertiesFormat) bool {
	if a == nil || b == nil {
		return a == b
	}
	return sameID(subID(a.FrontendIPConfiguration), subID(b.FrontendIPConfiguration)) &&
		sameID(subID(a.BackendAddressPool), subID(b.BackendAddressPool)) &&
		sameID(subID(a.Probe), subID(b.Probe)) &&
		strings.EqualFold(string(deref(a.Protocol)), string(deref(b.Protocol))) &&
		deref(a.FrontendPort) == deref(b.FrontendPort) && deref(a.BackendPort) == deref(b.BackendPort) &&
		deref(a.EnableFloatingIP) == deref(b.EnableFloatingIP) &&
		deref(a.IdleTimeoutInMinutes) == deref(b.IdleTimeoutInMinutes) &&
		deref(a.LoadDistribution) == deref(b.LoadDistribution) &&
		deref(a.EnableTCPReset) == deref(b.EnableTCPReset)
}

func sameProbe(a, b *armnetwork.ProbePropertiesFormat) bool {
	if a == nil || b == nil {
		return a == b
	}
	return strings.EqualFold(string(deref(a.Protocol)), string(deref(b.Protocol))) &&
		deref(a.Port) == deref(b.Port) && deref(a.RequestPath) == deref(b.RequestPath) &&
		deref(a.IntervalInSeconds) == deref(b.IntervalInSeconds) && deref(a.ProbeThreshold) == deref(b.ProbeThreshold)
}

// ensurePools makes the cluster's backend pools list exactly backends:
// the IPv4 pool always, the IPv6 one when it exists or want6 asks for it
// (a Service with an IPv6 frontend), so every pool follows the nodes.
func (l *loadBalancers) ensurePools(lb *armnetwork.LoadBalancer, backends []backend, want6 bool) bool {
	changed := l.ensurePool(lb, backends, false)
	if want6 || findPool(lb, l.poolName(true)) != nil {
		changed = l.ensurePool(lb, backends, true) || changed
	}
	return changed
}

func findPool(lb *armnetwork.LoadBalancer, name string) *armnetwork.BackendAddressPool {
	if lb == nil || lb.Properties == nil {
		return nil
	}
	for _, bp := range lb.Properties.BackendAddressPools {
		if bp != nil && strings.EqualFold(deref(bp.Name), name) {
			return bp
		}
	}
	return nil
}

// ensurePool makes the cluster's backend pool of a family list exactly
// backends' addresses of that family (nodeIP pools: addresses in the
// nodes' virtual network, not NIC configurations), so a node-set change
// is this one write. A NIC-based pool only has to exist here
// (loadbalancer_nicpool.go).
func (l *loadBalancers) ensurePool(lb *armnetwork.LoadBalancer, backends []backend, v6 bool) bool {
	if lb.Properties == nil {
		lb.Properties = &armnetwork.LoadBalancerPropertiesFormat{}
	}
	pool := l.poolName(v6)
	cur := findPool(lb, pool)
	if l.nics != nil {
		// NIC-based: the pool lists no address (ARM refuses a pool with
		// both kinds of member); nodes join it from their side.
		if cur == nil {
			lb.Properties.BackendAddressPools = append(lb.Properties.BackendAddressPools, &armnetwork.BackendAddressPool{
				Name: to.Ptr(pool), Properties: &armnetwork.BackendAddressPoolPropertiesFormat{},
			})
			return true
		}
		// ARM lists NIC members here too, without an address; only
		// addresses are cleared.
		if cur.Properties != nil && slices.ContainsFunc(cur.Properties.LoadBalancerBackendAddresses, func(a *armnetwork.LoadBalancerBackendAddress) bool {
			return a != nil && a.Properties != nil && deref(a.Properties.IPAddress) != ""
		}) {
			cur.Properties.LoadBalancerBackendAddresses = nil
			return true
		}
		return false
	}
	want := make([]*armnetwork.LoadBalancerBackendAddress, 0, len(backends))
	sorted := slices.Clone(backends)
	slices.SortFunc(sorted, func(a, b backend) int { return strings.Compare(a.node, b.node) })
	for _, b := range sorted {
		if b.addr(v6) == "" {
			continue
		}
		want = append(want, &armnetwork.LoadBalancerBackendAddress{Name: to.Ptr(b.node), Properties: &armnetwork.LoadBalancerBackendAddressPropertiesFormat{
			IPAddress:      to.Ptr(b.addr(v6)),
			VirtualNetwork: &armnetwork.SubResource{ID: to.Ptr(l.vnetID())},
		}})
	}
	if cur == nil {
		lb.Properties.BackendAddressPools = append(lb.Properties.BackendAddressPools, &armnetwork.BackendAddressPool{
			Name: to.Ptr(pool), Properties: &armnetwork.BackendAddressPoolPropertiesFormat{LoadBalancerBackendAddresses: want},
		})
		return true
	}
	if cur.Properties == nil {
		cur.Properties = &armnetwork.BackendAddressPoolPropertiesFormat{}
	}
	have := map[string]string{}
	for _, a := range cur.Properties.LoadBalancerBackendAddresses {
		if a != nil && a.Properties != nil {
			have[deref(a.Name)] = deref(a.Properties.IPAddress)
		}
	}
	same := len(have) == len(want)
	for _, a := range want {
		if have[*a.Name] != *a.Properties.IPAddress {
			same = false
		}
	}
	if same {
		return false
	}
	cur.Properties.LoadBalancerBackendAddresses = want
	return true
}

// removeService is the edit that takes the Service's frontend, rules and
// probes out of a load balancer. A frontend that other Services' rules
// still use (they share its address) stays; a shared frontend the
// Service's rules used goes once nothing uses it (its own Service went
// before).
func removeService(names ...lbNames) func(lb *armnetwork.LoadBalancer) (bool, error) {
	return func(lb *armnetwork.LoadBalancer) (bool, error) {
		if lb.Properties == nil {
			return false, nil
		}
		p := lb.Properties
		n := len(p.FrontendIPConfigurations) + len(p.LoadBalancingRules) + len(p.Probes)
		candidates := map[string]bool{}
		for _, nm := range names {
			candidates[strings.ToLower(nm.frontend)] = true
			p.LoadBalancingRules = slices.DeleteFunc(p.LoadBalancingRules, func(r *armnetwork.LoadBalancingRule) bool {
				if r == nil || !ownedBy(deref(r.Name), nm.base) {
					return false
				}
				if r.Properties != nil && r.Properties.FrontendIPConfiguration != nil {
					id := deref(r.Properties.FrontendIPConfiguration.ID)
					candidates[strings.ToLower(id[strings.LastIndex(id, "/")+1:])] = true
				}
				return true
			})
			p.Probes = slices.DeleteFunc(p.Probes, func(pr *armnetwork.Probe) bool {
				return pr != nil && ownedBy(deref(pr.Name), nm.base)
			})
		}
		used := frontendsInUse(p)
		p.FrontendIPConfigurations = slices.DeleteFunc(p.FrontendIPConfigurations, func(fe *armnetwork.FrontendIPConfiguration) bool {
			return fe != nil && candidates[strings.ToLower(deref(fe.Name))] && !used[strings.ToLower(deref(fe.Name))]
		})
		return len(p.FrontendIPConfigurations)+len(p.LoadBalancingRules)+len(p.Probes) != n, nil
	}
}

// frontendsInUse are the (lower-cased) names of the frontends a rule of
// any kind references.
func frontendsInUse(p *armnetwork.LoadBalancerPropertiesFormat) map[string]bool {
	used := map[string]bool{}
	note := func(r *armnetwork.SubResource) {
		if id := deref(subID(r)); id != "" {
			used[strings.ToLower(id[strings.LastIndex(id, "/")+1:])] = true
		}
	}
	for _, r := range p.LoadBalancingRules {
		if r != nil && r.Properties != nil {
			note(r.Properties.FrontendIPConfiguration)
		}
	}
	for _, r := range p.InboundNatRules {
		if r != nil && r.Properties != nil {
			note(r.Properties.FrontendIPConfiguration)
		}
	}
	for _, r := range p.OutboundRules {
		if r != nil && r.Properties != nil {
			for _, f := range r.Properties.FrontendIPConfigurations {
				note(f)
			}
		}
	}
	return used
}

// haRule is azure-load-balancer-enable-high-availability-ports' one rule
// for every port and protocol, as upstream's (azure_loadbalancer.go:3213-3256,
// 3385-3397): named after the first port's rule, protocol All on ports
// 0, floating IP on (whatever the annotation says) but for the IPv6
// frontend (azure_loadbalancer.go:3375-3380, 3385-3397), TCP reset unless
// disabled, probed by the Local health check or else the first port that
// has a probe (the probe named after the rule).
func haRule(rules map[string]*armnetwork.LoadBalancingRule, probes map[string]*armnetwork.Probe, lbID, pool string, names lbNames, frontend string, sp *lbSpec, f famSpec) {
	rn := names.rule(sp.ports[0])
	props := &armnetwork.LoadBalancingRulePropertiesFormat{
		FrontendIPConfiguration: &armnetwork.SubResource{ID: to.Ptr(lbID + "/frontendIPConfigurations/" + frontend)},
		BackendAddressPool:      &armnetwork.SubResource{ID: to.Ptr(lbID + "/backendAddressPools/" + pool)},
		Protocol:                to.Ptr(armnetwork.TransportProtocolAll),
		FrontendPort:            to.Ptr[int32](0),
		BackendPort:             to.Ptr[int32](0),
		EnableFloatingIP:        to.Ptr(!f.v6),
		IdleTimeoutInMinutes:    to.Ptr(sp.idleTimeout),
		LoadDistribution:        to.Ptr(armnetwork.LoadDistributionDefault),
		EnableTCPReset:          to.Ptr(sp.tcpReset),
		DisableOutboundSnat:     to.Ptr(false),
	}
	if sp.sessionIP {
		props.LoadDistribution = to.Ptr(armnetwork.LoadDistributionSourceIP)
	}
	probeName, probe := "", (*armnetwork.ProbePropertiesFormat)(nil)
	if sp.local && sp.localProbe != nil {
		probeName, probe = names.rule(v1.ServicePort{Protocol: v1.ProtocolTCP, Port: deref(sp.localProbe.Port)}), sp.localProbe
	} else {
		for _, pp := range sp.probes {
			if pp.probe != nil {
				probeName, probe = rn, pp.probe
				break
			}
		}
	}
	if probe != nil {
		cp := *probe
		probes[strings.ToLower(probeName)] = &armnetwork.Probe{Name: to.Ptr(probeName), Properties: &cp}
		props.Probe = &armnetwork.SubResource{ID: to.Ptr(lbID + "/probes/" + probeName)}
	}
	rules[strings.ToLower(rn)] = &armnetwork.LoadBalancingRule{Name: to.Ptr(rn), Properties: props}
}
