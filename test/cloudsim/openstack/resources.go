package openstack

import (
	"maps"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// Resource kinds reported by Resources.
const (
	KindDomain        = "domain"
	KindProject       = "project"
	KindUser          = "user"
	KindRole          = "role"
	KindAppCredential = "application-credential"
	KindNetwork       = "network"
	KindSubnet        = "subnet"
	KindPort          = "port"
	KindFloatingIP    = "floating-ip"
	KindFlavor        = "flavor"
	KindImage         = "image"
	KindServer        = "server"
	// Octavia's.
	KindLoadBalancer  = "load-balancer"
	KindListener      = "listener"
	KindPool          = "pool"
	KindMember        = "member"
	KindHealthMonitor = "health-monitor"
	// Neutron's own.
	KindSecurityGroup     = "security-group"
	KindSecurityGroupRule = "security-group-rule"
	KindRouter            = "router"
)

// Resources implements cloudsim.Cloud. It lists everything the emulator
// holds except tokens (and deleted servers, which Nova no longer lists):
// never a password, secret or token. Servers carry their metadata as
// tags and their project as parent; ports and floating IPs their
// network; subnets their network; users, projects and application
// credentials their domain or user.
func (e *Emulator) Resources() []cloudsim.Resource {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []cloudsim.Resource
	add := func(kind, id, name, parent string, tags map[string]string) {
		var t map[string]string
		if len(tags) > 0 {
			t = maps.Clone(tags)
		}
		out = append(out, cloudsim.Resource{Kind: kind, ID: id, Name: name, Parent: parent, Tags: t})
	}
	for _, d := range e.domains.All() {
		add(KindDomain, d.id, d.name, "", nil)
	}
	for _, p := range e.projects.All() {
		add(KindProject, p.id, p.name, p.domainID, nil)
	}
	for name, id := range e.roles {
		add(KindRole, id, name, "", nil)
	}
	for _, u := range e.users.All() {
		add(KindUser, u.id, u.name, u.domainID, nil)
	}
	for _, a := range e.appCreds.All() {
		add(KindAppCredential, a.id, a.name, a.userID, nil)
	}
	for _, n := range e.networks.All() {
		add(KindNetwork, n.id, n.name, n.projectID, ntTagMap(n.std.tags))
	}
	for _, s := range e.subnets.All() {
		add(KindSubnet, s.id, s.name, s.networkID, ntTagMap(s.std.tags))
	}
	for _, p := range e.ports.All() {
		add(KindPort, p.id, p.fixedIP.String(), p.networkID, ntTagMap(p.std.tags))
	}
	for _, f := range e.floatingIPs.All() {
		add(KindFloatingIP, f.id, f.address.String(), f.networkID, ntTagMap(f.std.tags))
	}
	for _, f := range e.flavors.All() {
		add(KindFlavor, f.id, f.name, "", nil)
	}
	for _, i := range e.images.All() {
		add(KindImage, i.id, i.name, "", nil)
	}
	for _, s := range e.servers.All() {
		add(KindServer, s.id, s.name, s.projectID, s.metadata)
	}
	e.neutronResources(add)
	e.octaviaResources(add)
	cloudsim.SortResources(out)
	return out
}
