package aws

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// Instance states and their EC2 codes.
const (
	statePending      = "pending"
	stateRunning      = "running"
	stateShuttingDown = "shutting-down"
	stateTerminated   = "terminated"
	stateStopping     = "stopping"
	stateStopped      = "stopped"
)

var stateCodes = map[string]int{
	statePending: 0, stateRunning: 16, stateShuttingDown: 32,
	stateTerminated: 48, stateStopping: 64, stateStopped: 80,
}

type instance struct {
	id             string
	reservationID  string
	instanceType   string
	zone           string
	state          string
	subnetID       string
	vpcID          string
	privateIP      string
	publicIP       string
	wantsPublicIP  bool // gets a fresh public IP on every start, like EC2
	eniID          string
	mac            string
	securityGroups []string
	launchTime     time.Time
	tags           map[string]string
	// srcDstCheckOff is set by ModifyInstanceAttribute SourceDestCheck=false,
	// which instances that route pod traffic need.
	srcDstCheckOff bool
}

// instanceParam validates an instance ID and looks it up, with EC2's
// distinction between malformed and unknown IDs.
func (e *Emulator) instanceParam(id string) (*instance, error) {
	if !instanceIDPattern.MatchString(id) {
		return nil, apiErr("InvalidInstanceID.Malformed", "Invalid id: %q", id)
	}
	inst, ok := e.instances.Get(id)
	if !ok {
		return nil, apiErr("InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", id)
	}
	return inst, nil
}

func (e *Emulator) allocatePublicIP() string {
	e.publicIPs++
	// 100.64.0.0/10 is shared address space: realistic-looking, never
	// anyone's real public address.
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], 0x64400000+e.publicIPs) // 100.64.0.0 + n
	return netip.AddrFrom4(b).String()
}

// setState moves an instance to state with EC2's side effects: stopping
// releases the public IP, starting gets a new one, terminating releases
// every address (the instance stays listed until removed).
func (e *Emulator) setState(inst *instance, state string) {
	inst.state = state
	switch state {
	case stateStopped, stateStopping:
		inst.publicIP = ""
	case stateRunning, statePending:
		if inst.wantsPublicIP && inst.publicIP == "" && inst.privateIP != "" {
			inst.publicIP = e.allocatePublicIP()
		}
	case stateTerminated, stateShuttingDown:
		inst.publicIP = ""
		if state == stateTerminated {
			// The primary interface goes with the instance
			// (DeleteOnTermination), and with it its prefixes.
			e.deleteInterface(inst)
			inst.privateIP, inst.subnetID, inst.vpcID, inst.eniID, inst.securityGroups = "", "", "", "", nil
		}
	}
}

// --- DescribeInstances ---

type xmlInstanceState struct {
	Code int    `xml:"code"`
	Name string `xml:"name"`
}

type xmlGroupIdentifier struct {
	GroupID   string `xml:"groupId"`
	GroupName string `xml:"groupName"`
}

type xmlPlacement struct {
	AvailabilityZone   string `xml:"availabilityZone"`
	AvailabilityZoneID string `xml:"availabilityZoneId"`
	GroupName          string `xml:"groupName"`
	Tenancy            string `xml:"tenancy"`
}

type xmlAssociation struct {
	PublicIP      string `xml:"publicIp"`
	PublicDNSName string `xml:"publicDnsName"`
	IPOwnerID     string `xml:"ipOwnerId"`
}

type xmlNetworkInterface struct {
	NetworkInterfaceID string               `xml:"networkInterfaceId"`
	SubnetID           string               `xml:"subnetId"`
	VpcID              string               `xml:"vpcId"`
	OwnerID            string               `xml:"ownerId"`
	Status             string               `xml:"status"`
	MacAddress         string               `xml:"macAddress"`
	PrivateIPAddress   string               `xml:"privateIpAddress"`
	PrivateDNSName     string               `xml:"privateDnsName"`
	SourceDestCheck    bool                 `xml:"sourceDestCheck"`
	InterfaceType      string               `xml:"interfaceType"`
	Groups             []xmlGroupIdentifier `xml:"groupSet>item"`
	Attachment         struct {
		AttachmentID        string `xml:"attachmentId"`
		DeviceIndex         int    `xml:"deviceIndex"`
		Status              string `xml:"status"`
		DeleteOnTermination bool   `xml:"deleteOnTermination"`
	} `xml:"attachment"`
	Association *xmlAssociation `xml:"association,omitempty"`
	// PrivateIPs lists every address of the interface, the primary one
	// included; clients (the upstream AWS CCM among them) read node
	// addresses from here rather than from the instance's own fields.
	PrivateIPs []xmlPrivateIPAddress `xml:"privateIpAddressesSet>item"`
	// What the interface holds beyond its primary address
	// (ec2_interfaces.go); node IPAM controllers read pod CIDRs from the
	// prefix sets.
	IPv6Addresses []xmlIPv6Address `xml:"ipv6AddressesSet>item"`
	IPv4Prefixes  []xmlIPv4Prefix  `xml:"ipv4PrefixSet>item"`
	IPv6Prefixes  []xmlIPv6Prefix  `xml:"ipv6PrefixSet>item"`
}

type xmlPrivateIPAddress struct {
	PrivateIPAddress string          `xml:"privateIpAddress"`
	PrivateDNSName   string          `xml:"privateDnsName"`
	Primary          bool            `xml:"primary"`
	Association      *xmlAssociation `xml:"association,omitempty"`
}

type xmlInstance struct {
	InstanceID         string                `xml:"instanceId"`
	ImageID            string                `xml:"imageId"`
	State              xmlInstanceState      `xml:"instanceState"`
	PrivateDNSName     string                `xml:"privateDnsName"`
	DNSName            string                `xml:"dnsName"`
	InstanceType       string                `xml:"instanceType"`
	LaunchTime         string                `xml:"launchTime"`
	Placement          xmlPlacement          `xml:"placement"`
	SubnetID           string                `xml:"subnetId,omitempty"`
	VpcID              string                `xml:"vpcId,omitempty"`
	PrivateIPAddress   string                `xml:"privateIpAddress,omitempty"`
	IPAddress          string                `xml:"ipAddress,omitempty"`
	SourceDestCheck    bool                  `xml:"sourceDestCheck"`
	Groups             []xmlGroupIdentifier  `xml:"groupSet>item"`
	Architecture       string                `xml:"architecture"`
	RootDeviceType     string                `xml:"rootDeviceType"`
	VirtualizationType string                `xml:"virtualizationType"`
	Hypervisor         string                `xml:"hypervisor"`
	Tags               []ec2Tag              `xml:"tagSet>item"`
	NetworkInterfaces  []xmlNetworkInterface `xml:"networkInterfaceSet>item"`
}

type xmlReservation struct {
	ReservationID string        `xml:"reservationId"`
	OwnerID       string        `xml:"ownerId"`
	Instances     []xmlInstance `xml:"instancesSet>item"`
}

type describeInstancesResponse struct {
	Reservations []xmlReservation `xml:"reservationSet>item"`
	NextToken    string           `xml:"nextToken,omitempty"`
}

func (e *Emulator) instanceFields() fields[*instance] {
	one := func(f func(*instance) string) func(*instance) []string {
		return func(i *instance) []string {
			if v := f(i); v != "" {
				return []string{v}
			}
			return nil
		}
	}
	return fields[*instance]{
		"instance-id":         one(func(i *instance) string { return i.id }),
		"private-dns-name":    one(func(i *instance) string { return privateDNSName(e.cfg.Region, i.privateIP) }),
		"private-ip-address":  one(func(i *instance) string { return i.privateIP }),
		"ip-address":          one(func(i *instance) string { return i.publicIP }),
		"dns-name":            one(func(i *instance) string { return e.publicDNS(i) }),
		"vpc-id":              one(func(i *instance) string { return i.vpcID }),
		"subnet-id":           one(func(i *instance) string { return i.subnetID }),
		"instance-state-name": one(func(i *instance) string { return i.state }),
		"instance-state-code": one(func(i *instance) string { return strconv.Itoa(stateCodes[i.state]) }),
		"instance-type":       one(func(i *instance) string { return i.instanceType }),
		"availability-zone":   one(func(i *instance) string { return i.zone }),
		"reservation-id":      one(func(i *instance) string { return i.reservationID }),
		"instance.group-id":   func(i *instance) []string { return i.securityGroups },
		"instance.group-name": func(i *instance) []string {
			var names []string
			for _, id := range i.securityGroups {
				if sg, ok := e.securityGroups.Get(id); ok {
					names = append(names, sg.name)
				}
			}
			return names
		},
	}
}

func (e *Emulator) publicDNS(i *instance) string {
	if i.publicIP == "" {
		return ""
	}
	return publicDNSName(e.cfg.Region, i.publicIP)
}

var notFoundInstances = notFound{"InvalidInstanceID.NotFound", "The instance ID %s does not exist"}

func (e *Emulator) describeInstances(p params) (any, error) {
	ids := p.list("InstanceId")
	if len(ids) > 0 && p.get("MaxResults") != "" {
		return nil, apiErr("InvalidParameterCombination", "The parameter instancesSet cannot be used with the parameter maxResults")
	}
	var notFound []string
	for _, id := range ids {
		if _, err := e.instanceParam(id); err != nil {
			if err.(*apiError).Code == "InvalidInstanceID.Malformed" {
				return nil, err
			}
			notFound = append(notFound, id)
		}
	}
	if len(notFound) == 1 {
		return nil, apiErr(notFoundInstances.code, notFoundInstances.format, quoteList(notFound))
	} else if len(notFound) > 1 {
		return nil, apiErr(notFoundInstances.code, "The instance IDs %s do not exist", quoteList(notFound))
	}
	insts, next, err := ec2Describe(e.instances, p, ids, notFoundInstances, e.instanceFields(), func(i *instance) map[string]string { return i.tags })
	if err != nil {
		return nil, err
	}
	resp := describeInstancesResponse{NextToken: next}
	// Instances launched together share a reservation; keep them grouped.
	for _, inst := range insts {
		n := len(resp.Reservations)
		if n == 0 || resp.Reservations[n-1].ReservationID != inst.reservationID {
			resp.Reservations = append(resp.Reservations, xmlReservation{ReservationID: inst.reservationID, OwnerID: e.cfg.AccountID})
			n++
		}
		resp.Reservations[n-1].Instances = append(resp.Reservations[n-1].Instances, e.xmlInstance(inst))
	}
	return resp, nil
}

func (e *Emulator) xmlInstance(i *instance) xmlInstance {
	x := xmlInstance{
		InstanceID:         i.id,
		ImageID:            "ami-0cafe0000000000a1",
		State:              xmlInstanceState{Code: stateCodes[i.state], Name: i.state},
		PrivateDNSName:     privateDNSName(e.cfg.Region, i.privateIP),
		DNSName:            e.publicDNS(i),
		InstanceType:       i.instanceType,
		LaunchTime:         awsTime(i.launchTime),
		Placement:          xmlPlacement{AvailabilityZone: i.zone, AvailabilityZoneID: e.zoneID(i.zone), Tenancy: "default"},
		SubnetID:           i.subnetID,
		VpcID:              i.vpcID,
		PrivateIPAddress:   i.privateIP,
		IPAddress:          i.publicIP,
		SourceDestCheck:    !i.srcDstCheckOff,
		Groups:             e.groupIdentifiers(i.securityGroups),
		Architecture:       "x86_64",
		RootDeviceType:     "ebs",
		VirtualizationType: "hvm",
		Hypervisor:         "xen",
		Tags:               ec2Tags(i.tags),
	}
	if i.eniID != "" {
		ni := xmlNetworkInterface{
			NetworkInterfaceID: i.eniID, SubnetID: i.subnetID, VpcID: i.vpcID, OwnerID: e.cfg.AccountID,
			Status: "in-use", MacAddress: i.mac, PrivateIPAddress: i.privateIP, PrivateDNSName: x.PrivateDNSName,
			SourceDestCheck: !i.srcDstCheckOff, InterfaceType: "interface", Groups: x.Groups,
		}
		ni.Attachment.AttachmentID = "eni-attach-" + i.eniID[4:]
		ni.Attachment.Status = "attached"
		ni.Attachment.DeleteOnTermination = true
		if i.publicIP != "" {
			ni.Association = &xmlAssociation{PublicIP: i.publicIP, PublicDNSName: x.DNSName, IPOwnerID: "amazon"}
		}
		// One address per interface: the primary, carrying the public
		// address's association as EC2 reports it on both levels.
		ni.PrivateIPs = []xmlPrivateIPAddress{{
			PrivateIPAddress: i.privateIP, PrivateDNSName: x.PrivateDNSName, Primary: true, Association: ni.Association,
		}}
		if n, ok := e.networkInterfaces.Get(i.eniID); ok {
			ni.IPv6Addresses, ni.IPv4Prefixes, ni.IPv6Prefixes = n.delegated()
		}
		x.NetworkInterfaces = []xmlNetworkInterface{ni}
	}
	return x
}

func (e *Emulator) groupIdentifiers(ids []string) []xmlGroupIdentifier {
	var out []xmlGroupIdentifier
	for _, id := range ids {
		if sg, ok := e.securityGroups.Get(id); ok {
			out = append(out, xmlGroupIdentifier{GroupID: sg.id, GroupName: sg.name})
		}
	}
	return out
}

// --- launching, for the admin API ---

// LaunchSpec describes instances to launch through the admin API.
type LaunchSpec struct {
	// Count of instances, default 1.
	Count int `json:"count,omitempty"`
	// Zone to launch in; empty spreads instances round-robin over zones.
	Zone string `json:"zone,omitempty"`
	// SubnetID overrides Zone. Without it the instance goes to a subnet in
	// its zone tagged kubernetes.io/role/internal-elb (private), or
	// kubernetes.io/role/elb (public) when PublicIP is set.
	SubnetID string `json:"subnetId,omitempty"`
	// InstanceType, default "m5.large".
	InstanceType string `json:"instanceType,omitempty"`
	// PublicIP gives each instance a public address and DNS name.
	PublicIP bool `json:"publicIp,omitempty"`
	// SecurityGroupIDs, default the fixture's node security group, if any.
	SecurityGroupIDs []string `json:"securityGroupIds,omitempty"`
	// Tags for every instance.
	Tags map[string]string `json:"tags,omitempty"`
	// State to launch in, default "running".
	State string `json:"state,omitempty"`
	// PodRanges are prefixes to delegate to each instance's primary
	// interface, as AssignPrivateIpAddresses (Ipv4Prefix) and
	// AssignIpv6Addresses (Ipv6Prefix) would: "/28" or "/80" for a free
	// IPv4 /28 or IPv6 /80 of the subnet, or that CIDR itself (then Count
	// must be 1). IPv6 needs a subnet with an IPv6 block, which the
	// fixture's all have. EC2 delegates no other sizes.
	PodRanges []string `json:"podRanges,omitempty"`
	// IPv6 gives each instance's primary interface an IPv6 address from
	// its subnet's block, as a subnet with AssignIpv6AddressOnCreation
	// does; the subnet must have an IPv6 block.
	IPv6 bool `json:"ipv6,omitempty"`
}

func (e *Emulator) launch(spec LaunchSpec) ([]string, error) {
	if spec.Count == 0 {
		spec.Count = 1
	}
	if spec.Count < 0 || spec.Count > 1000 {
		return nil, fmt.Errorf("count %d out of range 1..1000", spec.Count)
	}
	if spec.InstanceType == "" {
		spec.InstanceType = "m5.large"
	}
	if spec.State == "" {
		spec.State = stateRunning
	}
	if _, ok := stateCodes[spec.State]; !ok || spec.State == stateTerminated {
		return nil, fmt.Errorf("cannot launch in state %q", spec.State)
	}
	if spec.Zone != "" && e.zoneID(spec.Zone) == "" {
		return nil, fmt.Errorf("unknown zone %q", spec.Zone)
	}
	for _, id := range spec.SecurityGroupIDs {
		if _, ok := e.securityGroups.Get(id); !ok {
			return nil, fmt.Errorf("unknown security group %q", id)
		}
	}
	ranges, err := parsePodRanges(spec.PodRanges)
	if err != nil {
		return nil, err
	}
	// Resolve every subnet before creating anything, so a bad spec launches nothing.
	subnets := make([]*subnet, spec.Count)
	for n := range subnets {
		s, err := e.pickSubnet(spec, n)
		if err != nil {
			return nil, err
		}
		subnets[n] = s
	}
	if err := e.checkPodRanges(ranges, subnets); err != nil {
		return nil, err
	}
	if spec.IPv6 {
		for _, s := range subnets {
			if !s.ipv6CIDR.IsValid() {
				return nil, fmt.Errorf("subnet %s has no IPv6 CIDR block for the instances' IPv6 addresses: %w", s.id, cloudsim.ErrInvalidRequest)
			}
		}
	}
	reservationID, _ := e.newID("r")
	var ids []string
	for _, s := range subnets {
		ip, err := s.allocateIP()
		if err != nil {
			return ids, err
		}
		// Prefixes are chosen before the instance exists, so that running
		// out of /28s leaves no instance without the ranges it asked for.
		v4, v6, err := e.pickPodRanges(s, ranges, ip)
		if err != nil {
			return ids, err
		}
		id, _ := e.newID("i")
		eni, eniSeq := e.newID("eni")
		groups := spec.SecurityGroupIDs
		if len(groups) == 0 && e.fixture.NodeSecurityGroupID != "" && e.fixture.VPCID == s.vpcID {
			groups = []string{e.fixture.NodeSecurityGroupID}
		}
		inst := &instance{
			id: id, reservationID: reservationID, instanceType: spec.InstanceType,
			zone: s.zone, subnetID: s.id, vpcID: s.vpcID, privateIP: ip,
			wantsPublicIP: spec.PublicIP, eniID: eni, mac: fmt.Sprintf("02:00:00:%02x:%02x:%02x", byte(eniSeq>>16), byte(eniSeq>>8), byte(eniSeq)),
			securityGroups: slices.Clone(groups), launchTime: e.now(), tags: copyTags(spec.Tags),
		}
		e.instances.Put(inst)
		iface := e.createInterface(inst)
		for _, p := range v4 {
			iface.holdIPv4Prefix(s, p)
		}
		for _, p := range v6 {
			iface.holdIPv6Prefix(s, p)
		}
		if spec.IPv6 {
			iface.holdIPv6Addr(s, s.freeIPv6Addrs(1, map[netip.Addr]bool{})[0])
		}
		e.setState(inst, spec.State)
		ids = append(ids, id)
	}
	return ids, nil
}

func (e *Emulator) pickSubnet(spec LaunchSpec, n int) (*subnet, error) {
	if spec.SubnetID != "" {
		s, ok := e.subnets.Get(spec.SubnetID)
		if !ok {
			return nil, fmt.Errorf("unknown subnet %q", spec.SubnetID)
		}
		return s, nil
	}
	zone := spec.Zone
	if zone == "" {
		zone = e.cfg.Zones[(e.instances.Len()+n)%len(e.cfg.Zones)]
	}
	role := "kubernetes.io/role/internal-elb"
	if spec.PublicIP {
		role = "kubernetes.io/role/elb"
	}
	var fallback *subnet
	for _, s := range e.subnets.All() {
		if s.zone != zone {
			continue
		}
		if _, ok := s.tags[role]; ok {
			return s, nil
		}
		if fallback == nil {
			fallback = s
		}
	}
	if fallback == nil {
		return nil, fmt.Errorf("no subnet in zone %s", zone)
	}
	return fallback, nil
}

// modifyInstanceAttribute supports the one attribute a CCM changes: the
// source/destination check, off for instances that are route targets.
func (e *Emulator) modifyInstanceAttribute(p params) (any, error) {
	id := p.get("InstanceId")
	if id == "" {
		return nil, missing("InstanceId")
	}
	i, err := e.instanceParam(id)
	if err != nil {
		return nil, err
	}
	v := p.get("SourceDestCheck.Value")
	switch v {
	case "true":
		i.srcDstCheckOff = false
	case "false":
		i.srcDstCheckOff = true
	case "":
		return nil, apiErr("InvalidParameterCombination", "only SourceDestCheck is supported by this emulator")
	default:
		return nil, apiErr("InvalidParameterValue", "Value (%s) for parameter SourceDestCheck is invalid", v)
	}
	return returnResponse{Return: true}, nil
}
