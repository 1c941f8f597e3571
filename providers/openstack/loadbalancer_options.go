package openstack

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/svcopts"
)

// Service annotations this backend reads. The names are the upstream
// OpenStack CCM's, so Services written for it keep their meaning. The doc
// comments are the reference docs (docs/reference/openstack.md, made by
// hack/refdocs).
const (
	// annotationInternal keeps the load balancer private: no floating IP,
	// and the Service's address is the VIP in the VIP subnet.
	//
	// Type: bool
	// Default: false
	annotationInternal svcopts.Annotation = "service.beta.kubernetes.io/openstack-internal-load-balancer"
	// annotationFloatingNetworkID allocates the Service's floating IP from
	// this external network instead of the cloud-config's
	// loadBalancer.floatingNetworkID.
	//
	// Type: network UUID
	// Default: loadBalancer.floatingNetworkID
	annotationFloatingNetworkID svcopts.Annotation = "loadbalancer.openstack.org/floating-network-id"
	// annotationFloatingSubnetID allocates the floating IP from this subnet
	// of the floating network.
	//
	// Type: subnet UUID
	// Default: loadBalancer.floatingSubnetID, else any subnet of the network
	annotationFloatingSubnetID svcopts.Annotation = "loadbalancer.openstack.org/floating-subnet-id"
	// annotationSubnetID places the VIP in this subnet. Read when the load
	// balancer is created; changing it later does not move the VIP.
	//
	// Type: subnet UUID
	// Default: loadBalancer.subnetID, else the subnet of the nodes' addresses
	annotationSubnetID svcopts.Annotation = "loadbalancer.openstack.org/subnet-id"
	// annotationMemberSubnetID is the subnet of the nodes' member
	// addresses.
	//
	// Type: subnet UUID
	// Default: loadBalancer.memberSubnetID, else the subnet of the nodes' addresses
	annotationMemberSubnetID svcopts.Annotation = "loadbalancer.openstack.org/member-subnet-id"
	// annotationKeepFloatingIP keeps a floating IP this controller
	// allocated when the Service is deleted (a floating IP it did not
	// allocate, such as spec.loadBalancerIP's, is never released).
	//
	// Type: bool
	// Default: false
	annotationKeepFloatingIP svcopts.Annotation = "loadbalancer.openstack.org/keep-floatingip"
	// annotationLBMethod is the pools' balancing algorithm for this
	// Service.
	//
	// Type: string (ROUND_ROBIN, LEAST_CONNECTIONS, SOURCE_IP, SOURCE_IP_PORT)
	// Default: loadBalancer.lbMethod
	annotationLBMethod svcopts.Annotation = "loadbalancer.openstack.org/lb-method"
	// annotationHealthMonitor turns the pools' health monitors on or off
	// for this Service.
	//
	// Type: bool
	// Default: loadBalancer.createMonitor
	annotationHealthMonitor svcopts.Annotation = "loadbalancer.openstack.org/enable-health-monitor"
	// annotationLoadBalancerID is the ID of the Service's load balancer,
	// which the upstream CCM writes on every Service it provisions
	// (kubernetes/cloud-provider-openstack pkg/openstack/loadbalancer.go:1757).
	// A Service switched from it keeps its load balancer, found by name;
	// an ID naming another Service's load balancer (upstream's sharing) is
	// refused, since each Service has its own here; an ID of a load
	// balancer that is gone is stale and ignored.
	//
	// Type: string (Octavia load balancer ID)
	// Default: none (this manager does not write it)
	annotationLoadBalancerID svcopts.Annotation = "loadbalancer.openstack.org/load-balancer-id"
)

// lbOptions is everything a Service says about its load balancer, parsed
// and checked before any cloud call, so a malformed Service gets a
// precise error (a Warning Event on it) and nothing is created for it.
type lbOptions struct {
	internal bool
	// floatingNetworkID and floatingSubnetID are where the floating IP
	// comes from (external Services only).
	floatingNetworkID, floatingSubnetID string
	// vipSubnetID and memberSubnetID: "" means the nodes' subnet.
	vipSubnetID, memberSubnetID string
	keepFloatingIP              bool
	// loadBalancerIP is spec.loadBalancerIP: the existing floating IP to
	// use, or the VIP address of an internal load balancer.
	loadBalancerIP string
	lbMethod       string
	// sourceRanges are the client CIDRs the listeners admit; nil when
	// everything is admitted.
	sourceRanges []string
	ports        []portSpec
	monitor      *monitorSpec
}

// portSpec is one Service port: a listener and its pool.
type portSpec struct {
	protocol string // TCP, UDP or SCTP, for listener and pool alike
	port     int
	nodePort int
}

// key identifies a listener on the load balancer.
func (p portSpec) key() string { return p.protocol + ":" + strconv.Itoa(p.port) }

// monitorSpec is the pools' health monitor.
type monitorSpec struct {
	// typ is TCP, UDP-CONNECT, SCTP, or HTTP for kube-proxy's health
	// check on healthCheckNodePort (then port is that port, probed as
	// each member's monitor_port).
	typ                        string
	port                       int
	path                       string
	delay, timeout, maxRetries int
}

// typeFor is the monitor type for a pool of protocol.
func (m *monitorSpec) typeFor(protocol string) string {
	if m.typ != "" {
		return m.typ
	}
	switch protocol {
	case "UDP":
		return "UDP-CONNECT"
	case "SCTP":
		return "SCTP"
	}
	return "TCP"
}

// parseLBOptions reads the Service against the section's defaults.
func parseLBOptions(svc *v1.Service, s *Section) (*lbOptions, error) {
	o := &lbOptions{
		floatingNetworkID: s.LoadBalancer.FloatingNetworkID,
		floatingSubnetID:  s.LoadBalancer.FloatingSubnetID,
		vipSubnetID:       s.LoadBalancer.SubnetID,
		memberSubnetID:    s.LoadBalancer.MemberSubnetID,
		lbMethod:          s.LoadBalancer.LBMethod,
		loadBalancerIP:    svc.Spec.LoadBalancerIP,
	}
	var err error
	if o.internal, _, err = annotationInternal.Bool(svc); err != nil {
		return nil, err
	}
	if o.keepFloatingIP, _, err = annotationKeepFloatingIP.Bool(svc); err != nil {
		return nil, err
	}
	for _, a := range []struct {
		ann svcopts.Annotation
		dst *string
	}{
		{annotationFloatingNetworkID, &o.floatingNetworkID},
		{annotationFloatingSubnetID, &o.floatingSubnetID},
		{annotationSubnetID, &o.vipSubnetID},
		{annotationMemberSubnetID, &o.memberSubnetID},
	} {
		if v, ok := a.ann.Lookup(svc); ok {
			v = strings.TrimSpace(v)
			if !uuidRE.MatchString(v) {
				return nil, a.ann.Invalid(v, "a UUID such as 5f3c1a0e-8f0b-4f1e-9d8a-2b1c3d4e5f60")
			}
			*a.dst = strings.ToLower(v)
		}
	}
	if v, ok := annotationLBMethod.Lookup(svc); ok {
		v = strings.ToUpper(strings.TrimSpace(v))
		// Octavia would answer 501 for an algorithm the provider lacks;
		// say so before any call.
		if allowed := lbMethods[s.LoadBalancer.Provider]; !slices.Contains(allowed, v) {
			return nil, annotationLBMethod.Invalid(v, "one the "+s.LoadBalancer.Provider+" provider supports: "+strings.Join(allowed, ", "))
		}
		o.lbMethod = v
	}
	if !o.internal && o.floatingNetworkID == "" {
		return nil, fmt.Errorf("no floating network for an external load balancer: set loadBalancer.floatingNetworkID in the cloud-config, annotate the Service %s=<network UUID>, or make it internal with %s=\"true\"",
			annotationFloatingNetworkID, annotationInternal)
	}
	if o.loadBalancerIP != "" {
		if _, err := netip.ParseAddr(o.loadBalancerIP); err != nil {
			return nil, fmt.Errorf("spec.loadBalancerIP %q is not an IP address", o.loadBalancerIP)
		}
	}

	ranges, err := svcopts.SourceRanges(svc)
	if err != nil {
		return nil, err
	}
	if !(len(ranges) == 1 && ranges[0].Bits() == 0) {
		for _, r := range ranges {
			o.sourceRanges = append(o.sourceRanges, r.String())
		}
	}
	if len(o.sourceRanges) > 0 && s.LoadBalancer.Provider == "ovn" {
		// OVN load balancers keep the client's address and have no
		// allowed_cidrs; the managed security group enforces them.
		if !s.LoadBalancer.ManageSecurityGroups {
			return nil, fmt.Errorf("loadBalancerSourceRanges need loadBalancer.manageSecurityGroups with the ovn provider, which has no listener allowed_cidrs")
		}
	}

	ports, err := svcopts.Ports(svc, "an Octavia load balancer", v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, p := range ports {
		ps := portSpec{protocol: string(p.Protocol), port: int(p.Port), nodePort: int(p.NodePort)}
		if seen[ps.key()] {
			return nil, fmt.Errorf("service port %d/%s is listed twice", p.Port, p.Protocol)
		}
		seen[ps.key()] = true
		o.ports = append(o.ports, ps)
	}

	monitor := s.LoadBalancer.CreateMonitor
	if v, set, err := annotationHealthMonitor.Bool(svc); err != nil {
		return nil, err
	} else if set {
		monitor = v
	}
	if monitor {
		m := &monitorSpec{
			delay:      int(s.LoadBalancer.MonitorDelay.Seconds()),
			timeout:    int(s.LoadBalancer.MonitorTimeout.Seconds()),
			maxRetries: s.LoadBalancer.MonitorMaxRetries,
		}
		if path, port, local := svcopts.HealthCheck(svc); local {
			m.port = int(port)
			m.path = path
			m.typ = "HTTP"
			if s.LoadBalancer.Provider == "ovn" {
				// OVN has neither HTTP monitors nor members'
				// monitor_port. A connect to the NodePort itself
				// tells the same: with policy Local, kube-proxy
				// drops it on nodes without a ready endpoint.
				m.typ, m.path, m.port = "", "", 0
			}
		}
		o.monitor = m
	}
	return o, nil
}
