package aws

import (
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"

	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
)

// VPCs, subnets and availability zones. Route tables are in ec2_routes.go.

type vpc struct {
	id   string
	cidr netip.Prefix
	// ipv6CIDR is the VPC's Amazon-provided IPv6 /56, when it has one
	// (the zero Prefix when not): subnets take their /64s from it.
	ipv6CIDR netip.Prefix
	tags     map[string]string
}

type subnet struct {
	id          string
	vpcID       string
	zone        string
	cidr        netip.Prefix
	mapPublicIP bool
	allocated   uint32 // addresses handed out so far
	tags        map[string]string
	// pinned are addresses load balancers were created with
	// (PrivateIPv4Address), which allocateIP skips.
	pinned map[string]bool
	// ipv6CIDR is the subnet's IPv6 /64, the zero Prefix without one.
	// Delegated IPv6 prefixes and IPv6 addresses come from it.
	ipv6CIDR netip.Prefix
	// What the subnet's network interfaces hold beyond their primary
	// addresses, each mapped to the holding interface's ID: delegated
	// IPv4 /28s and IPv6 /80s, and IPv6 addresses (ec2_interfaces.go).
	ipv4Prefixes map[netip.Prefix]string
	ipv6Prefixes map[netip.Prefix]string
	ipv6Addrs    map[netip.Addr]string
}

// zoneID is the AZ ID of the i-th configured zone, e.g. euw1-az2.
func (e *Emulator) zoneID(zone string) string {
	i := slices.Index(e.cfg.Zones, zone)
	if i < 0 {
		return ""
	}
	return fmt.Sprintf("%s-az%d", regionCode(e.cfg.Region), i+1)
}

// createVPC makes a VPC with what AWS makes along with it: the main route
// table (holding the local route) and the "default" security group.
func (e *Emulator) createVPC(cidr netip.Prefix, tags map[string]string) *vpc {
	id, _ := e.newID("vpc")
	v := &vpc{id: id, cidr: cidr.Masked(), tags: copyTags(tags)}
	e.vpcs.Put(v)
	rt := e.newRouteTable(id, nil)
	rt.main = true
	sg := e.newSecurityGroup(id, "default", "default VPC security group", nil)
	sg.isDefault = true
	return v
}

// createSubnet makes a subnet of cidr, with the IPv6 block ipv6 when
// that is a valid Prefix (a /64 of the VPC's IPv6 block).
func (e *Emulator) createSubnet(vpcID, zone string, cidr, ipv6 netip.Prefix, mapPublicIP bool, tags map[string]string) (*subnet, error) {
	v, ok := e.vpcs.Get(vpcID)
	if !ok {
		return nil, apiErr("InvalidVpcID.NotFound", "The vpc ID '%s' does not exist", vpcID)
	}
	if e.zoneID(zone) == "" {
		return nil, invalidValue("AvailabilityZone", zone, "No such availability zone.")
	}
	cidr = cidr.Masked()
	if !v.cidr.Contains(cidr.Addr()) || cidr.Bits() < v.cidr.Bits() || cidr.Bits() > 28 {
		return nil, apiErr("InvalidSubnet.Range", "The CIDR '%s' is invalid.", cidr)
	}
	for _, s := range e.subnets.All() {
		if s.vpcID == vpcID && s.cidr.Overlaps(cidr) {
			return nil, apiErr("InvalidSubnet.Conflict", "The CIDR '%s' conflicts with another subnet", cidr)
		}
	}
	if ipv6.IsValid() {
		if err := e.checkSubnetIPv6(v, ipv6); err != nil {
			return nil, err
		}
	}
	id, _ := e.newID("subnet")
	s := &subnet{
		id: id, vpcID: vpcID, zone: zone, cidr: cidr, mapPublicIP: mapPublicIP, tags: copyTags(tags), ipv6CIDR: ipv6,
		ipv4Prefixes: map[netip.Prefix]string{}, ipv6Prefixes: map[netip.Prefix]string{}, ipv6Addrs: map[netip.Addr]string{},
	}
	e.subnets.Put(s)
	return s, nil
}

// capacity is how many addresses AWS lets instances use: it reserves the
// first four and the last address of every subnet.
func (s *subnet) capacity() uint32 { return 1<<(32-s.cidr.Bits()) - 5 }

// allocateIP hands out the subnet's next free private address. It skips
// pinned addresses and those in IPv4 prefixes delegated to network
// interfaces: EC2 never gives an address inside someone's /28 to anyone else.
func (s *subnet) allocateIP() (string, error) {
	base := binary.BigEndian.Uint32(s.cidr.Addr().AsSlice())
	for {
		if s.allocated >= s.capacity() {
			return "", apiErr("InsufficientFreeAddressesInSubnet", "Insufficient free IP addresses in subnet %s", s.id)
		}
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], base+4+s.allocated)
		s.allocated++
		addr := netip.AddrFrom4(b)
		if ip := addr.String(); !s.pinned[ip] && s.ipv4PrefixHolder(addr) == "" {
			return ip, nil
		}
	}
}

// availableIPs is DescribeSubnets' availableIpAddressCount. allocateIP
// hands addresses out in order and never takes them back, so everything
// below its cursor counts as used (delegated /28s it skipped included);
// what delegated /28s hold above the cursor is used too.
func (s *subnet) availableIPs() uint32 {
	used := s.allocated
	base := binary.BigEndian.Uint32(s.cidr.Addr().AsSlice())
	cursor := 4 + s.allocated // offset of the next address allocateIP tries
	for p := range s.ipv4Prefixes {
		start := binary.BigEndian.Uint32(p.Addr().AsSlice()) - base
		if end := start + ipv4PrefixSize; end > cursor {
			used += end - max(start, cursor)
		}
	}
	return s.capacity() - min(used, s.capacity())
}

// --- DescribeAvailabilityZones ---

type xmlAvailabilityZone struct {
	ZoneName           string `xml:"zoneName"`
	ZoneID             string `xml:"zoneId"`
	ZoneState          string `xml:"zoneState"`
	RegionName         string `xml:"regionName"`
	GroupName          string `xml:"groupName"`
	NetworkBorderGroup string `xml:"networkBorderGroup"`
	OptInStatus        string `xml:"optInStatus"`
	ZoneType           string `xml:"zoneType"`
}

type describeAvailabilityZonesResponse struct {
	Zones []xmlAvailabilityZone `xml:"availabilityZoneInfo>item"`
}

var zoneFields = fields[xmlAvailabilityZone]{
	"zone-name":   func(z xmlAvailabilityZone) []string { return []string{z.ZoneName} },
	"zone-id":     func(z xmlAvailabilityZone) []string { return []string{z.ZoneID} },
	"state":       func(z xmlAvailabilityZone) []string { return []string{z.ZoneState} },
	"region-name": func(z xmlAvailabilityZone) []string { return []string{z.RegionName} },
	"zone-type":   func(z xmlAvailabilityZone) []string { return []string{z.ZoneType} },
	"group-name":  func(z xmlAvailabilityZone) []string { return []string{z.GroupName} },
}

func (e *Emulator) describeAvailabilityZones(p params) (any, error) {
	var zones []xmlAvailabilityZone
	for _, z := range e.cfg.Zones {
		zones = append(zones, xmlAvailabilityZone{
			ZoneName: z, ZoneID: e.zoneID(z), ZoneState: "available", RegionName: e.cfg.Region,
			GroupName: e.cfg.Region, NetworkBorderGroup: e.cfg.Region,
			OptInStatus: "opt-in-not-required", ZoneType: "availability-zone",
		})
	}
	names, ids := p.list("ZoneName"), p.list("ZoneId")
	for _, n := range names {
		if e.zoneID(n) == "" {
			return nil, invalidValue("ZoneName", n, fmt.Sprintf("The zone '%s' does not exist in region %s.", n, e.cfg.Region))
		}
	}
	for _, id := range ids {
		found := false
		for _, z := range zones {
			found = found || z.ZoneID == id
		}
		if !found {
			return nil, invalidValue("ZoneId", id, fmt.Sprintf("The zone ID '%s' does not exist in region %s.", id, e.cfg.Region))
		}
	}
	zones = slices.DeleteFunc(zones, func(z xmlAvailabilityZone) bool {
		return len(names) > 0 && !slices.Contains(names, z.ZoneName) || len(ids) > 0 && !slices.Contains(ids, z.ZoneID)
	})
	match, err := ec2Filter(p, zoneFields, func(xmlAvailabilityZone) map[string]string { return nil })
	if err != nil {
		return nil, err
	}
	return describeAvailabilityZonesResponse{Zones: cloudsim.Filter(zones, match)}, nil
}

// --- DescribeVpcs ---

type xmlVpc struct {
	VpcID           string                  `xml:"vpcId"`
	OwnerID         string                  `xml:"ownerId"`
	State           string                  `xml:"state"`
	CidrBlock       string                  `xml:"cidrBlock"`
	CidrAssociation xmlCidrAssociation      `xml:"cidrBlockAssociationSet>item"`
	IPv6Association []xmlVpcIPv6Association `xml:"ipv6CidrBlockAssociationSet>item"`
	DhcpOptionsID   string                  `xml:"dhcpOptionsId"`
	InstanceTenancy string                  `xml:"instanceTenancy"`
	IsDefault       bool                    `xml:"isDefault"`
	Tags            []ec2Tag                `xml:"tagSet>item"`
}

// xmlVpcIPv6Association is a VpcIpv6CidrBlockAssociation of an
// Amazon-provided block.
type xmlVpcIPv6Association struct {
	AssociationID        string `xml:"associationId"`
	IPv6CidrBlock        string `xml:"ipv6CidrBlock"`
	State                string `xml:"ipv6CidrBlockState>state"`
	NetworkBorderGroup   string `xml:"networkBorderGroup"`
	IPv6Pool             string `xml:"ipv6Pool"`
	IPSource             string `xml:"ipSource"`
	IPv6AddressAttribute string `xml:"ipv6AddressAttribute"`
}

type xmlCidrAssociation struct {
	AssociationID string `xml:"associationId"`
	CidrBlock     string `xml:"cidrBlock"`
	State         string `xml:"cidrBlockState>state"`
}

type describeVpcsResponse struct {
	Vpcs      []xmlVpc `xml:"vpcSet>item"`
	NextToken string   `xml:"nextToken,omitempty"`
}

var vpcFields = fields[*vpc]{
	"vpc-id":                            func(v *vpc) []string { return []string{v.id} },
	"cidr":                              func(v *vpc) []string { return []string{v.cidr.String()} },
	"cidr-block-association.cidr-block": func(v *vpc) []string { return []string{v.cidr.String()} },
	"state":                             func(*vpc) []string { return []string{"available"} },
	"is-default":                        func(*vpc) []string { return []string{"false"} },
	"owner-id":                          func(*vpc) []string { return nil },
	"ipv6-cidr-block-association.ipv6-cidr-block": func(v *vpc) []string { return prefixValue(v.ipv6CIDR) },
	"ipv6-cidr-block-association.association-id": func(v *vpc) []string {
		if !v.ipv6CIDR.IsValid() {
			return nil
		}
		return []string{vpcIPv6AssociationID(v.id)}
	},
	"ipv6-cidr-block-association.state": func(v *vpc) []string {
		if !v.ipv6CIDR.IsValid() {
			return nil
		}
		return []string{"associated"}
	},
}

// prefixValue is a filter's value for an optional CIDR block.
func prefixValue(p netip.Prefix) []string {
	if !p.IsValid() {
		return nil
	}
	return []string{p.String()}
}

func (e *Emulator) describeVpcs(p params) (any, error) {
	vpcs, next, err := ec2Describe(e.vpcs, p, p.list("VpcId"), notFound{"InvalidVpcID.NotFound", "The vpc ID %s does not exist"},
		vpcFields, func(v *vpc) map[string]string { return v.tags })
	if err != nil {
		return nil, err
	}
	resp := describeVpcsResponse{NextToken: next}
	for _, v := range vpcs {
		resp.Vpcs = append(resp.Vpcs, xmlVpc{
			VpcID: v.id, OwnerID: e.cfg.AccountID, State: "available", CidrBlock: v.cidr.String(),
			CidrAssociation: xmlCidrAssociation{AssociationID: "vpc-cidr-assoc-" + v.id[4:], CidrBlock: v.cidr.String(), State: "associated"},
			DhcpOptionsID:   "dopt-00000000000000001", InstanceTenancy: "default", Tags: ec2Tags(v.tags),
		})
		if v.ipv6CIDR.IsValid() {
			resp.Vpcs[len(resp.Vpcs)-1].IPv6Association = []xmlVpcIPv6Association{{
				AssociationID: vpcIPv6AssociationID(v.id), IPv6CidrBlock: v.ipv6CIDR.String(), State: "associated",
				NetworkBorderGroup: e.cfg.Region, IPv6Pool: "Amazon", IPSource: "amazon", IPv6AddressAttribute: "public",
			}}
		}
	}
	return resp, nil
}

// --- DescribeSubnets ---

type xmlSubnet struct {
	SubnetID                string `xml:"subnetId"`
	SubnetArn               string `xml:"subnetArn"`
	State                   string `xml:"state"`
	OwnerID                 string `xml:"ownerId"`
	VpcID                   string `xml:"vpcId"`
	CidrBlock               string `xml:"cidrBlock"`
	AvailableIPAddressCount uint32 `xml:"availableIpAddressCount"`
	AvailabilityZone        string `xml:"availabilityZone"`
	AvailabilityZoneID      string `xml:"availabilityZoneId"`
	DefaultForAz            bool   `xml:"defaultForAz"`
	MapPublicIPOnLaunch     bool   `xml:"mapPublicIpOnLaunch"`
	// AssignIPv6AddressOnCreation and IPv6Native are always false: no
	// subnet here hands out IPv6 addresses unasked or lacks IPv4.
	AssignIPv6AddressOnCreation bool                       `xml:"assignIpv6AddressOnCreation"`
	IPv6Native                  bool                       `xml:"ipv6Native"`
	IPv6Associations            []xmlSubnetIPv6Association `xml:"ipv6CidrBlockAssociationSet>item"`
	Tags                        []ec2Tag                   `xml:"tagSet>item"`
}

// xmlSubnetIPv6Association is a SubnetIpv6CidrBlockAssociation.
type xmlSubnetIPv6Association struct {
	AssociationID        string `xml:"associationId"`
	IPv6CidrBlock        string `xml:"ipv6CidrBlock"`
	State                string `xml:"ipv6CidrBlockState>state"`
	IPSource             string `xml:"ipSource"`
	IPv6AddressAttribute string `xml:"ipv6AddressAttribute"`
}

type describeSubnetsResponse struct {
	Subnets   []xmlSubnet `xml:"subnetSet>item"`
	NextToken string      `xml:"nextToken,omitempty"`
}

func (e *Emulator) subnetFields() fields[*subnet] {
	return fields[*subnet]{
		"subnet-id":            func(s *subnet) []string { return []string{s.id} },
		"vpc-id":               func(s *subnet) []string { return []string{s.vpcID} },
		"availability-zone":    func(s *subnet) []string { return []string{s.zone} },
		"availability-zone-id": func(s *subnet) []string { return []string{e.zoneID(s.zone)} },
		"cidr-block":           func(s *subnet) []string { return []string{s.cidr.String()} },
		"state":                func(*subnet) []string { return []string{"available"} },
		"default-for-az":       func(*subnet) []string { return []string{"false"} },
		"map-public-ip-on-launch": func(s *subnet) []string {
			return []string{fmt.Sprint(s.mapPublicIP)}
		},
		"assign-ipv6-address-on-creation":             func(*subnet) []string { return []string{"false"} },
		"ipv6-native":                                 func(*subnet) []string { return []string{"false"} },
		"ipv6-cidr-block-association.ipv6-cidr-block": func(s *subnet) []string { return prefixValue(s.ipv6CIDR) },
		"ipv6-cidr-block-association.association-id": func(s *subnet) []string {
			if !s.ipv6CIDR.IsValid() {
				return nil
			}
			return []string{subnetIPv6AssociationID(s.id)}
		},
		"ipv6-cidr-block-association.state": func(s *subnet) []string {
			if !s.ipv6CIDR.IsValid() {
				return nil
			}
			return []string{"associated"}
		},
	}
}

func (e *Emulator) describeSubnets(p params) (any, error) {
	subnets, next, err := ec2Describe(e.subnets, p, p.list("SubnetId"), notFound{"InvalidSubnetID.NotFound", "The subnet ID %s does not exist"},
		e.subnetFields(), func(s *subnet) map[string]string { return s.tags })
	if err != nil {
		return nil, err
	}
	resp := describeSubnetsResponse{NextToken: next}
	for _, s := range subnets {
		resp.Subnets = append(resp.Subnets, xmlSubnet{
			SubnetID:  s.id,
			SubnetArn: fmt.Sprintf("arn:aws:ec2:%s:%s:subnet/%s", e.cfg.Region, e.cfg.AccountID, s.id),
			State:     "available", OwnerID: e.cfg.AccountID, VpcID: s.vpcID, CidrBlock: s.cidr.String(),
			AvailableIPAddressCount: s.availableIPs(),
			AvailabilityZone:        s.zone, AvailabilityZoneID: e.zoneID(s.zone),
			MapPublicIPOnLaunch: s.mapPublicIP, Tags: ec2Tags(s.tags),
		})
		if s.ipv6CIDR.IsValid() {
			resp.Subnets[len(resp.Subnets)-1].IPv6Associations = []xmlSubnetIPv6Association{{
				AssociationID: subnetIPv6AssociationID(s.id), IPv6CidrBlock: s.ipv6CIDR.String(), State: "associated",
				IPSource: "amazon", IPv6AddressAttribute: "public",
			}}
		}
	}
	return resp, nil
}

func copyTags(tags map[string]string) map[string]string {
	out := make(map[string]string, len(tags))
	for k, v := range tags {
		out[k] = v
	}
	return out
}
