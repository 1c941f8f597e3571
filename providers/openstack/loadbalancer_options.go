package openstack

import (
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/svcopts"
)

// Service annotations this backend reads. The names are the upstream
// OpenStack CCM's, so Services written for it keep their meaning. The doc
// comments are the reference docs (docs/reference/openstack.md, made by
// hack/refdocs).
const (
	// annotationInternal keeps the load balancer private: no floating IP,
	// and the Service's address is the VIP in the VIP subnet. With
	// loadBalancer.internalLB every Service is internal and "false" does
	// not make one external, as upstream.
	//
	// Type: bool
	// Default: loadBalancer.internalLB (false)
	annotationInternal svcopts.Annotation = "service.beta.kubernetes.io/openstack-internal-load-balancer"
	// annotationFloatingNetworkID allocates the Service's floating IP from
	// this external network instead of the cloud-config's
	// loadBalancer.floatingNetworkID.
	//
	// Type: network UUID
	// Default: loadBalancer.floatingNetworkID, else the project's only external network
	annotationFloatingNetworkID svcopts.Annotation = "loadbalancer.openstack.org/floating-network-id"
	// annotationFloatingSubnetID allocates the floating IP from this subnet
	// of the floating network.
	//
	// Type: subnet UUID
	// Default: loadBalancer.floatingSubnetID, else any subnet of the network
	annotationFloatingSubnetID svcopts.Annotation = "loadbalancer.openstack.org/floating-subnet-id"
	// annotationFloatingSubnet allocates the floating IP from a subnet of
	// the floating network whose name matches this pattern: a name or
	// glob (* any characters, ? one), or a Go regular expression after
	// "~"; a leading "!" negates it. The matching subnets are tried in
	// Neutron's order until one has a free address, as upstream
	// (loadbalancer.go:719-747, loadbalancer_subnet_match.go:62-90).
	// floating-subnet-id, if set, takes precedence; with floating-subnet-tags
	// a subnet must match both. Not used with spec.loadBalancerIP.
	//
	// Type: string (subnet name pattern)
	// Default: none: loadBalancer.floatingSubnetID, else any subnet of the network
	annotationFloatingSubnet svcopts.Annotation = "loadbalancer.openstack.org/floating-subnet"
	// annotationFloatingSubnetTags allocates the floating IP from a subnet
	// of the floating network carrying any of these comma-separated
	// Neutron tags; after a leading "&" all of them; a leading "!"
	// negates (none of them, or with "!&" not all of them), as upstream
	// (loadbalancer_subnet_match.go:153-173, :222-231).
	//
	// Type: string (comma-separated tags, optionally prefixed by ! and &)
	// Default: none: loadBalancer.floatingSubnetID, else any subnet of the network
	annotationFloatingSubnetTags svcopts.Annotation = "loadbalancer.openstack.org/floating-subnet-tags"
	// annotationNodeSelector makes only the Nodes carrying all these
	// labels pool members: comma-separated key=value pairs, or a bare key
	// for a label with any value, as upstream (loadbalancer.go:1546-1547,
	// :2271-2300). An empty value selects every Node. Nodes whose labels
	// change are picked up on the next sync of the Service.
	//
	// Type: string (key=value[,key[=value]...])
	// Default: every Node
	annotationNodeSelector svcopts.Annotation = "loadbalancer.openstack.org/node-selector"
	// annotationSubnetID places the VIP in this subnet. Read when the load
	// balancer is created; changing it later does not move the VIP. Its
	// IP family is the load balancer's: it must be one of the Service's
	// spec.ipFamilies (an IPv6 subnet makes a dual-stack Service's load
	// balancer IPv6).
	//
	// Type: subnet UUID
	// Default: loadBalancer.subnetID when of the Service's first IP family, else the nodes' subnet of that family
	annotationSubnetID svcopts.Annotation = "loadbalancer.openstack.org/subnet-id"
	// annotationNetworkID places the VIP in this network: in the subnet
	// of subnet-id (or loadBalancer.subnetID) when set, else in the one
	// Octavia picks, as upstream (loadbalancer.go:261-266, :1271-1297).
	// The member subnet stays the nodes' (upstream would leave members
	// without a subnet, which only works when the VIP network reaches the
	// nodes). For an IPv6 load balancer the VIP goes in the network's
	// first IPv6 subnet (Octavia would pick an IPv4 one). Read when the
	// load balancer is created; changing it later does not move the VIP.
	//
	// Type: network UUID
	// Default: loadBalancer.networkID
	annotationNetworkID svcopts.Annotation = "loadbalancer.openstack.org/network-id"
	// annotationPortID makes this existing Neutron port the VIP port, so
	// the load balancer takes the port's address (upstream:
	// loadbalancer.go:249-253); subnet-id and network-id are then not
	// used. An external Service's floating IP is the port's own if it has
	// one, else one allocated for it. The port is the user's: deleting the
	// Service leaves it (Octavia does not delete a VIP port it did not
	// create), and a floating IP on it that was not allocated for the
	// Service stays associated. Read when the load balancer is created.
	//
	// Type: port UUID
	// Default: a new VIP port
	annotationPortID svcopts.Annotation = "loadbalancer.openstack.org/port-id"
	// annotationMemberSubnetID is the subnet of the nodes' member
	// addresses, of the load balancer's IP family.
	//
	// Type: subnet UUID
	// Default: loadBalancer.memberSubnetID when of the load balancer's IP family, else the nodes' subnet of that family
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
	// annotationLoadBalancerID names the Octavia load balancer the Service
	// uses. Set by hand, the Service shares that existing load balancer
	// (made for another Service, or by a person) with distinct ports:
	// its listeners carry its usage tag kube_service_<clusterID>_<ns>_<name>,
	// as does the load balancer, and its address is the load balancer's
	// floating IP. At most loadBalancer.maxSharedLB Services share one,
	// and internal Services none. Deleting the Service removes only its
	// listeners, and the load balancer with the last Service that uses
	// it, unless a person made it. The manager writes the ID of every
	// Service's load balancer here, as the upstream CCM does; do not
	// change it afterwards. An ID naming no load balancer is an error.
	//
	// Type: string (Octavia load balancer ID)
	// Default: the Service's own load balancer (written here once made)
	annotationLoadBalancerID svcopts.Annotation = "loadbalancer.openstack.org/load-balancer-id"
	// annotationProxyProtocol makes every pool send the PROXY protocol
	// header, so the backends (e.g. ingress-nginx with use-proxy-protocol)
	// learn the client's address: "true" or "v1" for version 1, "v2" for
	// version 2 (Octavia 2.22 or later). TCP ports only; not with the ovn
	// provider or x-forwarded-for. The Service's status gets ipMode Proxy
	// (or a hostname, see loadBalancer.enableIngressHostname), so
	// kube-proxy sends in-cluster clients through the load balancer too.
	// Changing it replaces the pools, since Octavia cannot change a
	// pool's protocol.
	//
	// Type: string ("true", "v1", "v2" or "false")
	// Default: false
	annotationProxyProtocol svcopts.Annotation = "loadbalancer.openstack.org/proxy-protocol"
	// annotationXForwardedFor makes every listener HTTP and add an
	// X-Forwarded-For header with the client's address to each request
	// (the pools speak HTTP too). TCP ports carrying plain HTTP only; not
	// with the ovn provider or proxy-protocol. Changing it replaces the
	// listeners and pools, since Octavia cannot change their protocols.
	//
	// Type: bool
	// Default: false
	annotationXForwardedFor svcopts.Annotation = "loadbalancer.openstack.org/x-forwarded-for"
	// annotationTimeoutClientData sets how long the listeners keep an idle
	// client connection, in milliseconds. Changing it, or any timeout-*
	// annotation, updates the listeners in place. Not with the ovn
	// provider.
	//
	// Type: int (milliseconds, 0 to 2073600000)
	// Default: 50000
	annotationTimeoutClientData svcopts.Annotation = "loadbalancer.openstack.org/timeout-client-data"
	// annotationTimeoutMemberConnect sets how long the listeners wait for
	// a backend connection to open, in milliseconds. Not with the ovn
	// provider.
	//
	// Type: int (milliseconds, 0 to 2073600000)
	// Default: 5000
	annotationTimeoutMemberConnect svcopts.Annotation = "loadbalancer.openstack.org/timeout-member-connect"
	// annotationTimeoutMemberData sets how long the listeners keep an idle
	// backend connection, in milliseconds. Not with the ovn provider.
	//
	// Type: int (milliseconds, 0 to 2073600000)
	// Default: 50000
	annotationTimeoutMemberData svcopts.Annotation = "loadbalancer.openstack.org/timeout-member-data"
	// annotationTimeoutTCPInspect sets how long the listeners wait for
	// more TCP data for content inspection, in milliseconds. Not with the
	// ovn provider.
	//
	// Type: int (milliseconds, 0 to 2073600000)
	// Default: 0
	annotationTimeoutTCPInspect svcopts.Annotation = "loadbalancer.openstack.org/timeout-tcp-inspect"
	// annotationConnectionLimit caps the connections each listener accepts
	// at once. Changing it updates the listeners in place.
	//
	// Type: int (-1 for unlimited, or a positive number)
	// Default: -1
	annotationConnectionLimit svcopts.Annotation = "loadbalancer.openstack.org/connection-limit"
	// annotationFlavorID creates the load balancer with this Octavia
	// flavor. Read when the load balancer is created; changing it later
	// does not change the load balancer. Not with the ovn provider.
	//
	// Type: flavor UUID
	// Default: loadBalancer.flavorID, else Octavia's default flavor
	annotationFlavorID svcopts.Annotation = "loadbalancer.openstack.org/flavor-id"
	// annotationAvailabilityZone creates the load balancer in this Octavia
	// availability zone. Read when the load balancer is created; changing
	// it later does not move the load balancer. Not with the ovn
	// provider.
	//
	// Type: string (Octavia availability zone name)
	// Default: loadBalancer.availabilityZone, else none
	annotationAvailabilityZone svcopts.Annotation = "loadbalancer.openstack.org/availability-zone"
	// annotationHealthMonitorDelay sets the time between the health
	// monitors' checks, in seconds, for this Service. Changing it, or
	// any health-monitor-* annotation, updates the monitors in place.
	//
	// Type: int (seconds, 1 to 3600; at least 3 with UDP ports)
	// Default: loadBalancer.monitorDelay
	annotationHealthMonitorDelay svcopts.Annotation = "loadbalancer.openstack.org/health-monitor-delay"
	// annotationHealthMonitorTimeout sets how long a health check may
	// take, in seconds, for this Service.
	//
	// Type: int (seconds, 1 to the delay)
	// Default: loadBalancer.monitorTimeout
	annotationHealthMonitorTimeout svcopts.Annotation = "loadbalancer.openstack.org/health-monitor-timeout"
	// annotationHealthMonitorMaxRetries sets how many successful checks in
	// a row mark a member healthy, for this Service.
	//
	// Type: int (1 to 10)
	// Default: loadBalancer.monitorMaxRetries
	annotationHealthMonitorMaxRetries svcopts.Annotation = "loadbalancer.openstack.org/health-monitor-max-retries"
	// annotationHealthMonitorMaxRetriesDown sets how many failed checks in
	// a row mark a member down, for this Service.
	//
	// Type: int (1 to 10)
	// Default: loadBalancer.monitorMaxRetriesDown
	annotationHealthMonitorMaxRetriesDown svcopts.Annotation = "loadbalancer.openstack.org/health-monitor-max-retries-down"
	// annotationHostname replaces the address in the Service's status with
	// this hostname, a DNS name you point at the load balancer's address
	// (which then shows only in Octavia: upstream's load-balancer-address
	// annotation is not written). With the PROXY protocol, it keeps
	// kube-proxy from routing in-cluster clients past the load balancer.
	//
	// Type: string (DNS name)
	// Default: none: the status holds the address
	annotationHostname svcopts.Annotation = "loadbalancer.openstack.org/hostname"
)

// Upstream's listener defaults, which it sets on every listener it
// creates and restores when an annotation is removed
// (kubernetes/cloud-provider-openstack pkg/openstack/loadbalancer.go:1563-1568);
// they are also Octavia's own ([haproxy_amphora] timeout_*).
const (
	defaultTimeoutClientData    = 50000
	defaultTimeoutMemberConnect = 5000
	defaultTimeoutMemberData    = 50000
	defaultTimeoutTCPInspect    = 0
	// maxListenerTimeout is Octavia's constants.MAX_TIMEOUT (24 days in
	// ms); minimum 0.
	maxListenerTimeout = 24 * 24 * 60 * 60 * 1000
	// unlimitedConnections is Octavia's connection_limit for none.
	unlimitedConnections = -1
	// udpConnectMinDelay is Octavia's default [api_settings]
	// udp_connect_min_interval_health_monitor: a UDP-CONNECT monitor
	// with a shorter delay is refused.
	udpConnectMinDelay = 3
	// headerXForwardedFor is the listener insert_headers key upstream
	// sets to "true" (loadbalancer.go:59, :1116-1127).
	headerXForwardedFor = "X-Forwarded-For"
)

// lbOptions is everything a Service says about its load balancer, parsed
// and checked before any cloud call, so a malformed Service gets a
// precise error (a Warning Event on it) and nothing is created for it.
type lbOptions struct {
	internal bool
	// floatingNetworkID and floatingSubnetID are where the floating IP
	// comes from (external Services only).
	floatingNetworkID, floatingSubnetID string
	// vipSubnetID and memberSubnetID: "" means the nodes' subnet (the
	// VIP's: unless vipNetworkID or vipPortID places it).
	vipSubnetID, memberSubnetID string
	// vipSubnetConfigured and memberSubnetConfigured say the subnet is
	// the cloud-config's (loadBalancer.subnetID, memberSubnetID), not
	// the Service's annotation: a cluster-wide subnet of the other IP
	// family is not used for the Service (loadbalancer_families.go).
	vipSubnetConfigured, memberSubnetConfigured bool
	// vipNetworkID is the VIP's network, "" for the VIP subnet's;
	// vipPortID the user's port to use as the VIP port, "" for a new one.
	vipNetworkID, vipPortID string
	keepFloatingIP          bool
	// loadBalancerIP is spec.loadBalancerIP: the existing floating IP to
	// use, or the VIP address of an internal load balancer.
	loadBalancerIP string
	lbMethod       string
	// families are the Service's IP families (svcopts.Families); family
	// is the one its load balancer serves, the first until ensure reads
	// it from the load balancer (setFamily).
	families []v1.IPFamily
	family   v1.IPFamily
	// also is the second family a load balancer with a VIP of each
	// serves (widen), "" for one family.
	also v1.IPFamily
	// ranges are the Service's source ranges, nil when it gives none.
	ranges []netip.Prefix
	// sourceRanges are the client CIDRs of family the listeners admit;
	// nil when everything is admitted. Set by setFamily.
	sourceRanges []string
	// floatingNetworkErr says why no floating network was found, for an
	// external Service whose first family is IPv6 (which needs none):
	// the error once its load balancer turns out to be IPv4.
	floatingNetworkErr error
	ports              []portSpec
	monitor            *monitorSpec

	// xForwardedFor makes the listeners HTTP with an X-Forwarded-For
	// header; proxyProtocol is the pools' PROXY or PROXYV2, "" for none.
	xForwardedFor bool
	proxyProtocol string
	// connLimit is the listeners' connection_limit.
	connLimit int
	// timeouts are the listeners' timeouts; nil for the ovn provider,
	// which has none (upstream sends none either).
	timeouts *listenerTimeouts
	// flavorID and availabilityZone are used only when the load
	// balancer is created.
	flavorID, availabilityZone string
	// hostname replaces the address in the status when set.
	hostname string
	// floatingSubnet matches the subnets a floating IP may come from
	// (floating-subnet, floating-subnet-tags); nil when floatingSubnetID
	// or any subnet does.
	floatingSubnet *subnetMatcher
	// nodeSelector are the labels (value "" for any) a Node needs to be
	// a pool member; nil selects every Node.
	nodeSelector map[string]string
}

// listenerTimeouts are a listener's timeouts in milliseconds.
type listenerTimeouts struct {
	clientData, memberConnect, memberData, tcpInspect int
}

// portSpec is one Service port: a listener and its pool.
type portSpec struct {
	// protocol is the Service port's: TCP, UDP or SCTP.
	protocol string
	// listenerProtocol is the listener's: the port's, or HTTP with
	// x-forwarded-for. poolProtocol is the pool's: the listener's, or
	// PROXY/PROXYV2 with proxy-protocol. Octavia can change neither on an
	// existing object.
	listenerProtocol, poolProtocol string
	port                           int
	nodePort                       int
}

// key identifies a listener on the load balancer: Octavia allows one
// listener per port and transport protocol, whatever its application
// protocol (TCP and HTTP listeners share TCP ports).
func (p portSpec) key() string { return p.protocol + ":" + strconv.Itoa(p.port) }

// listenerKey is key for an existing listener of protocol on port: its
// transport protocol, as Octavia's L4_PROTOCOL_MAP has it.
func listenerKey(protocol string, port int) string {
	switch protocol {
	case "UDP", "SCTP":
	default:
		protocol = "TCP"
	}
	return protocol + ":" + strconv.Itoa(port)
}

// monitorSpec is the pools' health monitor.
type monitorSpec struct {
	// typ is TCP, UDP-CONNECT, SCTP, or HTTP for kube-proxy's health
	// check on healthCheckNodePort (then port is that port, probed as
	// each member's monitor_port).
	typ                                        string
	port                                       int
	path                                       string
	delay, timeout, maxRetries, maxRetriesDown int
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
		vipNetworkID:      s.LoadBalancer.NetworkID,
		memberSubnetID:    s.LoadBalancer.MemberSubnetID,
		lbMethod:          s.LoadBalancer.LBMethod,
		loadBalancerIP:    svc.Spec.LoadBalancerIP,
		families:          svcopts.Families(svc),
	}
	o.family = o.families[0]
	o.vipSubnetConfigured, o.memberSubnetConfigured = o.vipSubnetID != "", o.memberSubnetID != ""
	var err error
	if o.internal, _, err = annotationInternal.Bool(svc); err != nil {
		return nil, err
	}
	if s.LoadBalancer.InternalLB {
		// As upstream: with internal-lb no Service can be external,
		// whatever its annotation says (loadbalancer.go:1374-1380).
		o.internal = true
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
		{annotationNetworkID, &o.vipNetworkID},
		{annotationPortID, &o.vipPortID},
	} {
		if v, ok := a.ann.Lookup(svc); ok {
			v = strings.TrimSpace(v)
			if !uuidRE.MatchString(v) {
				return nil, a.ann.Invalid(v, "a UUID such as 5f3c1a0e-8f0b-4f1e-9d8a-2b1c3d4e5f60")
			}
			*a.dst = strings.ToLower(v)
			switch a.dst {
			case &o.vipSubnetID:
				o.vipSubnetConfigured = false
			case &o.memberSubnetID:
				o.memberSubnetConfigured = false
			}
		}
	}
	if err := o.parseFloatingSubnet(svc); err != nil {
		return nil, err
	}
	if o.nodeSelector, err = parseNodeSelector(svc); err != nil {
		return nil, err
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
		// Neither the Service nor the cloud-config names one: the
		// project's only external network, found at start
		// (loadbalancer_floatingnetwork.go).
		d := s.LoadBalancer.detected
		if d == nil || d.id == "" {
			err := fmt.Errorf("no floating network for an external load balancer: %s; set loadBalancer.floatingNetworkID in the cloud-config, annotate the Service %s=<network UUID>, or make it internal with %s=\"true\"",
				d.missingReason(), annotationFloatingNetworkID, annotationInternal)
			if o.family != v1.IPv6Protocol {
				return nil, err
			}
			// An IPv6 VIP gets no floating IP (loadbalancer_families.go).
			o.floatingNetworkErr = err
		} else {
			o.floatingNetworkID = d.id
		}
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
	if svcopts.SourceRangesGiven(svc) {
		o.ranges = ranges
	}
	if !everyone(o.ranges) && s.LoadBalancer.Provider == "ovn" {
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
	if err := o.parseProtocols(svc, s); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, p := range ports {
		ps := portSpec{protocol: string(p.Protocol), port: int(p.Port), nodePort: int(p.NodePort)}
		if seen[ps.key()] {
			return nil, fmt.Errorf("service port %d/%s is listed twice", p.Port, p.Protocol)
		}
		seen[ps.key()] = true
		// As upstream's getListenerProtocol and buildPoolCreateOpt
		// (loadbalancer.go:210-227, :973-987).
		ps.listenerProtocol, ps.poolProtocol = ps.protocol, ps.protocol
		if o.xForwardedFor {
			ps.listenerProtocol, ps.poolProtocol = "HTTP", "HTTP"
		}
		if o.proxyProtocol != "" {
			ps.poolProtocol = o.proxyProtocol
		}
		if ps.protocol != "TCP" {
			// Upstream would ask Octavia for a PROXY pool or an HTTP
			// listener on this port, which it refuses or which
			// would turn a UDP port into HTTP.
			for _, a := range []struct {
				ann svcopts.Annotation
				on  bool
			}{{annotationProxyProtocol, o.proxyProtocol != ""}, {annotationXForwardedFor, o.xForwardedFor}} {
				if a.on {
					return nil, fmt.Errorf("annotation %s applies to TCP ports only, and service port %d is %s: move that port to another Service or remove the annotation", a.ann, p.Port, p.Protocol)
				}
			}
		}
		o.ports = append(o.ports, ps)
	}
	if err := o.parseListener(svc, s); err != nil {
		return nil, err
	}
	if err := o.parseCreateOnly(svc, s); err != nil {
		return nil, err
	}
	if o.hostname, err = parseHostname(svc); err != nil {
		return nil, err
	}
	if err := o.parseMonitor(svc, s); err != nil {
		return nil, err
	}
	return o, nil
}

// parseProtocols reads proxy-protocol and x-forwarded-for, as upstream's
// makeSvcConf does (loadbalancer.go:1556-1561), but a value upstream
// would read as "off" without a word (such as "True" or "yes" for
// proxy-protocol) is refused here.
func (o *lbOptions) parseProtocols(svc *v1.Service, s *Section) error {
	var err error
	if o.proxyProtocol, err = parseProxyProtocol(svc); err != nil {
		return err
	}
	if o.xForwardedFor, _, err = annotationXForwardedFor.Bool(svc); err != nil {
		return err
	}
	if o.proxyProtocol != "" && o.xForwardedFor {
		// upstream's words (loadbalancer.go:1559)
		return fmt.Errorf("annotation %s and %s cannot be used together: the PROXY protocol header would precede the HTTP request the listener adds X-Forwarded-For to; remove one", annotationProxyProtocol, annotationXForwardedFor)
	}
	if s.LoadBalancer.Provider == "ovn" {
		// The OVN provider has TCP, UDP and SCTP listeners and pools
		// only (its driver refuses the rest with a 501).
		if o.proxyProtocol != "" {
			return fmt.Errorf("annotation %s: the ovn provider has no PROXY protocol pools; remove the annotation or use the amphora provider", annotationProxyProtocol)
		}
		if o.xForwardedFor {
			return fmt.Errorf("annotation %s: the ovn provider has no HTTP listeners; remove the annotation or use the amphora provider", annotationXForwardedFor)
		}
	}
	return nil
}

// parseProxyProtocol is the pool protocol proxy-protocol asks for: PROXY
// for "true" and "v1", PROXYV2 for "v2", "" for "false", as upstream's
// getProxyProtocolFromServiceAnnotation (loadbalancer.go:481-491).
func parseProxyProtocol(svc *v1.Service) (string, error) {
	v, ok := annotationProxyProtocol.Lookup(svc)
	if !ok {
		return "", nil
	}
	switch strings.TrimSpace(v) {
	case "true", "v1":
		return "PROXY", nil
	case "v2":
		return "PROXYV2", nil
	case "false":
		return "", nil
	}
	return "", annotationProxyProtocol.Invalid(v, `"true" or "v1" (PROXY protocol version 1), "v2" (version 2) or "false"`)
}

// parseListener reads the listeners' connection limit and timeouts, with
// upstream's defaults (loadbalancer.go:1541, :1563-1568).
func (o *lbOptions) parseListener(svc *v1.Service, s *Section) error {
	var err error
	if o.connLimit, err = intAnnotation(svc, annotationConnectionLimit, unlimitedConnections, unlimitedConnections, math.MaxInt32,
		"-1 (unlimited) or a positive number of connections such as 10000"); err != nil {
		return err
	}
	if o.connLimit == 0 {
		// Octavia takes 0, which admits no connection at all: more
		// likely a mistake for -1.
		return annotationConnectionLimit.Invalid("0", "-1 (unlimited) or a positive number of connections such as 10000")
	}
	t := &listenerTimeouts{}
	set := false
	for _, a := range []struct {
		ann svcopts.Annotation
		def int
		dst *int
	}{
		{annotationTimeoutClientData, defaultTimeoutClientData, &t.clientData},
		{annotationTimeoutMemberConnect, defaultTimeoutMemberConnect, &t.memberConnect},
		{annotationTimeoutMemberData, defaultTimeoutMemberData, &t.memberData},
		{annotationTimeoutTCPInspect, defaultTimeoutTCPInspect, &t.tcpInspect},
	} {
		if *a.dst, err = intAnnotation(svc, a.ann, a.def, 0, maxListenerTimeout,
			fmt.Sprintf("milliseconds from 0 to %d, such as 300000 for 5 minutes", maxListenerTimeout)); err != nil {
			return err
		}
		_, ok := a.ann.Lookup(svc)
		set = set || ok
	}
	if s.LoadBalancer.Provider == "ovn" {
		// Upstream sends no timeouts to the ovn provider
		// (openstackutil.IsOctaviaFeatureSupported), which would keep
		// them without effect.
		if set {
			return fmt.Errorf("annotations %s-*: the ovn provider has no listener timeouts; remove them or use the amphora provider", strings.TrimSuffix(annotationTimeoutClientData.String(), "-client-data"))
		}
		return nil
	}
	o.timeouts = t
	return nil
}

// parseCreateOnly reads the flavor and availability zone a new load
// balancer gets (upstream: loadbalancer.go:1586-1597, used at :241-247).
func (o *lbOptions) parseCreateOnly(svc *v1.Service, s *Section) error {
	o.flavorID, o.availabilityZone = s.LoadBalancer.FlavorID, s.LoadBalancer.AvailabilityZone
	if v, ok := annotationFlavorID.Lookup(svc); ok {
		id := strings.TrimSpace(v)
		if !uuidRE.MatchString(id) {
			return annotationFlavorID.Invalid(v, "an Octavia flavor UUID (openstack loadbalancer flavor list) such as 5f3c1a0e-8f0b-4f1e-9d8a-2b1c3d4e5f60")
		}
		o.flavorID = strings.ToLower(id)
	}
	if v, ok := annotationAvailabilityZone.Lookup(svc); ok {
		name := strings.TrimSpace(v)
		if name == "" || len(name) > 255 {
			return annotationAvailabilityZone.Invalid(v, "the name of an Octavia availability zone (openstack loadbalancer availabilityzone list), at most 255 characters")
		}
		o.availabilityZone = name
	}
	if s.LoadBalancer.Provider == "ovn" {
		for _, a := range []svcopts.Annotation{annotationFlavorID, annotationAvailabilityZone} {
			if _, ok := a.Lookup(svc); ok {
				return fmt.Errorf("annotation %s: the ovn provider supports no Octavia flavors or availability zones; remove the annotation or use the amphora provider", a)
			}
		}
	}
	return nil
}

// parseHostname reads the hostname annotation: a name the API server
// accepts as status.loadBalancer.ingress[].hostname (a DNS subdomain,
// not an IP address).
func parseHostname(svc *v1.Service) (string, error) {
	v, ok := annotationHostname.Lookup(svc)
	if !ok {
		return "", nil
	}
	h := strings.TrimSpace(v)
	if _, err := netip.ParseAddr(h); err == nil {
		return "", annotationHostname.Invalid(v, "a DNS name such as lb.example.com, not an IP address")
	}
	if msgs := validation.IsDNS1123Subdomain(h); len(msgs) > 0 {
		return "", annotationHostname.Invalid(v, "a DNS name such as lb.example.com ("+strings.Join(msgs, "; ")+")")
	}
	return h, nil
}

// parseMonitor reads whether the pools have health monitors and their
// settings: the cloud-config's, or the Service's health-monitor-*
// annotations (upstream: loadbalancer.go:1599-1607). Malformed values
// are errors even when the monitor is off.
func (o *lbOptions) parseMonitor(svc *v1.Service, s *Section) error {
	lb := s.LoadBalancer
	m := &monitorSpec{}
	var err error
	if m.delay, err = intAnnotation(svc, annotationHealthMonitorDelay, int(lb.MonitorDelay.Seconds()), 1, 3600, "seconds from 1 to 3600, such as 5"); err != nil {
		return err
	}
	if m.timeout, err = intAnnotation(svc, annotationHealthMonitorTimeout, int(lb.MonitorTimeout.Seconds()), 1, 3600, "seconds from 1 to the delay, such as 3"); err != nil {
		return err
	}
	if m.maxRetries, err = intAnnotation(svc, annotationHealthMonitorMaxRetries, lb.MonitorMaxRetries, 1, 10, "a number from 1 to 10"); err != nil {
		return err
	}
	if m.maxRetriesDown, err = intAnnotation(svc, annotationHealthMonitorMaxRetriesDown, lb.MonitorMaxRetriesDown, 1, 10, "a number from 1 to 10"); err != nil {
		return err
	}
	if m.timeout > m.delay {
		return fmt.Errorf("health monitor timeout %ds is longer than its delay %ds (%s, %s, or loadBalancer.monitorTimeout and monitorDelay): a check must end before the next starts",
			m.timeout, m.delay, annotationHealthMonitorTimeout, annotationHealthMonitorDelay)
	}

	enabled := lb.CreateMonitor
	if v, set, err := annotationHealthMonitor.Bool(svc); err != nil {
		return err
	} else if set {
		enabled = v
	}
	if !enabled {
		return nil
	}
	if path, port, local := svcopts.HealthCheck(svc); local {
		m.port = int(port)
		m.path = path
		m.typ = "HTTP"
		if lb.Provider == "ovn" {
			// OVN has neither HTTP monitors nor members'
			// monitor_port. A connect to the NodePort itself
			// tells the same: with policy Local, kube-proxy
			// drops it on nodes without a ready endpoint.
			m.typ, m.path, m.port = "", "", 0
		}
	}
	for _, p := range o.ports {
		if m.typeFor(p.protocol) == "UDP-CONNECT" && m.delay < udpConnectMinDelay {
			// Octavia refuses it ([api_settings]
			// udp_connect_min_interval_health_monitor).
			return fmt.Errorf("health monitor delay %ds is too short for UDP port %d: Octavia wants at least %ds for UDP-CONNECT monitors; set %s or loadBalancer.monitorDelay",
				m.delay, p.port, udpConnectMinDelay, annotationHealthMonitorDelay)
		}
	}
	o.monitor = m
	return nil
}

// intAnnotation reads an integer annotation in [lo, hi], def when it is
// absent; want says what is valid.
func intAnnotation(svc *v1.Service, a svcopts.Annotation, def, lo, hi int, want string) (int, error) {
	v, ok := a.Lookup(svc)
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < lo || n > hi {
		return 0, a.Invalid(v, want)
	}
	return n, nil
}
