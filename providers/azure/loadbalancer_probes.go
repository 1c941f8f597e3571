package azure

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
	v1 "k8s.io/api/core/v1"
	servicehelpers "k8s.io/cloud-provider/service/helpers"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/svcopts"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/upstreamann"
)

// Health probes as upstream builds them (cloud-provider-azure v1.36.5
// pkg/provider/azure_loadbalancer_healthprobe.go:50-280 and
// azure_loadbalancer.go:3180-3320):
//   - a probe per TCP port, named like its rule: port_<n>_health-probe_port
//     (a Service port's name or number means its NodePort, another number
//     itself), else the NodePort; protocol from port_<n>_health-probe_protocol,
//     then the port's appProtocol, then azure-load-balancer-health-probe-protocol,
//     then Tcp (an unknown value is Tcp, as upstream); for Http and Https
//     the path from port_<n>_health-probe_request-path, then
//     azure-load-balancer-health-probe-request-path, then "/";
//   - every 5 s, 2 failures (ProbeThreshold), each overridden by the port's
//     then the Service's -interval (at least 5) and -num-of-probe (at
//     least 2) annotations, their product under 120;
//   - for externalTrafficPolicy Local one HTTP probe of kube-proxy's
//     health check, "<rule prefix>-TCP-<healthCheckNodePort>", that every
//     rule uses unless the port names its own probe port;
//   - port_<n>_no_probe_rule "true" leaves a port unprobed and
//     port_<n>_no_lb_rule "true" leaves it without a rule.
const (
	// The Service's probe settings (pkg/consts/consts.go:309-322).
	annotationProbeProtocol    svcopts.Annotation = "service.beta.kubernetes.io/azure-load-balancer-health-probe-protocol"
	annotationProbeInterval    svcopts.Annotation = "service.beta.kubernetes.io/azure-load-balancer-health-probe-interval"
	annotationProbeNumOfProbe  svcopts.Annotation = "service.beta.kubernetes.io/azure-load-balancer-health-probe-num-of-probe"
	annotationProbeRequestPath svcopts.Annotation = "service.beta.kubernetes.io/azure-load-balancer-health-probe-request-path"
	// A port's, "{port}" its number (pkg/consts/consts.go:472-506,
	// keys built by helpers.go:87-95).
	annotationPortProbeProtocol    svcopts.Annotation = "service.beta.kubernetes.io/port_{port}_health-probe_protocol"
	annotationPortProbePort        svcopts.Annotation = "service.beta.kubernetes.io/port_{port}_health-probe_port"
	annotationPortProbeInterval    svcopts.Annotation = "service.beta.kubernetes.io/port_{port}_health-probe_interval"
	annotationPortProbeNumOfProbe  svcopts.Annotation = "service.beta.kubernetes.io/port_{port}_health-probe_num-of-probe"
	annotationPortProbeRequestPath svcopts.Annotation = "service.beta.kubernetes.io/port_{port}_health-probe_request-path"
	annotationPortNoProbeRule      svcopts.Annotation = "service.beta.kubernetes.io/port_{port}_no_probe_rule"
	annotationPortNoLBRule         svcopts.Annotation = "service.beta.kubernetes.io/port_{port}_no_lb_rule"

	probeDefaultPath     = "/"
	probeMaxTotalSeconds = 120
)

// forPort is a port annotation's key for one port.
func forPort(a svcopts.Annotation, port int32) string {
	return strings.Replace(string(a), upstreamann.PortPlaceholder, strconv.Itoa(int(port)), 1)
}

// portProbe is what one Service port gets.
type portProbe struct {
	noRule bool
	// probe is the port's own probe, nil for none (UDP, no_probe_rule,
	// or the Local probe).
	probe *armnetwork.ProbePropertiesFormat
	// useLocal says the rule uses the Service's Local probe.
	useLocal bool
}

// probeSettings reads the probe annotations of svc for sp's ports.
func probeSettings(svc *v1.Service, sp *lbSpec) ([]portProbe, *armnetwork.ProbePropertiesFormat, error) {
	ann := svc.Annotations
	lookup := func(keys ...string) (string, string, bool) {
		for _, k := range keys {
			if v, ok := ann[k]; ok {
				return strings.TrimSpace(v), k, true
			}
		}
		return "", "", false
	}
	isTrue := func(key string) bool { return strings.EqualFold(strings.TrimSpace(ann[key]), "true") }
	intOf := func(port int32, perPort, global svcopts.Annotation, def, minimum int32) (int32, error) {
		v, key, ok := lookup(forPort(perPort, port), string(global))
		if !ok {
			return def, nil
		}
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || int32(n) < minimum {
			return 0, fmt.Errorf("annotation %s=%q: want a whole number of at least %d", key, v, minimum)
		}
		return int32(n), nil
	}
	timing := func(port int32) (*int32, *int32, error) {
		interval, err := intOf(port, annotationPortProbeInterval, annotationProbeInterval, probeInterval, 5)
		if err != nil {
			return nil, nil, err
		}
		threshold, err := intOf(port, annotationPortProbeNumOfProbe, annotationProbeNumOfProbe, probeCount, 2)
		if err != nil {
			return nil, nil, err
		}
		if interval*threshold >= probeMaxTotalSeconds {
			return nil, nil, fmt.Errorf("health probe of port %d: interval %d s times %d probes must stay under %d s", port, interval, threshold, probeMaxTotalSeconds)
		}
		return to.Ptr(interval), to.Ptr(threshold), nil
	}

	var local *armnetwork.ProbePropertiesFormat
	if sp.local {
		path, port := servicehelpers.GetServiceHealthCheckPathPort(svc)
		interval, threshold, err := timing(port)
		if err != nil {
			return nil, nil, err
		}
		local = &armnetwork.ProbePropertiesFormat{Protocol: to.Ptr(armnetwork.ProbeProtocolHTTP), Port: to.Ptr(port), RequestPath: to.Ptr(path),
			IntervalInSeconds: interval, ProbeThreshold: threshold}
	}
	out := make([]portProbe, len(sp.ports))
	for i, p := range sp.ports {
		if isTrue(forPort(annotationPortNoLBRule, p.Port)) {
			out[i].noRule = true
			continue
		}
		if isTrue(forPort(annotationPortNoProbeRule, p.Port)) {
			continue
		}
		probe, err := portProbeFor(svc, sp, p, lookup)
		if err != nil {
			return nil, nil, err
		}
		if probe == nil {
			out[i].useLocal = local != nil
			continue
		}
		if probe.IntervalInSeconds, probe.ProbeThreshold, err = timing(p.Port); err != nil {
			return nil, nil, err
		}
		out[i].probe = probe
	}
	return out, local, nil
}

// portProbeFor is a port's own probe without its timing, or nil: a UDP
// port, or a Local Service's port that names no probe port.
func portProbeFor(svc *v1.Service, sp *lbSpec, p v1.ServicePort, lookup func(...string) (string, string, bool)) (*armnetwork.ProbePropertiesFormat, error) {
	if p.Protocol != v1.ProtocolTCP {
		return nil, nil
	}
	props := &armnetwork.ProbePropertiesFormat{Port: to.Ptr(p.NodePort)}
	if v, key, ok := lookup(forPort(annotationPortProbePort, p.Port)); ok {
		port, err := probePort(svc, v)
		if err != nil {
			return nil, fmt.Errorf("annotation %s=%q: %w", key, v, err)
		}
		props.Port = to.Ptr(port)
	} else if sp.local {
		return nil, nil
	}
	proto, _, ok := lookup(forPort(annotationPortProbeProtocol, p.Port))
	if !ok && p.AppProtocol != nil {
		proto, ok = strings.TrimSpace(*p.AppProtocol), true
	}
	if !ok {
		proto, _, _ = lookup(string(annotationProbeProtocol))
	}
	switch {
	case strings.EqualFold(proto, "http"):
		props.Protocol = to.Ptr(armnetwork.ProbeProtocolHTTP)
	case strings.EqualFold(proto, "https"):
		props.Protocol = to.Ptr(armnetwork.ProbeProtocolHTTPS)
	default:
		props.Protocol = to.Ptr(armnetwork.ProbeProtocolTCP)
	}
	if *props.Protocol != armnetwork.ProbeProtocolTCP {
		path, _, ok := lookup(forPort(annotationPortProbeRequestPath, p.Port), string(annotationProbeRequestPath))
		if !ok {
			path = probeDefaultPath
		}
		props.RequestPath = to.Ptr(path)
	}
	return props, nil
}

// probePort is upstream's reading of port_<n>_health-probe_port: a
// Service port's name or number is its NodePort, another number (0-65535)
// itself.
func probePort(svc *v1.Service, v string) (int32, error) {
	for _, sp := range svc.Spec.Ports {
		if strings.EqualFold(sp.Name, v) {
			return sp.NodePort, nil
		}
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 65535 {
		return 0, fmt.Errorf("want a port number (0-65535) or the name of one of the Service's ports")
	}
	for _, sp := range svc.Spec.Ports {
		if sp.Port == int32(n) {
			return sp.NodePort, nil
		}
	}
	return int32(n), nil
}
