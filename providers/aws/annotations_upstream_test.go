package aws

import (
	"slices"
	"strings"
	"testing"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/svcopts"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/upstreamann"
)

func TestUpstreamAnnotationsTable(t *testing.T) {
	if b := Backend(); b.UpstreamAnnotations == nil || b.ImportConfig == nil {
		t.Fatal("Backend() does not register the upstream annotation table and the config importer")
	}
	table := upstreamAnnotations(defaultTypeNLB)
	if err := table.Validate(); err != nil {
		t.Fatal(err)
	}
	// The 30 ServiceAnnotation* constants of upstream pkg/providers/v1/aws.go
	// and the source-ranges annotation it reads through the service helpers.
	if got := len(table.Annotations); got != 31 {
		t.Errorf("%d rows, want 31", got)
	}
	for _, a := range table.Annotations {
		if !strings.HasPrefix(a.Key, "service.beta.kubernetes.io/") {
			t.Errorf("%s: not a Service annotation of the upstream AWS CCM", a.Key)
		}
		if !strings.HasPrefix(a.Ref, "kubernetes/cloud-provider-aws pkg/providers/v1/") {
			t.Errorf("%s: ref %q does not point into the upstream repository", a.Key, a.Ref)
		}
	}
	// Every annotation this backend reads is an upstream key, read with
	// the upstream meaning.
	for _, ours := range []svcopts.Annotation{annotationLBType, annotationInternal, annotationSubnets, annotationSourceRanges,
		annotationExtraTags, annotationTGAttributes, annotationHCProtocol, annotationHCPort, annotationHCPath, annotationHCInterval, annotationHCTimeout,
		annotationHCHealthyThreshold, annotationHCUnhealthyThreshold} {
		row := table.Lookup(string(ours))
		if row == nil {
			t.Errorf("%s: not in the table", ours)
			continue
		}
		if row.Support != upstreamann.Supported || row.ByValue != nil {
			t.Errorf("%s: %v, want supported for every value", ours, row.Support)
		}
	}
}

func TestUpstreamAnnotationsCheck(t *testing.T) {
	const (
		prefix       = "service.beta.kubernetes.io/"
		sslCert      = prefix + "aws-load-balancer-ssl-cert"
		idleTimeout  = prefix + "aws-load-balancer-connection-idle-timeout"
		backendProto = prefix + "aws-load-balancer-backend-protocol"
		tgAttributes = prefix + "aws-load-balancer-target-group-attributes"
		crossZone    = prefix + "aws-load-balancer-cross-zone-load-balancing-enabled"
		eips         = prefix + "aws-load-balancer-eip-allocations"
		sslPorts     = prefix + "aws-load-balancer-ssl-ports"
		sslPolicy    = prefix + "aws-load-balancer-ssl-negotiation-policy"
		proxyProto   = prefix + "aws-load-balancer-proxy-protocol"
		secGroups    = prefix + "aws-load-balancer-security-groups"
	)
	for _, tc := range []struct {
		name             string
		ann              map[string]string
		classicDefault   bool
		ignored, refused []string
	}{
		{name: "ours only", ann: map[string]string{string(annotationInternal): "true", string(annotationLBType): "nlb"}},
		{name: "a Classic ELB's idle timeout is ignored", ann: map[string]string{idleTimeout: "120"}, ignored: []string{idleTimeout}},
		{name: "a certificate is served on an NLB", ann: map[string]string{sslCert: "arn:aws:acm:eu-west-1:123456789012:certificate/x"}},
		{name: "the TLS annotations are served on an NLB", ann: map[string]string{sslCert: "arn", sslPorts: "443,https", sslPolicy: "ELBSecurityPolicy-TLS-1-2-2017-01", backendProto: "ssl"}},
		{name: "an empty certificate asks for nothing", ann: map[string]string{sslCert: ""}},
		{name: "Elastic IPs are served on an NLB", ann: map[string]string{eips: "eipalloc-1,eipalloc-2"}},
		{name: "backend protocol tcp is ours", ann: map[string]string{backendProto: "TCP"}},
		{name: "backend protocol http is served on an NLB (TCP, as upstream)", ann: map[string]string{backendProto: "http"}},
		{name: "target group attributes, PROXY protocol v2 included, are served", ann: map[string]string{tgAttributes: "preserve_client_ip.enabled=true, proxy_protocol_v2.enabled=true"}},
		{name: "cross-zone off is ours", ann: map[string]string{crossZone: "false"}},
		{name: "cross-zone on is served on an NLB", ann: map[string]string{crossZone: "true"}},
		{name: "a Classic ELB's access log interval is ignored on an NLB", ann: map[string]string{prefix + "aws-load-balancer-access-log-emit-interval": "5"}, ignored: []string{prefix + "aws-load-balancer-access-log-emit-interval"}},
		{
			name:    "both kinds, in key order",
			ann:     map[string]string{sslCert: "arn", idleTimeout: "120", backendProto: "https", secGroups: "sg-1", proxyProto: "*"},
			ignored: []string{idleTimeout},
			refused: []string{proxyProto},
		},
		{name: "external: the AWS Load Balancer Controller's annotations", ann: map[string]string{string(annotationLBType): "external", sslCert: "arn", idleTimeout: "120"}},
		{name: "nlb-ip: the AWS Load Balancer Controller's annotations", ann: map[string]string{string(annotationLBType): "nlb-ip", eips: "eipalloc-1"}},
		{name: "any other type is a Classic ELB, which serves its annotations", ann: map[string]string{string(annotationLBType): "classic", sslCert: "arn", idleTimeout: "120", backendProto: "https"}},
		{name: "a Classic ELB refuses the NLB-only Elastic IPs", ann: map[string]string{string(annotationLBType): "elb", eips: "eipalloc-1"}, refused: []string{eips}},
		{name: "unset type with defaultType classic is a Classic ELB", classicDefault: true, ann: map[string]string{sslCert: "arn", crossZone: "true"}},
		{name: "nlb with defaultType classic is an NLB", classicDefault: true, ann: map[string]string{string(annotationLBType): "nlb", sslCert: "arn", proxyProto: "*"}, refused: []string{proxyProto}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dt := defaultTypeNLB
			if tc.classicDefault {
				dt = defaultTypeClassic
			}
			table := upstreamAnnotations(dt)
			ignored, refused := table.Check(lbService(tc.ann))
			if got := findingKeys(ignored); !slices.Equal(got, tc.ignored) {
				t.Errorf("ignored %q, want %q", got, tc.ignored)
			}
			if got := findingKeys(refused); !slices.Equal(got, tc.refused) {
				t.Errorf("refused %q, want %q", got, tc.refused)
			}
			for _, f := range append(ignored, refused...) {
				if msg := f.Message(table.Upstream); !strings.Contains(msg, f.Key) || !strings.Contains(msg, f.Annotation.Note) {
					t.Errorf("message %q does not name the annotation and say what to do", msg)
				}
			}
		})
	}
}

func findingKeys(fs []upstreamann.Finding) []string {
	var keys []string
	for _, f := range fs {
		keys = append(keys, f.Key)
	}
	return keys
}
