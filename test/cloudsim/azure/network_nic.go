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
		pools, aerr := e.checkPools(poolJoin{referrer: nicID, path: path + ".properties.loadBalancerBackendAddressPools", subnet: sub.id, self: nicID}, poolRefs)
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
		version, ok := canon(ip.PrivateIPAddressVersion, armnetwork.PossibleIPVersionValues(), armnetwork.IPVersionIPv4)
		if !ok || version != armnetwork.IPVersionIPv4 {
			return errBadValue(path+".properties.privateIPAddressVersion", version)
		}
		ip.PrivateIPAllocationMethod, ip.PrivateIPAddressVersion = &method, &version
		r := &ipRequest{ipConfigID: id, subnet: sub, static: method == armnetwork.IPAllocationMethodStatic}
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

// newNIC creates a network interface (e.mu held) with one primary IP
// configuration ("ipconfig1") in subnetID, a private IPv4 address
// allocated from the subnet, optionally the public IP publicIPID,
// attached to the VM vmID.
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
	ipProps := map[string]any{
		"primary":                   true,
		"privateIPAllocationMethod": "Dynamic",
		"privateIPAddressVersion":   "IPv4",
		"subnet":                    subResource(sub.id),
		"provisioningState":         "Succeeded",
	}
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
	props := map[string]any{
		"ipConfigurations": []any{map[string]any{
			"name": "ipconfig1", "id": ipcID, "type": ipConfigType, "properties": ipProps,
		}},
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

// newMAC is a MAC address in Azure's notation, from Microsoft's
// 00-0D-3A block.
func (e *Emulator) newMAC() string {
	e.seq++
	n := e.cfg.Seed*1_000_003 + e.seq
	return fmt.Sprintf("00-0D-3A-%02X-%02X-%02X", byte(n>>16), byte(n>>8), byte(n))
}
