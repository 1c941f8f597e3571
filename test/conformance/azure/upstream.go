package azure

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

// The resource kinds of the emulator's inventory (ARM types; a load
// balancer's parts are listed as kinds of their own, test/cloudsim/azure
// resources.go).
const (
	kindLoadBalancer = "Microsoft.Network/loadBalancers"
	kindFrontend     = kindLoadBalancer + "/frontendIPConfigurations"
	kindRule         = kindLoadBalancer + "/loadBalancingRules"
	kindProbe        = kindLoadBalancer + "/probes"
	kindPool         = kindLoadBalancer + "/backendAddressPools"
	kindPublicIP     = "Microsoft.Network/publicIPAddresses"
	kindSecurityRule = "Microsoft.Network/networkSecurityGroups/securityRules"
)

// annotationInternal asks the upstream CCM for an internal load balancer.
const annotationInternal = "service.beta.kubernetes.io/azure-load-balancer-internal"

// upstreamFrontend is a frontend MakeUpstreamLoadBalancer made: the
// suite's neutral Service key does not carry the UID an internal
// Service's frontend is named after, so the adapter remembers it.
type upstreamFrontend struct {
	lb, frontend string
}

// MakeUpstreamLoadBalancer makes what the upstream Azure CCM
// (kubernetes-sigs/cloud-provider-azure v1.36.5) leaves for a Service
// with default settings, through ARM as it calls it, all named after
// base = cloudprovider.DefaultLoadBalancerName ("a" and the dashless UID,
// 32 characters; azure_standard.go getRulePrefix):
//   - the cluster's Standard load balancer "<cluster>", or
//     "<cluster>-internal" for an internal Service, without tags (upstream
//     puts only the config's on it), made by the first Service and added
//     to by the next (GET, then PUT with If-Match);
//   - its backend pool "<cluster>" of NIC IP configurations, upstream's
//     default nodeIPConfiguration type: the pool lists no address, each
//     backend's primary IP configuration names it
//     (azure_standard.go EnsureHostInPool);
//   - for a public Service a Standard static IPv4 public IP
//     "<cluster>-<base>" in the region's zones, tagged k8s-azure-service
//     and k8s-azure-cluster-name (azure_loadbalancer.go ensurePublicIPExists),
//     and the frontend "<base>" on it; for an internal one the frontend
//     "<base>" in the cluster's subnet with a dynamic address, in the
//     region's zones (getFrontendZones);
//   - per port the rule "<base>-TCP-<port>" with floating IP, 4 minutes
//     idle timeout, TCP reset and default distribution
//     (getExpectedLoadBalancingRulePropertiesForPort) and its probe of
//     the same name, TCP to the NodePort every 5 s, threshold 2
//     (azure_loadbalancer_healthprobe.go buildHealthProbeRulesForPort);
//   - for a public Service the security group rule admitting the
//     Internet to the public IP on the ports,
//     "k8s-azure-lb_allow_IPv4_<md5 of Tcp_Internet_<ports>>", at the
//     lowest free priority from 500, or its address added to that rule
//     when another Service made it (securitygroup.go); an internal Service
//     without source ranges gets none.
func (c *Cloud) MakeUpstreamLoadBalancer(svc *corev1.Service, clusterName string, backends []conformance.Instance) (conformance.UpstreamLoadBalancer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f, err := c.clients()
	if err != nil {
		return conformance.UpstreamLoadBalancer{}, err
	}
	internal := strings.EqualFold(svc.Annotations[annotationInternal], "true")
	base := cloudprovider.DefaultLoadBalancerName(svc)
	rg := c.fx.ResourceGroup
	lbName := clusterName
	if internal {
		lbName += "-internal"
	}
	lbID := c.armID(rg, "loadBalancers", lbName)
	poolID := lbID + "/backendAddressPools/" + clusterName
	feID := lbID + "/frontendIPConfigurations/" + base
	zones := to.SliceOfPtrs(c.emu.Config().Zones...)

	c.mu.Lock()
	if c.upstream == nil {
		c.upstream = map[types.NamespacedName]upstreamFrontend{}
	}
	c.upstream[types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}] = upstreamFrontend{lb: lbName, frontend: base}
	if !slices.Contains(c.clusterNames, clusterName) {
		c.clusterNames = append(c.clusterNames, clusterName)
	}
	c.cached = nil
	c.mu.Unlock()

	fe := &armnetwork.FrontendIPConfiguration{Name: to.Ptr(base), ID: to.Ptr(feID)}
	var address string
	if internal {
		fe.Properties = &armnetwork.FrontendIPConfigurationPropertiesFormat{
			Subnet:                    &armnetwork.Subnet{ID: to.Ptr(c.fx.SubnetID)},
			PrivateIPAllocationMethod: to.Ptr(armnetwork.IPAllocationMethodDynamic),
		}
		fe.Zones = zones
	} else {
		name := clusterName + "-" + base
		if len(name) > 75 {
			name = name[:75]
		}
		p, err := f.NewPublicIPAddressesClient().BeginCreateOrUpdate(ctx, rg, name, armnetwork.PublicIPAddress{
			Location: to.Ptr(c.fx.Location),
			SKU:      &armnetwork.PublicIPAddressSKU{Name: to.Ptr(armnetwork.PublicIPAddressSKUNameStandard)},
			Zones:    zones,
			Tags: map[string]*string{
				tagService: to.Ptr(svc.Namespace + "/" + svc.Name),
				tagCluster: to.Ptr(clusterName),
			},
			Properties: &armnetwork.PublicIPAddressPropertiesFormat{
				PublicIPAllocationMethod: to.Ptr(armnetwork.IPAllocationMethodStatic),
				PublicIPAddressVersion:   to.Ptr(armnetwork.IPVersionIPv4),
			},
		}, nil)
		if err != nil {
			return conformance.UpstreamLoadBalancer{}, fmt.Errorf("create public IP %s: %w", name, err)
		}
		pip, err := p.PollUntilDone(ctx, &runtime.PollUntilDoneOptions{Frequency: time.Second})
		if err != nil {
			return conformance.UpstreamLoadBalancer{}, fmt.Errorf("create public IP %s: %w", name, err)
		}
		address = addressOf(pip.Properties)
		fe.Properties = &armnetwork.FrontendIPConfigurationPropertiesFormat{PublicIPAddress: &armnetwork.PublicIPAddress{ID: pip.ID}}
	}

	lbs := f.NewLoadBalancersClient()
	lb := armnetwork.LoadBalancer{
		Location:   to.Ptr(c.fx.Location),
		SKU:        &armnetwork.LoadBalancerSKU{Name: to.Ptr(armnetwork.LoadBalancerSKUNameStandard)},
		Properties: &armnetwork.LoadBalancerPropertiesFormat{},
	}
	write := policy.WithHTTPHeader(ctx, http.Header{"If-None-Match": {"*"}})
	if cur, err := lbs.Get(ctx, rg, lbName, nil); err == nil {
		lb = cur.LoadBalancer
		write = policy.WithHTTPHeader(ctx, http.Header{"If-Match": {deref(lb.Etag)}})
	} else if !isNotFound(err) {
		return conformance.UpstreamLoadBalancer{}, fmt.Errorf("get load balancer %s: %w", lbName, err)
	}
	if lb.Properties == nil {
		lb.Properties = &armnetwork.LoadBalancerPropertiesFormat{}
	}
	lp := lb.Properties
	if !slices.ContainsFunc(lp.BackendAddressPools, func(p *armnetwork.BackendAddressPool) bool { return strings.EqualFold(deref(p.Name), clusterName) }) {
		lp.BackendAddressPools = append(lp.BackendAddressPools, &armnetwork.BackendAddressPool{
			Name: to.Ptr(clusterName), ID: to.Ptr(poolID), Properties: &armnetwork.BackendAddressPoolPropertiesFormat{},
		})
	}
	lp.FrontendIPConfigurations = append(lp.FrontendIPConfigurations, fe)
	for _, port := range svc.Spec.Ports {
		name := fmt.Sprintf("%s-%s-%d", base, port.Protocol, port.Port)
		probeID := lbID + "/probes/" + name
		lp.Probes = append(lp.Probes, &armnetwork.Probe{Name: to.Ptr(name), ID: to.Ptr(probeID), Properties: &armnetwork.ProbePropertiesFormat{
			Protocol: to.Ptr(armnetwork.ProbeProtocolTCP), Port: to.Ptr(port.NodePort),
			IntervalInSeconds: to.Ptr[int32](5), ProbeThreshold: to.Ptr[int32](2),
		}})
		lp.LoadBalancingRules = append(lp.LoadBalancingRules, &armnetwork.LoadBalancingRule{Name: to.Ptr(name), Properties: &armnetwork.LoadBalancingRulePropertiesFormat{
			Protocol:     to.Ptr(armnetwork.TransportProtocolTCP),
			FrontendPort: to.Ptr(port.Port), BackendPort: to.Ptr(port.Port),
			DisableOutboundSnat: to.Ptr(false), EnableFloatingIP: to.Ptr(true), EnableTCPReset: to.Ptr(true),
			LoadDistribution:        to.Ptr(armnetwork.LoadDistributionDefault),
			IdleTimeoutInMinutes:    to.Ptr[int32](4),
			FrontendIPConfiguration: &armnetwork.SubResource{ID: to.Ptr(feID)},
			BackendAddressPool:      &armnetwork.SubResource{ID: to.Ptr(poolID)},
			Probe:                   &armnetwork.SubResource{ID: to.Ptr(probeID)},
		}})
	}
	p, err := lbs.BeginCreateOrUpdate(write, rg, lbName, lb, nil)
	if err != nil {
		return conformance.UpstreamLoadBalancer{}, fmt.Errorf("write load balancer %s: %w", lbName, err)
	}
	written, err := p.PollUntilDone(ctx, &runtime.PollUntilDoneOptions{Frequency: time.Second})
	if err != nil {
		return conformance.UpstreamLoadBalancer{}, fmt.Errorf("write load balancer %s: %w", lbName, err)
	}
	if internal {
		for _, got := range written.Properties.FrontendIPConfigurations {
			if strings.EqualFold(deref(got.Name), base) && got.Properties != nil {
				address = deref(got.Properties.PrivateIPAddress)
			}
		}
	}
	if address == "" {
		return conformance.UpstreamLoadBalancer{}, fmt.Errorf("load balancer %s: frontend %s has no address", lbName, base)
	}

	for _, b := range backends {
		if err := c.joinPool(ctx, f.NewInterfacesClient(), b.ID, poolID); err != nil {
			return conformance.UpstreamLoadBalancer{}, err
		}
	}
	if !internal {
		if err := c.allowInternet(ctx, f.NewSecurityGroupsClient(), svc.Spec.Ports, address); err != nil {
			return conformance.UpstreamLoadBalancer{}, err
		}
	}
	return conformance.UpstreamLoadBalancer{
		ID:        deref(written.ID) + "/frontendIPConfigurations/" + base,
		Status:    corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: address}}},
		Exclusive: []string{kindLoadBalancer, kindFrontend, kindPool, kindPublicIP},
		Kept:      []string{kindFrontend, kindRule, kindProbe, kindPool, kindPublicIP, kindSecurityRule},
	}, nil
}

// joinPool puts the VM's primary NIC's primary IP configuration in the
// pool, as upstream's EnsureHostInPool (NetworkInterfaces get, then
// CreateOrUpdate).
func (c *Cloud) joinPool(ctx context.Context, nics *armnetwork.InterfacesClient, vmName, poolID string) error {
	vm, ok := c.emu.VM(vmName)
	if !ok || vm.NICID == "" {
		return fmt.Errorf("VM %s has no network interface", vmName)
	}
	segs := strings.Split(vm.NICID, "/")
	rg, name := segs[4], segs[len(segs)-1]
	resp, err := nics.Get(ctx, rg, name, nil)
	if err != nil {
		return fmt.Errorf("get network interface %s: %w", name, err)
	}
	nic := resp.Interface
	var cfg *armnetwork.InterfaceIPConfiguration
	for _, ip := range nic.Properties.IPConfigurations {
		if cfg == nil || (ip.Properties != nil && deref(ip.Properties.Primary)) {
			cfg = ip
		}
	}
	if cfg == nil || cfg.Properties == nil {
		return fmt.Errorf("network interface %s has no IP configuration", name)
	}
	if slices.ContainsFunc(cfg.Properties.LoadBalancerBackendAddressPools, func(p *armnetwork.BackendAddressPool) bool { return strings.EqualFold(deref(p.ID), poolID) }) {
		return nil
	}
	cfg.Properties.LoadBalancerBackendAddressPools = append(cfg.Properties.LoadBalancerBackendAddressPools, &armnetwork.BackendAddressPool{ID: to.Ptr(poolID)})
	p, err := nics.BeginCreateOrUpdate(policy.WithHTTPHeader(ctx, http.Header{"If-Match": {deref(nic.Etag)}}), rg, name, nic, nil)
	if err == nil {
		_, err = p.PollUntilDone(ctx, &runtime.PollUntilDoneOptions{Frequency: time.Second})
	}
	if err != nil {
		return fmt.Errorf("write network interface %s (backend pool): %w", name, err)
	}
	return nil
}

// allowInternet admits the Internet to address on the ports in the
// fixture's security group, as upstream's security group reconciliation
// does for a public Service with floating IP: one rule per protocol,
// source and port set, named by their MD5 and shared by every Service
// with the same, whose destinations it lists.
func (c *Cloud) allowInternet(ctx context.Context, nsgs *armnetwork.SecurityGroupsClient, ports []corev1.ServicePort, address string) error {
	rg, name := c.fx.SecurityGroupResourceGroup, c.fx.SecurityGroupName
	resp, err := nsgs.Get(ctx, rg, name, nil)
	if err != nil {
		return fmt.Errorf("get network security group %s: %w", name, err)
	}
	g := resp.SecurityGroup
	var portStrs []string
	var nums []int32
	for _, p := range ports {
		portStrs = append(portStrs, strconv.Itoa(int(p.Port)))
		nums = append(nums, p.Port)
	}
	slices.Sort(portStrs)
	portStrs = slices.Compact(portStrs)
	ruleName := AllowRuleName("Tcp", []string{"Internet"}, nums...)
	used := map[int32]bool{}
	var rule *armnetwork.SecurityRule
	for _, r := range g.Properties.SecurityRules {
		if r.Properties != nil && deref(r.Properties.Direction) == armnetwork.SecurityRuleDirectionInbound && r.Properties.Priority != nil {
			used[*r.Properties.Priority] = true
		}
		if deref(r.Name) == ruleName {
			rule = r
		}
	}
	if rule == nil {
		prio := int32(500)
		for used[prio] {
			prio++
		}
		g.Properties.SecurityRules = append(g.Properties.SecurityRules, &armnetwork.SecurityRule{Name: to.Ptr(ruleName), Properties: &armnetwork.SecurityRulePropertiesFormat{
			Protocol: to.Ptr(armnetwork.SecurityRuleProtocolTCP), Access: to.Ptr(armnetwork.SecurityRuleAccessAllow),
			Direction: to.Ptr(armnetwork.SecurityRuleDirectionInbound), Priority: to.Ptr(prio),
			SourceAddressPrefix: to.Ptr("Internet"), SourcePortRange: to.Ptr("*"),
			DestinationPortRanges:    to.SliceOfPtrs(portStrs...),
			DestinationAddressPrefix: to.Ptr(address),
		}})
	} else {
		rp := rule.Properties
		dsts := []string{address}
		if rp.DestinationAddressPrefix != nil {
			dsts = append(dsts, *rp.DestinationAddressPrefix)
		}
		for _, d := range rp.DestinationAddressPrefixes {
			dsts = append(dsts, deref(d))
		}
		slices.Sort(dsts)
		dsts = slices.Compact(dsts)
		rp.DestinationAddressPrefix, rp.DestinationAddressPrefixes = nil, nil
		if len(dsts) == 1 {
			rp.DestinationAddressPrefix = to.Ptr(dsts[0])
		} else {
			rp.DestinationAddressPrefixes = to.SliceOfPtrs(dsts...)
		}
	}
	// ARM fills the default rules in; they are not sent back.
	g.Properties.DefaultSecurityRules = nil
	p, err := nsgs.BeginCreateOrUpdate(policy.WithHTTPHeader(ctx, http.Header{"If-Match": {deref(g.Etag)}}), rg, name, g, nil)
	if err == nil {
		_, err = p.PollUntilDone(ctx, &runtime.PollUntilDoneOptions{Frequency: time.Second})
	}
	if err != nil {
		return fmt.Errorf("write network security group %s: %w", name, err)
	}
	return nil
}

// armID is the ID of a network resource of the fixture's subscription.
func (c *Cloud) armID(rg, typ, name string) string {
	return "/subscriptions/" + c.fx.SubscriptionID + "/resourceGroups/" + rg + "/providers/Microsoft.Network/" + typ + "/" + name
}

func addressOf(p *armnetwork.PublicIPAddressPropertiesFormat) string {
	if p == nil {
		return ""
	}
	return deref(p.IPAddress)
}

// isNotFound is ARM's 404.
func isNotFound(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == http.StatusNotFound
}
