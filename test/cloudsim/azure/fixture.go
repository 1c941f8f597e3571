package azure

import (
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
)

// Fixture is the network a cluster installer would have made, in the
// resource group Fixture.ResourceGroup, and the credentials to reach it:
// a virtual network "<ClusterID>-vnet" (10.0.0.0/8) with the node subnet
// "<ClusterID>-subnet" (10.240.0.0/16) guarded by the security group
// "<ClusterID>-nsg", and a route table "<ClusterID>-routetable" that is
// not yet associated with the subnet (the cloud-controller-manager
// associates it when it manages routes). With Config.DualStack the
// virtual network also has fd00:10::/48 and the subnet fd00:10:0:f0::/64.
type Fixture struct {
	TenantID       string `json:"tenantId"`
	SubscriptionID string `json:"subscriptionId"`
	Location       string `json:"location"`
	// ClientID and ClientSecret are the service principal's credentials.
	ClientID     string `json:"clientId"`
	ClientSecret string `json:"clientSecret"`
	// AdminClientID is the operator's application (AdminClientID), whose
	// calls a policy for the service principal never applies to
	// (IssueTokenFor issues its tokens).
	AdminClientID string `json:"adminClientId"`

	ResourceGroup string `json:"resourceGroup"`

	VNetName          string `json:"vnetName"`
	VNetID            string `json:"vnetId"`
	VNetCIDR          string `json:"vnetCidr"`
	VNetResourceGroup string `json:"vnetResourceGroup"`
	// VNetCIDRv6 and SubnetCIDRv6 are the IPv6 prefixes of a dual-stack
	// fixture (Config.DualStack), empty otherwise.
	VNetCIDRv6 string `json:"vnetCidrv6,omitempty"`

	SubnetName   string `json:"subnetName"`
	SubnetCIDR   string `json:"subnetCidr"`
	SubnetCIDRv6 string `json:"subnetCidrv6,omitempty"`
	SubnetID     string `json:"subnetId"`

	SecurityGroupName          string `json:"securityGroupName"`
	SecurityGroupID            string `json:"securityGroupId"`
	SecurityGroupResourceGroup string `json:"securityGroupResourceGroup"`

	RouteTableName          string `json:"routeTableName"`
	RouteTableID            string `json:"routeTableId"`
	RouteTableResourceGroup string `json:"routeTableResourceGroup"`
}

// Fixture CIDRs. The IPv6 ones are a unique local /48 and a /64 in it:
// Azure takes IPv6 subnets of exactly /64 only (IPv6 for Azure Virtual
// Network overview).
const (
	FixtureVNetCIDR     = "10.0.0.0/8"
	FixtureSubnetCIDR   = "10.240.0.0/16"
	FixtureVNetCIDRv6   = "fd00:10::/48"
	FixtureSubnetCIDRv6 = "fd00:10:0:f0::/64"
)

func (e *Emulator) fixture() Fixture {
	c := e.cfg.ClusterID
	rg := c + "-rg"
	f := Fixture{
		TenantID: e.cfg.TenantID, SubscriptionID: e.cfg.SubscriptionID, Location: e.cfg.Location,
		ClientID: e.cfg.ClientID, ClientSecret: e.cfg.ClientSecret, AdminClientID: AdminClientID,
		ResourceGroup: rg,
		VNetName:      c + "-vnet", VNetCIDR: FixtureVNetCIDR, VNetResourceGroup: rg,
		SubnetName: c + "-subnet", SubnetCIDR: FixtureSubnetCIDR,
		SecurityGroupName: c + "-nsg", SecurityGroupResourceGroup: rg,
		RouteTableName: c + "-routetable", RouteTableResourceGroup: rg,
	}
	if e.cfg.DualStack {
		f.VNetCIDRv6, f.SubnetCIDRv6 = FixtureVNetCIDRv6, FixtureSubnetCIDRv6
	}
	f.VNetID = resourceID(e.cfg.SubscriptionID, rg, e.netKind("virtualNetworks"), []string{f.VNetName})
	f.SubnetID = resourceID(e.cfg.SubscriptionID, rg, e.netKind("virtualNetworks/subnets"), []string{f.VNetName, f.SubnetName})
	f.SecurityGroupID = resourceID(e.cfg.SubscriptionID, rg, e.netKind("networkSecurityGroups"), []string{f.SecurityGroupName})
	f.RouteTableID = resourceID(e.cfg.SubscriptionID, rg, e.netKind("routeTables"), []string{f.RouteTableName})
	return f
}

// buildFixture creates the fixture (e.mu held).
func (e *Emulator) buildFixture() {
	f := e.fixture()
	rg := f.ResourceGroup
	e.addGroup(rg)
	e.insert(e.netKind("networkSecurityGroups"), rg, []string{f.SecurityGroupName}, map[string]any{
		"properties": map[string]any{"resourceGuid": e.newGUID()},
	})
	e.ensureDefaultSecurityRules(rg, []string{f.SecurityGroupName}, f.SecurityGroupID)
	e.insert(e.netKind("routeTables"), rg, []string{f.RouteTableName}, map[string]any{
		"properties": map[string]any{"disableBgpRoutePropagation": false, "resourceGuid": e.newGUID()},
	})
	space := []any{f.VNetCIDR}
	if f.VNetCIDRv6 != "" {
		space = append(space, f.VNetCIDRv6)
	}
	e.insert(e.netKind("virtualNetworks"), rg, []string{f.VNetName}, map[string]any{
		"properties": map[string]any{
			"addressSpace":           map[string]any{"addressPrefixes": space},
			"enableDdosProtection":   false,
			"virtualNetworkPeerings": []any{},
			"resourceGuid":           e.newGUID(),
		},
	})
	subnet := map[string]any{
		"networkSecurityGroup":              subResource(f.SecurityGroupID),
		"delegations":                       []any{},
		"privateEndpointNetworkPolicies":    "Disabled",
		"privateLinkServiceNetworkPolicies": "Enabled",
	}
	// The network provider shows one prefix as addressPrefix and two or
	// more as addressPrefixes only (hashicorp/terraform-provider-azurerm
	// #5139: a dual-stack subnet has no address_prefix).
	if f.SubnetCIDRv6 != "" {
		subnet["addressPrefixes"] = []any{f.SubnetCIDR, f.SubnetCIDRv6}
	} else {
		subnet["addressPrefix"] = f.SubnetCIDR
	}
	e.insert(e.netKind("virtualNetworks/subnets"), rg, []string{f.VNetName, f.SubnetName}, map[string]any{"properties": subnet})
}

// Fixture reports the fixture's names and IDs.
func (e *Emulator) Fixture() Fixture {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.fixture()
}

// CreatePublicIP creates a Standard static public IPv4 address in rg, as
// a user would before pointing a Service at it (a controller must never
// delete an address it did not create). It returns its ID and address.
func (e *Emulator) CreatePublicIP(rg, name string, tags map[string]string) (id, address string, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settle(e.cfg.Now())
	o, err := e.newPublicIP(rg, name, nil)
	if err != nil {
		return "", "", err
	}
	if len(tags) > 0 {
		t := map[string]any{}
		for k, v := range tags {
			t[k] = v
		}
		o.body["tags"] = t
	}
	address, _ = o.props()["ipAddress"].(string)
	return o.id, address, nil
}

// CreatePublicIPv6 is CreatePublicIP for a Standard static public IPv6
// address (a dual-stack Service's azure-pip-name-ipv6).
func (e *Emulator) CreatePublicIPv6(rg, name string) (id, address string, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settle(e.cfg.Now())
	o, err := e.newPublicIP(rg, name, nil)
	if err != nil {
		return "", "", err
	}
	p := o.props()
	p["publicIPAddressVersion"] = "IPv6"
	address = e.allocatePublicAddress(true)
	p["ipAddress"] = address
	return o.id, address, nil
}

// readNetwork renders the network resource of type typ at rg/names as a
// GET shows it and decodes it into T.
func readNetwork[T any](e *Emulator, typ, rg string, names ...string) (T, bool) {
	var zero T
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settle(e.cfg.Now())
	k := e.netKind(typ)
	if canonical := e.groups[strings.ToLower(rg)]; canonical != "" {
		rg = canonical
	}
	o := e.lookup(resourceID(e.cfg.SubscriptionID, rg, k, names))
	if o == nil {
		return zero, false
	}
	body, aerr := e.render(o, url.Values{})
	if aerr != nil {
		return zero, false
	}
	v, err := decodeAs[T](body)
	if err != nil {
		return zero, false
	}
	return v, true
}

// PublicIP returns a public IP address as a GET shows it.
func (e *Emulator) PublicIP(rg, name string) (armnetwork.PublicIPAddress, bool) {
	return readNetwork[armnetwork.PublicIPAddress](e, "publicIPAddresses", rg, name)
}

// LoadBalancer returns a load balancer as a GET shows it (pools
// embedded, back-references filled).
func (e *Emulator) LoadBalancer(rg, name string) (armnetwork.LoadBalancer, bool) {
	return readNetwork[armnetwork.LoadBalancer](e, "loadBalancers", rg, name)
}

// SecurityGroup returns a network security group as a GET shows it.
func (e *Emulator) SecurityGroup(rg, name string) (armnetwork.SecurityGroup, bool) {
	return readNetwork[armnetwork.SecurityGroup](e, "networkSecurityGroups", rg, name)
}

// RouteTable returns a route table as a GET shows it.
func (e *Emulator) RouteTable(rg, name string) (armnetwork.RouteTable, bool) {
	return readNetwork[armnetwork.RouteTable](e, "routeTables", rg, name)
}

// VirtualNetwork returns a virtual network as a GET shows it.
func (e *Emulator) VirtualNetwork(rg, name string) (armnetwork.VirtualNetwork, bool) {
	return readNetwork[armnetwork.VirtualNetwork](e, "virtualNetworks", rg, name)
}

// Subnet returns a subnet as a GET shows it.
func (e *Emulator) Subnet(rg, vnet, name string) (armnetwork.Subnet, bool) {
	return readNetwork[armnetwork.Subnet](e, "virtualNetworks/subnets", rg, vnet, name)
}

// NetworkInterface returns a network interface as a GET shows it.
func (e *Emulator) NetworkInterface(rg, name string) (armnetwork.Interface, bool) {
	return readNetwork[armnetwork.Interface](e, "networkInterfaces", rg, name)
}

// ListNetwork returns the IDs of the network resources of a type
// ("loadBalancers", "publicIPAddresses", "routeTables/routes", ...) in
// every resource group, by ID.
func (e *Emulator) ListNetwork(typ string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settle(e.cfg.Now())
	var out []string
	for _, o := range e.objectsOf(e.netKind(typ)) {
		out = append(out, o.id)
	}
	return out
}

// AddResourceGroup makes an empty resource group, as a user's
// `az group create` would: public IPs and other resources may then be
// created in it.
func (e *Emulator) AddResourceGroup(name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.addGroup(name)
}
