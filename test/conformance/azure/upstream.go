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
//
// A public dual-stack Service gets all of that twice, once per family
// (reconcileLoadBalancer, getExpectedLBRule per family), the IPv6 half's
// names with "-IPv6" (getResourceByIPFamily): the Standard static IPv6
// public IP "<cluster>-<base>-IPv6", the frontend "<base>-IPv6" on it,
// the rules and probes "<base>-TCP-<port>-IPv6", the pool
// "<cluster>-IPv6" (getBackendPoolName) that each backend's first IPv6 IP
// configuration names (EnsureHostInPool, getIPConfigByIPFamily), and the
// rule "k8s-azure-lb_allow_IPv6_<same md5>" admitting the Internet to the
// IPv6 address. The IPv4 frontend comes first (reconcileFrontendIPConfigs
// adds it first), and so does its address in the status, which upstream
// lists in frontend order (getServiceLoadBalancerStatus), whatever the
// Service's family order. An internal dual-stack Service, whose IPv6 half
// upstream serves without floating IP, is not modelled.
func (c *Cloud) MakeUpstreamLoadBalancer(svc *corev1.Service, clusterName string, backends []conformance.Instance) (conformance.UpstreamLoadBalancer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f, err := c.clients()
	if err != nil {
		return conformance.UpstreamLoadBalancer{}, err
	}
	internal := strings.EqualFold(svc.Annotations[annotationInternal], "true")
	families := upstreamFamilies(svc)
	if internal && len(families) > 1 {
		return conformance.UpstreamLoadBalancer{}, fmt.Errorf("service %s/%s: an internal dual-stack load balancer of the upstream CCM is not modelled", svc.Namespace, svc.Name)
	}
	base := cloudprovider.DefaultLoadBalancerName(svc)
	rg := c.fx.ResourceGroup
	lbName := clusterName
	if internal {
		lbName += "-internal"
	}
	lbID := c.armID(rg, "loadBalancers", lbName)
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

	// halves are the Service's families, IPv4 first, with their names.
	type half struct {
		v6                    bool
		suffix, feID, poolID  string
		address, pool, feName string
	}
	var halves []*half
	for _, v6 := range []bool{false, true} {
		if !slices.Contains(families, v6) {
			continue
		}
		h := &half{v6: v6, pool: clusterName}
		if v6 {
			// Upstream's IPv6 pool is "<cluster>-IPv6" even for an
			// IPv6-only Service (getBackendPoolName).
			h.pool += upstreamIPv6Suffix
		}
		if v6 && len(families) > 1 {
			h.suffix = upstreamIPv6Suffix
		}
		h.feName = base + h.suffix
		h.feID = lbID + "/frontendIPConfigurations/" + h.feName
		h.poolID = lbID + "/backendAddressPools/" + h.pool
		halves = append(halves, h)
	}

	var fes []*armnetwork.FrontendIPConfiguration
	for _, h := range halves {
		fe := &armnetwork.FrontendIPConfiguration{Name: to.Ptr(h.feName), ID: to.Ptr(h.feID)}
		if internal {
			fe.Properties = &armnetwork.FrontendIPConfigurationPropertiesFormat{
				Subnet:                    &armnetwork.Subnet{ID: to.Ptr(c.fx.SubnetID)},
				PrivateIPAllocationMethod: to.Ptr(armnetwork.IPAllocationMethodDynamic),
			}
			if h.v6 {
				fe.Properties.PrivateIPAddressVersion = to.Ptr(armnetwork.IPVersionIPv6)
			}
			fe.Zones = zones
			fes = append(fes, fe)
			continue
		}
		// The cut is before the suffix (getPublicIPName).
		name := clusterName + "-" + base
		if len(name) > 75 {
			name = name[:75]
		}
		name += h.suffix
		version := armnetwork.IPVersionIPv4
		if h.v6 {
			version = armnetwork.IPVersionIPv6
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
				PublicIPAddressVersion:   to.Ptr(version),
			},
		}, nil)
		if err != nil {
			return conformance.UpstreamLoadBalancer{}, fmt.Errorf("create public IP %s: %w", name, err)
		}
		pip, err := p.PollUntilDone(ctx, &runtime.PollUntilDoneOptions{Frequency: time.Second})
		if err != nil {
			return conformance.UpstreamLoadBalancer{}, fmt.Errorf("create public IP %s: %w", name, err)
		}
		h.address = addressOf(pip.Properties)
		fe.Properties = &armnetwork.FrontendIPConfigurationPropertiesFormat{PublicIPAddress: &armnetwork.PublicIPAddress{ID: pip.ID}}
		fes = append(fes, fe)
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
	for _, h := range halves {
		if !slices.ContainsFunc(lp.BackendAddressPools, func(p *armnetwork.BackendAddressPool) bool { return strings.EqualFold(deref(p.Name), h.pool) }) {
			lp.BackendAddressPools = append(lp.BackendAddressPools, &armnetwork.BackendAddressPool{
				Name: to.Ptr(h.pool), ID: to.Ptr(h.poolID), Properties: &armnetwork.BackendAddressPoolPropertiesFormat{},
			})
		}
	}
	lp.FrontendIPConfigurations = append(lp.FrontendIPConfigurations, fes...)
	for _, h := range halves {
		for _, port := range svc.Spec.Ports {
			name := fmt.Sprintf("%s-%s-%d%s", base, port.Protocol, port.Port, h.suffix)
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
				FrontendIPConfiguration: &armnetwork.SubResource{ID: to.Ptr(h.feID)},
				BackendAddressPool:      &armnetwork.SubResource{ID: to.Ptr(h.poolID)},
				Probe:                   &armnetwork.SubResource{ID: to.Ptr(probeID)},
			}})
		}
	}
	p, err := lbs.BeginCreateOrUpdate(write, rg, lbName, lb, nil)
	if err != nil {
		return conformance.UpstreamLoadBalancer{}, fmt.Errorf("write load balancer %s: %w", lbName, err)
	}
	written, err := p.PollUntilDone(ctx, &runtime.PollUntilDoneOptions{Frequency: time.Second})
	if err != nil {
		return conformance.UpstreamLoadBalancer{}, fmt.Errorf("write load balancer %s: %w", lbName, err)
	}
	var status corev1.LoadBalancerStatus
	for _, h := range halves {
		if internal {
			for _, got := range written.Properties.FrontendIPConfigurations {
				if strings.EqualFold(deref(got.Name), h.feName) && got.Properties != nil {
					h.address = deref(got.Properties.PrivateIPAddress)
				}
			}
		}
		if h.address == "" {
			return conformance.UpstreamLoadBalancer{}, fmt.Errorf("load balancer %s: frontend %s has no address", lbName, h.feName)
		}
		status.Ingress = append(status.Ingress, corev1.LoadBalancerIngress{IP: h.address})
	}

	for _, h := range halves {
		for _, b := range backends {
			if err := c.joinPool(ctx, f.NewInterfacesClient(), b.ID, h.poolID, h.v6); err != nil {
				return conformance.UpstreamLoadBalancer{}, err
			}
		}
	}
	if !internal {
		for _, h := range halves {
			if err := c.allowInternet(ctx, f.NewSecurityGroupsClient(), svc.Spec.Ports, h.address, h.v6); err != nil {
				return conformance.UpstreamLoadBalancer{}, err
			}
		}
	}
	return conformance.UpstreamLoadBalancer{
		ID:        deref(written.ID) + "/frontendIPConfigurations/" + halves[0].feName,
		Status:    status,
		Exclusive: []string{kindLoadBalancer, kindFrontend, kindPool, kindPublicIP},
		Kept:      []string{kindFrontend, kindRule, kindProbe, kindPool, kindPublicIP, kindSecurityRule},
	}, nil
}

// upstreamIPv6Suffix ends the names of a dual-stack Service's IPv6 parts
// and the IPv6 pool's (consts.IPVersionIPv6String).
const upstreamIPv6Suffix = "-IPv6"

// upstreamFamilies are the Service's families as upstream's
// getIPFamiliesEnabled reads spec.ipFamilies (true for IPv6): IPv4 when
// it lists none.
func upstreamFamilies(svc *corev1.Service) []bool {
	var out []bool
	for _, f := range svc.Spec.IPFamilies {
		out = append(out, f == corev1.IPv6Protocol)
	}
	if len(out) == 0 {
		out = []bool{false}
	}
	return out
}

// joinPool puts the VM's primary NIC's IP configuration of the family in
// the pool, as upstream's EnsureHostInPool (NetworkInterfaces get, then
// CreateOrUpdate): the primary configuration for IPv4, the first IPv6
// one for IPv6 (getIPConfigByIPFamily).
func (c *Cloud) joinPool(ctx context.Context, nics *armnetwork.InterfacesClient, vmName, poolID string, v6 bool) error {
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
		if v6 {
			if cfg == nil && ip.Properties != nil && ip.Properties.PrivateIPAddress != nil && deref(ip.Properties.PrivateIPAddressVersion) == armnetwork.IPVersionIPv6 {
				cfg = ip
			}
			continue
		}
		if cfg == nil || (ip.Properties != nil && deref(ip.Properties.Primary)) {
			cfg = ip
		}
	}
	if cfg == nil || cfg.Properties == nil {
		return fmt.Errorf("network interface %s has no IP configuration (IPv6 %v)", name, v6)
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
// does for a public Service with floating IP: one rule per family,
// protocol, source and port set, named by the family and their MD5 and
// shared by every Service with the same, whose destinations it lists.
// The service tag Internet is the source of either family
// (accesscontrol.go).
func (c *Cloud) allowInternet(ctx context.Context, nsgs *armnetwork.SecurityGroupsClient, ports []corev1.ServicePort, address string, v6 bool) error {
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
	if v6 {
		ruleName = AllowRuleNameIPv6("Tcp", []string{"Internet"}, nums...)
	}
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
