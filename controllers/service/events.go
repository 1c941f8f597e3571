package service

// Event reasons on the Service, upstream's words (k8s.io/cloud-provider
// controllers/service/controller.go), with upstream's source component
// "service-controller". hack/refdocs lists them in
// docs/reference/events.md.
const (
	// EventEnsuring: the Service's load balancer is being made or brought
	// in step with its spec.
	// Object: Service
	EventEnsuring = "EnsuringLoadBalancer"
	// EventEnsured: it was.
	// Object: Service
	EventEnsured = "EnsuredLoadBalancer"
	// EventSyncFailed (Warning): making, updating or deleting the load
	// balancer failed; the message says why and the Service is retried
	// (at once when its cloud answers again, if it did not).
	// Object: Service
	EventSyncFailed = "SyncLoadBalancerFailed"
	// EventDeleting: the load balancer of a Service that was deleted or no
	// longer wants one is being deleted.
	// Object: Service
	EventDeleting = "DeletingLoadBalancer"
	// EventDeleted: it is gone, and the finalizer with it.
	// Object: Service
	EventDeleted = "DeletedLoadBalancer"
	// EventDeleteFailed (Warning): deleting the load balancer of a Service
	// that left without the finalizer failed; retried.
	// Object: Service
	EventDeleteFailed = "DeleteLoadBalancerFailed"
	// EventUpdated: the load balancer's backends were brought to the
	// cloud's current node set.
	// Object: Service
	EventUpdated = "UpdatedLoadBalancer"
	// EventUpdateFailed (Warning): bringing the backends to the node set
	// failed while the load balancer exists; the retry ensures it in
	// full.
	// Object: Service
	EventUpdateFailed = "UpdateLoadBalancerFailed"
	// EventNoNodes (Warning): the Service's cloud has no Node in the
	// stable node set, so its load balancer has no backends.
	// Object: Service
	EventNoNodes = "UnAvailableLoadBalancer"
)
