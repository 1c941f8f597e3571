package aws

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// clbListener is a Classic ELB listener: a front-end protocol and port
// forwarding to a back-end protocol and port on every instance.
type clbListener struct {
	protocol         string // HTTP, HTTPS, TCP or SSL, upper case
	port             int
	instanceProtocol string
	instancePort     int
	certificate      string   // SSLCertificateId, for HTTPS and SSL
	policies         []string // SetLoadBalancerPoliciesOfListener's
}

var clbProtocols = []string{"HTTP", "HTTPS", "TCP", "SSL"}

// isSecure reports whether a Classic ELB protocol is TLS-terminated.
func isSecure(protocol string) bool { return protocol == "HTTPS" || protocol == "SSL" }

// isLayer7 reports whether a protocol is one of the HTTP pair; the front
// end and the back end must both be, or both not be.
func isLayer7(protocol string) bool { return protocol == "HTTP" || protocol == "HTTPS" }

// defaultInstanceProtocol is the back end AWS picks when InstanceProtocol is
// left out: the plain protocol of the same layer, so an HTTPS front end
// terminates TLS and speaks HTTP to the instances.
func defaultInstanceProtocol(protocol string) string {
	if isLayer7(protocol) {
		return "HTTP"
	}
	return "TCP"
}

func (l *clbListener) xml() xmlCLBListener {
	return xmlCLBListener{
		Protocol: l.protocol, LoadBalancerPort: l.port, InstanceProtocol: l.instanceProtocol,
		InstancePort: l.instancePort, SSLCertificateID: l.certificate,
	}
}

// sameConfig reports whether two listeners are the same listener, policies
// aside. Protocols were upper-cased on the way in: AWS takes them in any
// case and reports them upper case, which is why the upstream CCM compares
// them case-insensitively (upstream: kubernetes/cloud-provider-aws
// pkg/providers/v1/aws_loadbalancer.go:1520 elbProtocolsAreEqual).
func (l *clbListener) sameConfig(o *clbListener) bool {
	return l.protocol == o.protocol && l.port == o.port && l.instanceProtocol == o.instanceProtocol &&
		l.instancePort == o.instancePort && l.certificate == o.certificate
}

func (l *clbListener) String() string {
	return fmt.Sprintf("%s:%d->%s:%d", l.protocol, l.port, l.instanceProtocol, l.instancePort)
}

// sameListeners compares listener sets by configuration.
func sameListeners(a, b []*clbListener) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.ContainsFunc(b, x.sameConfig) {
			return false
		}
	}
	return true
}

// parseCLBListeners reads Listeners.member.N with the checks that need no
// load balancer: protocols, ports, the certificate rules.
func parseCLBListeners(p params) ([]*clbListener, error) {
	var out []*clbListener
	for i, s := range p.structs("Listeners.member") {
		member := fmt.Sprintf("listeners.%d.member", i+1)
		l := &clbListener{
			protocol:         strings.ToUpper(s.get("Protocol")),
			instanceProtocol: strings.ToUpper(s.get("InstanceProtocol")),
			certificate:      s.get("SSLCertificateId"),
		}
		if l.protocol == "" {
			return nil, clbRequired(member + ".protocol")
		}
		if !slices.Contains(clbProtocols, l.protocol) {
			return nil, apiErr("UnsupportedProtocol", "Protocol '%s' is not supported; use one of %s", s.get("Protocol"), strings.Join(clbProtocols, ", "))
		}
		if l.instanceProtocol == "" {
			l.instanceProtocol = defaultInstanceProtocol(l.protocol)
		}
		if !slices.Contains(clbProtocols, l.instanceProtocol) {
			return nil, apiErr("UnsupportedProtocol", "Instance protocol '%s' is not supported; use one of %s", s.get("InstanceProtocol"), strings.Join(clbProtocols, ", "))
		}
		var err error
		if l.port, err = requiredPort(s, "LoadBalancerPort", member+".loadBalancerPort"); err != nil {
			return nil, err
		}
		if l.instancePort, err = requiredPort(s, "InstancePort", member+".instancePort"); err != nil {
			return nil, err
		}
		if isLayer7(l.protocol) != isLayer7(l.instanceProtocol) {
			return nil, clbInvalidConfig("Listener protocol '%s' and instance protocol '%s' are not compatible: HTTP and HTTPS front ends need an HTTP or HTTPS back end, TCP and SSL a TCP or SSL one", l.protocol, l.instanceProtocol)
		}
		switch {
		case isSecure(l.protocol) && l.certificate == "":
			return nil, validation("SSLCertificateId is required for a listener with protocol %s", l.protocol)
		case !isSecure(l.protocol) && l.certificate != "":
			return nil, clbInvalidConfig("SSLCertificateId is only valid for HTTPS and SSL listeners, not %s", l.protocol)
		}
		out = append(out, l)
	}
	return out, nil
}

func requiredPort(s params, key, member string) (int, error) {
	if s.get(key) == "" {
		return 0, clbRequired(member)
	}
	n, _, err := intRange(s, key, member, 1, 65535)
	return n, err
}

// checkCLBListeners validates listeners about to join lb (nil for a load
// balancer being created) against each other and lb's listeners: the
// certificates exist, one port carries one configuration, and listeners
// sharing an instance port agree on whether it speaks TLS.
func (e *Emulator) checkCLBListeners(lb *classicLB, added []*clbListener) error {
	for _, l := range added {
		if l.certificate != "" && !e.certificateUsable(l.certificate) {
			return apiErr(codeCertificateMissing, "Server Certificate not found for the key: %s", l.certificate)
		}
	}
	var existing []*clbListener
	if lb != nil {
		existing = lb.listeners
	}
	all := slices.Concat(existing, added)
	for i, l := range all {
		for _, o := range all[:i] {
			switch {
			case o.port == l.port && !o.sameConfig(l):
				if lb == nil {
					return clbInvalidConfig("Listeners %s and %s share the load balancer port %d", o, l, l.port)
				}
				return apiErr("DuplicateListener", "A listener already exists for %s with LoadBalancerPort %d, but with a different InstancePort, Protocol, or SSLCertificateId", lb.name, l.port)
			case o.instancePort == l.instancePort && isSecure(o.instanceProtocol) != isSecure(l.instanceProtocol):
				return clbInvalidConfig("Listeners %s and %s use instance port %d with a secure and an insecure instance protocol; they must agree", o, l, l.instancePort)
			}
		}
	}
	return nil
}

// addCLBListener adds a checked listener unless lb has it already. A new
// HTTPS or SSL listener gets AWS's default negotiation policy, which AWS
// also adds to the load balancer's policies.
func (e *Emulator) addCLBListener(lb *classicLB, l *clbListener) {
	if slices.ContainsFunc(lb.listeners, l.sameConfig) {
		return
	}
	if isSecure(l.protocol) {
		if lb.policy(defaultSSLPolicy) == nil {
			lb.policies = append(lb.policies, &clbPolicy{
				name: defaultSSLPolicy, typeName: policyTypeSSLNegotiation,
				attributes: []policyAttribute{{name: referenceSecurityPolicy, value: defaultSSLPolicy}},
			})
		}
		l.policies = []string{defaultSSLPolicy}
	}
	lb.listeners = append(lb.listeners, l)
	sort.SliceStable(lb.listeners, func(i, j int) bool { return lb.listeners[i].port < lb.listeners[j].port })
}

func (lb *classicLB) listener(port int) *clbListener {
	for _, l := range lb.listeners {
		if l.port == port {
			return l
		}
	}
	return nil
}

// clbCreateListeners adds listeners; one that exists with the same
// configuration is left as it is, so the call can be retried.
func (e *Emulator) clbCreateListeners(p params) (any, error) {
	lb, err := e.clbParam(p)
	if err != nil {
		return nil, err
	}
	listeners, err := parseCLBListeners(p)
	if err != nil {
		return nil, err
	}
	if len(listeners) == 0 {
		return nil, clbRequired("listeners")
	}
	if err := e.checkCLBListeners(lb, listeners); err != nil {
		return nil, err
	}
	for _, l := range listeners {
		e.addCLBListener(lb, l)
	}
	return emptyResponse{}, nil
}

// clbDeleteListeners removes the listeners on the given ports; ports with
// no listener are ignored.
func (e *Emulator) clbDeleteListeners(p params) (any, error) {
	lb, err := e.clbParam(p)
	if err != nil {
		return nil, err
	}
	if !p.has("LoadBalancerPorts") {
		return nil, clbRequired("loadBalancerPorts")
	}
	var ports []int
	for _, s := range p.list("LoadBalancerPorts.member") {
		var port int
		if _, err := fmt.Sscan(s, &port); err != nil {
			return nil, clbRange("loadBalancerPorts.member", s, 1, 65535)
		}
		ports = append(ports, port)
	}
	lb.listeners = slices.DeleteFunc(lb.listeners, func(l *clbListener) bool { return slices.Contains(ports, l.port) })
	return emptyResponse{}, nil
}

// clbSetListenerCertificate replaces the certificate of an HTTPS or SSL
// listener.
func (e *Emulator) clbSetListenerCertificate(p params) (any, error) {
	lb, err := e.clbParam(p)
	if err != nil {
		return nil, err
	}
	port, err := requiredPort(p, "LoadBalancerPort", "loadBalancerPort")
	if err != nil {
		return nil, err
	}
	cert := p.get("SSLCertificateId")
	if cert == "" {
		return nil, clbRequired("sSLCertificateId")
	}
	l := lb.listener(port)
	switch {
	case l == nil:
		return nil, apiErr(codeCLBListenerMissing, "LoadBalancer %s does not have a listener configured at the given port %d", lb.name, port)
	case !isSecure(l.protocol):
		return nil, apiErr("UnsupportedProtocol", "The listener on port %d uses %s; only HTTPS and SSL listeners have a certificate", port, l.protocol)
	case !e.certificateUsable(cert):
		return nil, apiErr(codeCertificateMissing, "Server Certificate not found for the key: %s", cert)
	}
	l.certificate = cert
	return emptyResponse{}, nil
}
