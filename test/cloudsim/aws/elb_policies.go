package aws

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Classic ELB policies: named, typed attribute sets created on one load
// balancer and then enabled on listeners (SSL negotiation, stickiness) or
// on back-end instance ports (proxy protocol, back-end authentication).

const (
	policyTypeProxyProtocol  = "ProxyProtocolPolicyType"
	policyTypeSSLNegotiation = "SSLNegotiationPolicyType"
	policyTypeBackendAuth    = "BackendServerAuthenticationPolicyType"
	policyTypePublicKey      = "PublicKeyPolicyType"
	policyTypeAppCookie      = "AppCookieStickinessPolicyType"
	policyTypeLBCookie       = "LBCookieStickinessPolicyType"

	referenceSecurityPolicy = "Reference-Security-Policy"
)

type clbPolicy struct {
	name       string
	typeName   string
	attributes []policyAttribute // in request order
}

type policyAttribute struct{ name, value string }

func (p *clbPolicy) attribute(name string) string {
	for _, a := range p.attributes {
		if a.name == name {
			return a.value
		}
	}
	return ""
}

func (lb *classicLB) policy(name string) *clbPolicy {
	for _, p := range lb.policies {
		if p.name == name {
			return p
		}
	}
	return nil
}

// policyAttributeType describes one attribute a policy type takes.
type policyAttributeType struct {
	name, kind, cardinality, defaultValue, description string
}

// policyType is one of the policy types DescribeLoadBalancerPolicyTypes
// lists.
type policyType struct {
	name, description string
	attributes        []policyAttributeType
	// listener and backend say where policies of the type can be enabled.
	listener, backend bool
}

// sslProtocolAttributes are SSLNegotiationPolicyType's protocol switches;
// its other attributes are cipher names, each a Boolean switch too.
var sslProtocolAttributes = []string{"Protocol-SSLv3", "Protocol-TLSv1", "Protocol-TLSv1.1", "Protocol-TLSv1.2"}

var clbPolicyTypes = []policyType{
	{
		name:        policyTypeProxyProtocol,
		description: "Policy that controls whether to include the IP address and port of the originating request for TCP messages. This policy operates on TCP listeners only.",
		attributes:  []policyAttributeType{{"ProxyProtocol", "Boolean", "ONE", "", "Enable proxy protocol"}},
		backend:     true,
	},
	{
		name:        policyTypeSSLNegotiation,
		description: "Listener policy that defines the ciphers and protocols that will be accepted by the load balancer. This policy can be associated only with HTTPS/SSL listeners.",
		attributes: []policyAttributeType{
			{referenceSecurityPolicy, "String", "ZERO_OR_ONE", "", "The predefined security policy the negotiation configuration is taken from"},
			{"Protocol-SSLv3", "Boolean", "ZERO_OR_ONE", "false", ""},
			{"Protocol-TLSv1", "Boolean", "ZERO_OR_ONE", "true", ""},
			{"Protocol-TLSv1.1", "Boolean", "ZERO_OR_ONE", "true", ""},
			{"Protocol-TLSv1.2", "Boolean", "ZERO_OR_ONE", "true", ""},
			{"Server-Defined-Cipher-Order", "Boolean", "ZERO_OR_ONE", "true", ""},
		},
		listener: true,
	},
	{
		name:        policyTypeBackendAuth,
		description: "Policy that controls authentication to back-end server(s) and contains one or more policies, such as an instance of a PublicKeyPolicyType. This policy can be associated only with back-end servers that are using HTTPS/SSL.",
		attributes:  []policyAttributeType{{"PublicKeyPolicyName", "PolicyName", "ONE_OR_MORE", "", ""}},
		backend:     true,
	},
	{
		name:        policyTypePublicKey,
		description: "Policy containing a list of public keys to accept when authenticating the back-end server(s). This policy cannot be applied directly to back-end servers or listeners but must be part of a BackendServerAuthenticationPolicyType.",
		attributes:  []policyAttributeType{{"PublicKey", "String", "ONE", "", ""}},
	},
	{
		name:        policyTypeAppCookie,
		description: "Stickiness policy with session lifetimes controlled by the lifetime of the application-generated cookie. This policy can be associated only with HTTP/HTTPS listeners.",
		attributes:  []policyAttributeType{{"CookieName", "String", "ONE", "", ""}},
		listener:    true,
	},
	{
		name:        policyTypeLBCookie,
		description: "Stickiness policy with session lifetimes controlled by the browser (user-agent) or a specified expiration period. This policy can be associated only with HTTP/HTTPS listeners.",
		attributes:  []policyAttributeType{{"CookieExpirationPeriod", "Long", "ZERO_OR_ONE", "", ""}},
		listener:    true,
	},
}

func findPolicyType(name string) *policyType {
	for i := range clbPolicyTypes {
		if clbPolicyTypes[i].name == name {
			return &clbPolicyTypes[i]
		}
	}
	return nil
}

var policyNamePattern = regexp.MustCompile(`^[A-Za-z0-9-]+$`)

// checkPolicyAttributes validates attributes against their type: known
// names, values of the declared kind, required ones present.
func (e *Emulator) checkPolicyAttributes(lb *classicLB, pt *policyType, attrs []policyAttribute) error {
	seen := map[string]bool{}
	for _, a := range attrs {
		i := slices.IndexFunc(pt.attributes, func(t policyAttributeType) bool { return t.name == a.name })
		kind := "Boolean" // an SSLNegotiationPolicyType cipher switch
		if i >= 0 {
			kind = pt.attributes[i].kind
		} else if pt.name != policyTypeSSLNegotiation {
			return clbInvalidConfig("Attribute '%s' is not valid for policy type %s", a.name, pt.name)
		}
		if seen[a.name] && (i < 0 || !strings.HasSuffix(pt.attributes[i].cardinality, "MORE")) {
			return clbInvalidConfig("Attribute '%s' may be given once", a.name)
		}
		seen[a.name] = true
		switch kind {
		case "Boolean":
			if a.value != "true" && a.value != "false" {
				return clbInvalidConfig("Attribute '%s' takes true or false, not '%s'", a.name, a.value)
			}
		case "Long":
			if _, err := strconv.ParseInt(a.value, 10, 64); err != nil || strings.HasPrefix(a.value, "-") {
				return clbInvalidConfig("Attribute '%s' takes a non-negative integer, not '%s'", a.name, a.value)
			}
		case "PolicyName":
			ref := lb.policy(a.value)
			if ref == nil || ref.typeName != policyTypePublicKey {
				return clbInvalidConfig("Attribute '%s' must name a %s policy of this load balancer, not '%s'", a.name, policyTypePublicKey, a.value)
			}
		}
		if a.name == referenceSecurityPolicy && !isCLBSSLPolicy(a.value) {
			return clbInvalidConfig("Reference-Security-Policy '%s' is not a predefined security policy", a.value)
		}
	}
	for _, t := range pt.attributes {
		if strings.HasPrefix(t.cardinality, "ONE") && !seen[t.name] {
			return clbInvalidConfig("Policy type %s requires the attribute '%s'", pt.name, t.name)
		}
	}
	return nil
}

// addPolicy creates a policy on lb. Creating it again with the same type
// and attributes succeeds without change: the upstream AWS CCM creates its
// proxy protocol policy on every sync and relies on that (upstream:
// kubernetes/cloud-provider-aws pkg/providers/v1/aws_loadbalancer.go:1330
// at 63ec440c, "the aws-sdk does not seem to return an error").
func (e *Emulator) addPolicy(lb *classicLB, pol *clbPolicy) error {
	if pol.name == "" {
		return clbRequired("policyName")
	}
	if !policyNamePattern.MatchString(pol.name) {
		return validation("PolicyName '%s' must consist of alphanumeric characters and dashes", pol.name)
	}
	pt := findPolicyType(pol.typeName)
	if pt == nil {
		return apiErr("PolicyTypeNotFound", "There is no policy type named '%s'", pol.typeName)
	}
	if err := e.checkPolicyAttributes(lb, pt, pol.attributes); err != nil {
		return err
	}
	if old := lb.policy(pol.name); old != nil {
		if old.typeName == pol.typeName && slices.Equal(old.attributes, pol.attributes) {
			return nil
		}
		return apiErr("DuplicatePolicyName", "Policy '%s' already exists for load balancer %s with a different configuration", pol.name, lb.name)
	}
	lb.policies = append(lb.policies, pol)
	return nil
}

func (e *Emulator) clbCreatePolicy(p params) (any, error) {
	lb, err := e.clbParam(p)
	if err != nil {
		return nil, err
	}
	typeName := p.get("PolicyTypeName")
	if typeName == "" {
		return nil, clbRequired("policyTypeName")
	}
	pol := &clbPolicy{name: p.get("PolicyName"), typeName: typeName}
	for _, a := range p.structs("PolicyAttributes.member") {
		pol.attributes = append(pol.attributes, policyAttribute{name: a.get("AttributeName"), value: a.get("AttributeValue")})
	}
	if err := e.addPolicy(lb, pol); err != nil {
		return nil, err
	}
	return emptyResponse{}, nil
}

func (e *Emulator) clbCreateLBCookiePolicy(p params) (any, error) {
	lb, err := e.clbParam(p)
	if err != nil {
		return nil, err
	}
	pol := &clbPolicy{name: p.get("PolicyName"), typeName: policyTypeLBCookie}
	if v := p.get("CookieExpirationPeriod"); v != "" {
		pol.attributes = []policyAttribute{{name: "CookieExpirationPeriod", value: v}}
	}
	if err := e.addPolicy(lb, pol); err != nil {
		return nil, err
	}
	return emptyResponse{}, nil
}

func (e *Emulator) clbCreateAppCookiePolicy(p params) (any, error) {
	lb, err := e.clbParam(p)
	if err != nil {
		return nil, err
	}
	cookie := p.get("CookieName")
	if cookie == "" {
		return nil, clbRequired("cookieName")
	}
	pol := &clbPolicy{name: p.get("PolicyName"), typeName: policyTypeAppCookie, attributes: []policyAttribute{{name: "CookieName", value: cookie}}}
	if err := e.addPolicy(lb, pol); err != nil {
		return nil, err
	}
	return emptyResponse{}, nil
}

type xmlPolicyAttribute struct {
	AttributeName  string `xml:"AttributeName"`
	AttributeValue string `xml:"AttributeValue"`
}

type xmlPolicyDescription struct {
	PolicyName                  string               `xml:"PolicyName"`
	PolicyTypeName              string               `xml:"PolicyTypeName"`
	PolicyAttributeDescriptions []xmlPolicyAttribute `xml:"PolicyAttributeDescriptions>member"`
}

type describePoliciesResponse struct {
	PolicyDescriptions []xmlPolicyDescription `xml:"PolicyDescriptions>member"`
}

func xmlPolicy(p *clbPolicy) xmlPolicyDescription {
	d := xmlPolicyDescription{PolicyName: p.name, PolicyTypeName: p.typeName}
	for _, a := range p.attributes {
		d.PolicyAttributeDescriptions = append(d.PolicyAttributeDescriptions, xmlPolicyAttribute{AttributeName: a.name, AttributeValue: a.value})
	}
	return d
}

// predefinedPolicies are the security policies DescribeLoadBalancerPolicies
// describes when no load balancer is named. Their cipher lists are left
// out; the protocol switches and the server cipher order are given.
func predefinedPolicies() []*clbPolicy {
	var out []*clbPolicy
	for _, sp := range clbSSLPolicies {
		pol := &clbPolicy{name: sp.name, typeName: policyTypeSSLNegotiation}
		for _, proto := range sslProtocolAttributes {
			enabled := slices.Contains(sp.protocols, strings.TrimPrefix(proto, "Protocol-"))
			pol.attributes = append(pol.attributes, policyAttribute{name: proto, value: strconv.FormatBool(enabled)})
		}
		pol.attributes = append(pol.attributes, policyAttribute{name: "Server-Defined-Cipher-Order", value: "true"})
		out = append(out, pol)
	}
	return out
}

// clbDescribePolicies describes a load balancer's policies, or without
// one the predefined policies; every name asked for must exist.
func (e *Emulator) clbDescribePolicies(p params) (any, error) {
	pols, where := predefinedPolicies(), "the predefined policies"
	if p.get("LoadBalancerName") != "" {
		lb, err := e.clbParam(p)
		if err != nil {
			return nil, err
		}
		pols, where = lb.policies, "load balancer "+lb.name
	}
	names := p.list("PolicyNames.member")
	var resp describePoliciesResponse
	for _, pol := range pols {
		if len(names) == 0 || slices.Contains(names, pol.name) {
			resp.PolicyDescriptions = append(resp.PolicyDescriptions, xmlPolicy(pol))
		}
	}
	for _, n := range names {
		if !slices.ContainsFunc(pols, func(pol *clbPolicy) bool { return pol.name == n }) {
			return nil, apiErr(codeCLBPolicyMissing, "There is no policy with name %s for %s", n, where)
		}
	}
	return resp, nil
}

type xmlPolicyAttributeType struct {
	AttributeName string `xml:"AttributeName"`
	AttributeType string `xml:"AttributeType"`
	Description   string `xml:"Description,omitempty"`
	DefaultValue  string `xml:"DefaultValue,omitempty"`
	Cardinality   string `xml:"Cardinality"`
}

type xmlPolicyType struct {
	PolicyTypeName                  string                   `xml:"PolicyTypeName"`
	Description                     string                   `xml:"Description"`
	PolicyAttributeTypeDescriptions []xmlPolicyAttributeType `xml:"PolicyAttributeTypeDescriptions>member"`
}

type describePolicyTypesResponse struct {
	PolicyTypeDescriptions []xmlPolicyType `xml:"PolicyTypeDescriptions>member"`
}

func (e *Emulator) clbDescribePolicyTypes(p params) (any, error) {
	names := p.list("PolicyTypeNames.member")
	for _, n := range names {
		if findPolicyType(n) == nil {
			return nil, apiErr("PolicyTypeNotFound", "There is no policy type named '%s'", n)
		}
	}
	var resp describePolicyTypesResponse
	for _, pt := range clbPolicyTypes {
		if len(names) > 0 && !slices.Contains(names, pt.name) {
			continue
		}
		x := xmlPolicyType{PolicyTypeName: pt.name, Description: pt.description}
		for _, a := range pt.attributes {
			x.PolicyAttributeTypeDescriptions = append(x.PolicyAttributeTypeDescriptions, xmlPolicyAttributeType{
				AttributeName: a.name, AttributeType: a.kind, Description: a.description, DefaultValue: a.defaultValue, Cardinality: a.cardinality,
			})
		}
		resp.PolicyTypeDescriptions = append(resp.PolicyTypeDescriptions, x)
	}
	return resp, nil
}

// policyUser names what has policy name enabled on lb, or "".
func (lb *classicLB) policyUser(name string) string {
	for _, l := range lb.listeners {
		if slices.Contains(l.policies, name) {
			return "the listener on port " + strconv.Itoa(l.port)
		}
	}
	for port, names := range lb.backendPolicies {
		if slices.Contains(names, name) {
			return "instance port " + strconv.Itoa(port)
		}
	}
	for _, pol := range lb.policies {
		if pol.typeName == policyTypeBackendAuth && slices.ContainsFunc(pol.attributes, func(a policyAttribute) bool { return a.value == name }) {
			return "policy " + pol.name
		}
	}
	return ""
}

// clbDeletePolicy deletes a policy that nothing uses; deleting one that
// does not exist succeeds (the API documents no not-found error for it).
func (e *Emulator) clbDeletePolicy(p params) (any, error) {
	lb, err := e.clbParam(p)
	if err != nil {
		return nil, err
	}
	name := p.get("PolicyName")
	if name == "" {
		return nil, clbRequired("policyName")
	}
	if user := lb.policyUser(name); user != "" {
		return nil, clbInvalidConfig("Policy '%s' cannot be deleted because it is enabled for %s", name, user)
	}
	lb.policies = slices.DeleteFunc(lb.policies, func(pol *clbPolicy) bool { return pol.name == name })
	return emptyResponse{}, nil
}

// resolvePolicies reads PolicyNames.member.N (which must be sent, an empty
// list clearing) and looks every name up on lb.
func resolvePolicies(lb *classicLB, p params) ([]*clbPolicy, error) {
	if !p.has("PolicyNames") {
		return nil, clbRequired("policyNames")
	}
	var out []*clbPolicy
	for _, n := range p.list("PolicyNames.member") {
		pol := lb.policy(n)
		if pol == nil {
			return nil, apiErr(codeCLBPolicyMissing, "There is no policy with name %s for load balancer %s", n, lb.name)
		}
		if !slices.Contains(out, pol) {
			out = append(out, pol)
		}
	}
	return out, nil
}

func policyNames(pols []*clbPolicy) []string {
	names := make([]string, 0, len(pols))
	for _, pol := range pols {
		names = append(names, pol.name)
	}
	return names
}

// clbSetListenerPolicies replaces a listener's policies: at most one SSL
// negotiation policy, on HTTPS and SSL listeners only, and at most one
// stickiness policy, on HTTP and HTTPS listeners only.
func (e *Emulator) clbSetListenerPolicies(p params) (any, error) {
	lb, err := e.clbParam(p)
	if err != nil {
		return nil, err
	}
	port, err := requiredPort(p, "LoadBalancerPort", "loadBalancerPort")
	if err != nil {
		return nil, err
	}
	l := lb.listener(port)
	if l == nil {
		return nil, apiErr(codeCLBListenerMissing, "LoadBalancer %s does not have a listener configured at the given port %d", lb.name, port)
	}
	pols, err := resolvePolicies(lb, p)
	if err != nil {
		return nil, err
	}
	var ssl, sticky int
	for _, pol := range pols {
		if !findPolicyType(pol.typeName).listener {
			return nil, clbInvalidConfig("%s policies cannot be enabled on a listener: '%s'", pol.typeName, pol.name)
		}
		switch pol.typeName {
		case policyTypeSSLNegotiation:
			if !isSecure(l.protocol) {
				return nil, clbInvalidConfig("SSL negotiation policy '%s' can only be enabled on HTTPS and SSL listeners, not %s", pol.name, l.protocol)
			}
			ssl++
		default: // stickiness
			if !isLayer7(l.protocol) {
				return nil, clbInvalidConfig("Stickiness policy '%s' can only be enabled on HTTP and HTTPS listeners, not %s", pol.name, l.protocol)
			}
			sticky++
		}
	}
	if ssl > 1 || sticky > 1 {
		return nil, clbInvalidConfig("A listener takes at most one SSL negotiation policy and one stickiness policy")
	}
	l.policies = policyNames(pols)
	return emptyResponse{}, nil
}

// clbSetBackendPolicies replaces the policies of an instance port; an
// empty list removes them all.
func (e *Emulator) clbSetBackendPolicies(p params) (any, error) {
	lb, err := e.clbParam(p)
	if err != nil {
		return nil, err
	}
	port, err := requiredPort(p, "InstancePort", "instancePort")
	if err != nil {
		return nil, err
	}
	pols, err := resolvePolicies(lb, p)
	if err != nil {
		return nil, err
	}
	for _, pol := range pols {
		if !findPolicyType(pol.typeName).backend {
			return nil, clbInvalidConfig("%s policies cannot be enabled on a back-end server: '%s'", pol.typeName, pol.name)
		}
	}
	if len(pols) == 0 {
		delete(lb.backendPolicies, port)
	} else {
		lb.backendPolicies[port] = policyNames(pols)
	}
	return emptyResponse{}, nil
}
