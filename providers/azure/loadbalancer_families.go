package azure

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
)

// Azure keeps no IPv6 frontend on a load balancer without an IPv4 one:
// ARM answers 400 AtleastOneIpV4RequiredForIpV6LbFrontendIpConfiguration
// to any write that would leave one so (kubernetes-sigs/cloud-provider-azure
// #1831, open: upstream meets the raw 400 and retries it for ever). Every
// Service's frontends share the cluster's two load balancers, so the rule
// binds Services to each other:
//
//   - An IPv6-only Service is served only beside an IPv4 frontend that no
//     Service's deletion takes away (lastingIPv4): one not named after a
//     Service and not held by a Service's rules alone, such as the IPv4
//     outbound frontend AKS and Cluster API Provider Azure give the
//     cluster's public load balancer. Another Service's IPv4 frontend is
//     not enough: it goes when that Service goes, and the load balancer
//     could then not be written at all, for any Service (the deletion
//     would fail for ever, its finalizer held). So the outcome does not
//     depend on which Service came first, and a deletion never has to
//     wait for another Service. A refused Service gets its Warning before
//     anything is made for it (EnsureLoadBalancer checks the load
//     balancer first, then the write checks again on the state after the
//     other Services' writes); dual-stack Services bring their own IPv4
//     frontend and are always served.
//   - A load balancer made otherwise (by upstream, or by this manager
//     before this rule) can hold IPv6-only frontends whose only IPv4
//     company is another Service's frontend. That Service's deletion then
//     removes its rules, probes and IPv6 frontend but keeps its IPv4
//     frontend (removeServiceHolding), and fails with
//     errNeedsIPv4Frontend naming the Services that keep it; it completes
//     once they are deleted or dual-stack, or the load balancer has an
//     IPv4 frontend of its own. Removing the IPv6-only Services' parts
//     instead would break Services the user did not touch. A Service's
//     move between the public and internal load balancer, and an orphan's
//     removal, are refused outright in that state (nothing is written).
//   - Whatever slips past (a frontend whose version only its public IP
//     tells), ARM's own 400 comes back as errNeedsIPv4Frontend too
//     (lbOps' put).

// errNeedsIPv4Frontend is Azure's rule above.
var errNeedsIPv4Frontend = errors.New("a load balancer with IPv6 frontends needs an IPv4 frontend too: Azure refuses it otherwise (" + codeIPv4Required + ")")

// codeIPv4Required is ARM's error code for the rule.
const codeIPv4Required = "AtleastOneIpV4RequiredForIpV6LbFrontendIpConfiguration"

// isIPv4Required is ARM's refusal of a write that breaks the rule,
// matched by its code.
func isIPv4Required(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && strings.EqualFold(re.ErrorCode, codeIPv4Required)
}

// errIPv6OnlyAlone is the refusal of an IPv6-only Service on a load
// balancer with no lasting IPv4 frontend.
func errIPv6OnlyAlone(lbName string) error {
	return fmt.Errorf("an IPv6-only Service needs an IPv4 frontend on load balancer %s that is no Service's, and it has none "+
		"(%w; another Service's IPv4 frontend goes when that Service goes). Make this Service dual-stack (spec.ipFamilyPolicy PreferDualStack), "+
		"or give load balancer %s an IPv4 frontend that is no Service's, such as the outbound frontend AKS and Cluster API Provider Azure make",
		lbName, errNeedsIPv4Frontend, lbName)
}

// feFamilies are the IP versions of a load balancer's frontends that can
// be told, by lower-cased name: true for IPv6. A frontend missing is of
// a version not known.
type feFamilies map[string]bool

// frontendFamilies tells the versions of p's frontends: a private one's
// from its address version; a public one's from the manager's backend
// pool its rules send to (ARM keeps a rule's frontend and pool members
// of one version), from the "-IPv6" of a dual-stack Service's IPv6 half,
// or from pips, versions read from the public IPs (lower-cased ID ->
// IPv6).
func (l *loadBalancers) frontendFamilies(p *armnetwork.LoadBalancerPropertiesFormat, pips map[string]bool) feFamilies {
	out := feFamilies{}
	if p == nil {
		return out
	}
	pool4, pool6 := strings.ToLower(l.poolName(false)), strings.ToLower(l.poolName(true))
	for _, r := range p.LoadBalancingRules {
		if r == nil || r.Properties == nil {
			continue
		}
		fe := strings.ToLower(lastSegment(deref(subID(r.Properties.FrontendIPConfiguration))))
		pools := []string{deref(subID(r.Properties.BackendAddressPool))}
		for _, bp := range r.Properties.BackendAddressPools {
			pools = append(pools, deref(subID(bp)))
		}
		for _, id := range pools {
			switch strings.ToLower(lastSegment(id)) {
			case pool4:
				out[fe] = false
			case pool6:
				out[fe] = true
			}
		}
	}
	for _, fe := range p.FrontendIPConfigurations {
		if fe == nil || fe.Properties == nil {
			continue
		}
		name := strings.ToLower(deref(fe.Name))
		fp := fe.Properties
		switch {
		case fp.PublicIPAddress == nil && fp.PublicIPPrefix == nil:
			out[name] = privateVersion(fp) == armnetwork.IPVersionIPv6
		case fp.PublicIPAddress != nil:
			if v6, ok := pips[strings.ToLower(deref(fp.PublicIPAddress.ID))]; ok {
				out[name] = v6
			} else if _, ok := partBase(name); ok && hasSuffixFold(name, ipv6Suffix) {
				out[name] = true
			}
		}
	}
	return out
}

// frontendUse says which frontends Services' load-balancing rules use
// (rules named after a Service), and which other rules use: outbound
// rules, inbound NAT rules and pools, another controller's
// load-balancing rules. Names lower-cased.
func frontendUse(p *armnetwork.LoadBalancerPropertiesFormat) (services, others map[string]bool) {
	services, others = map[string]bool{}, map[string]bool{}
	note := func(m map[string]bool, r *armnetwork.SubResource) {
		if id := deref(subID(r)); id != "" {
			m[strings.ToLower(lastSegment(id))] = true
		}
	}
	for _, r := range p.LoadBalancingRules {
		if r == nil || r.Properties == nil {
			continue
		}
		if _, ok := partBase(deref(r.Name)); ok {
			note(services, r.Properties.FrontendIPConfiguration)
		} else {
			note(others, r.Properties.FrontendIPConfiguration)
		}
	}
	for _, r := range p.InboundNatRules {
		if r != nil && r.Properties != nil {
			note(others, r.Properties.FrontendIPConfiguration)
		}
	}
	for _, r := range p.InboundNatPools {
		if r != nil && r.Properties != nil {
			note(others, r.Properties.FrontendIPConfiguration)
		}
	}
	for _, r := range p.OutboundRules {
		if r != nil && r.Properties != nil {
			for _, f := range r.Properties.FrontendIPConfigurations {
				note(others, f)
			}
		}
	}
	return services, others
}

// lasting says a frontend stays whatever Services come and go: the
// manager removes a frontend only when it is named after a Service, or a
// Service's rules used it (its address was asked for), and no other rule
// uses it (removeService, ensureService, removeNamedPart).
func lasting(name string, services, others map[string]bool) bool {
	k := strings.ToLower(name)
	if others[k] {
		return true
	}
	_, named := partBase(name)
	return !named && !services[k]
}

// lastingIPv4 says p has an IPv4 frontend that stays whatever Services
// come and go.
func lastingIPv4(p *armnetwork.LoadBalancerPropertiesFormat, fams feFamilies) bool {
	if p == nil {
		return false
	}
	services, others := frontendUse(p)
	return slices.ContainsFunc(p.FrontendIPConfigurations, func(fe *armnetwork.FrontendIPConfiguration) bool {
		if fe == nil {
			return false
		}
		v6, known := fams[strings.ToLower(deref(fe.Name))]
		return known && !v6 && lasting(deref(fe.Name), services, others)
	})
}

// ipv6Alone are p's IPv6 frontends (by the versions fams tells, names as
// they are) when p has no frontend that is, or may be, IPv4: the state
// ARM refuses. Empty otherwise.
func ipv6Alone(p *armnetwork.LoadBalancerPropertiesFormat, fams feFamilies) []string {
	if p == nil {
		return nil
	}
	var v6 []string
	for _, fe := range p.FrontendIPConfigurations {
		if fe == nil {
			continue
		}
		is6, known := fams[strings.ToLower(deref(fe.Name))]
		if !known || !is6 {
			return nil
		}
		v6 = append(v6, deref(fe.Name))
	}
	return v6
}

// withLastingIPv4 is what an IPv6-only Service's sync needs before it
// makes anything: the load balancer, as its writer has it, with an IPv4
// frontend that stays whatever Services come and go. It returns the
// public IP versions it read to tell (for the write's own check), or
// errIPv6OnlyAlone. Only the public IPs of frontends that could be
// lasting are read (one GET each, none when the load balancer tells),
// and a kept copy that says no is read again before the refusal.
func (l *loadBalancers) withLastingIPv4(ctx context.Context, w *sharedLB, lbName string) (map[string]bool, error) {
	for _, reread := range []bool{false, true} {
		lb, found, err := w.current(ctx, reread)
		if err != nil {
			return nil, err
		}
		if !found || lb.Properties == nil {
			continue
		}
		if lastingIPv4(lb.Properties, l.frontendFamilies(lb.Properties, nil)) {
			return nil, nil
		}
		services, others := frontendUse(lb.Properties)
		pips := map[string]bool{}
		for _, fe := range lb.Properties.FrontendIPConfigurations {
			if fe == nil || fe.Properties == nil || fe.Properties.PublicIPAddress == nil || !lasting(deref(fe.Name), services, others) {
				continue
			}
			id := deref(fe.Properties.PublicIPAddress.ID)
			rg, name, ok := resourceGroupAndName(id)
			if !ok {
				continue
			}
			resp, err := l.api.publicIPs.Get(ctx, rg, name, nil)
			if isNotFound(err) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("get public IP %s/%s of frontend %s on load balancer %s: %w", rg, name, deref(fe.Name), lbName, err)
			}
			if resp.Properties != nil {
				pips[strings.ToLower(id)] = deref(resp.Properties.PublicIPAddressVersion) == armnetwork.IPVersionIPv6
			}
		}
		if lastingIPv4(lb.Properties, l.frontendFamilies(lb.Properties, pips)) {
			return pips, nil
		}
	}
	return nil, errIPv6OnlyAlone(lbName)
}

// sharedLB is a load balancer's shared writer.
type sharedLB = shared[armnetwork.LoadBalancer]

// ensureIPv6Only is ensureService for a Service with no IPv4 frontend:
// applied to a copy, and kept only if the load balancer then still has
// an IPv4 frontend that stays whatever Services come and go; else lb is
// left as it is and the Service refused.
func (l *loadBalancers) ensureIPv6Only(lb *armnetwork.LoadBalancer, lbName string, wants []*feWant, sp *lbSpec, pips map[string]bool) (bool, error) {
	work := cloneJSON(lb)
	changed := ensureService(work, l.lbID(lbName), wants, sp)
	if !lastingIPv4(work.Properties, l.frontendFamilies(work.Properties, pips)) {
		return false, errIPv6OnlyAlone(lbName)
	}
	*lb = *work
	return changed, nil
}

// keepingIPv4 wraps an edit that removes parts: applied to a copy, it is
// refused, lb untouched, when it would leave IPv6 frontends without an
// IPv4 one.
func (l *loadBalancers) keepingIPv4(lbName, what string, edit func(*armnetwork.LoadBalancer) (bool, error)) func(*armnetwork.LoadBalancer) (bool, error) {
	return func(lb *armnetwork.LoadBalancer) (bool, error) {
		fams := l.frontendFamilies(lb.Properties, nil)
		work := cloneJSON(lb)
		changed, err := edit(work)
		if err != nil || !changed {
			return changed, err
		}
		if v6 := ipv6Alone(work.Properties, fams); len(v6) > 0 {
			return false, fmt.Errorf("%s would leave load balancer %s with the IPv6 frontends %s and no IPv4 one: %w",
				what, lbName, strings.Join(v6, ", "), errNeedsIPv4Frontend)
		}
		*lb = *work
		return true, nil
	}
}

// heldFrontend is the IPv4 frontend a deleting Service leaves on a load
// balancer for IPv6 frontends that have no other (removeServiceHolding).
type heldFrontend struct {
	lb, frontend, pip string
	// by are the IPv6 frontends that hold it.
	by []string
}

// removeServiceHolding is removeService for a Service's deletion, except
// that the Service's IPv4 frontend stays, without its rules and probes,
// when it is the last IPv4 frontend beside IPv6 ones (see the top of this
// file). *held says what stayed; every application resets it (the
// writer applies the edit again after a 412).
func (l *loadBalancers) removeServiceHolding(lbName string, held **heldFrontend, names ...lbNames) func(*armnetwork.LoadBalancer) (bool, error) {
	return func(lb *armnetwork.LoadBalancer) (bool, error) {
		*held = nil
		if lb.Properties == nil {
			return false, nil
		}
		fams := l.frontendFamilies(lb.Properties, nil)
		before := slices.Clone(lb.Properties.FrontendIPConfigurations)
		changed, err := removeService(names...)(lb)
		if err != nil || !changed {
			return changed, err
		}
		p := lb.Properties
		v6 := ipv6Alone(p, fams)
		if len(v6) == 0 {
			return true, nil
		}
		for _, fe := range before {
			if fe == nil || findFrontend(lb, deref(fe.Name)) != nil {
				continue
			}
			if is6, known := fams[strings.ToLower(deref(fe.Name))]; known && !is6 {
				p.FrontendIPConfigurations = append(p.FrontendIPConfigurations, fe)
				*held = &heldFrontend{lb: lbName, frontend: deref(fe.Name), pip: feIPID(fe), by: v6}
				return true, nil
			}
		}
		// The version of the frontend that went is not known here: ARM
		// decides (and its refusal names the rule, lbOps' put).
		return true, nil
	}
}

// heldError is the deletion's error when a frontend stayed: which, why,
// and the Services that keep it.
func (l *loadBalancers) heldError(h *heldFrontend) error {
	by := slices.Clone(h.by)
	if idx, err := l.serviceIndex(); err == nil {
		for i, fe := range by {
			if base, ok := partBase(fe); ok {
				if s := idx.byBase[strings.ToLower(base)]; s != nil {
					by[i] = fmt.Sprintf("%s (Service %s)", fe, serviceKey(s))
				}
			}
		}
	}
	return fmt.Errorf("the Service's IPv4 frontend %s stays on load balancer %s, without rules, while the IPv6-only frontends %s have no other IPv4 one: %w. "+
		"Delete those Services or make them dual-stack, or give load balancer %s an IPv4 frontend of its own; the deletion then completes",
		h.frontend, h.lb, strings.Join(by, ", "), errNeedsIPv4Frontend, h.lb)
}
