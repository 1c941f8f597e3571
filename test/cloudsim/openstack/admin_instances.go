package openstack

import (
	"fmt"
	"maps"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// The cloud-neutral instance admin API (cloudsim.Instances), on top of
// Launch, Stop, Start and Terminate.

// neutralStates maps Nova statuses to cloudsim's. ERROR has no neutral
// word: the server is not running and may never have run, so it counts
// as stopped and CloudState says ERROR.
var neutralStates = map[string]cloudsim.InstanceState{
	StatusBuild:   cloudsim.InstancePending,
	StatusActive:  cloudsim.InstanceRunning,
	StatusShutoff: cloudsim.InstanceStopped,
	StatusError:   cloudsim.InstanceStopped,
	StatusDeleted: cloudsim.InstanceTerminated,
}

// LaunchInstance implements cloudsim.Instances: spec.InstanceType is a
// flavor name or ID, spec.Tags become the server's metadata, and a
// public IP is a floating IP on the external network.
//
// spec.IPv6 gives the server's port a fixed IP on the node network's IPv6
// subnet (Config.NodeIPv6CIDR) as well, as `--fixed-ip` for each subnet
// does; on a SLAAC or DHCPv6-stateless subnet Neutron gives every port
// one anyway. Without an IPv6 subnet it is refused.
func (e *Emulator) LaunchInstance(spec cloudsim.InstanceSpec) (cloudsim.InstanceInfo, error) {
	ls := LaunchSpec{
		Name: spec.Name, Zone: spec.Zone, Flavor: spec.InstanceType, PublicIP: spec.PublicIP, Metadata: spec.Tags,
	}
	if spec.IPv6 {
		id, auto, ok := e.nodeIPv6Subnet()
		if !ok {
			return cloudsim.InstanceInfo{}, fmt.Errorf("the node network has no IPv6 subnet (Config.NodeIPv6CIDR) for an instance with IPv6")
		}
		if !auto {
			ls.MoreSubnetIDs = []string{id}
		}
	}
	ids, err := e.Launch(ls)
	if err != nil {
		return cloudsim.InstanceInfo{}, err
	}
	info, ok := e.GetInstance(ids[0])
	if !ok {
		return cloudsim.InstanceInfo{}, fmt.Errorf("server %s vanished after launch", ids[0])
	}
	return info, nil
}

// StopInstance implements cloudsim.Instances.
func (e *Emulator) StopInstance(id string) error { return e.Stop(id) }

// StartInstance implements cloudsim.Instances.
func (e *Emulator) StartInstance(id string) error { return e.Start(id) }

// TerminateInstance implements cloudsim.Instances: the server is
// deleted and, as in Nova, no longer listed.
func (e *Emulator) TerminateInstance(id string) error { return e.Terminate(id) }

// GetInstance implements cloudsim.Instances.
func (e *Emulator) GetInstance(id string) (cloudsim.InstanceInfo, bool) {
	s, ok := e.Server(id)
	if !ok {
		return cloudsim.InstanceInfo{}, false
	}
	return neutralInfo(s), true
}

// ListInstances implements cloudsim.Instances.
func (e *Emulator) ListInstances() []cloudsim.InstanceInfo {
	var out []cloudsim.InstanceInfo
	for _, s := range e.Servers() {
		out = append(out, neutralInfo(s))
	}
	return out
}

// neutralInfo is the neutral view of a server. The neutral shape has no
// providerID; it is ProviderID(ID) ("openstack:///<ID>"), which
// ServerInfo carries.
func neutralInfo(s ServerInfo) cloudsim.InstanceInfo {
	return cloudsim.InstanceInfo{
		ID: s.ID, Name: s.Name, Zone: s.Zone, InstanceType: s.FlavorName,
		State: neutralStates[s.Status], CloudState: s.Status,
		PrivateIP: s.PrivateIP, PublicIP: s.PublicIP,
		// The upstream OpenStack CCM names Nodes after the server; the
		// kubelet registers the hostname cloud-init set from it.
		Hostname:    s.Hostname,
		Tags:        maps.Clone(s.Metadata),
		PrivateIPv6: s.PrivateIPv6,
	}
}

// nodeIPv6Subnet is the node network's IPv6 subnet, and whether Neutron
// addresses its ports by itself (SLAAC, DHCPv6-stateless).
func (e *Emulator) nodeIPv6Subnet() (id string, auto, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.subnets.Get(e.fixture.SubnetIPv6ID)
	if !ok {
		return "", false, false
	}
	return s.id, s.autoAddress(), true
}
