package aws

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

type targetGroup struct {
	arn        string
	name       string
	protocol   string
	port       int
	vpcID      string
	targetType string
	// ipType is the IpAddressType, ipv4 or ipv6 (elbv2_ipv6.go); it is
	// fixed at creation (ModifyTargetGroup has no such field).
	ipType     string
	hc         healthCheck
	attributes map[string]string
	targets    []target
	tags       map[string]string
}

type healthCheck struct {
	enabled   bool
	protocol  string
	port      string // "traffic-port" or a number
	path      string
	interval  int
	timeout   int
	healthy   int
	unhealthy int
	matcher   string // HTTP codes, for HTTP(S) checks
}

type target struct {
	id   string
	port int
}

// networkProtocols are what Network Load Balancer listeners and target
// groups speak; HTTP and HTTPS belong to Application Load Balancers.
var networkProtocols = []string{"TCP", "UDP", "TCP_UDP", "TLS"}

func isHTTP(proto string) bool { return proto == "HTTP" || proto == "HTTPS" }

// defaultHealthCheck mirrors ELBv2's defaults for a new target group.
func defaultHealthCheck(protocol string) healthCheck {
	if isHTTP(protocol) {
		return healthCheck{enabled: true, protocol: protocol, port: "traffic-port", path: "/",
			interval: 30, timeout: 5, healthy: 5, unhealthy: 2, matcher: "200"}
	}
	return healthCheck{enabled: true, protocol: "TCP", port: "traffic-port",
		interval: 30, timeout: 10, healthy: 5, unhealthy: 2}
}

// applyHealthCheck overlays the HealthCheck* parameters on hc and
// validates the result the way ELBv2 does.
func applyHealthCheck(hc *healthCheck, p params, tgProtocol string) error {
	if v := p.get("HealthCheckEnabled"); v != "" {
		hc.enabled = v == "true"
	}
	if v := p.get("HealthCheckProtocol"); v != "" {
		switch {
		case v != "TCP" && !isHTTP(v):
			return validation("Health check protocol '%s' is not supported; use TCP, HTTP or HTTPS", v)
		case isHTTP(tgProtocol) && v == "TCP":
			return validation("Health check protocol 'TCP' is not supported for target groups with protocol '%s'", tgProtocol)
		}
		if isHTTP(v) && !isHTTP(hc.protocol) {
			// Switching a TCP check to HTTP brings the HTTP defaults along.
			hc.path, hc.matcher, hc.timeout = "/", "200-399", 6
		}
		if v == "TCP" {
			hc.path, hc.matcher = "", ""
		}
		hc.protocol = v
	}
	if v := p.get("HealthCheckPort"); v != "" {
		if n, err := strconv.Atoi(v); v != "traffic-port" && (err != nil || n < 1 || n > 65535) {
			return validation("Health check port '%s' must be 'traffic-port' or within 1-65535", v)
		}
		hc.port = v
	}
	if v := p.get("HealthCheckPath"); v != "" {
		if !isHTTP(hc.protocol) {
			return validation("A health check path is only supported for HTTP and HTTPS health checks")
		}
		if !strings.HasPrefix(v, "/") || len(v) > 1024 {
			return validation("Health check path '%s' must begin with '/' and be at most 1024 characters", v)
		}
		hc.path = v
	}
	if v := p.get("Matcher.HttpCode"); v != "" {
		hc.matcher = v
	}
	for _, f := range []struct {
		key      string
		dst      *int
		min, max int
	}{
		{"HealthCheckIntervalSeconds", &hc.interval, 5, 300},
		{"HealthCheckTimeoutSeconds", &hc.timeout, 2, 120},
		{"HealthyThresholdCount", &hc.healthy, 2, 10},
		{"UnhealthyThresholdCount", &hc.unhealthy, 2, 10},
	} {
		n, ok, err := p.intParam(f.key)
		if err != nil || ok && (n < f.min || n > f.max) {
			return validation("%s '%s' must be within %d-%d", f.key, p.get(f.key), f.min, f.max)
		}
		if ok {
			*f.dst = n
		}
	}
	// An Application Load Balancer's target groups (HTTP/HTTPS) need the
	// timeout below the interval; a Network Load Balancer's only not above
	// it (since NLB health checks became configurable, Nov 2022), which is
	// what the upstream AWS CCM's 10 s / 10 s for Local Services relies on.
	if isHTTP(tgProtocol) && hc.timeout >= hc.interval {
		return validation("Health check timeout '%d' must be smaller than the interval '%d'", hc.timeout, hc.interval)
	}
	if hc.timeout > hc.interval {
		return validation("Health check timeout '%d' must not be greater than the interval '%d'", hc.timeout, hc.interval)
	}
	return nil
}

func defaultTGAttributes(protocol, targetType string) map[string]string {
	attrs := map[string]string{
		"deregistration_delay.timeout_seconds": "300",
		"stickiness.enabled":                   "false",
		"load_balancing.cross_zone.enabled":    "use_load_balancer_configuration",
	}
	if isHTTP(protocol) {
		attrs["stickiness.type"] = "lb_cookie"
		attrs["stickiness.lb_cookie.duration_seconds"] = "86400"
		attrs["load_balancing.algorithm.type"] = "round_robin"
		attrs["slow_start.duration_seconds"] = "0"
		return attrs
	}
	attrs["stickiness.type"] = "source_ip"
	attrs["deregistration_delay.connection_termination.enabled"] = "false"
	attrs["proxy_protocol_v2.enabled"] = "false"
	// Client IPs are preserved for instance targets, and always for UDP.
	attrs["preserve_client_ip.enabled"] = strconv.FormatBool(targetType == "instance" || strings.Contains(protocol, "UDP"))
	attrs["target_health_state.unhealthy.connection_termination.enabled"] = "true"
	attrs["target_group_health.dns_failover.minimum_healthy_targets.count"] = "1"
	attrs["target_group_health.dns_failover.minimum_healthy_targets.percentage"] = "off"
	attrs["target_group_health.unhealthy_state_routing.minimum_healthy_targets.count"] = "1"
	attrs["target_group_health.unhealthy_state_routing.minimum_healthy_targets.percentage"] = "off"
	return attrs
}

func (e *Emulator) createTargetGroup(p params) (any, error) {
	name := p.get("Name")
	if err := checkELBName("Target group", name); err != nil {
		return nil, err
	}
	targetType := orDefault(p.get("TargetType"), "instance")
	if targetType != "instance" && targetType != "ip" {
		return nil, validation("Target type '%s' is not supported by cloudsim; use instance or ip", targetType)
	}
	protocol := p.get("Protocol")
	if !slices.Contains(networkProtocols, protocol) && !isHTTP(protocol) {
		return nil, validation("Protocol '%s' must be one of TCP, UDP, TCP_UDP, TLS, HTTP, HTTPS", protocol)
	}
	port, ok, err := p.intParam("Port")
	if err != nil || !ok || port < 1 || port > 65535 {
		return nil, validation("A port within 1-65535 must be specified")
	}
	vpcID := p.get("VpcId")
	if vpcID == "" {
		return nil, validation("A VPC ID must be specified")
	}
	if _, ok := e.vpcs.Get(vpcID); !ok {
		return nil, validation("The VPC ID '%s' is not found", vpcID)
	}
	ipType := orDefault(p.get("IpAddressType"), ipTypeIPv4)
	if ipType != ipTypeIPv4 && ipType != tgTypeIPv6 {
		return nil, validation("IP address type '%s' is not valid for a target group; valid values are [ipv4 ipv6]", ipType)
	}
	hc := defaultHealthCheck(protocol)
	if err := applyHealthCheck(&hc, p, protocol); err != nil {
		return nil, err
	}
	tags, err := elbTagParams(p, "Tags.member")
	if err != nil {
		return nil, err
	}

	// Idempotent like CreateLoadBalancer: same name and settings returns it.
	for _, tg := range e.targetGroups.All() {
		if tg.name != name {
			continue
		}
		if tg.protocol == protocol && tg.port == port && tg.vpcID == vpcID && tg.targetType == targetType && tg.ipType == ipType && tg.hc == hc {
			return targetGroupsResponse{TargetGroups: []xmlTargetGroup{e.xmlTargetGroup(tg)}}, nil
		}
		return nil, apiErr("DuplicateTargetGroupName", "A target group with the same name '%s' exists, but with different settings", name)
	}

	seq := e.nextSeq()
	tg := &targetGroup{
		name: name, protocol: protocol, port: port, vpcID: vpcID, targetType: targetType, ipType: ipType, hc: hc,
		arn:        e.arn(fmt.Sprintf("targetgroup/%s/%016x", name, seq)),
		attributes: defaultTGAttributes(protocol, targetType),
		tags:       tags,
	}
	e.targetGroups.Put(tg)
	return targetGroupsResponse{TargetGroups: []xmlTargetGroup{e.xmlTargetGroup(tg)}}, nil
}

type xmlTargetGroup struct {
	TargetGroupArn             string   `xml:"TargetGroupArn"`
	TargetGroupName            string   `xml:"TargetGroupName"`
	Protocol                   string   `xml:"Protocol"`
	Port                       int      `xml:"Port"`
	VpcID                      string   `xml:"VpcId"`
	HealthCheckProtocol        string   `xml:"HealthCheckProtocol"`
	HealthCheckPort            string   `xml:"HealthCheckPort"`
	HealthCheckEnabled         bool     `xml:"HealthCheckEnabled"`
	HealthCheckIntervalSeconds int      `xml:"HealthCheckIntervalSeconds"`
	HealthCheckTimeoutSeconds  int      `xml:"HealthCheckTimeoutSeconds"`
	HealthyThresholdCount      int      `xml:"HealthyThresholdCount"`
	UnhealthyThresholdCount    int      `xml:"UnhealthyThresholdCount"`
	HealthCheckPath            string   `xml:"HealthCheckPath,omitempty"`
	Matcher                    string   `xml:"Matcher>HttpCode,omitempty"`
	LoadBalancerArns           []string `xml:"LoadBalancerArns>member"`
	TargetType                 string   `xml:"TargetType"`
	IPAddressType              string   `xml:"IpAddressType"`
}

type targetGroupsResponse struct {
	TargetGroups []xmlTargetGroup `xml:"TargetGroups>member"`
	NextMarker   string           `xml:"NextMarker,omitempty"`
}

// tgLoadBalancers lists the load balancers whose listeners forward to tg.
func (e *Emulator) tgLoadBalancers(tg *targetGroup) []string {
	var arns []string
	for _, l := range e.listeners.All() {
		if l.forwardsTo(tg.arn) && !slices.Contains(arns, l.lbARN) {
			arns = append(arns, l.lbARN)
		}
	}
	return arns
}

func (e *Emulator) xmlTargetGroup(tg *targetGroup) xmlTargetGroup {
	return xmlTargetGroup{
		TargetGroupArn: tg.arn, TargetGroupName: tg.name, Protocol: tg.protocol, Port: tg.port, VpcID: tg.vpcID,
		HealthCheckProtocol: tg.hc.protocol, HealthCheckPort: tg.hc.port, HealthCheckEnabled: tg.hc.enabled,
		HealthCheckIntervalSeconds: tg.hc.interval, HealthCheckTimeoutSeconds: tg.hc.timeout,
		HealthyThresholdCount: tg.hc.healthy, UnhealthyThresholdCount: tg.hc.unhealthy,
		HealthCheckPath: tg.hc.path, Matcher: tg.hc.matcher,
		LoadBalancerArns: e.tgLoadBalancers(tg), TargetType: tg.targetType, IPAddressType: tg.ipType,
	}
}

func (e *Emulator) describeTargetGroups(p params) (any, error) {
	names, arns, lbARN := p.list("Names.member"), p.list("TargetGroupArns.member"), p.get("LoadBalancerArn")
	given := 0
	for _, set := range []bool{len(names) > 0, len(arns) > 0, lbARN != ""} {
		if set {
			given++
		}
	}
	if given > 1 {
		return nil, validation("Only one of LoadBalancerArn, TargetGroupArns or Names can be specified")
	}
	notFound := func(missing []string) error {
		return apiErr("TargetGroupNotFound", "Target groups '[%s]' not found", strings.Join(missing, ", "))
	}
	if missing := missingNames(e.targetGroups.All(), names, func(tg *targetGroup) string { return tg.name }); len(missing) > 0 {
		return nil, notFound(missing)
	}
	if lbARN != "" {
		if _, err := e.lbParam(p); err != nil {
			return nil, err
		}
	}
	selected := func(tg *targetGroup) bool {
		return (len(names) == 0 || slices.Contains(names, tg.name)) &&
			(lbARN == "" || slices.Contains(e.tgLoadBalancers(tg), lbARN))
	}
	tgs, next, err := elbDescribe(e.targetGroups, p, arns, notFound, selected)
	if err != nil {
		return nil, err
	}
	resp := targetGroupsResponse{NextMarker: next}
	for _, tg := range tgs {
		resp.TargetGroups = append(resp.TargetGroups, e.xmlTargetGroup(tg))
	}
	return resp, nil
}

func (e *Emulator) tgByARN(arn string) (*targetGroup, error) {
	return elbLookup(e.targetGroups, arn, arnTargetGroup, "target group", "TargetGroupNotFound", "Target groups '%s' not found")
}

func (e *Emulator) modifyTargetGroup(p params) (any, error) {
	tg, err := e.tgByARN(p.get("TargetGroupArn"))
	if err != nil {
		return nil, err
	}
	hc := tg.hc
	if err := applyHealthCheck(&hc, p, tg.protocol); err != nil {
		return nil, err
	}
	tg.hc = hc
	return targetGroupsResponse{TargetGroups: []xmlTargetGroup{e.xmlTargetGroup(tg)}}, nil
}

func (e *Emulator) describeTargetGroupAttributes(p params) (any, error) {
	tg, err := e.tgByARN(p.get("TargetGroupArn"))
	if err != nil {
		return nil, err
	}
	return attributesOf(tg.attributes), nil
}

func (e *Emulator) modifyTargetGroupAttributes(p params) (any, error) {
	tg, err := e.tgByARN(p.get("TargetGroupArn"))
	if err != nil {
		return nil, err
	}
	if err := modifyAttributes(p, tg.attributes, "Target group", checkAttributeValue); err != nil {
		return nil, err
	}
	return attributesOf(tg.attributes), nil
}

// deleteTargetGroup succeeds for unknown ARNs (ELBv2 documents no
// not-found error for it) but refuses while a listener forwards to it.
func (e *Emulator) deleteTargetGroup(p params) (any, error) {
	arn := p.get("TargetGroupArn")
	tg, err := e.tgByARN(arn)
	if err != nil {
		if err.(*apiError).Code == "TargetGroupNotFound" {
			return emptyResponse{}, nil
		}
		return nil, err
	}
	if lbs := e.tgLoadBalancers(tg); len(lbs) > 0 {
		return nil, apiErr("ResourceInUse", "Target group '%s' is currently in use by a listener or a rule", arn)
	}
	e.targetGroups.Delete(arn)
	return emptyResponse{}, nil
}

// --- targets ---

func (e *Emulator) parseTargets(p params, tg *targetGroup) ([]target, error) {
	specs := p.structs("Targets.member")
	if len(specs) == 0 {
		return nil, validation("At least one target must be specified")
	}
	var out []target
	for _, s := range specs {
		t := target{id: s.get("Id"), port: tg.port}
		if t.id == "" {
			return nil, validation("A target ID must be specified")
		}
		if n, ok, err := s.intParam("Port"); err != nil || ok && (n < 1 || n > 65535) {
			return nil, validation("Target port '%s' must be within 1-65535", s.get("Port"))
		} else if ok {
			t.port = n
		}
		out = append(out, t)
	}
	return out, nil
}

func (e *Emulator) registerTargets(p params) (any, error) {
	tg, err := e.tgByARN(p.get("TargetGroupArn"))
	if err != nil {
		return nil, err
	}
	targets, err := e.parseTargets(p, tg)
	if err != nil {
		return nil, err
	}
	for _, t := range targets {
		if err := e.checkTarget(tg, t); err != nil {
			return nil, err
		}
	}
	for _, t := range targets {
		if !slices.Contains(tg.targets, t) {
			tg.targets = append(tg.targets, t)
		}
	}
	return emptyResponse{}, nil
}

// checkTarget enforces what ELBv2 does: instance targets must be running
// instances in the target group's VPC, IP targets must be IPv4 addresses.
func (e *Emulator) checkTarget(tg *targetGroup, t target) error {
	if tg.targetType == "ip" {
		addr, err := netip.ParseAddr(t.id)
		switch {
		case tg.ipType == tgTypeIPv6 && (err != nil || !addr.Is6() || addr.Is4In6()):
			return ipv6TargetMismatch(t.id)
		case tg.ipType != tgTypeIPv6 && (err != nil || !addr.Is4()):
			return apiErr("InvalidTarget", "The IP address '%s' is not a valid IPv4 address", t.id)
		}
		return nil
	}
	inst, ok := e.instances.Get(t.id)
	switch {
	case !ok:
		return apiErr("InvalidTarget", "The following targets are not valid instances: '%s'", t.id)
	case inst.state != stateRunning && inst.state != statePending:
		return apiErr("InvalidTarget", "The following targets are not in a running state and cannot be registered: '%s'", t.id)
	case inst.vpcID != tg.vpcID:
		return apiErr("InvalidTarget", "The following targets are not in the target group's VPC '%s': '%s'", tg.vpcID, t.id)
	case tg.ipType == tgTypeIPv6 && !e.hasIPv6(inst):
		return missingPrimaryIPv6(t.id)
	}
	return nil
}

// deregisterTargets forgets the targets; ones not registered are ignored.
func (e *Emulator) deregisterTargets(p params) (any, error) {
	tg, err := e.tgByARN(p.get("TargetGroupArn"))
	if err != nil {
		return nil, err
	}
	targets, err := e.parseTargets(p, tg)
	if err != nil {
		return nil, err
	}
	tg.targets = slices.DeleteFunc(tg.targets, func(t target) bool { return slices.Contains(targets, t) })
	return emptyResponse{}, nil
}

type xmlTargetHealthDescription struct {
	Target struct {
		ID   string `xml:"Id"`
		Port int    `xml:"Port"`
	} `xml:"Target"`
	HealthCheckPort string `xml:"HealthCheckPort"`
	TargetHealth    struct {
		State       string `xml:"State"`
		Reason      string `xml:"Reason,omitempty"`
		Description string `xml:"Description,omitempty"`
	} `xml:"TargetHealth"`
}

type describeTargetHealthResponse struct {
	Descriptions []xmlTargetHealthDescription `xml:"TargetHealthDescriptions>member"`
}

// health is a target's health: healthy while its instance runs and a
// load balancer uses the group, as if every health check passed.
func (e *Emulator) health(tg *targetGroup, t target, registered bool) (state, reason, desc string) {
	switch {
	case !registered:
		return "unused", "Target.NotRegistered", "Target is not registered to the target group"
	case len(e.tgLoadBalancers(tg)) == 0:
		return "unused", "Target.NotInUse", "Target group is not configured to receive traffic from the load balancer"
	case tg.targetType == "ip":
		return "healthy", "", ""
	}
	inst, ok := e.instances.Get(t.id)
	switch {
	case !ok || inst.state == stateTerminated || inst.state == stateShuttingDown:
		return "unhealthy", "Target.InvalidState", "Target is in the terminated state"
	case inst.state == stateStopped || inst.state == stateStopping:
		return "unused", "Target.InvalidState", "Target is in the stopped state"
	case inst.state == statePending:
		return "initial", "Elb.RegistrationInProgress", "Target registration is in progress"
	}
	return "healthy", "", ""
}

func (e *Emulator) describeTargetHealth(p params) (any, error) {
	tg, err := e.tgByARN(p.get("TargetGroupArn"))
	if err != nil {
		return nil, err
	}
	targets := tg.targets
	asked := p.has("Targets")
	if asked {
		if targets, err = e.parseTargets(p, tg); err != nil {
			return nil, err
		}
	}
	var resp describeTargetHealthResponse
	for _, t := range targets {
		var d xmlTargetHealthDescription
		d.Target.ID, d.Target.Port = t.id, t.port
		d.HealthCheckPort = tg.hc.port
		if d.HealthCheckPort == "traffic-port" {
			d.HealthCheckPort = strconv.Itoa(t.port)
		}
		d.TargetHealth.State, d.TargetHealth.Reason, d.TargetHealth.Description =
			e.health(tg, t, slices.Contains(tg.targets, t))
		resp.Descriptions = append(resp.Descriptions, d)
	}
	return resp, nil
}
