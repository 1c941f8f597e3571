package azure

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
)

// Public IP addresses: Standard SKU, static, an address from the public
// pool allocated on create and kept on updates, DNS labels unique in the
// location, ipConfiguration showing whatever uses the address.

var domainNameLabelRE = regexp.MustCompile(`^[a-z][a-z0-9-]{1,61}[a-z0-9]$`)

func putPublicIP(e *Emulator, c *putCall) *armError {
	pip, aerr := decodeBody[armnetwork.PublicIPAddress](c.Body)
	if aerr != nil {
		return aerr
	}
	if pip.Properties == nil {
		pip.Properties = &armnetwork.PublicIPAddressPropertiesFormat{}
	}
	p := pip.Properties
	if pip.SKU == nil {
		pip.SKU = &armnetwork.PublicIPAddressSKU{}
	}
	if pip.SKU.Name == nil {
		pip.SKU.Name = to.Ptr(armnetwork.PublicIPAddressSKUNameBasic)
	}
	if pip.SKU.Tier == nil {
		pip.SKU.Tier = to.Ptr(armnetwork.PublicIPAddressSKUTierRegional)
	}
	if p.PublicIPAddressVersion == nil {
		p.PublicIPAddressVersion = to.Ptr(armnetwork.IPVersionIPv4)
	}
	version := *p.PublicIPAddressVersion
	if version != armnetwork.IPVersionIPv4 && version != armnetwork.IPVersionIPv6 {
		return errInvalidFormat(detail("InvalidJsonValue", "Value %s is not valid for property publicIPAddressVersion. Path properties.publicIPAddressVersion.", version))
	}
	switch *pip.SKU.Name {
	case armnetwork.PublicIPAddressSKUNameStandard:
	case armnetwork.PublicIPAddressSKUNameBasic:
		if c.Old == nil {
			// Basic public IPs are retired: new subscriptions have no quota.
			return errBadRequest(string(version)+"BasicSkuPublicIpCountLimitReached",
				"Cannot create more than 0 %s Basic SKU public IP addresses for this subscription in this region.", version)
		}
	default:
		return errInvalidFormat(detail("InvalidJsonValue", "Value %s is not valid for property sku.name. Path sku.name.", *pip.SKU.Name))
	}
	if p.PublicIPAllocationMethod == nil {
		p.PublicIPAllocationMethod = to.Ptr(armnetwork.IPAllocationMethodDynamic)
	}
	if *pip.SKU.Name == armnetwork.PublicIPAddressSKUNameStandard && *p.PublicIPAllocationMethod != armnetwork.IPAllocationMethodStatic {
		return errBadRequest("StandardSkuPublicIPAddressesMustBeStatic", "Standard sku publicIp %s must have AllocationMethod set to Static.", c.ID)
	}
	if p.IdleTimeoutInMinutes == nil {
		p.IdleTimeoutInMinutes = to.Ptr[int32](4)
	}
	if n := *p.IdleTimeoutInMinutes; n < 4 || n > 30 {
		return errBadRequest("PublicIPIdleTimeoutIsOutOfRange",
			"IdleTimeoutInMinutes of %s is %d. It must be between 4 and 30 inclusive.", c.ID, n)
	}

	if d := p.DNSSettings; d != nil && deref(d.DomainNameLabel) != "" {
		label := *d.DomainNameLabel
		if !domainNameLabelRE.MatchString(label) {
			return errBadRequest("InvalidDomainNameLabel",
				"The domain name label %s is invalid. It must conform to the following regular expression: %s.", label, domainNameLabelRE)
		}
		fqdn := label + "." + strings.ToLower(e.cfg.Location) + ".cloudapp.azure.com"
		for _, o := range e.objectsOf(e.netKind("publicIPAddresses")) {
			if o != c.Old && strings.EqualFold(dnsFQDN(o), fqdn) {
				return errBadRequest("DnsRecordInUse", "DNS record %s is already used by another public IP.", fqdn)
			}
		}
		d.Fqdn = to.Ptr(fqdn)
	} else if d != nil {
		d.Fqdn = nil
	}

	var old armnetwork.PublicIPAddress
	if c.Old != nil {
		old, _ = decodeAs[armnetwork.PublicIPAddress](c.Old.body)
	}
	if old.Properties != nil && deref(old.Properties.IPAddress) != "" {
		p.IPAddress = old.Properties.IPAddress
		p.PublicIPAddressVersion = old.Properties.PublicIPAddressVersion
		p.ResourceGUID = old.Properties.ResourceGUID
	} else {
		p.IPAddress = to.Ptr(e.allocatePublicAddress(version == armnetwork.IPVersionIPv6))
		p.ResourceGUID = to.Ptr(e.newGUID())
	}
	// What uses the address shows when it is read.
	p.IPConfiguration = nil
	replaceBody(c.Body, pip)
	return nil
}

func dnsFQDN(o *object) string {
	d, _ := o.props()["dnsSettings"].(map[string]any)
	s, _ := d["fqdn"].(string)
	return s
}

func viewPublicIP(e *Emulator, o *object, _ url.Values) (map[string]any, *armError) {
	out := copyBody(o.body)
	p := propsOf(out)
	p["provisioningState"] = e.stateOf(o)
	if users := e.publicIPUsers(o.id); len(users) > 0 {
		p["ipConfiguration"] = subResource(users[0].id)
	}
	return out, nil
}

// delPublicIP refuses to delete an address still in use.
func delPublicIP(e *Emulator, o *object) *armError {
	if users := e.publicIPUsers(o.id); len(users) > 0 {
		return errBadRequest("PublicIPAddressCannotBeDeleted",
			"Public IP address %s can not be deleted since it is still allocated to resource %s. In order to delete the public IP, disassociate/detach the Public IP address from the resource.  To learn how to do this, see aka.ms/deletepublicip.",
			o.id, users[0].id)
	}
	return nil
}

// usePublicIP checks an IP configuration may reference a public IP:
// it exists, is provisioned and is not allocated to another resource
// (owner is the resource being written, whose own use does not count).
func (e *Emulator) usePublicIP(pipID, ipConfigID, referrer string, owner *object) (*object, *armError) {
	pip := e.lookupKind(pipID, "publicIPAddresses")
	if pip == nil {
		return nil, errInvalidReference(pipID, referrer)
	}
	if aerr := e.checkProvisioned(pip, referrer); aerr != nil {
		return nil, aerr
	}
	for _, u := range e.publicIPUsers(pip.id) {
		if owner == nil || u.owner != owner {
			return nil, errBadRequest("PublicIPAddressInUse",
				"Resource %s is referencing public IP address %s that is already allocated to resource %s.", ipConfigID, pip.id, u.id)
		}
	}
	return pip, nil
}

// newPublicIP creates a Standard static public IPv4 address (e.mu held)
// with an address allocated, in zones (none: no zone).
func (e *Emulator) newPublicIP(rg, name string, zones []string) (*object, error) {
	if e.groups[strings.ToLower(rg)] == "" {
		return nil, errGroupNotFound(rg)
	}
	rg = e.groups[strings.ToLower(rg)]
	k := e.netKind("publicIPAddresses")
	if e.lookup(resourceID(e.cfg.SubscriptionID, rg, k, []string{name})) != nil {
		return nil, errBadRequest("PublicIPAddressExists", "Public IP address %s already exists in resource group %s.", name, rg)
	}
	body := map[string]any{
		"location": e.cfg.Location,
		"sku":      map[string]any{"name": "Standard", "tier": "Regional"},
		"properties": map[string]any{
			"publicIPAllocationMethod": "Static",
			"publicIPAddressVersion":   "IPv4",
			"idleTimeoutInMinutes":     4,
			"ipTags":                   []any{},
			"ipAddress":                e.allocatePublicAddress(false),
			"resourceGuid":             e.newGUID(),
		},
	}
	if len(zones) > 0 {
		zs := make([]any, 0, len(zones))
		for _, z := range zones {
			zs = append(zs, z)
		}
		body["zones"] = zs
	}
	return e.insert(k, rg, []string{name}, body), nil
}
