package aws

import (
	"math/bits"
	"net/netip"
)

// Fixture names what NewDefault builds. Every object but the VPC's
// "default" security group carries the cluster tag (value "owned") and a
// Name tag.
type Fixture struct {
	// VPCID is the VPC, CIDR 10.0.0.0/16, Name "<cluster>-vpc".
	VPCID   string `json:"vpcId"`
	VPCCIDR string `json:"vpcCidr"`
	// VPCIPv6CIDR is the VPC's Amazon-provided IPv6 /56 (from
	// 2001:db8::/32, the documentation range).
	VPCIPv6CIDR string `json:"vpcIpv6Cidr"`
	// PublicSubnets and PrivateSubnets map zone names to subnet IDs. Public
	// subnets ("<cluster>-public-<zone>") are tagged kubernetes.io/role/elb=1
	// and map public IPs on launch; private ones ("<cluster>-private-<zone>")
	// are tagged kubernetes.io/role/internal-elb=1. Every one has an IPv6
	// /64 of the VPC's /56, in the order of their IPv4 ranges (private
	// ones first), so their interfaces can be delegated IPv6 /80s.
	PublicSubnets  map[string]string `json:"publicSubnets"`
	PrivateSubnets map[string]string `json:"privateSubnets"`
	// RouteTableID is the VPC's main route table, Name "<cluster>-rtb",
	// which the private subnets use implicitly; a CCM programs pod routes
	// into it.
	RouteTableID string `json:"routeTableId"`
	// InternetGatewayID is the VPC's internet gateway, "<cluster>-igw".
	InternetGatewayID string `json:"internetGatewayId"`
	// PublicRouteTableID, "<cluster>-public-rtb", is explicitly associated
	// with every public subnet and routes 0.0.0.0/0 to the internet
	// gateway: that route is what makes a subnet public to clients that
	// check (the upstream AWS CCM does), not its tags. It carries no
	// cluster tag, so a CCM discovering route tables by that tag programs
	// pod routes into RouteTableID alone, as before the table existed.
	PublicRouteTableID string `json:"publicRouteTableId"`
	// NodeSecurityGroupID is "<cluster>-node", allowing all traffic from
	// itself; launched instances get it by default.
	NodeSecurityGroupID string `json:"nodeSecurityGroupId"`
	// DefaultSecurityGroupID is the VPC's untagged "default" group.
	DefaultSecurityGroupID string `json:"defaultSecurityGroupId"`
	// ClusterTagKey is kubernetes.io/cluster/<ClusterID>.
	ClusterTagKey string `json:"clusterTagKey"`
}

// NewDefault returns an emulator with one cluster's worth of network:
// see Fixture. IDs are deterministic for a given Config.
func NewDefault(cfg Config) *Emulator {
	e := New(cfg)
	e.mu.Lock()
	defer e.mu.Unlock()

	cluster := e.cfg.ClusterID
	owned := func(name string, extra ...string) map[string]string {
		tags := map[string]string{"Name": name, e.ClusterTagKey(): "owned"}
		for i := 0; i+1 < len(extra); i += 2 {
			tags[extra[i]] = extra[i+1]
		}
		return tags
	}
	vpcCIDR := netip.MustParsePrefix("10.0.0.0/16")
	v := e.createVPC(vpcCIDR, owned(cluster+"-vpc"))
	if err := e.associateVPCIPv6(v); err != nil {
		panic("cloudsim/aws: building default fixture: " + err.Error())
	}
	f := Fixture{
		VPCID: v.id, VPCCIDR: vpcCIDR.String(), VPCIPv6CIDR: v.ipv6CIDR.String(), ClusterTagKey: e.ClusterTagKey(),
		PublicSubnets: map[string]string{}, PrivateSubnets: map[string]string{},
	}

	// Split the VPC evenly: private subnets first, then public ones, each
	// as large as possible so scale tests can launch thousands of nodes.
	zones := e.cfg.Zones
	splitBits := bits.Len(uint(2*len(zones) - 1))
	prefixLen := min(vpcCIDR.Bits()+splitBits, 28)
	nth := func(i int) netip.Prefix {
		base := vpcCIDR.Addr().As4()
		offset := uint32(i) << (32 - prefixLen)
		addr := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8 | uint32(base[3])
		addr += offset
		return netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(addr >> 24), byte(addr >> 16), byte(addr >> 8), byte(addr)}), prefixLen)
	}
	for i, z := range zones {
		priv, err := e.createSubnet(v.id, z, nth(i), nthSubnetIPv6(v.ipv6CIDR, i), false, owned(cluster+"-private-"+z, "kubernetes.io/role/internal-elb", "1"))
		if err != nil {
			panic("cloudsim/aws: building default fixture: " + err.Error())
		}
		pub, err := e.createSubnet(v.id, z, nth(len(zones)+i), nthSubnetIPv6(v.ipv6CIDR, len(zones)+i), true, owned(cluster+"-public-"+z, "kubernetes.io/role/elb", "1"))
		if err != nil {
			panic("cloudsim/aws: building default fixture: " + err.Error())
		}
		f.PrivateSubnets[z], f.PublicSubnets[z] = priv.id, pub.id
	}

	for _, rt := range e.routeTables.All() {
		if rt.vpcID == v.id && rt.main {
			rt.tags = owned(cluster + "-rtb")
			f.RouteTableID = rt.id
		}
	}
	igw := e.createInternetGateway(v.id, owned(cluster+"-igw"))
	f.InternetGatewayID = igw.id
	var public []string
	for _, z := range zones {
		public = append(public, f.PublicSubnets[z])
	}
	publicRT, err := e.createRouteTable(v.id, public, map[string]string{"Name": cluster + "-public-rtb"})
	if err != nil {
		panic("cloudsim/aws: building default fixture: " + err.Error())
	}
	publicRT.routes = append(publicRT.routes, &route{destination: "0.0.0.0/0", gatewayID: igw.id, origin: "CreateRoute"})
	f.PublicRouteTableID = publicRT.id
	for _, sg := range e.securityGroups.All() {
		if sg.vpcID == v.id && sg.isDefault {
			f.DefaultSecurityGroupID = sg.id
		}
	}
	node := e.newSecurityGroup(v.id, cluster+"-node", "Kubernetes cluster "+cluster+" nodes", owned(cluster+"-node"))
	ruleID, _ := e.newID("sgr")
	node.ingress = append(node.ingress, &sgRule{id: ruleID, protocol: "-1", groupID: node.id})
	f.NodeSecurityGroupID = node.id

	e.fixture = f
	return e
}

// Fixture describes what NewDefault built; it is zero for New.
func (e *Emulator) Fixture() Fixture {
	e.mu.Lock()
	defer e.mu.Unlock()
	f := e.fixture
	f.PublicSubnets, f.PrivateSubnets = copyTags(f.PublicSubnets), copyTags(f.PrivateSubnets)
	return f
}
