package aws

import (
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/upstreamann"
)

// upstreamRef is where an upstream annotation is defined or read, in
// kubernetes/cloud-provider-aws at commit 63ec440c (2026-07-07).
func upstreamRef(pathLine string) string { return "kubernetes/cloud-provider-aws " + pathLine }

// What every NLB here does, for the Notes of annotations that would change it.
const (
	ourSecurity  = "the NLB gets its own security group, which admits spec.loadBalancerSourceRanges (default 0.0.0.0/0) on the listener ports"
	ourListeners = "listeners here pass TCP/UDP (or TCP after terminating TLS with aws-load-balancer-ssl-cert) to the NodePorts"
	toLBC        = "or let the AWS Load Balancer Controller make this load balancer (aws-load-balancer-type: external)"
)

// upstreamAnnotations lists every Service annotation the upstream AWS CCM
// reads (kubernetes/cloud-provider-aws at commit 63ec440c: the
// ServiceAnnotation* constants of pkg/providers/v1/aws.go:96-252, and the
// source-ranges annotation it reads through k8s.io/cloud-provider's
// service helpers), and what this backend does with each.
//
// Services of type external or nlb-ip are the AWS Load Balancer
// Controller's, so their annotations are not checked here.
//
// defaultType is the cloud-config's loadBalancer.defaultType: it decides
// which Services get a Classic ELB, whose annotations are served.
func upstreamAnnotations(defaultType string) *upstreamann.Table {
	return &upstreamann.Table{
		Upstream: "the upstream AWS CCM",
		Elsewhere: func(svc *v1.Service) bool {
			// Only the AWS Load Balancer Controller's types are another
			// controller's: any other type is a Classic ELB here, as
			// upstream (serviceLBKind), whose rows the gate applies.
			elsewhere, _ := implementedElsewhere(svc)
			return elsewhere
		},
		// Classic ELBs serve upstream's Classic-only annotations, NLBs the
		// NLB ones and the TLS ones both serve; the rows say what each
		// kind does with them.
		ServedFor: func(svc *v1.Service, key string) bool {
			classic := servedClassic(svc, defaultType)
			return (classicAnnotations[key] && classic) || (nlbAnnotations[key] && !classic)
		},
		Annotations: []upstreamann.Annotation{
			{
				Key:      string(annotationLBType),
				Support:  upstreamann.Supported,
				Upstream: "nlb makes a Network Load Balancer, external or nlb-ip leave the Service to the AWS Load Balancer Controller, and anything else (or no annotation) makes a Classic ELB.",
				Note:     "The same rule here, with Classic ELBs named and shaped as upstream's; unset means the cloud-config's loadBalancer.defaultType (nlb unless set to classic; import-config sets classic). Changing the type removes the other kind's load balancer and security group, which upstream leaks.",
				Ref:      upstreamRef("pkg/providers/v1/aws.go:100"),
			},
			{
				Key:      string(annotationInternal),
				Support:  upstreamann.Supported,
				Upstream: "Any non-empty value except \"false\" makes the load balancer internal.",
				Note:     "The same rule here.",
				Ref:      upstreamRef("pkg/providers/v1/aws.go:104"),
			},
			{
				Key:      string(annotationSubnets),
				Support:  upstreamann.Supported,
				Upstream: "Places the load balancer in these subnets, given by ID or Name tag, instead of discovered ones.",
				Ref:      upstreamRef("pkg/providers/v1/aws.go:252"),
			},
			{
				Key:      string(annotationSourceRanges),
				Support:  upstreamann.Supported,
				Upstream: "Admits only these client CIDRs when spec.loadBalancerSourceRanges is empty.",
				Ref:      upstreamRef("pkg/providers/v1/aws.go:2391"),
			},
			{
				Key:      "service.beta.kubernetes.io/aws-load-balancer-proxy-protocol",
				Support:  upstreamann.Refused,
				ByValue:  unlessEmpty(upstreamann.Refused),
				Upstream: "\"*\" enables PROXY protocol towards every backend of a Classic ELB.",
				Note:     "Served on Classic ELBs, as upstream. On NLBs " + ourListeners + " with no PROXY protocol header, so backends expecting one would fail; use aws-load-balancer-target-group-attributes proxy_protocol_v2.enabled=true, " + toLBC + ".",
				Ref:      upstreamRef("pkg/providers/v1/aws.go:111"),
			},
			{
				Key:      "service.beta.kubernetes.io/aws-load-balancer-access-log-emit-interval",
				Support:  upstreamann.Ignored,
				Upstream: "Sets the Classic ELB's access log interval in minutes.",
				Note:     "Served on Classic ELBs, as upstream; the NLB here writes no access logs, so on NLBs remove the annotation.",
				Ref:      upstreamRef("pkg/providers/v1/aws.go:115"),
			},
			{
				Key:      string(annotationAccessLogEnabled),
				Support:  upstreamann.Supported,
				Upstream: "Turns the load balancer's S3 access logs on or off (Classic ELBs and NLBs; off when absent).",
				Note:     "The same here, on Classic ELBs and NLBs.",
				Ref:      upstreamRef("pkg/providers/v1/aws.go:119"),
			},
			{
				Key:      string(annotationAccessLogBucket),
				Support:  upstreamann.Supported,
				Upstream: "Names the S3 bucket of the load balancer's access logs.",
				Note:     "The same here, on Classic ELBs and NLBs.",
				Ref:      upstreamRef("pkg/providers/v1/aws.go:123"),
			},
			{
				Key:      string(annotationAccessLogPrefix),
				Support:  upstreamann.Supported,
				Upstream: "Sets the S3 key prefix of the load balancer's access logs.",
				Note:     "The same here, on Classic ELBs and NLBs.",
				Ref:      upstreamRef("pkg/providers/v1/aws.go:127"),
			},
			{
				Key:      "service.beta.kubernetes.io/aws-load-balancer-connection-draining-enabled",
				Support:  upstreamann.Ignored,
				ByValue:  supportedWhenBool(true),
				Upstream: "Turns connection draining of the Classic ELB on or off.",
				Note:     "Served on Classic ELBs, as upstream. Targets leaving an NLB here always drain for AWS's default deregistration delay of 300 s (\"true\" is what it does anyway); on NLBs remove the annotation.",
				Ref:      upstreamRef("pkg/providers/v1/aws.go:131"),
			},
			{
				Key:      "service.beta.kubernetes.io/aws-load-balancer-connection-draining-timeout",
				Support:  upstreamann.Ignored,
				Upstream: "Sets the Classic ELB's connection draining timeout in seconds.",
				Note:     "Served on Classic ELBs, as upstream. Targets leaving an NLB here drain for the target groups' deregistration delay (aws-load-balancer-target-group-attributes deregistration_delay.timeout_seconds); on NLBs remove the annotation.",
				Ref:      upstreamRef("pkg/providers/v1/aws.go:135"),
			},
			{
				Key:      "service.beta.kubernetes.io/aws-load-balancer-connection-idle-timeout",
				Support:  upstreamann.Ignored,
				Upstream: "Sets the Classic ELB's idle connection timeout in seconds (default 60).",
				Note:     "Served on Classic ELBs, as upstream. An NLB here keeps AWS's TCP idle timeout of 350 s; on NLBs remove the annotation, and use TCP keepalives if connections idle longer.",
				Ref:      upstreamRef("pkg/providers/v1/aws.go:139"),
			},
			{
				Key:      string(annotationCrossZone),
				Support:  upstreamann.Supported,
				Upstream: "Turns cross-zone load balancing of the load balancer on or off (Classic ELBs and NLBs; off when absent).",
				Note:     "The same here, on Classic ELBs and NLBs.",
				Ref:      upstreamRef("pkg/providers/v1/aws.go:143"),
			},
			{
				Key:      string(annotationExtraSecurityGroups),
				Support:  upstreamann.Supported,
				Upstream: "Adds these security groups to the Classic ELB besides the one the CCM makes (refused for NLBs).",
				Note:     "The same here, on Classic ELBs and NLBs (every NLB here has a security group); the load balancer's groups are kept exactly this list.",
				Ref:      upstreamRef("pkg/providers/v1/aws.go:147"),
			},
			{
				Key:      string(annotationSecurityGroups),
				Support:  upstreamann.Supported,
				Upstream: "Attaches these security groups to the load balancer instead of one the CCM makes.",
				Note:     "The same here, on Classic ELBs and NLBs: no group is made (one made before is deleted), your groups are never changed, and the nodes admit the first of them. Upstream serves it on NLBs only in NLBSecurityGroupMode Managed.",
				Ref:      upstreamRef("pkg/providers/v1/aws.go:152"),
			},
			{
				Key:      string(annotationSSLCert),
				Support:  upstreamann.Supported,
				Upstream: "Terminates TLS on the load balancer with this ACM or IAM certificate.",
				Note:     "Served on Classic ELBs and NLBs, as upstream; a certificate AWS does not know is an error naming it. On an NLB the listeners of aws-load-balancer-ssl-ports (UDP ports excepted) are TLS with this certificate, and a changed certificate is swapped on the listener in place.",
				Ref:      upstreamRef("pkg/providers/v1/aws.go:158"),
			},
			{
				Key:      string(annotationSSLPorts),
				Support:  upstreamann.Supported,
				Upstream: "Chooses which ports terminate TLS with the aws-load-balancer-ssl-cert certificate (default all).",
				Note:     "Served on Classic ELBs and NLBs, as upstream, by port number or name. On an NLB a UDP port listed here, or a port carrying TCP and UDP on one listener that it selects, is an error: no NLB listener terminates TLS for UDP.",
				Ref:      upstreamRef("pkg/providers/v1/aws.go:163"),
			},
			{
				Key:      string(annotationSSLNegotiationPolicy),
				Support:  upstreamann.Supported,
				Upstream: "Sets the TLS policy of the listeners that terminate TLS with aws-load-balancer-ssl-cert.",
				Note:     "Served on Classic ELBs (policy k8s-SSLNegotiationPolicy-<name>) and NLBs (the TLS listeners' SslPolicy, default ELBSecurityPolicy-2016-08), as upstream; a policy AWS does not know is an error naming it.",
				Ref:      upstreamRef("pkg/providers/v1/aws.go:168"),
			},
			{
				Key:      string(annotationBackendProtocol),
				Support:  upstreamann.Supported,
				Upstream: "The protocol the backends speak: http makes an HTTP listener (with X-Forwarded-For), https or ssl speak TLS to the backends with aws-load-balancer-ssl-cert, tcp is plain TCP.",
				Note:     "Served on Classic ELBs and NLBs, as upstream. On an NLB only \"ssl\" changes anything: the target groups of its TLS listeners speak TLS to the backends (a new target group replaces the TCP one, the listener staying); NLBs make no HTTP listeners, upstream's either, so http and https are TCP to the backends.",
				Ref:      upstreamRef("pkg/providers/v1/aws.go:179"),
			},
			{
				Key:      string(annotationExtraTags),
				Support:  upstreamann.Supported,
				Upstream: "Adds these tags to the load balancer, its target groups and security group.",
				Note:     "The same here; the NLB's tags are kept in step, target groups and the security group are tagged when created, and a tag removed from the annotation is left on the NLB.",
				Ref:      upstreamRef("pkg/providers/v1/aws.go:185"),
			},
			{
				Key:      string(annotationHCProtocol),
				Support:  upstreamann.Supported,
				Upstream: "Sets the health check protocol (TCP, HTTP or HTTPS).",
				Note:     "The same here, on NLBs and Classic ELBs.",
				Ref:      upstreamRef("pkg/providers/v1/aws.go:190"),
			},
			{
				Key:      string(annotationHCPort),
				Support:  upstreamann.Supported,
				Upstream: "Sets the health check port (a number or traffic-port).",
				Note:     "The same here, on NLBs and Classic ELBs.",
				Ref:      upstreamRef("pkg/providers/v1/aws.go:195"),
			},
			{
				Key:      string(annotationHCPath),
				Support:  upstreamann.Supported,
				Upstream: "Sets the path of an HTTP or HTTPS health check.",
				Note:     "The same here, on NLBs and Classic ELBs.",
				Ref:      upstreamRef("pkg/providers/v1/aws.go:200"),
			},
			{
				Key:      string(annotationHCHealthyThreshold),
				Support:  upstreamann.Supported,
				Upstream: "Sets how many passed checks make a target healthy.",
				Note:     "The same here, on NLBs and Classic ELBs.",
				Ref:      upstreamRef("pkg/providers/v1/aws.go:206"),
			},
			{
				Key:      string(annotationHCUnhealthyThreshold),
				Support:  upstreamann.Supported,
				Upstream: "Sets how many failed checks make a target unhealthy.",
				Note:     "The same here, on NLBs and Classic ELBs.",
				Ref:      upstreamRef("pkg/providers/v1/aws.go:211"),
			},
			{
				Key:      string(annotationHCTimeout),
				Support:  upstreamann.Supported,
				Upstream: "Sets the health check timeout in seconds.",
				Note:     "The same here, on NLBs and Classic ELBs.",
				Ref:      upstreamRef("pkg/providers/v1/aws.go:216"),
			},
			{
				Key:      string(annotationHCInterval),
				Support:  upstreamann.Supported,
				Upstream: "Sets the interval between health checks in seconds.",
				Note:     "The same here, on NLBs and Classic ELBs.",
				Ref:      upstreamRef("pkg/providers/v1/aws.go:220"),
			},
			{
				Key:      string(annotationTGAttributes),
				Support:  upstreamann.Supported,
				Upstream: "Sets the NLB target groups' preserve_client_ip.enabled and proxy_protocol_v2.enabled attributes.",
				Note:     "The same here, and deregistration_delay.timeout_seconds too.",
				Ref:      upstreamRef("pkg/providers/v1/aws.go:226"),
			},
			{
				Key:      string(annotationEIPAllocations),
				Support:  upstreamann.Refused,
				Upstream: "Gives the NLB these Elastic IPs, one per subnet.",
				Note:     "served on NLBs as upstream (paired with the subnets in zone order; fixed once the NLB exists); a Classic ELB cannot have Elastic IPs, so clients and allow-lists using those IPs would miss it: make it an NLB (aws-load-balancer-type: nlb) or remove the annotation.",
				Ref:      upstreamRef("pkg/providers/v1/aws.go:231"),
			},
			{
				Key:      string(annotationPrivateIPv4),
				Support:  upstreamann.Refused,
				Upstream: "Gives an internal NLB these private IPv4 addresses, one per subnet.",
				Note:     "served on internal NLBs as upstream; a Classic ELB cannot have chosen addresses, so clients using them would miss it: make it an NLB (aws-load-balancer-type: nlb) or remove the annotation.",
				Ref:      upstreamRef("pkg/providers/v1/aws.go:236"),
			},
			{
				Key:      string(annotationTargetNodeLabels),
				Support:  upstreamann.Supported,
				Upstream: "Registers only the Nodes with all these labels as targets.",
				Note:     "The same here, on NLBs and Classic ELBs; a malformed label is an error naming the annotation.",
				Ref:      upstreamRef("pkg/providers/v1/aws.go:242"),
			},
		},
	}
}

// nlbAnnotations are the upstream annotations NLBs serve, here as
// upstream: the addresses (annotations_addresses.go) and TLS listeners
// (annotations.go applyNLBTLS).
var nlbAnnotations = map[string]bool{
	string(annotationEIPAllocations): true,
	string(annotationPrivateIPv4):    true,
}

// classicAnnotations are the upstream annotations Classic ELBs serve here
// as upstream does (classic_options.go).
var classicAnnotations = map[string]bool{
	string(annotationProxyProtocol):     true,
	string(annotationIdleTimeout):       true,
	string(annotationDrainingEnabled):   true,
	string(annotationDrainingTimeout):   true,
	string(annotationAccessLogInterval): true,
}

// unlessEmpty is for annotations the upstream CCM reads only when their
// value is not empty: an empty value asks for nothing.
func unlessEmpty(s upstreamann.Support) func(string) upstreamann.Support {
	return func(v string) upstreamann.Support {
		if strings.TrimSpace(v) == "" {
			return upstreamann.Supported
		}
		return s
	}
}

// supportedWhenBool is for boolean annotations of which one value is what
// this backend does anyway; the other, and values that are no boolean,
// are ignored.
func supportedWhenBool(ours bool) func(string) upstreamann.Support {
	return func(v string) upstreamann.Support {
		if b, err := strconv.ParseBool(strings.TrimSpace(v)); err == nil && b == ours {
			return upstreamann.Supported
		}
		return upstreamann.Ignored
	}
}
