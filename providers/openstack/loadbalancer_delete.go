package openstack

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
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
// (cascade), then the Service's security group rules (the member group
// with the last Service's) and the upstream CCM's group of the Service
// (loadbalancer_upstreamgroups.go). A floating IP we did
// not allocate is only disassociated, and Neutron does that itself when
// the VIP port goes.
//
// A load balancer goes whole only when a CCM of this cluster made it and
// no other Service uses it: no other usage tag, and no listener that is
// not the Service's (upstream: ensureLoadBalancerDeleted,
// kubernetes/cloud-provider-openstack pkg/openstack/loadbalancer.go:2084-2187,
// which looks at the tags only). Otherwise only the Service's listeners,
// with their pools, and its usage tag go, and the floating IP stays for
// the others. A load balancer a person made is never deleted.
func (l *loadBalancers) delete(ctx context.Context, svc *v1.Service) error {
	logger := klog.FromContext(ctx)
	keep, _, err := annotationKeepFloatingIP.Bool(svc)
	if err != nil {
		// A malformed annotation must not block deletion: keeping the
		// address is the safe reading.
		logger.Info("Keeping the floating IP: the keep-floatingip annotation is malformed", "err", err)
		keep = true
	}
	lbs, err := l.resolveAll(ctx, svc)
	if err != nil {
		return err
	}
	// Hold every load balancer concerned (in ID order, so two deletions
	// never wait on each other) from the plan to the last write: a
	// Service starting to share one must not see it half gone.
	slices.SortFunc(lbs, func(a, b *loadbalancers.LoadBalancer) int { return strings.Compare(a.ID, b.ID) })
	stale := false
	for _, lb := range lbs {
		unlock, waited, err := l.locks.lock(ctx, lb.ID)
		if err != nil {
			return err
		}
		defer unlock()
		stale = stale || waited
	}
	if stale {
		// Another Service changed them meanwhile (its tag, its
		// listeners): read them again.
		held := lbs
		if lbs, err = l.resolveAll(ctx, svc); err != nil {
			return err
		}
		lbs = slices.DeleteFunc(lbs, func(lb *loadbalancers.LoadBalancer) bool {
			return !slices.ContainsFunc(held, func(h *loadbalancers.LoadBalancer) bool { return h.ID == lb.ID })
		})
	}
	plans, err := l.planDelete(ctx, svc, lbs)
	if err != nil {
		return err
	}
	if err := l.releaseFloatingIPs(ctx, svc, plans, keep); err != nil {
		return err
	}
	for _, p := range plans {
		if !p.whole {
			if err := l.leave(ctx, p, usageTag(l.clusterID, svc)); err != nil {
				return err
			}
			continue
		}
		if err := l.deleteWhole(ctx, p.lb); err != nil {
			return err
		}
		if err := l.forgetID(ctx, svc, p.lb.ID); err != nil {
			return err
		}
	}
	if id := annotatedID(svc); id != "" && len(lbs) == 0 {
		// It names a load balancer that was gone already.
		if err := l.forgetID(ctx, svc, id); err != nil {
			return err
		}
	}
	if l.groups != nil {
		if err := l.groups.release(ctx, svc); err != nil {
			return err
		}
	}
	// Whatever manageSecurityGroups says, as upstream deletes it
	// (loadbalancer.go:2177-2181, v1.36.0): a Service adopted and
	// deleted with no ensure in between loses it too.
	if err := l.takeOverUpstreamGroup(ctx, svc, nil, true); err != nil {
		return err
	}
	l.upstreamGroups.setGone(svc.UID, false)
	return nil
}

// deletePlan is what a Service's deletion does to a load balancer it
// uses: delete it whole, or remove the Service's listeners (mine).
type deletePlan struct {
	lb    *loadbalancers.LoadBalancer
	mine  []listeners.Listener
	whole bool
}

func (l *loadBalancers) planDelete(ctx context.Context, svc *v1.Service, lbs []*loadbalancers.LoadBalancer) ([]deletePlan, error) {
	tag := usageTag(l.clusterID, svc)
	var plans []deletePlan
	for _, lb := range lbs {
		all, err := l.listeners(ctx, lb.ID)
		if err != nil {
			return nil, err
		}
		p := deletePlan{lb: lb}
		owner, foreign := l.owns(lb, svc), 0
		for _, lis := range all {
			if servesListener(&lis, tag, owner, lb.Name) {
				p.mine = append(p.mine, lis)
			} else {
				foreign++
			}
		}
		others := otherUsers(lb.Tags, tag)
		p.whole = l.madeByCCM(lb, svc) && len(others) == 0 && foreign == 0
		klog.FromContext(ctx).V(2).Info("Planned the load balancer's deletion", "id", lb.ID, "whole", p.whole, "owner", owner, "otherServices", others, "otherListeners", foreign)
		plans = append(plans, p)
	}
	return plans, nil
}

// releaseFloatingIPs releases the floating IPs allocated for the Service
// (described after it) and, of a load balancer going whole, the one a CCM
// allocated with it for the Service it was made for (described after the
// load balancer, creatorFloatingIP), unless keep or spec.loadBalancerIP
// keeps them (then they are disassociated). One on the VIP port of a load
// balancer that stays is the address of the Services still using it.
func (l *loadBalancers) releaseFloatingIPs(ctx context.Context, svc *v1.Service, plans []deletePlan, keep bool) error {
	logger := klog.FromContext(ctx)
	fips, err := l.ownedFloatingIPs(ctx, svc)
	if err != nil {
		return err
	}
	stays := map[string]bool{}
	for _, p := range plans {
		if !p.whole {
			stays[p.lb.VipPortID] = true
			continue
		}
		desc := creatorFloatingIP(p.lb)
		if desc == "" || desc == fipDescription(l.clusterID, svc) {
			continue
		}
		f, err := l.floatingIPOnPort(ctx, p.lb.VipPortID)
		if err != nil {
			return err
		}
		if f != nil && f.Description == desc {
			fips = append(fips, *f)
		}
	}
	for _, f := range fips {
		if f.PortID != "" && stays[f.PortID] {
			logger.V(2).Info("Kept the floating IP of a load balancer other Services use", "floatingIP", f.FloatingIP)
			continue
		}
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
	return nil
}

// deleteWhole deletes the load balancer with everything under it and
// waits until it is gone.
func (l *loadBalancers) deleteWhole(ctx context.Context, lb *loadbalancers.LoadBalancer) error {
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
	klog.FromContext(ctx).Info("Deleting load balancer", "id", lb.ID)
	// The service controller removes the finalizer only when this
	// returns nil; answer once the load balancer is really gone so
	// a Service re-created with the same name does not find it.
	return l.waitGone(ctx, lb.ID)
}

// leave removes the Service's listeners (each pool first, as
// removeListener) from a load balancer that stays, then its usage tag
// (upstream: deleteLoadBalancer and the tag update,
// loadbalancer.go:2008-2082, :2158-2175).
func (l *loadBalancers) leave(ctx context.Context, p deletePlan, tag string) error {
	logger := klog.FromContext(ctx)
	if len(p.mine) == 0 && !slices.Contains(p.lb.Tags, tag) {
		return nil
	}
	for _, lis := range p.mine {
		if err := l.removeListener(ctx, p.lb.ID, &lis); err != nil {
			return err
		}
		logger.Info("Removed the Service's listener from a load balancer that stays", "id", p.lb.ID, "listener", lis.ID, "port", lis.ProtocolPort)
	}
	// Fresh tags: the listener writes waited for ACTIVE; without them,
	// this wait does (and says why an ERROR load balancer blocks it).
	lb, err := l.waitActive(ctx, p.lb.ID)
	if err != nil {
		return err
	}
	if err := l.setUsage(ctx, lb, tag, false); err != nil {
		return err
	}
	logger.Info("The Service no longer uses the load balancer; it stays", "id", lb.ID, "name", lb.Name, "services", otherUsers(lb.Tags, tag))
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
