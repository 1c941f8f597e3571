package aws

import (
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/svcopts"
)

// Service annotations this backend reads. The names are the upstream AWS
// CCM's, so Services written for it keep their meaning. The doc comments
// are the reference docs (docs/reference/aws.md, made by hack/refdocs).
const (
	// annotationLBType chooses the Service's load balancer, by upstream's
	// rule (kubernetes/cloud-provider-aws
	// pkg/providers/v1/aws_loadbalancer.go:84-96 isNLB and isLBExternal):
	// "nlb" for a Network Load Balancer from this controller; "external" or
	// "nlb-ip" hand the Service to the AWS Load Balancer Controller; any
	// other value gets a Classic ELB. Unset means the cloud-config's
	// loadBalancer.defaultType. When the type changes, the load balancer
	// of the other kind this controller made for the Service (and its
	// security group) is removed.
	//
	// Type: string (nlb, external, nlb-ip; anything else is a Classic ELB)
	// Default: the cloud-config's loadBalancer.defaultType (nlb)
	annotationLBType svcopts.Annotation = "service.beta.kubernetes.io/aws-load-balancer-type"
	// annotationInternal makes the load balancer internal (scheme
	// internal, placed in the internal subnets). As upstream reads it
	// (kubernetes/cloud-provider-aws pkg/providers/v1/aws.go:2453-2460),
	// any value except "false" means internal ("true", a CIDR such as
	// 0.0.0.0/0, even "False"); "false" or an empty value means
	// internet-facing. Changing it re-creates the NLB, since a scheme is
	// fixed at creation.
	//
	// Type: string (anything but "false" means internal)
	// Default: internet-facing
	annotationInternal svcopts.Annotation = "service.beta.kubernetes.io/aws-load-balancer-internal"
	// annotationSubnets places the NLB in these subnets, one per zone,
	// instead of the configured or discovered ones. Entries are subnet IDs
	// or Name tags, resolved in the cluster VPC when the NLB is created.
	//
	// Type: comma-separated subnet IDs or Name tags
	// Default: the cloud-config's subnets, else discovery by role and cluster tags
	annotationSubnets svcopts.Annotation = "service.beta.kubernetes.io/aws-load-balancer-subnets"
	// annotationIPAddressType is the NLB's IP address type, read as the AWS
	// Load Balancer Controller reads it for Services
	// (kubernetes-sigs/aws-load-balancer-controller
	// pkg/service/model_build_load_balancer.go:184-198): "ipv4" or
	// "dualstack" (IPv4 and IPv6 addresses; every NLB subnet needs an IPv6
	// block). Unset, the Service's spec.ipFamilies decide: dualstack when
	// they include IPv6. The upstream AWS CCM makes every NLB ipv4; an NLB
	// it made (named a<uid>) is turned dualstack only by this annotation,
	// so the switch never widens what upstream made. A Classic ELB has no
	// IPv6 in a VPC: dualstack on one is an error. Target groups stay
	// IPv4 (the NLB passes IPv6 clients to the nodes over IPv4); UDP ports
	// on a dualstack NLB are an error.
	//
	// Type: string (ipv4, dualstack)
	// Default: dualstack if spec.ipFamilies include IPv6, else ipv4
	annotationIPAddressType svcopts.Annotation = "service.beta.kubernetes.io/aws-load-balancer-ip-address-type"
	// annotationSourceRanges admits only these client CIDRs to the
	// listeners, when spec.loadBalancerSourceRanges is empty.
	//
	// Type: comma-separated CIDRs
	// Default: 0.0.0.0/0; 0.0.0.0/0 and ::/0 on a dualstack NLB
	annotationSourceRanges svcopts.Annotation = v1.AnnotationLoadBalancerSourceRangesKey

	// annotationExtraTags adds tags to the NLB, its target groups and its
	// security group (key=value pairs, comma-separated, as upstream reads
	// them: kubernetes/cloud-provider-aws pkg/providers/v1/aws.go:185 and
	// getKeyValuePropertiesFromAnnotation). The NLB's are kept in step;
	// target groups and the security group get them when created. The
	// cluster and service-name tags this controller owns cannot be set.
	//
	// Type: comma-separated key=value pairs
	// Default: none
	annotationExtraTags svcopts.Annotation = "service.beta.kubernetes.io/aws-load-balancer-additional-resource-tags"

	// annotationTGAttributes sets attributes of the NLB's target groups, as
	// comma-separated key=value pairs: preserve_client_ip.enabled and
	// proxy_protocol_v2.enabled (true or false), the two upstream accepts
	// (kubernetes/cloud-provider-aws pkg/providers/v1/aws_validations.go:104-142),
	// and deregistration_delay.timeout_seconds (0-3600). Like upstream, an
	// attribute dropped from the annotation keeps its last value.
	//
	// Type: comma-separated key=value pairs
	// Default: AWS's (client IP preserved, no PROXY protocol, 300 s delay)
	annotationTGAttributes svcopts.Annotation = "service.beta.kubernetes.io/aws-load-balancer-target-group-attributes"

	// annotationTargetNodeLabels makes only the Nodes with all these labels
	// targets of the load balancer (NLB or Classic ELB), as upstream
	// (kubernetes/cloud-provider-aws pkg/providers/v1/aws.go:242,
	// aws_loadbalancer.go:1829-1857): "key=value" needs that value, a bare
	// "key" any value.
	//
	// Type: comma-separated key=value or key
	// Default: every Node the service controller passes
	annotationTargetNodeLabels svcopts.Annotation = "service.beta.kubernetes.io/aws-load-balancer-target-node-labels"

	// annotationHCProtocol is the target groups' health check protocol.
	//
	// Type: string (TCP, HTTP, HTTPS; any case)
	// Default: TCP; HTTP for externalTrafficPolicy Local
	annotationHCProtocol svcopts.Annotation = "service.beta.kubernetes.io/aws-load-balancer-healthcheck-protocol"
	// annotationHCPort is the port the health check probes on the nodes.
	//
	// Type: "traffic-port" or a port number
	// Default: traffic-port; the health check node port for externalTrafficPolicy Local
	annotationHCPort svcopts.Annotation = "service.beta.kubernetes.io/aws-load-balancer-healthcheck-port"
	// annotationHCPath is the path of an HTTP or HTTPS health check.
	//
	// Type: string
	// Default: /; /healthz for externalTrafficPolicy Local
	annotationHCPath svcopts.Annotation = "service.beta.kubernetes.io/aws-load-balancer-healthcheck-path"
	// annotationHCInterval is the seconds between health checks.
	//
	// Type: int (5-300)
	// Default: 30; 10 for externalTrafficPolicy Local
	annotationHCInterval svcopts.Annotation = "service.beta.kubernetes.io/aws-load-balancer-healthcheck-interval"
	// annotationHCTimeout is the seconds a health check may take, at most
	// the interval.
	//
	// Type: int (2-120)
	// Default: 10
	annotationHCTimeout svcopts.Annotation = "service.beta.kubernetes.io/aws-load-balancer-healthcheck-timeout"
	// annotationHCHealthyThreshold is how many passed checks in a row put
	// a node in service.
	//
	// Type: int (2-10)
	// Default: 3; 2 for externalTrafficPolicy Local
	annotationHCHealthyThreshold svcopts.Annotation = "service.beta.kubernetes.io/aws-load-balancer-healthcheck-healthy-threshold"
	// annotationHCUnhealthyThreshold is how many failed checks in a row take
	// a node out of service.
	//
	// Type: int (2-10)
	// Default: 3; 2 for externalTrafficPolicy Local
	annotationHCUnhealthyThreshold svcopts.Annotation = "service.beta.kubernetes.io/aws-load-balancer-healthcheck-unhealthy-threshold"
)

// Annotations Classic ELBs read, with upstream's names and meanings
// (kubernetes/cloud-provider-aws pkg/providers/v1/aws.go:106-179); the
// TLS ones (ssl-cert, ssl-ports, backend-protocol,
// ssl-negotiation-policy) NLBs read too.
const (
	// annotationSSLCert makes the listeners of aws-load-balancer-ssl-ports
	// terminate TLS with this ACM or IAM certificate ARN: SSL or HTTPS
	// listeners on a Classic ELB, TLS listeners on an NLB (UDP ports
	// excepted), as upstream. An ARN AWS does not know is an error naming
	// it.
	//
	// Type: string (certificate ARN)
	// Default: none (plain TCP listeners)
	annotationSSLCert svcopts.Annotation = "service.beta.kubernetes.io/aws-load-balancer-ssl-cert"
	// annotationSSLPorts chooses the ports, by number or name, whose
	// listeners use aws-load-balancer-ssl-cert. On an NLB a UDP port listed
	// here is an error.
	//
	// Type: comma-separated port numbers or names, or "*"
	// Default: every port
	annotationSSLPorts svcopts.Annotation = "service.beta.kubernetes.io/aws-load-balancer-ssl-ports"
	// annotationBackendProtocol is the protocol the backends speak, as
	// upstream maps it (aws.go:302-307, 2099-2130, 2424-2431). On a Classic
	// ELB, with a certificate, "http" or "https" make HTTPS listeners (to
	// HTTP or HTTPS backends) and "tcp" or "ssl" SSL listeners; without
	// one, "http" makes HTTP listeners and anything else TCP. On an NLB
	// "ssl" makes the target groups of the TLS listeners TLS; any other
	// value leaves them TCP.
	//
	// Type: string (http, https, ssl, tcp)
	// Default: tcp
	annotationBackendProtocol svcopts.Annotation = "service.beta.kubernetes.io/aws-load-balancer-backend-protocol"
	// annotationSSLNegotiationPolicy is the predefined security policy of
	// the TLS listeners: on a Classic ELB set through a policy named
	// k8s-SSLNegotiationPolicy-<policy> as upstream names it
	// (aws_loadbalancer.go:53), on an NLB the listeners' SslPolicy.
	//
	// Type: string (e.g. ELBSecurityPolicy-TLS-1-2-2017-01)
	// Default: AWS's (ELBSecurityPolicy-2016-08)
	annotationSSLNegotiationPolicy svcopts.Annotation = "service.beta.kubernetes.io/aws-load-balancer-ssl-negotiation-policy"
	// annotationProxyProtocol "*" sends the PROXY protocol header to every
	// backend port of a Classic ELB (a ProxyProtocolPolicyType backend
	// policy named k8s-proxyprotocol-enabled, as upstream's).
	//
	// Type: string ("*")
	// Default: off
	annotationProxyProtocol svcopts.Annotation = "service.beta.kubernetes.io/aws-load-balancer-proxy-protocol"
	// annotationCrossZone turns cross-zone load balancing of a Classic ELB
	// on or off.
	//
	// Type: bool
	// Default: false
	annotationCrossZone svcopts.Annotation = "service.beta.kubernetes.io/aws-load-balancer-cross-zone-load-balancing-enabled"
	// annotationIdleTimeout is a Classic ELB's idle connection timeout.
	//
	// Type: int (seconds, 1-4000)
	// Default: 60
	annotationIdleTimeout svcopts.Annotation = "service.beta.kubernetes.io/aws-load-balancer-connection-idle-timeout"
	// annotationDrainingEnabled turns a Classic ELB's connection draining
	// on or off.
	//
	// Type: bool
	// Default: false
	annotationDrainingEnabled svcopts.Annotation = "service.beta.kubernetes.io/aws-load-balancer-connection-draining-enabled"
	// annotationDrainingTimeout is how long a Classic ELB drains a
	// deregistered instance.
	//
	// Type: int (seconds, 1-3600)
	// Default: AWS's (300)
	annotationDrainingTimeout svcopts.Annotation = "service.beta.kubernetes.io/aws-load-balancer-connection-draining-timeout"
	// annotationAccessLogEnabled turns a Classic ELB's access logs on or
	// off; on needs aws-load-balancer-access-log-s3-bucket-name.
	//
	// Type: bool
	// Default: false
	annotationAccessLogEnabled svcopts.Annotation = "service.beta.kubernetes.io/aws-load-balancer-access-log-enabled"
	// annotationAccessLogInterval is how often a Classic ELB writes its
	// access logs.
	//
	// Type: int (minutes, 5 or 60)
	// Default: 60
	annotationAccessLogInterval svcopts.Annotation = "service.beta.kubernetes.io/aws-load-balancer-access-log-emit-interval"
	// annotationAccessLogBucket is the S3 bucket of a Classic ELB's access
	// logs.
	//
	// Type: string
	// Default: none
	annotationAccessLogBucket svcopts.Annotation = "service.beta.kubernetes.io/aws-load-balancer-access-log-s3-bucket-name"
	// annotationAccessLogPrefix is the S3 key prefix of a Classic ELB's
	// access logs.
	//
	// Type: string
	// Default: none (the bucket's root)
	annotationAccessLogPrefix svcopts.Annotation = "service.beta.kubernetes.io/aws-load-balancer-access-log-s3-bucket-prefix"
)

// Values of annotationLBType.
const (
	lbTypeNLB      = "nlb"
	lbTypeExternal = "external"
	lbTypeNLBIP    = "nlb-ip"
)

// lbOptions is everything a Service's annotations and spec say about its
// load balancer, parsed and validated before any cloud call, so a malformed
// Service gets a precise error and nothing is created for it.
type lbOptions struct {
	internal bool
	// subnets are subnet IDs or Name tags from annotationSubnets; empty
	// means "from the config, else discovery".
	subnets []string
	// sourceRanges are the CIDRs allowed to reach the listeners.
	sourceRanges []netip.Prefix
	// ports are the listeners, one per port number.
	ports []listenerSpec
	// healthCheck is the target groups' health check.
	healthCheck healthCheckSpec
	// extraTags are the user's tags from annotationExtraTags.
	extraTags map[string]string
	// tgAttributes are the target group attributes annotationTGAttributes
	// sets.
	tgAttributes map[string]string
	// userSGs are the security groups the Service names
	// (loadbalancer_usergroups.go).
	userSGs userGroups
	// lbAttributes are an NLB's attributes (loadbalancer_attributes.go).
	lbAttributes nlbAttributes
	// allTrafficNodeRule makes the nodes admit the load balancer's group
	// with one rule for all traffic, without a description, as upstream
	// admits a Classic ELB's group (aws.go:3062-3080), instead of ours per
	// NodePort: set for Classic ELBs with their own group on a config
	// asking for upstream's shape.
	allTrafficNodeRule bool
	// ipAddressType is the NLB's (loadbalancer_families.go), and
	// ipTypeAsked says annotationIPAddressType chose it rather than the
	// Service's families.
	ipAddressType elbv2types.IpAddressType
	ipTypeAsked   bool
	// defaultRanges says sourceRanges are the default (every client of
	// the NLB's families), not the Service's.
	defaultRanges bool
}

// implementedElsewhere reports whether the Service asks for a load balancer
// the AWS Load Balancer Controller owns. Every other value is ours: nlb an
// NLB, anything else a Classic ELB (loadbalancer_type.go), so no value is
// an error; the error result stays for the callers' shape.
func implementedElsewhere(svc *v1.Service) (bool, error) {
	switch t, _ := annotationLBType.Lookup(svc); t {
	case lbTypeExternal, lbTypeNLBIP:
		return true, nil
	default:
		return false, nil
	}
}

// parseLBOptions validates the Service. Every error names the annotation or
// field at fault, because it becomes a Warning Event on the Service.
func parseLBOptions(svc *v1.Service) (*lbOptions, error) {
	internal, err := parseInternal(svc)
	if err != nil {
		return nil, err
	}
	subnets, err := parseSubnetList(svc)
	if err != nil {
		return nil, err
	}
	ranges, err := svcopts.SourceRanges(svc)
	if err != nil {
		return nil, err
	}
	ports, err := listenerSpecs(svc)
	if err != nil {
		return nil, err
	}
	hc, err := healthCheckFor(svc)
	if err != nil {
		return nil, err
	}
	extraTags, err := parseExtraTags(svc)
	if err != nil {
		return nil, err
	}
	tgAttrs, err := parseTGAttributes(svc, ports)
	if err != nil {
		return nil, err
	}
	groups, err := parseUserGroups(svc)
	if err != nil {
		return nil, err
	}
	attrs, err := parseNLBAttributes(svc)
	if err != nil {
		return nil, err
	}
	ipType, asked, err := parseIPAddressType(svc, ports)
	if err != nil {
		return nil, err
	}
	if ipType == elbv2types.IpAddressTypeDualstack && !svcopts.SourceRangesGiven(svc) {
		ranges = svcopts.AllClients(v1.IPv4Protocol, v1.IPv6Protocol)
	}
	return &lbOptions{
		ipAddressType: ipType,
		ipTypeAsked:   asked,
		defaultRanges: !svcopts.SourceRangesGiven(svc),
		internal:      internal,
		subnets:       subnets,
		sourceRanges:  ranges,
		ports:         ports,
		healthCheck:   hc,
		extraTags:     extraTags,
		tgAttributes:  tgAttrs,
		userSGs:       groups,
		lbAttributes:  attrs,
	}, nil
}

// parseInternal applies upstream's rule: set and not exactly "false" is
// internal. No value is malformed: a stricter reading would turn Services
// that were internal under the upstream CCM internet-facing, or refuse
// them.
func parseInternal(svc *v1.Service) (bool, error) {
	v, _ := annotationInternal.Lookup(svc)
	return v != "" && v != "false", nil
}

// parseExtraTags reads annotationExtraTags as upstream does: pairs split
// on commas, key and value on the first "=", spaces trimmed, a key without
// "=" tagged with an empty value. Keys AWS reserves (aws:) or this
// controller owns are errors, as are keys or values over AWS's limits.
func parseExtraTags(svc *v1.Service) (map[string]string, error) {
	v, ok := annotationExtraTags.Lookup(svc)
	if !ok {
		return nil, nil
	}
	out := map[string]string{}
	for _, pair := range strings.Split(v, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		k, val, _ := strings.Cut(pair, "=")
		k, val = strings.TrimSpace(k), strings.TrimSpace(val)
		switch {
		case k == "" || utf8.RuneCountInString(k) > 128 || utf8.RuneCountInString(val) > 256:
			return nil, annotationExtraTags.Invalid(v, "key=value pairs such as \"team=payments,env=prod\" (keys of 1-128 and values of at most 256 characters)")
		case strings.HasPrefix(strings.ToLower(k), "aws:"):
			return nil, fmt.Errorf("annotation %s: tag key %q is reserved by AWS", annotationExtraTags, k)
		case strings.HasPrefix(k, clusterTagPrefix) || k == serviceNameTagKey:
			return nil, fmt.Errorf("annotation %s: tag key %q is this controller's own ownership tag", annotationExtraTags, k)
		}
		out[k] = val
	}
	return out, nil
}

// targetNodes keeps the nodes annotationTargetNodeLabels selects, all of
// them without the annotation. A malformed label is an error naming the
// annotation, so a typo never empties a load balancer silently.
func targetNodes(svc *v1.Service, nodes []*v1.Node) ([]*v1.Node, error) {
	v, ok := annotationTargetNodeLabels.Lookup(svc)
	if !ok || strings.TrimSpace(v) == "" {
		return nodes, nil
	}
	want := map[string]string{}
	for _, pair := range strings.Split(v, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, val, _ := strings.Cut(pair, "=")
		k, val = strings.TrimSpace(k), strings.TrimSpace(val)
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, fmt.Errorf("annotation %s: label key %q: %s", annotationTargetNodeLabels, k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(val); len(errs) > 0 {
			return nil, fmt.Errorf("annotation %s: label value %q: %s", annotationTargetNodeLabels, val, strings.Join(errs, "; "))
		}
		want[k] = val
	}
	out := make([]*v1.Node, 0, len(nodes))
	for _, n := range nodes {
		match := true
		for k, val := range want {
			if have, ok := n.Labels[k]; !ok || (val != "" && have != val) {
				match = false
				break
			}
		}
		if match {
			out = append(out, n)
		}
	}
	return out, nil
}

// Target group attributes annotationTGAttributes may set.
const (
	attrPreserveClientIP = "preserve_client_ip.enabled"
	attrProxyProtocolV2  = "proxy_protocol_v2.enabled"
	attrDeregDelay       = "deregistration_delay.timeout_seconds"
)

// parseTGAttributes checks annotationTGAttributes as upstream validates
// it, plus the deregistration delay: known keys only, each once, with a
// valid value; client IP preservation cannot be turned off for UDP.
func parseTGAttributes(svc *v1.Service, ports []listenerSpec) (map[string]string, error) {
	v, ok := annotationTGAttributes.Lookup(svc)
	if !ok {
		return nil, nil
	}
	out := map[string]string{}
	for _, pair := range strings.Split(v, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, val, _ := strings.Cut(pair, "=")
		k, val = strings.TrimSpace(k), strings.TrimSpace(val)
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("annotation %s: %q is set twice", annotationTGAttributes, k)
		}
		switch k {
		case attrPreserveClientIP, attrProxyProtocolV2:
			if val != "true" && val != "false" {
				return nil, annotationTGAttributes.Invalid(v, fmt.Sprintf(`%s=true or false`, k))
			}
		case attrDeregDelay:
			if n, err := strconv.Atoi(val); err != nil || n < 0 || n > 3600 {
				return nil, annotationTGAttributes.Invalid(v, attrDeregDelay+"= a number of seconds from 0 to 3600")
			}
		default:
			return nil, fmt.Errorf("annotation %s: attribute %q is not supported; use %s, %s or %s", annotationTGAttributes, k, attrPreserveClientIP, attrProxyProtocolV2, attrDeregDelay)
		}
		out[k] = val
	}
	if out[attrPreserveClientIP] == "false" {
		for _, p := range ports {
			if p.udp {
				return nil, fmt.Errorf("annotation %s: client IP preservation cannot be turned off for UDP port %d", annotationTGAttributes, p.port)
			}
		}
	}
	return out, nil
}

var (
	subnetIDRE = regexp.MustCompile(`^subnet-[0-9a-f]{8}([0-9a-f]{9})?$`)
	// The 256-character limit of a tag value is checked apart:
	// {1,256} on these Unicode classes compiles to 6 MB of automaton,
	// held for the life of the process.
	subnetNameRE = regexp.MustCompile(`^[\p{L}\p{Z}\p{N}_.:/=+\-@]+$`)
)

// validSubnetName says s can be a subnet's Name tag value.
func validSubnetName(s string) bool {
	return utf8.RuneCountInString(s) <= 256 && subnetNameRE.MatchString(s)
}

// parseSubnetList checks the syntax of annotationSubnets; the names are
// resolved against the VPC only when a load balancer is created.
func parseSubnetList(svc *v1.Service) ([]string, error) {
	entries, _, err := annotationSubnets.List(svc)
	if err != nil {
		return nil, err
	}
	for _, s := range entries {
		switch {
		case strings.HasPrefix(s, "subnet-") && !subnetIDRE.MatchString(s):
			return nil, fmt.Errorf("annotation %s: %q is not a valid subnet ID such as subnet-0abc1234", annotationSubnets, s)
		case !validSubnetName(s):
			return nil, fmt.Errorf("annotation %s: %q is neither a subnet ID nor a valid Name tag", annotationSubnets, s)
		}
	}
	return entries, nil
}

// listenerSpecs maps Service ports to listeners. A TCP and a UDP port with
// the same number share one TCP_UDP listener, because an NLB allows one
// listener per port.
func listenerSpecs(svc *v1.Service) ([]listenerSpec, error) {
	ports, err := svcopts.Ports(svc, "a Network Load Balancer", v1.ProtocolTCP, v1.ProtocolUDP)
	if err != nil {
		return nil, err
	}
	byPort := map[int32]*listenerSpec{}
	var order []int32
	for _, p := range ports {
		l, ok := byPort[p.Port]
		if !ok {
			l = &listenerSpec{port: p.Port, nodePort: p.NodePort}
			byPort[p.Port] = l
			order = append(order, p.Port)
		} else if l.nodePort != p.NodePort {
			// One target group per listener means one target port.
			return nil, fmt.Errorf("service port %d: TCP and UDP use different nodePorts (%d, %d); a TCP_UDP listener needs them equal", p.Port, l.nodePort, p.NodePort)
		}
		switch p.Protocol {
		case v1.ProtocolTCP:
			l.tcp = true
		case v1.ProtocolUDP:
			l.udp = true
		}
	}
	out := make([]listenerSpec, 0, len(order))
	for _, port := range order {
		out = append(out, *byPort[port])
	}
	if err := applyNLBTLS(svc, ports, out); err != nil {
		return nil, err
	}
	return out, nil
}

// nlbDefaultSSLPolicy is the security policy of an NLB TLS listener
// without annotationSSLNegotiationPolicy: AWS's default, set explicitly so
// that a listener made elsewhere with another policy is brought back.
const nlbDefaultSSLPolicy = "ELBSecurityPolicy-2016-08"

// applyNLBTLS makes the listeners of the ports annotationSSLPorts selects
// (default all) terminate TLS with annotationSSLCert, as upstream builds
// its nlbPortMapping (aws.go:2400-2432): security policy
// annotationSSLNegotiationPolicy, target group protocol TLS when
// annotationBackendProtocol is "ssl" (upstream's only value that does),
// else TCP. Upstream passes UDP ports over; a UDP port named in
// annotationSSLPorts, or a TCP_UDP listener it would select, is an error,
// as no NLB listener terminates TLS for UDP.
func applyNLBTLS(svc *v1.Service, ports []v1.ServicePort, specs []listenerSpec) error {
	bp, err := parseBackendProtocol(svc)
	if err != nil {
		return err
	}
	cert, _ := annotationSSLCert.Lookup(svc)
	if cert = strings.TrimSpace(cert); cert == "" {
		return nil
	}
	sslPorts, allSSL, err := parseSSLPorts(svc, ports)
	if err != nil {
		return err
	}
	policy := nlbDefaultSSLPolicy
	if v, ok := annotationSSLNegotiationPolicy.Lookup(svc); ok && strings.TrimSpace(v) != "" {
		policy = strings.TrimSpace(v)
	}
	selected := map[int32]bool{}
	for _, p := range ports {
		if allSSL || sslPorts[strconv.Itoa(int(p.Port))] || (p.Name != "" && sslPorts[strings.ToLower(p.Name)]) {
			selected[p.Port] = true
		}
	}
	for i := range specs {
		s := &specs[i]
		if !selected[s.port] {
			continue
		}
		switch {
		case s.udp && s.tcp:
			return fmt.Errorf("annotations %s / %s: port %d carries TCP and UDP on one TCP_UDP listener, which cannot terminate TLS; list only the TLS ports in %s", annotationSSLCert, annotationSSLPorts, s.port, annotationSSLPorts)
		case s.udp && !allSSL:
			return fmt.Errorf("annotation %s: port %d is UDP, which cannot terminate TLS", annotationSSLPorts, s.port)
		case s.udp:
			// Upstream leaves UDP ports plain (aws.go:2424).
			continue
		}
		s.cert, s.sslPolicy, s.tlsBackend = cert, policy, bp == "ssl"
	}
	return nil
}

// ensureSupported is the type gate every Ensure/Update/Get goes through.
// ImplementedElsewhere is returned unwrapped: the service controller
// compares it with ==.
func ensureSupported(svc *v1.Service) error {
	elsewhere, err := implementedElsewhere(svc)
	if err != nil {
		return err
	}
	if elsewhere {
		return cloudprovider.ImplementedElsewhere
	}
	return nil
}
