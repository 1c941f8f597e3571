package aws

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	"k8s.io/klog/v2"
)

// sameListener compares listeners as AWS reports them: protocols in any
// case, the certificate ARN exactly.
func sameListener(a, b *elbtypes.Listener) bool {
	return a.LoadBalancerPort == b.LoadBalancerPort && aws.ToInt32(a.InstancePort) == aws.ToInt32(b.InstancePort) &&
		strings.EqualFold(aws.ToString(a.Protocol), aws.ToString(b.Protocol)) &&
		strings.EqualFold(aws.ToString(a.InstanceProtocol), aws.ToString(b.InstanceProtocol)) &&
		aws.ToString(a.SSLCertificateId) == aws.ToString(b.SSLCertificateId)
}

// certOnly says a and b differ in their certificate alone, both TLS.
func certOnly(a, b *elbtypes.Listener) bool {
	c := *a
	c.SSLCertificateId = b.SSLCertificateId
	return sameListener(&c, b) && a.SSLCertificateId != nil && b.SSLCertificateId != nil
}

func (c *classicLoadBalancers) setCertificate(ctx context.Context, st *clbState, opts *clbOptions, l *elbtypes.Listener) error {
	_, err := c.nlb.api.elb.SetLoadBalancerListenerSSLCertificate(ctx, &elb.SetLoadBalancerListenerSSLCertificateInput{
		LoadBalancerName: aws.String(st.name), LoadBalancerPort: l.LoadBalancerPort, SSLCertificateId: l.SSLCertificateId,
	})
	if isAPIError(err, "CertificateNotFound") {
		return fmt.Errorf("annotation %s: certificate %s is not known to AWS in this account and region: %w", annotationSSLCert, aws.ToString(l.SSLCertificateId), err)
	}
	if err != nil {
		return fmt.Errorf("set the certificate of listener %d of %s: %w", l.LoadBalancerPort, st.name, err)
	}
	klog.FromContext(ctx).Info("Replaced Classic ELB listener certificate", "port", l.LoadBalancerPort, "certificate", aws.ToString(l.SSLCertificateId))
	return nil
}

// ensureListeners makes the listeners exactly opts.listeners, as upstream
// syncs them (aws_loadbalancer.go:1296-1320 and 1446, syncElbListeners):
// a listener that differs is deleted and created again, in one call each
// for all ports; one that differs only in its certificate gets the new
// one in place.
func (c *classicLoadBalancers) ensureListeners(ctx context.Context, st *clbState, opts *clbOptions) error {
	have := map[int32]elbtypes.ListenerDescription{}
	for _, d := range st.lb.ListenerDescriptions {
		if d.Listener != nil {
			have[d.Listener.LoadBalancerPort] = d
		}
	}
	want := map[int32]bool{}
	var create []elbtypes.Listener
	var remove []int32
	for i := range opts.listeners {
		w := &opts.listeners[i]
		want[w.LoadBalancerPort] = true
		h, ok := have[w.LoadBalancerPort]
		if ok && sameListener(h.Listener, w) {
			continue
		}
		if ok && certOnly(h.Listener, w) {
			// Swapped in place: an unknown certificate then leaves the
			// listener serving the old one, where delete and create would
			// leave the port closed.
			if err := c.setCertificate(ctx, st, opts, w); err != nil {
				return err
			}
			h.Listener.SSLCertificateId = w.SSLCertificateId
			have[w.LoadBalancerPort] = h
			continue
		}
		if ok {
			remove = append(remove, w.LoadBalancerPort)
		}
		create = append(create, *w)
	}
	for port := range have {
		if !want[port] {
			remove = append(remove, port)
		}
	}
	if len(remove)+len(create) == 0 {
		return nil
	}
	slices.Sort(remove)
	if len(remove) > 0 {
		_, err := c.nlb.api.elb.DeleteLoadBalancerListeners(ctx, &elb.DeleteLoadBalancerListenersInput{LoadBalancerName: aws.String(st.name), LoadBalancerPorts: remove})
		if err != nil {
			return fmt.Errorf("delete listeners %v of %s: %w", remove, st.name, err)
		}
	}
	if len(create) > 0 {
		_, err := c.nlb.api.elb.CreateLoadBalancerListeners(ctx, &elb.CreateLoadBalancerListenersInput{LoadBalancerName: aws.String(st.name), Listeners: create})
		if isAPIError(err, "CertificateNotFound") {
			return fmt.Errorf("annotation %s: certificate %s is not known to AWS in this account and region: %w", annotationSSLCert, certOf(opts), err)
		}
		if err != nil {
			return fmt.Errorf("create listeners of %s: %w", st.name, err)
		}
	}
	klog.FromContext(ctx).Info("Updated Classic ELB listeners", "removed", remove, "created", len(create))
	// What is there now: the unchanged listeners with their policies, the
	// new ones with none yet.
	var now []elbtypes.ListenerDescription
	for i := range opts.listeners {
		w := opts.listeners[i]
		if h, ok := have[w.LoadBalancerPort]; ok && sameListener(h.Listener, &w) {
			now = append(now, h)
		} else {
			now = append(now, elbtypes.ListenerDescription{Listener: &w})
		}
	}
	st.lb.ListenerDescriptions = now
	return nil
}

// ensureHealthCheck sets the health check when it differs; upstream
// compares the same fields (aws_loadbalancer.go:1575-1625).
func (c *classicLoadBalancers) ensureHealthCheck(ctx context.Context, st *clbState, opts *clbOptions) error {
	want, have := opts.healthCheck, st.lb.HealthCheck
	if have != nil && strings.EqualFold(aws.ToString(have.Target), aws.ToString(want.Target)) &&
		aws.ToInt32(have.HealthyThreshold) == aws.ToInt32(want.HealthyThreshold) &&
		aws.ToInt32(have.UnhealthyThreshold) == aws.ToInt32(want.UnhealthyThreshold) &&
		aws.ToInt32(have.Timeout) == aws.ToInt32(want.Timeout) && aws.ToInt32(have.Interval) == aws.ToInt32(want.Interval) {
		return nil
	}
	if _, err := c.nlb.api.elb.ConfigureHealthCheck(ctx, &elb.ConfigureHealthCheckInput{LoadBalancerName: aws.String(st.name), HealthCheck: &want}); err != nil {
		return fmt.Errorf("configure health check %s of %s: %w", aws.ToString(want.Target), st.name, err)
	}
	st.lb.HealthCheck = &want
	klog.FromContext(ctx).Info("Configured Classic ELB health check", "target", aws.ToString(want.Target))
	return nil
}

// ensurePolicies keeps the PROXY protocol backend policy and the SSL
// negotiation policy as the annotations ask, with upstream's policy names
// and types (aws_loadbalancer.go:1323-1370, 1695-1790). Both are read
// from the load balancer's description: no extra call when in place.
func (c *classicLoadBalancers) ensurePolicies(ctx context.Context, st *clbState, opts *clbOptions) error {
	var existing []string
	if st.lb.Policies != nil {
		existing = st.lb.Policies.OtherPolicies
	}
	api := c.nlb.api.elb
	logger := klog.FromContext(ctx)
	if opts.proxy && !slices.Contains(existing, clbProxyProtocolPolicy) {
		_, err := api.CreateLoadBalancerPolicy(ctx, &elb.CreateLoadBalancerPolicyInput{
			LoadBalancerName: aws.String(st.name),
			PolicyName:       aws.String(clbProxyProtocolPolicy),
			PolicyTypeName:   aws.String(clbProxyProtocolType),
			PolicyAttributes: []elbtypes.PolicyAttribute{{AttributeName: aws.String("ProxyProtocol"), AttributeValue: aws.String("true")}},
		})
		if err != nil && !isAPIError(err, "DuplicatePolicyName") {
			return fmt.Errorf("create PROXY protocol policy on %s: %w", st.name, err)
		}
	}
	backend := map[int32][]string{}
	for _, b := range st.lb.BackendServerDescriptions {
		backend[aws.ToInt32(b.InstancePort)] = b.PolicyNames
	}
	instancePorts := map[int32]bool{}
	for _, l := range opts.listeners {
		instancePorts[aws.ToInt32(l.InstancePort)] = true
	}
	ports := make([]int32, 0, len(instancePorts)+len(backend))
	for p := range instancePorts {
		ports = append(ports, p)
	}
	for p := range backend {
		if !instancePorts[p] {
			ports = append(ports, p)
		}
	}
	sort.Slice(ports, func(i, j int) bool { return ports[i] < ports[j] })
	for _, port := range ports {
		have := backend[port]
		var want []string
		if opts.proxy && instancePorts[port] {
			want = []string{clbProxyProtocolPolicy}
		} else {
			// Without the annotation only our policy goes; others are
			// someone else's.
			want = slices.DeleteFunc(slices.Clone(have), func(p string) bool { return p == clbProxyProtocolPolicy })
		}
		if slices.Equal(have, want) || (len(have) == 0 && len(want) == 0) {
			continue
		}
		if _, err := api.SetLoadBalancerPoliciesForBackendServer(ctx, &elb.SetLoadBalancerPoliciesForBackendServerInput{
			LoadBalancerName: aws.String(st.name), InstancePort: aws.Int32(port), PolicyNames: want,
		}); err != nil {
			return fmt.Errorf("set backend policies %v on instance port %d of %s: %w", want, port, st.name, err)
		}
		logger.Info("Set Classic ELB backend policies", "instancePort", port, "policies", want)
	}

	if opts.sslPolicy == "" {
		return nil
	}
	name := fmt.Sprintf(clbSSLPolicyNameFormat, opts.sslPolicy)
	if !slices.Contains(existing, name) {
		_, err := api.CreateLoadBalancerPolicy(ctx, &elb.CreateLoadBalancerPolicyInput{
			LoadBalancerName: aws.String(st.name),
			PolicyName:       aws.String(name),
			PolicyTypeName:   aws.String(clbSSLNegotiationType),
			PolicyAttributes: []elbtypes.PolicyAttribute{{AttributeName: aws.String(clbReferenceSecurityAttr), AttributeValue: aws.String(opts.sslPolicy)}},
		})
		if err != nil && !isAPIError(err, "DuplicatePolicyName") {
			return fmt.Errorf("annotation %s: create SSL negotiation policy %s on %s: %w", annotationSSLNegotiationPolicy, name, st.name, err)
		}
	}
	for _, d := range st.lb.ListenerDescriptions {
		p := strings.ToUpper(aws.ToString(d.Listener.Protocol))
		if (p != "SSL" && p != "HTTPS") || slices.Equal(d.PolicyNames, []string{name}) {
			continue
		}
		if _, err := api.SetLoadBalancerPoliciesOfListener(ctx, &elb.SetLoadBalancerPoliciesOfListenerInput{
			LoadBalancerName: aws.String(st.name), LoadBalancerPort: d.Listener.LoadBalancerPort, PolicyNames: []string{name},
		}); err != nil {
			return fmt.Errorf("set SSL negotiation policy %s on port %d of %s: %w", name, d.Listener.LoadBalancerPort, st.name, err)
		}
		logger.Info("Set Classic ELB SSL negotiation policy", "port", d.Listener.LoadBalancerPort, "policy", name)
	}
	return nil
}

// ensureAttributes reads the attributes and modifies them only when they
// differ from what the annotations ask (upstream: aws_loadbalancer.go:1404-1430).
func (c *classicLoadBalancers) ensureAttributes(ctx context.Context, st *clbState, opts *clbOptions) error {
	out, err := c.nlb.api.elb.DescribeLoadBalancerAttributes(ctx, &elb.DescribeLoadBalancerAttributesInput{LoadBalancerName: aws.String(st.name)})
	if err != nil {
		return fmt.Errorf("describe attributes of %s: %w", st.name, err)
	}
	if opts.attrs.matches(out.LoadBalancerAttributes) {
		return nil
	}
	want := opts.attrs.elbAttributes()
	if want.ConnectionDraining.Timeout == nil && out.LoadBalancerAttributes != nil && out.LoadBalancerAttributes.ConnectionDraining != nil {
		// Left open by the annotations: keep what is set.
		want.ConnectionDraining.Timeout = out.LoadBalancerAttributes.ConnectionDraining.Timeout
	}
	if _, err := c.nlb.api.elb.ModifyLoadBalancerAttributes(ctx, &elb.ModifyLoadBalancerAttributesInput{LoadBalancerName: aws.String(st.name), LoadBalancerAttributes: want}); err != nil {
		return fmt.Errorf("modify attributes of %s: %w", st.name, err)
	}
	klog.FromContext(ctx).Info("Modified Classic ELB attributes")
	return nil
}
