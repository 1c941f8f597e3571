package gce

import (
	"context"
	"fmt"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/googleapis/gax-go/v2/apierror"
	"google.golang.org/api/googleapi"
	v1 "k8s.io/api/core/v1"

	"github.com/multicloud-ccm/multicloud-ccm/providers/lbhosts"
)

// batchParallel is how many Services' backends a node pass changes at
// once. Every external Service has its own target pool, so a node joining
// is one addInstance per Service; one after the other each waits about a
// second for its operation (200 Services: 38 s with 10 workers).
const batchParallel = 50

var _ lbhosts.Updater = (*loadBalancers)(nil)

// UpdateLoadBalancerHosts brings every Service's backends to nodes in one
// pass: the nodes' instances are resolved once, and the Services' pool
// changes and their operation waits overlap, batchParallel at a time.
// Internal Services share the cluster's instance groups: the first to
// run brings them in step and the rest find them so.
func (l *loadBalancers) UpdateLoadBalancerHosts(ctx context.Context, _ string, svcs []*v1.Service, nodes []*v1.Node) []error {
	errs := make([]error, len(svcs))
	members, _, err := l.nodeInstances(ctx, nodes)
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	return lbhosts.Parallel(ctx, batchParallel, svcs, func(ctx context.Context, svc *v1.Service) error {
		sp, err := serviceSpec(l.cfg, svc)
		if err != nil {
			return err
		}
		return l.updateHosts(ctx, svc, sp, members)
	})
}

// waitRegional waits for a regional operation with the operations' wait
// method, which answers when the operation is DONE (or after about two
// minutes, when it is asked again): one call per operation, answered as
// it finishes. The client's Operation.Wait polls get with backoff from
// 1 s instead: three reads for a one-second operation, each up to a
// second late. It takes a call's two results:
// l.waitRegional(ctx)(client.AddInstance(...)).
func (l *loadBalancers) waitRegional(ctx context.Context) func(*compute.Operation, error) error {
	return func(op *compute.Operation, err error) error {
		if err != nil {
			return err
		}
		if op.Done() {
			return operationError(op.Proto())
		}
		for {
			w, err := l.api.regionOperations.Wait(ctx, &computepb.WaitRegionOperationRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, Operation: op.Name()}, l.api.retry)
			if err != nil {
				return err
			}
			if w.GetStatus() == computepb.Operation_DONE {
				return operationError(w)
			}
		}
	}
}

// operationError is a DONE operation's failure as the client's
// Operation.Wait reports it (an apierror of its HTTP status, so
// errorCode and isNotFound read it the same way); nil when it succeeded.
func operationError(op *computepb.Operation) error {
	if op.HttpErrorStatusCode == nil || (op.GetHttpErrorStatusCode() >= 200 && op.GetHttpErrorStatusCode() <= 299) {
		return nil
	}
	gerr := &googleapi.Error{
		Code:    int(op.GetHttpErrorStatusCode()),
		Message: fmt.Sprintf("%s: %v", op.GetHttpErrorMessage(), op.GetError()),
	}
	if aerr, ok := apierror.FromError(gerr); ok {
		return aerr
	}
	return gerr
}
