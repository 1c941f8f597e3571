package aws

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/svcopts"
)

// Health check timing for every target group: a node leaves rotation after
// two failed checks, 10 s apart. The timeout is explicit because ELBv2
// requires it below the interval and its TCP default equals 10 s.
const (
	healthCheckInterval = 10
	healthCheckTimeout  = 6
	healthyThreshold    = 2
	unhealthyThreshold  = 2
	healthCheckTraffic  = "traffic-port"
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
}

func (s listenerSpec) protocol() elbv2types.ProtocolEnum {
	switch {
	case s.tcp && s.udp:
		return elbv2types.ProtocolEnumTcpUdp
	case s.udp:
		return elbv2types.ProtocolEnumUdp
	default:
		return elbv2types.ProtocolEnumTcp
	}
}

func (s listenerSpec) key() portKey { return portKey{port: s.port, proto: s.protocol()} }

// healthCheckSpec is the part of a target group's health check that follows
// the Service; timing is fixed.
type healthCheckSpec struct {
	protocol elbv2types.ProtocolEnum
	port     string
	path     string
	// nodePort is the health check NodePort, when there is one.
	nodePort int32
}

// healthCheckFor probes kube-proxy's health check node port for
// externalTrafficPolicy Local, so only nodes with a ready endpoint get
// traffic; otherwise any node can forward, and a TCP connect to the
// NodePort is enough.
func healthCheckFor(svc *v1.Service) healthCheckSpec {
	if path, nodePort, local := svcopts.HealthCheck(svc); local {
		return healthCheckSpec{
			protocol: elbv2types.ProtocolEnumHttp,
			port:     strconv.Itoa(int(nodePort)),
			path:     path,
			nodePort: nodePort,
		}
	}
	return healthCheckSpec{protocol: elbv2types.ProtocolEnumTcp, port: healthCheckTraffic}
}

func (h healthCheckSpec) matches(tg elbv2types.TargetGroup) bool {
	if tg.HealthCheckProtocol != h.protocol || aws.ToString(tg.HealthCheckPort) != h.port {
		return false
	}
	return h.protocol != elbv2types.ProtocolEnumHttp || aws.ToString(tg.HealthCheckPath) == h.path
}

// desiredRecord is the record of target group suffixes opts asks for.
func desiredRecord(opts *lbOptions) map[string]bool {
	rec := make(map[string]bool, len(opts.ports))
	for _, p := range opts.ports {
		rec[p.key().suffix()] = true
	}
	return rec
}

// ensureTargetGroups creates the missing target groups and fixes changed
// health checks. It returns the target groups by port key, and which ones
// it created (they have no targets yet).
func (l *loadBalancers) ensureTargetGroups(ctx context.Context, svc *v1.Service, opts *lbOptions, st *lbState, vpc string) (map[portKey]elbv2types.TargetGroup, map[portKey]bool, error) {
	out := make(map[portKey]elbv2types.TargetGroup, len(opts.ports))
	created := map[portKey]bool{}
	for _, p := range opts.ports {
		k := p.key()
		name := targetGroupName(l.clusterID, svc, k)
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
			mod, err := l.api.elbv2.ModifyTargetGroup(ctx, &elbv2.ModifyTargetGroupInput{
				TargetGroupArn:      tg.TargetGroupArn,
				HealthCheckProtocol: opts.healthCheck.protocol,
				HealthCheckPort:     aws.String(opts.healthCheck.port),
				HealthCheckPath:     healthCheckPath(opts.healthCheck),
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
		out[k] = tg
	}
	return out, created, nil
}

func healthCheckPath(h healthCheckSpec) *string {
	if h.protocol == elbv2types.ProtocolEnumHttp {
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
		HealthCheckIntervalSeconds: aws.Int32(healthCheckInterval),
		HealthCheckTimeoutSeconds:  aws.Int32(healthCheckTimeout),
		HealthyThresholdCount:      aws.Int32(healthyThreshold),
		UnhealthyThresholdCount:    aws.Int32(unhealthyThreshold),
		Tags:                       l.elbTags(svc),
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
// to its target group. A port whose protocol changed (TCP to TCP_UDP) is
// modified in place rather than deleted and re-created, so it never stops
// accepting connections.
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
			_, err := l.api.elbv2.CreateListener(ctx, &elbv2.CreateListenerInput{
				LoadBalancerArn: aws.String(st.lbARN()),
				Port:            aws.Int32(p.port),
				Protocol:        p.protocol(),
				DefaultActions:  actions,
				Tags:            l.elbTags(svc),
			})
			if isAPIError(err, "DuplicateListener") {
				// Created by a run whose response we never saw.
				return fmt.Errorf("listener on port %d appeared concurrently; will retry", p.port)
			}
			if err != nil {
				return fmt.Errorf("create listener on port %d: %w", p.port, err)
			}
			logger.Info("Created listener", "port", p.port, "protocol", p.protocol())
		case li.Protocol != p.protocol() || forwardTarget(li) != tgARN:
			if _, err := l.api.elbv2.ModifyListener(ctx, &elbv2.ModifyListenerInput{
				ListenerArn:    li.ListenerArn,
				Port:           aws.Int32(p.port),
				Protocol:       p.protocol(),
				DefaultActions: actions,
			}); err != nil {
				return fmt.Errorf("modify listener on port %d: %w", p.port, err)
			}
			logger.Info("Modified listener", "port", p.port, "protocol", p.protocol())
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
