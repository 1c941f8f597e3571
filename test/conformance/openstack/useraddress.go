package openstack

import (
	"context"
	"fmt"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	corev1 "k8s.io/api/core/v1"

	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

var _ conformance.UserAddresser = (*Cloud)(nil)

// ReserveUserAddress allocates a floating IP on the fixture's external
// network as `openstack floating ip create <network>` does: a Neutron
// create with the network alone, no port and no description (so not the
// "Floating IP for Kubernetes external service ..." the CCMs describe
// theirs with, which is what would make it a Service's). A Service names
// it in spec.loadBalancerIP; the manager associates it with the load
// balancer's VIP port and, like the upstream CCM, only disassociates it
// when the Service goes.
func (c *Cloud) ReserveUserAddress() (conformance.UserAddress, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, netc, err := c.Clients(ctx)
	if err != nil {
		return conformance.UserAddress{}, err
	}
	fip, err := floatingips.Create(ctx, netc, floatingips.CreateOpts{FloatingNetworkID: c.fx.ExternalNetworkID}).Extract()
	if err != nil {
		return conformance.UserAddress{}, fmt.Errorf("create floating IP on %s: %w", c.fx.ExternalNetworkID, err)
	}
	ip := fip.FloatingIP
	if ip == "" {
		return conformance.UserAddress{}, fmt.Errorf("floating IP %s has no address", fip.ID)
	}
	return conformance.UserAddress{IP: ip, Use: func(svc *corev1.Service) { svc.Spec.LoadBalancerIP = ip }}, nil
}
