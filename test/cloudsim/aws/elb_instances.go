package aws

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Classic ELB health checks and instance registration.

type clbHealthCheck struct {
	target                                string
	interval, timeout, unhealthy, healthy int
}

func (hc clbHealthCheck) xml() xmlCLBHealthCheck {
	return xmlCLBHealthCheck{Target: hc.target, Interval: hc.interval, Timeout: hc.timeout,
		UnhealthyThreshold: hc.unhealthy, HealthyThreshold: hc.healthy}
}

// healthCheckTarget is PROTOCOL:PORT, with a ping path for HTTP and HTTPS.
var healthCheckTarget = regexp.MustCompile(`^(?i)(TCP|SSL|HTTP|HTTPS):([0-9]{1,5})(.*)$`)

// parseHealthCheckTarget validates a target and spells its protocol in
// upper case, as AWS reports it.
func parseHealthCheckTarget(target string) (string, error) {
	m := healthCheckTarget.FindStringSubmatch(target)
	if m == nil {
		return "", validation("Health check target '%s' must be TCP:port, SSL:port, HTTP:port/path or HTTPS:port/path", target)
	}
	protocol, path := strings.ToUpper(m[1]), m[3]
	if port, _ := strconv.Atoi(m[2]); port < 1 || port > 65535 {
		return "", validation("Health check target '%s' has a port outside 1-65535", target)
	}
	switch {
	case isLayer7(protocol) && !strings.HasPrefix(path, "/"):
		return "", validation("Health check target '%s' of protocol %s must include a ping path starting with '/'", target, protocol)
	case !isLayer7(protocol) && path != "":
		return "", validation("Health check target '%s' of protocol %s cannot have a path", target, protocol)
	case len(target) > 1024:
		return "", validation("Health check target must be at most 1024 characters")
	}
	return protocol + ":" + m[2] + path, nil
}

func (e *Emulator) clbConfigureHealthCheck(p params) (any, error) {
	lb, err := e.clbParam(p)
	if err != nil {
		return nil, err
	}
	target := p.get("HealthCheck.Target")
	if target == "" {
		return nil, clbRequired("healthCheck.target")
	}
	hc := clbHealthCheck{}
	if hc.target, err = parseHealthCheckTarget(target); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		key, member string
		dst         *int
		lo, hi      int
	}{
		{"HealthCheck.Interval", "healthCheck.interval", &hc.interval, 5, 300},
		{"HealthCheck.Timeout", "healthCheck.timeout", &hc.timeout, 2, 60},
		{"HealthCheck.UnhealthyThreshold", "healthCheck.unhealthyThreshold", &hc.unhealthy, 2, 10},
		{"HealthCheck.HealthyThreshold", "healthCheck.healthyThreshold", &hc.healthy, 2, 10},
	} {
		n, ok, err := intRange(p, f.key, f.member, f.lo, f.hi)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, clbRequired(f.member)
		}
		*f.dst = n
	}
	if hc.timeout >= hc.interval {
		return nil, validation("Health check interval must be greater than the timeout.")
	}
	lb.healthCheck = hc
	return configureHealthCheckResponse{HealthCheck: hc.xml()}, nil
}

type configureHealthCheckResponse struct {
	HealthCheck xmlCLBHealthCheck `xml:"HealthCheck"`
}

// clbMembers lists lb's registered instances. A terminated (or removed)
// instance leaves the load balancer, as on AWS, so it is skipped here
// rather than deleted by every path that can terminate one.
func (e *Emulator) clbMembers(lb *classicLB) []string {
	var out []string
	for _, id := range lb.instances {
		if inst, ok := e.instances.Get(id); ok && inst.state != stateTerminated {
			out = append(out, id)
		}
	}
	return out
}

// clbInstanceIDs reads Instances.member.N.InstanceId.
func clbInstanceIDs(p params) ([]string, error) {
	var ids []string
	for i, s := range p.structs("Instances.member") {
		id := s.get("InstanceId")
		if id == "" {
			return nil, clbRequired("instances.member." + strconv.Itoa(i+1) + ".instanceId")
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

type clbInstancesResponse struct {
	Instances []xmlCLBInstance `xml:"Instances>member"`
}

// clbInstancesParams reads the load balancer and the non-empty
// Instances.member list that registering and deregistering both take.
func (e *Emulator) clbInstancesParams(p params) (*classicLB, []string, error) {
	lb, err := e.clbParam(p)
	if err != nil {
		return nil, nil, err
	}
	ids, err := clbInstanceIDs(p)
	if err != nil {
		return nil, nil, err
	}
	if len(ids) == 0 {
		return nil, nil, clbRequired("instances")
	}
	return lb, ids, nil
}

// clbRegisterInstances adds running instances of the load balancer's VPC;
// registering one twice is a no-op. All or none are registered.
func (e *Emulator) clbRegisterInstances(p params) (any, error) {
	lb, ids, err := e.clbInstancesParams(p)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		inst, ok := e.instances.Get(id)
		switch {
		case !ok || inst.state == stateTerminated:
			return nil, apiErr(codeCLBInvalidInstance, "Could not find EC2 instance %s.", id)
		case inst.state != stateRunning && inst.state != statePending:
			return nil, apiErr(codeCLBInvalidInstance, "EC2 instance %s is not in running state.", id)
		case inst.vpcID != lb.vpcID:
			return nil, apiErr(codeCLBInvalidInstance, "EC2 instance %s is not in the same VPC as ELB.", id)
		}
	}
	lb.instances = e.clbMembers(lb) // forget terminated ones for good
	for _, id := range ids {
		if !slices.Contains(lb.instances, id) {
			lb.instances = append(lb.instances, id)
		}
	}
	return clbInstancesResponse{Instances: xmlCLBInstances(lb.instances)}, nil
}

// clbDeregisterInstances removes instances. AWS answers InvalidInstance
// for one that is not registered, whether or not it exists, and then
// removes none.
func (e *Emulator) clbDeregisterInstances(p params) (any, error) {
	lb, ids, err := e.clbInstancesParams(p)
	if err != nil {
		return nil, err
	}
	members := e.clbMembers(lb)
	for _, id := range ids {
		if !slices.Contains(members, id) {
			return nil, apiErr(codeCLBInvalidInstance, "Could not find EC2 instance %s.", id)
		}
	}
	lb.instances = slices.DeleteFunc(members, func(id string) bool { return slices.Contains(ids, id) })
	return clbInstancesResponse{Instances: xmlCLBInstances(lb.instances)}, nil
}

type xmlCLBInstanceState struct {
	InstanceID  string `xml:"InstanceId"`
	State       string `xml:"State"`
	ReasonCode  string `xml:"ReasonCode"`
	Description string `xml:"Description"`
}

type describeInstanceHealthResponse struct {
	InstanceStates []xmlCLBInstanceState `xml:"InstanceStates>member"`
}

// instanceHealth is an instance's state on lb, in the API reference's
// words: InService while it runs in one of lb's zones, as if every health
// check passed; OutOfService otherwise, with whose doing it is.
func (e *Emulator) instanceHealth(lb *classicLB, inst *instance, registered bool) xmlCLBInstanceState {
	s := xmlCLBInstanceState{InstanceID: inst.id, State: "OutOfService", ReasonCode: "Instance"}
	switch {
	case !registered:
		s.ReasonCode, s.Description = "ELB", "Instance is not currently registered with the LoadBalancer."
	case inst.state == statePending:
		s.Description = "Instance is in pending state."
	case inst.state == stateStopped || inst.state == stateStopping:
		s.Description = "Instance is in stopped state."
	case inst.state == stateShuttingDown:
		s.Description = "Instance is in terminated state."
	case !slices.Contains(e.subnetZones(lb.subnets), inst.zone):
		s.ReasonCode, s.Description = "ELB", "Instance is in the EC2 Availability Zone for which LoadBalancer is not configured to route traffic to."
	default:
		s.State, s.ReasonCode, s.Description = "InService", "N/A", "N/A"
	}
	return s
}

// clbDescribeInstanceHealth reports the registered instances, or the ones
// asked for, registered or not; terminated instances are never reported.
func (e *Emulator) clbDescribeInstanceHealth(p params) (any, error) {
	lb, err := e.clbParam(p)
	if err != nil {
		return nil, err
	}
	ids, err := clbInstanceIDs(p)
	if err != nil {
		return nil, err
	}
	members := e.clbMembers(lb)
	if len(ids) == 0 {
		ids = members
	}
	var resp describeInstanceHealthResponse
	for _, id := range ids {
		inst, ok := e.instances.Get(id)
		if !ok {
			return nil, apiErr(codeCLBInvalidInstance, "Could not find EC2 instance %s.", id)
		}
		if inst.state == stateTerminated {
			continue
		}
		resp.InstanceStates = append(resp.InstanceStates, e.instanceHealth(lb, inst, slices.Contains(members, id)))
	}
	return resp, nil
}
