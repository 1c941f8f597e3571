package aws

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"time"
)

// The Classic Load Balancer API (Elastic Load Balancing 2012-06-01), which
// the upstream AWS CCM drives for Services without an NLB annotation
// (upstream: kubernetes/cloud-provider-aws
// pkg/providers/v1/aws_loadbalancer.go:1169 ensureLoadBalancer, at
// 63ec440c). It is awsQuery like ELBv2, with its own namespace, and
// addresses load balancers by name: the name is the ID.

const clbNamespace = "http://elasticloadbalancing.amazonaws.com/doc/2012-06-01/"

var clbHandlers = map[string]handler{
	"CreateLoadBalancer":                      (*Emulator).clbCreateLoadBalancer,
	"DescribeLoadBalancers":                   (*Emulator).clbDescribeLoadBalancers,
	"DeleteLoadBalancer":                      (*Emulator).clbDeleteLoadBalancer,
	"CreateLoadBalancerListeners":             (*Emulator).clbCreateListeners,
	"DeleteLoadBalancerListeners":             (*Emulator).clbDeleteListeners,
	"SetLoadBalancerListenerSSLCertificate":   (*Emulator).clbSetListenerCertificate,
	"ConfigureHealthCheck":                    (*Emulator).clbConfigureHealthCheck,
	"RegisterInstancesWithLoadBalancer":       (*Emulator).clbRegisterInstances,
	"DeregisterInstancesFromLoadBalancer":     (*Emulator).clbDeregisterInstances,
	"DescribeInstanceHealth":                  (*Emulator).clbDescribeInstanceHealth,
	"ModifyLoadBalancerAttributes":            (*Emulator).clbModifyAttributes,
	"DescribeLoadBalancerAttributes":          (*Emulator).clbDescribeAttributes,
	"CreateLoadBalancerPolicy":                (*Emulator).clbCreatePolicy,
	"CreateLBCookieStickinessPolicy":          (*Emulator).clbCreateLBCookiePolicy,
	"CreateAppCookieStickinessPolicy":         (*Emulator).clbCreateAppCookiePolicy,
	"DescribeLoadBalancerPolicies":            (*Emulator).clbDescribePolicies,
	"DescribeLoadBalancerPolicyTypes":         (*Emulator).clbDescribePolicyTypes,
	"DeleteLoadBalancerPolicy":                (*Emulator).clbDeletePolicy,
	"SetLoadBalancerPoliciesOfListener":       (*Emulator).clbSetListenerPolicies,
	"SetLoadBalancerPoliciesForBackendServer": (*Emulator).clbSetBackendPolicies,
	"ApplySecurityGroupsToLoadBalancer":       (*Emulator).clbApplySecurityGroups,
	"AttachLoadBalancerToSubnets":             (*Emulator).clbAttachSubnets,
	"DetachLoadBalancerFromSubnets":           (*Emulator).clbDetachSubnets,
	"AddTags":                                 (*Emulator).clbAddTags,
	"RemoveTags":                              (*Emulator).clbRemoveTags,
	"DescribeTags":                            (*Emulator).clbDescribeTags,
}

// classicLB is one Classic Load Balancer. It lives in a VPC: EC2-Classic
// is retired, so every load balancer has subnets.
type classicLB struct {
	name           string
	scheme         string
	vpcID          string
	subnets        []string // ordered by zone, one per zone
	securityGroups []string
	dnsName        string
	created        time.Time
	listeners      []*clbListener // ordered by LoadBalancerPort
	policies       []*clbPolicy   // in creation order
	// backendPolicies are SetLoadBalancerPoliciesForBackendServer's, by
	// instance port; a port with no policies has no entry.
	backendPolicies map[int][]string
	instances       []string // instance IDs in registration order
	healthCheck     clbHealthCheck
	attributes      clbAttributes
	tags            map[string]string
}

// --- the awsQuery envelope, in the 2012-06-01 namespace ---

// writeCLBResponse writes the awsQuery success envelope of the Classic ELB
// API: ELBv2's shape in the 2012-06-01 namespace.
func writeCLBResponse(w http.ResponseWriter, action, requestID string, body any) {
	inner, err := innerXML(body)
	if err != nil {
		writeCLBError(w, requestID, apiErr("InternalFailure", "cloudsim: marshal %s: %v", action, err))
		return
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, `<%sResponse xmlns="%s"><%sResult>`, action, clbNamespace, action)
	buf.Write(inner)
	fmt.Fprintf(&buf, `</%sResult><ResponseMetadata><RequestId>%s</RequestId></ResponseMetadata></%sResponse>`,
		action, requestID, action)
	writeXML(w, http.StatusOK, requestID, buf.Bytes())
}

// writeCLBError writes awsQuery's error shape; Type is Sender for 4xx,
// Receiver for 5xx, as in ELBv2.
func writeCLBError(w http.ResponseWriter, requestID string, e *apiError) {
	kind := "Sender"
	if e.status() >= 500 {
		kind = "Receiver"
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, `<ErrorResponse xmlns="%s"><Error><Type>%s</Type><Code>`, clbNamespace, kind)
	_ = xml.EscapeText(&buf, []byte(e.Code))
	buf.WriteString(`</Code><Message>`)
	_ = xml.EscapeText(&buf, []byte(e.Message))
	fmt.Fprintf(&buf, `</Message></Error><RequestId>%s</RequestId></ErrorResponse>`, requestID)
	writeXML(w, e.status(), requestID, buf.Bytes())
}

// --- errors ---

// Error codes of the Classic ELB API, as the SDK's typed errors spell them
// (LoadBalancerNotFound is AccessPointNotFoundException, InvalidInstance
// is InvalidEndPointException, DuplicateLoadBalancerName is
// DuplicateAccessPointNameException).
const (
	codeCLBNotFound        = "LoadBalancerNotFound"
	codeCLBDuplicateName   = "DuplicateLoadBalancerName"
	codeCLBInvalidConfig   = "InvalidConfigurationRequest"
	codeCLBInvalidInstance = "InvalidInstance"
	codeCLBListenerMissing = "ListenerNotFound"
	codeCLBPolicyMissing   = "PolicyNotFound"
	codeCertificateMissing = "CertificateNotFound"
)

// clbRequired is the awsQuery constraint error for a missing member; the
// SDK checks required members itself, so only hand-written requests see it.
func clbRequired(member string) *apiError {
	return validation("1 validation error detected: Value null at '%s' failed to satisfy constraint: Member must not be null", member)
}

// clbRange is the constraint error for an integer out of its range.
func clbRange(member, value string, lo, hi int) *apiError {
	return validation("1 validation error detected: Value '%s' at '%s' failed to satisfy constraint: Member must have value between %d and %d", value, member, lo, hi)
}

func clbNotFound(name string) *apiError {
	return apiErr(codeCLBNotFound, "There is no ACTIVE Load Balancer named '%s'", name)
}

func clbInvalidConfig(format string, args ...any) *apiError {
	return apiErr(codeCLBInvalidConfig, format, args...)
}

// clbParam looks up LoadBalancerName.
func (e *Emulator) clbParam(p params) (*classicLB, error) {
	name := p.get("LoadBalancerName")
	if name == "" {
		return nil, clbRequired("loadBalancerName")
	}
	lb, ok := e.classicLBs.Get(name)
	if !ok {
		return nil, clbNotFound(name)
	}
	return lb, nil
}

// intRange reads an optional integer member and checks its range.
func intRange(p params, key, member string, lo, hi int) (n int, ok bool, err error) {
	n, ok, perr := p.intParam(key)
	if perr != nil || ok && (n < lo || n > hi) {
		return 0, false, clbRange(member, p.get(key), lo, hi)
	}
	return n, ok, nil
}

// --- CreateLoadBalancer ---

func checkCLBName(name string) error {
	switch {
	case name == "":
		return clbRequired("loadBalancerName")
	case len(name) > 32:
		return validation("1 validation error detected: Value '%s' at 'loadBalancerName' failed to satisfy constraint: Member must have length less than or equal to 32", name)
	case !lbNamePattern.MatchString(name):
		return validation("LoadBalancerName '%s' must contain only alphanumeric characters or hyphens, and cannot begin or end with a hyphen", name)
	}
	return nil
}

// clbSubnets resolves subnet IDs for a load balancer in vpcID (any VPC
// when vpcID is ""): they must exist, share one VPC and sit one per zone.
// An internet-facing load balancer needs an internet gateway on the VPC,
// which is what InvalidSubnet means. The result is ordered by zone.
func (e *Emulator) clbSubnets(ids []string, vpcID, scheme string) ([]string, string, error) {
	zones := map[string]string{}
	for _, id := range ids {
		s, ok := e.subnets.Get(id)
		if !ok {
			return nil, "", apiErr("SubnetNotFound", "One or more subnets were not found: '%s'", id)
		}
		if vpcID != "" && s.vpcID != vpcID {
			return nil, "", clbInvalidConfig("Subnet '%s' is not in the load balancer's VPC '%s'", id, vpcID)
		}
		vpcID = s.vpcID
		if other, dup := zones[s.zone]; dup && other != id {
			return nil, "", clbInvalidConfig("ELB cannot be attached to multiple subnets in the same AZ: '%s' and '%s' are both in %s", other, id, s.zone)
		}
		zones[s.zone] = id
	}
	if scheme == "internet-facing" && !e.vpcHasInternetGateway(vpcID) {
		return nil, "", apiErr("InvalidSubnet", "VPC %s has no internet gateway", vpcID)
	}
	out := make([]string, 0, len(zones))
	for _, z := range sortedKeys(zones) {
		out = append(out, zones[z])
	}
	return out, vpcID, nil
}

func (e *Emulator) vpcHasInternetGateway(vpcID string) bool {
	for _, g := range e.internetGateways.All() {
		if g.vpcID == vpcID {
			return true
		}
	}
	return false
}

// clbSecurityGroups checks that security groups exist in vpcID; none
// means the VPC's default group, as for a Classic ELB created without any.
func (e *Emulator) clbSecurityGroups(ids []string, vpcID string) ([]string, error) {
	if len(ids) == 0 {
		for _, sg := range e.securityGroups.All() {
			if sg.vpcID == vpcID && sg.isDefault {
				return []string{sg.id}, nil
			}
		}
		return nil, clbInvalidConfig("VPC %s has no default security group; specify SecurityGroups", vpcID)
	}
	var out []string
	for _, id := range ids {
		sg, ok := e.securityGroups.Get(id)
		if !ok || sg.vpcID != vpcID {
			return nil, apiErr("InvalidSecurityGroup", "One or more security groups are invalid: '%s' is not a security group of VPC %s", id, vpcID)
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out, nil
}

type clbCreateResponse struct {
	DNSName string `xml:"DNSName"`
}

func (e *Emulator) clbCreateLoadBalancer(p params) (any, error) {
	name := p.get("LoadBalancerName")
	if err := checkCLBName(name); err != nil {
		return nil, err
	}
	scheme := orDefault(p.get("Scheme"), "internet-facing")
	if scheme != "internet-facing" && scheme != "internal" {
		return nil, validation("Scheme '%s' must be one of [internet-facing, internal]", scheme)
	}
	listeners, err := parseCLBListeners(p)
	if err != nil {
		return nil, err
	}
	if len(listeners) == 0 {
		return nil, clbRequired("listeners")
	}
	subnetIDs, zoneNames := p.list("Subnets.member"), p.list("AvailabilityZones.member")
	if len(subnetIDs) == 0 {
		if len(zoneNames) == 0 {
			return nil, validation("Either AvailabilityZones or SubnetIds must be specified")
		}
		// Without subnets AWS picks the default VPC's default subnets,
		// and the emulator models no default VPC.
		return nil, clbInvalidConfig("No default VPC for this account; specify Subnets")
	}
	subnets, vpcID, err := e.clbSubnets(subnetIDs, "", scheme)
	if err != nil {
		return nil, err
	}
	if len(zoneNames) > 0 && !sameSet(zoneNames, e.subnetZones(subnets)) {
		return nil, clbInvalidConfig("AvailabilityZones %v do not match the zones of the subnets %v", zoneNames, e.subnetZones(subnets))
	}
	sgs, err := e.clbSecurityGroups(p.list("SecurityGroups.member"), vpcID)
	if err != nil {
		return nil, err
	}
	if err := e.checkCLBListeners(nil, listeners); err != nil {
		return nil, err
	}
	tags, err := elbTagParams(p, "Tags.member")
	if err != nil {
		return nil, err
	}

	// The same name and configuration return the existing load balancer,
	// which is what lets a controller retry a create it lost the answer to.
	if lb, ok := e.classicLBs.Get(name); ok {
		if lb.scheme == scheme && sameSet(lb.subnets, subnets) && sameSet(lb.securityGroups, sgs) && sameListeners(lb.listeners, listeners) {
			return clbCreateResponse{DNSName: lb.dnsName}, nil
		}
		return nil, apiErr(codeCLBDuplicateName, "Load Balancer named '%s' already exists and it is configured with different parameters.", name)
	}

	seq := e.nextSeq()
	prefix := ""
	if scheme == "internal" {
		prefix = "internal-"
	}
	lb := &classicLB{
		name: name, scheme: scheme, vpcID: vpcID, subnets: subnets, securityGroups: sgs,
		dnsName:         fmt.Sprintf("%s%s-%d.%s.elb.amazonaws.com", prefix, name, 1000000000+seq, e.cfg.Region),
		created:         e.now(),
		backendPolicies: map[int][]string{},
		// AWS's defaults for a load balancer made through the API: a TCP
		// check on the first listener's instance port.
		healthCheck: clbHealthCheck{target: fmt.Sprintf("TCP:%d", listeners[0].instancePort), interval: 30, timeout: 5, unhealthy: 2, healthy: 10},
		attributes:  defaultCLBAttributes(),
		tags:        tags,
	}
	for _, l := range listeners {
		e.addCLBListener(lb, l)
	}
	e.classicLBs.Put(lb)
	return clbCreateResponse{DNSName: lb.dnsName}, nil
}

func (e *Emulator) subnetZones(ids []string) []string {
	var zones []string
	for _, id := range ids {
		s, _ := e.subnets.Get(id) // a load balancer's subnets cannot be deleted under it
		zones = append(zones, s.zone)
	}
	return zones
}

// --- DescribeLoadBalancers ---

type xmlCLBListener struct {
	Protocol         string `xml:"Protocol"`
	LoadBalancerPort int    `xml:"LoadBalancerPort"`
	InstanceProtocol string `xml:"InstanceProtocol"`
	InstancePort     int    `xml:"InstancePort"`
	SSLCertificateID string `xml:"SSLCertificateId,omitempty"`
}

type xmlCLBListenerDescription struct {
	Listener    xmlCLBListener `xml:"Listener"`
	PolicyNames []string       `xml:"PolicyNames>member"`
}

type xmlAppCookiePolicy struct {
	PolicyName string `xml:"PolicyName"`
	CookieName string `xml:"CookieName"`
}

type xmlLBCookiePolicy struct {
	PolicyName             string `xml:"PolicyName"`
	CookieExpirationPeriod int64  `xml:"CookieExpirationPeriod,omitempty"`
}

type xmlBackendServerDescription struct {
	InstancePort int      `xml:"InstancePort"`
	PolicyNames  []string `xml:"PolicyNames>member"`
}

type xmlCLBInstance struct {
	InstanceID string `xml:"InstanceId"`
}

type xmlCLBHealthCheck struct {
	Target             string `xml:"Target"`
	Interval           int    `xml:"Interval"`
	Timeout            int    `xml:"Timeout"`
	UnhealthyThreshold int    `xml:"UnhealthyThreshold"`
	HealthyThreshold   int    `xml:"HealthyThreshold"`
}

type xmlCLBDescription struct {
	LoadBalancerName          string                      `xml:"LoadBalancerName"`
	DNSName                   string                      `xml:"DNSName"`
	CanonicalHostedZoneName   string                      `xml:"CanonicalHostedZoneName"`
	CanonicalHostedZoneNameID string                      `xml:"CanonicalHostedZoneNameID"`
	ListenerDescriptions      []xmlCLBListenerDescription `xml:"ListenerDescriptions>member"`
	Policies                  struct {
		AppCookieStickinessPolicies []xmlAppCookiePolicy `xml:"AppCookieStickinessPolicies>member"`
		LBCookieStickinessPolicies  []xmlLBCookiePolicy  `xml:"LBCookieStickinessPolicies>member"`
		OtherPolicies               []string             `xml:"OtherPolicies>member"`
	} `xml:"Policies"`
	BackendServerDescriptions []xmlBackendServerDescription `xml:"BackendServerDescriptions>member"`
	AvailabilityZones         []string                      `xml:"AvailabilityZones>member"`
	Subnets                   []string                      `xml:"Subnets>member"`
	VPCID                     string                        `xml:"VPCId"`
	Instances                 []xmlCLBInstance              `xml:"Instances>member"`
	HealthCheck               xmlCLBHealthCheck             `xml:"HealthCheck"`
	SourceSecurityGroup       struct {
		OwnerAlias string `xml:"OwnerAlias"`
		GroupName  string `xml:"GroupName"`
	} `xml:"SourceSecurityGroup"`
	SecurityGroups []string `xml:"SecurityGroups>member"`
	CreatedTime    string   `xml:"CreatedTime"`
	Scheme         string   `xml:"Scheme"`
}

type clbDescribeResponse struct {
	LoadBalancerDescriptions []xmlCLBDescription `xml:"LoadBalancerDescriptions>member"`
	NextMarker               string              `xml:"NextMarker,omitempty"`
}

func xmlCLBInstances(ids []string) []xmlCLBInstance {
	out := make([]xmlCLBInstance, 0, len(ids))
	for _, id := range ids {
		out = append(out, xmlCLBInstance{InstanceID: id})
	}
	return out
}

func (e *Emulator) xmlCLB(lb *classicLB) xmlCLBDescription {
	d := xmlCLBDescription{
		LoadBalancerName: lb.name, DNSName: lb.dnsName, CanonicalHostedZoneName: lb.dnsName,
		// Classic and Application Load Balancers share a region's zone.
		CanonicalHostedZoneNameID: canonicalHostedZoneID(e.cfg.Region, lbTypeApplication),
		AvailabilityZones:         e.subnetZones(lb.subnets), Subnets: slices.Clone(lb.subnets), VPCID: lb.vpcID,
		Instances: xmlCLBInstances(e.clbMembers(lb)), HealthCheck: lb.healthCheck.xml(),
		SecurityGroups: slices.Clone(lb.securityGroups), CreatedTime: awsTime(lb.created), Scheme: lb.scheme,
	}
	for _, l := range lb.listeners {
		d.ListenerDescriptions = append(d.ListenerDescriptions, xmlCLBListenerDescription{Listener: l.xml(), PolicyNames: slices.Clone(l.policies)})
	}
	for _, pol := range lb.policies {
		switch pol.typeName {
		case policyTypeAppCookie:
			d.Policies.AppCookieStickinessPolicies = append(d.Policies.AppCookieStickinessPolicies,
				xmlAppCookiePolicy{PolicyName: pol.name, CookieName: pol.attribute("CookieName")})
		case policyTypeLBCookie:
			var period int64
			_, _ = fmt.Sscan(pol.attribute("CookieExpirationPeriod"), &period)
			d.Policies.LBCookieStickinessPolicies = append(d.Policies.LBCookieStickinessPolicies,
				xmlLBCookiePolicy{PolicyName: pol.name, CookieExpirationPeriod: period})
		default:
			d.Policies.OtherPolicies = append(d.Policies.OtherPolicies, pol.name)
		}
	}
	ports := make([]int, 0, len(lb.backendPolicies))
	for port := range lb.backendPolicies {
		ports = append(ports, port)
	}
	sort.Ints(ports)
	for _, port := range ports {
		d.BackendServerDescriptions = append(d.BackendServerDescriptions,
			xmlBackendServerDescription{InstancePort: port, PolicyNames: slices.Clone(lb.backendPolicies[port])})
	}
	// In a VPC the source security group is the load balancer's first
	// group, owned by the account.
	d.SourceSecurityGroup.OwnerAlias = e.cfg.AccountID
	if len(lb.securityGroups) > 0 {
		if sg, ok := e.securityGroups.Get(lb.securityGroups[0]); ok {
			d.SourceSecurityGroup.GroupName = sg.name
		}
	}
	return d
}

func (e *Emulator) clbDescribeLoadBalancers(p params) (any, error) {
	names := p.list("LoadBalancerNames.member")
	notFound := func(missing []string) error { return clbNotFound(missing[0]) }
	lbs, next, err := elbDescribe(e.classicLBs, p, names, notFound)
	if err != nil {
		return nil, err
	}
	resp := clbDescribeResponse{NextMarker: next}
	for _, lb := range lbs {
		resp.LoadBalancerDescriptions = append(resp.LoadBalancerDescriptions, e.xmlCLB(lb))
	}
	return resp, nil
}

// clbDeleteLoadBalancer succeeds for a load balancer that does not exist,
// as AWS documents; its listeners, policies and registrations go with it,
// its security groups stay.
func (e *Emulator) clbDeleteLoadBalancer(p params) (any, error) {
	name := p.get("LoadBalancerName")
	if name == "" {
		return nil, clbRequired("loadBalancerName")
	}
	e.classicLBs.Delete(name)
	return emptyResponse{}, nil
}
