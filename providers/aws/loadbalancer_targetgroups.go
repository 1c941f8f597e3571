package aws

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/svcopts"
)

// The upstream AWS CCM's NLB health check defaults (kubernetes/cloud-provider-aws
// pkg/providers/v1/aws_loadbalancer.go:65-77 and aws.go:2175-2196): TCP to
// the traffic port every 30 s, 10 s timeout, 3 checks either way; for
// externalTrafficPolicy Local, HTTP /healthz on the health check node port
// every 10 s, 10 s timeout, 2 checks. The healthcheck-* annotations
// override each, as upstream.
const (
	healthCheckInterval      = 30
	healthCheckTimeout       = 10
	healthCheckThreshold     = 3
	localHealthCheckInterval = 10
	localHealthCheckTimeout  = 10
	localHealthCheckThresh   = 2
	healthCheckTraffic       = "traffic-port"
	healthCheckDefaultPath   = "/"
)

// portKey identifies a listener and its target group.
type portKey struct {
	port  int32
	proto elbv2types.ProtocolEnum
}

// suffix is the portKey's part of a target group name, e.g. "53-tcpudp".
func (k portKey) suffix() string {
	return fmt.Sprintf("%d-%s", k.port, strings.ToLower(strings.ReplaceAll(string(k.proto), "_", "")))
}

// listenerSpec is one NLB listener derived from the Service's ports.
type listenerSpec struct {
	port, nodePort int32
	tcp, udp       bool
	// cert, when set, makes the listener TLS with this certificate and
	// sslPolicy (annotationSSLCert, annotationSSLPorts,
	// annotationSSLNegotiationPolicy).
	cert, sslPolicy string
	// tlsBackend makes the target group speak TLS to the backends
	// (annotationBackendProtocol "ssl" on a TLS listener).
	tlsBackend bool
}

// protocol is the target group's protocol, part of its name: a change
// makes a new target group, as TCP to TCP_UDP does.
func (s listenerSpec) protocol() elbv2types.ProtocolEnum {
	switch {
	case s.tlsBackend:
		return elbv2types.ProtocolEnumTls
	case s.tcp && s.udp:
		return elbv2types.ProtocolEnumTcpUdp
	case s.udp:
		return elbv2types.ProtocolEnumUdp
	default:
		return elbv2types.ProtocolEnumTcp
	}
}

// listenerProtocol is the listener's protocol: TLS with a certificate,
// else the target group's.
func (s listenerSpec) listenerProtocol() elbv2types.ProtocolEnum {
	if s.cert != "" {
		return elbv2types.ProtocolEnumTls
	}
	return s.protocol()
}

func (s listenerSpec) key() portKey { return portKey{port: s.port, proto: s.protocol()} }

// listenerMatches reports whether li is what p asks for, forwarding to
// tgARN. Only a TLS listener's certificate and policy are compared: a
// listener leaving TLS drops both.
func (s listenerSpec) listenerMatches(li elbv2types.Listener, tgARN string) bool {
	if li.Protocol != s.listenerProtocol() || forwardTarget(li) != tgARN {
		return false
	}
	if s.cert == "" {
		return true
	}
	return aws.ToString(li.SslPolicy) == s.sslPolicy && len(li.Certificates) == 1 && aws.ToString(li.Certificates[0].CertificateArn) == s.cert
}

// tlsError names the annotation behind a listener error AWS blames on the
// certificate or the security policy.
func (s listenerSpec) tlsError(err error) error {
	switch {
	case isAPIError(err, "CertificateNotFound"):
		return fmt.Errorf("annotation %s: certificate %q cannot be used on port %d: %w", annotationSSLCert, s.cert, s.port, err)
	case isAPIError(err, "SSLPolicyNotFound"):
		return fmt.Errorf("annotation %s: security policy %q does not exist: %w", annotationSSLNegotiationPolicy, s.sslPolicy, err)
	}
	return err
}

// healthCheckSpec is a target group's health check.
type healthCheckSpec struct {
	protocol                        elbv2types.ProtocolEnum
	port                            string
	path                            string
	interval, timeout               int32
	healthyThreshold, unhealthyThld int32
	// nodePort is the port probed on the nodes when it is not the
	// traffic port: the node security group must admit it.
	nodePort int32
}

// healthCheckFor is upstream's NLB health check for the Service
// (aws.go:2175-2258): kube-proxy's health check node port for
// externalTrafficPolicy Local, so only nodes with a ready endpoint get
// traffic; otherwise a TCP connect to the traffic port, since any node
// can forward; each part overridden by its annotation.
func healthCheckFor(svc *v1.Service) (healthCheckSpec, error) {
	hc := healthCheckSpec{protocol: elbv2types.ProtocolEnumTcp, port: healthCheckTraffic, path: healthCheckDefaultPath,
		interval: healthCheckInterval, timeout: healthCheckTimeout, healthyThreshold: healthCheckThreshold, unhealthyThld: healthCheckThreshold}
	if path, nodePort, local := svcopts.HealthCheck(svc); local {
		hc = healthCheckSpec{protocol: elbv2types.ProtocolEnumHttp, port: strconv.Itoa(int(nodePort)), path: path,
			interval: localHealthCheckInterval, timeout: localHealthCheckTimeout, healthyThreshold: localHealthCheckThresh, unhealthyThld: localHealthCheckThresh}
	}
	if v, ok := annotationHCProtocol.Lookup(svc); ok {
		switch p := elbv2types.ProtocolEnum(strings.ToUpper(strings.TrimSpace(v))); p {
		case elbv2types.ProtocolEnumTcp, elbv2types.ProtocolEnumHttp, elbv2types.ProtocolEnumHttps:
			hc.protocol = p
		default:
			return hc, annotationHCProtocol.Invalid(v, `"TCP", "HTTP" or "HTTPS"`)
		}
	}
	if hc.protocol == elbv2types.ProtocolEnumTcp {
		hc.path = ""
	} else if v, ok := annotationHCPath.Lookup(svc); ok {
		if !strings.HasPrefix(v, "/") || len(v) > 1024 {
			return hc, annotationHCPath.Invalid(v, "a path of at most 1024 characters starting with /, such as /healthz")
		}
		hc.path = v
	}
	if v, ok := annotationHCPort.Lookup(svc); ok {
		v = strings.TrimSpace(v)
		if n, err := strconv.Atoi(v); v != healthCheckTraffic && (err != nil || n < 1 || n > 65535) {
			return hc, annotationHCPort.Invalid(v, `"traffic-port" or a port number such as 10256`)
		}
		hc.port = v
	}
	for _, f := range []struct {
		a        svcopts.Annotation
		dst      *int32
		min, max int
	}{
		{annotationHCInterval, &hc.interval, 5, 300},
		{annotationHCTimeout, &hc.timeout, 2, 120},
		{annotationHCHealthyThreshold, &hc.healthyThreshold, 2, 10},
		{annotationHCUnhealthyThreshold, &hc.unhealthyThld, 2, 10},
	} {
		if v, ok := f.a.Lookup(svc); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < f.min || n > f.max {
				return hc, f.a.Invalid(v, fmt.Sprintf("a whole number from %d to %d", f.min, f.max))
			}
			*f.dst = int32(n)
		}
	}
	if hc.timeout > hc.interval {
		return hc, fmt.Errorf("annotations %s=%d and %s=%d: the health check timeout must not exceed its interval", annotationHCTimeout, hc.timeout, annotationHCInterval, hc.interval)
	}
	if hc.port != healthCheckTraffic {
		n, _ := strconv.Atoi(hc.port)
		hc.nodePort = int32(n)
	}
	return hc, nil
}

func (h healthCheckSpec) matches(tg elbv2types.TargetGroup) bool {
	if tg.HealthCheckProtocol != h.protocol || aws.ToString(tg.HealthCheckPort) != h.port ||
		aws.ToInt32(tg.HealthCheckIntervalSeconds) != h.interval || aws.ToInt32(tg.HealthCheckTimeoutSeconds) != h.timeout ||
		aws.ToInt32(tg.HealthyThresholdCount) != h.healthyThreshold || aws.ToInt32(tg.UnhealthyThresholdCount) != h.unhealthyThld {
		return false
	}
	return h.protocol == elbv2types.ProtocolEnumTcp || aws.ToString(tg.HealthCheckPath) == h.path
}

// desiredRecord is the record of target group suffixes opts asks for.
func desiredRecord(naming tgNaming, opts *lbOptions) map[string]bool {
	rec := make(map[string]bool, len(opts.ports))
	for _, p := range opts.ports {
		rec[naming.suffix(p)] = true
	}
	return rec
}

// tgNaming is how st's target groups are named: upstream's way when st
// says so (upstreamTGs), else ours.
func (l *loadBalancers) tgNaming(svc *v1.Service, opts *lbOptions, st *lbState) tgNaming {
	if st.upstreamTGs {
		return upstreamTGNaming(l.clusterID, svc, opts.healthCheck)
	}
	return ourTGNaming(l.clusterID, svc)
}

// takeOverByNodePort keys, in st.tgs, each attached target group of a
// load balancer whose target groups get upstream's names, but whose name
// is not the one wanted for any port (upstream made it for other hash
// inputs, or ours under our names before the config asked for upstream's
// shape), under the wanted name of the port it serves (same node port and
// protocol), so it keeps serving instead of being replaced. Like
// takeOverTargetGroups does for our names.
func takeOverByNodePort(st *lbState, naming tgNaming, opts *lbOptions) {
	if !st.upstreamTGs {
		return
	}
	wanted := map[string]bool{}
	for _, p := range opts.ports {
		wanted[naming.name(p)] = true
	}
	var foreign []string
	for name := range st.tgs {
		if !wanted[name] {
			foreign = append(foreign, name)
		}
	}
	slices.Sort(foreign)
	for _, name := range foreign {
		tg := st.tgs[name]
		for _, p := range opts.ports {
			if p.nodePort != aws.ToInt32(tg.Port) || p.protocol() != tg.Protocol {
				continue
			}
			if _, taken := st.tgs[naming.name(p)]; !taken {
				delete(st.tgs, name)
				st.tgs[naming.name(p)] = tg
			}
			break
		}
	}
}

// ensureTargetGroups creates the missing target groups and fixes changed
// health checks. It returns the target groups by port key, and which ones
// it created (they have no targets yet).
func (l *loadBalancers) ensureTargetGroups(ctx context.Context, svc *v1.Service, opts *lbOptions, st *lbState, naming tgNaming, vpc string) (map[portKey]elbv2types.TargetGroup, map[portKey]bool, error) {
	out := make(map[portKey]elbv2types.TargetGroup, len(opts.ports))
	created := map[portKey]bool{}
	for _, p := range opts.ports {
		k := p.key()
		name := naming.name(p)
		tg, ok := st.tgs[name]
		if !ok {
			var err error
			var isNew bool
			if tg, isNew, err = l.createTargetGroup(ctx, svc, opts, p, name, vpc); err != nil {
				return nil, nil, err
			}
			st.tgs[name] = tg
			created[k] = isNew
		}
		if !opts.healthCheck.matches(tg) {
			hc := opts.healthCheck
			mod, err := l.api.elbv2.ModifyTargetGroup(ctx, &elbv2.ModifyTargetGroupInput{
				TargetGroupArn:             tg.TargetGroupArn,
				HealthCheckProtocol:        hc.protocol,
				HealthCheckPort:            aws.String(hc.port),
				HealthCheckPath:            healthCheckPath(hc),
				HealthCheckIntervalSeconds: aws.Int32(hc.interval),
				HealthCheckTimeoutSeconds:  aws.Int32(hc.timeout),
				HealthyThresholdCount:      aws.Int32(hc.healthyThreshold),
				UnhealthyThresholdCount:    aws.Int32(hc.unhealthyThld),
			})
			if err != nil {
				return nil, nil, fmt.Errorf("modify health check of target group %s: %w", name, err)
			}
			klog.FromContext(ctx).Info("Changed target group health check", "targetGroup", name, "protocol", opts.healthCheck.protocol, "port", opts.healthCheck.port)
			if len(mod.TargetGroups) > 0 {
				tg = mod.TargetGroups[0]
				st.tgs[name] = tg
			}
		}
		if err := l.ensureTGAttributes(ctx, tg, name, opts.tgAttributes); err != nil {
			return nil, nil, err
		}
		out[k] = tg
	}
	return out, created, nil
}

// ensureTGAttributes sets the annotated target group attributes that
// differ: one read per target group, only for Services with the
// annotation, and a write only when something differs.
func (l *loadBalancers) ensureTGAttributes(ctx context.Context, tg elbv2types.TargetGroup, name string, want map[string]string) error {
	if len(want) == 0 {
		return nil
	}
	cur, err := l.api.elbv2.DescribeTargetGroupAttributes(ctx, &elbv2.DescribeTargetGroupAttributesInput{TargetGroupArn: tg.TargetGroupArn})
	if err != nil {
		return fmt.Errorf("describe attributes of target group %s: %w", name, err)
	}
	have := map[string]string{}
	for _, a := range cur.Attributes {
		have[aws.ToString(a.Key)] = aws.ToString(a.Value)
	}
	var diff []elbv2types.TargetGroupAttribute
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if have[k] != want[k] {
			diff = append(diff, elbv2types.TargetGroupAttribute{Key: aws.String(k), Value: aws.String(want[k])})
		}
	}
	if len(diff) == 0 {
		return nil
	}
	if _, err := l.api.elbv2.ModifyTargetGroupAttributes(ctx, &elbv2.ModifyTargetGroupAttributesInput{TargetGroupArn: tg.TargetGroupArn, Attributes: diff}); err != nil {
		return fmt.Errorf("set attributes of target group %s (annotation %s): %w", name, annotationTGAttributes, err)
	}
	klog.FromContext(ctx).Info("Set target group attributes", "targetGroup", name, "attributes", len(diff))
	return nil
}

func healthCheckPath(h healthCheckSpec) *string {
	if h.protocol != elbv2types.ProtocolEnumTcp {
		return aws.String(h.path)
	}
	return nil
}

// createTargetGroup creates a target group, or adopts our own that
// outlived its load balancer (deleted by hand); isNew says it has no
// targets yet.
func (l *loadBalancers) createTargetGroup(ctx context.Context, svc *v1.Service, opts *lbOptions, p listenerSpec, name, vpc string) (tg elbv2types.TargetGroup, isNew bool, err error) {
	in := &elbv2.CreateTargetGroupInput{
		Name:                       aws.String(name),
		Protocol:                   p.protocol(),
		Port:                       aws.Int32(p.nodePort),
		VpcId:                      aws.String(vpc),
		TargetType:                 elbv2types.TargetTypeEnumInstance,
		HealthCheckProtocol:        opts.healthCheck.protocol,
		HealthCheckPort:            aws.String(opts.healthCheck.port),
		HealthCheckPath:            healthCheckPath(opts.healthCheck),
		HealthCheckIntervalSeconds: aws.Int32(opts.healthCheck.interval),
		HealthCheckTimeoutSeconds:  aws.Int32(opts.healthCheck.timeout),
		HealthyThresholdCount:      aws.Int32(opts.healthCheck.healthyThreshold),
		UnhealthyThresholdCount:    aws.Int32(opts.healthCheck.unhealthyThld),
		Tags:                       l.elbTags(svc, opts),
	}
	out, err := l.api.elbv2.CreateTargetGroup(ctx, in)
	if isAPIError(err, "DuplicateTargetGroupName") {
		tg, err := l.adoptTargetGroup(ctx, svc, name)
		return tg, false, err
	}
	if err != nil {
		return tg, false, fmt.Errorf("create target group %s: %w", name, err)
	}
	if len(out.TargetGroups) == 0 {
		return tg, false, fmt.Errorf("create target group %s: empty response", name)
	}
	klog.FromContext(ctx).Info("Created target group", "targetGroup", name, "protocol", p.protocol(), "nodePort", p.nodePort)
	return out.TargetGroups[0], true, nil
}

func (l *loadBalancers) adoptTargetGroup(ctx context.Context, svc *v1.Service, name string) (elbv2types.TargetGroup, error) {
	out, err := l.api.elbv2.DescribeTargetGroups(ctx, &elbv2.DescribeTargetGroupsInput{Names: []string{name}})
	if err != nil || len(out.TargetGroups) == 0 {
		return elbv2types.TargetGroup{}, fmt.Errorf("target group %s exists but cannot be read: %w", name, err)
	}
	tg := out.TargetGroups[0]
	tags, err := l.describeTags(ctx, []string{aws.ToString(tg.TargetGroupArn)})
	if err != nil {
		return elbv2types.TargetGroup{}, err
	}
	if !l.ownedTags(tags[aws.ToString(tg.TargetGroupArn)], svc) {
		return elbv2types.TargetGroup{}, fmt.Errorf("target group %s exists but is not tagged as ours; refusing to adopt it", name)
	}
	return tg, nil
}

// ensureListeners makes the listeners match opts: one per port, forwarding
// to its target group. A port whose protocol changed (TCP to TCP_UDP, TCP
// to TLS), certificate or security policy changed is modified in place
// rather than deleted and re-created, so it never stops accepting
// connections.
func (l *loadBalancers) ensureListeners(ctx context.Context, svc *v1.Service, opts *lbOptions, st *lbState, tgs map[portKey]elbv2types.TargetGroup, fresh bool) error {
	logger := klog.FromContext(ctx)
	current := map[int32]elbv2types.Listener{}
	if !fresh {
		ls, err := l.listeners(ctx, st.lbARN())
		if err != nil {
			return err
		}
		for _, li := range ls {
			current[aws.ToInt32(li.Port)] = li
		}
	}
	wanted := map[int32]bool{}
	for _, p := range opts.ports {
		wanted[p.port] = true
		tgARN := aws.ToString(tgs[p.key()].TargetGroupArn)
		actions := []elbv2types.Action{{Type: elbv2types.ActionTypeEnumForward, TargetGroupArn: aws.String(tgARN)}}
		li, ok := current[p.port]
		switch {
		case !ok:
			in := &elbv2.CreateListenerInput{
				LoadBalancerArn: aws.String(st.lbARN()),
				Port:            aws.Int32(p.port),
				Protocol:        p.listenerProtocol(),
				DefaultActions:  actions,
				Tags:            l.elbTags(svc, opts),
			}
			if p.cert != "" {
				in.Certificates = []elbv2types.Certificate{{CertificateArn: aws.String(p.cert)}}
				in.SslPolicy = aws.String(p.sslPolicy)
			}
			_, err := l.api.elbv2.CreateListener(ctx, in)
			if isAPIError(err, "DuplicateListener") {
				// Created by a run whose response we never saw.
				return fmt.Errorf("listener on port %d appeared concurrently; will retry", p.port)
			}
			if err != nil {
				return fmt.Errorf("create listener on port %d: %w", p.port, p.tlsError(err))
			}
			logger.Info("Created listener", "port", p.port, "protocol", p.listenerProtocol(), "targetProtocol", p.protocol())
		case !p.listenerMatches(li, tgARN):
			in := &elbv2.ModifyListenerInput{
				ListenerArn:    li.ListenerArn,
				Port:           aws.Int32(p.port),
				Protocol:       p.listenerProtocol(),
				DefaultActions: actions,
			}
			if p.cert != "" {
				in.Certificates = []elbv2types.Certificate{{CertificateArn: aws.String(p.cert)}}
				in.SslPolicy = aws.String(p.sslPolicy)
			}
			if _, err := l.api.elbv2.ModifyListener(ctx, in); err != nil {
				return fmt.Errorf("modify listener on port %d: %w", p.port, p.tlsError(err))
			}
			logger.Info("Modified listener", "port", p.port, "protocol", p.listenerProtocol(), "targetProtocol", p.protocol())
		}
	}
	for port, li := range current {
		if wanted[port] {
			continue
		}
		if _, err := l.api.elbv2.DeleteListener(ctx, &elbv2.DeleteListenerInput{ListenerArn: li.ListenerArn}); err != nil && !isAPIError(err, "ListenerNotFound") {
			return fmt.Errorf("delete listener on port %d: %w", port, err)
		}
		logger.Info("Deleted listener", "port", port)
	}
	return nil
}

// forwardTarget is the target group a listener's only action forwards to,
// or "" if it does something else.
func forwardTarget(li elbv2types.Listener) string {
	if len(li.DefaultActions) != 1 || li.DefaultActions[0].Type != elbv2types.ActionTypeEnumForward {
		return ""
	}
	a := li.DefaultActions[0]
	if arn := aws.ToString(a.TargetGroupArn); arn != "" {
		return arn
	}
	if a.ForwardConfig != nil && len(a.ForwardConfig.TargetGroups) == 1 {
		return aws.ToString(a.ForwardConfig.TargetGroups[0].TargetGroupArn)
	}
	return ""
}

func (l *loadBalancers) listeners(ctx context.Context, lbARN string) ([]elbv2types.Listener, error) {
	var out []elbv2types.Listener
	p := elbv2.NewDescribeListenersPaginator(l.api.elbv2.DescribeListeners, &elbv2.DescribeListenersInput{LoadBalancerArn: aws.String(lbARN)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if isAPIError(err, "LoadBalancerNotFound") {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("describe listeners of %s: %w", lbARN, err)
		}
		out = append(out, page.Listeners...)
	}
	return out, nil
}

// deleteTargetGroups deletes target groups whose listeners are gone.
func (l *loadBalancers) deleteTargetGroups(ctx context.Context, st *lbState, names []string) error {
	for _, name := range names {
		tg := st.tgs[name]
		_, err := l.api.elbv2.DeleteTargetGroup(ctx, &elbv2.DeleteTargetGroupInput{TargetGroupArn: tg.TargetGroupArn})
		if err != nil && !isAPIError(err, "TargetGroupNotFound") {
			return fmt.Errorf("delete target group %s: %w", name, err)
		}
		l.targets.Delete(aws.ToString(tg.TargetGroupArn))
		delete(st.tgs, name)
		klog.FromContext(ctx).Info("Deleted target group", "targetGroup", name)
	}
	return nil
}
