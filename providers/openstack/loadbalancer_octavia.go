package openstack

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	v1 "k8s.io/api/core/v1"
	"k8s.io/cloud-provider/api"
	"k8s.io/klog/v2"
)

// Octavia provisioning: every write puts the load balancer in PENDING_*
// until its provider has applied it, and Octavia refuses (409) any other
// write meanwhile. Only provisioning_status is waited on: a new load
// balancer or member may stay operating_status OFFLINE or NO_MONITOR for
// a long time without traffic.

const (
	statusActive        = "ACTIVE"
	statusError         = "ERROR"
	statusPendingDelete = "PENDING_DELETE"
	// pendingRetry is when a Service whose load balancer is still
	// PENDING_* after waitActiveTimeout is synced again.
	pendingRetry = 10 * time.Second
	// Polls while waiting start at firstPoll and grow by half up to
	// maxPoll: a fast provider answers in a second or two, an amphora
	// boot takes about a minute.
	firstPoll = 250 * time.Millisecond
	maxPoll   = 5 * time.Second
)

// find returns the Service's own load balancer by name, else by its
// legacy name, as upstream's getLoadbalancerByName
// (kubernetes/cloud-provider-openstack pkg/openstack/loadbalancer.go:156-198):
// a legacy-named one is used as it is, keeping its name and address. nil
// when there is none. Two with the name is an error: nothing would say
// which to keep.
func (l *loadBalancers) find(ctx context.Context, svc *v1.Service) (*loadbalancers.LoadBalancer, error) {
	lb, err := l.findNamed(ctx, lbName(l.clusterID, svc))
	if lb != nil || err != nil {
		return lb, err
	}
	return l.findNamed(ctx, legacyName(svc))
}

func (l *loadBalancers) findNamed(ctx context.Context, name string) (*loadbalancers.LoadBalancer, error) {
	pages, err := loadbalancers.List(l.api.lb, loadbalancers.ListOpts{Name: name}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list load balancers named %s: %w", name, err)
	}
	list, err := loadbalancers.ExtractLoadBalancers(pages)
	if err != nil {
		return nil, err
	}
	switch len(list) {
	case 0:
		return nil, nil
	case 1:
		return &list[0], nil
	}
	ids := make([]string, len(list))
	for i := range list {
		ids[i] = list[i].ID
	}
	return nil, fmt.Errorf("%d load balancers are named %s (%s); delete all but one", len(list), name, strings.Join(ids, ", "))
}

// waitActive polls the load balancer until it is ACTIVE and returns it.
// ERROR is an error for the Service's events; still PENDING_* after
// waitActiveTimeout is a RetryError, so the Service is synced again later
// without holding a worker.
func (l *loadBalancers) waitActive(ctx context.Context, id string) (*loadbalancers.LoadBalancer, error) {
	return l.poll(ctx, id, func(lb *loadbalancers.LoadBalancer, err error) (bool, error) {
		if err != nil {
			return false, fmt.Errorf("get load balancer %s: %w", id, err)
		}
		switch lb.ProvisioningStatus {
		case statusActive:
			return true, nil
		case statusError:
			return false, fmt.Errorf("load balancer %s is in provisioning status ERROR (Octavia's provider failed to apply a change; see `openstack loadbalancer show %s` and its amphora logs); delete it or fix it, and the Service is synced again", id, id)
		case statusPendingDelete:
			return false, api.NewRetryError(fmt.Sprintf("load balancer %s is being deleted", id), pendingRetry)
		}
		return false, nil
	})
}

// poll GETs the load balancer with growing pauses until check says done
// (or fails), for at most waitActiveTimeout; past that it is a RetryError.
// check sees the GET's own error, so a caller may take 404 as done.
func (l *loadBalancers) poll(ctx context.Context, id string, check func(*loadbalancers.LoadBalancer, error) (bool, error)) (*loadbalancers.LoadBalancer, error) {
	deadline := l.clock.Now().Add(l.cfg.LoadBalancer.WaitActiveTimeout)
	pause := l.firstPoll
	for {
		lb, err := loadbalancers.Get(ctx, l.api.lb, id).Extract()
		done, err := check(lb, err)
		if done || err != nil {
			return lb, err
		}
		if !l.clock.Now().Add(pause).Before(deadline) {
			return nil, api.NewRetryError(fmt.Sprintf("load balancer %s is still %s after %s", id, lb.ProvisioningStatus, l.cfg.LoadBalancer.WaitActiveTimeout), pendingRetry)
		}
		klog.FromContext(ctx).V(4).Info("Waiting for the load balancer", "status", lb.ProvisioningStatus, "next", pause)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-l.clock.After(pause):
		}
		pause = min(pause*3/2, maxPoll)
	}
}

// write makes one Octavia write on an ACTIVE load balancer and waits for
// it to apply. A 409 (the load balancer went PENDING_* under us: another
// writer, or Octavia's own housekeeping) is retried after waiting again.
func (l *loadBalancers) write(ctx context.Context, lbID, what string, call func() error) error {
	if err := l.send(ctx, lbID, what, call); err != nil {
		return err
	}
	_, err := l.waitActive(ctx, lbID)
	return err
}

// send is write without the final wait: the change is accepted and the
// next write to the load balancer (a 409 while it applies) waits for it.
func (l *loadBalancers) send(ctx context.Context, lbID, what string, call func() error) error {
	for attempt := 0; ; attempt++ {
		err := call()
		if err == nil {
			break
		}
		if !isConflict(err) || attempt >= 3 {
			return fmt.Errorf("%s: %w", what, refusal(err))
		}
		if _, werr := l.waitActive(ctx, lbID); werr != nil {
			return werr
		}
	}
	return nil
}

// refusal explains a provider's refusal, which retrying cannot fix: 501
// (the provider lacks the feature) and 400 (Octavia or the provider
// rejects the value). The message names the option so the Service's
// Warning Event says what to change.
func refusal(err error) error {
	switch statusOf(err) {
	case http.StatusNotImplemented:
		return fmt.Errorf("the Octavia provider does not support an option this Service asks for (lbMethod, protocol, health monitor type or allowed CIDRs): %w", err)
	case http.StatusBadRequest:
		return fmt.Errorf("Octavia refused the request: %w", err)
	}
	return err
}
