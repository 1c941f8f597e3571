package gce

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"

	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

var _ conformance.UserAddresser = (*Cloud)(nil)

// userAddresses numbers the addresses ReserveUserAddress names, so that
// every one a process reserves has a name of its own: a person picks
// one no address in the region has yet.
var userAddresses atomic.Int64

// ReserveUserAddress reserves a regional static external address as
// `gcloud compute addresses create <name> --region <region>` does: an
// addresses.insert with a name alone (no description, so nothing marks
// it as a Service's or a cluster's), waited for, then read back for the
// IP Compute Engine picked. A Service names it in spec.loadBalancerIP,
// which the upstream CCM, and so this backend, use as the forwarding
// rule's address without ever releasing it.
func (c *Cloud) ReserveUserAddress() (conformance.UserAddress, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	api, err := c.upstreamClients(ctx)
	if err != nil {
		return conformance.UserAddress{}, err
	}
	defer api.close()
	fx := c.fx
	name := fmt.Sprintf("user-address-%d", userAddresses.Add(1))
	if err := api.wait(ctx, "reserve address "+name)(api.addresses.Insert(ctx, &computepb.InsertAddressRequest{Project: fx.Project, Region: fx.Region,
		AddressResource: &computepb.Address{Name: proto.String(name)}})); err != nil {
		return conformance.UserAddress{}, err
	}
	a, err := api.addresses.Get(ctx, &computepb.GetAddressRequest{Project: fx.Project, Region: fx.Region, Address: name})
	if err != nil {
		return conformance.UserAddress{}, fmt.Errorf("get address %s: %w", name, err)
	}
	ip := a.GetAddress()
	if ip == "" {
		return conformance.UserAddress{}, fmt.Errorf("address %s has no IP", name)
	}
	return conformance.UserAddress{IP: ip, Use: func(svc *corev1.Service) { svc.Spec.LoadBalancerIP = ip }}, nil
}
