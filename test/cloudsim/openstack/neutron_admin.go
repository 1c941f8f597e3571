package openstack

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// Neutron's admin API: what backend tests inspect (ports with their
// security groups and address pairs, security groups with their rules,
// floating IPs, routers with their routes) and poke (another actor
// changing a resource, so an If-Match of the CCM's fails; a second
// router). Go methods, and HTTP routes under /admin/openstack/neutron/.

// ErrNeutronNotFound is wrapped by admin errors about a Neutron resource
// that does not exist; the HTTP routes answer it with 404.
var ErrNeutronNotFound = errors.New("neutron resource not found")

// PortInfo is a port as the admin API reports it.
type PortInfo struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	NetworkID string `json:"networkId"`
	SubnetID  string `json:"subnetId"`
	ProjectID string `json:"projectId"`
	MAC       string `json:"mac"`
	// FixedIP is the port's first address (on SubnetID), FixedIPs all
	// of them in Neutron's fixed_ips order.
	FixedIP     string        `json:"fixedIp"`
	FixedIPs    []FixedIPInfo `json:"fixedIps"`
	DeviceID    string        `json:"deviceId"`
	DeviceOwner string        `json:"deviceOwner"`
	Status      string        `json:"status"`
	// PortSecurityEnabled is port_security_enabled.
	PortSecurityEnabled bool              `json:"portSecurityEnabled"`
	SecurityGroups      []string          `json:"securityGroups"`
	AllowedAddressPairs []AddressPairInfo `json:"allowedAddressPairs"`
	Description         string            `json:"description"`
	Tags                []string          `json:"tags"`
	RevisionNumber      int               `json:"revisionNumber"`
	// FloatingIP is the associated floating IP's address, if any.
	FloatingIP string `json:"floatingIp,omitempty"`
}

// FixedIPInfo is one of a port's fixed IPs.
type FixedIPInfo struct {
	SubnetID  string `json:"subnetId"`
	IPAddress string `json:"ipAddress"`
}

// AddressPairInfo is one of a port's allowed address pairs.
type AddressPairInfo struct {
	IPAddress  string `json:"ipAddress"`
	MACAddress string `json:"macAddress"`
}

// SecurityGroupInfo is a security group with its rules.
type SecurityGroupInfo struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	ProjectID   string `json:"projectId"`
	Stateful    bool   `json:"stateful"`
	// Default marks the project's default group.
	Default        bool                    `json:"default"`
	Tags           []string                `json:"tags"`
	RevisionNumber int                     `json:"revisionNumber"`
	Rules          []SecurityGroupRuleInfo `json:"rules"`
	// PortIDs are the ports the group is on.
	PortIDs []string `json:"portIds"`
}

// SecurityGroupRuleInfo is one rule; empty strings and nil ports are
// Neutron's nulls.
type SecurityGroupRuleInfo struct {
	ID             string `json:"id"`
	Direction      string `json:"direction"`
	Ethertype      string `json:"ethertype"`
	Protocol       string `json:"protocol,omitempty"`
	PortRangeMin   *int   `json:"portRangeMin,omitempty"`
	PortRangeMax   *int   `json:"portRangeMax,omitempty"`
	RemoteIPPrefix string `json:"remoteIpPrefix,omitempty"`
	RemoteGroupID  string `json:"remoteGroupId,omitempty"`
	Description    string `json:"description"`
}

// FloatingIPInfo is a floating IP.
type FloatingIPInfo struct {
	ID             string   `json:"id"`
	Address        string   `json:"address"`
	NetworkID      string   `json:"networkId"`
	ProjectID      string   `json:"projectId"`
	PortID         string   `json:"portId,omitempty"`
	FixedIP        string   `json:"fixedIp,omitempty"`
	RouterID       string   `json:"routerId,omitempty"`
	Status         string   `json:"status"`
	Description    string   `json:"description"`
	Tags           []string `json:"tags"`
	RevisionNumber int      `json:"revisionNumber"`
}

// RouterInfo is a router with its routes.
type RouterInfo struct {
	ID                string `json:"id"`
	Name              string `json:"name"`
	ProjectID         string `json:"projectId"`
	ExternalNetworkID string `json:"externalNetworkId,omitempty"`
	// InterfaceSubnetIDs are the subnets the router has interfaces on.
	InterfaceSubnetIDs []string    `json:"interfaceSubnetIds"`
	Routes             []RouteInfo `json:"routes"`
	Tags               []string    `json:"tags"`
	RevisionNumber     int         `json:"revisionNumber"`
}

// RouteInfo is one extra route of a router.
type RouteInfo struct {
	Destination string `json:"destination"`
	NextHop     string `json:"nexthop"`
}

// RouterSpec describes a router CreateRouter makes.
type RouterSpec struct {
	Name string `json:"name"`
	// ProjectID owns it, default the fixture's project.
	ProjectID string `json:"projectId,omitempty"`
	// ExternalNetworkID is the network of its gateway, "" for none.
	ExternalNetworkID string `json:"externalNetworkId,omitempty"`
	// SubnetIDs get an interface each, on the subnet's gateway address
	// when it is free.
	SubnetIDs []string `json:"subnetIds,omitempty"`
}

// NetworkSpec describes a network with one subnet, which CreateNetwork
// makes.
type NetworkSpec struct {
	Name string `json:"name"`
	// ProjectID owns it, default the fixture's project; external networks
	// belong to no project unless one is given.
	ProjectID string `json:"projectId,omitempty"`
	// External makes it router:external, a floating IP pool.
	External bool `json:"external,omitempty"`
	// CIDR is the subnet's: IPv4, /29 or larger, or IPv6, /120 or
	// larger (/64 with an automatic-address mode).
	CIDR string `json:"cidr"`
	// IPv6AddressMode and IPv6RAMode are an IPv6 subnet's
	// ipv6_address_mode and ipv6_ra_mode: slaac, dhcpv6-stateful,
	// dhcpv6-stateless or "" (None), combined as Neutron allows.
	IPv6AddressMode string `json:"ipv6AddressMode,omitempty"`
	IPv6RAMode      string `json:"ipv6RaMode,omitempty"`
}

// NetworkInfo names a network CreateNetwork made and its subnet.
type NetworkInfo struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	SubnetID string `json:"subnetId"`
	CIDR     string `json:"cidr"`
}

// CreateNetwork makes a network and its subnet (see NetworkSpec).
func (e *Emulator) CreateNetwork(spec NetworkSpec) (NetworkInfo, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if spec.ProjectID == "" && !spec.External {
		spec.ProjectID = e.fixture.ProjectID
	}
	if spec.ProjectID != "" && !e.projects.Has(spec.ProjectID) {
		return NetworkInfo{}, fmt.Errorf("unknown project %q: %w", spec.ProjectID, cloudsim.ErrInvalidRequest)
	}
	cidr, err := netip.ParsePrefix(spec.CIDR)
	if err == nil {
		err = checkSubnet(cidr, spec.IPv6AddressMode, spec.IPv6RAMode)
	}
	if err != nil {
		return NetworkInfo{}, fmt.Errorf("CIDR %q: %v: %w", spec.CIDR, err, cloudsim.ErrInvalidRequest)
	}
	n := e.createNetwork(spec.Name, spec.ProjectID, spec.External)
	s, err := e.createSubnet(n.id, spec.Name+"-subnet", spec.ProjectID, cidr, spec.IPv6AddressMode, spec.IPv6RAMode)
	if err != nil {
		return NetworkInfo{}, fmt.Errorf("%w: %v", cloudsim.ErrInvalidRequest, err)
	}
	return NetworkInfo{ID: n.id, Name: n.name, SubnetID: s.id, CIDR: s.cidr.String()}, nil
}

func (e *Emulator) portInfo(p *port) PortInfo {
	info := PortInfo{
		ID: p.id, Name: p.name, NetworkID: p.networkID, SubnetID: p.subnetID, ProjectID: p.projectID, MAC: p.mac,
		FixedIP: p.fixedIP.String(), FixedIPs: []FixedIPInfo{}, DeviceID: p.deviceID, DeviceOwner: p.deviceOwner, Status: p.status(),
		PortSecurityEnabled: p.portSecurity, SecurityGroups: ntStrings(p.securityGroups),
		AllowedAddressPairs: []AddressPairInfo{}, Description: p.std.description, Tags: ntStrings(p.std.tags),
		RevisionNumber: p.std.revision,
	}
	for _, a := range p.fixedIPs() {
		info.FixedIPs = append(info.FixedIPs, FixedIPInfo{SubnetID: a.subnetID, IPAddress: a.ip.String()})
	}
	for _, a := range p.addressPairs {
		info.AllowedAddressPairs = append(info.AllowedAddressPairs, AddressPairInfo{IPAddress: a.ip, MACAddress: a.mac})
	}
	if f := e.floatingIPOf(p.id); f != nil {
		info.FloatingIP = f.address.String()
	}
	return info
}

// Ports lists every port (router gateway ports included), oldest first.
func (e *Emulator) Ports() []PortInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := []PortInfo{}
	for _, p := range e.ports.All() {
		out = append(out, e.portInfo(p))
	}
	return out
}

// Port reports one port.
func (e *Emulator) Port(id string) (PortInfo, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p, ok := e.ports.Get(id)
	if !ok {
		return PortInfo{}, false
	}
	return e.portInfo(p), true
}

// DevicePorts lists the ports of a device: a server's, a router's or a
// load balancer's (device_id).
func (e *Emulator) DevicePorts(deviceID string) []PortInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := []PortInfo{}
	for _, p := range e.ports.All() {
		if p.deviceID == deviceID {
			out = append(out, e.portInfo(p))
		}
	}
	return out
}

func (e *Emulator) securityGroupInfo(g *securityGroup) SecurityGroupInfo {
	info := SecurityGroupInfo{
		ID: g.id, Name: g.name, Description: g.std.description, ProjectID: g.projectID, Stateful: g.stateful,
		Default: e.neutron.defaultSG[g.projectID] == g.id, Tags: ntStrings(g.std.tags),
		RevisionNumber: g.std.revision, Rules: []SecurityGroupRuleInfo{}, PortIDs: []string{},
	}
	for _, id := range g.rules {
		r, ok := e.neutron.sgRules.Get(id)
		if !ok {
			continue
		}
		info.Rules = append(info.Rules, SecurityGroupRuleInfo{
			ID: r.id, Direction: r.direction, Ethertype: r.ethertype, Protocol: r.protocol,
			PortRangeMin: r.portMin, PortRangeMax: r.portMax, RemoteIPPrefix: r.remoteIPPrefix,
			RemoteGroupID: r.remoteGroupID, Description: r.std.description,
		})
	}
	for _, p := range e.portsUsing(g.id) {
		info.PortIDs = append(info.PortIDs, p.id)
	}
	return info
}

// SecurityGroups lists every security group with its rules and ports.
func (e *Emulator) SecurityGroups() []SecurityGroupInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := []SecurityGroupInfo{}
	for _, g := range e.neutron.secGroups.All() {
		out = append(out, e.securityGroupInfo(g))
	}
	return out
}

// SecurityGroup reports one security group.
func (e *Emulator) SecurityGroup(id string) (SecurityGroupInfo, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	g, ok := e.neutron.secGroups.Get(id)
	if !ok {
		return SecurityGroupInfo{}, false
	}
	return e.securityGroupInfo(g), true
}

// AllocateFloatingIP allocates a floating IP in the fixture's project
// from an external network, unassociated, as a person reserving an
// address would.
func (e *Emulator) AllocateFloatingIP(networkID, description string) (FloatingIPInfo, error) {
	e.mu.Lock()
	f, err := e.createFloatingIP(networkID, e.fixture.ProjectID, "")
	if err == nil {
		f.std.description = description
	}
	e.mu.Unlock()
	if err != nil {
		return FloatingIPInfo{}, err
	}
	for _, info := range e.FloatingIPs() {
		if info.ID == f.id {
			return info, nil
		}
	}
	return FloatingIPInfo{}, fmt.Errorf("floating IP %s vanished", f.id)
}

// FloatingIPs lists every floating IP.
func (e *Emulator) FloatingIPs() []FloatingIPInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := []FloatingIPInfo{}
	for _, f := range e.floatingIPs.All() {
		info := FloatingIPInfo{
			ID: f.id, Address: f.address.String(), NetworkID: f.networkID, ProjectID: f.projectID,
			PortID: f.portID, RouterID: f.routerID, Status: f.status(), Description: f.std.description,
			Tags: ntStrings(f.std.tags), RevisionNumber: f.std.revision,
		}
		if f.fixedIP.IsValid() {
			info.FixedIP = f.fixedIP.String()
		}
		out = append(out, info)
	}
	return out
}

func (e *Emulator) routerInfo(r *router) RouterInfo {
	info := RouterInfo{
		ID: r.id, Name: r.name, ProjectID: r.projectID, ExternalNetworkID: r.gwNetworkID,
		InterfaceSubnetIDs: []string{}, Routes: []RouteInfo{}, Tags: ntStrings(r.std.tags), RevisionNumber: r.std.revision,
	}
	for _, p := range e.routerPorts(r) {
		if p.deviceOwner == ownerRouterInterface {
			info.InterfaceSubnetIDs = append(info.InterfaceSubnetIDs, p.subnetID)
		}
	}
	for _, rt := range r.routes {
		info.Routes = append(info.Routes, RouteInfo{Destination: rt.destination, NextHop: rt.nexthop})
	}
	return info
}

// Routers lists every router.
func (e *Emulator) Routers() []RouterInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := []RouterInfo{}
	for _, r := range e.neutron.routers.All() {
		out = append(out, e.routerInfo(r))
	}
	return out
}

// RouterRoutes is a router's extra routes, in the order they were added.
func (e *Emulator) RouterRoutes(routerID string) ([]RouteInfo, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.neutron.routers.Get(routerID)
	if !ok {
		return nil, fmt.Errorf("router %q: %w", routerID, ErrNeutronNotFound)
	}
	return e.routerInfo(r).Routes, nil
}

// CreateRouter makes a router (see RouterSpec) and returns it.
func (e *Emulator) CreateRouter(spec RouterSpec) (RouterInfo, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if spec.ProjectID == "" {
		spec.ProjectID = e.fixture.ProjectID
	}
	if !e.projects.Has(spec.ProjectID) {
		return RouterInfo{}, fmt.Errorf("unknown project %q: %w", spec.ProjectID, cloudsim.ErrInvalidRequest)
	}
	for _, id := range spec.SubnetIDs {
		if !e.subnets.Has(id) {
			return RouterInfo{}, fmt.Errorf("subnet %q: %w", id, ErrNeutronNotFound)
		}
	}
	r, err := e.createRouter(spec.Name, spec.ProjectID, spec.ExternalNetworkID, spec.SubnetIDs...)
	if err != nil {
		return RouterInfo{}, fmt.Errorf("%w: %v", cloudsim.ErrInvalidRequest, err)
	}
	return e.routerInfo(r), nil
}

// AddRouterInterface gives a router an interface on a subnet, on the
// subnet's gateway address when it is free (add_router_interface with a
// subnet_id), as an IPv6 extra route's next hop needs.
func (e *Emulator) AddRouterInterface(routerID, subnetID string) (RouterInfo, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.neutron.routers.Get(routerID)
	if !ok {
		return RouterInfo{}, fmt.Errorf("router %q: %w", routerID, ErrNeutronNotFound)
	}
	if !e.subnets.Has(subnetID) {
		return RouterInfo{}, fmt.Errorf("subnet %q: %w", subnetID, ErrNeutronNotFound)
	}
	if err := e.addRouterInterface(r, subnetID); err != nil {
		return RouterInfo{}, fmt.Errorf("%w: %v", cloudsim.ErrInvalidRequest, err)
	}
	r.std.bump(e.now())
	return e.routerInfo(r), nil
}

// BumpRevision changes a resource as another client would, without
// changing anything the API shows but its revision_number (and
// updated_at), so the next call of a client that read it before and
// sends If-Match: revision_number=<old> fails with 412. resource is the
// API collection: networks, subnets, ports, floatingips,
// security-groups, security-group-rules or routers. It returns the new
// revision.
func (e *Emulator) BumpRevision(resource, id string) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var s *stdAttrs
	switch resource {
	case "networks":
		if n, ok := e.networks.Get(id); ok {
			s = &n.std
		}
	case "subnets":
		if x, ok := e.subnets.Get(id); ok {
			s = &x.std
		}
	case "ports":
		if p, ok := e.ports.Get(id); ok {
			s = &p.std
		}
	case "floatingips":
		if f, ok := e.floatingIPs.Get(id); ok {
			s = &f.std
		}
	case "security-groups":
		if g, ok := e.neutron.secGroups.Get(id); ok {
			s = &g.std
		}
	case "security-group-rules":
		if r, ok := e.neutron.sgRules.Get(id); ok {
			s = &r.std
		}
	case "routers":
		if r, ok := e.neutron.routers.Get(id); ok {
			s = &r.std
		}
	default:
		return 0, fmt.Errorf("unknown resource %q; have networks, subnets, ports, floatingips, security-groups, security-group-rules, routers: %w",
			resource, cloudsim.ErrInvalidRequest)
	}
	if s == nil {
		return 0, fmt.Errorf("%s %q: %w", resource, id, ErrNeutronNotFound)
	}
	s.bump(e.now())
	return s.revision, nil
}

// neutronAdminStatus maps admin errors to statuses: unknown resources
// 404, everything else 400.
func neutronAdminStatus(err error) int {
	if errors.Is(err, ErrNeutronNotFound) {
		return http.StatusNotFound
	}
	return http.StatusBadRequest
}

// neutronAdmin adds Neutron's admin routes to the admin mux
// (/admin/openstack/...):
//
//	GET  /neutron/ports[?deviceId=]   [PortInfo]
//	GET  /neutron/security-groups     [SecurityGroupInfo]
//	GET  /neutron/floating-ips        [FloatingIPInfo]
//	GET  /neutron/routers             [RouterInfo] (routes included)
//	POST /neutron/routers             RouterSpec -> RouterInfo
//	POST /neutron/networks            NetworkSpec -> NetworkInfo
//	POST /neutron/revisions/bump      {"resource": "ports", "id": "..."} -> {"revisionNumber": n}
func (e *Emulator) neutronAdmin(mux *http.ServeMux) {
	mux.HandleFunc("GET /neutron/ports", func(w http.ResponseWriter, r *http.Request) {
		if dev := r.URL.Query().Get("deviceId"); dev != "" {
			cloudsim.WriteJSON(w, http.StatusOK, e.DevicePorts(dev))
			return
		}
		cloudsim.WriteJSON(w, http.StatusOK, e.Ports())
	})
	mux.HandleFunc("GET /neutron/security-groups", func(w http.ResponseWriter, r *http.Request) {
		cloudsim.WriteJSON(w, http.StatusOK, e.SecurityGroups())
	})
	mux.HandleFunc("GET /neutron/floating-ips", func(w http.ResponseWriter, r *http.Request) {
		cloudsim.WriteJSON(w, http.StatusOK, e.FloatingIPs())
	})
	mux.HandleFunc("GET /neutron/routers", func(w http.ResponseWriter, r *http.Request) {
		cloudsim.WriteJSON(w, http.StatusOK, e.Routers())
	})
	mux.HandleFunc("POST /neutron/routers", cloudsim.AdminHandler(func(spec RouterSpec) (any, error) {
		return e.CreateRouter(spec)
	}, neutronAdminStatus))
	mux.HandleFunc("POST /neutron/routers/{id}/interfaces", func(w http.ResponseWriter, r *http.Request) {
		cloudsim.AdminHandler(func(req struct {
			SubnetID string `json:"subnetId"`
		}) (any, error) {
			return e.AddRouterInterface(r.PathValue("id"), req.SubnetID)
		}, neutronAdminStatus)(w, r)
	})
	mux.HandleFunc("POST /neutron/subnets", cloudsim.AdminHandler(func(spec SubnetSpec) (any, error) {
		id, err := e.AddSubnet(spec)
		return map[string]string{"id": id}, err
	}, neutronAdminStatus))
	mux.HandleFunc("POST /neutron/networks", cloudsim.AdminHandler(func(spec NetworkSpec) (any, error) {
		return e.CreateNetwork(spec)
	}, neutronAdminStatus))
	mux.HandleFunc("POST /neutron/revisions/bump", cloudsim.AdminHandler(func(req struct {
		Resource string `json:"resource"`
		ID       string `json:"id"`
	}) (any, error) {
		n, err := e.BumpRevision(req.Resource, req.ID)
		return map[string]int{"revisionNumber": n}, err
	}, neutronAdminStatus))
}

// SubnetSpec describes another subnet of an existing network, which
// AddSubnet makes (an external network's floating IP ranges, say, or
// the IPv6 subnet of a dual-stack network).
type SubnetSpec struct {
	NetworkID string `json:"networkId"`
	Name      string `json:"name"`
	// CIDR is IPv4, /29 or larger, or IPv6, /120 or larger (/64 with an
	// automatic-address mode).
	CIDR string `json:"cidr"`
	// IPv6AddressMode and IPv6RAMode are as in NetworkSpec. A SLAAC or
	// DHCPv6-stateless subnet gives every port of the network but the
	// routers' its EUI-64 address at once, as Neutron does.
	IPv6AddressMode string `json:"ipv6AddressMode,omitempty"`
	IPv6RAMode      string `json:"ipv6RaMode,omitempty"`
	// Tags are the subnet's Neutron tags.
	Tags []string `json:"tags,omitempty"`
}

// AddSubnet adds a subnet to a network, owned by the network's project
// (none for an external network), and returns its ID.
func (e *Emulator) AddSubnet(spec SubnetSpec) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	n, ok := e.networks.Get(spec.NetworkID)
	if !ok {
		return "", fmt.Errorf("unknown network %q: %w", spec.NetworkID, cloudsim.ErrInvalidRequest)
	}
	cidr, err := netip.ParsePrefix(spec.CIDR)
	if err != nil {
		return "", fmt.Errorf("CIDR %q: %w", spec.CIDR, cloudsim.ErrInvalidRequest)
	}
	s, err := e.createSubnet(n.id, spec.Name, n.projectID, cidr, spec.IPv6AddressMode, spec.IPv6RAMode)
	if err != nil {
		return "", fmt.Errorf("%w: %v", cloudsim.ErrInvalidRequest, err)
	}
	s.std.tags = slices.Clone(spec.Tags)
	return s.id, nil
}
