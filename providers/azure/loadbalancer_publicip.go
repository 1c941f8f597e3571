package azure

import (
	"context"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
	v1 "k8s.io/api/core/v1"
)

// Public IPs. A Service gets its own Standard static public IP, named
// as upstream names it (naming.go) and tagged with the cluster and the Service, unless
// it names an existing one (azure-pip-name, or spec.loadBalancerIP):
// those are the user's and are never changed or deleted.

func (l *loadBalancers) publicIPID(name string) string {
	return "/subscriptions/" + l.cfg.SubscriptionID + "/resourceGroups/" + l.cfg.LoadBalancerResourceGroup +
		"/providers/Microsoft.Network/publicIPAddresses/" + name
}

// ensurePublicIP returns the Service's public IP's ID and address.
func (l *loadBalancers) ensurePublicIP(ctx context.Context, svc *v1.Service, sp *lbSpec, names lbNames) (id, address string, err error) {
	rg := l.cfg.LoadBalancerResourceGroup
	switch {
	case sp.pipName != "":
		resp, err := l.api.publicIPs.Get(ctx, rg, sp.pipName, nil)
		if isNotFound(err) {
			return "", "", fmt.Errorf("public IP %s (annotation %s) not found in resource group %s", sp.pipName, annotationPIPName, rg)
		}
		if err != nil {
			return "", "", fmt.Errorf("get public IP %s/%s: %w", rg, sp.pipName, err)
		}
		return deref(resp.ID), addressOf(&resp.PublicIPAddress), nil
	case sp.staticIP != "":
		return l.publicIPByAddress(ctx, sp.staticIP)
	}
	name := names.pip
	resp, err := l.api.publicIPs.Get(ctx, rg, name, nil)
	switch {
	case isNotFound(err):
		return l.createPublicIP(ctx, svc, name, sp.dnsLabel, "")
	case err != nil:
		return "", "", fmt.Errorf("get public IP %s/%s: %w", rg, name, err)
	}
	pip := &resp.PublicIPAddress
	if !l.ownsPublicIP(pip, svc) {
		return "", "", fmt.Errorf("public IP %s/%s exists but is not tagged %s=%s, %s=%s; it is not this Service's to use", rg, name, tagCluster, l.clusterID, tagService, serviceKey(svc))
	}
	if dnsLabelOf(pip) != sp.dnsLabel {
		return l.createPublicIP(ctx, svc, name, sp.dnsLabel, deref(pip.Etag))
	}
	return deref(pip.ID), addressOf(pip), nil
}

func addressOf(p *armnetwork.PublicIPAddress) string {
	if p.Properties == nil {
		return ""
	}
	return deref(p.Properties.IPAddress)
}

func dnsLabelOf(p *armnetwork.PublicIPAddress) string {
	if p.Properties == nil || p.Properties.DNSSettings == nil {
		return ""
	}
	return deref(p.Properties.DNSSettings.DomainNameLabel)
}

// ownsPublicIP says the manager made pip for svc.
func (l *loadBalancers) ownsPublicIP(pip *armnetwork.PublicIPAddress, svc *v1.Service) bool {
	return deref(pip.Tags[tagCluster]) == l.clusterID && deref(pip.Tags[tagService]) == serviceKey(svc)
}

// createPublicIP creates (etag "") or updates the Service's own public IP.
func (l *loadBalancers) createPublicIP(ctx context.Context, svc *v1.Service, name, dnsLabel, etag string) (id, address string, err error) {
	rg := l.cfg.LoadBalancerResourceGroup
	pip := armnetwork.PublicIPAddress{
		Location: to.Ptr(l.cfg.Location),
		SKU:      &armnetwork.PublicIPAddressSKU{Name: to.Ptr(armnetwork.PublicIPAddressSKUNameStandard), Tier: to.Ptr(armnetwork.PublicIPAddressSKUTierRegional)},
		Tags:     map[string]*string{tagCluster: to.Ptr(l.clusterID), tagService: to.Ptr(serviceKey(svc))},
		Properties: &armnetwork.PublicIPAddressPropertiesFormat{
			PublicIPAllocationMethod: to.Ptr(armnetwork.IPAllocationMethodStatic),
			PublicIPAddressVersion:   to.Ptr(armnetwork.IPVersionIPv4),
		},
	}
	if dnsLabel != "" {
		pip.Properties.DNSSettings = &armnetwork.PublicIPAddressDNSSettings{DomainNameLabel: to.Ptr(dnsLabel)}
	}
	p, err := l.api.publicIPs.BeginCreateOrUpdate(withPrecondition(ctx, etag), rg, name, pip, nil)
	if err != nil {
		return "", "", fmt.Errorf("create public IP %s/%s: %w", rg, name, err)
	}
	resp, err := p.PollUntilDone(ctx, pollOptions)
	if err != nil {
		return "", "", fmt.Errorf("create public IP %s/%s: %w", rg, name, err)
	}
	return deref(resp.ID), addressOf(&resp.PublicIPAddress), nil
}

// publicIPByAddress finds the existing public IP with address in the load
// balancer's resource group (spec.loadBalancerIP).
func (l *loadBalancers) publicIPByAddress(ctx context.Context, address string) (id, addr string, err error) {
	rg := l.cfg.LoadBalancerResourceGroup
	p := l.api.publicIPs.NewListPager(rg, nil)
	for p.More() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return "", "", fmt.Errorf("list public IPs in %s: %w", rg, err)
		}
		for _, pip := range page.Value {
			if addressOf(pip) == address {
				return deref(pip.ID), address, nil
			}
		}
	}
	return "", "", fmt.Errorf("spec.loadBalancerIP %s: no public IP in resource group %s has this address; create a Standard static public IP there first", address, rg)
}

// releasePublicIP deletes the Service's own public IP, if the manager made
// it; one that is gone, or not the manager's, is left alone.
func (l *loadBalancers) releasePublicIP(ctx context.Context, svc *v1.Service, name string) error {
	rg := l.cfg.LoadBalancerResourceGroup
	resp, err := l.api.publicIPs.Get(ctx, rg, name, nil)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get public IP %s/%s: %w", rg, name, err)
	}
	if !l.ownsPublicIP(&resp.PublicIPAddress, svc) {
		return nil
	}
	p, err := l.api.publicIPs.BeginDelete(withPrecondition(ctx, deref(resp.Etag)), rg, name, nil)
	if err == nil {
		_, err = p.PollUntilDone(ctx, pollOptions)
	}
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("delete public IP %s/%s: %w", rg, name, err)
	}
	return nil
}
