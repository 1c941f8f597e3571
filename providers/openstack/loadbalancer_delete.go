package openstack

import (
	"context"
	"fmt"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	v1 "k8s.io/api/core/v1"
	"k8s.io/cloud-provider/api"
	"k8s.io/klog/v2"
)

// delete removes what the Service's load balancer is made of, in an order
// that converges after a crash at any point: the floating IPs we allocated
// first (found by description, so one whose load balancer is already gone
// is found too), then the load balancer with everything under it
// (cascade), then the Service's security group rules. A floating IP we did
// not allocate is only disassociated, and Neutron does that itself when
// the VIP port goes.
func (l *loadBalancers) delete(ctx context.Context, svc *v1.Service) error {
	logger := klog.FromContext(ctx)
	keep, _, err := annotationKeepFloatingIP.Bool(svc)
	if err != nil {
		// A malformed annotation must not block deletion: keeping the
		// address is the safe reading.
		logger.Info("Keeping the floating IP: the keep-floatingip annotation is malformed", "err", err)
		keep = true
	}
	owned, err := l.ownedFloatingIPs(ctx, svc)
	if err != nil {
		return err
	}
	for _, f := range owned {
		if keep || f.FloatingIP == svc.Spec.LoadBalancerIP {
			if f.PortID != "" {
				if err := l.disassociate(ctx, &f); err != nil {
					return err
				}
			}
			logger.Info("Kept floating IP", "floatingIP", f.FloatingIP)
			continue
		}
		if err := ignoreNotFound(floatingips.Delete(ctx, l.api.network, f.ID).Err); err != nil {
			return fmt.Errorf("release floating IP %s: %w", f.FloatingIP, err)
		}
		logger.Info("Released floating IP", "floatingIP", f.FloatingIP)
	}

	lb, err := l.find(ctx, svc)
	if err != nil {
		return err
	}
	if lb != nil {
		switch lb.ProvisioningStatus {
		case statusPendingDelete:
			return api.NewRetryError(fmt.Sprintf("load balancer %s is being deleted", lb.ID), pendingRetry)
		case statusActive, statusError:
		default:
			// PENDING_CREATE or PENDING_UPDATE: Octavia refuses the
			// delete until the change is applied; wait for that (or
			// retry later).
			if _, err := l.poll(ctx, lb.ID, func(lb *loadbalancers.LoadBalancer, err error) (bool, error) {
				return err == nil && (lb.ProvisioningStatus == statusActive || lb.ProvisioningStatus == statusError), err
			}); err != nil {
				return err
			}
		}
		err := loadbalancers.Delete(ctx, l.api.lb, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).Err
		if isConflict(err) {
			return api.NewRetryError(fmt.Sprintf("load balancer %s is busy", lb.ID), pendingRetry)
		}
		if err := ignoreNotFound(err); err != nil {
			return fmt.Errorf("delete load balancer %s: %w", lb.ID, err)
		}
		logger.Info("Deleting load balancer", "id", lb.ID)
		// The service controller removes the finalizer only when this
		// returns nil; answer once the load balancer is really gone so
		// a Service re-created with the same name does not find it.
		if err := l.waitGone(ctx, lb.ID); err != nil {
			return err
		}
	}
	if l.groups != nil {
		if err := l.groups.deleteRules(ctx, svc); err != nil {
			return err
		}
	}
	return nil
}

// waitGone polls a deleted load balancer until Octavia no longer shows it,
// within waitActiveTimeout.
func (l *loadBalancers) waitGone(ctx context.Context, id string) error {
	_, err := l.poll(ctx, id, func(lb *loadbalancers.LoadBalancer, err error) (bool, error) {
		if isNotFound(err) || (err == nil && lb.ProvisioningStatus == "DELETED") {
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("get load balancer %s: %w", id, err)
		}
		return false, nil
	})
	return err
}

// ignoreNotFound treats "already gone" as done.
func ignoreNotFound(err error) error {
	if isNotFound(err) {
		return nil
	}
	return err
}
