// Package cloudsim is a small framework for in-memory cloud API emulators.
//
// A cloud-specific emulator implements Cloud: it names the operation a
// request invokes, serves it, and knows how that cloud spells throttling and
// server errors on the wire. The framework's Server wraps it with what every
// emulator needs and none should reimplement: an HTTP listener (in-process
// for tests, or standalone via cmd/cloudsim), per-operation call counting,
// fault injection (latency, hangs, rate limits, 5xx), and an admin API under
// /admin/ to drive all of that from another process.
//
// Two more pieces are shared by every cloud: Store, the ordered keyed
// collection whose List runs the select -> filter -> page pipeline behind
// each cloud's list calls, and Instances, the cloud-neutral instance
// lifecycle the Server serves at /admin/instances for tests, the demo and
// benchmarks.
package cloudsim

import (
	"net/http"
	"sort"
)

// Cloud is what a cloud emulator implements to be served by a Server.
//
// Implementations must be safe for concurrent use: the Server calls them
// from one goroutine per request.
type Cloud interface {
	// Name is the cloud's short name ("aws", "gce", ...). The cloud's admin
	// handler is mounted at /admin/<Name>/.
	Name() string

	// Operation names the API operation r invokes, e.g. "ec2:DescribeInstances".
	// The name keys call counts and fault specs. It may read r.Body: the
	// Server restores the body before calling Serve. An error means the
	// request is not an API call at all; the Server answers 400 and does not
	// count it. Unsupported-but-well-formed operations should instead return
	// their name and let Serve answer with the cloud's own error.
	Operation(r *http.Request) (op string, err error)

	// Mutating reports whether op changes state, which places it in the
	// "mutating" fault group (otherwise it is in the "read" group).
	Mutating(op string) bool

	// Serve answers the API call r for operation op.
	Serve(w http.ResponseWriter, r *http.Request, op string)

	// WriteThrottle answers r with the cloud's real rate-limit error for op,
	// the one its SDKs recognise and retry.
	WriteThrottle(w http.ResponseWriter, r *http.Request, op string)

	// WriteServerError answers r with the cloud's real 5xx error for op.
	WriteServerError(w http.ResponseWriter, r *http.Request, op string)

	// Resources lists every resource the cloud holds, so tests can prove a
	// controller cleaned up after itself.
	Resources() []Resource

	// Admin serves the cloud-specific admin API (launching instances and
	// the like), mounted at /admin/<Name>/ with that prefix stripped. It
	// may return nil when the cloud has none.
	Admin() http.Handler
}

// Resource describes one object an emulator holds.
type Resource struct {
	// Kind is the cloud's own kind name, e.g. "load-balancer".
	Kind string `json:"kind"`
	// ID identifies the resource uniquely within its kind (an ARN, an ID).
	ID string `json:"id"`
	// Name is the resource's human name, when it has one.
	Name string `json:"name,omitempty"`
	// Parent is the ID of the resource this one belongs to (a listener's
	// load balancer, a route's route table), when there is one.
	Parent string `json:"parent,omitempty"`
	// Tags are the resource's tags or labels.
	Tags map[string]string `json:"tags,omitempty"`
}

// key identifies a resource for diffing.
func (r Resource) key() string { return r.Kind + "\x00" + r.ID }

// SortResources orders resources by kind, then ID, so listings are stable.
func SortResources(rs []Resource) {
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].Kind != rs[j].Kind {
			return rs[i].Kind < rs[j].Kind
		}
		return rs[i].ID < rs[j].ID
	})
}

// DiffResources compares two Resources snapshots by kind and ID and returns
// what appeared and what disappeared. The usual leak check is: snapshot,
// run the controller through create and delete, snapshot again, and expect
// no additions.
func DiffResources(before, after []Resource) (added, removed []Resource) {
	seen := make(map[string]bool, len(before))
	for _, r := range before {
		seen[r.key()] = true
	}
	now := make(map[string]bool, len(after))
	for _, r := range after {
		now[r.key()] = true
		if !seen[r.key()] {
			added = append(added, r)
		}
	}
	for _, r := range before {
		if !now[r.key()] {
			removed = append(removed, r)
		}
	}
	return added, removed
}
