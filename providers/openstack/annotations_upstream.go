package openstack

import (
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/upstreamann"
)

// upstreamRef is where the upstream OpenStack CCM declares its Service
// annotations, read at kubernetes/cloud-provider-openstack c453fb7c
// (2026-07-15); the line follows.
const upstreamRef = "kubernetes/cloud-provider-openstack pkg/openstack/loadbalancer.go:"

// upstreamAnnotations lists every Service annotation the upstream
// OpenStack CCM reads (pkg/openstack/loadbalancer.go:61-97, read in
// checkService and makeSvcConf, :1357-1608) and what this backend does
// with each. It hands no Service to another controller, so Elsewhere is
// nil.
func upstreamAnnotations() *upstreamann.Table {
	const lb = "loadbalancer.openstack.org/"
	return &upstreamann.Table{
		Upstream: "the upstream OpenStack CCM",
		Annotations: []upstreamann.Annotation{
			{
				Key:      string(annotationInternal),
				Support:  upstreamann.Supported,
				Upstream: `"true" gives the load balancer no floating IP: the Service's address is its VIP. With the config's internal-lb every Service is internal and "false" is ignored.`,
				Note:     `The same, with loadBalancer.internalLB as internal-lb (imported from it): every Service is internal then, and "false" does not make one external (upstream :1374-1380).`,
				Ref:      upstreamRef + "61",
			},
			{
				Key:      string(annotationNodeSelector),
				Support:  upstreamann.Supported,
				Upstream: "Only Nodes with these key=value labels (or bare keys, any value) become pool members; default: cloud.conf node-selector, else every Node.",
				Note:     "The same (upstream :1546-1547, :2271-2300). Keys and values that are not valid labels are refused rather than matching no Node; the config's node-selector is not imported.",
				Ref:      upstreamRef + "62",
			},
			{
				Key:      string(annotationConnectionLimit),
				Support:  upstreamann.Supported,
				Upstream: "Sets the listeners' connection_limit (default -1, unlimited), also on existing listeners.",
				Note:     "0 (which Octavia takes as no connection at all) and values other than integers are refused instead of read as -1.",
				Ref:      upstreamRef + "63",
			},
			{
				Key:      string(annotationFloatingNetworkID),
				Support:  upstreamann.Supported,
				Upstream: "Allocates the floating IP from this external network.",
				Ref:      upstreamRef + "64",
			},
			{
				Key:      string(annotationFloatingSubnet),
				Support:  upstreamann.Supported,
				Upstream: "Allocates the floating IP from the floating network's subnet whose name matches this pattern (glob, or regexp after ~).",
				Note:     "The same: matching subnets are tried in turn (upstream :719-747), floating-subnet-id takes precedence. A pattern that does not compile is refused before any call.",
				Ref:      upstreamRef + "65",
			},
			{
				Key:      string(annotationFloatingSubnetID),
				Support:  upstreamann.Supported,
				Upstream: "Allocates the floating IP from this subnet of the floating network.",
				Ref:      upstreamRef + "66",
			},
			{
				Key:      string(annotationFloatingSubnetTags),
				Support:  upstreamann.Supported,
				Upstream: "Allocates the floating IP from the floating network's subnet carrying these tags (any; all after &; negated by !).",
				Note:     "The same, with Neutron's tags, tags-any, not-tags and not-tags-any filters (upstream loadbalancer_subnet_match.go:155-173). An empty tag is refused.",
				Ref:      upstreamRef + "67",
			},
			{
				Key:      lb + "class",
				Support:  upstreamann.Refused,
				Upstream: `Takes the floating network and subnet, the VIP network and subnet and the member subnet from the cloud.conf section [LoadBalancerClass "<name>"].`,
				Note:     "there are no load balancer classes here, so the load balancer would use the default floating network and subnets and get another address; set the class's values as the floating-network-id, floating-subnet-id, network-id, subnet-id and member-subnet-id annotations instead.",
				Ref:      upstreamRef + "68",
			},
			{
				Key:      string(annotationKeepFloatingIP),
				Support:  upstreamann.Supported,
				Upstream: `"true" keeps the floating IP when the Service is deleted.`,
				Ref:      upstreamRef + "69",
			},
			{
				Key:      string(annotationPortID),
				Support:  upstreamann.Supported,
				Upstream: "Uses this existing Neutron port as the VIP port, so the load balancer takes the port's address.",
				Note:     "The same, read at creation. An external Service's floating IP is the port's own when it has one; deleting the Service leaves the port and any floating IP not allocated for it.",
				Ref:      upstreamRef + "70",
			},
			{
				Key:      string(annotationLBMethod),
				Support:  upstreamann.Supported,
				Upstream: "The pools' balancing algorithm.",
				Note:     "An algorithm the configured provider lacks is refused before any call.",
				Ref:      upstreamRef + "71",
			},
			{
				Key:      string(annotationProxyProtocol),
				Support:  upstreamann.Supported,
				Upstream: `"true" or "v1" makes the pools send the PROXY protocol header to the backends, "v2" PROXY v2; any other value leaves it off.`,
				Note:     `Only "true", "v1", "v2" and "false" are valid: another value, which upstream reads as off, is refused, as are UDP and SCTP ports, the ovn provider and x-forwarded-for beside it. The status gets ipMode Proxy, or the hostname of loadBalancer.enableIngressHostname, as upstream.`,
				Ref:      upstreamRef + "72",
			},
			{
				Key:      string(annotationSubnetID),
				Support:  upstreamann.Supported,
				Upstream: "Places the VIP in this subnet.",
				Ref:      upstreamRef + "73",
			},
			{
				Key:      string(annotationNetworkID),
				Support:  upstreamann.Supported,
				Upstream: "Places the VIP in a subnet of this network.",
				Note:     "The same, read at creation; with subnet-id or loadBalancer.subnetID outside the network the Service is refused before any call. The pool members stay on the nodes' subnet, where upstream gives them none (which works only when the VIP network reaches the nodes).",
				Ref:      upstreamRef + "74",
			},
			{
				Key:      string(annotationMemberSubnetID),
				Support:  upstreamann.Supported,
				Upstream: "The subnet of the pool members' addresses.",
				Ref:      upstreamRef + "75",
			},
			{
				Key:      string(annotationTimeoutClientData),
				Support:  upstreamann.Supported,
				Upstream: "The listeners' client inactivity timeout, in milliseconds (default 50000).",
				Note:     "A value that is not an integer from 0 to 2073600000 (Octavia's range) is refused instead of read as the default; so is any timeout with the ovn provider, where upstream sends none.",
				Ref:      upstreamRef + "76",
			},
			{
				Key:      string(annotationTimeoutMemberConnect),
				Support:  upstreamann.Supported,
				Upstream: "The listeners' backend connect timeout, in milliseconds (default 5000).",
				Note:     "A value that is not an integer from 0 to 2073600000 (Octavia's range) is refused instead of read as the default; so is any timeout with the ovn provider, where upstream sends none.",
				Ref:      upstreamRef + "77",
			},
			{
				Key:      string(annotationTimeoutMemberData),
				Support:  upstreamann.Supported,
				Upstream: "The listeners' backend inactivity timeout, in milliseconds (default 50000).",
				Note:     "A value that is not an integer from 0 to 2073600000 (Octavia's range) is refused instead of read as the default; so is any timeout with the ovn provider, where upstream sends none.",
				Ref:      upstreamRef + "78",
			},
			{
				Key:      string(annotationTimeoutTCPInspect),
				Support:  upstreamann.Supported,
				Upstream: "How long the listeners wait for more TCP data to inspect, in milliseconds (default 0).",
				Note:     "A value that is not an integer from 0 to 2073600000 (Octavia's range) is refused instead of read as the default; so is any timeout with the ovn provider, where upstream sends none.",
				Ref:      upstreamRef + "79",
			},
			{
				Key:      string(annotationXForwardedFor),
				Support:  upstreamann.Supported,
				Upstream: `"true" makes the listeners HTTP and add an X-Forwarded-For header with the client's address.`,
				Note:     "Refused on UDP and SCTP ports (upstream would make them HTTP), with the ovn provider and with proxy-protocol. Turning it on or off replaces the listeners and pools, which Octavia cannot change the protocol of; upstream fails there.",
				Ref:      upstreamRef + "80",
			},
			{
				Key:      string(annotationFlavorID),
				Support:  upstreamann.Supported,
				Upstream: "Creates the load balancer with this Octavia flavor (default: cloud.conf flavor-id); not used with the ovn provider.",
				Note:     "Read when the load balancer is created, as upstream. A value that is not a UUID, and the annotation with the ovn provider, are refused.",
				Ref:      upstreamRef + "81",
			},
			{
				Key:      string(annotationAvailabilityZone),
				Support:  upstreamann.Supported,
				Upstream: "Creates the load balancer in this Octavia availability zone (default: cloud.conf availability-zone); not used with the ovn provider.",
				Note:     "Read when the load balancer is created, as upstream. The annotation with the ovn provider is refused.",
				Ref:      upstreamRef + "82",
			},
			{
				Key:      string(annotationHealthMonitor),
				Support:  upstreamann.Supported,
				Upstream: "Turns the pools' health monitors on or off, overriding create-monitor.",
				Ref:      upstreamRef + "85",
			},
			{
				Key:      string(annotationHealthMonitorDelay),
				Support:  upstreamann.Supported,
				Upstream: "The health monitors' delay, in seconds (default: cloud.conf monitor-delay).",
				Note:     "The default is loadBalancer.monitorDelay. A value outside 1 to 3600 is refused, and under 3 with UDP ports, which Octavia refuses.",
				Ref:      upstreamRef + "86",
			},
			{
				Key:      string(annotationHealthMonitorTimeout),
				Support:  upstreamann.Supported,
				Upstream: "The health monitors' timeout, in seconds (default: cloud.conf monitor-timeout).",
				Note:     "The default is loadBalancer.monitorTimeout. A timeout longer than the delay is refused.",
				Ref:      upstreamRef + "87",
			},
			{
				Key:      string(annotationHealthMonitorMaxRetries),
				Support:  upstreamann.Supported,
				Upstream: "How many good checks mark a member up (default: cloud.conf monitor-max-retries).",
				Note:     "The default is loadBalancer.monitorMaxRetries. A value outside 1 to 10 (Octavia's range) is refused.",
				Ref:      upstreamRef + "88",
			},
			{
				Key:      string(annotationHealthMonitorMaxRetriesDown),
				Support:  upstreamann.Supported,
				Upstream: "How many failed checks mark a member down (default: cloud.conf monitor-max-retries-down).",
				Note:     "The default is loadBalancer.monitorMaxRetriesDown. A value outside 1 to 10 (Octavia's range) is refused.",
				Ref:      upstreamRef + "89",
			},
			{
				Key:      string(annotationHostname),
				Support:  upstreamann.Supported,
				Upstream: "Puts this hostname in status.loadBalancer.ingress instead of the IP address.",
				Note:     "A value the API server would refuse as a status hostname (not a DNS name, or an IP address) is refused. Upstream's load-balancer-address annotation, which would keep the address visible on the Service, is not written.",
				Ref:      upstreamRef + "90",
			},
			{
				Key:      lb + "load-balancer-address",
				Support:  upstreamann.Supported,
				Upstream: "Written by the upstream CCM after each sync with the load balancer's address (:1827); it never reads it.",
				Note:     "Not written here: status.loadBalancer.ingress holds the address.",
				Ref:      upstreamRef + "91",
			},
			{
				Key:      lb + "default-tls-container-ref",
				Support:  upstreamann.Refused,
				ByValue:  tlsContainerRefSupport,
				Upstream: "Makes the listeners TERMINATED_HTTPS with this Barbican certificate (default: cloud.conf default-tls-container-ref; empty turns it off).",
				Note:     "no listener here terminates TLS (they are TCP, or HTTP with x-forwarded-for), so clients' TLS would reach backends that expect plain HTTP; terminate TLS in the cluster (e.g. an Ingress controller) and remove the annotation.",
				Ref:      upstreamRef + "93",
			},
			{
				// The upstream CCM writes this onto every Service it
				// provisions (:1757), so nearly every migrated Service
				// has it; so does this backend (loadbalancer_shared.go).
				Key:      string(annotationLoadBalancerID),
				Support:  upstreamann.Supported,
				Upstream: "Uses (or shares, up to max-shared-lb Services) the load balancer with this ID; the upstream CCM writes it onto every Service it provisions.",
				Note:     "Shared as upstream: distinct ports, usage tags kube_service_<clusterID>_<namespace>_<name> on the load balancer and the Service's listeners, loadBalancer.maxSharedLB (default 2), no internal Service; the load balancer goes with its last Service unless a person made it. Written onto every Service. Unlike upstream, a Service that has its own load balancer and names another is refused (upstream moves and leaves its own behind), its own cannot turn internal while shared, and a load balancer named for another cluster ID is never deleted.",
				Ref:      upstreamRef + "97",
			},
		},
	}
}

// tlsContainerRefSupport: an empty reference turns TLS termination off
// upstream (it overrides the cloud.conf default, loadbalancer.go:423-436),
// which is what happens here.
func tlsContainerRefSupport(v string) upstreamann.Support {
	if v == "" {
		return upstreamann.Supported
	}
	return upstreamann.Refused
}
