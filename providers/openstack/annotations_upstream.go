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
				Upstream: `"true" gives the load balancer no floating IP: the Service's address is its VIP.`,
				Note:     "There is no cloud-config default making every Service internal (upstream's internal-lb): a Service without the annotation is external.",
				Ref:      upstreamRef + "61",
			},
			{
				Key:      lb + "node-selector",
				Support:  upstreamann.Ignored,
				Upstream: "Only Nodes with these key=value labels become pool members.",
				Note:     "every Node the service controller passes is a member here; label Nodes to keep out node.kubernetes.io/exclude-from-external-load-balancers=true and remove the annotation.",
				Ref:      upstreamRef + "62",
			},
			{
				Key:      lb + "connection-limit",
				Support:  upstreamann.Ignored,
				Upstream: "Sets the listeners' connection_limit.",
				Note:     "the listeners have no connection limit here (Octavia's -1, unlimited); remove the annotation.",
				Ref:      upstreamRef + "63",
			},
			{
				Key:      string(annotationFloatingNetworkID),
				Support:  upstreamann.Supported,
				Upstream: "Allocates the floating IP from this external network.",
				Ref:      upstreamRef + "64",
			},
			{
				Key:      lb + "floating-subnet",
				Support:  upstreamann.Refused,
				Upstream: "Allocates the floating IP from the floating network's subnet whose name matches this pattern (glob, or regexp after ~).",
				Note:     "the floating IP would come from any subnet of the floating network, an address from another range; set loadbalancer.openstack.org/floating-subnet-id to the subnet's UUID instead.",
				Ref:      upstreamRef + "65",
			},
			{
				Key:      string(annotationFloatingSubnetID),
				Support:  upstreamann.Supported,
				Upstream: "Allocates the floating IP from this subnet of the floating network.",
				Ref:      upstreamRef + "66",
			},
			{
				Key:      lb + "floating-subnet-tags",
				Support:  upstreamann.Refused,
				Upstream: "Allocates the floating IP from the floating network's subnet carrying these tags.",
				Note:     "the floating IP would come from any subnet of the floating network, an address from another range; set loadbalancer.openstack.org/floating-subnet-id to the subnet's UUID instead.",
				Ref:      upstreamRef + "67",
			},
			{
				Key:      lb + "class",
				Support:  upstreamann.Refused,
				Upstream: `Takes the floating network and subnet, the VIP network and subnet and the member subnet from the cloud.conf section [LoadBalancerClass "<name>"].`,
				Note:     "there are no load balancer classes here, so the load balancer would use the default floating network and subnets and get another address; set the class's values as the floating-network-id, floating-subnet-id, subnet-id and member-subnet-id annotations instead.",
				Ref:      upstreamRef + "68",
			},
			{
				Key:      string(annotationKeepFloatingIP),
				Support:  upstreamann.Supported,
				Upstream: `"true" keeps the floating IP when the Service is deleted.`,
				Ref:      upstreamRef + "69",
			},
			{
				Key:      lb + "port-id",
				Support:  upstreamann.Refused,
				Upstream: "Uses this existing Neutron port as the VIP port, so the load balancer takes the port's address.",
				Note:     "a new VIP port with a new address is always created here; to keep an address, set spec.loadBalancerIP (a floating IP you own, or an internal Service's VIP address) and remove the annotation.",
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
				Key:      lb + "proxy-protocol",
				Support:  upstreamann.Refused,
				ByValue:  proxyProtocolSupport,
				Upstream: `"true" or "v1" makes the pools send the PROXY protocol header to the backends, "v2" PROXY v2; any other value leaves it off.`,
				Note:     "the pools here speak plain TCP, so backends expecting a PROXY header would reject the connections; remove the annotation and the backends' PROXY protocol setting.",
				Ref:      upstreamRef + "72",
			},
			{
				Key:      string(annotationSubnetID),
				Support:  upstreamann.Supported,
				Upstream: "Places the VIP in this subnet.",
				Ref:      upstreamRef + "73",
			},
			{
				Key:      lb + "network-id",
				Support:  upstreamann.Refused,
				Upstream: "Places the VIP in a subnet of this network.",
				Note:     "the VIP would be placed in loadBalancer.subnetID or the nodes' subnet instead, another network and address; set loadbalancer.openstack.org/subnet-id to a subnet of that network instead.",
				Ref:      upstreamRef + "74",
			},
			{
				Key:      string(annotationMemberSubnetID),
				Support:  upstreamann.Supported,
				Upstream: "The subnet of the pool members' addresses.",
				Ref:      upstreamRef + "75",
			},
			{
				Key:      lb + "timeout-client-data",
				Support:  upstreamann.Ignored,
				Upstream: "The listeners' client inactivity timeout, in milliseconds.",
				Note:     "the listeners keep Octavia's default of 50 s; remove the annotation.",
				Ref:      upstreamRef + "76",
			},
			{
				Key:      lb + "timeout-member-connect",
				Support:  upstreamann.Ignored,
				Upstream: "The listeners' backend connect timeout, in milliseconds.",
				Note:     "the listeners keep Octavia's default of 5 s; remove the annotation.",
				Ref:      upstreamRef + "77",
			},
			{
				Key:      lb + "timeout-member-data",
				Support:  upstreamann.Ignored,
				Upstream: "The listeners' backend inactivity timeout, in milliseconds.",
				Note:     "the listeners keep Octavia's default of 50 s; remove the annotation.",
				Ref:      upstreamRef + "78",
			},
			{
				Key:      lb + "timeout-tcp-inspect",
				Support:  upstreamann.Ignored,
				Upstream: "How long the listeners wait for more TCP data to inspect, in milliseconds.",
				Note:     "the listeners keep Octavia's default of 0 (no wait); remove the annotation.",
				Ref:      upstreamRef + "79",
			},
			{
				Key:      lb + "x-forwarded-for",
				Support:  upstreamann.Refused,
				ByValue:  xForwardedForSupport,
				Upstream: `"true" makes the listeners HTTP and add an X-Forwarded-For header with the client's address.`,
				Note:     "the listeners here are TCP and add no header, so the backends would no longer learn the client's address; remove the annotation.",
				Ref:      upstreamRef + "80",
			},
			{
				Key:      lb + "flavor-id",
				Support:  upstreamann.Ignored,
				Upstream: "Creates the load balancer with this Octavia flavor.",
				Note:     "the load balancer gets Octavia's default flavor; remove the annotation.",
				Ref:      upstreamRef + "81",
			},
			{
				Key:      lb + "availability-zone",
				Support:  upstreamann.Ignored,
				Upstream: "Creates the load balancer in this Octavia availability zone.",
				Note:     "the load balancer is created without an availability zone, where Octavia places it by default; remove the annotation.",
				Ref:      upstreamRef + "82",
			},
			{
				Key:      string(annotationHealthMonitor),
				Support:  upstreamann.Supported,
				Upstream: "Turns the pools' health monitors on or off, overriding create-monitor.",
				Ref:      upstreamRef + "85",
			},
			{
				Key:      lb + "health-monitor-delay",
				Support:  upstreamann.Ignored,
				Upstream: "The health monitor's delay, in seconds.",
				Note:     "the monitor uses the cloud-config's loadBalancer.monitorDelay (default 5s); remove the annotation.",
				Ref:      upstreamRef + "86",
			},
			{
				Key:      lb + "health-monitor-timeout",
				Support:  upstreamann.Ignored,
				Upstream: "The health monitor's timeout, in seconds.",
				Note:     "the monitor uses the cloud-config's loadBalancer.monitorTimeout (default 3s); remove the annotation.",
				Ref:      upstreamRef + "87",
			},
			{
				Key:      lb + "health-monitor-max-retries",
				Support:  upstreamann.Ignored,
				Upstream: "How many good checks mark a member up.",
				Note:     "the monitor uses the cloud-config's loadBalancer.monitorMaxRetries (default 1); remove the annotation.",
				Ref:      upstreamRef + "88",
			},
			{
				Key:      lb + "health-monitor-max-retries-down",
				Support:  upstreamann.Ignored,
				Upstream: "How many failed checks mark a member down.",
				Note:     "the monitor keeps Octavia's default of 3; remove the annotation.",
				Ref:      upstreamRef + "89",
			},
			{
				Key:      lb + "hostname",
				Support:  upstreamann.Refused,
				Upstream: "Puts this hostname in status.loadBalancer.ingress instead of the IP address.",
				Note:     "status here holds the load balancer's IP address, so clients and DNS records that follow the hostname would change; point the name at the address yourself and remove the annotation.",
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
				Note:     "the listeners here are TCP and terminate no TLS, so clients' TLS would reach backends that expect plain HTTP; terminate TLS in the cluster (e.g. an Ingress controller) and remove the annotation.",
				Ref:      upstreamRef + "93",
			},
			{
				// The upstream CCM writes this onto every Service it
				// provisions (:1757), so nearly every migrated Service
				// has it. The backend reads it (annotationLoadBalancerID):
				// telling its own load balancer from a shared one needs
				// the load balancer, not the value.
				Key:      lb + "load-balancer-id",
				Support:  upstreamann.Supported,
				Upstream: "Uses (or shares, up to max-shared-lb Services) the load balancer with this ID; the upstream CCM writes it onto every Service it provisions.",
				Note:     "a Service whose annotation names its own load balancer (kube_service_<clusterID>_<namespace>_<name>) keeps it; one naming another Service's load balancer is refused, since load balancers are not shared here; a stale ID is ignored.",
				Ref:      upstreamRef + "97",
			},
		},
	}
}

// proxyProtocolSupport follows upstream's getProxyProtocolFromServiceAnnotation
// (loadbalancer.go:481-491): only "true", "v1" and "v2" turn it on.
func proxyProtocolSupport(v string) upstreamann.Support {
	switch v {
	case "true", "v1", "v2":
		return upstreamann.Refused
	}
	return upstreamann.Supported
}

// xForwardedForSupport follows upstream's getBoolFromServiceAnnotation
// (loadbalancer.go:458-477): only "true" turns it on.
func xForwardedForSupport(v string) upstreamann.Support {
	if v == "true" {
		return upstreamann.Refused
	}
	return upstreamann.Supported
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
