package openstack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"k8s.io/apimachinery/pkg/types"

	cloudsimopenstack "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

// The drift-repair scenario's out-of-band changes: what an operator with
// the openstack CLI does to a Service's load balancer, through Octavia
// and Neutron with gophercloud (never the emulator's internals). Which
// resources are the Service's is the adapter's view (LoadBalancers,
// ServiceResources); what is deleted, and whether it is gone, is the
// APIs' answer. Octavia refuses (409) to change a load balancer while a
// change is PENDING: each write waits for it to be ACTIVE again.

var _ conformance.DriftMaker = (*Cloud)(nil)

// DeletePart deletes the listener of the lowest port of the Service's
// load balancer, and waits until Octavia has. Octavia leaves the
// listener's pool on the load balancer, with its members and monitor,
// but LoadBalancers reports the port missing until the manager makes the
// listener again.
func (c *Cloud) DeletePart(svc types.NamespacedName) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var lb cloudsimopenstack.LoadBalancerInfo
	var l *cloudsimopenstack.ListenerInfo
	for _, info := range c.serviceLBs(svc) {
		for i := range info.Listeners {
			if l == nil || info.Listeners[i].ProtocolPort < l.ProtocolPort {
				lb, l = info, &info.Listeners[i]
			}
		}
	}
	if l == nil {
		return "", fmt.Errorf("service %s has no load balancer listener", svc)
	}
	lbc, _, err := c.Clients(ctx)
	if err != nil {
		return "", err
	}
	err = whenActive(ctx, lbc, lb.ID, func() error { return listeners.Delete(ctx, lbc, l.ID).ExtractErr() })
	if err != nil {
		return "", fmt.Errorf("delete listener %s of %s: %w", l.ID, lb.Name, err)
	}
	// Octavia answers 204 and deletes it when the change leaves
	// PENDING_DELETE: until then it still serves its port.
	for {
		got, err := listeners.Get(ctx, lbc, l.ID).Extract()
		if gophercloud.ResponseCodeIs(err, http.StatusNotFound) || err == nil && got.ProvisioningStatus == "DELETED" {
			break
		}
		if err != nil {
			return "", fmt.Errorf("get listener %s of %s: %w", l.ID, lb.Name, err)
		}
		if err := pause(ctx, "listener "+l.ID+" "+got.ProvisioningStatus); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("listener of port %d (%s)", l.ProtocolPort, l.Name), nil
}

// serviceLBs are the Service's load balancers as LoadBalancers finds
// them: by the backend's tag or the name upstream and the backend give.
func (c *Cloud) serviceLBs(svc types.NamespacedName) []cloudsimopenstack.LoadBalancerInfo {
	tag, name := serviceTagPrefix+svc.String(), c.lbName(svc)
	return slices.DeleteFunc(c.emu.LoadBalancers(), func(lb cloudsimopenstack.LoadBalancerInfo) bool {
		return !slices.Contains(lb.Tags, tag) && lb.Name != name
	})
}

// DeleteLoadBalancer deletes every part ServiceResources lists: the load
// balancer with its tree (Octavia's cascade delete, once it is ACTIVE),
// the floating IPs a CCM allocated for the Service (described so;
// ServiceResources lists no other: spec.loadBalancerIP's is the user's),
// and the Service's rules in the member security group; then waits until
// Octavia has deleted the load balancer. A part already gone counts as
// deleted.
func (c *Cloud) DeleteLoadBalancer(svc types.NamespacedName) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lbc, netc, err := c.Clients(ctx)
	if err != nil {
		return err
	}
	var lbs, fips, rs []string
	for _, r := range c.ServiceResources(svc) {
		switch r.Kind {
		case cloudsimopenstack.KindLoadBalancer:
			lbs = append(lbs, r.ID)
		case cloudsimopenstack.KindFloatingIP:
			fips = append(fips, r.ID)
		case cloudsimopenstack.KindSecurityGroupRule:
			rs = append(rs, r.ID)
		case cloudsimopenstack.KindListener, cloudsimopenstack.KindPool, cloudsimopenstack.KindMember, cloudsimopenstack.KindHealthMonitor:
			// In the load balancer's cascade.
		default:
			return fmt.Errorf("service %s: do not know how to delete %s %s", svc, r.Kind, r.ID)
		}
	}
	for _, id := range lbs {
		err := whenActive(ctx, lbc, id, func() error {
			return loadbalancers.Delete(ctx, lbc, id, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr()
		})
		if err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) && !errors.Is(err, errDeleting) {
			return fmt.Errorf("service %s: delete load balancer %s: %w", svc, id, err)
		}
	}
	for _, id := range fips {
		if err := floatingips.Delete(ctx, netc, id).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return fmt.Errorf("service %s: delete floating IP %s: %w", svc, id, err)
		}
	}
	for _, id := range rs {
		if err := rules.Delete(ctx, netc, id).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return fmt.Errorf("service %s: delete security group rule %s: %w", svc, id, err)
		}
	}
	for _, id := range lbs {
		if err := waitGone(ctx, lbc, id); err != nil {
			return fmt.Errorf("service %s: %w", svc, err)
		}
	}
	return nil
}

// errDeleting is a load balancer being deleted (or gone).
var errDeleting = errors.New("being deleted")

// whenActive runs write once load balancer id is ACTIVE, and again after
// a 409 (a change by the manager made it PENDING meanwhile).
func whenActive(ctx context.Context, lbc *gophercloud.ServiceClient, id string, write func() error) error {
	for {
		lb, err := loadbalancers.Get(ctx, lbc, id).Extract()
		if err != nil {
			return err
		}
		switch lb.ProvisioningStatus {
		case "ACTIVE", "ERROR":
			err := write()
			if !gophercloud.ResponseCodeIs(err, http.StatusConflict) {
				return err
			}
		case "DELETED", "PENDING_DELETE":
			return fmt.Errorf("load balancer %s: %w", id, errDeleting)
		}
		if err := pause(ctx, "load balancer "+id+" "+lb.ProvisioningStatus); err != nil {
			return err
		}
	}
}

// waitGone waits until Octavia answers 404 for load balancer id.
func waitGone(ctx context.Context, lbc *gophercloud.ServiceClient, id string) error {
	for {
		lb, err := loadbalancers.Get(ctx, lbc, id).Extract()
		if gophercloud.ResponseCodeIs(err, http.StatusNotFound) || err == nil && lb.ProvisioningStatus == "DELETED" {
			return nil
		}
		if err != nil {
			return fmt.Errorf("get load balancer %s: %w", id, err)
		}
		if err := pause(ctx, "load balancer "+id+" "+lb.ProvisioningStatus); err != nil {
			return err
		}
	}
}

func pause(ctx context.Context, what string) error {
	select {
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", what, ctx.Err())
	case <-time.After(200 * time.Millisecond):
		return nil
	}
}
