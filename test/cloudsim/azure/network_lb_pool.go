package azure

import (
	"fmt"
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
	self = strings.ToLower(self)
	for _, r := range e.ipConfigsWhere(func(r ipConfigRef) bool {
		owner := strings.ToLower(r.owner.id)
		if self != "" && (owner == self || strings.HasPrefix(owner, self+"/")) {
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

// poolMembers are the IP configurations in a pool, by ID.
func (e *Emulator) poolMembers(poolID string) []ipConfigRef {
	return e.ipConfigsWhere(func(r ipConfigRef) bool { return inPool(r.props, poolID) })
}

// checkPoolUnused refuses the removal of a pool (its DELETE, a load
// balancer PUT that leaves it out, the load balancer's DELETE) while a
// scale set's model names it or an IP configuration is in it: the
// references would dangle. The message is the provider's as quoted in
// Azure/vm-scale-sets#53; that it holds for a load balancer's DELETE is
// from kubernetes-sigs/cloud-provider-azure#2721; the code is not
// verified.
func (e *Emulator) checkPoolUnused(pool *object) *armError {
	user := ""
	for _, ss := range e.objectsOf(e.kindOf(computeNS, typeVMSS)) {
		for _, nc := range modelNetConfigs(ss.body) {
			ips, _ := jsonValue(asMap(nc), "properties", "ipConfigurations").([]any)
			for _, ipc := range ips {
				ip, _ := asMap(ipc)["properties"].(map[string]any)
				if inPool(ip, pool.id) {
					user = "virtual machine scale set " + ss.id
				}
			}
		}
	}
	if members := e.poolMembers(pool.id); user == "" && len(members) > 0 {
		owner := members[0].owner
		switch owner.kind.typ {
		case typeVMSSVMNIC:
			user = "virtual machine scale set " + topLevelOf(owner.id)
		default:
			user = "network interface " + owner.id
		}
	}
	if user == "" {
		return nil
	}
	return errBadRequest("BackendAddressPoolInUse",
		"Cannot remove backend address pool %s from load balancer since it is in use by %s.", pool.name(), user)
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
