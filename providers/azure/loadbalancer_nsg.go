package azure

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors" //nolint:gosec // a rule's name, as upstream's, not a secret
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/svcopts"
)

// Network security group rules, as upstream's (cloud-provider-azure
// v1.29 and later, the same in v1.36.5) so a cluster switched from it
// keeps its rules and shares them:
//
//   - an allow rule admits one exact set of sources (the Service's
//     ranges, or one service tag) to one exact set of ports of one
//     protocol, and is named k8s-azure-lb_allow_IPv4_<md5 of
//     "<protocol>_<sorted sources>_<sorted ports as strings>">
//     (provider/securitygroup/securityrule.go:45-71). Services asking for
//     the same sources and ports share it: its destinations are the
//     union of theirs (securitygroup.go:166-203);
//   - the destinations are the Service's frontend address with floating
//     IP (the Service port is then the rule's port), else the backend
//     nodes' addresses and the NodePorts (azure_loadbalancer.go:3441-3482,
//     loadbalancer/accesscontrol.go:361-379). A rule thus admits clients
//     to the Service's address only, not to every node;
//   - sources (accesscontrol.go:130-222): spec.loadBalancerSourceRanges
//     (or Kubernetes' source-ranges annotation) or azure-allowed-ip-ranges
//     (both is an error), aggregated, in one rule; each service tag in its
//     own; Internet for a public Service with neither (and for an internal
//     one only when its ranges admit everything). An internal Service with
//     no ranges gets no rule: the group's AllowVnetInBound admits it;
//   - azure-deny-all-except-load-balancer-source-ranges with ranges adds
//     k8s-azure-lb_deny-all_IPv4 for the Service's destinations, at the
//     highest free priority below 4096 (allow rules take the lowest from
//     500, securitygroup.go:113-132);
//   - a rule is the manager's when its name starts k8s-azure-lb and its
//     priority is 500-4096 (securityrule.go:36-42); one left with no
//     destination goes.
//
// A sync edits the group as upstream's reconcileSecurityGroup does: it
// takes the Service's destinations out of every managed rule whose ports
// no Service sharing them still uses, adds them back to the rules it
// wants, and drops destinations no Service or node has any more. Rules
// named after the Service (this manager's before these, and upstream's
// before v1.29: "<base>-<PROTOCOL>-<port>-<source>") are removed.

const (
	nsgRulePrefix     = "k8s-azure-lb"
	firstRulePriority = 500
	lastRulePriority  = 4096
	// serviceTagInternet is the source of a public Service that names none.
	serviceTagInternet = "Internet"
)

// allowRuleName is upstream's GenerateAllowSecurityRuleName: the family
// is in the name, not in the hash (securityrule.go:45-71).
// These names MUST NOT change: they are how the rules are shared and found.
func allowRuleName(protocol armnetwork.SecurityRuleProtocol, v6 bool, sources []string, ports []int32) string {
	srcs := slices.Clone(sources)
	slices.Sort(srcs)
	sum := md5.Sum([]byte(strings.Join([]string{string(protocol), strings.Join(srcs, ","), strings.Join(portStrings(ports), ",")}, "_"))) //nolint:gosec
	return strings.Join([]string{nsgRulePrefix, "allow", familyName(v6), hex.EncodeToString(sum[:])}, "_")
}

// denyAllRuleName is upstream's GenerateDenyAllSecurityRuleName
// (securityrule.go:74-76).
func denyAllRuleName(v6 bool) string {
	return strings.Join([]string{nsgRulePrefix, "deny-all", familyName(v6)}, "_")
}

// portStrings are ports as decimal strings in string order, as upstream
// sorts them (so 443 comes before 80).
func portStrings(ports []int32) []string {
	out := make([]string, 0, len(ports))
	for _, p := range ports {
		out = append(out, strconv.Itoa(int(p)))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// managedRule is upstream's IsManagedSecurityRule.
func managedRule(r *armnetwork.SecurityRule) bool {
	if r == nil || r.Name == nil || r.Properties == nil || r.Properties.Priority == nil {
		return false
	}
	p := *r.Properties.Priority
	return strings.HasPrefix(*r.Name, nsgRulePrefix) && p >= firstRulePriority && p <= lastRulePriority
}

// securityProtocol is upstream's ProtocolFromKubernetes.
func securityProtocol(p v1.Protocol) armnetwork.SecurityRuleProtocol {
	switch p {
	case v1.ProtocolUDP:
		return armnetwork.SecurityRuleProtocolUDP
	case v1.ProtocolSCTP:
		return armnetwork.SecurityRuleProtocolAsterisk
	}
	return armnetwork.SecurityRuleProtocolTCP
}

// rulePorts are the destination ports of a Service's rules by protocol:
// the Service ports with floating IP, the NodePorts without.
func rulePorts(ports []v1.ServicePort, floatingIP bool) map[armnetwork.SecurityRuleProtocol][]int32 {
	out := map[armnetwork.SecurityRuleProtocol][]int32{}
	for _, p := range ports {
		n := p.Port
		if !floatingIP {
			n = p.NodePort
		}
		out[securityProtocol(p.Protocol)] = append(out[securityProtocol(p.Protocol)], n)
	}
	return out
}

// access is what a Service asks of the security group.
type access struct {
	// disabled is azure-disable-load-balancer-nsg-rule: the Service's
	// destinations are still cleaned, no rule is added.
	disabled bool
	// sources are, by family (IPv6 true), the allow rules' source sets:
	// the family's ranges together, each service tag alone (a tag serves
	// both families), as upstream's PatchSecurityGroup
	// (loadbalancer/accesscontrol.go:195-275).
	sources map[bool][][]string
	denyAll bool
	// ports are the destination ports by family: they differ where the
	// family's floating IP does (an internal Service's IPv6 half).
	ports map[bool]map[armnetwork.SecurityRuleProtocol][]int32
}

// allPorts are the Service's rules' ports of both families.
func (a *access) allPorts() map[armnetwork.SecurityRuleProtocol][]int32 {
	out := map[armnetwork.SecurityRuleProtocol][]int32{}
	for _, byProto := range a.ports {
		for proto, ps := range byProto {
			out[proto] = append(out[proto], ps...)
		}
	}
	return out
}

// rules are the rules the Service wants for its destinations (either
// family's addresses, each family's to its own rules), with their fields
// set but no priority.
func (a *access) rules(dsts []string) []*armnetwork.SecurityRule {
	if a.disabled || len(dsts) == 0 {
		return nil
	}
	var out []*armnetwork.SecurityRule
	for _, v6 := range []bool{false, true} {
		var fd []string
		for _, d := range dsts {
			if strings.Contains(d, ":") == v6 {
				fd = append(fd, d)
			}
		}
		if len(fd) > 0 {
			out = append(out, a.familyRules(v6, fd)...)
		}
	}
	return out
}

func (a *access) familyRules(v6 bool, dsts []string) []*armnetwork.SecurityRule {
	var out []*armnetwork.SecurityRule
	a.eachAllow(v6, func(proto armnetwork.SecurityRuleProtocol, srcs []string, ports []int32) {
		p := &armnetwork.SecurityRulePropertiesFormat{
			Protocol:              to.Ptr(proto),
			Access:                to.Ptr(armnetwork.SecurityRuleAccessAllow),
			Direction:             to.Ptr(armnetwork.SecurityRuleDirectionInbound),
			SourcePortRange:       to.Ptr("*"),
			DestinationPortRanges: to.SliceOfPtrs(portStrings(ports)...),
		}
		if len(srcs) == 1 {
			p.SourceAddressPrefix = to.Ptr(srcs[0])
		} else {
			p.SourceAddressPrefixes = to.SliceOfPtrs(srcs...)
		}
		setDestinations(p, dsts)
		out = append(out, &armnetwork.SecurityRule{Name: to.Ptr(allowRuleName(proto, v6, srcs, ports)), Properties: p})
	})
	if a.denyAll {
		p := &armnetwork.SecurityRulePropertiesFormat{
			Protocol:             to.Ptr(armnetwork.SecurityRuleProtocolAsterisk),
			Access:               to.Ptr(armnetwork.SecurityRuleAccessDeny),
			Direction:            to.Ptr(armnetwork.SecurityRuleDirectionInbound),
			SourceAddressPrefix:  to.Ptr("*"),
			SourcePortRange:      to.Ptr("*"),
			DestinationPortRange: to.Ptr("*"),
		}
		setDestinations(p, dsts)
		out = append(out, &armnetwork.SecurityRule{Name: to.Ptr(denyAllRuleName(v6)), Properties: p})
	}
	return out
}

// eachAllow calls f for each allow rule of a family the Service asks
// for: per protocol, per source set.
func (a *access) eachAllow(v6 bool, f func(proto armnetwork.SecurityRuleProtocol, srcs []string, ports []int32)) {
	for _, proto := range []armnetwork.SecurityRuleProtocol{armnetwork.SecurityRuleProtocolTCP, armnetwork.SecurityRuleProtocolUDP, armnetwork.SecurityRuleProtocolAsterisk} {
		if ports, ok := a.ports[v6][proto]; ok {
			for _, srcs := range a.sources[v6] {
				f(proto, srcs, ports)
			}
		}
	}
}

// allowRuleNames are the names of the Service's allow rules of both
// families (whether or not the NSG rule is disabled: a disabled
// Service's old rules still go).
func (a *access) allowRuleNames() []string {
	var out []string
	for _, v6 := range []bool{false, true} {
		a.eachAllow(v6, func(proto armnetwork.SecurityRuleProtocol, srcs []string, ports []int32) {
			out = append(out, allowRuleName(proto, v6, srcs, ports))
		})
	}
	return out
}

// destinations lists a rule's destination addresses.
func destinations(p *armnetwork.SecurityRulePropertiesFormat) []string {
	var out []string
	if v := deref(p.DestinationAddressPrefix); v != "" {
		out = append(out, v)
	}
	for _, v := range p.DestinationAddressPrefixes {
		if deref(v) != "" {
			out = append(out, *v)
		}
	}
	return out
}

// setDestinations writes dsts, sorted and without repeats, as upstream's
// SetDestinationPrefixes: one in the singular field, more in the list.
func setDestinations(p *armnetwork.SecurityRulePropertiesFormat, dsts []string) {
	ds := slices.Clone(dsts)
	slices.Sort(ds)
	ds = slices.Compact(ds)
	if len(ds) == 1 {
		p.DestinationAddressPrefix, p.DestinationAddressPrefixes = to.Ptr(ds[0]), nil
		return
	}
	p.DestinationAddressPrefix, p.DestinationAddressPrefixes = nil, to.SliceOfPtrs(ds...)
}

// rulePortList is a rule's destination ports; ok is false when one is
// "*" or a range, which the manager never writes on an allow rule.
func rulePortList(p *armnetwork.SecurityRulePropertiesFormat) (ports []int32, ok bool) {
	vals := slices.Clone(p.DestinationPortRanges)
	if p.DestinationPortRange != nil {
		vals = append(vals, p.DestinationPortRange)
	}
	for _, v := range vals {
		n, err := strconv.ParseInt(deref(v), 10, 32)
		if err != nil {
			return nil, false
		}
		ports = append(ports, int32(n))
	}
	return ports, true
}

func sources(p *armnetwork.SecurityRulePropertiesFormat) []string {
	var out []string
	if v := deref(p.SourceAddressPrefix); v != "" {
		out = append(out, v)
	}
	for _, v := range p.SourceAddressPrefixes {
		out = append(out, deref(v))
	}
	return out
}

// nsgEdit is one Service's change to the security group. Its apply is
// pure, so the shared writer can re-apply it to a fresh read after a 412.
type nsgEdit struct {
	// bases name the Service's per-Service rules of before (ours, and
	// upstream's before v1.29), all removed.
	bases []string
	// clean are destinations the Service had or has: taken out of every
	// managed rule whose ports retain (other Services' on the same
	// destinations, by protocol) does not cover.
	clean  []string
	retain map[armnetwork.SecurityRuleProtocol][]int32
	// add are the rules the Service wants.
	add []*armnetwork.SecurityRule
	// keep, when set, says a destination still belongs to a Service or
	// node; managed rules lose every other one.
	keep func(string) bool
	// tags are the config's, written with any change (upstream's
	// ensureSecurityGroupTagged).
	tags tagger
}

func (e *nsgEdit) apply(g *armnetwork.SecurityGroup) (bool, error) {
	if g.Properties == nil {
		g.Properties = &armnetwork.SecurityGroupPropertiesFormat{}
	}
	before := rulesSnapshot(g.Properties.SecurityRules)
	rules := slices.DeleteFunc(slices.Clone(g.Properties.SecurityRules), func(r *armnetwork.SecurityRule) bool {
		return r == nil || slices.ContainsFunc(e.bases, func(b string) bool { return ownedBy(deref(r.Name), b) })
	})
	byName := map[string]*armnetwork.SecurityRule{}
	for _, r := range rules {
		byName[deref(r.Name)] = r
	}
	var split []*armnetwork.SecurityRule
	if len(e.clean) > 0 {
		for _, r := range rules {
			if !managedRule(r) {
				continue
			}
			s := e.cleanRule(r)
			if s != nil {
				split = append(split, s)
			}
		}
	}
	for _, w := range append(split, e.add...) {
		// A rule's fields are what its name says; its destinations are
		// everyone's who shares it.
		p := *w.Properties
		if cur := byName[deref(w.Name)]; cur != nil {
			if cur.Properties != nil {
				p.Priority = cur.Properties.Priority
				setDestinations(&p, append(destinations(cur.Properties), destinations(w.Properties)...))
			}
			cur.Properties = &p
			continue
		}
		p.Priority = nil
		r := &armnetwork.SecurityRule{Name: w.Name, Properties: &p}
		rules = append(rules, r)
		byName[deref(w.Name)] = r
	}
	if err := assignPriorities(rules); err != nil {
		return false, err
	}
	if e.keep != nil {
		for _, r := range rules {
			if managedRule(r) {
				setDestinations(r.Properties, slices.DeleteFunc(destinations(r.Properties), func(d string) bool { return !e.keep(d) }))
			}
		}
	}
	rules = slices.DeleteFunc(rules, func(r *armnetwork.SecurityRule) bool {
		return managedRule(r) && len(destinations(r.Properties)) == 0 && len(r.Properties.DestinationApplicationSecurityGroups) == 0
	})
	g.Properties.SecurityRules = rules
	tagged := e.tags.reconcile(&g.Tags, nil)
	return rulesSnapshot(rules) != before || tagged, nil
}

// cleanRule takes e.clean out of r's destinations unless every port of r
// is retained, as upstream's removeDestinationFromRule. When only some
// are, the destinations keep a rule for those: returned to be added.
func (e *nsgEdit) cleanRule(r *armnetwork.SecurityRule) *armnetwork.SecurityRule {
	p := r.Properties
	cur := destinations(p)
	var target, rest []string
	for _, d := range cur {
		if slices.Contains(e.clean, d) {
			target = append(target, d)
		} else {
			rest = append(rest, d)
		}
	}
	if len(target) == 0 {
		return nil
	}
	proto := deref(p.Protocol)
	if deref(p.Access) == armnetwork.SecurityRuleAccessDeny && len(e.retain[proto]) == 0 {
		setDestinations(p, rest)
		return nil
	}
	ports, ok := rulePortList(p)
	if !ok {
		return nil
	}
	var kept []int32
	for _, port := range ports {
		if slices.Contains(e.retain[proto], port) {
			kept = append(kept, port)
		}
	}
	if len(kept) == len(ports) {
		return nil
	}
	setDestinations(p, rest)
	if len(kept) == 0 {
		return nil
	}
	srcs := sources(p)
	np := *p
	np.Priority = nil
	np.DestinationPortRange, np.DestinationPortRanges = nil, to.SliceOfPtrs(portStrings(kept)...)
	np.SourceAddressPrefix, np.SourceAddressPrefixes = nil, nil
	if len(srcs) == 1 {
		np.SourceAddressPrefix = to.Ptr(srcs[0])
	} else {
		np.SourceAddressPrefixes = to.SliceOfPtrs(srcs...)
	}
	setDestinations(&np, target)
	v6 := strings.Contains(deref(r.Name), "_"+familyName(true)+"_")
	return &armnetwork.SecurityRule{Name: to.Ptr(allowRuleName(proto, v6, srcs, kept)), Properties: &np}
}

// assignPriorities gives each new rule upstream's priority: allow rules
// the lowest free from 500, deny rules the highest free below 4096.
func assignPriorities(rules []*armnetwork.SecurityRule) error {
	used := map[int32]bool{}
	for _, r := range rules {
		if r.Properties != nil && r.Properties.Priority != nil && deref(r.Properties.Direction) == armnetwork.SecurityRuleDirectionInbound {
			used[*r.Properties.Priority] = true
		}
	}
	for _, r := range rules {
		if r.Properties == nil || r.Properties.Priority != nil {
			continue
		}
		p, step, end := int32(firstRulePriority), int32(1), int32(lastRulePriority)
		if deref(r.Properties.Access) == armnetwork.SecurityRuleAccessDeny {
			p, step, end = lastRulePriority-1, -1, firstRulePriority-1
		}
		for ; p != end && used[p]; p += step {
		}
		if p == end {
			return fmt.Errorf("no free inbound priority between %d and %d for security rule %s", firstRulePriority, lastRulePriority, deref(r.Name))
		}
		used[p] = true
		r.Properties.Priority = to.Ptr(p)
	}
	return nil
}

// rulesSnapshot is the rules' content in a comparable form. Unlike
// upstream's JSON snapshot it ignores the order of prefixes and an empty
// list against none, which ARM's answers and this manager's writes may
// differ in: a sync that changes nothing must write nothing.
func rulesSnapshot(rules []*armnetwork.SecurityRule) string {
	var b strings.Builder
	for _, r := range rules {
		if r == nil {
			continue
		}
		fmt.Fprintf(&b, "%s|", deref(r.Name))
		if p := r.Properties; p != nil {
			srcs, dsts := sources(p), destinations(p)
			slices.Sort(srcs)
			slices.Sort(dsts)
			ports := make([]string, 0, len(p.DestinationPortRanges)+1)
			for _, v := range p.DestinationPortRanges {
				ports = append(ports, deref(v))
			}
			slices.Sort(ports)
			fmt.Fprintf(&b, "%s|%s|%s|%d|%v|%v|%s|%v|%s|%s", deref(p.Protocol), deref(p.Access), deref(p.Direction), deref(p.Priority),
				srcs, dsts, deref(p.DestinationPortRange), ports, deref(p.SourcePortRange), deref(p.Description))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// readAccess reads the Service's security settings as upstream's
// NewAccessControl, IsAllowFromInternet and DenyAllExceptSourceRanges.
func readAccess(svc *v1.Service, sp *lbSpec) (*access, error) {
	internal := sp.internal
	a := &access{ports: map[bool]map[armnetwork.SecurityRuleProtocol][]int32{}, sources: map[bool][][]string{}}
	for _, f := range sp.fams {
		a.ports[f.v6] = rulePorts(sp.ports, f.floatingIP)
	}
	a.disabled = annotationTrue(annotationDisableNSGRule, svc)
	srcRanges, err := specSourceRanges(svc)
	if err != nil {
		return nil, err
	}
	var allowed []netip.Prefix
	list, _, err := annotationAllowedIPRanges.List(svc)
	if err != nil {
		return nil, err
	}
	for _, s := range list {
		p, perr := netip.ParsePrefix(s)
		if perr != nil {
			return nil, annotationAllowedIPRanges.Invalid(s, "CIDRs such as 203.0.113.0/24")
		}
		allowed = append(allowed, p.Masked())
	}
	if len(srcRanges) > 0 && len(allowed) > 0 {
		return nil, fmt.Errorf("spec.loadBalancerSourceRanges (or annotation %s) and annotation %s both set the client ranges; set one, as the upstream Azure CCM requires", v1.AnnotationLoadBalancerSourceRangesKey, annotationAllowedIPRanges)
	}
	ranges := append(srcRanges, allowed...)
	tags, _, err := annotationAllowedServiceTags.List(svc)
	if err != nil {
		return nil, err
	}
	for _, t := range tags {
		if !serviceTagRE.MatchString(t) || len(t) > 80 {
			return nil, annotationAllowedServiceTags.Invalid(t, "Azure service tags such as AzureFrontDoor.Backend or Storage.WestEurope")
		}
	}
	allowAll := slices.ContainsFunc(ranges, func(p netip.Prefix) bool { return p.Bits() == 0 })
	fromInternet := len(tags) == 0 && (len(ranges) == 0 || allowAll) && (!internal || len(ranges) > 0)
	if fromInternet && !allowAll {
		tags = append(tags, serviceTagInternet)
	}
	for _, v6 := range []bool{false, true} {
		for _, t := range tags {
			a.sources[v6] = append(a.sources[v6], []string{t})
		}
		var fam []netip.Prefix
		for _, p := range ranges {
			if p.Addr().Is6() == v6 {
				fam = append(fam, p)
			}
		}
		if agg := aggregatePrefixes(fam); len(agg) > 0 {
			srcs := make([]string, len(agg))
			for i, p := range agg {
				srcs[i] = p.String()
			}
			a.sources[v6] = append(a.sources[v6], srcs)
		}
	}
	a.denyAll = annotationTrue(annotationDenyAllExceptSourceRanges, svc) && len(ranges) > 0
	return a, nil
}

// specSourceRanges are spec.loadBalancerSourceRanges, else Kubernetes'
// source-ranges annotation; none when neither is set (the Kubernetes
// helper svcopts.SourceRanges reads them with would answer 0.0.0.0/0
// then, which upstream tells apart).
func specSourceRanges(svc *v1.Service) ([]netip.Prefix, error) {
	if len(svc.Spec.LoadBalancerSourceRanges) == 0 && strings.TrimSpace(svc.Annotations[v1.AnnotationLoadBalancerSourceRangesKey]) == "" {
		return nil, nil
	}
	return svcopts.SourceRanges(svc)
}

// aggregatePrefixes merges overlapping and adjacent prefixes, as
// upstream's iputil.AggregatePrefixes, so the rule (and its name) is the
// same whichever way the user wrote the ranges.
func aggregatePrefixes(in []netip.Prefix) []netip.Prefix {
	ps := slices.Clone(in)
	slices.SortFunc(ps, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	var out []netip.Prefix
	for _, p := range ps {
		if n := len(out); n > 0 && out[n-1].Overlaps(p) && out[n-1].Bits() <= p.Bits() {
			continue
		}
		out = append(out, p)
		// Merge the last two while they are the halves of one prefix.
		for len(out) >= 2 {
			a, b := out[len(out)-2], out[len(out)-1]
			if a.Bits() != b.Bits() || a.Bits() == 0 {
				break
			}
			parent, _ := a.Addr().Prefix(a.Bits() - 1)
			if parent.Addr() != a.Addr() || !parent.Contains(b.Addr()) {
				break
			}
			out = append(out[:len(out)-2], parent)
		}
	}
	return out
}

// svcDests is what a sync last gave a Service in the security group: its
// destinations and its rules' ports. Another Service's sync keeps what it
// shares with these, and never drops these destinations, even before the
// Service's status shows them.
type svcDests struct {
	dsts  []string
	ports map[armnetwork.SecurityRuleProtocol][]int32
}

// noteDests records the Service's destinations: added to those of before
// while a sync is under way (until its last write, the old may still be
// in rules), exactly these once it is done.
func (l *loadBalancers) noteDests(svc *v1.Service, dsts []string, sp *lbSpec, done bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	key := serviceKey(svc)
	d := slices.Clone(dsts)
	if !done {
		d = append(d, l.dests[key].dsts...)
		slices.Sort(d)
		d = slices.Compact(d)
	}
	l.dests[key] = svcDests{dsts: d, ports: sp.access.allPorts()}
}

func (l *loadBalancers) dropDests(svc *v1.Service) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.dests, serviceKey(svc))
}

// noteBackends remembers the nodes' addresses: the destinations of rules
// without floating IP.
func (l *loadBalancers) noteBackends(backends []backend) []string {
	ips := make([]string, 0, len(backends))
	for _, b := range backends {
		ips = append(ips, b.ip)
	}
	slices.Sort(ips)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.backendIPs = ips
	return ips
}

func ingressIPs(svc *v1.Service) []string {
	var out []string
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			out = append(out, in.IP)
		}
	}
	return out
}

func floatingIPOf(svc *v1.Service) bool { return !annotationTrue(annotationDisableFloatingIP, svc) }

// securityEdit is a Service's whole change to the security group: rules
// of its names before go, its destinations now (dsts) and before (what
// the last sync gave it, its status, extra) are cleaned as described
// above and then added to the rules acc wants (none when acc is nil: the
// Service is going).
func (l *loadBalancers) securityEdit(svc *v1.Service, names []lbNames, dsts []string, acc *access, extra []string) (*nsgEdit, error) {
	key := serviceKey(svc)
	l.mu.Lock()
	prev := l.dests[key]
	others := make(map[string]svcDests, len(l.dests))
	for k, d := range l.dests {
		if k != key {
			others[k] = d
		}
	}
	backends, backendsKnown := slices.Clone(l.backendIPs), l.backendIPs != nil
	l.mu.Unlock()

	e := &nsgEdit{retain: map[armnetwork.SecurityRuleProtocol][]int32{}, tags: l.tags}
	for _, n := range names {
		e.bases = append(e.bases, n.base)
	}
	e.clean = slices.Concat(dsts, prev.dsts, ingressIPs(svc), extra)
	slices.Sort(e.clean)
	e.clean = slices.Compact(e.clean)
	shares := func(ds []string) bool {
		return slices.ContainsFunc(ds, func(d string) bool { return slices.Contains(e.clean, d) })
	}
	retain := func(ports map[armnetwork.SecurityRuleProtocol][]int32) {
		for proto, ps := range ports {
			e.retain[proto] = append(e.retain[proto], ps...)
		}
	}
	for _, o := range others {
		if shares(o.dsts) {
			retain(o.ports)
		}
	}
	var svcs []*v1.Service
	if l.services != nil {
		var err error
		if svcs, err = l.services(); err != nil {
			return nil, fmt.Errorf("list Services: %w", err)
		}
	}
	keep := map[string]bool{}
	for _, d := range slices.Concat(dsts, backends) {
		keep[d] = true
	}
	for _, o := range others {
		for _, d := range o.dsts {
			keep[d] = true
		}
	}
	for _, s := range svcs {
		k := serviceKey(s)
		if k == key || s.Spec.Type != v1.ServiceTypeLoadBalancer {
			continue
		}
		for _, d := range ingressIPs(s) {
			keep[d] = true
		}
		if _, ok := others[k]; ok {
			continue
		}
		// Rules without floating IP are on the nodes' addresses, which
		// every such Service shares (and which may not be known yet):
		// their NodePorts are always kept. So are those of an internal
		// Service's IPv6 half, which has no floating IP.
		if fip := floatingIPOf(s); !fip || shares(ingressIPs(s)) {
			retain(rulePorts(s.Spec.Ports, fip))
		}
		if internal, _, _ := annotationInternal.Bool(s); internal && slices.Contains(serviceFamilies(s), true) {
			retain(rulePorts(s.Spec.Ports, false))
		}
	}
	// Dropping destinations nobody has needs the whole picture: every
	// Service (the informer) and the nodes' addresses.
	if l.services != nil && backendsKnown {
		e.keep = func(d string) bool { return keep[d] }
	}
	if acc != nil {
		e.add = acc.rules(dsts)
	}
	return e, nil
}

// writeSecurity submits an edit; with no security group configured there
// is nothing to do.
func (l *loadBalancers) writeSecurity(ctx context.Context, e *nsgEdit) error {
	if l.nsg == nil {
		return nil
	}
	g, err := l.nsg.submit(ctx, false, e.apply)
	if err != nil {
		return err
	}
	if g == nil {
		return fmt.Errorf("network security group %s not found in resource group %s (securityGroupName)", l.cfg.SecurityGroupName, l.cfg.SecurityGroupResourceGroup)
	}
	return nil
}

// setInformers gives the security rules the Service informer's cache (the
// service controller's own informer: no extra watch).
func (l *loadBalancers) setInformers(f informers.SharedInformerFactory) {
	inf := f.Core().V1().Services()
	lister, synced := inf.Lister(), inf.Informer().HasSynced
	l.services = func() ([]*v1.Service, error) {
		if !synced() {
			return nil, errors.New("the Service informer has not synced yet")
		}
		return lister.List(labels.Everything())
	}
}
