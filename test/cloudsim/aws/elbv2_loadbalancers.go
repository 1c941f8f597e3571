package aws

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

const (
	lbTypeNetwork     = "network"
	lbTypeApplication = "application"
)

type loadBalancer struct {
	arn            string
	name           string
	lbType         string
	scheme         string
	ipAddressType  string
	vpcID          string
	subnets        []string // ordered by zone
	securityGroups []string
	// createdWithSGs: an NLB created without security groups can never get any.
	createdWithSGs bool
	dnsName        string
	created        time.Time
	attributes     map[string]string
	tags           map[string]string
	// mappings are the static addresses by subnet (elbv2_addresses.go).
	mappings map[string]lbMapping
	// ipv6 are a dualstack load balancer's IPv6 addresses by subnet, and
	// prefixSourceNAT its EnablePrefixForIpv6SourceNat (elbv2_ipv6.go).
	ipv6            map[string]netip.Addr
	prefixSourceNAT bool
}

// state is provisioning until the configured delay has passed.
func (e *Emulator) lbState(lb *loadBalancer) string {
	if e.now().Before(lb.created.Add(e.cfg.LoadBalancerProvisioningDelay)) {
		return "provisioning"
	}
	return "active"
}

var lbNamePattern = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$`)

func checkELBName(kind, name string) error {
	switch {
	case name == "":
		return validation("%s name must be specified", kind)
	case len(name) > 32:
		return validation("%s name cannot be longer than '32' characters", kind)
	case !lbNamePattern.MatchString(name):
		return validation("%s name '%s' can only contain alphanumeric characters and hyphens, and cannot begin or end with a hyphen", kind, name)
	case kind == "Load balancer" && strings.HasPrefix(name, "internal-"):
		return validation("Load balancer name '%s' cannot begin with 'internal-'", name)
	}
	return nil
}

// lbSubnets resolves Subnets.member.N and SubnetMappings.member.N, checking
// what ELBv2 checks: the subnets exist, share a VPC and sit in distinct
// zones. They are returned ordered by zone.
func (e *Emulator) lbSubnets(p params, lbType string) ([]string, string, error) {
	ids := p.list("Subnets.member")
	for _, m := range p.structs("SubnetMappings.member") {
		ids = append(ids, m.get("SubnetId"))
	}
	if len(ids) == 0 {
		return nil, "", validation("At least one subnet must be specified")
	}
	vpcID := ""
	zones := map[string]bool{}
	for _, id := range ids {
		s, ok := e.subnets.Get(id)
		if !ok {
			return nil, "", apiErr("SubnetNotFound", "The subnet ID '%s' is not valid", id)
		}
		if vpcID != "" && s.vpcID != vpcID {
			return nil, "", apiErr("InvalidConfigurationRequest", "All subnets must belong to the same VPC")
		}
		vpcID = s.vpcID
		if zones[s.zone] {
			return nil, "", apiErr("InvalidConfigurationRequest", "A load balancer cannot be attached to multiple subnets in the same Availability Zone")
		}
		zones[s.zone] = true
	}
	if lbType == lbTypeApplication && len(ids) < 2 {
		return nil, "", validation("At least two subnets in two different Availability Zones must be specified")
	}
	zone := func(id string) string { s, _ := e.subnets.Get(id); return s.zone }
	sort.Slice(ids, func(i, j int) bool { return zone(ids[i]) < zone(ids[j]) })
	return ids, vpcID, nil
}

func (e *Emulator) lbSecurityGroups(ids []string, vpcID string) error {
	for _, id := range ids {
		sg, ok := e.securityGroups.Get(id)
		if !ok || (vpcID != "" && sg.vpcID != vpcID) {
			return apiErr("InvalidSecurityGroup", "Security group '%s' does not exist", id)
		}
	}
	return nil
}

func (e *Emulator) createLoadBalancer(p params) (any, error) {
	name := p.get("Name")
	if err := checkELBName("Load balancer", name); err != nil {
		return nil, err
	}
	lbType := orDefault(p.get("Type"), lbTypeApplication)
	if lbType != lbTypeNetwork && lbType != lbTypeApplication {
		return nil, validation("Load balancer type '%s' is not supported by cloudsim", lbType)
	}
	scheme := orDefault(p.get("Scheme"), "internet-facing")
	if scheme != "internet-facing" && scheme != "internal" {
		return nil, validation("Scheme '%s' must be one of [internet-facing, internal]", scheme)
	}
	ipType := orDefault(p.get("IpAddressType"), ipTypeIPv4)
	if err := checkIPAddressType(lbType, ipType); err != nil {
		return nil, err
	}
	prefixNAT := false
	switch v := p.get("EnablePrefixForIpv6SourceNat"); v {
	case "", "off":
	case "on":
		if lbType != lbTypeNetwork || ipType != ipTypeDualstack {
			return nil, validation("EnablePrefixForIpv6SourceNat can be on only for a Network Load Balancer of IP address type dualstack")
		}
		prefixNAT = true
	default:
		return nil, validation("EnablePrefixForIpv6SourceNat '%s' must be one of [on, off]", v)
	}
	subnets, vpcID, err := e.lbSubnets(p, lbType)
	if err != nil {
		return nil, err
	}
	if ipType == ipTypeDualstack {
		if err := e.checkDualstackSubnets(subnets); err != nil {
			return nil, err
		}
	}
	sgs := p.list("SecurityGroups.member")
	if err := e.lbSecurityGroups(sgs, vpcID); err != nil {
		return nil, err
	}
	tags, err := elbTagParams(p, "Tags.member")
	if err != nil {
		return nil, err
	}
	mappings, err := e.requestedMappings(p, lbType, scheme)
	if err != nil {
		return nil, err
	}

	// CreateLoadBalancer is idempotent: the same name with the same
	// settings returns the existing load balancer.
	for _, lb := range e.loadBalancers.All() {
		if lb.name != name {
			continue
		}
		if lb.lbType == lbType && lb.scheme == scheme && lb.ipAddressType == ipType &&
			sameSet(lb.subnets, subnets) && sameSet(lb.securityGroups, sgs) && sameMappings(lb, mappings) {
			return createLoadBalancerResponse{LoadBalancers: []xmlLoadBalancer{e.xmlLoadBalancer(lb)}}, nil
		}
		return nil, apiErr("DuplicateLoadBalancerName", "A load balancer with the same name '%s' exists, but with different settings", name)
	}

	seq := e.nextSeq()
	hex := fmt.Sprintf("%016x", seq)
	lb := &loadBalancer{
		name: name, lbType: lbType, scheme: scheme, ipAddressType: ipType, prefixSourceNAT: prefixNAT, vpcID: vpcID,
		subnets: subnets, securityGroups: slices.Clone(sgs), createdWithSGs: len(sgs) > 0,
		arn:        e.arn(fmt.Sprintf("loadbalancer/%s/%s/%s", lbTypeSegment(lbType), name, hex)),
		created:    e.now(),
		attributes: defaultLBAttributes(lbType),
		tags:       tags,
	}
	if lbType == lbTypeNetwork {
		lb.dnsName = fmt.Sprintf("%s-%s.elb.%s.amazonaws.com", name, hex, e.cfg.Region)
	} else {
		prefix := ""
		if scheme == "internal" {
			prefix = "internal-"
		}
		lb.dnsName = fmt.Sprintf("%s%s-%d.%s.elb.amazonaws.com", prefix, name, 1000000000+seq, e.cfg.Region)
	}
	if err := e.claimMappings(lb, mappings); err != nil {
		return nil, err
	}
	e.claimIPv6(lb)
	e.loadBalancers.Put(lb)
	return createLoadBalancerResponse{LoadBalancers: []xmlLoadBalancer{e.xmlLoadBalancer(lb)}}, nil
}

// orDefault returns v, or def when v is empty.
func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

type xmlLBAvailabilityZone struct {
	ZoneName              string         `xml:"ZoneName"`
	SubnetID              string         `xml:"SubnetId"`
	LoadBalancerAddresses []xmlLBAddress `xml:"LoadBalancerAddresses>member,omitempty"`
}

type xmlLoadBalancer struct {
	LoadBalancerArn       string                  `xml:"LoadBalancerArn"`
	DNSName               string                  `xml:"DNSName"`
	CanonicalHostedZoneID string                  `xml:"CanonicalHostedZoneId"`
	CreatedTime           string                  `xml:"CreatedTime"`
	LoadBalancerName      string                  `xml:"LoadBalancerName"`
	Scheme                string                  `xml:"Scheme"`
	VpcID                 string                  `xml:"VpcId"`
	State                 string                  `xml:"State>Code"`
	Type                  string                  `xml:"Type"`
	AvailabilityZones     []xmlLBAvailabilityZone `xml:"AvailabilityZones>member"`
	SecurityGroups        []string                `xml:"SecurityGroups>member"`
	IPAddressType         string                  `xml:"IpAddressType"`
}

type createLoadBalancerResponse struct {
	LoadBalancers []xmlLoadBalancer `xml:"LoadBalancers>member"`
}

type describeLoadBalancersResponse struct {
	LoadBalancers []xmlLoadBalancer `xml:"LoadBalancers>member"`
	NextMarker    string            `xml:"NextMarker,omitempty"`
}

func (e *Emulator) xmlAZs(lb *loadBalancer) []xmlLBAvailabilityZone {
	var out []xmlLBAvailabilityZone
	for _, id := range lb.subnets {
		s, _ := e.subnets.Get(id) // a load balancer's subnets cannot be deleted under it
		out = append(out, xmlLBAvailabilityZone{ZoneName: s.zone, SubnetID: id, LoadBalancerAddresses: e.lbAddresses(lb, id)})
	}
	return out
}

func (e *Emulator) xmlLoadBalancer(lb *loadBalancer) xmlLoadBalancer {
	return xmlLoadBalancer{
		LoadBalancerArn: lb.arn, DNSName: lb.dnsName,
		CanonicalHostedZoneID: canonicalHostedZoneID(e.cfg.Region, lb.lbType),
		CreatedTime:           awsTime(lb.created), LoadBalancerName: lb.name, Scheme: lb.scheme,
		VpcID: lb.vpcID, State: e.lbState(lb), Type: lb.lbType,
		AvailabilityZones: e.xmlAZs(lb), SecurityGroups: lb.securityGroups, IPAddressType: lb.ipAddressType,
	}
}

func (e *Emulator) describeLoadBalancers(p params) (any, error) {
	names, arns := p.list("Names.member"), p.list("LoadBalancerArns.member")
	if len(names) > 0 && len(arns) > 0 {
		return nil, validation("Load balancer names and load balancer ARNs cannot be specified at the same time")
	}
	notFound := func(missing []string) error {
		return apiErr("LoadBalancerNotFound", "Load balancers '[%s]' not found", strings.Join(missing, ", "))
	}
	if missing := missingNames(e.loadBalancers.All(), names, func(lb *loadBalancer) string { return lb.name }); len(missing) > 0 {
		return nil, notFound(missing)
	}
	named := func(lb *loadBalancer) bool { return len(names) == 0 || slices.Contains(names, lb.name) }
	lbs, next, err := elbDescribe(e.loadBalancers, p, arns, notFound, named)
	if err != nil {
		return nil, err
	}
	resp := describeLoadBalancersResponse{NextMarker: next}
	for _, lb := range lbs {
		resp.LoadBalancers = append(resp.LoadBalancers, e.xmlLoadBalancer(lb))
	}
	return resp, nil
}

// lbParam looks up LoadBalancerArn, which must be present and well formed.
func (e *Emulator) lbParam(p params) (*loadBalancer, error) {
	return elbLookup(e.loadBalancers, p.get("LoadBalancerArn"), arnLoadBalancer, "load balancer", "LoadBalancerNotFound", "Load balancer '%s' not found")
}

type emptyResponse struct{}

// deleteLoadBalancer succeeds for an unknown ARN, as ELBv2 does, and takes
// the load balancer's listeners with it; target groups survive.
func (e *Emulator) deleteLoadBalancer(p params) (any, error) {
	lb, err := e.lbParam(p)
	if err != nil {
		if ae, ok := err.(*apiError); ok && ae.Code == "LoadBalancerNotFound" {
			return emptyResponse{}, nil
		}
		return nil, err
	}
	if lb.attributes["deletion_protection.enabled"] == "true" {
		return nil, apiErr("OperationNotPermitted", "Load balancer '%s' cannot be deleted because deletion protection is enabled", lb.arn)
	}
	for _, l := range e.listeners.All() {
		if l.lbARN == lb.arn {
			e.listeners.Delete(l.arn)
		}
	}
	e.releaseMappings(lb, nil)
	e.releaseIPv6(lb, nil)
	e.loadBalancers.Delete(lb.arn)
	return emptyResponse{}, nil
}

type setSecurityGroupsResponse struct {
	SecurityGroupIDs []string `xml:"SecurityGroupIds>member"`
}

func (e *Emulator) setSecurityGroups(p params) (any, error) {
	lb, err := e.lbParam(p)
	if err != nil {
		return nil, err
	}
	if !p.has("SecurityGroups") {
		return nil, validation("Security groups must be specified")
	}
	sgs := p.list("SecurityGroups.member")
	if lb.lbType == lbTypeNetwork && !lb.createdWithSGs {
		return nil, apiErr("InvalidConfigurationRequest", "You cannot set security groups on a Network Load Balancer which was created without any security groups.")
	}
	if lb.lbType == lbTypeApplication && len(sgs) == 0 {
		return nil, validation("An Application Load Balancer must have at least one security group")
	}
	if err := e.lbSecurityGroups(sgs, lb.vpcID); err != nil {
		return nil, err
	}
	lb.securityGroups = slices.Clone(sgs)
	return setSecurityGroupsResponse{SecurityGroupIDs: lb.securityGroups}, nil
}

type setSubnetsResponse struct {
	AvailabilityZones []xmlLBAvailabilityZone `xml:"AvailabilityZones>member"`
	IPAddressType     string                  `xml:"IpAddressType"`
}

func (e *Emulator) setSubnets(p params) (any, error) {
	lb, err := e.lbParam(p)
	if err != nil {
		return nil, err
	}
	subnets, vpcID, err := e.lbSubnets(p, lb.lbType)
	if err != nil {
		return nil, err
	}
	if vpcID != lb.vpcID {
		return nil, apiErr("InvalidConfigurationRequest", "The subnets must belong to the load balancer's VPC '%s'", lb.vpcID)
	}
	if lb.ipAddressType == ipTypeDualstack {
		if err := e.checkDualstackSubnets(subnets); err != nil {
			return nil, err
		}
	}
	if err := e.setSubnetMappings(lb, p, subnets); err != nil {
		return nil, err
	}
	lb.subnets = subnets
	e.releaseIPv6(lb, subnets)
	e.claimIPv6(lb)
	return setSubnetsResponse{AvailabilityZones: e.xmlAZs(lb), IPAddressType: lb.ipAddressType}, nil
}

// --- attributes ---

func defaultLBAttributes(lbType string) map[string]string {
	attrs := map[string]string{
		"access_logs.s3.enabled":      "false",
		"access_logs.s3.bucket":       "",
		"access_logs.s3.prefix":       "",
		"deletion_protection.enabled": "false",
		"zonal_shift.config.enabled":  "false",
	}
	if lbType == lbTypeNetwork {
		attrs["load_balancing.cross_zone.enabled"] = "false"
		attrs["ipv6.deny_all_igw_traffic"] = "false"
		attrs["dns_record.client_routing_policy"] = "any_availability_zone"
	} else {
		attrs["load_balancing.cross_zone.enabled"] = "true"
		attrs["idle_timeout.timeout_seconds"] = "60"
		attrs["routing.http2.enabled"] = "true"
		attrs["routing.http.drop_invalid_header_fields.enabled"] = "false"
		attrs["routing.http.desync_mitigation_mode"] = "defensive"
		attrs["waf.fail_open.enabled"] = "false"
	}
	return attrs
}

type xmlAttribute struct {
	Key   string `xml:"Key"`
	Value string `xml:"Value"`
}

type attributesResponse struct {
	Attributes []xmlAttribute `xml:"Attributes>member"`
}

func attributesOf(attrs map[string]string) attributesResponse {
	var out attributesResponse
	for _, k := range sortedKeys(attrs) {
		out.Attributes = append(out.Attributes, xmlAttribute{Key: k, Value: attrs[k]})
	}
	return out
}

// modifyAttributes validates every Attributes.member.N against the known
// keys, then applies them all: an unknown key changes nothing.
func modifyAttributes(p params, attrs map[string]string, kind string, check func(k, v string) bool) error {
	changes := p.structs("Attributes.member")
	if len(changes) == 0 {
		return validation("At least one attribute must be specified")
	}
	for _, c := range changes {
		k, v := c.get("Key"), c.get("Value")
		if _, ok := attrs[k]; !ok {
			return validation("%s attribute key '%s' is not recognized", kind, k)
		}
		if !check(k, v) {
			return validation("%s attribute '%s' value '%s' is not valid", kind, k, v)
		}
	}
	for _, c := range changes {
		attrs[c.get("Key")] = c.get("Value")
	}
	return nil
}

// checkAttributeValue knows the value types of the attributes we emulate.
func checkAttributeValue(k, v string) bool {
	switch {
	case k == "load_balancing.cross_zone.enabled":
		return v == "true" || v == "false" || v == "use_load_balancer_configuration"
	case strings.HasSuffix(k, ".enabled"):
		return v == "true" || v == "false"
	case strings.HasSuffix(k, "_seconds"), strings.HasSuffix(k, ".count"):
		n, err := strconv.Atoi(v)
		return err == nil && n >= 0 && n <= 604800
	}
	return true
}

func (e *Emulator) describeLoadBalancerAttributes(p params) (any, error) {
	lb, err := e.lbParam(p)
	if err != nil {
		return nil, err
	}
	return attributesOf(lb.attributes), nil
}

func (e *Emulator) modifyLoadBalancerAttributes(p params) (any, error) {
	lb, err := e.lbParam(p)
	if err != nil {
		return nil, err
	}
	if err := modifyAttributes(p, lb.attributes, "Load balancer", checkAttributeValue); err != nil {
		return nil, err
	}
	return attributesOf(lb.attributes), nil
}
