package aws

import (
	"encoding/binary"
	"net/http"
	"net/netip"
	"slices"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// Elastic IP addresses: AllocateAddress, DescribeAddresses, ReleaseAddress
// (tags through the generic CreateTags/DeleteTags). An address belongs to
// the account until released; a Network Load Balancer created with it in a
// SubnetMapping uses it until the load balancer is deleted, during which
// DescribeAddresses shows the association with the load balancer's
// network interface and ReleaseAddress refuses.

// elasticIPs is the emulator's address state.
type elasticIPs struct {
	store *cloudsim.Store[*address]
	// cursor is the pool index the next allocation starts searching from:
	// released addresses are not handed out again right away.
	cursor uint32
}

func newElasticIPs() *elasticIPs {
	return &elasticIPs{store: cloudsim.NewStore(ec2Prefix+"address", func(a *address) string { return a.allocationID })}
}

type address struct {
	allocationID string
	publicIP     string
	tags         map[string]string
	// Set while a load balancer uses the address: its ARN, the network
	// interface ELB made for it in the subnet, that interface's private
	// address and the association.
	lbARN         string
	subnetID      string
	eniID         string
	privateIP     string
	associationID string
}

func (a *address) inUse() bool { return a.associationID != "" }

// eipPool is where public addresses come from: TEST-NET-3 and TEST-NET-2
// (RFC 5737), hosts .1 to .254 of each, so never anyone's real address.
var eipPool = []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24"), netip.MustParsePrefix("198.51.100.0/24")}

const eipPoolSize = 254 * 2

func eipPoolAddr(i uint32) string {
	base := binary.BigEndian.Uint32(eipPool[i/254].Addr().AsSlice())
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], base+1+i%254)
	return netip.AddrFrom4(b).String()
}

func inEIPPool(ip string) bool {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	for _, p := range eipPool {
		if p.Contains(a) && a != p.Addr() && a.As4()[3] != 255 {
			return true
		}
	}
	return false
}

func (e *Emulator) addressByIP(ip string) (*address, bool) {
	for _, a := range e.eips.store.All() {
		if a.publicIP == ip {
			return a, true
		}
	}
	return nil, false
}

// allocateAddress allocates want, or the pool's next free address when
// want is empty. Callers hold e.mu.
func (e *Emulator) allocateAddress(want string, tags map[string]string) (*address, error) {
	ip := want
	if ip != "" {
		if _, taken := e.addressByIP(ip); taken || !inEIPPool(ip) {
			return nil, apiErr("InvalidAddress.NotFound", "Address '%s' not found.", ip)
		}
	} else {
		for n := uint32(0); n < eipPoolSize; n++ {
			cand := eipPoolAddr((e.eips.cursor + n) % eipPoolSize)
			if _, taken := e.addressByIP(cand); !taken {
				ip = cand
				e.eips.cursor = (e.eips.cursor + n + 1) % eipPoolSize
				break
			}
		}
		if ip == "" {
			return nil, apiErr("AddressLimitExceeded", "The maximum number of addresses has been reached.")
		}
	}
	id, _ := e.newID("eipalloc")
	a := &address{allocationID: id, publicIP: ip, tags: copyTags(tags)}
	e.eips.store.Put(a)
	return a, nil
}

// --- AllocateAddress ---

type allocateAddressResponse struct {
	PublicIP           string `xml:"publicIp"`
	Domain             string `xml:"domain"`
	AllocationID       string `xml:"allocationId"`
	PublicIPv4Pool     string `xml:"publicIpv4Pool"`
	NetworkBorderGroup string `xml:"networkBorderGroup"`
}

func (e *Emulator) allocateAddressAction(p params) (any, error) {
	if d := p.get("Domain"); d != "" && d != "vpc" {
		return nil, invalidValue("Domain", d, "EC2-Classic has been retired; the only domain is 'vpc'.")
	}
	if pool := p.get("PublicIpv4Pool"); pool != "" && pool != "amazon" {
		return nil, apiErr("InvalidPublicIpv4PoolID.NotFound", "The pool ID '%s' does not exist", pool)
	}
	if nbg := p.get("NetworkBorderGroup"); nbg != "" && nbg != e.cfg.Region {
		return nil, invalidValue("NetworkBorderGroup", nbg, "")
	}
	for _, k := range []string{"CustomerOwnedIpv4Pool", "IpamPoolId"} {
		if p.get(k) != "" {
			return nil, apiErr("InvalidParameterCombination", "The parameter %s is not supported by cloudsim", k)
		}
	}
	tags, err := tagSpecifications(p, "elastic-ip")
	if err != nil {
		return nil, err
	}
	a, err := e.allocateAddress(p.get("Address"), tags)
	if err != nil {
		return nil, err
	}
	return allocateAddressResponse{
		PublicIP: a.publicIP, Domain: "vpc", AllocationID: a.allocationID,
		PublicIPv4Pool: "amazon", NetworkBorderGroup: e.cfg.Region,
	}, nil
}

// --- DescribeAddresses ---

type xmlAddress struct {
	PublicIP                string   `xml:"publicIp"`
	AllocationID            string   `xml:"allocationId"`
	AssociationID           string   `xml:"associationId,omitempty"`
	Domain                  string   `xml:"domain"`
	NetworkInterfaceID      string   `xml:"networkInterfaceId,omitempty"`
	NetworkInterfaceOwnerID string   `xml:"networkInterfaceOwnerId,omitempty"`
	PrivateIPAddress        string   `xml:"privateIpAddress,omitempty"`
	Tags                    []ec2Tag `xml:"tagSet>item"`
	PublicIPv4Pool          string   `xml:"publicIpv4Pool"`
	NetworkBorderGroup      string   `xml:"networkBorderGroup"`
}

type describeAddressesResponse struct {
	Addresses []xmlAddress `xml:"addressesSet>item"`
}

func (e *Emulator) addressFields() fields[*address] {
	one := func(f func(*address) string) func(*address) []string {
		return func(a *address) []string {
			if v := f(a); v != "" {
				return []string{v}
			}
			return nil
		}
	}
	return fields[*address]{
		"allocation-id":              one(func(a *address) string { return a.allocationID }),
		"association-id":             one(func(a *address) string { return a.associationID }),
		"domain":                     one(func(*address) string { return "vpc" }),
		"instance-id":                one(func(*address) string { return "" }),
		"network-border-group":       one(func(*address) string { return e.cfg.Region }),
		"network-interface-id":       one(func(a *address) string { return a.eniID }),
		"network-interface-owner-id": one(func(a *address) string { return e.eniOwner(a) }),
		"private-ip-address":         one(func(a *address) string { return a.privateIP }),
		"public-ip":                  one(func(a *address) string { return a.publicIP }),
	}
}

// eniOwner is the owner of the interface an address is associated with:
// ELB's interfaces live in the customer's VPC and belong to the account
// (their requester is amazon-elb).
func (e *Emulator) eniOwner(a *address) string {
	if a.eniID == "" {
		return ""
	}
	return e.cfg.AccountID
}

func (e *Emulator) xmlAddress(a *address) xmlAddress {
	return xmlAddress{
		PublicIP: a.publicIP, AllocationID: a.allocationID, AssociationID: a.associationID, Domain: "vpc",
		NetworkInterfaceID: a.eniID, NetworkInterfaceOwnerID: e.eniOwner(a), PrivateIPAddress: a.privateIP,
		Tags: ec2Tags(a.tags), PublicIPv4Pool: "amazon", NetworkBorderGroup: e.cfg.Region,
	}
}

// describeAddresses selects by AllocationId.N and PublicIp.N (every one
// must exist) and Filter.N. EC2 does not page this call.
func (e *Emulator) describeAddresses(p params) (any, error) {
	match, err := ec2Filter(p, e.addressFields(), func(a *address) map[string]string { return a.tags })
	if err != nil {
		return nil, err
	}
	ips := p.list("PublicIp")
	var missing []string
	for _, ip := range ips {
		if _, ok := e.addressByIP(ip); !ok {
			missing = append(missing, ip)
		}
	}
	if len(missing) > 0 {
		return nil, apiErr("InvalidAddress.NotFound", "Address %s not found.", quoteList(missing))
	}
	byIP := func(a *address) bool { return len(ips) == 0 || slices.Contains(ips, a.publicIP) }
	addrs, _, err := ec2List(e.eips.store, p.list("AllocationId"),
		notFound{"InvalidAllocationID.NotFound", "The allocation ID %s does not exist"}, cloudsim.PageRequest{}, byIP, match)
	if err != nil {
		return nil, err
	}
	var resp describeAddressesResponse
	for _, a := range addrs {
		resp.Addresses = append(resp.Addresses, e.xmlAddress(a))
	}
	return resp, nil
}

// --- ReleaseAddress ---

func (e *Emulator) addressParam(id string) (*address, error) {
	a, ok := e.eips.store.Get(id)
	if !ok {
		return nil, apiErr("InvalidAllocationID.NotFound", "The allocation ID '%s' does not exist", id)
	}
	return a, nil
}

func (e *Emulator) releaseAddress(p params) (any, error) {
	id := p.get("AllocationId")
	if id == "" {
		if p.get("PublicIp") != "" {
			return nil, apiErr(codeInvalidParameterValue, "You must specify an allocation id when releasing a VPC elastic IP address")
		}
		return nil, missing("AllocationId")
	}
	if nbg := p.get("NetworkBorderGroup"); nbg != "" && nbg != e.cfg.Region {
		return nil, apiErr("InvalidAddress.NotFound", "Address '%s' not found.", id)
	}
	a, err := e.addressParam(id)
	if err != nil {
		return nil, err
	}
	if ip := p.get("PublicIp"); ip != "" && ip != a.publicIP {
		return nil, apiErr("InvalidParameterCombination", "The allocation ID '%s' is not for the address '%s'", id, ip)
	}
	if a.inUse() {
		return nil, apiErr("InvalidIPAddress.InUse", "Address %s is in use.", a.publicIP)
	}
	e.eips.store.Delete(id)
	return returnResponse{Return: true}, nil
}

// --- admin ---

// AddressInfo is an Elastic IP address as the admin API reports it.
type AddressInfo struct {
	AllocationID string            `json:"allocationId"`
	PublicIP     string            `json:"publicIp"`
	Tags         map[string]string `json:"tags,omitempty"`
	// LoadBalancerARN is the load balancer using the address, if any,
	// with the subnet, network interface, private address and
	// association it has there.
	LoadBalancerARN    string `json:"loadBalancerArn,omitempty"`
	SubnetID           string `json:"subnetId,omitempty"`
	NetworkInterfaceID string `json:"networkInterfaceId,omitempty"`
	PrivateIP          string `json:"privateIp,omitempty"`
	AssociationID      string `json:"associationId,omitempty"`
}

// AllocateAddress allocates an Elastic IP address, as a user does before
// handing its allocation ID to a Service annotation.
func (e *Emulator) AllocateAddress(tags map[string]string) (allocationID, publicIP string, err error) {
	for k, v := range tags {
		if err := checkEC2Tag(tag{Key: k, Value: v}); err != nil {
			return "", "", err
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	a, err := e.allocateAddress("", tags)
	if err != nil {
		return "", "", err
	}
	return a.allocationID, a.publicIP, nil
}

// ReleaseAddress releases an address, with ReleaseAddress's errors.
func (e *Emulator) ReleaseAddress(allocationID string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, err := e.releaseAddress(params{map[string][]string{"AllocationId": {allocationID}}})
	return err
}

// Addresses lists every allocated address in allocation order.
func (e *Emulator) Addresses() []AddressInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []AddressInfo
	for _, a := range e.eips.store.All() {
		out = append(out, AddressInfo{
			AllocationID: a.allocationID, PublicIP: a.publicIP, Tags: copyTags(a.tags),
			LoadBalancerARN: a.lbARN, SubnetID: a.subnetID, NetworkInterfaceID: a.eniID,
			PrivateIP: a.privateIP, AssociationID: a.associationID,
		})
	}
	return out
}

// addressAdminRoutes serves, under the cloud's admin prefix:
//
//	GET  /addresses          [AddressInfo]
//	POST /addresses          {"tags": {...}} -> {"allocationId", "publicIp"}
//	POST /addresses/release  {"allocationId": "..."}
func (e *Emulator) addressAdminRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /addresses", func(w http.ResponseWriter, r *http.Request) {
		addrs := e.Addresses()
		if addrs == nil {
			addrs = []AddressInfo{}
		}
		cloudsim.WriteJSON(w, http.StatusOK, addrs)
	})
	mux.HandleFunc("POST /addresses", cloudsim.AdminHandler(func(req struct {
		Tags map[string]string `json:"tags"`
	}) (any, error) {
		id, ip, err := e.AllocateAddress(req.Tags)
		return map[string]string{"allocationId": id, "publicIp": ip}, err
	}, nil))
	mux.HandleFunc("POST /addresses/release", cloudsim.AdminHandler(func(req struct {
		AllocationID string `json:"allocationId"`
	}) (any, error) {
		return req, e.ReleaseAddress(req.AllocationID)
	}, nil))
}

// addressResources lists the addresses for Resources: kind elastic-ip,
// ID the allocation ID, name the public address.
func (e *Emulator) addressResources(add func(kind, id, name, parent string, tags map[string]string)) {
	for _, a := range e.eips.store.All() {
		add(KindElasticIP, a.allocationID, a.publicIP, "", a.tags)
	}
}
