package azure

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
	v1 "k8s.io/api/core/v1"
)

// Public IPs. A Service gets its own Standard static public IP, named
// as upstream names it (naming.go) and tagged with the cluster and the Service, unless
// it names an existing one (azure-pip-name, or spec.loadBalancerIP):
// those are the user's and are never changed or deleted.

func (l *loadBalancers) publicIPID(rg, name string) string {
	return "/subscriptions/" + l.cfg.SubscriptionID + "/resourceGroups/" + rg +
		"/providers/Microsoft.Network/publicIPAddresses/" + name
}

// pipResourceGroup is where the Service's public IP is, as upstream
// keeps it (cloud-provider-azure pkg/provider/azure_loadbalancer.go:4057-4066):
// the azure-load-balancer-resource-group annotation's group, else
// resourceGroup.
func (l *loadBalancers) pipResourceGroup(svc *v1.Service) string {
	if v, _ := annotationPIPResourceGroup.Lookup(svc); strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v)
	}
	return l.cfg.ResourceGroup
}

// pipGroups are the groups the manager's own public IP for the Service
// may be in: upstream's, then loadBalancerResourceGroup, where versions
// of this manager before 2026-11-25 made it.
func (l *loadBalancers) pipGroups(svc *v1.Service) []string {
	rg := l.pipResourceGroup(svc)
	if strings.EqualFold(rg, l.cfg.LoadBalancerResourceGroup) {
		return []string{rg}
	}
	return []string{rg, l.cfg.LoadBalancerResourceGroup}
}

// ensurePublicIP returns the ID and address of the Service's public IP of
// family f.
func (l *loadBalancers) ensurePublicIP(ctx context.Context, svc *v1.Service, sp *lbSpec, f famSpec, names lbNames) (id, address string, err error) {
	rg := l.pipResourceGroup(svc)
	switch {
	case f.pipName != "":
		resp, err := l.api.publicIPs.Get(ctx, rg, f.pipName, nil)
		if isNotFound(err) {
			return "", "", fmt.Errorf("public IP %s (the Service's %s public IP name) not found in resource group %s", f.pipName, familyName(f.v6), rg)
		}
		if err != nil {
			return "", "", fmt.Errorf("get public IP %s/%s: %w", rg, f.pipName, err)
		}
		if err := checkPIPVersion(&resp.PublicIPAddress, f.v6); err != nil {
			return "", "", err
		}
		return deref(resp.ID), addressOf(&resp.PublicIPAddress), nil
	case f.staticIP != "":
		pip, err := l.publicIPByAddress(ctx, rg, f.staticIP)
		if err != nil {
			return "", "", err
		}
		if err := l.bindPublicIP(ctx, rg, pip, svc, true); err != nil {
			return "", "", err
		}
		return deref(pip.ID), f.staticIP, nil
	}
	name := names.pip
	var pip *armnetwork.PublicIPAddress
	for _, g := range l.pipGroups(svc) {
		resp, err := l.api.publicIPs.Get(ctx, g, name, nil)
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return "", "", fmt.Errorf("get public IP %s/%s: %w", g, name, err)
		}
		pip, rg = &resp.PublicIPAddress, g
		break
	}
	if pip == nil {
		return l.createPublicIP(ctx, svc, rg, name, sp, f.v6)
	}
	if !l.ownsPublicIP(pip, svc) {
		return "", "", fmt.Errorf("public IP %s/%s exists but is not tagged %s=%s, %s=%s; it is not this Service's to use", rg, name, tagCluster, l.clusterID, tagService, serviceKey(svc))
	}
	if err := checkPIPVersion(pip, f.v6); err != nil {
		return "", "", err
	}
	probe := maps.Clone(pip.Tags)
	if dnsLabelOf(pip) != sp.dnsLabel || l.tags.reconcile(&probe, sp.pipTags) {
		return l.updatePublicIP(ctx, rg, pip, sp)
	}
	return deref(pip.ID), addressOf(pip), nil
}

// updatePublicIP writes the Service's DNS label and tags onto the public
// IP as read, so what the manager does not set (zones, IP tags, other
// tags, upstream's too) is kept.
func (l *loadBalancers) updatePublicIP(ctx context.Context, rg string, pip *armnetwork.PublicIPAddress, sp *lbSpec) (id, address string, err error) {
	name := deref(pip.Name)
	if pip.Properties == nil {
		pip.Properties = &armnetwork.PublicIPAddressPropertiesFormat{}
	}
	switch {
	case sp.dnsLabel != "":
		if pip.Properties.DNSSettings == nil {
			pip.Properties.DNSSettings = &armnetwork.PublicIPAddressDNSSettings{}
		}
		pip.Properties.DNSSettings.DomainNameLabel = to.Ptr(sp.dnsLabel)
	default:
		pip.Properties.DNSSettings = nil
	}
	l.tags.reconcile(&pip.Tags, sp.pipTags)
	p, err := l.api.publicIPs.BeginCreateOrUpdate(withPrecondition(ctx, deref(pip.Etag)), rg, name, *pip, nil)
	if err != nil {
		return "", "", fmt.Errorf("update public IP %s/%s: %w", rg, name, err)
	}
	resp, err := p.PollUntilDone(ctx, pollOptions)
	if err != nil {
		return "", "", fmt.Errorf("update public IP %s/%s: %w", rg, name, err)
	}
	return deref(resp.ID), addressOf(&resp.PublicIPAddress), nil
}

// checkPIPVersion refuses a public IP of the other family: ARM changes no
// existing public IP's version, and a frontend of the wrong one would
// give the Service an address of a family it does not have.
func checkPIPVersion(p *armnetwork.PublicIPAddress, v6 bool) error {
	if p.Properties == nil {
		return nil
	}
	got := deref(p.Properties.PublicIPAddressVersion)
	if got == "" {
		got = armnetwork.IPVersionIPv4
	}
	if want := armnetwork.IPVersion(familyName(v6)); !strings.EqualFold(string(got), string(want)) {
		return fmt.Errorf("public IP %s is %s; the Service's %s frontend needs an %s one", deref(p.Name), got, want, want)
	}
	return nil
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

// ownsPublicIP says pip was made for svc, by this manager or the upstream
// CCM, whose test this is (azure_loadbalancer.go:4153-4209
// serviceOwnsPublicIP): the service tag (k8s-azure-service, or the legacy
// "service") lists the Service, comma-separated when Services share it,
// and the cluster tag (k8s-azure-cluster-name, or the legacy
// "kubernetes-cluster-name") is absent or this cluster's. A public IP
// without a service tag is a user's.
func (l *loadBalancers) ownsPublicIP(pip *armnetwork.PublicIPAddress, svc *v1.Service) bool {
	return len(pipServices(pip)) > 0 && slices.ContainsFunc(pipServices(pip), func(s string) bool { return strings.EqualFold(s, serviceKey(svc)) }) &&
		l.pipClusterMatches(pip)
}

// pipServices are the Services the public IP's service tag names.
func pipServices(pip *armnetwork.PublicIPAddress) []string {
	v, ok := pip.Tags[tagService]
	if !ok {
		v = pip.Tags[tagLegacyService]
	}
	var out []string
	for _, s := range strings.Split(deref(v), ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func (l *loadBalancers) pipClusterMatches(pip *armnetwork.PublicIPAddress) bool {
	v, ok := pip.Tags[tagCluster]
	if !ok {
		v, ok = pip.Tags[tagLegacyCluster]
	}
	return !ok || strings.EqualFold(deref(v), l.clusterID)
}

// createPublicIP creates the Service's own public IP of a family in
// resource group rg: Standard, static (which ARM requires of a Standard
// IPv6 one too).
func (l *loadBalancers) createPublicIP(ctx context.Context, svc *v1.Service, rg, name string, sp *lbSpec, v6 bool) (id, address string, err error) {
	own := map[string]string{}
	dnsLabel := ""
	if sp != nil {
		maps.Copy(own, sp.pipTags)
		dnsLabel = sp.dnsLabel
	}
	own[tagCluster], own[tagService] = l.clusterID, serviceKey(svc)
	tags := l.tags.fresh(own)
	pip := armnetwork.PublicIPAddress{
		Location: to.Ptr(l.cfg.Location),
		SKU:      &armnetwork.PublicIPAddressSKU{Name: to.Ptr(armnetwork.PublicIPAddressSKUNameStandard), Tier: to.Ptr(armnetwork.PublicIPAddressSKUTierRegional)},
		Tags:     tags,
		Properties: &armnetwork.PublicIPAddressPropertiesFormat{
			PublicIPAllocationMethod: to.Ptr(armnetwork.IPAllocationMethodStatic),
			PublicIPAddressVersion:   to.Ptr(armnetwork.IPVersion(familyName(v6))),
		},
	}
	if dnsLabel != "" {
		pip.Properties.DNSSettings = &armnetwork.PublicIPAddressDNSSettings{DomainNameLabel: to.Ptr(dnsLabel)}
	}
	p, err := l.api.publicIPs.BeginCreateOrUpdate(withPrecondition(ctx, ""), rg, name, pip, nil)
	if err != nil {
		return "", "", fmt.Errorf("create public IP %s/%s: %w", rg, name, err)
	}
	resp, err := p.PollUntilDone(ctx, pollOptions)
	if err != nil {
		return "", "", fmt.Errorf("create public IP %s/%s: %w", rg, name, err)
	}
	return deref(resp.ID), addressOf(&resp.PublicIPAddress), nil
}

// publicIPByAddress finds the existing public IP with address in resource
// group rg (spec.loadBalancerIP, azure-load-balancer-ipv4).
func (l *loadBalancers) publicIPByAddress(ctx context.Context, rg, address string) (*armnetwork.PublicIPAddress, error) {
	p := l.api.publicIPs.NewListPager(rg, nil)
	for p.More() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list public IPs in %s: %w", rg, err)
		}
		for _, pip := range page.Value {
			if addressOf(pip) == address {
				return pip, nil
			}
		}
	}
	return nil, fmt.Errorf("the Service's address %s: %w in resource group %s; create a Standard static public IP there first", address, errNoPublicIP, rg)
}

// errNoPublicIP is publicIPByAddress finding none.
var errNoPublicIP = errors.New("no public IP has this address")

// bindPublicIP adds the Service to (bind) or takes it from the Services a
// public IP the manager made lists, as upstream's bindServicesToPIP
// (azure_loadbalancer.go:4257-4303): another Service that asks for its
// address shares it, and it goes only with the last of them. A public IP
// the user made (no service tag) or another cluster's is left alone.
// Unbinding the last Service deletes it.
func (l *loadBalancers) bindPublicIP(ctx context.Context, rg string, pip *armnetwork.PublicIPAddress, svc *v1.Service, bind bool) error {
	svcs := pipServices(pip)
	if len(svcs) == 0 || !l.pipClusterMatches(pip) {
		return nil
	}
	key := serviceKey(svc)
	has := slices.ContainsFunc(svcs, func(s string) bool { return strings.EqualFold(s, key) })
	switch {
	case bind == has:
		return nil
	case bind:
		svcs = append(svcs, key)
	default:
		svcs = slices.DeleteFunc(svcs, func(s string) bool { return strings.EqualFold(s, key) })
	}
	name := deref(pip.Name)
	if len(svcs) == 0 {
		p, err := l.api.publicIPs.BeginDelete(withPrecondition(ctx, deref(pip.Etag)), rg, name, nil)
		if err == nil {
			_, err = p.PollUntilDone(ctx, pollOptions)
		}
		if err != nil && !isNotFound(err) {
			return fmt.Errorf("delete public IP %s/%s: %w", rg, name, err)
		}
		return nil
	}
	if pip.Tags == nil {
		pip.Tags = map[string]*string{}
	}
	key2 := tagService
	if _, ok := pip.Tags[tagService]; !ok {
		if _, legacy := pip.Tags[tagLegacyService]; legacy {
			key2 = tagLegacyService
		}
	}
	pip.Tags[key2] = to.Ptr(strings.Join(svcs, ","))
	p, err := l.api.publicIPs.BeginCreateOrUpdate(withPrecondition(ctx, deref(pip.Etag)), rg, name, *pip, nil)
	if err == nil {
		_, err = p.PollUntilDone(ctx, pollOptions)
	}
	if err != nil {
		return fmt.Errorf("update public IP %s/%s (the Services sharing it): %w", rg, name, err)
	}
	return nil
}

// releasePublicIP deletes the Service's own public IP, if the manager made
// it; one that is gone, or not the manager's, is left alone.
func (l *loadBalancers) releasePublicIP(ctx context.Context, svc *v1.Service, name string) error {
	for _, rg := range l.pipGroups(svc) {
		if err := l.releasePublicIPIn(ctx, svc, rg, name); err != nil {
			return err
		}
	}
	return nil
}

func (l *loadBalancers) releasePublicIPIn(ctx context.Context, svc *v1.Service, rg, name string) error {
	resp, err := l.api.publicIPs.Get(ctx, rg, name, nil)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get public IP %s/%s: %w", rg, name, err)
	}
	// One shared with other Services (upstream lists them all in its tag)
	// stays theirs: the Service only leaves the list.
	if !l.ownsPublicIP(&resp.PublicIPAddress, svc) {
		return nil
	}
	if len(pipServices(&resp.PublicIPAddress)) > 1 {
		return l.bindPublicIP(ctx, rg, &resp.PublicIPAddress, svc, false)
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

// isOwnPIPID says id is the manager's own public IP of the Service, by
// name, in one of the groups it may be in.
func (l *loadBalancers) isOwnPIPID(svc *v1.Service, id, name string) bool {
	for _, rg := range l.pipGroups(svc) {
		if strings.EqualFold(id, l.publicIPID(rg, name)) {
			return true
		}
	}
	return false
}
