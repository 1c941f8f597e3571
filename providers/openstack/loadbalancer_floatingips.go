package openstack

import (
	"context"
	"fmt"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// Floating IPs. Ours are the ones with fipDescription's exact text: this
// controller (or the upstream CCM, which words it the same) allocated them
// for that Service, so they are released with it unless the Service says
// keep-floatingip. Any other floating IP, such as spec.loadBalancerIP's,
// is only ever associated and disassociated, never released.

func listFloatingIPs(ctx context.Context, l *loadBalancers, opts floatingips.ListOpts) ([]floatingips.FloatingIP, error) {
	pages, err := floatingips.List(l.api.network, opts).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list floating IPs: %w", err)
	}
	return floatingips.ExtractFloatingIPs(pages)
}

// floatingIPOnPort is the floating IP associated with the VIP port, if any.
func (l *loadBalancers) floatingIPOnPort(ctx context.Context, portID string) (*floatingips.FloatingIP, error) {
	if portID == "" {
		return nil, nil
	}
	list, err := listFloatingIPs(ctx, l, floatingips.ListOpts{PortID: portID})
	if err != nil || len(list) == 0 {
		return nil, err
	}
	return &list[0], nil
}

// ownedFloatingIPs are the floating IPs allocated for the Service.
func (l *loadBalancers) ownedFloatingIPs(ctx context.Context, svc *v1.Service) ([]floatingips.FloatingIP, error) {
	return listFloatingIPs(ctx, l, floatingips.ListOpts{Description: fipDescription(l.clusterID, svc)})
}

// ensureFloatingIP gives an external Service's VIP port its floating IP:
// spec.loadBalancerIP's existing one, else one allocated from the
// floating network. An internal Service gets none, and one we allocated
// earlier is released (kept, disassociated, with keep-floatingip).
//
// It returns the floating IP now on the VIP port ("" for internal). A
// load balancer just created (fresh) has none yet, so nothing is read.
func (l *loadBalancers) ensureFloatingIP(ctx context.Context, svc *v1.Service, opts *lbOptions, lb *loadbalancers.LoadBalancer, fresh bool) (string, error) {
	logger := klog.FromContext(ctx)
	var current *floatingips.FloatingIP
	if !fresh {
		var err error
		if current, err = l.floatingIPOnPort(ctx, lb.VipPortID); err != nil {
			return "", err
		}
	}
	ours := fipDescription(l.clusterID, svc)
	if opts.internal {
		if current == nil {
			return "", nil
		}
		if current.Description == ours && !opts.keepFloatingIP {
			logger.Info("Releasing the floating IP of a Service that became internal", "floatingIP", current.FloatingIP)
			return "", ignoreNotFound(floatingips.Delete(ctx, l.api.network, current.ID).Err)
		}
		return "", l.disassociate(ctx, current)
	}
	if current != nil && (opts.loadBalancerIP == "" || current.FloatingIP == opts.loadBalancerIP) {
		return current.FloatingIP, nil
	}
	if current != nil {
		// spec.loadBalancerIP changed: move to the asked-for address.
		if current.Description == ours && !opts.keepFloatingIP {
			if err := ignoreNotFound(floatingips.Delete(ctx, l.api.network, current.ID).Err); err != nil {
				return "", fmt.Errorf("release floating IP %s: %w", current.FloatingIP, err)
			}
		} else if err := l.disassociate(ctx, current); err != nil {
			return "", err
		}
	}
	if opts.loadBalancerIP != "" {
		return opts.loadBalancerIP, l.associateExisting(ctx, opts, lb)
	}
	// A floating IP allocated for this Service before a crash, not yet
	// (or no longer) associated, is reused rather than leaked.
	owned, err := l.ownedFloatingIPs(ctx, svc)
	if err != nil {
		return "", err
	}
	for _, f := range owned {
		if f.PortID == "" && f.FloatingNetworkID == opts.floatingNetworkID {
			port := lb.VipPortID
			if err := floatingips.Update(ctx, l.api.network, f.ID, floatingips.UpdateOpts{PortID: &port}).Err; err != nil {
				return "", fmt.Errorf("associate floating IP %s with VIP port %s: %w", f.FloatingIP, port, err)
			}
			logger.Info("Associated the Service's floating IP again", "floatingIP", f.FloatingIP)
			return f.FloatingIP, nil
		}
	}
	create := floatingips.CreateOpts{
		FloatingNetworkID: opts.floatingNetworkID, SubnetID: opts.floatingSubnetID,
		PortID: lb.VipPortID, Description: ours,
	}
	if opts.floatingSubnet != nil {
		f, err := l.allocateInMatchingSubnet(ctx, opts, create)
		if err != nil {
			return "", err
		}
		return f.FloatingIP, nil
	}
	f, err := floatingips.Create(ctx, l.api.network, create).Extract()
	if err != nil {
		return "", fmt.Errorf("allocate a floating IP on network %s: %w", opts.floatingNetworkID, err)
	}
	logger.Info("Allocated floating IP", "floatingIP", f.FloatingIP, "id", f.ID)
	return f.FloatingIP, nil
}

// associateExisting points spec.loadBalancerIP's floating IP at the VIP
// port. It must exist in the project and be free (or already ours).
func (l *loadBalancers) associateExisting(ctx context.Context, opts *lbOptions, lb *loadbalancers.LoadBalancer) error {
	list, err := listFloatingIPs(ctx, l, floatingips.ListOpts{FloatingIP: opts.loadBalancerIP})
	if err != nil {
		return err
	}
	if len(list) == 0 {
		return fmt.Errorf("spec.loadBalancerIP %s is not a floating IP of the project; allocate it first (openstack floating ip create --floating-ip-address %s <network>)", opts.loadBalancerIP, opts.loadBalancerIP)
	}
	f := list[0]
	if f.PortID == lb.VipPortID {
		return nil
	}
	if f.PortID != "" {
		return fmt.Errorf("spec.loadBalancerIP %s is in use by port %s", opts.loadBalancerIP, f.PortID)
	}
	port := lb.VipPortID
	if err := floatingips.Update(ctx, l.api.network, f.ID, floatingips.UpdateOpts{PortID: &port}).Err; err != nil {
		return fmt.Errorf("associate floating IP %s with VIP port %s: %w", f.FloatingIP, port, err)
	}
	klog.FromContext(ctx).Info("Associated spec.loadBalancerIP's floating IP", "floatingIP", f.FloatingIP)
	return nil
}

func (l *loadBalancers) disassociate(ctx context.Context, f *floatingips.FloatingIP) error {
	none := "" // sent as null: disassociate
	err := floatingips.Update(ctx, l.api.network, f.ID, floatingips.UpdateOpts{PortID: &none}).Err
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("disassociate floating IP %s: %w", f.FloatingIP, err)
	}
	return nil
}
