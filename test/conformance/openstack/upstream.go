package openstack

import (
	"context"
	"fmt"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gcopenstack "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	cloudsimopenstack "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

// The upstream OpenStack CCM (kubernetes/cloud-provider-openstack at
// c453fb7c, pkg/openstack/loadbalancer.go) names a Service's load balancer
// kube_service_<cluster-name>_<namespace>_<name> (:369-371) and its parts
// listener_<i>_<lb>, pool_<i>_<lb>, monitor_<i>_<lb> (:102-107), and
// writes these annotations on the Service it serves (:1757, :1827).
const (
	upstreamAnnotationLBID    = "loadbalancer.openstack.org/load-balancer-id"
	upstreamAnnotationAddress = "loadbalancer.openstack.org/load-balancer-address"
)

func upstreamLBName(clusterName string, svc *corev1.Service) string {
	return "kube_service_" + clusterName + "_" + svc.Namespace + "_" + svc.Name
}

// UpstreamAnnotations: every upstream annotation is served or refused
// here, none only warned about; a Barbican TLS container asks for
// TERMINATED_HTTPS listeners, which this backend does not make (refused).
func (c *Cloud) UpstreamAnnotations() (ignored, refused map[string]string) {
	return nil,
		map[string]string{"loadbalancer.openstack.org/default-tls-container-ref": "https://barbican.example.com:9311/v1/containers/3b0e5f5e-7d1a-4e46-9a53-1f0c6c8f2c11"}
}

// MakeUpstreamLoadBalancer makes the load balancer the upstream OpenStack
// CCM makes for a Service with its defaults (manage-security-groups and
// create-monitor off, Octavia with tags and timeouts), through Octavia's
// and Neutron's APIs as it calls them: one fully-populated create
// (createOctaviaLoadBalancer, :230-318: the name as its only tag, the
// description "Kubernetes external service <ns>/<name> from cluster
// <cluster>", per port a listener with the name tag, connection_limit
// -1 and the four timeouts (buildListenerCreateOpt, :1171-1212), a TCP
// ROUND_ROBIN pool and members named after the nodes on their NodePort
// in the VIP subnet (buildBatchUpdateMemberOpts, :1015-1050)), wait for
// ACTIVE, then a floating IP on the VIP port described "Floating IP for
// Kubernetes external service <ns>/<name> from cluster <cluster>"
// (ensureFloatingIP, :700-720).
func (c *Cloud) MakeUpstreamLoadBalancer(svc *corev1.Service, clusterName string, backends []conformance.Instance) (conformance.UpstreamLoadBalancer, error) {
	return c.makeUpstream(svc, upstreamLBName(clusterName, svc), svc.Namespace+"/"+svc.Name, clusterName, backends)
}

// MakeLegacyLoadBalancer makes the load balancer the upstream CCM made
// before it named them after the cluster (March 2019): the name and the
// descriptions' Service are cloudprovider.DefaultLoadBalancerName,
// "a" and the Service's UID without dashes, cut to 32 (:369-371).
func (c *Cloud) MakeLegacyLoadBalancer(svc *corev1.Service, clusterName string, backends []conformance.Instance) (conformance.UpstreamLoadBalancer, error) {
	legacy := cloudprovider.DefaultLoadBalancerName(svc)
	return c.makeUpstream(svc, legacy, legacy, clusterName, backends)
}

// Clients are Octavia and Neutron clients of the project's operator, as
// another client of the cloud (an operator's openstack CLI, the upstream
// CCM) has them: another Keystone user of the project than the
// manager's, so its calls are never held to the manager's policy
// (ManagerPrincipal).
func (c *Cloud) Clients(ctx context.Context) (lb, network *gophercloud.ServiceClient, err error) {
	provider, err := gcopenstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{
		IdentityEndpoint: c.fx.IdentityEndpoint(c.srv.URL()),
		Username:         c.fx.OperatorUsername,
		Password:         c.fx.OperatorPassword,
		DomainName:       c.fx.DomainName,
		Scope:            &gophercloud.AuthScope{ProjectName: c.fx.ProjectName, DomainID: c.fx.DomainID},
	})
	if err != nil {
		return nil, nil, err
	}
	eo := gophercloud.EndpointOpts{Region: c.fx.Region}
	if lb, err = gcopenstack.NewLoadBalancerV2(provider, eo); err != nil {
		return nil, nil, err
	}
	network, err = gcopenstack.NewNetworkV2(provider, eo)
	return lb, network, err
}

// makeUpstream makes the load balancer name, its descriptions naming
// the Service as svcRef.
func (c *Cloud) makeUpstream(svc *corev1.Service, name, svcRef, clusterName string, backends []conformance.Instance) (conformance.UpstreamLoadBalancer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lbc, netc, err := c.Clients(ctx)
	if err != nil {
		return conformance.UpstreamLoadBalancer{}, err
	}

	byID := map[string]cloudsimopenstack.ServerInfo{}
	for _, s := range c.emu.Servers() {
		byID[s.ID] = s
	}
	// Octavia's default timeouts, which upstream sends explicitly.
	clientData, memberConnect, memberData, tcpInspect := 50000, 5000, 50000, 0
	connLimit := -1
	opts := loadbalancers.CreateOpts{
		Name:        name,
		Description: fmt.Sprintf("Kubernetes external service %s from cluster %s", svcRef, clusterName),
		Provider:    "amphora",
		Tags:        []string{name},
		VipSubnetID: c.fx.SubnetID,
	}
	// Upstream makes one load balancer of the Service's first family
	// (pkg/openstack/loadbalancer.go:1305-1309): an IPv6-first Service's
	// has its VIP and members on the nodes' IPv6 subnet, and no floating
	// IP (:1813-1823).
	ipv6 := len(svc.Spec.IPFamilies) > 0 && svc.Spec.IPFamilies[0] == corev1.IPv6Protocol
	subnet := c.fx.SubnetID
	if ipv6 {
		if c.fx.SubnetIPv6ID == "" {
			return conformance.UpstreamLoadBalancer{}, fmt.Errorf("an IPv6-first Service needs the dual-stack fixture")
		}
		subnet = c.fx.SubnetIPv6ID
		opts.VipSubnetID = subnet
	}
	for i, p := range svc.Spec.Ports {
		var members []pools.CreateMemberOpts
		for _, b := range backends {
			s, ok := byID[b.ID]
			if !ok {
				return conformance.UpstreamLoadBalancer{}, fmt.Errorf("unknown server %s", b.ID)
			}
			addr := s.PrivateIP
			if ipv6 {
				addr = s.PrivateIPv6
			}
			members = append(members, pools.CreateMemberOpts{Name: b.NodeName, Address: addr, ProtocolPort: int(p.NodePort), SubnetID: subnet})
		}
		opts.Listeners = append(opts.Listeners, listeners.CreateOpts{
			Name:                 fmt.Sprintf("listener_%d_%s", i, name),
			Protocol:             listeners.Protocol(p.Protocol),
			ProtocolPort:         int(p.Port),
			ConnLimit:            &connLimit,
			Tags:                 []string{name},
			TimeoutClientData:    &clientData,
			TimeoutMemberConnect: &memberConnect,
			TimeoutMemberData:    &memberData,
			TimeoutTCPInspect:    &tcpInspect,
			DefaultPool: &pools.CreateOpts{
				Name:     fmt.Sprintf("pool_%d_%s", i, name),
				Protocol: pools.Protocol(p.Protocol),
				LBMethod: pools.LBMethodRoundRobin,
				Members:  members,
			},
		})
	}
	lb, err := loadbalancers.Create(ctx, lbc, opts).Extract()
	if err != nil {
		return conformance.UpstreamLoadBalancer{}, fmt.Errorf("create %s: %w", name, err)
	}
	for lb.ProvisioningStatus != "ACTIVE" {
		if lb.ProvisioningStatus == "ERROR" {
			return conformance.UpstreamLoadBalancer{}, fmt.Errorf("load balancer %s went ERROR", lb.ID)
		}
		select {
		case <-ctx.Done():
			return conformance.UpstreamLoadBalancer{}, fmt.Errorf("load balancer %s never became ACTIVE: %w", lb.ID, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
		if lb, err = loadbalancers.Get(ctx, lbc, lb.ID).Extract(); err != nil {
			return conformance.UpstreamLoadBalancer{}, err
		}
	}
	ipMode := corev1.LoadBalancerIPModeVIP
	if ipv6 {
		if c.opts.Switched {
			if err := c.makeUpstreamGroup(ctx, netc, svc, clusterName, backends); err != nil {
				return conformance.UpstreamLoadBalancer{}, err
			}
		}
		return conformance.UpstreamLoadBalancer{
			ID:          lb.ID,
			Status:      corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: lb.VipAddress, IPMode: &ipMode}}},
			Annotations: map[string]string{upstreamAnnotationLBID: lb.ID, upstreamAnnotationAddress: lb.VipAddress},
			Exclusive:   []string{cloudsimopenstack.KindLoadBalancer, cloudsimopenstack.KindFloatingIP},
		}, nil
	}
	fip, err := floatingips.Create(ctx, netc, floatingips.CreateOpts{
		FloatingNetworkID: c.fx.ExternalNetworkID,
		PortID:            lb.VipPortID,
		Description:       fmt.Sprintf("Floating IP for Kubernetes external service %s from cluster %s", svcRef, clusterName),
	}).Extract()
	if err != nil {
		return conformance.UpstreamLoadBalancer{}, fmt.Errorf("floating IP for %s: %w", name, err)
	}
	if c.opts.Switched {
		// The switched config manages security groups, as the upstream
		// CCM it was imported from did.
		if err := c.makeUpstreamGroup(ctx, netc, svc, clusterName, backends); err != nil {
			return conformance.UpstreamLoadBalancer{}, err
		}
	}
	return conformance.UpstreamLoadBalancer{
		ID:          lb.ID,
		Status:      corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: fip.FloatingIP, IPMode: &ipMode}}},
		Annotations: map[string]string{upstreamAnnotationLBID: lb.ID, upstreamAnnotationAddress: fip.FloatingIP},
		Exclusive:   []string{cloudsimopenstack.KindLoadBalancer, cloudsimopenstack.KindFloatingIP},
	}, nil
}
