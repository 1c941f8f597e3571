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
	tags map[string]string
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

func (e *Emulator) createSubnet(vpcID, zone string, cidr netip.Prefix, mapPublicIP bool, tags map[string]string) (*subnet, error) {
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
	id, _ := e.newID("subnet")
	s := &subnet{id: id, vpcID: vpcID, zone: zone, cidr: cidr, mapPublicIP: mapPublicIP, tags: copyTags(tags)}
	e.subnets.Put(s)
	return s, nil
}

// capacity is how many addresses AWS lets instances use: it reserves the
// first four and the last address of every subnet.
func (s *subnet) capacity() uint32 { return 1<<(32-s.cidr.Bits()) - 5 }

// allocateIP hands out the subnet's next free private address.
func (s *subnet) allocateIP() (string, error) {
	base := binary.BigEndian.Uint32(s.cidr.Addr().AsSlice())
	for {
		if s.allocated >= s.capacity() {
			return "", apiErr("InsufficientFreeAddressesInSubnet", "Insufficient free IP addresses in subnet %s", s.id)
		}
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], base+4+s.allocated)
		s.allocated++
		if ip := netip.AddrFrom4(b).String(); !s.pinned[ip] {
			return ip, nil
		}
	}
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
	VpcID           string             `xml:"vpcId"`
	OwnerID         string             `xml:"ownerId"`
	State           string             `xml:"state"`
	CidrBlock       string             `xml:"cidrBlock"`
	CidrAssociation xmlCidrAssociation `xml:"cidrBlockAssociationSet>item"`
	DhcpOptionsID   string             `xml:"dhcpOptionsId"`
	InstanceTenancy string             `xml:"instanceTenancy"`
	IsDefault       bool               `xml:"isDefault"`
	Tags            []ec2Tag           `xml:"tagSet>item"`
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
	}
	return resp, nil
}

// --- DescribeSubnets ---

type xmlSubnet struct {
	SubnetID                string   `xml:"subnetId"`
	SubnetArn               string   `xml:"subnetArn"`
	State                   string   `xml:"state"`
	OwnerID                 string   `xml:"ownerId"`
	VpcID                   string   `xml:"vpcId"`
	CidrBlock               string   `xml:"cidrBlock"`
	AvailableIPAddressCount uint32   `xml:"availableIpAddressCount"`
	AvailabilityZone        string   `xml:"availabilityZone"`
	AvailabilityZoneID      string   `xml:"availabilityZoneId"`
	DefaultForAz            bool     `xml:"defaultForAz"`
	MapPublicIPOnLaunch     bool     `xml:"mapPublicIpOnLaunch"`
	Tags                    []ec2Tag `xml:"tagSet>item"`
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
			AvailableIPAddressCount: s.capacity() - s.allocated,
			AvailabilityZone:        s.zone, AvailabilityZoneID: e.zoneID(s.zone),
			MapPublicIPOnLaunch: s.mapPublicIP, Tags: ec2Tags(s.tags),
		})
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
