package aws_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	clbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
)

func policyAttrs(kv ...string) []clbtypes.PolicyAttribute {
	var out []clbtypes.PolicyAttribute
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, clbtypes.PolicyAttribute{AttributeName: aws.String(kv[i]), AttributeValue: aws.String(kv[i+1])})
	}
	return out
}

func createPolicy(e *clbEnv, lb, name, typeName string, kv ...string) error {
	_, err := e.clb.CreateLoadBalancerPolicy(ctx(), &elb.CreateLoadBalancerPolicyInput{
		LoadBalancerName: aws.String(lb), PolicyName: aws.String(name), PolicyTypeName: aws.String(typeName), PolicyAttributes: policyAttrs(kv...),
	})
	return err
}

// proxyPolicy creates the upstream AWS CCM's proxy protocol policy
// (kubernetes/cloud-provider-aws pkg/providers/v1/aws_loadbalancer.go
// createProxyProtocolPolicy).
func proxyPolicy(t *testing.T, e *clbEnv, lb string) {
	t.Helper()
	ok(t, createPolicy(e, lb, "k8s-proxyprotocol-enabled", "ProxyProtocolPolicyType", "ProxyProtocol", "true"))
}

func TestClassicPolicies(t *testing.T) {
	e := newCLBEnv(t)
	createCLB(t, e, "web")
	name := aws.String("web")

	// The upstream CCM creates its proxy protocol policy on every sync.
	proxyPolicy(t, e, "web")
	proxyPolicy(t, e, "web")
	err := createPolicy(e, "web", "k8s-proxyprotocol-enabled", "ProxyProtocolPolicyType", "ProxyProtocol", "false")
	wantTyped[*clbtypes.DuplicatePolicyNameException](t, err)
	for _, tc := range []struct {
		name, policy, typeName string
		attrs                  []string
		code                   string
	}{
		{"unknown type", "p", "NoSuchPolicyType", nil, "PolicyTypeNotFound"},
		{"missing required attribute", "p", "ProxyProtocolPolicyType", nil, "InvalidConfigurationRequest"},
		{"not a boolean", "p", "ProxyProtocolPolicyType", []string{"ProxyProtocol", "yes"}, "InvalidConfigurationRequest"},
		{"attribute of another type", "p", "ProxyProtocolPolicyType", []string{"ProxyProtocol", "true", "CookieName", "c"}, "InvalidConfigurationRequest"},
		{"unknown reference policy", "p", "SSLNegotiationPolicyType", []string{"Reference-Security-Policy", "ELBSecurityPolicy-1999-01"}, "InvalidConfigurationRequest"},
		{"bad policy name", "p_1", "ProxyProtocolPolicyType", []string{"ProxyProtocol", "true"}, "ValidationError"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantCode(t, createPolicy(e, "web", tc.policy, tc.typeName, tc.attrs...), tc.code)
		})
	}
	wantTyped[*clbtypes.AccessPointNotFoundException](t, createPolicy(e, "missing", "p", "ProxyProtocolPolicyType", "ProxyProtocol", "true"))

	// The upstream CCM's SSL negotiation policy, looked up before creation.
	sslName := "k8s-SSLNegotiationPolicy-ELBSecurityPolicy-TLS-1-2-2017-01"
	_, err = e.clb.DescribeLoadBalancerPolicies(ctx(), &elb.DescribeLoadBalancerPoliciesInput{LoadBalancerName: name, PolicyNames: []string{sslName}})
	wantTyped[*clbtypes.PolicyNotFoundException](t, err)
	ok(t, createPolicy(e, "web", sslName, "SSLNegotiationPolicyType", "Reference-Security-Policy", "ELBSecurityPolicy-TLS-1-2-2017-01"))
	ok(t, createPolicy(e, "web", "custom-tls", "SSLNegotiationPolicyType", "Protocol-TLSv1.2", "true", "ECDHE-RSA-AES128-GCM-SHA256", "true"))
	must[*elb.CreateLBCookieStickinessPolicyOutput](t)(e.clb.CreateLBCookieStickinessPolicy(ctx(), &elb.CreateLBCookieStickinessPolicyInput{
		LoadBalancerName: name, PolicyName: aws.String("sticky-lb"), CookieExpirationPeriod: aws.Int64(600),
	}))
	must[*elb.CreateAppCookieStickinessPolicyOutput](t)(e.clb.CreateAppCookieStickinessPolicy(ctx(), &elb.CreateAppCookieStickinessPolicyInput{
		LoadBalancerName: name, PolicyName: aws.String("sticky-app"), CookieName: aws.String("SESSION"),
	}))
	pols := must[*elb.DescribeLoadBalancerPoliciesOutput](t)(e.clb.DescribeLoadBalancerPolicies(ctx(), &elb.DescribeLoadBalancerPoliciesInput{LoadBalancerName: name, PolicyNames: []string{sslName}}))
	if len(pols.PolicyDescriptions) != 1 || aws.ToString(pols.PolicyDescriptions[0].PolicyTypeName) != "SSLNegotiationPolicyType" ||
		aws.ToString(pols.PolicyDescriptions[0].PolicyAttributeDescriptions[0].AttributeValue) != "ELBSecurityPolicy-TLS-1-2-2017-01" {
		t.Fatalf("policy %+v", pols.PolicyDescriptions)
	}
	all := must[*elb.DescribeLoadBalancerPoliciesOutput](t)(e.clb.DescribeLoadBalancerPolicies(ctx(), &elb.DescribeLoadBalancerPoliciesInput{LoadBalancerName: name}))
	names := idsOf(all.PolicyDescriptions, func(d clbtypes.PolicyDescription) *string { return d.PolicyName })
	if want := []string{"ELBSecurityPolicy-2016-08", "k8s-proxyprotocol-enabled", sslName, "custom-tls", "sticky-lb", "sticky-app"}; !slices.Equal(names, want) {
		t.Fatalf("policies %v", names)
	}
	// Without a load balancer: the predefined policies.
	predefined := must[*elb.DescribeLoadBalancerPoliciesOutput](t)(e.clb.DescribeLoadBalancerPolicies(ctx(), &elb.DescribeLoadBalancerPoliciesInput{PolicyNames: []string{"ELBSecurityPolicy-TLS-1-2-2017-01"}}))
	if len(predefined.PolicyDescriptions) != 1 {
		t.Fatalf("predefined %+v", predefined.PolicyDescriptions)
	}
	attrs := map[string]string{}
	for _, a := range predefined.PolicyDescriptions[0].PolicyAttributeDescriptions {
		attrs[aws.ToString(a.AttributeName)] = aws.ToString(a.AttributeValue)
	}
	if attrs["Protocol-TLSv1.2"] != "true" || attrs["Protocol-TLSv1"] != "false" {
		t.Fatalf("predefined attributes %v", attrs)
	}
	_, err = e.clb.DescribeLoadBalancerPolicies(ctx(), &elb.DescribeLoadBalancerPoliciesInput{PolicyNames: []string{"k8s-proxyprotocol-enabled"}})
	wantCode(t, err, "PolicyNotFound")

	types := must[*elb.DescribeLoadBalancerPolicyTypesOutput](t)(e.clb.DescribeLoadBalancerPolicyTypes(ctx(), &elb.DescribeLoadBalancerPolicyTypesInput{PolicyTypeNames: []string{"ProxyProtocolPolicyType"}}))
	if len(types.PolicyTypeDescriptions) != 1 || aws.ToString(types.PolicyTypeDescriptions[0].PolicyAttributeTypeDescriptions[0].AttributeName) != "ProxyProtocol" {
		t.Fatalf("policy types %+v", types.PolicyTypeDescriptions)
	}
	_, err = e.clb.DescribeLoadBalancerPolicyTypes(ctx(), &elb.DescribeLoadBalancerPolicyTypesInput{PolicyTypeNames: []string{"Nope"}})
	wantTyped[*clbtypes.PolicyTypeNotFoundException](t, err)

	// Back-end policies: proxy protocol on the node ports; an empty list clears.
	setBackend := func(port int32, policies ...string) error {
		_, err := e.clb.SetLoadBalancerPoliciesForBackendServer(ctx(), &elb.SetLoadBalancerPoliciesForBackendServerInput{
			LoadBalancerName: name, InstancePort: aws.Int32(port), PolicyNames: append([]string{}, policies...),
		})
		return err
	}
	ok(t, setBackend(30080, "k8s-proxyprotocol-enabled"))
	ok(t, setBackend(30443, "k8s-proxyprotocol-enabled"))
	wantCode(t, setBackend(30080, sslName), "InvalidConfigurationRequest")
	wantTyped[*clbtypes.PolicyNotFoundException](t, setBackend(30080, "nope"))
	ok(t, setBackend(30443))
	d := describeCLB(t, e, "web")
	if len(d.BackendServerDescriptions) != 1 || aws.ToInt32(d.BackendServerDescriptions[0].InstancePort) != 30080 ||
		!slices.Equal(d.BackendServerDescriptions[0].PolicyNames, []string{"k8s-proxyprotocol-enabled"}) {
		t.Fatalf("back-end descriptions %+v", d.BackendServerDescriptions)
	}

	// Listener policies.
	setListener := func(port int32, policies ...string) error {
		_, err := e.clb.SetLoadBalancerPoliciesOfListener(ctx(), &elb.SetLoadBalancerPoliciesOfListenerInput{
			LoadBalancerName: name, LoadBalancerPort: port, PolicyNames: append([]string{}, policies...),
		})
		return err
	}
	ok(t, setListener(443, sslName))
	wantTyped[*clbtypes.ListenerNotFoundException](t, setListener(444, sslName))
	wantTyped[*clbtypes.PolicyNotFoundException](t, setListener(443, "nope"))
	wantCode(t, setListener(443, "k8s-proxyprotocol-enabled"), "InvalidConfigurationRequest") // a back-end policy
	wantCode(t, setListener(80, sslName), "InvalidConfigurationRequest")                      // TCP has no TLS to negotiate
	wantCode(t, setListener(443, sslName, "custom-tls"), "InvalidConfigurationRequest")       // two negotiation policies
	wantCode(t, setListener(443, "sticky-lb"), "InvalidConfigurationRequest")                 // stickiness needs HTTP
	d = describeCLB(t, e, "web")
	if got := d.ListenerDescriptions[1].PolicyNames; !slices.Equal(got, []string{sslName}) {
		t.Fatalf("listener policies %v", got)
	}
	if len(d.Policies.LBCookieStickinessPolicies) != 1 || aws.ToInt64(d.Policies.LBCookieStickinessPolicies[0].CookieExpirationPeriod) != 600 ||
		len(d.Policies.AppCookieStickinessPolicies) != 1 || aws.ToString(d.Policies.AppCookieStickinessPolicies[0].CookieName) != "SESSION" ||
		!slices.Equal(d.Policies.OtherPolicies, []string{"ELBSecurityPolicy-2016-08", "k8s-proxyprotocol-enabled", sslName, "custom-tls"}) {
		t.Fatalf("policies %+v", d.Policies)
	}

	// A policy in use cannot be deleted; an unused or missing one can.
	deletePolicy := func(policy string) error {
		_, err := e.clb.DeleteLoadBalancerPolicy(ctx(), &elb.DeleteLoadBalancerPolicyInput{LoadBalancerName: name, PolicyName: aws.String(policy)})
		return err
	}
	wantTyped[*clbtypes.InvalidConfigurationRequestException](t, deletePolicy(sslName))
	wantCode(t, deletePolicy("k8s-proxyprotocol-enabled"), "InvalidConfigurationRequest")
	ok(t, deletePolicy("ELBSecurityPolicy-2016-08")) // replaced on the listener above
	ok(t, deletePolicy("never-created"))
	ok(t, setListener(443))
	ok(t, deletePolicy(sslName))
	info, _ := e.emu.ClassicLoadBalancer("web")
	var left []string
	for _, p := range info.Policies {
		left = append(left, fmt.Sprintf("%s=%s", p.Name, p.Type))
	}
	if want := []string{"k8s-proxyprotocol-enabled=ProxyProtocolPolicyType", "custom-tls=SSLNegotiationPolicyType", "sticky-lb=LBCookieStickinessPolicyType", "sticky-app=AppCookieStickinessPolicyType"}; !slices.Equal(left, want) {
		t.Fatalf("policies left %v", left)
	}
}

func TestClassicAttributes(t *testing.T) {
	e := newCLBEnv(t)
	createCLB(t, e, "web")
	name := aws.String("web")
	attrs := must[*elb.DescribeLoadBalancerAttributesOutput](t)(e.clb.DescribeLoadBalancerAttributes(ctx(), &elb.DescribeLoadBalancerAttributesInput{LoadBalancerName: name})).LoadBalancerAttributes
	if attrs.CrossZoneLoadBalancing.Enabled || aws.ToInt32(attrs.ConnectionSettings.IdleTimeout) != 60 || attrs.ConnectionDraining.Enabled ||
		aws.ToInt32(attrs.ConnectionDraining.Timeout) != 300 || attrs.AccessLog.Enabled || attrs.AccessLog.S3BucketName != nil ||
		len(attrs.AdditionalAttributes) != 1 || aws.ToString(attrs.AdditionalAttributes[0].Value) != "defensive" {
		t.Fatalf("defaults %+v", attrs)
	}

	// What the upstream CCM sets from its annotations; the answer carries
	// only what was changed.
	out := must[*elb.ModifyLoadBalancerAttributesOutput](t)(e.clb.ModifyLoadBalancerAttributes(ctx(), &elb.ModifyLoadBalancerAttributesInput{
		LoadBalancerName: name, LoadBalancerAttributes: &clbtypes.LoadBalancerAttributes{
			CrossZoneLoadBalancing: &clbtypes.CrossZoneLoadBalancing{Enabled: true},
			ConnectionSettings:     &clbtypes.ConnectionSettings{IdleTimeout: aws.Int32(4000)},
			ConnectionDraining:     &clbtypes.ConnectionDraining{Enabled: true, Timeout: aws.Int32(30)},
			AccessLog:              &clbtypes.AccessLog{Enabled: true, S3BucketName: aws.String("logs"), S3BucketPrefix: aws.String("web"), EmitInterval: aws.Int32(5)},
		},
	}))
	if aws.ToString(out.LoadBalancerName) != "web" || out.LoadBalancerAttributes.AdditionalAttributes != nil ||
		!out.LoadBalancerAttributes.CrossZoneLoadBalancing.Enabled || aws.ToInt32(out.LoadBalancerAttributes.AccessLog.EmitInterval) != 5 {
		t.Fatalf("modified %+v", out.LoadBalancerAttributes)
	}
	must[*elb.ModifyLoadBalancerAttributesOutput](t)(e.clb.ModifyLoadBalancerAttributes(ctx(), &elb.ModifyLoadBalancerAttributesInput{
		LoadBalancerName: name, LoadBalancerAttributes: &clbtypes.LoadBalancerAttributes{
			AdditionalAttributes: []clbtypes.AdditionalAttribute{{Key: aws.String("elb.http.desyncmitigationmode"), Value: aws.String("strictest")}},
		},
	}))
	attrs = must[*elb.DescribeLoadBalancerAttributesOutput](t)(e.clb.DescribeLoadBalancerAttributes(ctx(), &elb.DescribeLoadBalancerAttributesInput{LoadBalancerName: name})).LoadBalancerAttributes
	if !attrs.CrossZoneLoadBalancing.Enabled || aws.ToInt32(attrs.ConnectionSettings.IdleTimeout) != 4000 || !attrs.ConnectionDraining.Enabled ||
		aws.ToInt32(attrs.ConnectionDraining.Timeout) != 30 || aws.ToString(attrs.AccessLog.S3BucketPrefix) != "web" ||
		aws.ToString(attrs.AdditionalAttributes[0].Value) != "strictest" {
		t.Fatalf("described %+v", attrs)
	}

	for _, tc := range []struct {
		name  string
		attrs clbtypes.LoadBalancerAttributes
		code  string
	}{
		{"idle timeout 0", clbtypes.LoadBalancerAttributes{ConnectionSettings: &clbtypes.ConnectionSettings{IdleTimeout: aws.Int32(0)}}, "ValidationError"},
		{"idle timeout 4001", clbtypes.LoadBalancerAttributes{ConnectionSettings: &clbtypes.ConnectionSettings{IdleTimeout: aws.Int32(4001)}}, "ValidationError"},
		{"draining timeout 3601", clbtypes.LoadBalancerAttributes{ConnectionDraining: &clbtypes.ConnectionDraining{Enabled: true, Timeout: aws.Int32(3601)}}, "ValidationError"},
		{"emit interval 7", clbtypes.LoadBalancerAttributes{AccessLog: &clbtypes.AccessLog{Enabled: true, EmitInterval: aws.Int32(7)}}, "ValidationError"},
		{"unknown additional attribute", clbtypes.LoadBalancerAttributes{AdditionalAttributes: []clbtypes.AdditionalAttribute{{Key: aws.String("elb.nope"), Value: aws.String("x")}}}, "LoadBalancerAttributeNotFound"},
		{"bad desync mode", clbtypes.LoadBalancerAttributes{AdditionalAttributes: []clbtypes.AdditionalAttribute{{Key: aws.String("elb.http.desyncmitigationmode"), Value: aws.String("off")}}}, "InvalidConfigurationRequest"},
		{"nothing to change", clbtypes.LoadBalancerAttributes{}, "ValidationError"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.clb.ModifyLoadBalancerAttributes(ctx(), &elb.ModifyLoadBalancerAttributesInput{LoadBalancerName: name, LoadBalancerAttributes: &tc.attrs})
			wantCode(t, err, tc.code)
		})
	}
	// Access logs need a bucket; on a new load balancer there is none.
	createCLB(t, e, "other")
	_, err := e.clb.ModifyLoadBalancerAttributes(ctx(), &elb.ModifyLoadBalancerAttributesInput{LoadBalancerName: aws.String("other"),
		LoadBalancerAttributes: &clbtypes.LoadBalancerAttributes{AccessLog: &clbtypes.AccessLog{Enabled: true}}})
	wantTyped[*clbtypes.InvalidConfigurationRequestException](t, err)
	_, err = e.clb.DescribeLoadBalancerAttributes(ctx(), &elb.DescribeLoadBalancerAttributesInput{LoadBalancerName: aws.String("missing")})
	wantTyped[*clbtypes.AccessPointNotFoundException](t, err)
}
