package aws

import (
	"fmt"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// The cloud-neutral instance admin API (cloudsim.Instances), on top of
// Launch, Stop, Start and Terminate.

var _ cloudsim.Instances = (*Emulator)(nil)

// neutralStates maps EC2 states to cloudsim's. The neutral set has no
// "terminating": shutting-down is irrevocable on EC2 (the instance never
// comes back), so it counts as terminated and CloudState tells the two
// apart.
var neutralStates = map[string]cloudsim.InstanceState{
	statePending:      cloudsim.InstancePending,
	stateRunning:      cloudsim.InstanceRunning,
	stateStopping:     cloudsim.InstanceStopping,
	stateStopped:      cloudsim.InstanceStopped,
	stateShuttingDown: cloudsim.InstanceTerminated,
	stateTerminated:   cloudsim.InstanceTerminated,
}

// LaunchInstance implements cloudsim.Instances. spec.Name becomes the
// Name tag, as EC2 consoles and tools name instances. spec.PodRanges
// become prefixes delegated to the primary interface (see
// LaunchSpec.PodRanges): "/28" or an IPv4 /28, "/80" or an IPv6 /80.
func (e *Emulator) LaunchInstance(spec cloudsim.InstanceSpec) (cloudsim.InstanceInfo, error) {
	tags := copyTags(spec.Tags)
	if spec.Name != "" {
		if n, ok := tags["Name"]; ok && n != spec.Name {
			return cloudsim.InstanceInfo{}, fmt.Errorf("name %q and Name tag %q disagree", spec.Name, n)
		}
		tags["Name"] = spec.Name
	}
	ids, err := e.Launch(LaunchSpec{
		Zone: spec.Zone, InstanceType: spec.InstanceType, PublicIP: spec.PublicIP, Tags: tags,
		PodRanges: spec.PodRanges, IPv6: spec.IPv6,
	})
	if err != nil {
		return cloudsim.InstanceInfo{}, err
	}
	info, _ := e.GetInstance(ids[0])
	return info, nil
}

// StopInstance implements cloudsim.Instances.
func (e *Emulator) StopInstance(id string) error { return e.Stop(id) }

// StartInstance implements cloudsim.Instances.
func (e *Emulator) StartInstance(id string) error { return e.Start(id) }

// TerminateInstance implements cloudsim.Instances. The instance stays
// listed, terminated, until Remove, as on EC2.
func (e *Emulator) TerminateInstance(id string) error { return e.Terminate(id) }

// GetInstance implements cloudsim.Instances.
func (e *Emulator) GetInstance(id string) (cloudsim.InstanceInfo, bool) {
	i, ok := e.Instance(id)
	if !ok {
		return cloudsim.InstanceInfo{}, false
	}
	return neutralInfo(i), true
}

// ListInstances implements cloudsim.Instances.
func (e *Emulator) ListInstances() []cloudsim.InstanceInfo {
	var out []cloudsim.InstanceInfo
	for _, i := range e.Instances() {
		out = append(out, neutralInfo(i))
	}
	return out
}

func neutralInfo(i InstanceInfo) cloudsim.InstanceInfo {
	info := cloudsim.InstanceInfo{
		ID: i.ID, Name: i.Tags["Name"], Zone: i.Zone, InstanceType: i.InstanceType,
		State: neutralStates[i.State], CloudState: i.State,
		PrivateIP: i.PrivateIP, PublicIP: i.PublicIP,
		// The upstream AWS CCM and kubelets with --cloud-provider=external
		// name Nodes after the private DNS name.
		Hostname:  i.PrivateDNSName,
		Tags:      i.Tags,
		PodRanges: i.PodRanges,
	}
	if len(i.IPv6Addresses) > 0 {
		info.PrivateIPv6 = i.IPv6Addresses[0]
	}
	return info
}
