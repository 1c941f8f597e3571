package azure

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Backend pool membership by network interface IP configuration (the
// upstream Azure CCM's "nodeIPConfiguration" pool type): an IP
// configuration joins a pool by naming it in its
// loadBalancerBackendAddressPools. The network provider checks every
// such reference wherever one is written (a network interface PUT, a
// scale set's model, a scale set instance's network configuration, all
// through checkPools) and, from the pool's side, refuses IP-based
// addresses in a pool that holds IP configurations (completePool).
//
// A pool's members are of one IP version, the version of the frontend
// of every load balancing rule that uses the pool (checkPoolVersion,
// and from the load balancer's side checkRuleVersions).

// poolTypePath is the type path pool references must name.
const poolTypePath = "loadBalancers/backendAddressPools"

// poolJoin is an IP configuration asking to be in pools.
type poolJoin struct {
	// referrer is the resource being written, as InvalidResourceReference
	// names it: the network interface, scale set or scale set instance.
	referrer string
	// path is the JSON path of the pool list in the request body.
	path string
	// subnet is the IP configuration's subnet ID, "" if it names none.
	subnet string
	// self is the ID of the resource whose memberships are being
	// rewritten: IP configurations under it do not count as the load
	// balancer's other members.
	self string
	// ipConfig is the IP configuration's name and version its
	// privateIPAddressVersion ("" skips the version checks).
	ipConfig, version string
	// joined holds, across the IP configurations of one request, the
	// first to name each pool (by lower-cased ID), so that two of them
	// cannot bring two versions into it; nil when there is one only.
	joined map[string]poolMember
}

// poolMember is a pool member's name (an IP configuration's, an IP-based
// address's) and IP version.
type poolMember struct {
	name, version string
}

// checkPools checks the pool references of one IP configuration and
// returns their canonical IDs: each must name an existing pool, of a
// load balancer whose backends are in the subnet's virtual network,
// that holds no IP-based addresses.
func (e *Emulator) checkPools(j poolJoin, refs []string) ([]string, *armError) {
	out := make([]string, 0, len(refs))
	for i, ref := range refs {
		path := fmt.Sprintf("%s[%d]", j.path, i)
		if ref == "" {
			return nil, errMissingRef(path)
		}
		if p, err := parseARMPath(ref); err == nil && len(p.Types) > 0 &&
			(!strings.EqualFold(p.NS, networkNS) || !strings.EqualFold(strings.Join(p.Types, "/"), poolTypePath) || len(p.Names) != 2) {
			return nil, errInvalidFormat(detail("InvalidJsonReferenceWrongType",
				"Reference Id %s is referencing resource of a wrong type. The Id is expected to reference resources of type %s. Path %s.", ref, poolTypePath, path))
		}
		pool := e.lookupKind(ref, poolTypePath)
		if pool == nil {
			return nil, errInvalidReference(ref, j.referrer)
		}
		if pool.hasIPAddresses() {
			return nil, errCannotMix(pool.id)
		}
		if aerr := e.checkPoolVersion(pool, j); aerr != nil {
			return nil, aerr
		}
		if lb := e.lookup(parentOf(pool.id)); lb != nil && j.subnet != "" {
			if vnet := e.loadBalancerVNet(lb, j.self); vnet != "" && !sameID(vnet, parentOf(j.subnet)) {
				return nil, errDifferentVNet(j.referrer, lb.id, parentOf(j.subnet), vnet)
			}
		}
		out = append(out, pool.id)
	}
	return out, nil
}

// hasIPAddresses says a stored pool holds IP-based backend addresses.
func (o *object) hasIPAddresses() bool {
	addrs, _ := o.props()["loadBalancerBackendAddresses"].([]any)
	for _, a := range addrs {
		m, _ := a.(map[string]any)
		if jsonStr(m, "properties", "ipAddress") != "" {
			return true
		}
	}
	return false
}

// loadBalancerVNet is the virtual network a load balancer's backends are
// in, "" while nothing fixes it: an internal frontend's subnet, a pool's
// virtual network or IP-based addresses, or the IP configurations
// already in its pools (other than those under self).
func (e *Emulator) loadBalancerVNet(lb *object, self string) string {
	fes, _ := lb.props()["frontendIPConfigurations"].([]any)
	for _, fe := range fes {
		m, _ := fe.(map[string]any)
		props, _ := m["properties"].(map[string]any)
		if sub := refID(props, "subnet"); sub != "" {
			return parentOf(sub)
		}
	}
	pools := e.childrenOf(lb.id, e.netKind(poolTypePath))
	for _, pool := range pools {
		pp := pool.props()
		if v := refID(pp, "virtualNetwork"); v != "" {
			return v
		}
		addrs, _ := pp["loadBalancerBackendAddresses"].([]any)
		for _, a := range addrs {
			m, _ := a.(map[string]any)
			ap, _ := m["properties"].(map[string]any)
			if v := refID(ap, "virtualNetwork"); v != "" {
				return v
			}
			if s := refID(ap, "subnet"); s != "" {
				return parentOf(s)
			}
		}
	}
	for _, r := range e.ipConfigsWhere(func(r ipConfigRef) bool {
		if under(r.owner.id, self) {
			return false
		}
		for _, pool := range pools {
			if inPool(r.props, pool.id) {
				return true
			}
		}
		return false
	}) {
		if sub := refID(r.props, "subnet"); sub != "" {
			return parentOf(sub)
		}
	}
	return ""
}

// under says the resource id is self or nested under it (false for
// self "").
func under(id, self string) bool {
	id, self = strings.ToLower(id), strings.ToLower(self)
	return self != "" && (id == self || strings.HasPrefix(id, self+"/"))
}

// poolMembers are the IP configurations in a pool, by ID.
func (e *Emulator) poolMembers(poolID string) []ipConfigRef {
	return e.ipConfigsWhere(func(r ipConfigRef) bool { return inPool(r.props, poolID) })
}

// checkPoolUnused refuses the removal of a pool (its DELETE, or a load
// balancer PUT that leaves it out) while a scale set's model names it or
// an IP configuration is in it: the references would dangle. The message
// is the provider's as quoted in Azure/vm-scale-sets#53 (a pool DELETE
// refused while a scale set uses it); the code is not verified. Deleting
// the whole load balancer is another matter (delLoadBalancer).
func (e *Emulator) checkPoolUnused(pool *object) *armError {
	user := e.scaleSetUsing(pool)
	if members := e.poolMembers(pool.id); user == "" && len(members) > 0 {
		user = "network interface " + members[0].owner.id
	}
	if user == "" {
		return nil
	}
	return errBadRequest("BackendAddressPoolInUse",
		"Cannot remove backend address pool %s from load balancer since it is in use by %s.", pool.name(), user)
}

// scaleSetUsing is "virtual machine scale set <ID>" for the first scale
// set whose model names the pool or one of whose instances' IP
// configurations is in it; "" for none.
func (e *Emulator) scaleSetUsing(pool *object) string {
	for _, ss := range e.objectsOf(e.kindOf(computeNS, typeVMSS)) {
		for _, nc := range modelNetConfigs(ss.body) {
			ips, _ := jsonValue(asMap(nc), "properties", "ipConfigurations").([]any)
			for _, ipc := range ips {
				ip, _ := asMap(ipc)["properties"].(map[string]any)
				if inPool(ip, pool.id) {
					return "virtual machine scale set " + ss.id
				}
			}
		}
	}
	for _, m := range e.poolMembers(pool.id) {
		if m.owner.kind.typ == typeVMSSVMNIC {
			return "virtual machine scale set " + topLevelOf(m.owner.id)
		}
	}
	return ""
}

// What the network provider does when a load balancer whose pools are
// still referenced is deleted:
//
//   - a scale set (its model, or its instances' network configurations)
//     still naming a pool: the DELETE is refused with 400
//     LoadBalancerInUseByVirtualMachineScaleSet, "Cannot delete load
//     balancer <LB ID> since its child resources <pool names> are in use
//     by virtual machine scale set <scale set ID>." Code and message as
//     ARM answered the upstream CCM in
//     kubernetes-sigs/cluster-api-provider-azure#3163 (Feb 2023), and as
//     upstream's own test fixture has them (cloud-provider-azure v1.36.5
//     pkg/provider/azure_loadbalancer_test.go:63-71); upstream parses the
//     scale set out of it, takes the pools out of that scale set and
//     deletes again (pkg/util/errutils/err.go:66-85,
//     pkg/provider/azure_loadbalancer.go:703-735).
//   - stand-alone network interfaces (availability set or single VMs)
//     still in a pool: the DELETE succeeds and the provider drops the
//     references from the interfaces' IP configurations, so they name no
//     pool that does not exist. Upstream relies on it: for availability
//     sets it deliberately takes no NIC out before deleting the load
//     balancer (pkg/provider/azure_loadbalancer.go:697-701, "do nothing
//     for availability set", there since the in-tree provider); were the
//     DELETE refused, no availability-set cluster with the default
//     nodeIPConfiguration pools could ever delete its last Service's load
//     balancer. That the interfaces' ETags change with it is assumed
//     (they are rewritten).

// scaleSetsUsingLB refuses a load balancer's DELETE while a scale set
// uses one of its pools.
func (e *Emulator) scaleSetsUsingLB(lb *object) *armError {
	var names []string
	user := ""
	for _, pool := range e.childrenOf(lb.id, e.netKind(poolTypePath)) {
		if u := e.scaleSetUsing(pool); u != "" && (user == "" || u == user) {
			user = u
			names = append(names, pool.name())
		}
	}
	if user == "" {
		return nil
	}
	return errBadRequest("LoadBalancerInUseByVirtualMachineScaleSet",
		"Cannot delete load balancer %s since its child resources %s are in use by %s.", lb.id, strings.Join(names, ", "), user)
}

// dropPoolReferences takes every reference to one of a deleted load
// balancer's pools out of the stand-alone network interfaces' IP
// configurations, and rewrites those interfaces.
func (e *Emulator) dropPoolReferences(lbID string) {
	prefix := strings.ToLower(lbID) + "/backendaddresspools/"
	touched := map[string]bool{}
	for _, r := range e.ipConfigsWhere(func(r ipConfigRef) bool { return true }) {
		list, _ := r.props["loadBalancerBackendAddressPools"].([]any)
		kept := list[:0:0]
		for _, ref := range list {
			if id, _ := asMap(ref)["id"].(string); strings.HasPrefix(strings.ToLower(id), prefix) {
				continue
			}
			kept = append(kept, ref)
		}
		if len(kept) == len(list) {
			continue
		}
		if len(kept) == 0 {
			delete(r.props, "loadBalancerBackendAddressPools")
		} else {
			r.props["loadBalancerBackendAddressPools"] = kept
		}
		touched[r.owner.id] = true
	}
	for id := range touched {
		e.touch(id)
	}
}

// nicPoolAddress is how the provider lists an IP configuration member
// among a pool's loadBalancerBackendAddresses: a GUID name, no
// ipAddress and a reference to the IP configuration. The upstream CCM
// tells a NIC-based pool from an IP-based one by that empty ipAddress
// (isNICPool). The name is derived from the IP configuration's ID so
// that it stays the same from one GET to the next.
func nicPoolAddress(ipConfigID string) map[string]any {
	h1, h2 := fnv64(strings.ToLower(ipConfigID)), fnv64("#"+strings.ToLower(ipConfigID))
	name := fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", uint32(h1), uint16(h1>>32), uint16(h1>>48)&0xfff, uint16(h2)&0xfff, h2>>16)
	return map[string]any{"name": name, "properties": map[string]any{"networkInterfaceIPConfiguration": subResource(ipConfigID)}}
}

// errCannotMix refuses a pool that would hold both IP-based addresses
// and IP configurations. The code is the network provider's (seen in
// hashicorp/terraform-provider-azurerm#25962, a NIC PUT refused); the
// message is worded here, not verified.
func errCannotMix(poolID string) *armError {
	return errBadRequest("CannotMixIPBasedAddressesAndIPConfigurationsOnLoadBalancerBackendAddressPool",
		"Load balancer backend address pool %s cannot have both IP-based backend addresses and network interface IP configurations.", poolID)
}

// errDifferentVNet refuses an IP configuration in another virtual
// network than the load balancer's backends. The message follows the
// network provider's as quoted in AutomatedLab/AutomatedLab#57 ("...
// uses load balancer ... but does not use the same VNET (...) as other
// network interfaces ..."); the code is not verified.
func errDifferentVNet(referrer, lbID, vnet, lbVNet string) *armError {
	return errBadRequest("NetworkInterfaceAndLoadBalancerAreInDifferentVirtualNetworks",
		"Network interface %s uses load balancer %s but does not use the same VNET (%s) as other network interfaces already in the load balancer (%s).", referrer, lbID, vnet, lbVNet)
}

// checkPoolVersion refuses an IP configuration joining a pool whose
// members (but those under j.self, or earlier in the same request) are
// of another IP version, or whose load balancing rules' frontend is.
func (e *Emulator) checkPoolVersion(pool *object, j poolJoin) *armError {
	if j.version == "" {
		return nil
	}
	key := strings.ToLower(pool.id)
	others := e.poolVersions(pool, j.self)
	if first, ok := j.joined[key]; ok {
		others = append(others, first)
	} else if j.joined != nil {
		j.joined[key] = poolMember{j.ipConfig, j.version}
	}
	for _, m := range others {
		if m.version != j.version {
			return errPoolVersions(j, m, pool.id)
		}
	}
	if lb := e.lookup(parentOf(pool.id)); lb != nil {
		if rule, fe, v := e.ruleFrontendVersion(lb, pool.id); rule != "" && v != j.version {
			return errRuleVersion(rule, fe, v, pool.id, j.version)
		}
	}
	return nil
}

// poolVersions are the IP versions of a stored pool's members (IP-based
// addresses, or IP configurations but those under self), one member of
// each version.
func (e *Emulator) poolVersions(pool *object, self string) []poolMember {
	var all []poolMember
	addrs, _ := pool.props()["loadBalancerBackendAddresses"].([]any)
	for _, a := range addrs {
		m := asMap(a)
		if ip, err := netip.ParseAddr(jsonStr(m, "properties", "ipAddress")); err == nil {
			all = append(all, poolMember{jsonStr(m, "name"), addrVersion(ip)})
		}
	}
	for _, r := range e.poolMembers(pool.id) {
		if !under(r.owner.id, self) {
			all = append(all, poolMember{lastSegment(r.id), versionOf(r.props)})
		}
	}
	return oneOfEach(all)
}

// oneOfEach keeps the first member of each IP version.
func oneOfEach(members []poolMember) []poolMember {
	var out []poolMember
	for _, m := range members {
		if !slices.ContainsFunc(out, func(o poolMember) bool { return o.version == m.version }) {
			out = append(out, m)
		}
	}
	return out
}

func addrVersion(a netip.Addr) string {
	if a.Is6() {
		return ipv6
	}
	return ipv4
}

// ruleFrontendVersion is the first load balancing rule of a stored load
// balancer that uses the pool, with its frontend and that frontend's IP
// version; "" for none.
func (e *Emulator) ruleFrontendVersion(lb *object, poolID string) (rule, frontend, version string) {
	fes, _ := lb.props()["frontendIPConfigurations"].([]any)
	rules, _ := lb.props()["loadBalancingRules"].([]any)
	for _, r := range rules {
		props := propsOf(asMap(r))
		pools := append(refIDs(props["backendAddressPools"]), refID(props, "backendAddressPool"))
		if !slices.ContainsFunc(pools, func(p string) bool { return sameID(p, poolID) }) {
			continue
		}
		fe := refID(props, "frontendIPConfiguration")
		for _, f := range fes {
			if sameID(jsonStr(asMap(f), "id"), fe) {
				return jsonStr(asMap(r), "id"), fe, e.frontendVersion(propsOf(asMap(f)))
			}
		}
	}
	return "", "", ""
}

// frontendVersion is the IP version of a frontend (its properties as
// stored): its public IP's, or its private address's.
func (e *Emulator) frontendVersion(props map[string]any) string {
	if id := refID(props, "publicIPAddress"); id != "" {
		if pip := e.lookup(id); pip != nil && strings.EqualFold(jsonStr(pip.props(), "publicIPAddressVersion"), ipv6) {
			return ipv6
		}
		return ipv4
	}
	return versionOf(props)
}

// errPoolVersions refuses IP configurations of two IP versions in one
// pool. Code and message are the network provider's for a scale set
// (kubernetes/kubernetes#93085); that it answers a network interface's
// PUT with the same code is assumed: no other code for it was found
// documented.
func errPoolVersions(j poolJoin, other poolMember, poolID string) *armError {
	owner := "network interface '" + j.referrer + "'"
	if p, err := parseARMPath(j.referrer); err == nil && len(p.Types) > 0 && strings.EqualFold(p.Types[0], typeVMSS) {
		owner = "VM Scale Set '" + topLevelOf(j.referrer) + "'"
	}
	return errBadRequest("AllNicIpConfigurationsOfLbBackendPoolOnVMScaleSetMustHaveSamePrivateIpAddressVersion",
		"Network interface ipConfiguration '%s' of %s has privateIpAddressVersion '%s' that does not match with privateIpAddressVersion '%s' of ipConfiguration '%s' in the same load balancer backend address pool '%s'.",
		j.ipConfig, owner, j.version, other.version, other.name, poolID)
}

// errRuleVersion refuses a load balancing rule whose frontend and backend
// pool are of different IP versions (the load balancer does no NAT64:
// IPv6 for Azure Virtual Network overview). The network provider's code
// for it was not found documented; the closest documented one is its
// refusal of a public IP and an IP configuration of different versions
// (IPVersionForPublicIpAndNicIpConfigurationMustMatch, quoted in
// ansible-collections/azure#582), whose message this follows.
func errRuleVersion(ruleID, feID, feVersion, poolID, poolVersion string) *armError {
	return errBadRequest("IPVersionForPublicIpAndNicIpConfigurationMustMatch",
		"IP version for frontend ipConfiguration '%s', version '%s' and backend address pool '%s', version '%s' of load balancing rule '%s' must match.",
		feID, feVersion, poolID, poolVersion, ruleID)
}
