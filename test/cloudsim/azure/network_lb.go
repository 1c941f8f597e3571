package azure

import (
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
)

// Load balancers: frontends (public through a public IP, internal
// through a subnet with a private address), backend address pools
// (nested resources: LoadBalancerBackendAddressPools_* serve them too;
// IP-based addresses or NIC IP configurations pointing at them), rules,
// probes, inbound NAT and outbound rules. The provider fills every
// sub-resource's id, type, etag and provisioningState and the
// back-references between them.

const lbSubType = "Microsoft.Network/loadBalancers/"

// canon is v matched case-insensitively against allowed, in its
// canonical spelling; def when v is unset (ok false if def is "").
func canon[T ~string](v *T, allowed []T, def T) (T, bool) {
	if v == nil || *v == "" {
		return def, def != ""
	}
	for _, a := range allowed {
		if strings.EqualFold(string(a), string(*v)) {
			return a, true
		}
	}
	return *v, false
}

func errBadValue(path string, v any) *armError {
	return errInvalidFormat(detail("InvalidJsonValue", "Value %v is not valid. Path %s.", v, path))
}

func errMissing(path string) *armError {
	return errInvalidFormat(detail("MissingJsonProperty", "Value for a required property is missing. Path %s.", path))
}

func errMissingRef(path string) *armError {
	return errInvalidFormat(detail("MissingJsonReferenceId", "Value for reference id is missing. Path %s.", path))
}

func refOf(s *armnetwork.SubResource) string {
	if s == nil {
		return ""
	}
	return deref(s.ID)
}

func subRefs(ids []string) []*armnetwork.SubResource {
	if len(ids) == 0 {
		return nil
	}
	out := make([]*armnetwork.SubResource, 0, len(ids))
	for _, id := range ids {
		out = append(out, &armnetwork.SubResource{ID: to.Ptr(id)})
	}
	return out
}

// idSet maps lower-cased IDs to their canonical spelling.
type idSet map[string]string

func (s idSet) resolve(ref string) (string, bool) {
	id, ok := s[strings.ToLower(ref)]
	return id, ok
}

func putLoadBalancer(e *Emulator, c *putCall) *armError {
	if op := e.busyFamily(c.ID, c.Old); op != nil {
		return errAnotherOperation(op, c.Host)
	}
	lb, aerr := decodeBody[armnetwork.LoadBalancer](c.Body)
	if aerr != nil {
		return aerr
	}
	lbID := c.ID
	if lb.Properties == nil {
		lb.Properties = &armnetwork.LoadBalancerPropertiesFormat{}
	}
	p := lb.Properties
	if lb.SKU == nil {
		lb.SKU = &armnetwork.LoadBalancerSKU{}
	}
	sku, ok := canon(lb.SKU.Name, armnetwork.PossibleLoadBalancerSKUNameValues(), armnetwork.LoadBalancerSKUNameBasic)
	if !ok {
		return errBadValue("sku.name", sku)
	}
	lb.SKU.Name = &sku
	if lb.SKU.Tier == nil {
		lb.SKU.Tier = to.Ptr(armnetwork.LoadBalancerSKUTierRegional)
	}

	// Names, IDs and types of the sub-resources.
	var problems []*armError
	collections := map[string]*nameSet{}
	name := func(coll string, i int, n, id *string) (string, string) {
		nm := childName(n, id)
		if pr := collections[coll].add(nm, fmt.Sprintf("properties.%s[%d]", coll, i)); pr != nil {
			problems = append(problems, pr)
		}
		return nm, lbID + "/" + coll + "/" + nm
	}
	for _, coll := range []string{"frontendIPConfigurations", "backendAddressPools", "loadBalancingRules", "probes", "inboundNatRules", "outboundRules", "inboundNatPools"} {
		collections[coll] = newNames(lbID)
	}
	feIDs, poolIDs, probeIDs := idSet{}, idSet{}, idSet{}
	for i, fe := range p.FrontendIPConfigurations {
		n, id := name("frontendIPConfigurations", i, fe.Name, fe.ID)
		fe.Name, fe.ID, fe.Type, fe.Etag = to.Ptr(n), to.Ptr(id), to.Ptr(lbSubType+"frontendIPConfigurations"), nil
		feIDs[strings.ToLower(id)] = id
	}
	for i, pool := range p.BackendAddressPools {
		n, id := name("backendAddressPools", i, pool.Name, pool.ID)
		pool.Name, pool.ID, pool.Type, pool.Etag = to.Ptr(n), to.Ptr(id), to.Ptr(lbSubType+"backendAddressPools"), nil
		poolIDs[strings.ToLower(id)] = id
	}
	for i, pr := range p.Probes {
		n, id := name("probes", i, pr.Name, pr.ID)
		pr.Name, pr.ID, pr.Type, pr.Etag = to.Ptr(n), to.Ptr(id), to.Ptr(lbSubType+"probes"), nil
		probeIDs[strings.ToLower(id)] = id
	}
	for i, r := range p.LoadBalancingRules {
		n, id := name("loadBalancingRules", i, r.Name, r.ID)
		r.Name, r.ID, r.Type, r.Etag = to.Ptr(n), to.Ptr(id), to.Ptr(lbSubType+"loadBalancingRules"), nil
	}
	for i, r := range p.InboundNatRules {
		n, id := name("inboundNatRules", i, r.Name, r.ID)
		r.Name, r.ID, r.Type, r.Etag = to.Ptr(n), to.Ptr(id), to.Ptr(lbSubType+"inboundNatRules"), nil
	}
	for i, r := range p.OutboundRules {
		n, id := name("outboundRules", i, r.Name, r.ID)
		r.Name, r.ID, r.Type, r.Etag = to.Ptr(n), to.Ptr(id), to.Ptr(lbSubType+"outboundRules"), nil
	}
	for i, r := range p.InboundNatPools {
		n, id := name("inboundNatPools", i, r.Name, r.ID)
		r.Name, r.ID, r.Type, r.Etag = to.Ptr(n), to.Ptr(id), to.Ptr(lbSubType+"inboundNatPools"), nil
	}
	if len(problems) > 0 {
		return errInvalidFormat(problems...)
	}
	// A pool the body leaves out is removed, which the provider refuses
	// while something still uses it.
	if c.Old != nil {
		kept := map[string]bool{}
		for _, pool := range p.BackendAddressPools {
			kept[strings.ToLower(*pool.Name)] = true
		}
		for _, o := range e.dropped(lbID, e.netKind(poolTypePath), kept) {
			if aerr := e.checkPoolUnused(o); aerr != nil {
				return aerr
			}
		}
	}

	if aerr := e.completeFrontends(c, lb); aerr != nil {
		return aerr
	}
	feVersions, aerr := e.frontendVersions(lbID, p.FrontendIPConfigurations)
	if aerr != nil {
		return aerr
	}
	poolVersions := map[string][]poolMember{}
	for _, pool := range p.BackendAddressPools {
		members, aerr := e.completePool(lbID, pool)
		if aerr != nil {
			return aerr
		}
		poolVersions[strings.ToLower(*pool.ID)] = members
	}
	for i, pr := range p.Probes {
		if aerr := completeProbe(i, pr); aerr != nil {
			return aerr
		}
	}
	feRules, feNat, feOut, probeRules := map[string][]string{}, map[string][]string{}, map[string][]string{}, map[string][]string{}
	for i, r := range p.LoadBalancingRules {
		if aerr := completeRule(lbID, i, r, feIDs, poolIDs, probeIDs); aerr != nil {
			return aerr
		}
		if aerr := checkRuleVersions(r, feVersions, poolVersions); aerr != nil {
			return aerr
		}
		rp := r.Properties
		feRules[strings.ToLower(refOf(rp.FrontendIPConfiguration))] = append(feRules[strings.ToLower(refOf(rp.FrontendIPConfiguration))], *r.ID)
		if pr := refOf(rp.Probe); pr != "" {
			probeRules[strings.ToLower(pr)] = append(probeRules[strings.ToLower(pr)], *r.ID)
		}
		for _, q := range p.LoadBalancingRules[:i] {
			if aerr := ruleConflict(q, r); aerr != nil {
				return aerr
			}
		}
	}
	for i, r := range p.InboundNatRules {
		if r.Properties == nil {
			r.Properties = &armnetwork.InboundNatRulePropertiesFormat{}
		}
		np := r.Properties
		np.BackendIPConfiguration = nil
		fe := refOf(np.FrontendIPConfiguration)
		if fe == "" {
			return errMissingRef(fmt.Sprintf("properties.inboundNatRules[%d].properties.frontendIPConfiguration", i))
		}
		feID, ok := feIDs.resolve(fe)
		if !ok {
			return errInvalidReference(fe, lbID)
		}
		np.FrontendIPConfiguration = &armnetwork.SubResource{ID: to.Ptr(feID)}
		if pool := refOf(np.BackendAddressPool); pool != "" {
			poolID, ok := poolIDs.resolve(pool)
			if !ok {
				return errInvalidReference(pool, lbID)
			}
			np.BackendAddressPool = &armnetwork.SubResource{ID: to.Ptr(poolID)}
		}
		proto, ok := canon(np.Protocol, armnetwork.PossibleTransportProtocolValues(), "")
		if !ok {
			return errBadValue(fmt.Sprintf("properties.inboundNatRules[%d].properties.protocol", i), deref(np.Protocol))
		}
		np.Protocol = &proto
		feNat[strings.ToLower(feID)] = append(feNat[strings.ToLower(feID)], *r.ID)
	}
	for i, r := range p.OutboundRules {
		if r.Properties == nil {
			r.Properties = &armnetwork.OutboundRulePropertiesFormat{}
		}
		op := r.Properties
		for _, fe := range op.FrontendIPConfigurations {
			feID, ok := feIDs.resolve(refOf(fe))
			if !ok {
				return errInvalidReference(refOf(fe), lbID)
			}
			fe.ID = to.Ptr(feID)
			feOut[strings.ToLower(feID)] = append(feOut[strings.ToLower(feID)], *r.ID)
		}
		pool := refOf(op.BackendAddressPool)
		if pool == "" {
			return errMissingRef(fmt.Sprintf("properties.outboundRules[%d].properties.backendAddressPool", i))
		}
		poolID, ok := poolIDs.resolve(pool)
		if !ok {
			return errInvalidReference(pool, lbID)
		}
		op.BackendAddressPool = &armnetwork.SubResource{ID: to.Ptr(poolID)}
		proto, ok := canon(op.Protocol, armnetwork.PossibleLoadBalancerOutboundRuleProtocolValues(), armnetwork.LoadBalancerOutboundRuleProtocolAll)
		if !ok {
			return errBadValue(fmt.Sprintf("properties.outboundRules[%d].properties.protocol", i), deref(op.Protocol))
		}
		op.Protocol = &proto
		if op.IdleTimeoutInMinutes == nil {
			op.IdleTimeoutInMinutes = to.Ptr[int32](4)
		}
	}
	// Back-references within the load balancer.
	for _, fe := range p.FrontendIPConfigurations {
		key := strings.ToLower(*fe.ID)
		fe.Properties.LoadBalancingRules = subRefs(feRules[key])
		fe.Properties.InboundNatRules = subRefs(feNat[key])
		fe.Properties.OutboundRules = subRefs(feOut[key])
	}
	for _, pr := range p.Probes {
		pr.Properties.LoadBalancingRules = subRefs(probeRules[strings.ToLower(*pr.ID)])
	}

	var oldPIPs []string
	if c.Old != nil {
		oldPIPs = frontendPublicIPs(c.Old.body)
		if g, _ := c.Old.props()["resourceGuid"].(string); g != "" {
			p.ResourceGUID = to.Ptr(g)
		}
	}
	if deref(p.ResourceGUID) == "" {
		p.ResourceGUID = to.Ptr(e.newGUID())
	}
	pools := make([]map[string]any, 0, len(p.BackendAddressPools))
	for _, pool := range p.BackendAddressPools {
		pools = append(pools, encodeJSON(pool))
	}
	p.BackendAddressPools = nil
	replaceBody(c.Body, lb)
	rg, nm := c.names()
	e.setChildren(rg, nm, lbID, e.netKind("loadBalancers/backendAddressPools"), pools)
	e.touchChanged(oldPIPs, frontendPublicIPs(c.Body))
	return nil
}

// completeFrontends checks the frontends' public IPs and subnets and
// settles their private addresses.
func (e *Emulator) completeFrontends(c *putCall, lb armnetwork.LoadBalancer) *armError {
	lbID := c.ID
	oldFE := map[string]map[string]any{}
	if c.Old != nil {
		items, _ := c.Old.props()["frontendIPConfigurations"].([]any)
		for _, item := range items {
			m, _ := item.(map[string]any)
			id, _ := m["id"].(string)
			props, _ := m["properties"].(map[string]any)
			oldFE[strings.ToLower(id)] = props
		}
	}
	pipSeen := map[string]bool{}
	var reqs []*ipRequest
	owners := map[*ipRequest]*armnetwork.FrontendIPConfigurationPropertiesFormat{}
	for _, fe := range lb.Properties.FrontendIPConfigurations {
		if fe.Properties == nil {
			fe.Properties = &armnetwork.FrontendIPConfigurationPropertiesFormat{}
		}
		fp := fe.Properties
		fp.LoadBalancingRules, fp.InboundNatRules, fp.OutboundRules, fp.InboundNatPools = nil, nil, nil, nil
		var pipID, subID string
		if fp.PublicIPAddress != nil {
			pipID = deref(fp.PublicIPAddress.ID)
		}
		if fp.Subnet != nil {
			subID = deref(fp.Subnet.ID)
		}
		prefixID := refOf(fp.PublicIPPrefix)
		switch {
		case (pipID != "" || prefixID != "") && subID != "":
			return errBadRequest("FrontendIPConfigHasBothSubnetAndPublicIP", "Frontend IP Configuration %s must not reference both a Subnet and a Public IP Address.", *fe.ID)
		case pipID == "" && prefixID == "" && subID == "":
			return errBadRequest("FrontendIPConfigHasNoSubnetOrPublicIP", "Frontend IP Configuration %s must reference either a Subnet or a Public IP Address.", *fe.ID)
		case prefixID != "":
			// Public IP prefixes are not emulated.
			return errInvalidReference(prefixID, lbID)
		}
		if pipID != "" {
			if pipSeen[strings.ToLower(pipID)] {
				return errBadRequest("PublicIPReferencedByMultipleIPConfigs", "Public ip address %s is referenced by multiple ipconfigs in resource %s.", pipID, lbID)
			}
			pipSeen[strings.ToLower(pipID)] = true
			pip, aerr := e.usePublicIP(pipID, *fe.ID, lbID, c.Old)
			if aerr != nil {
				return aerr
			}
			pipSKU := "Basic"
			if s, _ := pip.body["sku"].(map[string]any); s != nil {
				pipSKU, _ = s["name"].(string)
			}
			if !strings.EqualFold(pipSKU, string(*lb.SKU.Name)) {
				return errBadRequest("PublicIPAndLBSkuDoNotMatch", "%s sku load balancer %s cannot reference %s sku publicIP %s.", *lb.SKU.Name, lbID, pipSKU, pip.id)
			}
			fp.PublicIPAddress = &armnetwork.PublicIPAddress{ID: to.Ptr(pip.id)}
			fp.PrivateIPAddress, fp.PrivateIPAddressVersion, fp.Subnet = nil, nil, nil
			fp.PrivateIPAllocationMethod = to.Ptr(armnetwork.IPAllocationMethodDynamic)
			continue
		}
		sub := e.lookupKind(subID, "virtualNetworks/subnets")
		if sub == nil {
			return errInvalidReference(subID, lbID)
		}
		if aerr := e.checkProvisioned(sub, lbID); aerr != nil {
			return aerr
		}
		method, ok := canon(fp.PrivateIPAllocationMethod, armnetwork.PossibleIPAllocationMethodValues(), armnetwork.IPAllocationMethodDynamic)
		if !ok {
			return errBadValue("properties.frontendIPConfigurations.properties.privateIPAllocationMethod", method)
		}
		version, ok := canon(fp.PrivateIPAddressVersion, armnetwork.PossibleIPVersionValues(), armnetwork.IPVersionIPv4)
		if !ok {
			return errBadValue("properties.frontendIPConfigurations.properties.privateIPAddressVersion", version)
		}
		v6 := version == armnetwork.IPVersionIPv6
		if v6 && !hasFamily(sub.body, true) {
			return errNoIPv6Prefix("Frontend IP configuration "+*fe.ID, sub.id)
		}
		fp.PrivateIPAllocationMethod, fp.PrivateIPAddressVersion = &method, &version
		fp.Subnet = &armnetwork.Subnet{ID: to.Ptr(sub.id)}
		r := &ipRequest{ipConfigID: *fe.ID, subnet: sub, static: method == armnetwork.IPAllocationMethodStatic, v6: v6}
		if r.static {
			if r.addr = deref(fp.PrivateIPAddress); r.addr == "" {
				return errBadRequest("PrivateIPAddressNotSpecified", "IP configuration %s has private IP allocation method Static but specifies no private IP address.", *fe.ID)
			}
		} else if old := oldFE[strings.ToLower(*fe.ID)]; old != nil && sameID(refID(old, "subnet"), sub.id) {
			r.addr, _ = old["privateIPAddress"].(string)
		}
		reqs = append(reqs, r)
		owners[r] = fp
	}
	if aerr := e.assignPrivateIPs(c.Old, reqs); aerr != nil {
		return aerr
	}
	for r, fp := range owners {
		fp.PrivateIPAddress = to.Ptr(r.result)
	}
	return nil
}

// completePool checks a backend address pool's IP-based addresses and
// clears what the provider computes. It returns the pool's members, one
// of each IP version (IP-based addresses, or the IP configurations in
// it).
func (e *Emulator) completePool(lbID string, pool *armnetwork.BackendAddressPool) ([]poolMember, *armError) {
	if pool.Properties == nil {
		pool.Properties = &armnetwork.BackendAddressPoolPropertiesFormat{}
	}
	pp := pool.Properties
	poolID := *pool.ID
	pp.BackendIPConfigurations, pp.LoadBalancingRules, pp.OutboundRule, pp.OutboundRules, pp.InboundNatRules = nil, nil, nil, nil, nil
	pp.Location = nil
	poolVNet := refOf(pp.VirtualNetwork)
	if poolVNet != "" {
		v := e.lookupKind(poolVNet, "virtualNetworks")
		if v == nil {
			return nil, errInvalidReference(poolVNet, lbID)
		}
		pp.VirtualNetwork.ID = to.Ptr(v.id)
	}
	addrNames := newNames(poolID)
	ips := map[netip.Addr]string{}
	// The IP configuration members a GET lists among the addresses
	// (nicPoolAddress) come back in a PUT of what was read; membership
	// is the IP configurations' to say, so they are dropped here.
	kept := pp.LoadBalancerBackendAddresses[:0]
	for _, a := range pp.LoadBalancerBackendAddresses {
		if a != nil && a.Properties != nil && deref(a.Properties.IPAddress) == "" && refOf(a.Properties.NetworkInterfaceIPConfiguration) != "" {
			continue
		}
		kept = append(kept, a)
	}
	pp.LoadBalancerBackendAddresses = kept
	for i, a := range pp.LoadBalancerBackendAddresses {
		if a == nil {
			continue
		}
		if pr := addrNames.add(deref(a.Name), fmt.Sprintf("properties.loadBalancerBackendAddresses[%d]", i)); pr != nil {
			return nil, errInvalidFormat(pr)
		}
		if a.Properties == nil {
			a.Properties = &armnetwork.LoadBalancerBackendAddressPropertiesFormat{}
		}
		ap := a.Properties
		ap.NetworkInterfaceIPConfiguration, ap.InboundNatRulesPortMapping = nil, nil
		if refOf(ap.LoadBalancerFrontendIPConfiguration) != "" {
			// A regional load balancer's frontend in a cross-region pool.
			continue
		}
		s := deref(ap.IPAddress)
		ip, err := netip.ParseAddr(s)
		if err != nil {
			return nil, errBadRequest("InvalidLoadBalancerBackendAddress",
				"Load balancer backend address %s of backend address pool %s has an invalid IP address '%s'.", *a.Name, poolID, s)
		}
		vnet, subnet := refOf(ap.VirtualNetwork), refOf(ap.Subnet)
		if subnet != "" {
			sub := e.lookupKind(subnet, "virtualNetworks/subnets")
			if sub == nil {
				return nil, errInvalidReference(subnet, lbID)
			}
			ap.Subnet.ID = to.Ptr(sub.id)
		}
		switch {
		case vnet != "":
		case poolVNet != "":
			vnet = poolVNet
		case subnet != "":
			vnet = parentOf(subnet)
		default:
			return nil, errBadRequest("InvalidLoadBalancerBackendAddress",
				"Load balancer backend address %s of backend address pool %s must reference a virtual network or a subnet.", *a.Name, poolID)
		}
		v := e.lookupKind(vnet, "virtualNetworks")
		if v == nil {
			return nil, errInvalidReference(vnet, lbID)
		}
		if ap.VirtualNetwork != nil {
			ap.VirtualNetwork.ID = to.Ptr(v.id)
		}
		if other, dup := ips[ip]; dup {
			return nil, errBadRequest("InvalidLoadBalancerBackendAddress",
				"Load balancer backend addresses %s and %s of backend address pool %s have the same IP address %s.", other, *a.Name, poolID, ip)
		}
		ips[ip] = *a.Name
	}
	members := e.poolMembers(poolID)
	if len(ips) > 0 && len(members) > 0 {
		return nil, errCannotMix(poolID)
	}
	var all []poolMember
	for ip, name := range ips {
		all = append(all, poolMember{name, addrVersion(ip)})
	}
	for _, r := range members {
		all = append(all, poolMember{lastSegment(r.id), versionOf(r.props)})
	}
	slices.SortFunc(all, func(a, b poolMember) int { return strings.Compare(a.name, b.name) })
	return oneOfEach(all), nil
}

// frontendVersions are the IP versions of a load balancer's frontends,
// by lower-cased ID. A load balancer with IPv6 frontends needs an IPv4
// one too: the network provider's code and message are as quoted in
// kubernetes-sigs/cloud-provider-azure#1831.
func (e *Emulator) frontendVersions(lbID string, fes []*armnetwork.FrontendIPConfiguration) (map[string]string, *armError) {
	out := map[string]string{}
	var v4, v6 bool
	for _, fe := range fes {
		v := e.frontendVersion(encodeJSON(fe.Properties))
		out[strings.ToLower(*fe.ID)] = v
		v4, v6 = v4 || v == ipv4, v6 || v == ipv6
	}
	if v6 && !v4 {
		return nil, errBadRequest("AtleastOneIpV4RequiredForIpV6LbFrontendIpConfiguration",
			"At least one IPv4 frontend ipConfiguration is required for an IPv6 frontend ipConfiguration on the load balancer '%s'", lbID)
	}
	return out, nil
}

// checkRuleVersions refuses a load balancing rule whose backend pools
// hold members of another IP version than its frontend.
func checkRuleVersions(r *armnetwork.LoadBalancingRule, feVersions map[string]string, poolVersions map[string][]poolMember) *armError {
	fe := refOf(r.Properties.FrontendIPConfiguration)
	v := feVersions[strings.ToLower(fe)]
	for _, pool := range r.Properties.BackendAddressPools {
		for _, m := range poolVersions[strings.ToLower(refOf(pool))] {
			if m.version != v {
				return errRuleVersion(*r.ID, fe, v, refOf(pool), m.version)
			}
		}
	}
	return nil
}

func completeProbe(i int, pr *armnetwork.Probe) *armError {
	if pr.Properties == nil {
		return errMissing(fmt.Sprintf("properties.probes[%d].properties", i))
	}
	pp := pr.Properties
	pp.LoadBalancingRules = nil
	proto, ok := canon(pp.Protocol, armnetwork.PossibleProbeProtocolValues(), "")
	if !ok {
		return errBadValue(fmt.Sprintf("properties.probes[%d].properties.protocol", i), deref(pp.Protocol))
	}
	pp.Protocol = &proto
	if pp.Port == nil {
		return errMissing(fmt.Sprintf("properties.probes[%d].properties.port", i))
	}
	if n := *pp.Port; n < 1 || n > 65535 {
		return errBadRequest("InvalidProbePort", "Probe %s has port %d. Valid range is 1-65535.", *pr.ID, n)
	}
	switch path := deref(pp.RequestPath); {
	case proto == armnetwork.ProbeProtocolTCP && path != "":
		return errBadRequest("ProbeRequestPathNotAllowedForTcp", "Probe %s uses protocol Tcp and must not specify a request path.", *pr.ID)
	case proto != armnetwork.ProbeProtocolTCP && path == "":
		return errBadRequest("ProbeRequestPathRequired", "Probe %s uses protocol %s and must specify a request path.", *pr.ID, proto)
	case proto == armnetwork.ProbeProtocolTCP:
		pp.RequestPath = nil
	}
	if pp.IntervalInSeconds == nil {
		pp.IntervalInSeconds = to.Ptr[int32](15)
	}
	if n := *pp.IntervalInSeconds; n < 5 {
		return errBadRequest("InvalidProbeInterval", "Probe %s has interval %d seconds. The interval must be at least 5 seconds.", *pr.ID, n)
	}
	if pp.NumberOfProbes == nil {
		pp.NumberOfProbes = to.Ptr[int32](1)
	}
	if pp.ProbeThreshold == nil {
		pp.ProbeThreshold = to.Ptr[int32](1)
	}
	if *pp.NumberOfProbes < 1 || *pp.ProbeThreshold < 1 {
		return errBadRequest("InvalidProbeThreshold", "Probe %s must have numberOfProbes and probeThreshold of at least 1.", *pr.ID)
	}
	return nil
}

func completeRule(lbID string, i int, r *armnetwork.LoadBalancingRule, feIDs, poolIDs, probeIDs idSet) *armError {
	path := fmt.Sprintf("properties.loadBalancingRules[%d].properties", i)
	if r.Properties == nil {
		return errMissing(path)
	}
	rp := r.Properties
	proto, ok := canon(rp.Protocol, armnetwork.PossibleTransportProtocolValues(), "")
	if !ok {
		return errBadValue(path+".protocol", deref(rp.Protocol))
	}
	rp.Protocol = &proto
	fe := refOf(rp.FrontendIPConfiguration)
	if fe == "" {
		return errMissingRef(path + ".frontendIPConfiguration")
	}
	feID, ok := feIDs.resolve(fe)
	if !ok {
		return errInvalidReference(fe, lbID)
	}
	rp.FrontendIPConfiguration = &armnetwork.SubResource{ID: to.Ptr(feID)}
	var pools []string
	seen := map[string]bool{}
	refs := append([]*armnetwork.SubResource{rp.BackendAddressPool}, rp.BackendAddressPools...)
	for _, ref := range refs {
		if refOf(ref) == "" {
			continue
		}
		poolID, ok := poolIDs.resolve(refOf(ref))
		if !ok {
			return errInvalidReference(refOf(ref), lbID)
		}
		if !seen[strings.ToLower(poolID)] {
			seen[strings.ToLower(poolID)] = true
			pools = append(pools, poolID)
		}
	}
	rp.BackendAddressPools = subRefs(pools)
	rp.BackendAddressPool = nil
	if len(pools) == 1 {
		rp.BackendAddressPool = &armnetwork.SubResource{ID: to.Ptr(pools[0])}
	}
	if pr := refOf(rp.Probe); pr != "" {
		probeID, ok := probeIDs.resolve(pr)
		if !ok {
			return errInvalidReference(pr, lbID)
		}
		rp.Probe = &armnetwork.SubResource{ID: to.Ptr(probeID)}
	} else {
		rp.Probe = nil
	}
	if rp.FrontendPort == nil {
		return errMissing(path + ".frontendPort")
	}
	if n := *rp.FrontendPort; n < 0 || n > 65534 {
		return errBadRequest("InvalidLoadBalancingRuleFrontendPort", "Load balancing rule %s has frontend port %d. Valid range is 0-65534.", *r.ID, n)
	}
	if rp.BackendPort == nil {
		rp.BackendPort = to.Ptr(*rp.FrontendPort)
	}
	if n := *rp.BackendPort; n < 0 || n > 65535 {
		return errBadRequest("InvalidLoadBalancingRuleBackendPort", "Load balancing rule %s has backend port %d. Valid range is 0-65535.", *r.ID, n)
	}
	// HA ports: protocol All goes with frontend and backend port 0 ("any
	// port"), and port 0 only with All (Azure's HA ports overview). The
	// codes are descriptive, not verified against ARM.
	if (proto == armnetwork.TransportProtocolAll) != (*rp.FrontendPort == 0 && *rp.BackendPort == 0) {
		if proto == armnetwork.TransportProtocolAll {
			return errBadRequest("LoadBalancingRuleWithProtocolAllMustUsePortZero", "Load balancing rule %s uses protocol All (HA ports) and must have frontend and backend port 0.", *r.ID)
		}
		return errBadRequest("LoadBalancingRulePortZeroRequiresProtocolAll", "Load balancing rule %s has port 0, which only an HA ports rule (protocol All) may use.", *r.ID)
	}
	if rp.IdleTimeoutInMinutes == nil {
		rp.IdleTimeoutInMinutes = to.Ptr[int32](4)
	}
	if n := *rp.IdleTimeoutInMinutes; n < 4 || n > 100 {
		return errBadRequest("LoadBalancingRuleIdleTimeoutOutOfRange", "Load balancing rule %s has idleTimeoutInMinutes %d. It must be between 4 and 100 inclusive.", *r.ID, n)
	}
	dist, ok := canon(rp.LoadDistribution, armnetwork.PossibleLoadDistributionValues(), armnetwork.LoadDistributionDefault)
	if !ok {
		return errBadValue(path+".loadDistribution", dist)
	}
	rp.LoadDistribution = &dist
	for _, b := range []**bool{&rp.EnableFloatingIP, &rp.DisableOutboundSnat, &rp.EnableTCPReset} {
		if *b == nil {
			*b = to.Ptr(false)
		}
	}
	return nil
}

// ruleConflict is the provider's check of two rules of one load
// balancer: not the same frontend, protocol and frontend port; with
// floating IP disabled, not the same protocol and backend port on a
// common pool.
func ruleConflict(a, b *armnetwork.LoadBalancingRule) *armError {
	ap, bp := a.Properties, b.Properties
	sameProto := *ap.Protocol == *bp.Protocol || *ap.Protocol == armnetwork.TransportProtocolAll || *bp.Protocol == armnetwork.TransportProtocolAll
	if sameProto && sameID(refOf(ap.FrontendIPConfiguration), refOf(bp.FrontendIPConfiguration)) && *ap.FrontendPort == *bp.FrontendPort {
		return errBadRequest("RulesUseSameFrontendIPConfigurationProtocolAndPort",
			"Load balancing rules %s and %s use the same frontend IP configuration %s, protocol %s and frontend port %d.",
			*a.ID, *b.ID, refOf(ap.FrontendIPConfiguration), *bp.Protocol, *bp.FrontendPort)
	}
	if sameProto && !*ap.EnableFloatingIP && !*bp.EnableFloatingIP && *ap.BackendPort == *bp.BackendPort {
		for _, x := range ap.BackendAddressPools {
			for _, y := range bp.BackendAddressPools {
				if sameID(refOf(x), refOf(y)) {
					return errBadRequest("RulesUseSameBackendPortProtocolAndPool",
						"Load balancing rules %s and %s with floating IP disabled use the same protocol %s and backend port %d, and must not be used with the same backend address pool %s.",
						*a.ID, *b.ID, *bp.Protocol, *bp.BackendPort, refOf(x))
				}
			}
		}
	}
	return nil
}

// frontendPublicIPs lists the public IPs a load balancer body's
// frontends use.
func frontendPublicIPs(body map[string]any) []string {
	var out []string
	items, _ := propsOf(body)["frontendIPConfigurations"].([]any)
	for _, item := range items {
		m, _ := item.(map[string]any)
		props, _ := m["properties"].(map[string]any)
		if id := refID(props, "publicIPAddress"); id != "" {
			out = append(out, id)
		}
	}
	return out
}

// touchChanged gives new ETags to the resources that are in one list and
// not the other (their back-references changed).
func (e *Emulator) touchChanged(before, after []string) {
	in := func(list []string, id string) bool {
		for _, x := range list {
			if sameID(x, id) {
				return true
			}
		}
		return false
	}
	for _, id := range before {
		if !in(after, id) {
			e.touch(id)
		}
	}
	for _, id := range after {
		if !in(before, id) {
			e.touch(id)
		}
	}
}

// delLoadBalancer refuses to delete a load balancer while another
// operation is in progress on it or a scale set still uses one of its
// pools; stand-alone NICs in its pools do not stop it (network_lb_pool.go
// scaleSetsUsingLB has the evidence).
func delLoadBalancer(e *Emulator, o *object) *armError {
	if aerr := delFamily(e, o); aerr != nil {
		return aerr
	}
	return e.scaleSetsUsingLB(o)
}

// removedLoadBalancer: its public IPs are no longer in use, and the NICs
// that were in its pools no longer name them.
func removedLoadBalancer(e *Emulator, o *object) {
	e.touchChanged(frontendPublicIPs(o.body), nil)
	e.dropPoolReferences(o.id)
}

func viewLoadBalancer(e *Emulator, o *object, _ url.Values) (map[string]any, *armError) {
	out := copyBody(o.body)
	p := propsOf(out)
	state := e.stateOf(o)
	p["provisioningState"] = state
	for _, coll := range []string{"frontendIPConfigurations", "loadBalancingRules", "probes", "inboundNatRules", "outboundRules", "inboundNatPools"} {
		items, _ := p[coll].([]any)
		for _, item := range items {
			if m, ok := item.(map[string]any); ok {
				m["etag"] = o.body["etag"]
				propsOf(m)["provisioningState"] = state
			}
		}
	}
	pools, aerr := e.renderChildren(o, e.netKind("loadBalancers/backendAddressPools"))
	if aerr != nil {
		return nil, aerr
	}
	p["backendAddressPools"] = pools
	return out, nil
}

// viewBackendPool shows a pool with the rules that use it and the NIC IP
// configurations in it.
func viewBackendPool(e *Emulator, o *object, _ url.Values) (map[string]any, *armError) {
	out := copyBody(o.body)
	pp := propsOf(out)
	pp["provisioningState"] = e.stateOf(o)
	if lb := e.lookup(parentOf(o.id)); lb != nil {
		uses := func(coll string, refs func(props map[string]any) []string) []string {
			var ids []string
			items, _ := lb.props()[coll].([]any)
			for _, item := range items {
				m, _ := item.(map[string]any)
				props, _ := m["properties"].(map[string]any)
				for _, ref := range refs(props) {
					if sameID(ref, o.id) {
						id, _ := m["id"].(string)
						ids = append(ids, id)
						break
					}
				}
			}
			return ids
		}
		one := func(props map[string]any) []string { return []string{refID(props, "backendAddressPool")} }
		many := func(props map[string]any) []string {
			refs := one(props)
			list, _ := props["backendAddressPools"].([]any)
			for _, r := range list {
				m, _ := r.(map[string]any)
				s, _ := m["id"].(string)
				refs = append(refs, s)
			}
			return refs
		}
		if ids := uses("loadBalancingRules", many); len(ids) > 0 {
			pp["loadBalancingRules"] = subResources(ids)
		}
		if ids := uses("outboundRules", one); len(ids) > 0 {
			pp["outboundRules"] = subResources(ids)
			pp["outboundRule"] = subResource(ids[0])
		}
		if ids := uses("inboundNatRules", one); len(ids) > 0 {
			pp["inboundNatRules"] = subResources(ids)
		}
	}
	var members []string
	addrs, _ := pp["loadBalancerBackendAddresses"].([]any)
	for _, r := range e.poolMembers(o.id) {
		members = append(members, r.id)
		addrs = append(addrs, nicPoolAddress(r.id))
	}
	if len(members) > 0 {
		pp["backendIPConfigurations"] = subResources(members)
		pp["loadBalancerBackendAddresses"] = addrs
	}
	return out, nil
}

// inPool says an IP configuration's properties put it in a pool.
func inPool(props map[string]any, poolID string) bool {
	list, _ := props["loadBalancerBackendAddressPools"].([]any)
	for _, r := range list {
		m, _ := r.(map[string]any)
		if s, _ := m["id"].(string); sameID(s, poolID) {
			return true
		}
	}
	return false
}

// putBackendPool is LoadBalancerBackendAddressPools_CreateOrUpdate.
func putBackendPool(e *Emulator, c *putCall) *armError {
	lb, aerr := e.putChildPrologue(c)
	if aerr != nil {
		return aerr
	}
	pool, aerr := decodeBody[armnetwork.BackendAddressPool](c.Body)
	if aerr != nil {
		return aerr
	}
	pool.ID, pool.Name, pool.Type, pool.Etag = to.Ptr(c.ID), to.Ptr(lastSegment(c.ID)), to.Ptr(lbSubType+"backendAddressPools"), nil
	members, aerr := e.completePool(lb.id, &pool)
	if aerr != nil {
		return aerr
	}
	if rule, fe, v := e.ruleFrontendVersion(lb, c.ID); rule != "" {
		for _, m := range members {
			if m.version != v {
				return errRuleVersion(rule, fe, v, c.ID, m.version)
			}
		}
	}
	replaceBody(c.Body, pool)
	e.touch(lb.id)
	return nil
}

// delBackendPool refuses to delete a pool the load balancer's rules
// still use: the load balancer would reference a pool it lacks.
func delBackendPool(e *Emulator, o *object) *armError {
	if aerr := delFamily(e, o); aerr != nil {
		return aerr
	}
	if aerr := e.checkPoolUnused(o); aerr != nil {
		return aerr
	}
	if lb := e.lookup(parentOf(o.id)); lb != nil {
		for _, coll := range []string{"loadBalancingRules", "outboundRules", "inboundNatRules"} {
			items, _ := lb.props()[coll].([]any)
			for _, item := range items {
				m, _ := item.(map[string]any)
				props, _ := m["properties"].(map[string]any)
				if sameID(refID(props, "backendAddressPool"), o.id) || inPool(map[string]any{"loadBalancerBackendAddressPools": props["backendAddressPools"]}, o.id) {
					return errInvalidReference(o.id, lb.id)
				}
			}
		}
	}
	return nil
}
