package compose

import (
	"context"
	"errors"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/events"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/upstreamann"
	"github.com/multicloud-ccm/multicloud-ccm/providers/lbhosts"
)

// ReasonUnsupported: the Service carries an annotation of the upstream
// CCM that is Ignored here (no effect); the message names it and what to
// do instead. Once per Service until its ignored annotations change. (A
// Refused one fails the sync instead: the service controller's
// SyncLoadBalancerFailed.)
// Object: Service
const ReasonUnsupported = "UnsupportedAnnotation"

// eventSource names this gate in the Events it records.
const eventSource = "multicloud-ccm"

// The gate is the line's step for the upstream CCM's Service annotations
// (upstreamann.Table): a Service with a Refused annotation is not
// provisioned (EnsureLoadBalancer and UpdateLoadBalancer fail with the
// reason, which the service controller records as a Warning Event), and
// one with an Ignored annotation gets a Warning Event once. Deletion and
// reads always pass, so a Service can always be cleaned up. It stands
// in front of the per-Service serializer: a refused Service takes no
// turn.

type gate struct {
	table *upstreamann.Table

	mu       sync.Mutex
	recorder record.EventRecorder
	// warned holds, per Service, the findings last warned about, so a
	// Service is told once per change rather than at every node change.
	warned map[types.UID]string
}

func newGate(t *upstreamann.Table) *gate {
	return &gate{table: t, warned: map[types.UID]string{}}
}

func (g *gate) start(b cloudprovider.ControllerClientBuilder, stop <-chan struct{}) {
	// The service controller's own identity: it exists (with RBAC for
	// events) under --use-service-account-credentials too.
	rec, err := events.NewRecorder(b, "service-controller", eventSource, stop)
	if err != nil {
		klog.ErrorS(err, "No Events for unsupported upstream annotations; they are logged instead")
		return
	}
	g.mu.Lock()
	g.recorder = rec
	g.mu.Unlock()
}

// admit is the gate: an error when the Service must not be provisioned,
// else nil after warning about what it ignores.
func (g *gate) admit(ctx context.Context, svc *v1.Service) error {
	ignored, refused := g.table.Check(svc)
	if len(refused) > 0 {
		msgs := make([]string, len(refused))
		for i, f := range refused {
			msgs[i] = f.Message(g.table.Upstream)
		}
		return errors.New(strings.Join(msgs, "; ") + "; the load balancer is not provisioned or changed until the annotation is removed")
	}
	g.warn(ctx, svc, ignored)
	return nil
}

func (g *gate) warn(ctx context.Context, svc *v1.Service, ignored []upstreamann.Finding) {
	var fp strings.Builder
	for _, f := range ignored {
		fp.WriteString(f.Key + "=" + f.Value + "\n")
	}
	g.mu.Lock()
	if g.warned[svc.UID] == fp.String() {
		g.mu.Unlock()
		return
	}
	if len(ignored) == 0 {
		delete(g.warned, svc.UID)
	} else {
		g.warned[svc.UID] = fp.String()
	}
	rec := g.recorder
	g.mu.Unlock()
	for _, f := range ignored {
		msg := f.Message(g.table.Upstream)
		klog.FromContext(ctx).Info("Service annotation has no effect", "service", klog.KObj(svc), "annotation", f.Key)
		if rec != nil {
			rec.Event(svc, v1.EventTypeWarning, ReasonUnsupported, msg)
		}
	}
}

func (g *gate) forget(svc *v1.Service) {
	g.mu.Lock()
	delete(g.warned, svc.UID)
	g.mu.Unlock()
}

type gatedLB struct {
	cloudprovider.LoadBalancer
	gate *gate
}

// EnsureLoadBalancer provisions only an admitted Service.
func (l *gatedLB) EnsureLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	if err := l.gate.admit(ctx, svc); err != nil {
		return nil, err
	}
	return l.LoadBalancer.EnsureLoadBalancer(ctx, clusterName, svc, nodes)
}

// UpdateLoadBalancer changes only an admitted Service's load balancer.
func (l *gatedLB) UpdateLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) error {
	if err := l.gate.admit(ctx, svc); err != nil {
		return err
	}
	return l.LoadBalancer.UpdateLoadBalancer(ctx, clusterName, svc, nodes)
}

// UpdateLoadBalancerHosts passes the admitted Services on to the
// backend's batch (lbhosts.Updater); a refused one gets its reason.
func (l *gatedLB) UpdateLoadBalancerHosts(ctx context.Context, clusterName string, svcs []*v1.Service, nodes []*v1.Node) []error {
	errs := make([]error, len(svcs))
	var admitted []int
	for i, svc := range svcs {
		if err := l.gate.admit(ctx, svc); err != nil {
			errs[i] = err
			continue
		}
		admitted = append(admitted, i)
	}
	lbhosts.UpdateSome(ctx, l.LoadBalancer, clusterName, svcs, admitted, nodes, errs)
	return errs
}

// EnsureLoadBalancerDeleted always passes: a Service must be deletable
// whatever its annotations say.
func (l *gatedLB) EnsureLoadBalancerDeleted(ctx context.Context, clusterName string, svc *v1.Service) error {
	l.gate.forget(svc)
	return l.LoadBalancer.EnsureLoadBalancerDeleted(ctx, clusterName, svc)
}
