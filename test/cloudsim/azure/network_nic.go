package azure

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
)

// Network interfaces: IP configurations with a private address from their
// subnet, optionally a public IP and backend pool memberships; the
// virtual machine the interface is attached to (set by the compute half,
// read-only to clients); a GET shows public IPs as {id} unless
// $expand=ipConfigurations/publicIPAddress.

const ipConfigType = "Microsoft.Network/networkInterfaces/ipConfigurations"

func putNetworkInterface(e *Emulator, c *putCall) *armError {
	nic, aerr := decodeBody[armnetwork.Interface](c.Body)
	if aerr != nil {
		return aerr
	}
	nicID := c.ID
	if nic.Properties == nil || len(nic.Properties.IPConfigurations) == 0 {
		return errMissing("properties.ipConfigurations")
	}
	p := nic.Properties
	oldCfg := map[string]map[string]any{}
	var old armnetwork.Interface
	if c.Old != nil {
		old, _ = decodeAs[armnetwork.Interface](c.Old.body)
		items, _ := c.Old.props()["ipConfigurations"].([]any)
		for _, item := range items {
			m, _ := item.(map[string]any)
			id, _ := m["id"].(string)
			props, _ := m["properties"].(map[string]any)
			oldCfg[strings.ToLower(id)] = props
		}
	}
	seen := newNames(nicID)
	pipSeen := map[string]bool{}
	joined := map[string]poolMember{}
	var reqs []*ipRequest
	owners := map[*ipRequest]*armnetwork.InterfaceIPConfigurationPropertiesFormat{}
	primaries := 0
	for i, ic := range p.IPConfigurations {
		n := childName(ic.Name, ic.ID)
		path := fmt.Sprintf("properties.ipConfigurations[%d]", i)
		if pr := seen.add(n, path); pr != nil {
			return errInvalidFormat(pr)
		}
		id := nicID + "/ipConfigurations/" + n
		ic.ID, ic.Name, ic.Type, ic.Etag = to.Ptr(id), to.Ptr(n), to.Ptr(ipConfigType), nil
		if ic.Properties == nil {
			ic.Properties = &armnetwork.InterfaceIPConfigurationPropertiesFormat{}
		}
		ip := ic.Properties
		ip.PrivateLinkConnectionProperties = nil
		if ip.Subnet == nil || deref(ip.Subnet.ID) == "" {
			return errMissingRef(path + ".properties.subnet")
		}
		sub := e.lookupKind(*ip.Subnet.ID, "virtualNetworks/subnets")
		if sub == nil {
			return errInvalidReference(*ip.Subnet.ID, nicID)
		}
		if aerr := e.checkProvisioned(sub, nicID); aerr != nil {
			return aerr
		}
		ip.Subnet = &armnetwork.Subnet{ID: to.Ptr(sub.id)}
		version, ok := canon(ip.PrivateIPAddressVersion, armnetwork.PossibleIPVersionValues(), armnetwork.IPVersionIPv4)
		if !ok {
			return errBadValue(path+".properties.privateIPAddressVersion", version)
		}
		v6 := version == armnetwork.IPVersionIPv6
		if v6 && !hasFamily(sub.body, true) {
			return errNoIPv6Prefix("IP configuration "+id, sub.id)
		}
		if ip.PublicIPAddress != nil && deref(ip.PublicIPAddress.ID) != "" {
			pipID := *ip.PublicIPAddress.ID
			if pipSeen[strings.ToLower(pipID)] {
				return errBadRequest("PublicIPReferencedByMultipleIPConfigs", "Public ip address %s is referenced by multiple ipconfigs in resource %s.", pipID, nicID)
			}
			pipSeen[strings.ToLower(pipID)] = true
			pip, aerr := e.usePublicIP(pipID, id, nicID, c.Old)
			if aerr != nil {
				return aerr
			}
			if aerr := checkPublicIPVersion(pip, id, string(version)); aerr != nil {
				return aerr
			}
			ip.PublicIPAddress = &armnetwork.PublicIPAddress{ID: to.Ptr(pip.id)}
		} else {
			ip.PublicIPAddress = nil
		}
		var poolRefs []string
		for _, pool := range ip.LoadBalancerBackendAddressPools {
			if pool != nil {
				poolRefs = append(poolRefs, deref(pool.ID))
			}
		}
		pools, aerr := e.checkPools(poolJoin{referrer: nicID, path: path + ".properties.loadBalancerBackendAddressPools", subnet: sub.id, self: nicID,
			ipConfig: n, version: string(version), joined: joined}, poolRefs)
		if aerr != nil {
			return aerr
		}
		if ip.LoadBalancerBackendAddressPools != nil {
			ip.LoadBalancerBackendAddressPools = make([]*armnetwork.BackendAddressPool, 0, len(pools))
		}
		for _, id := range pools {
			ip.LoadBalancerBackendAddressPools = append(ip.LoadBalancerBackendAddressPools, &armnetwork.BackendAddressPool{ID: to.Ptr(id)})
		}
		for _, rule := range ip.LoadBalancerInboundNatRules {
			if rule != nil {
				*rule = armnetwork.InboundNatRule{ID: rule.ID}
			}
		}
		method, ok := canon(ip.PrivateIPAllocationMethod, armnetwork.PossibleIPAllocationMethodValues(), armnetwork.IPAllocationMethodDynamic)
		if !ok {
			return errBadValue(path+".properties.privateIPAllocationMethod", method)
		}
		ip.PrivateIPAllocationMethod, ip.PrivateIPAddressVersion = &method, &version
		r := &ipRequest{ipConfigID: id, subnet: sub, static: method == armnetwork.IPAllocationMethodStatic, v6: v6}
		if r.static {
			if r.addr = deref(ip.PrivateIPAddress); r.addr == "" {
				return errBadRequest("PrivateIPAddressNotSpecified", "IP configuration %s has private IP allocation method Static but specifies no private IP address.", id)
			}
		} else if o := oldCfg[strings.ToLower(id)]; o != nil && sameID(refID(o, "subnet"), sub.id) {
			r.addr, _ = o["privateIPAddress"].(string)
		}
		reqs = append(reqs, r)
		owners[r] = ip
		if deref(ip.Primary) {
			primaries++
		}
	}
	switch {
	case len(p.IPConfigurations) == 1:
		p.IPConfigurations[0].Properties.Primary = to.Ptr(true)
	case primaries == 0:
		return errBadRequest("NetworkInterfaceMustHaveOnePrimaryIpConfiguration", "Network interface %s has %d IP configurations and none of them is primary.", nicID, len(p.IPConfigurations))
	case primaries > 1:
		return errBadRequest("NetworkInterfaceMustHaveOnePrimaryIpConfiguration", "Network interface %s has more than one primary IP configuration.", nicID)
	}
	for _, ic := range p.IPConfigurations {
		if ic.Properties.Primary == nil {
			ic.Properties.Primary = to.Ptr(false)
		}
	}
	if aerr := checkIPv4Primary(nicID, p.IPConfigurations); aerr != nil {
		return aerr
	}
	if aerr := e.assignPrivateIPs(c.Old, reqs); aerr != nil {
		return aerr
	}
	for r, ip := range owners {
		ip.PrivateIPAddress = to.Ptr(r.result)
	}
	if p.NetworkSecurityGroup != nil && deref(p.NetworkSecurityGroup.ID) != "" {
		nsg := e.lookupKind(*p.NetworkSecurityGroup.ID, "networkSecurityGroups")
		if nsg == nil {
			return errInvalidReference(*p.NetworkSecurityGroup.ID, nicID)
		}
		if aerr := e.checkProvisioned(nsg, nicID); aerr != nil {
			return aerr
		}
		p.NetworkSecurityGroup = &armnetwork.SecurityGroup{ID: to.Ptr(nsg.id)}
	} else {
		p.NetworkSecurityGroup = nil
	}
	// Read-only: what the provider and the compute side set.
	if op := old.Properties; op != nil {
		p.VirtualMachine, p.MacAddress, p.Primary, p.ResourceGUID, p.HostedWorkloads = op.VirtualMachine, op.MacAddress, op.Primary, op.ResourceGUID, op.HostedWorkloads
	} else {
		p.VirtualMachine, p.MacAddress, p.Primary, p.HostedWorkloads = nil, nil, nil, []*string{}
		p.ResourceGUID = to.Ptr(e.newGUID())
	}
	p.TapConfigurations, p.PrivateEndpoint, p.DscpConfiguration = nil, nil, nil
	for _, b := range []**bool{&p.EnableIPForwarding, &p.EnableAcceleratedNetworking, &p.DisableTCPStateTracking} {
		if *b == nil {
			*b = to.Ptr(false)
		}
	}
	if p.NicType == nil {
		p.NicType = to.Ptr(armnetwork.NetworkInterfaceNicTypeStandard)
	}
	var before []string
	if c.Old != nil {
		before = nicPublicIPs(c.Old.body)
	}
	replaceBody(c.Body, nic)
	e.touchChanged(before, nicPublicIPs(c.Body))
	return nil
}

// checkIPv4Primary enforces the network provider's rules for IPv6 IP
// configurations: a network interface has at least one IPv4 one ("each
// NIC must include at least one IPv4 IP configuration", IPv6 for Azure
// Virtual Network overview), and its primary one is IPv4.
func checkIPv4Primary(nicID string, cfgs []*armnetwork.InterfaceIPConfiguration) *armError {
	var v4, v6 bool
	for _, ic := range cfgs {
		isV6 := *ic.Properties.PrivateIPAddressVersion == armnetwork.IPVersionIPv6
		v4, v6 = v4 || !isV6, v6 || isV6
	}
	if v6 && !v4 {
		return errNeedIPv4(nicID)
	}
	for _, ic := range cfgs {
		if *ic.Properties.Primary && *ic.Properties.PrivateIPAddressVersion == armnetwork.IPVersionIPv6 {
			return errIPv6Primary(*ic.ID)
		}
	}
	return nil
}

// errNeedIPv4 refuses a network interface with IPv6 IP configurations
// only. The message is the network provider's as quoted by deployment
// scripts in public repositories; the code is not found documented and
// is named after the provider's documented one for load balancer
// frontends (AtleastOneIpV4RequiredForIpV6LbFrontendIpConfiguration,
// kubernetes-sigs/cloud-provider-azure#1831).
func errNeedIPv4(nicID string) *armError {
	return errBadRequest("AtleastOneIpV4RequiredForIpV6IpConfiguration",
		"At least one IPv4 ipConfiguration is required for an IPv6 ipConfiguration on the network interface '%s'.", nicID)
}

// errIPv6Primary refuses an IPv6 primary IP configuration, which Azure
// does not allow (hashicorp/terraform-provider-azurerm#2746). No code
// for it was found documented; the code and message are worded here.
func errIPv6Primary(ipConfigID string) *armError {
	return errBadRequest("IPv6IpConfigurationCannotBePrimary",
		"IP configuration %s is primary and has privateIPAddressVersion IPv6; a network interface's primary IP configuration must be IPv4.", ipConfigID)
}

// checkPublicIPVersion refuses a public IP of another IP version than
// the IP configuration using it, with the network provider's code and
// message (ansible-collections/azure#582).
func checkPublicIPVersion(pip *object, ipConfigID, version string) *armError {
	pv := ipv4
	if strings.EqualFold(jsonStr(pip.props(), "publicIPAddressVersion"), ipv6) {
		pv = ipv6
	}
	if pv == version {
		return nil
	}
	return errBadRequest("IPVersionForPublicIpAndNicIpConfigurationMustMatch",
		"IP version for publicIPAddress '%s', version '%s' and network interface ipConfiguration '%s', version '%s' must match.", pip.id, pv, ipConfigID, version)
}

// nicPublicIPs lists the public IPs a network interface body uses.
func nicPublicIPs(body map[string]any) []string {
	var out []string
	items, _ := propsOf(body)["ipConfigurations"].([]any)
	for _, item := range items {
		m, _ := item.(map[string]any)
		props, _ := m["properties"].(map[string]any)
		if id := refID(props, "publicIPAddress"); id != "" {
			out = append(out, id)
		}
	}
	return out
}

func viewNetworkInterface(e *Emulator, o *object, q url.Values) (map[string]any, *armError) {
	out := copyBody(o.body)
	p := propsOf(out)
	state := e.stateOf(o)
	p["provisioningState"] = state
	expand := strings.Contains(strings.ToLower(q.Get("$expand")), "ipconfigurations/publicipaddress")
	items, _ := p["ipConfigurations"].([]any)
	for _, item := range items {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		m["etag"] = o.body["etag"]
		ip := propsOf(m)
		ip["provisioningState"] = state
		if id := refID(ip, "publicIPAddress"); expand && id != "" {
			if pip := e.lookup(id); pip != nil {
				b, aerr := e.render(pip, url.Values{})
				if aerr != nil {
					return nil, aerr
				}
				ip["publicIPAddress"] = b
			}
		}
	}
	return out, nil
}

// delNetworkInterface refuses to delete an interface attached to a
// virtual machine that exists.
func delNetworkInterface(e *Emulator, o *object) *armError {
	if vm := refID(o.props(), "virtualMachine"); vm != "" && e.lookup(vm) != nil {
		return errBadRequest("NicInUse",
			"Network Interface %s is used by existing resource %s. In order to delete the network interface, it must be dissociated from the resource. To learn more, see aka.ms/deletenic.", o.id, vm)
	}
	return nil
}

func removedNetworkInterface(e *Emulator, o *object) {
	e.touchChanged(nicPublicIPs(o.body), nil)
}

// IPv6IPConfigName names the IPv6 IP configuration the admin API gives
// every VM's network interface and every scale set model in a dual-stack
// fixture (Config.DualStack).
const IPv6IPConfigName = "ipconfig-v6"

// newNIC creates a network interface (e.mu held) with one primary IP
// configuration ("ipconfig1") in subnetID, a private IPv4 address
// allocated from the subnet, optionally the public IP publicIPID,
// attached to the VM vmID. In a dual-stack fixture whose subnet has an
// IPv6 prefix, a second IP configuration ("ipconfig-v6") has a private
// IPv6 address from it.
func (e *Emulator) newNIC(rg, name, subnetID, publicIPID, vmID string) (*object, error) {
	if e.groups[strings.ToLower(rg)] == "" {
		return nil, errGroupNotFound(rg)
	}
	rg = e.groups[strings.ToLower(rg)]
	k := e.netKind("networkInterfaces")
	id := resourceID(e.cfg.SubscriptionID, rg, k, []string{name})
	if e.lookup(id) != nil {
		return nil, errBadRequest("NetworkInterfaceExists", "Network interface %s already exists.", id)
	}
	sub := e.lookupKind(subnetID, "virtualNetworks/subnets")
	if sub == nil {
		return nil, errInvalidReference(subnetID, id)
	}
	ipcID := id + "/ipConfigurations/ipconfig1"
	ipProps := newIPConfigProps(sub.id, true, false)
	if publicIPID != "" {
		pip, aerr := e.usePublicIP(publicIPID, ipcID, id, nil)
		if aerr != nil {
			return nil, aerr
		}
		ipProps["publicIPAddress"] = subResource(pip.id)
	}
	addr, err := e.allocatePrivateIP(sub.id)
	if err != nil {
		return nil, err
	}
	ipProps["privateIPAddress"] = addr
	cfgs := []any{map[string]any{"name": "ipconfig1", "id": ipcID, "type": ipConfigType, "properties": ipProps}}
	if e.dualStack(sub) {
		v6Props := newIPConfigProps(sub.id, false, true)
		if v6Props["privateIPAddress"], err = e.allocateAddress(sub.id, true, nil); err != nil {
			return nil, err
		}
		cfgs = append(cfgs, map[string]any{"name": IPv6IPConfigName, "id": id + "/ipConfigurations/" + IPv6IPConfigName, "type": ipConfigType, "properties": v6Props})
	}
	props := map[string]any{
		"ipConfigurations":            cfgs,
		"primary":                     true,
		"macAddress":                  e.newMAC(),
		"enableIPForwarding":          false,
		"enableAcceleratedNetworking": false,
		"disableTcpStateTracking":     false,
		"nicType":                     "Standard",
		"resourceGuid":                e.newGUID(),
		"hostedWorkloads":             []any{},
		"dnsSettings":                 map[string]any{"dnsServers": []any{}, "appliedDnsServers": []any{}},
	}
	if vmID != "" {
		props["virtualMachine"] = subResource(vmID)
	}
	o := e.insert(k, rg, []string{name}, map[string]any{"location": e.cfg.Location, "properties": props})
	if publicIPID != "" {
		e.touch(publicIPID)
	}
	return o, nil
}

// newIPConfigProps are the properties of a dynamic IP configuration in
// subnetID, without its address.
func newIPConfigProps(subnetID string, primary, v6 bool) map[string]any {
	version := ipv4
	if v6 {
		version = ipv6
	}
	return map[string]any{
		"primary":                   primary,
		"privateIPAllocationMethod": "Dynamic",
		"privateIPAddressVersion":   version,
		"subnet":                    subResource(subnetID),
		"provisioningState":         "Succeeded",
	}
}

// dualStack says the admin API gives what it launches in subnet sub an
// IPv6 IP configuration: the fixture is dual-stack and sub has an IPv6
// prefix.
func (e *Emulator) dualStack(sub *object) bool {
	return e.cfg.DualStack && hasFamily(sub.body, true)
}

// newMAC is a MAC address in Azure's notation, from Microsoft's
// 00-0D-3A block.
func (e *Emulator) newMAC() string {
	e.seq++
	n := e.cfg.Seed*1_000_003 + e.seq
	return fmt.Sprintf("00-0D-3A-%02X-%02X-%02X", byte(n>>16), byte(n>>8), byte(n))
}
