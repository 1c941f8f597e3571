// Package inventory is what a backend gives the manager's own controllers
// for self-healing (controllers/lbrepair: drift repair) and cleanup
// (controllers/orphans): one batched listing of every cloud resource this
// cluster's load balancers are made of, each with the Service it serves.
// The controllers are cloud-neutral; each backend implements Inventory,
// and the kit (providers/compose) carries it.
//
// It is its own package, outside providers/internal, because controllers/
// reads it and Go's internal rule keeps providers/internal to providers/.
package inventory

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Owned is one cloud resource of a Service's load balancer, as the
// cluster's ownership marks (tags, descriptions or names, per backend)
// say.
type Owned struct {
	// Kind names the resource in the cloud's terms ("listener", "target
	// group", "forwarding rule").
	Kind string
	// ID is the cloud's identity of it; Name its name, if it has one.
	ID, Name string
	// Service is the Service it serves, as the cloud records it. Zero for
	// a part several Services share (a shared health check, an Azure load
	// balancer of many frontends): never an orphan by itself, and not part
	// of any Service's drift check.
	Service types.NamespacedName
	// Unneeded marks a shared part (Service zero) that no load balancer
	// of the cluster needs any more, as the listing shows: an orphan by
	// itself (AWS's NLB MTU rule once no client rule of an NLB needs it).
	// The backend's DeleteOrphan checks again before it deletes.
	Unneeded bool
	// UID is the Service's UID where the cloud records it; empty where it
	// does not.
	UID types.UID
	// Detail is what the drift check compares and a person reads: the
	// part's state that the manager's ensure sets ("port 80/TCP -> pool
	// p-1", "members i-1,i-2", "source 10.0.0.0/8"). Anything an ensure
	// would change; nothing that changes by itself (operating status,
	// timestamps, provisioning state).
	Detail string
	// FollowsNodes marks a part a node-set update adds or removes, such
	// as a rule letting the load balancer reach a node group: its absence
	// after an update-only sync is not drift (the update took it with the
	// nodes), while with no sync since it is (someone removed it).
	FollowsNodes bool
	// Pending marks a part the cloud is still changing (an Octavia load
	// balancer held PENDING_* by a write it accepted and carries out
	// later): its Detail may not be what the change makes yet, so the
	// drift check compares it at a later listing.
	Pending bool
	// Kept marks what orphan cleanup never deletes though it is listed
	// for drift: a user-supplied IP, security group or certificate, a load
	// balancer the user named for sharing.
	Kept bool
	// Order is the deletion order of orphans, lowest first: what depends
	// on a resource goes before it (listener, then pool, then load
	// balancer).
	Order int
}

// Inventory is what a backend implements for self-healing and cleanup.
type Inventory interface {
	// Owned lists every resource of this cluster's load balancers in the
	// cloud, with listings batched across Services (no read per Service
	// where a listing serves them all). An error (throttled, failing,
	// unreachable) lists nothing: callers repair and delete nothing on it.
	Owned(ctx context.Context) ([]Owned, error)
	// Forget drops what the backend remembers of the Service's load
	// balancer (records of the last sync, cached reads), so that the next
	// ensure reads the cloud whole: drift repair calls it before it
	// re-ensures.
	Forget(svc types.NamespacedName)
	// DeleteOrphan deletes one orphan the manager made (never one marked
	// Kept); one already gone is success.
	DeleteOrphan(ctx context.Context, o Owned) error
}

// Sync is what this process knows of a Service's load-balancer syncs.
type Sync struct {
	// At is when the last successful ensure or update finished.
	At time.Time
	// EnsuredAt is when the last successful ensure finished: a full
	// reconcile. An update only follows the node set (from the backend's
	// record where it has one), so it removes no part but those marked
	// FollowsNodes.
	EnsuredAt time.Time
}

// Cloud is one configured cloud that lists its load balancers' parts.
type Cloud struct {
	// Name is the provider ("aws").
	Name string
	Inventory
	// LastSync is the last successful ensure or update of the Service's
	// load balancer in this cloud in this process; false if none since
	// the process started or since it was deleted.
	LastSync func(svc types.NamespacedName) (Sync, bool)
	// Repair re-ensures the Service's load balancer in the Service's turn
	// (after any call of the service controller's for it), with the nodes
	// the last sync of any Service in this cloud was given (the service
	// controller gives every Service the same set), but only if still()
	// holds once the turn is had: the caller's check that the Service has
	// not changed meanwhile. ran is false when it did not hold.
	Repair func(ctx context.Context, clusterName string, svc *v1.Service, still func() bool) (st *v1.LoadBalancerStatus, ran bool, err error)
}

// Source is what the manager's cloud (providers/compose/hybrid) offers
// the controllers.
type Source interface {
	// Inventories are the configured clouds whose backends implement
	// Inventory.
	Inventories() []Cloud
	// ServingCloud is the cloud whose load balancer the Service gets.
	ServingCloud(svc *v1.Service) (string, error)
}
