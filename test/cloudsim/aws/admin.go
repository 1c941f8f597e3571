package aws

import (
	"fmt"
	"net/http"
	"net/netip"
	"slices"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// The Go admin API: what a test does to the cloud that the CCM does not,
// like launching and terminating instances. Every method is also served
// over HTTP under /admin/aws/ (see Admin).

// InstanceInfo is an instance as the admin API reports it.
type InstanceInfo struct {
	ID               string            `json:"id"`
	State            string            `json:"state"`
	InstanceType     string            `json:"instanceType"`
	Zone             string            `json:"zone"`
	SubnetID         string            `json:"subnetId,omitempty"`
	VPCID            string            `json:"vpcId,omitempty"`
	PrivateIP        string            `json:"privateIp,omitempty"`
	PrivateDNSName   string            `json:"privateDnsName,omitempty"`
	PublicIP         string            `json:"publicIp,omitempty"`
	PublicDNSName    string            `json:"publicDnsName,omitempty"`
	SecurityGroupIDs []string          `json:"securityGroupIds,omitempty"`
	Tags             map[string]string `json:"tags,omitempty"`
	// NetworkInterfaceID is the primary interface (device index 0), gone
	// once the instance is terminated.
	NetworkInterfaceID string `json:"networkInterfaceId,omitempty"`
	// PodRanges are the prefixes delegated to the primary interface,
	// IPv4 /28s first, then IPv6 /80s, each in assignment order: what a
	// node IPAM controller makes the Node's pod CIDRs.
	PodRanges []string `json:"podRanges,omitempty"`
	// IPv6Addresses are the primary interface's IPv6 addresses.
	IPv6Addresses []string `json:"ipv6Addresses,omitempty"`
}

// Launch creates instances and returns their IDs. They are running
// unless spec.State says otherwise.
func (e *Emulator) Launch(spec LaunchSpec) ([]string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.launch(spec)
}

// Stop stops running instances, releasing their public IPs.
func (e *Emulator) Stop(ids ...string) error {
	return e.transition(ids, stateStopped)
}

// Start starts stopped instances, giving them new public IPs if they had one.
func (e *Emulator) Start(ids ...string) error {
	return e.transition(ids, stateRunning)
}

// Terminate terminates instances. They stay listed, in state terminated
// and without addresses, until Remove; routes to them become blackholes.
func (e *Emulator) Terminate(ids ...string) error {
	return e.transition(ids, stateTerminated)
}

// Remove forgets terminated instances, as EC2 eventually does.
func (e *Emulator) Remove(ids ...string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, id := range ids {
		inst, ok := e.instances.Get(id)
		if !ok {
			return fmt.Errorf("instance %q: %w", id, cloudsim.ErrInstanceNotFound)
		}
		if inst.state != stateTerminated {
			return fmt.Errorf("instance %s is %s, not terminated: %w", id, inst.state, cloudsim.ErrInstanceState)
		}
	}
	for _, id := range ids {
		e.instances.Delete(id)
	}
	return nil
}

// SetInstanceState puts an instance in any EC2 state (pending, running,
// shutting-down, terminated, stopping, stopped), with the side effects of
// getting there.
func (e *Emulator) SetInstanceState(id, state string) error {
	if _, ok := stateCodes[state]; !ok {
		return fmt.Errorf("unknown instance state %q", state)
	}
	return e.transition([]string{id}, state)
}

// transition moves instances to state, all or none: a terminated
// instance can only stay terminated.
func (e *Emulator) transition(ids []string, state string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var insts []*instance
	for _, id := range ids {
		inst, ok := e.instances.Get(id)
		if !ok {
			return fmt.Errorf("instance %q: %w", id, cloudsim.ErrInstanceNotFound)
		}
		if inst.state == stateTerminated && state != stateTerminated {
			return fmt.Errorf("instance %s is terminated, cannot become %s: %w", id, state, cloudsim.ErrInstanceState)
		}
		insts = append(insts, inst)
	}
	for _, inst := range insts {
		e.setState(inst, state)
	}
	return nil
}

// Instances lists every instance, terminated ones included, in launch order.
func (e *Emulator) Instances() []InstanceInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []InstanceInfo
	for _, i := range e.instances.All() {
		out = append(out, e.instanceInfo(i))
	}
	return out
}

// Instance returns one instance.
func (e *Emulator) Instance(id string) (InstanceInfo, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	i, ok := e.instances.Get(id)
	if !ok {
		return InstanceInfo{}, false
	}
	return e.instanceInfo(i), true
}

func (e *Emulator) instanceInfo(i *instance) InstanceInfo {
	info := InstanceInfo{
		ID: i.id, State: i.state, InstanceType: i.instanceType, Zone: i.zone, SubnetID: i.subnetID, VPCID: i.vpcID,
		PrivateIP: i.privateIP, PrivateDNSName: privateDNSName(e.cfg.Region, i.privateIP),
		PublicIP: i.publicIP, PublicDNSName: e.publicDNS(i),
		SecurityGroupIDs: slices.Clone(i.securityGroups), Tags: copyTags(i.tags),
		NetworkInterfaceID: i.eniID,
	}
	if n, ok := e.networkInterfaces.Get(i.eniID); ok {
		info.PodRanges = n.podRanges()
		for _, a := range n.ipv6Addrs {
			info.IPv6Addresses = append(info.IPv6Addresses, a.String())
		}
	}
	return info
}

// CreateVPC creates a VPC with its main route table and default security group.
func (e *Emulator) CreateVPC(cidr string, tags map[string]string) (string, error) {
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil || !prefix.Addr().Is4() || prefix.Bits() < 16 || prefix.Bits() > 28 {
		return "", fmt.Errorf("VPC CIDR %q must be an IPv4 /16../28", cidr)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.createVPC(prefix, tags).id, nil
}

// AssociateVPCIPv6CIDR gives a VPC an Amazon-provided IPv6 /56, as
// AssociateVpcCidrBlock with AmazonProvidedIpv6CidrBlock does, and
// returns it. A VPC has at most one here.
func (e *Emulator) AssociateVPCIPv6CIDR(vpcID string) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	v, ok := e.vpcs.Get(vpcID)
	if !ok {
		return "", fmt.Errorf("unknown VPC %q", vpcID)
	}
	if err := e.associateVPCIPv6(v); err != nil {
		return "", err
	}
	return v.ipv6CIDR.String(), nil
}

// SubnetSpec describes a subnet for CreateSubnet.
type SubnetSpec struct {
	VPCID               string            `json:"vpcId"`
	Zone                string            `json:"zone"`
	CIDR                string            `json:"cidr"`
	MapPublicIPOnLaunch bool              `json:"mapPublicIpOnLaunch,omitempty"`
	Tags                map[string]string `json:"tags,omitempty"`
	// IPv6CIDR is the subnet's IPv6 block, a /64 of the VPC's /56; empty
	// makes an IPv4-only subnet, whose interfaces get no IPv6 at all.
	IPv6CIDR string `json:"ipv6Cidr,omitempty"`
}

// CreateSubnet creates a subnet within a VPC's CIDR.
func (e *Emulator) CreateSubnet(spec SubnetSpec) (string, error) {
	prefix, err := netip.ParsePrefix(spec.CIDR)
	if err != nil || !prefix.Addr().Is4() {
		return "", fmt.Errorf("subnet CIDR %q is not an IPv4 CIDR", spec.CIDR)
	}
	var ipv6 netip.Prefix
	if spec.IPv6CIDR != "" {
		if ipv6, err = netip.ParsePrefix(spec.IPv6CIDR); err != nil || !ipv6.Addr().Is6() {
			return "", fmt.Errorf("subnet IPv6 CIDR %q is not an IPv6 CIDR", spec.IPv6CIDR)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	s, err := e.createSubnet(spec.VPCID, spec.Zone, prefix, ipv6, spec.MapPublicIPOnLaunch, spec.Tags)
	if err != nil {
		return "", err
	}
	return s.id, nil
}

// CreateRouteTable creates a route table explicitly associated with subnetIDs.
func (e *Emulator) CreateRouteTable(vpcID string, subnetIDs []string, tags map[string]string) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	rt, err := e.createRouteTable(vpcID, subnetIDs, tags)
	if err != nil {
		return "", err
	}
	return rt.id, nil
}

// CreateSecurityGroup creates a security group, with EC2's validation.
func (e *Emulator) CreateSecurityGroup(vpcID, name, description string, tags map[string]string) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	sg, err := e.createSecurityGroupChecked(vpcID, name, description, tags)
	if err != nil {
		return "", err
	}
	return sg.id, nil
}

// Admin implements cloudsim.Cloud. Mounted at /admin/aws/:
//
//	GET  /fixture                what NewDefault built
//	GET  /instances              [InstanceInfo]
//	POST /instances              LaunchSpec -> {"instanceIds": [...]}
//	POST /instances/stop         {"instanceIds": [...]}; likewise start, terminate, remove
//	POST /instances/state        {"instanceId": "...", "state": "stopping"}
//	POST /vpcs                   {"cidr", "tags"} -> {"id"}
//	POST /vpcs/ipv6              {"vpcId"} -> {"ipv6Cidr"}, an Amazon-provided /56
//	POST /subnets                SubnetSpec -> {"id"}
//	POST /route-tables           {"vpcId", "subnetIds", "tags"} -> {"id"}
//	POST /security-groups        {"vpcId", "name", "description", "tags"} -> {"id"}
//	GET  /classic-load-balancers [ClassicLoadBalancerInfo]
//	GET  /certificates           ["<arn>", ...]
//	POST /certificates           {"arn": "..."}; /certificates/remove likewise
//	GET  /addresses              [AddressInfo]
//	POST /addresses              {"tags"} -> {"allocationId", "publicIp"}
//	POST /addresses/release      {"allocationId": "..."}
func (e *Emulator) Admin() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /fixture", func(w http.ResponseWriter, r *http.Request) {
		cloudsim.WriteJSON(w, http.StatusOK, e.Fixture())
	})
	mux.HandleFunc("GET /instances", func(w http.ResponseWriter, r *http.Request) {
		insts := e.Instances()
		if insts == nil {
			insts = []InstanceInfo{}
		}
		cloudsim.WriteJSON(w, http.StatusOK, insts)
	})
	mux.HandleFunc("POST /instances", cloudsim.AdminHandler(func(spec LaunchSpec) (any, error) {
		ids, err := e.Launch(spec)
		return map[string][]string{"instanceIds": ids}, err
	}, nil))
	lifecycle := map[string]func(...string) error{
		"stop": e.Stop, "start": e.Start, "terminate": e.Terminate, "remove": e.Remove,
	}
	for name, f := range lifecycle {
		mux.HandleFunc("POST /instances/"+name, cloudsim.AdminHandler(func(req struct {
			InstanceIDs []string `json:"instanceIds"`
		}) (any, error) {
			return map[string][]string{"instanceIds": req.InstanceIDs}, f(req.InstanceIDs...)
		}, nil))
	}
	mux.HandleFunc("POST /instances/state", cloudsim.AdminHandler(func(req struct {
		InstanceID string `json:"instanceId"`
		State      string `json:"state"`
	}) (any, error) {
		return req, e.SetInstanceState(req.InstanceID, req.State)
	}, nil))
	mux.HandleFunc("POST /vpcs", cloudsim.AdminHandler(func(req struct {
		CIDR string            `json:"cidr"`
		Tags map[string]string `json:"tags"`
	}) (any, error) {
		id, err := e.CreateVPC(req.CIDR, req.Tags)
		return map[string]string{"id": id}, err
	}, nil))
	mux.HandleFunc("POST /vpcs/ipv6", cloudsim.AdminHandler(func(req struct {
		VPCID string `json:"vpcId"`
	}) (any, error) {
		cidr, err := e.AssociateVPCIPv6CIDR(req.VPCID)
		return map[string]string{"ipv6Cidr": cidr}, err
	}, nil))
	mux.HandleFunc("POST /subnets", cloudsim.AdminHandler(func(spec SubnetSpec) (any, error) {
		id, err := e.CreateSubnet(spec)
		return map[string]string{"id": id}, err
	}, nil))
	mux.HandleFunc("POST /route-tables", cloudsim.AdminHandler(func(req struct {
		VPCID     string            `json:"vpcId"`
		SubnetIDs []string          `json:"subnetIds"`
		Tags      map[string]string `json:"tags"`
	}) (any, error) {
		id, err := e.CreateRouteTable(req.VPCID, req.SubnetIDs, req.Tags)
		return map[string]string{"id": id}, err
	}, nil))
	mux.HandleFunc("POST /security-groups", cloudsim.AdminHandler(func(req struct {
		VPCID       string            `json:"vpcId"`
		Name        string            `json:"name"`
		Description string            `json:"description"`
		Tags        map[string]string `json:"tags"`
	}) (any, error) {
		id, err := e.CreateSecurityGroup(req.VPCID, req.Name, req.Description, req.Tags)
		return map[string]string{"id": id}, err
	}, nil))
	e.classicAdminRoutes(mux)
	e.addressAdminRoutes(mux)
	return mux
}
