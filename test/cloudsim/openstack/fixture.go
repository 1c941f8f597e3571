package openstack

import (
	"maps"
	"net/netip"
	"slices"
)

// image is a Glance image servers boot from; only its ID and name show.
type image struct {
	id, name string
}

// Fixture names what NewDefault builds: one domain, project, user and
// application credential (all with the member role on the project), a
// second user of the project (the operator), a
// node network with its subnet, an external network for floating IPs,
// an image and devstack's flavors. It carries the credentials, since a
// test has to authenticate with them; nothing else ever shows them.
type Fixture struct {
	// IdentityPath is Keystone's v3 endpoint below the server URL, for
	// gophercloud's IdentityEndpoint (<server URL>/identity/v3).
	IdentityPath string `json:"identityPath"`
	Region       string `json:"region"`
	// DomainID "default" and DomainName "Default", as Keystone bootstraps.
	DomainID    string `json:"domainId"`
	DomainName  string `json:"domainName"`
	ProjectID   string `json:"projectId"`
	ProjectName string `json:"projectName"`
	UserID      string `json:"userId"`
	Username    string `json:"username"`
	Password    string `json:"password"`
	// AppCredID, AppCredName and AppCredSecret are an application
	// credential of the user, scoped to the project.
	AppCredID     string `json:"appCredId"`
	AppCredName   string `json:"appCredName"`
	AppCredSecret string `json:"appCredSecret"`
	// OperatorUserID, OperatorUsername and OperatorPassword are a second
	// user with the member role on the project: another of its people
	// (an operator's openstack CLI, the upstream CCM's own credentials).
	// A policy set for the first user (cloudsim.Server.SetPolicy with
	// UserID, as Principal tells callers apart) never applies to its
	// calls, so a test harness acting as someone else calls as it.
	OperatorUserID   string `json:"operatorUserId"`
	OperatorUsername string `json:"operatorUsername"`
	OperatorPassword string `json:"operatorPassword"`
	// NetworkID/NetworkName and SubnetID/SubnetCIDR are the node network
	// ("<cluster>-nodes") every launched server has a port on.
	NetworkID   string `json:"networkId"`
	NetworkName string `json:"networkName"`
	SubnetID    string `json:"subnetId"`
	SubnetCIDR  string `json:"subnetCidr"`
	// SubnetIPv6ID/SubnetIPv6CIDR are the node network's IPv6 subnet
	// (Config.NodeIPv6CIDR), "" without one.
	SubnetIPv6ID   string `json:"subnetIpv6Id,omitempty"`
	SubnetIPv6CIDR string `json:"subnetIpv6Cidr,omitempty"`
	// ExternalNetworkID ("public") is where floating IPs come from; ""
	// with Config.NoExternalNetwork.
	ExternalNetworkID   string `json:"externalNetworkId"`
	ExternalNetworkName string `json:"externalNetworkName"`
	ExternalSubnetID    string `json:"externalSubnetId"`
	FloatingCIDR        string `json:"floatingCidr"`
	// RouterID/RouterName are the project's router ("<cluster>-router"):
	// an interface on the node subnet (its gateway address) and its
	// gateway on the external network (none without one).
	RouterID   string `json:"routerId"`
	RouterName string `json:"routerName"`
	// DefaultSecurityGroupID is the project's default security group.
	DefaultSecurityGroupID string `json:"defaultSecurityGroupId"`
	ImageID                string `json:"imageId"`
	// Flavors maps flavor names to IDs; DefaultFlavor is the name
	// launches use when they name none.
	Flavors       map[string]string `json:"flavors"`
	DefaultFlavor string            `json:"defaultFlavor"`
	Zones         []string          `json:"zones"`
}

// IdentityEndpoint is the Keystone v3 URL for a server at serverURL.
func (f Fixture) IdentityEndpoint(serverURL string) string { return serverURL + f.IdentityPath }

// defaultFlavors are devstack's m1 flavors, with their IDs.
var defaultFlavors = []FlavorSpec{
	{ID: "1", Name: "m1.tiny", VCPUs: 1, RAM: 512, Disk: 1},
	{ID: "2", Name: "m1.small", VCPUs: 1, RAM: 2048, Disk: 20},
	{ID: "3", Name: "m1.medium", VCPUs: 2, RAM: 4096, Disk: 40},
	{ID: "4", Name: "m1.large", VCPUs: 4, RAM: 8192, Disk: 80, ExtraSpecs: map[string]string{"hw:cpu_policy": "shared"}},
	{ID: "5", Name: "m1.xlarge", VCPUs: 8, RAM: 16384, Disk: 160},
}

// NewDefault returns an emulator with the fixture a cluster needs: see
// Fixture. IDs and secrets are deterministic for a given Config.
func NewDefault(cfg Config) *Emulator {
	e := New(cfg)
	e.mu.Lock()
	defer e.mu.Unlock()
	must := func(err error) {
		if err != nil {
			panic("cloudsim/openstack: building default fixture: " + err.Error())
		}
	}

	d := &domain{id: "default", name: "Default"}
	e.domains.Put(d)
	p := &project{id: e.ids.hex32(), name: "k8s", domainID: d.id}
	e.projects.Put(p)
	u := &user{
		id: e.ids.hex32(), name: "ccm", domainID: d.id, password: "ccm-pw-" + e.ids.hex32()[:16],
		defaultProjectID: p.id, projects: map[string]bool{p.id: true},
	}
	e.users.Put(u)
	ac := &appCred{id: e.ids.hex32(), name: "ccm-appcred", secret: "appcred-" + e.ids.hex32(), userID: u.id, projectID: p.id}
	e.appCreds.Put(ac)

	f := Fixture{
		IdentityPath: keystonePrefix + "/v3", Region: e.cfg.Region,
		DomainID: d.id, DomainName: d.name, ProjectID: p.id, ProjectName: p.name,
		UserID: u.id, Username: u.name, Password: u.password,
		AppCredID: ac.id, AppCredName: ac.name, AppCredSecret: ac.secret,
		Flavors: map[string]string{}, DefaultFlavor: "m1.small", Zones: e.Zones(),
	}

	nodeCIDR, err := netip.ParsePrefix(e.cfg.NodeCIDR)
	must(err)
	n := e.createNetwork(e.cfg.ClusterID+"-nodes", p.id, false)
	s, err := e.createSubnet(n.id, e.cfg.ClusterID+"-nodes-subnet", p.id, nodeCIDR, "", "")
	must(err)
	f.NetworkID, f.NetworkName, f.SubnetID, f.SubnetCIDR = n.id, n.name, s.id, s.cidr.String()
	routerSubnets := []string{s.id}
	if e.cfg.NodeIPv6CIDR != "" {
		cidr6, err := netip.ParsePrefix(e.cfg.NodeIPv6CIDR)
		must(err)
		s6, err := e.createSubnet(n.id, e.cfg.ClusterID+"-nodes-subnet-v6", p.id, cidr6, e.cfg.NodeIPv6Mode, e.cfg.NodeIPv6Mode)
		must(err)
		f.SubnetIPv6ID, f.SubnetIPv6CIDR = s6.id, s6.cidr.String()
		routerSubnets = append(routerSubnets, s6.id)
	}

	if !e.cfg.NoExternalNetwork {
		fipCIDR, err := netip.ParsePrefix(e.cfg.FloatingCIDR)
		must(err)
		ext := e.createNetwork("public", "", true)
		es, err := e.createSubnet(ext.id, "public-subnet", "", fipCIDR, "", "")
		must(err)
		f.ExternalNetworkID, f.ExternalNetworkName, f.ExternalSubnetID, f.FloatingCIDR = ext.id, ext.name, es.id, es.cidr.String()
	}
	rt, err := e.createRouter(e.cfg.ClusterID+"-router", p.id, f.ExternalNetworkID, routerSubnets...)
	must(err)
	f.RouterID, f.RouterName = rt.id, rt.name
	if sg := e.ensureDefaultSecurityGroup(p.id); sg != nil {
		f.DefaultSecurityGroupID = sg.id
	}

	img := &image{id: e.ids.uuid(), name: "ubuntu-24.04-server-cloudimg-amd64"}
	e.images.Put(img)
	f.ImageID = img.id

	// The operator's IDs come from a generator of their own, so every
	// other ID is what it was before the fixture had an operator.
	opIDs := newIDGen(e.cfg.Seed ^ 0x6f70657261746f72)
	op := &user{
		id: opIDs.hex32(), name: "operator", domainID: d.id, password: "operator-pw-" + opIDs.hex32()[:16],
		defaultProjectID: p.id, projects: map[string]bool{p.id: true},
	}
	e.users.Put(op)
	f.OperatorUserID, f.OperatorUsername, f.OperatorPassword = op.id, op.name, op.password

	for _, spec := range defaultFlavors {
		fl, err := e.addFlavor(spec)
		must(err)
		f.Flavors[fl.name] = fl.id
	}
	e.fixture = f
	return e
}

// Fixture describes what NewDefault built; it is zero for New.
func (e *Emulator) Fixture() Fixture {
	e.mu.Lock()
	defer e.mu.Unlock()
	f := e.fixture
	f.Flavors = maps.Clone(e.fixture.Flavors)
	f.Zones = slices.Clone(e.fixture.Zones)
	return f
}
