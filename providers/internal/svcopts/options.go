package svcopts

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	servicehelpers "k8s.io/cloud-provider/service/helpers"
)

// Invalid is the error for a malformed value of the annotation: it names
// the annotation and the value and says what would be valid, e.g.
//
//	annotation service.beta.kubernetes.io/aws-load-balancer-internal="maybe": want "true", "false" or a CIDR such as 0.0.0.0/0
func (a Annotation) Invalid(value, want string) error {
	return fmt.Errorf("annotation %s=%q: want %s", a, value, want)
}

// Bool reads a boolean annotation; set is false when it is absent. Only
// what strconv.ParseBool accepts is valid: a typo must not silently mean
// false.
func (a Annotation) Bool(svc *v1.Service) (value, set bool, err error) {
	v, ok := a.Lookup(svc)
	if !ok {
		return false, false, nil
	}
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		return false, true, a.Invalid(v, `"true" or "false"`)
	}
	return b, true, nil
}

// List reads a comma-separated annotation, trimming spaces; set is false
// when it is absent. Empty and repeated entries are errors, since they
// are typos more often than not.
func (a Annotation) List(svc *v1.Service) (items []string, set bool, err error) {
	v, ok := a.Lookup(svc)
	if !ok {
		return nil, false, nil
	}
	seen := map[string]bool{}
	for _, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		switch {
		case s == "":
			return nil, true, fmt.Errorf("annotation %s=%q: empty entry; want a comma-separated list such as \"a,b\"", a, v)
		case seen[s]:
			return nil, true, fmt.Errorf("annotation %s: %q listed twice", a, s)
		}
		seen[s] = true
		items = append(items, s)
	}
	return items, true, nil
}

// SourceRanges are the client CIDRs allowed to reach the Service's load
// balancer: spec.loadBalancerSourceRanges, else the
// service.beta.kubernetes.io/load-balancer-source-ranges annotation, else
// 0.0.0.0/0, read through k8s.io/cloud-provider/service/helpers so every
// backend agrees with the service controller. The result is masked,
// deduplicated and sorted.
func SourceRanges(svc *v1.Service) ([]netip.Prefix, error) {
	set, err := servicehelpers.GetLoadBalancerSourceRanges(svc)
	if err != nil {
		// The helper's message names the field or annotation and gives
		// a valid example.
		return nil, err
	}
	out := make([]netip.Prefix, 0, len(set))
	for _, n := range set {
		p, err := netip.ParsePrefix(n.String())
		if err != nil {
			return nil, fmt.Errorf("source range %s: %w", n, err)
		}
		out = append(out, p.Masked())
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	return slices.Compact(out), nil
}

// HealthCheck says how the load balancer should probe the nodes. For
// externalTrafficPolicy Local it is kube-proxy's HTTP health check on the
// Service's healthCheckNodePort (path /healthz), so only nodes with a
// ready endpoint get traffic; otherwise local is false and any node can
// forward, so the backend probes the traffic port or kube-proxy's shared
// health port as its cloud does.
func HealthCheck(svc *v1.Service) (path string, nodePort int32, local bool) {
	path, nodePort = servicehelpers.GetServiceHealthCheckPathPort(svc)
	return path, nodePort, nodePort != 0
}

// Ports returns the Service's ports after checking what every backend
// that sends traffic to NodePorts needs: at least one port, each with a
// protocol the backend supports (unset means TCP) and a nodePort.
// backend names the load balancer in errors ("a Network Load Balancer").
func Ports(svc *v1.Service, backend string, allowed ...v1.Protocol) ([]v1.ServicePort, error) {
	if len(svc.Spec.Ports) == 0 {
		return nil, fmt.Errorf("service %s/%s has no ports", svc.Namespace, svc.Name)
	}
	out := make([]v1.ServicePort, 0, len(svc.Spec.Ports))
	for _, p := range svc.Spec.Ports {
		if p.Protocol == "" {
			p.Protocol = v1.ProtocolTCP
		}
		if !slices.Contains(allowed, p.Protocol) {
			return nil, fmt.Errorf("service port %d uses protocol %s: %s from this controller supports %s only", p.Port, p.Protocol, backend, protocolList(allowed))
		}
		if p.NodePort == 0 {
			return nil, fmt.Errorf("service port %d has no nodePort (spec.allocateLoadBalancerNodePorts=false?): %s from this controller sends traffic to node ports", p.Port, backend)
		}
		out = append(out, p)
	}
	return out, nil
}

func protocolList(ps []v1.Protocol) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = string(p)
	}
	if len(s) > 1 {
		return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
	}
	return strings.Join(s, "")
}
