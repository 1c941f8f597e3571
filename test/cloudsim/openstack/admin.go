package openstack

import (
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"time"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// The Go admin API: what a test does to the cloud that the CCM does not,
// like launching and deleting servers or expiring tokens. Every method
// is also served over HTTP under /admin/openstack/ (see Admin).

// ProviderID is the providerID the upstream OpenStack CCM gives a Node
// on a server: "openstack:///<server UUID>".
func ProviderID(serverID string) string { return "openstack:///" + serverID }

// ServerInfo is a server as the admin API reports it.
type ServerInfo struct {
	ID string `json:"id"`
	// ProviderID is ProviderID(ID).
	ProviderID string `json:"providerId"`
	Name       string `json:"name"`
	// Hostname is OS-EXT-SRV-ATTR:hostname, the sanitized name cloud-init
	// gives the machine and a kubelet registers its Node as.
	Hostname string `json:"hostname"`
	// Status is the API's status (ACTIVE, SHUTOFF, BUILD, ERROR).
	Status     string `json:"status"`
	VMState    string `json:"vmState"`
	PowerState int    `json:"powerState"`
	Zone       string `json:"zone"`
	FlavorID   string `json:"flavorId"`
	FlavorName string `json:"flavorName"`
	ImageID    string `json:"imageId"`
	ProjectID  string `json:"projectId"`
	UserID     string `json:"userId"`
	// NetworkName is the key of the server's addresses on its first
	// port; NetworkID ... MAC describe that port.
	NetworkName string `json:"networkName"`
	NetworkID   string `json:"networkId"`
	SubnetID    string `json:"subnetId"`
	PortID      string `json:"portId"`
	MAC         string `json:"mac"`
	// PrivateIP is the first port's first address, on SubnetID: the
	// fixed IPv4 on the node subnet, unless that subnet is IPv6.
	PrivateIP string `json:"privateIp"`
	// PrivateIPv6 is the first port's first IPv6 fixed IP (in Neutron's
	// order), if any.
	PrivateIPv6 string `json:"privateIpv6,omitempty"`
	// PublicIP is the floating IP associated with the first port, if any.
	PublicIP     string `json:"publicIp,omitempty"`
	FloatingIPID string `json:"floatingIpId,omitempty"`
	// PortIDs are all the server's ports, the first one first.
	PortIDs []string `json:"portIds"`
	// AccessIPv4 and AccessIPv6 are what the server was launched with.
	AccessIPv4 string            `json:"accessIPv4,omitempty"`
	AccessIPv6 string            `json:"accessIPv6,omitempty"`
	Metadata   map[string]string `json:"metadata,omitempty"`
	Tags       []string          `json:"tags,omitempty"`
	Created    time.Time         `json:"created"`
}

// LaunchSpec describes servers to launch.
type LaunchSpec struct {
	// Count of servers, default 1.
	Count int `json:"count,omitempty"`
	// Name of the server; with Count > 1, servers are "<Name>-<n>".
	// Default "server-<n>".
	Name string `json:"name,omitempty"`
	// Zone is the availability zone; empty spreads servers round-robin
	// over the zones, unpinned (pinned_availability_zone null).
	Zone string `json:"zone,omitempty"`
	// Flavor is a flavor name or ID, default the fixture's default flavor
	// (m1.small), or the first flavor.
	Flavor string `json:"flavor,omitempty"`
	// PublicIP associates a floating IP from the external network.
	PublicIP bool `json:"publicIp,omitempty"`
	// Metadata is the server's key/value metadata.
	Metadata map[string]string `json:"metadata,omitempty"`
	// Tags are the server's tags (microversion 2.26+).
	Tags []string `json:"tags,omitempty"`
	// Status to launch in: ACTIVE (default), BUILD, SHUTOFF or ERROR.
	Status string `json:"status,omitempty"`
	// ProjectID and UserID own the server, default the fixture's.
	ProjectID string `json:"projectId,omitempty"`
	UserID    string `json:"userId,omitempty"`
	// SubnetID is the subnet of the server's port, default the fixture's
	// node subnet.
	SubnetID string `json:"subnetId,omitempty"`
	// MoreSubnetIDs are further subnets of SubnetID's network on which
	// the first port takes a fixed IP too, as a port made with
	// `--fixed-ip subnet=A --fixed-ip subnet=B` does: a dual-stack port
	// on a stateful IPv6 subnet. SLAAC and DHCPv6-stateless subnets
	// need not be named: Neutron gives every port on their network its
	// EUI-64 address there.
	MoreSubnetIDs []string `json:"moreSubnetIds,omitempty"`
	// ExtraSubnetIDs give the server a further port on each subnet, in
	// this order, after SubnetID's, as repeated --nic options of
	// `openstack server create` do: a server with several interfaces.
	ExtraSubnetIDs []string `json:"extraSubnetIds,omitempty"`
	// AccessIPv4 and AccessIPv6 are the server's access addresses, which
	// Nova takes at boot (accessIPv4, accessIPv6) and only reports.
	AccessIPv4 string `json:"accessIPv4,omitempty"`
	AccessIPv6 string `json:"accessIPv6,omitempty"`
}

var vmStateOfStatus = map[string]string{
	StatusActive: vmActive, StatusBuild: vmBuilding, StatusShutoff: vmStopped, StatusError: vmError,
}

// Launch creates servers and returns their IDs, all or none.
func (e *Emulator) Launch(spec LaunchSpec) ([]string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.launch(spec)
}

func (e *Emulator) launch(spec LaunchSpec) ([]string, error) {
	if spec.Count == 0 {
		spec.Count = 1
	}
	if spec.Count < 0 || spec.Count > 5000 {
		return nil, fmt.Errorf("count %d out of range 1..5000", spec.Count)
	}
	if spec.Status == "" {
		spec.Status = StatusActive
	}
	vmState, ok := vmStateOfStatus[spec.Status]
	if !ok {
		return nil, fmt.Errorf("cannot launch in status %q; have ACTIVE, BUILD, SHUTOFF, ERROR", spec.Status)
	}
	if spec.Zone != "" && !slices.Contains(e.cfg.Zones, spec.Zone) {
		return nil, fmt.Errorf("unknown availability zone %q; have %v", spec.Zone, e.cfg.Zones)
	}
	flavorRef := spec.Flavor
	if flavorRef == "" {
		flavorRef = e.fixture.DefaultFlavor
	}
	var fl *flavor
	if flavorRef == "" {
		if all := e.flavors.All(); len(all) > 0 {
			fl = all[0]
		}
	} else {
		fl, _ = e.flavorByRef(flavorRef)
	}
	if fl == nil {
		return nil, fmt.Errorf("unknown flavor %q", flavorRef)
	}
	projectID, userID := spec.ProjectID, spec.UserID
	if projectID == "" {
		projectID = e.fixture.ProjectID
	}
	if userID == "" {
		userID = e.fixture.UserID
	}
	if !e.projects.Has(projectID) {
		return nil, fmt.Errorf("unknown project %q", projectID)
	}
	if !e.users.Has(userID) {
		return nil, fmt.Errorf("unknown user %q", userID)
	}
	subnetID := spec.SubnetID
	if subnetID == "" {
		subnetID = e.fixture.SubnetID
	}
	subnetIDs := append([]string{subnetID}, spec.ExtraSubnetIDs...)
	first, ok := e.subnets.Get(subnetID)
	if !ok {
		return nil, fmt.Errorf("unknown subnet %q", subnetID)
	}
	for _, id := range spec.MoreSubnetIDs {
		sn, ok := e.subnets.Get(id)
		if !ok || sn.networkID != first.networkID || id == subnetID {
			return nil, fmt.Errorf("subnet %q is not another subnet of the network %s of subnet %s", id, first.networkID, subnetID)
		}
		subnetIDs = append(subnetIDs, id)
	}
	// Check capacity first, so a launch that cannot finish does nothing.
	perSubnet := map[string]int{}
	for _, id := range subnetIDs {
		perSubnet[id] += spec.Count
	}
	for _, id := range subnetIDs {
		sn, ok := e.subnets.Get(id)
		if !ok {
			return nil, fmt.Errorf("unknown subnet %q", id)
		}
		if size := sn.free(); !sn.autoAddress() && size < perSubnet[id] {
			return nil, fmt.Errorf("subnet %s has room for %d more ports, not %d", sn.cidr, size, perSubnet[id])
		}
	}
	// Nova's schema: accessIPv4 must be an IPv4 address and accessIPv6
	// an IPv6 one.
	if a := spec.AccessIPv4; a != "" {
		if ip, err := netip.ParseAddr(a); err != nil || !ip.Is4() {
			return nil, fmt.Errorf("accessIPv4 %q is not an IPv4 address", a)
		}
	}
	if a := spec.AccessIPv6; a != "" {
		if ip, err := netip.ParseAddr(a); err != nil || !ip.Is6() || ip.Is4In6() {
			return nil, fmt.Errorf("accessIPv6 %q is not an IPv6 address", a)
		}
	}
	if spec.PublicIP {
		if e.fixture.ExternalNetworkID == "" {
			return nil, fmt.Errorf("no external network for floating IPs")
		}
		if first.ipVersion() == 6 && !slices.ContainsFunc(spec.MoreSubnetIDs, func(id string) bool {
			sn, _ := e.subnets.Get(id)
			return sn != nil && sn.ipVersion() == 4
		}) {
			// l3_db._internal_fip_assoc_data (neutron/db/l3_db.py:1381-1385).
			return nil, fmt.Errorf("Cannot add floating IP to a port that has no fixed IPv4 addresses (subnet %s is IPv6)", subnetID)
		}
		ext, _ := e.networks.Get(e.fixture.ExternalNetworkID)
		es, _ := e.subnets.Get(ext.subnetIDs[0])
		if free := es.free(); free < spec.Count {
			return nil, fmt.Errorf("external subnet %s has %d floating IPs left, not %d", es.cidr, free, spec.Count)
		}
	}

	now := e.now()
	var ids []string
	for n := range spec.Count {
		zone := spec.Zone
		if zone == "" {
			zone = e.cfg.Zones[e.launchSeq%len(e.cfg.Zones)]
			e.launchSeq++
		}
		seq := e.nextSeq()
		id := e.ids.uuid()
		name := spec.Name
		switch {
		case name == "":
			name = fmt.Sprintf("server-%d", seq)
		case spec.Count > 1:
			name = fmt.Sprintf("%s-%d", spec.Name, n)
		}
		s := &server{
			seq: seq, id: id, name: name, hostname: sanitizeHostname(name, "Server-"+id),
			projectID: projectID, userID: userID, flavor: *fl, imageID: e.fixture.ImageID,
			zone: zone, pinnedZone: spec.Zone, host: fmt.Sprintf("compute-%s-%d", zone, seq%2+1),
			metadata: maps.Clone(spec.Metadata), tags: slices.Clone(spec.Tags),
			accessIPv4: spec.AccessIPv4, accessIPv6: spec.AccessIPv6,
			created: now, updated: now,
		}
		s.flavor.extraSpecs = maps.Clone(fl.extraSpecs)
		for _, sid := range append([]string{subnetID}, spec.ExtraSubnetIDs...) {
			p, err := e.createPort(sid, projectID, id, "compute:"+zone)
			if err != nil {
				return ids, err
			}
			s.portIDs = append(s.portIDs, p.id)
		}
		if p, ok := e.ports.Get(s.portIDs[0]); ok {
			for _, sid := range spec.MoreSubnetIDs {
				if err := e.addFixedIP(p, sid); err != nil {
					return ids, err
				}
			}
		}
		if spec.PublicIP {
			f, err := e.createFloatingIP(e.fixture.ExternalNetworkID, projectID, s.portIDs[0])
			if err != nil {
				return ids, err
			}
			s.launchFIP = f.id
		}
		e.servers.Put(s)
		switch vmState {
		case vmBuilding:
			s.vmState, s.powerState = vmBuilding, powerNoState
		case vmError:
			// A server that failed to build: never launched.
			s.vmState, s.powerState = vmError, powerNoState
			s.fault = &serverFault{code: http.StatusInternalServerError, message: "Exceeded maximum number of retries.", created: now}
		default:
			e.setServerState(s, vmActive)
			if vmState == vmStopped {
				e.setServerState(s, vmStopped)
			}
		}
		s.updated = now
		ids = append(ids, id)
	}
	return ids, nil
}

// Stop stops servers as os-stop does: ACTIVE or ERROR (launched) ones
// become SHUTOFF, at once. All or none.
func (e *Emulator) Stop(ids ...string) error {
	return e.transition(ids, "stop", []string{vmActive, vmError}, vmStopped)
}

// Start starts SHUTOFF servers as os-start does. All or none.
func (e *Emulator) Start(ids ...string) error {
	return e.transition(ids, "start", []string{vmStopped}, vmActive)
}

func (e *Emulator) transition(ids []string, verb string, from []string, to string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var ss []*server
	for _, id := range ids {
		s, ok := e.servers.Get(id)
		if !ok {
			return fmt.Errorf("server %q: %w", id, cloudsim.ErrInstanceNotFound)
		}
		if !slices.Contains(from, s.vmState) || s.launchedAt == nil {
			return fmt.Errorf("cannot %s server %s in status %s: %w", verb, id, s.status(), cloudsim.ErrInstanceState)
		}
		ss = append(ss, s)
	}
	for _, s := range ss {
		e.setServerState(s, to)
	}
	return nil
}

// Terminate deletes servers, as DELETE /servers/{id} does, and releases
// the floating IPs Launch allocated for them. Nova stops listing them at
// once. All or none.
func (e *Emulator) Terminate(ids ...string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var ss []*server
	for _, id := range ids {
		s, ok := e.servers.Get(id)
		if !ok {
			return fmt.Errorf("server %q: %w", id, cloudsim.ErrInstanceNotFound)
		}
		ss = append(ss, s)
	}
	for _, s := range ss {
		e.removeServer(s)
		e.deleteFloatingIP(s.launchFIP)
	}
	return nil
}

// SetServerStatus puts a live server in ACTIVE, BUILD, SHUTOFF or ERROR
// with the vm and power states that go with it.
func (e *Emulator) SetServerStatus(id, status string) error {
	vmState, ok := vmStateOfStatus[status]
	if !ok {
		return fmt.Errorf("unknown server status %q; have ACTIVE, BUILD, SHUTOFF, ERROR", status)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.servers.Get(id)
	if !ok {
		return fmt.Errorf("server %q: %w", id, cloudsim.ErrInstanceNotFound)
	}
	e.setServerState(s, vmState)
	return nil
}

// Servers lists the live servers in launch order.
func (e *Emulator) Servers() []ServerInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []ServerInfo
	for _, s := range e.servers.All() {
		out = append(out, e.serverInfo(s))
	}
	return out
}

// Server reports one live server.
func (e *Emulator) Server(id string) (ServerInfo, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.servers.Get(id)
	if !ok {
		return ServerInfo{}, false
	}
	return e.serverInfo(s), true
}

func (e *Emulator) serverInfo(s *server) ServerInfo {
	info := ServerInfo{
		ID: s.id, ProviderID: ProviderID(s.id), Name: s.name, Hostname: s.hostname,
		Status: s.status(), VMState: s.vmState, PowerState: s.powerState, Zone: s.zone,
		FlavorID: s.flavor.id, FlavorName: s.flavor.name, ImageID: s.imageID,
		ProjectID: s.projectID, UserID: s.userID,
		Metadata: maps.Clone(s.metadata), Tags: slices.Clone(s.tags), Created: s.created,
		PortIDs: slices.Clone(s.portIDs), AccessIPv4: s.accessIPv4, AccessIPv6: s.accessIPv6,
	}
	if p, ok := e.ports.Get(s.primaryPort()); ok {
		info.PortID, info.MAC, info.PrivateIP, info.SubnetID, info.NetworkID = p.id, p.mac, p.fixedIP.String(), p.subnetID, p.networkID
		for _, a := range p.fixedIPs() {
			if a.ip.Is6() {
				info.PrivateIPv6 = a.ip.String()
				break
			}
		}
		if n, ok := e.networks.Get(p.networkID); ok {
			info.NetworkName = n.name
		}
		if f := e.floatingIPOf(p.id); f != nil {
			info.PublicIP, info.FloatingIPID = f.address.String(), f.id
		}
	}
	return info
}

// ExpireTokens makes every issued token expire now, so the next call
// with one is a 401 and clients must re-authenticate.
func (e *Emulator) ExpireTokens() {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	for _, t := range e.tokens {
		t.expiresAt = now
	}
}

// AddFlavor adds a public flavor and returns its ID.
func (e *Emulator) AddFlavor(spec FlavorSpec) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	f, err := e.addFlavor(spec)
	if err != nil {
		return "", err
	}
	return f.id, nil
}

// Admin implements cloudsim.Cloud. Mounted at /admin/openstack/:
//
//	GET  /fixture             what NewDefault built, credentials included
//	GET  /servers             [ServerInfo]
//	POST /servers             LaunchSpec -> {"serverIds": [...]}
//	POST /servers/stop        {"serverIds": [...]}; likewise start, terminate
//	POST /servers/status      {"serverId": "...", "status": "ERROR"}
//	POST /flavors             FlavorSpec -> {"id"}
//	POST /tokens/expire       expire every token
func (e *Emulator) Admin() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /fixture", func(w http.ResponseWriter, r *http.Request) {
		cloudsim.WriteJSON(w, http.StatusOK, e.Fixture())
	})
	mux.HandleFunc("GET /servers", func(w http.ResponseWriter, r *http.Request) {
		ss := e.Servers()
		if ss == nil {
			ss = []ServerInfo{}
		}
		cloudsim.WriteJSON(w, http.StatusOK, ss)
	})
	mux.HandleFunc("POST /servers", cloudsim.AdminHandler(func(spec LaunchSpec) (any, error) {
		ids, err := e.Launch(spec)
		return map[string][]string{"serverIds": ids}, err
	}, cloudsim.InstanceErrorStatus))
	for name, f := range map[string]func(...string) error{"stop": e.Stop, "start": e.Start, "terminate": e.Terminate} {
		mux.HandleFunc("POST /servers/"+name, cloudsim.AdminHandler(func(req struct {
			ServerIDs []string `json:"serverIds"`
		}) (any, error) {
			return map[string][]string{"serverIds": req.ServerIDs}, f(req.ServerIDs...)
		}, cloudsim.InstanceErrorStatus))
	}
	mux.HandleFunc("POST /servers/status", cloudsim.AdminHandler(func(req struct {
		ServerID string `json:"serverId"`
		Status   string `json:"status"`
	}) (any, error) {
		return req, e.SetServerStatus(req.ServerID, req.Status)
	}, cloudsim.InstanceErrorStatus))
	mux.HandleFunc("POST /flavors", cloudsim.AdminHandler(func(spec FlavorSpec) (any, error) {
		id, err := e.AddFlavor(spec)
		return map[string]string{"id": id}, err
	}, cloudsim.InstanceErrorStatus))
	mux.HandleFunc("POST /tokens/expire", func(w http.ResponseWriter, r *http.Request) {
		e.ExpireTokens()
		w.WriteHeader(http.StatusNoContent)
	})
	e.neutronAdmin(mux)
	e.octaviaAdmin(mux)
	return mux
}
