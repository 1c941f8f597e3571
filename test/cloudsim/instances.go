package cloudsim

import (
	"errors"
	"fmt"
	"net/http"
)

// Instances is what a Cloud implements so that tests, the demo and the
// benchmarks can drive its virtual machines without knowing which cloud
// it is: the end-to-end scenarios are the same for every cloud (a node
// joins, is stopped, disappears), and so is the way they are staged. The
// Server serves it under /admin/instances (see adminMux).
//
// Errors about an unknown ID wrap ErrInstanceNotFound; a transition the
// instance's state forbids (starting a terminated instance) wraps
// ErrInstanceState. Anything else is a bad request.
type Instances interface {
	// LaunchInstance creates one instance, running, and reports it.
	LaunchInstance(spec InstanceSpec) (InstanceInfo, error)
	// StopInstance stops a running instance.
	StopInstance(id string) error
	// StartInstance starts a stopped instance.
	StartInstance(id string) error
	// TerminateInstance terminates an instance for good. Clouds that keep
	// terminated instances listed for a while (EC2) keep doing so.
	TerminateInstance(id string) error
	// GetInstance reports one instance.
	GetInstance(id string) (InstanceInfo, bool)
	// ListInstances reports every instance the cloud still lists, in
	// launch order.
	ListInstances() []InstanceInfo
}

// InstanceSpec is a cloud-neutral request for one instance. Empty fields
// get the cloud's defaults (its first zone or a spread over zones, a
// small general-purpose type).
type InstanceSpec struct {
	// Name names the instance on clouds that name instances (GCE, Azure,
	// OpenStack); AWS records it as the Name tag.
	Name string `json:"name,omitempty"`
	// Zone is the availability zone (or Azure zone, or OpenStack
	// availability zone).
	Zone string `json:"zone,omitempty"`
	// InstanceType is the machine type, flavor or VM size.
	InstanceType string `json:"instanceType,omitempty"`
	// PublicIP gives the instance a public address.
	PublicIP bool `json:"publicIp,omitempty"`
	// Tags are tags, labels or metadata, as the cloud calls them.
	Tags map[string]string `json:"tags,omitempty"`
	// PodRanges asks for the ranges the cloud itself hands the instance
	// for its pods, which a cloud allocator (controllers/nodeipam) makes
	// the Node's pod CIDRs: on GCE an alias IP range of nic0 from the
	// subnetwork's secondary range for pods (IPv4) and nic0's IPv6 range
	// (IPv6); on AWS prefixes delegated to the primary interface (an
	// IPv4 /28, an IPv6 /80). Each entry is a CIDR, or "/N" for the
	// cloud to pick a free one of that size, as the clouds' APIs accept.
	// Clouds without such ranges (Azure, OpenStack) refuse it.
	PodRanges []string `json:"podRanges,omitempty"`
	// IPv6 gives the instance's primary interface (NIC, port) an IPv6
	// address from its subnet's IPv6 block, beside its IPv4 one, as a
	// dual-stack cluster's instances have; InstanceInfo.PrivateIPv6
	// reports it. A cloud whose subnet has no IPv6 block refuses it.
	IPv6 bool `json:"ipv6,omitempty"`
}

// InstanceState is an instance's lifecycle state in words every cloud
// can be mapped to; InstanceInfo.CloudState keeps the cloud's own.
type InstanceState string

// The neutral instance states.
const (
	InstancePending    InstanceState = "pending"
	InstanceRunning    InstanceState = "running"
	InstanceStopping   InstanceState = "stopping"
	InstanceStopped    InstanceState = "stopped"
	InstanceTerminated InstanceState = "terminated"
)

// InstanceInfo is a cloud-neutral view of one instance.
type InstanceInfo struct {
	// ID is what the cloud's API identifies the instance by (an EC2
	// instance ID, a Nova server UUID, a GCE or Azure VM name).
	ID string `json:"id"`
	// Name is the instance's name (AWS: its Name tag), when it has one.
	Name         string `json:"name,omitempty"`
	Zone         string `json:"zone"`
	InstanceType string `json:"instanceType"`
	// State is the neutral state; CloudState is the cloud's own word for
	// it ("shutting-down", "SHUTOFF", "TERMINATED", "PowerState/stopped").
	State      InstanceState `json:"state"`
	CloudState string        `json:"cloudState"`
	PrivateIP  string        `json:"privateIp,omitempty"`
	PublicIP   string        `json:"publicIp,omitempty"`
	// Hostname is the name a kubelet on the instance registers its Node
	// as (on AWS, the private DNS name), so a test can create that Node.
	Hostname string            `json:"hostname,omitempty"`
	Tags     map[string]string `json:"tags,omitempty"`
	// PodRanges are the pod ranges the cloud holds for the instance
	// (see InstanceSpec.PodRanges), as the cloud reports them.
	PodRanges []string `json:"podRanges,omitempty"`
	// PrivateIPv6 is the primary interface's IPv6 address, when it has
	// one (InstanceSpec.IPv6).
	PrivateIPv6 string `json:"privateIpv6,omitempty"`
}

var (
	// ErrInstanceNotFound is wrapped by errors about an unknown instance ID.
	ErrInstanceNotFound = errors.New("instance not found")
	// ErrInstanceState is wrapped by errors about a transition the
	// instance's current state forbids.
	ErrInstanceState = errors.New("instance state forbids this")
	// ErrInvalidRequest is what the admin API answers (400) for a request
	// it cannot carry out as given: an unknown zone or type, a bad body.
	ErrInvalidRequest = errors.New("invalid admin request")
	// ErrNoInstances is what the admin API answers for a cloud that does
	// not implement Instances.
	ErrNoInstances = errors.New("cloud does not implement the instances admin API")
)

// instancesRoutes serves Instances under /admin/instances:
//
//	GET  /admin/instances                  [InstanceInfo, ...]
//	POST /admin/instances                  InstanceSpec -> 201 InstanceInfo
//	GET  /admin/instances/{id}             InstanceInfo, or 404
//	POST /admin/instances/{id}/stop        InstanceInfo after the change; likewise start, terminate
//
// Unknown IDs answer 404, forbidden transitions 409, bad specs 400, and
// every route 501 when the cloud does not implement Instances.
func (s *Server) instancesRoutes(mux *http.ServeMux) {
	insts, ok := s.cloud.(Instances)
	if !ok {
		notImplemented := func(w http.ResponseWriter, r *http.Request) {
			WriteJSONError(w, http.StatusNotImplemented, fmt.Errorf("%s: %w", s.cloud.Name(), ErrNoInstances))
		}
		mux.HandleFunc("/admin/instances", notImplemented)
		mux.HandleFunc("/admin/instances/", notImplemented)
		return
	}
	mux.HandleFunc("GET /admin/instances", func(w http.ResponseWriter, r *http.Request) {
		list := insts.ListInstances()
		if list == nil {
			list = []InstanceInfo{}
		}
		WriteJSON(w, http.StatusOK, list)
	})
	mux.HandleFunc("POST /admin/instances", func(w http.ResponseWriter, r *http.Request) {
		var spec InstanceSpec
		if err := ReadJSON(r, &spec); err != nil {
			WriteJSONError(w, http.StatusBadRequest, err)
			return
		}
		info, err := insts.LaunchInstance(spec)
		if err != nil {
			WriteJSONError(w, InstanceErrorStatus(err), fmt.Errorf("launch instance: %w", err))
			return
		}
		WriteJSON(w, http.StatusCreated, info)
	})
	mux.HandleFunc("GET /admin/instances/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		info, ok := insts.GetInstance(id)
		if !ok {
			WriteJSONError(w, http.StatusNotFound, fmt.Errorf("instance %s: %w", id, ErrInstanceNotFound))
			return
		}
		WriteJSON(w, http.StatusOK, info)
	})
	actions := map[string]func(string) error{
		"stop": insts.StopInstance, "start": insts.StartInstance, "terminate": insts.TerminateInstance,
	}
	mux.HandleFunc("POST /admin/instances/{id}/{action}", func(w http.ResponseWriter, r *http.Request) {
		id, action := r.PathValue("id"), r.PathValue("action")
		f, ok := actions[action]
		if !ok {
			WriteJSONError(w, http.StatusNotFound, fmt.Errorf("unknown instance action %q; have stop, start, terminate", action))
			return
		}
		if err := f(id); err != nil {
			WriteJSONError(w, InstanceErrorStatus(err), fmt.Errorf("%s instance %s: %w", action, id, err))
			return
		}
		// Terminated instances may vanish from the listing at once on some
		// clouds; then there is nothing left to report but the ID.
		info, ok := insts.GetInstance(id)
		if !ok {
			info = InstanceInfo{ID: id, State: InstanceTerminated}
		}
		WriteJSON(w, http.StatusOK, info)
	})
}

// InstanceErrorStatus is the admin status of an instance error: 404 for
// ErrInstanceNotFound, 409 for ErrInstanceState, else 400. The clouds'
// own admin routes use it with AdminHandler.
func InstanceErrorStatus(err error) int {
	switch {
	case errors.Is(err, ErrInstanceNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrInstanceState):
		return http.StatusConflict
	}
	return http.StatusBadRequest
}
