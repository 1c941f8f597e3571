package aws

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	v1 "k8s.io/api/core/v1"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/svcopts"
)

// Upstream's Classic ELB defaults and names. The policy names are
// persisted on existing load balancers: they MUST NOT change, or a Classic
// ELB taken over from the upstream CCM gets a second policy.
const (
	// upstream: kubernetes/cloud-provider-aws pkg/providers/v1/aws_loadbalancer.go:65-77
	clbHCHealthyThreshold   = 2
	clbHCUnhealthyThreshold = 6
	clbHCTimeout            = 5
	clbHCInterval           = 10
	// upstream: aws_loadbalancer.go:49 and 53
	clbProxyProtocolPolicy    = "k8s-proxyprotocol-enabled"
	clbSSLPolicyNameFormat    = "k8s-SSLNegotiationPolicy-%s"
	clbProxyProtocolType      = "ProxyProtocolPolicyType"
	clbSSLNegotiationType     = "SSLNegotiationPolicyType"
	clbReferenceSecurityAttr  = "Reference-Security-Policy"
	clbDefaultIdleTimeout     = 60
	clbDefaultAccessLogMinute = 60
)

// clbOptions is what a Service asks of its Classic ELB, parsed and
// validated before any call. The embedded lbOptions carries what both
// kinds share (scheme, subnets, source ranges, ports, tags) in the form
// the shared security group and subnet code reads.
type clbOptions struct {
	*lbOptions
	// listeners are sorted by load balancer port; protocols upper case.
	listeners   []elbtypes.Listener
	healthCheck elbtypes.HealthCheck
	proxy       bool
	// sslPolicy is the predefined policy annotationSSLNegotiationPolicy
	// names, or "".
	sslPolicy string
	attrs     clbAttributes
}

// clbAttributes are the attributes the annotations ask for; a nil field is
// left as it is.
type clbAttributes struct {
	crossZone       bool
	idleTimeout     int32
	draining        bool
	drainingTimeout *int32
	accessLog       bool
	accessInterval  *int32
	accessBucket    string
	accessPrefix    string
}

// parseCLBOptions validates a Service that gets a Classic ELB. Every error
// names the annotation or field at fault.
func parseCLBOptions(svc *v1.Service) (*clbOptions, error) {
	if err := checkClassicFamilies(svc); err != nil {
		return nil, err
	}
	internal, _ := parseInternal(svc)
	subnets, err := parseSubnetList(svc)
	if err != nil {
		return nil, err
	}
	ranges, err := svcopts.SourceRanges(svc)
	if err != nil {
		return nil, err
	}
	// Upstream makes a Classic ELB for TCP ports only
	// (aws.go:3728-3738 checkProtocol).
	ports, err := svcopts.Ports(svc, "a Classic ELB", v1.ProtocolTCP)
	if err != nil {
		return nil, err
	}
	extraTags, err := parseExtraTags(svc)
	if err != nil {
		return nil, err
	}
	groups, err := parseUserGroups(svc)
	if err != nil {
		return nil, err
	}
	o := &clbOptions{lbOptions: &lbOptions{internal: internal, subnets: subnets, sourceRanges: ranges, extraTags: extraTags, userSGs: groups}}
	for _, p := range ports {
		o.ports = append(o.ports, listenerSpec{port: p.Port, nodePort: p.NodePort, tcp: true})
	}
	if o.listeners, err = clbListeners(svc, ports); err != nil {
		return nil, err
	}
	if o.healthCheck, o.lbOptions.healthCheck.nodePort, err = clbHealthCheck(svc, ports); err != nil {
		return nil, err
	}
	if v, ok := annotationProxyProtocol.Lookup(svc); ok && v != "" {
		if v != "*" {
			return nil, annotationProxyProtocol.Invalid(v, `"*" (PROXY protocol on every backend port)`)
		}
		o.proxy = true
	}
	if v, ok := annotationSSLNegotiationPolicy.Lookup(svc); ok && strings.TrimSpace(v) != "" {
		o.sslPolicy = strings.TrimSpace(v)
	}
	if o.attrs, err = parseCLBAttributes(svc); err != nil {
		return nil, err
	}
	return o, nil
}

// clbListeners builds one listener per Service port as upstream's
// buildListener does (aws.go:2099-2130): LoadBalancerPort=port,
// InstancePort=nodePort; with a certificate on the port SSL/TCP, or by
// the backend protocol HTTPS/HTTP(S) or SSL/SSL; without one HTTP/HTTP
// for backend protocol http, else TCP/TCP.
func clbListeners(svc *v1.Service, ports []v1.ServicePort) ([]elbtypes.Listener, error) {
	cert, _ := annotationSSLCert.Lookup(svc)
	cert = strings.TrimSpace(cert)
	bp, err := parseBackendProtocol(svc)
	if err != nil {
		return nil, err
	}
	sslPorts, allSSL, err := parseSSLPorts(svc, ports)
	if err != nil {
		return nil, err
	}
	var out []elbtypes.Listener
	for _, p := range ports {
		proto, instProto := "TCP", "TCP"
		var certID *string
		if cert != "" && (allSSL || sslPorts[strconv.Itoa(int(p.Port))] || (p.Name != "" && sslPorts[strings.ToLower(p.Name)])) {
			certID = aws.String(cert)
			// upstream: aws.go:302-307 (backendProtocolMapping)
			switch bp {
			case "", "tcp":
				proto, instProto = "SSL", "TCP"
			case "ssl":
				proto, instProto = "SSL", "SSL"
			case "http":
				proto, instProto = "HTTPS", "HTTP"
			case "https":
				proto, instProto = "HTTPS", "HTTPS"
			}
		} else if bp == "http" {
			proto, instProto = "HTTP", "HTTP"
		}
		out = append(out, elbtypes.Listener{
			LoadBalancerPort: p.Port, InstancePort: aws.Int32(p.NodePort),
			Protocol: aws.String(proto), InstanceProtocol: aws.String(instProto), SSLCertificateId: certID,
		})
	}
	slices.SortFunc(out, func(a, b elbtypes.Listener) int { return int(a.LoadBalancerPort - b.LoadBalancerPort) })
	return out, nil
}

// parseBackendProtocol reads annotationBackendProtocol, lower-cased:
// "", "http", "https", "ssl" or "tcp", as upstream's
// backendProtocolMapping knows them (aws.go:302-307).
func parseBackendProtocol(svc *v1.Service) (string, error) {
	bp, _ := annotationBackendProtocol.Lookup(svc)
	bp = strings.ToLower(strings.TrimSpace(bp))
	switch bp {
	case "", "http", "https", "ssl", "tcp":
		return bp, nil
	default:
		return "", annotationBackendProtocol.Invalid(bp, `"http", "https", "ssl" or "tcp"`)
	}
}

// parseSSLPorts reads annotationSSLPorts: unset, empty or "*" is every
// port; else the numbers and (lower-cased) names listed, each of which
// must be one of the Service's ports.
func parseSSLPorts(svc *v1.Service, ports []v1.ServicePort) (map[string]bool, bool, error) {
	v, ok := annotationSSLPorts.Lookup(svc)
	if !ok || strings.TrimSpace(v) == "" || strings.TrimSpace(v) == "*" {
		return nil, true, nil
	}
	known := map[string]bool{}
	for _, p := range ports {
		known[strconv.Itoa(int(p.Port))] = true
		if p.Name != "" {
			known[strings.ToLower(p.Name)] = true
		}
	}
	out := map[string]bool{}
	for _, item := range strings.Split(v, ",") {
		item = strings.ToLower(strings.TrimSpace(item))
		if item == "" {
			continue
		}
		if !known[item] {
			return nil, false, annotationSSLPorts.Invalid(v, fmt.Sprintf("port numbers or names of the Service; %q is neither", item))
		}
		out[item] = true
	}
	return out, false, nil
}

// clbHealthCheck is upstream's Classic ELB health check
// (aws.go:2744-2790, aws_loadbalancer.go:1538-1625): TCP on the first
// NodePort (SSL for backend protocol https or ssl), or HTTP on the health
// check NodePort for externalTrafficPolicy Local; the healthcheck-*
// annotations override protocol, port, path and the numbers. It also
// returns the port probed when that is no traffic NodePort, which the
// node security groups must admit.
func clbHealthCheck(svc *v1.Service, ports []v1.ServicePort) (elbtypes.HealthCheck, int32, error) {
	first := ports[0].NodePort
	proto, port, path := "TCP", first, ""
	if bp, _ := annotationBackendProtocol.Lookup(svc); bp == "https" || bp == "ssl" {
		proto = "SSL"
	}
	if p, nodePort, local := svcopts.HealthCheck(svc); local {
		proto, port, path = "HTTP", nodePort, p
	}
	if v, ok := annotationHCProtocol.Lookup(svc); ok {
		switch p := strings.ToUpper(strings.TrimSpace(v)); p {
		case "TCP", "SSL", "HTTP", "HTTPS":
			proto = p
		default:
			return elbtypes.HealthCheck{}, 0, annotationHCProtocol.Invalid(v, `"TCP", "SSL", "HTTP" or "HTTPS"`)
		}
	}
	if v, ok := annotationHCPort.Lookup(svc); ok {
		v = strings.TrimSpace(v)
		if v == healthCheckTraffic {
			port = first
		} else if n, err := strconv.Atoi(v); err != nil || n < 1 || n > 65535 {
			return elbtypes.HealthCheck{}, 0, annotationHCPort.Invalid(v, `"traffic-port" or a port number such as 10256`)
		} else {
			port = int32(n)
		}
	}
	if proto == "HTTP" || proto == "HTTPS" {
		if path == "" {
			path = "/"
		}
		if v, ok := annotationHCPath.Lookup(svc); ok && v != "" {
			if !strings.HasPrefix(v, "/") || len(v) > 1024 {
				return elbtypes.HealthCheck{}, 0, annotationHCPath.Invalid(v, "a path of at most 1024 characters starting with /, such as /healthz")
			}
			path = v
		}
	} else {
		path = ""
	}
	hc := elbtypes.HealthCheck{
		Target:             aws.String(fmt.Sprintf("%s:%d%s", proto, port, path)),
		HealthyThreshold:   aws.Int32(clbHCHealthyThreshold),
		UnhealthyThreshold: aws.Int32(clbHCUnhealthyThreshold),
		Timeout:            aws.Int32(clbHCTimeout),
		Interval:           aws.Int32(clbHCInterval),
	}
	// Classic ELB's ranges (ConfigureHealthCheck API reference).
	for _, f := range []struct {
		a        svcopts.Annotation
		dst      **int32
		min, max int
	}{
		{annotationHCInterval, &hc.Interval, 5, 300},
		{annotationHCTimeout, &hc.Timeout, 2, 60},
		{annotationHCHealthyThreshold, &hc.HealthyThreshold, 2, 10},
		{annotationHCUnhealthyThreshold, &hc.UnhealthyThreshold, 2, 10},
	} {
		if v, ok := f.a.Lookup(svc); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < f.min || n > f.max {
				return elbtypes.HealthCheck{}, 0, f.a.Invalid(v, fmt.Sprintf("a whole number from %d to %d", f.min, f.max))
			}
			*f.dst = aws.Int32(int32(n))
		}
	}
	if *hc.Timeout >= *hc.Interval {
		return elbtypes.HealthCheck{}, 0, fmt.Errorf("annotations %s=%d and %s=%d: a Classic ELB's health check timeout must be less than its interval",
			annotationHCTimeout, *hc.Timeout, annotationHCInterval, *hc.Interval)
	}
	var extra int32
	if !slices.ContainsFunc(ports, func(p v1.ServicePort) bool { return p.NodePort == port }) {
		extra = port
	}
	return hc, extra, nil
}

// parseCLBAttributes reads the attribute annotations with upstream's
// defaults (aws.go:2576-2582): access logs, draining and cross-zone off,
// idle timeout 60 s.
func parseCLBAttributes(svc *v1.Service) (clbAttributes, error) {
	a := clbAttributes{idleTimeout: clbDefaultIdleTimeout}
	var err error
	for _, b := range []struct {
		ann svcopts.Annotation
		dst *bool
	}{{annotationCrossZone, &a.crossZone}, {annotationDrainingEnabled, &a.draining}, {annotationAccessLogEnabled, &a.accessLog}} {
		if *b.dst, _, err = b.ann.Bool(svc); err != nil {
			return a, err
		}
	}
	intAnn := func(ann svcopts.Annotation, min, max int) (*int32, error) {
		v, ok := ann.Lookup(svc)
		if !ok || strings.TrimSpace(v) == "" {
			return nil, nil
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < min || n > max {
			return nil, ann.Invalid(v, fmt.Sprintf("a whole number from %d to %d", min, max))
		}
		return aws.Int32(int32(n)), nil
	}
	idle, err := intAnn(annotationIdleTimeout, 1, 4000)
	if err != nil {
		return a, err
	}
	if idle != nil {
		a.idleTimeout = *idle
	}
	if a.drainingTimeout, err = intAnn(annotationDrainingTimeout, 1, 3600); err != nil {
		return a, err
	}
	if a.accessInterval, err = intAnn(annotationAccessLogInterval, 5, 60); err != nil {
		return a, err
	}
	if a.accessInterval != nil && *a.accessInterval != 5 && *a.accessInterval != 60 {
		return a, annotationAccessLogInterval.Invalid(strconv.Itoa(int(*a.accessInterval)), "5 or 60 (minutes)")
	}
	a.accessBucket, _ = annotationAccessLogBucket.Lookup(svc)
	a.accessPrefix, _ = annotationAccessLogPrefix.Lookup(svc)
	if a.accessLog && a.accessBucket == "" {
		return a, fmt.Errorf("annotation %s=true needs %s, the S3 bucket to write to", annotationAccessLogEnabled, annotationAccessLogBucket)
	}
	return a, nil
}

// elbAttributes is a as the API takes it.
func (a clbAttributes) elbAttributes() *elbtypes.LoadBalancerAttributes {
	out := &elbtypes.LoadBalancerAttributes{
		CrossZoneLoadBalancing: &elbtypes.CrossZoneLoadBalancing{Enabled: a.crossZone},
		ConnectionSettings:     &elbtypes.ConnectionSettings{IdleTimeout: aws.Int32(a.idleTimeout)},
		ConnectionDraining:     &elbtypes.ConnectionDraining{Enabled: a.draining, Timeout: a.drainingTimeout},
		AccessLog:              &elbtypes.AccessLog{Enabled: a.accessLog},
	}
	if a.accessLog {
		out.AccessLog.S3BucketName = aws.String(a.accessBucket)
		out.AccessLog.S3BucketPrefix = aws.String(a.accessPrefix)
		out.AccessLog.EmitInterval = aws.Int32(clbDefaultAccessLogMinute)
		if a.accessInterval != nil {
			out.AccessLog.EmitInterval = a.accessInterval
		}
	}
	return out
}

// matches says have already is what a asks for. Fields a leaves open
// (the draining timeout, the log settings of disabled logs) match anything.
func (a clbAttributes) matches(have *elbtypes.LoadBalancerAttributes) bool {
	if have == nil || have.CrossZoneLoadBalancing == nil || have.ConnectionSettings == nil || have.ConnectionDraining == nil || have.AccessLog == nil {
		return false
	}
	if have.CrossZoneLoadBalancing.Enabled != a.crossZone || aws.ToInt32(have.ConnectionSettings.IdleTimeout) != a.idleTimeout ||
		have.ConnectionDraining.Enabled != a.draining || have.AccessLog.Enabled != a.accessLog {
		return false
	}
	if a.drainingTimeout != nil && aws.ToInt32(have.ConnectionDraining.Timeout) != *a.drainingTimeout {
		return false
	}
	if a.accessLog {
		want := a.elbAttributes().AccessLog
		return aws.ToString(have.AccessLog.S3BucketName) == aws.ToString(want.S3BucketName) &&
			aws.ToString(have.AccessLog.S3BucketPrefix) == aws.ToString(want.S3BucketPrefix) &&
			aws.ToInt32(have.AccessLog.EmitInterval) == aws.ToInt32(want.EmitInterval)
	}
	return true
}
