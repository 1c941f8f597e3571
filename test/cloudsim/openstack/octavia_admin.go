package openstack

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// Octavia's admin API: the load balancer trees as they stand, and the
// hooks that play the controller worker and the health manager: end a
// pending operation now (ACTIVE or ERROR), make the next one fail, hold
// one pending until released, mark a member unhealthy, and change the
// provisioning delay. Every method is also served over HTTP (see
// octaviaAdmin).

// ErrOctaviaNotFound is wrapped by the admin errors about an unknown
// load balancer or member; the HTTP admin API answers it 404.
var ErrOctaviaNotFound = errors.New("octavia object not found")

// LoadBalancerInfo is a load balancer with its tree, as the admin API
// reports it.
type LoadBalancerInfo struct {
	ID                 string `json:"id"`
	Name               string `json:"name"`
	Description        string `json:"description,omitempty"`
	ProjectID          string `json:"projectId"`
	Provider           string `json:"provider"`
	ProvisioningStatus string `json:"provisioningStatus"`
	OperatingStatus    string `json:"operatingStatus"`
	AdminStateUp       bool   `json:"adminStateUp"`
	VIPAddress         string `json:"vipAddress"`
	VIPPortID          string `json:"vipPortId"`
	VIPSubnetID        string `json:"vipSubnetId"`
	VIPNetworkID       string `json:"vipNetworkId"`
	// AdditionalVIPs are the addresses of its additional VIPs (API
	// 2.26), in creation order.
	AdditionalVIPs   []string       `json:"additionalVips,omitempty"`
	FlavorID         string         `json:"flavorId,omitempty"`
	AvailabilityZone string         `json:"availabilityZone,omitempty"`
	Tags             []string       `json:"tags,omitempty"`
	Created          time.Time      `json:"created"`
	Listeners        []ListenerInfo `json:"listeners,omitempty"`
	Pools            []PoolInfo     `json:"pools,omitempty"`
	// Held: the pending operation is held until released.
	Held bool `json:"held,omitempty"`
	// FailNext: the pending (or next) operation will end in ERROR.
	FailNext bool `json:"failNext,omitempty"`
	// ReadyAt is when the pending operation completes (unless held).
	ReadyAt *time.Time `json:"readyAt,omitempty"`
}

// ListenerInfo is a listener of a LoadBalancerInfo.
type ListenerInfo struct {
	ID              string   `json:"id"`
	Name            string   `json:"name"`
	Protocol        string   `json:"protocol"`
	ProtocolPort    int      `json:"protocolPort"`
	DefaultPoolID   string   `json:"defaultPoolId,omitempty"`
	AllowedCIDRs    []string `json:"allowedCidrs,omitempty"`
	ConnectionLimit int      `json:"connectionLimit"`
	// The timeouts are in milliseconds.
	TimeoutClientData    int               `json:"timeoutClientData"`
	TimeoutMemberConnect int               `json:"timeoutMemberConnect"`
	TimeoutMemberData    int               `json:"timeoutMemberData"`
	TimeoutTCPInspect    int               `json:"timeoutTcpInspect"`
	InsertHeaders        map[string]string `json:"insertHeaders,omitempty"`
	ProvisioningStatus   string            `json:"provisioningStatus"`
	OperatingStatus      string            `json:"operatingStatus"`
	AdminStateUp         bool              `json:"adminStateUp"`
	Tags                 []string          `json:"tags,omitempty"`
}

// PoolInfo is a pool of a LoadBalancerInfo.
type PoolInfo struct {
	ID                 string             `json:"id"`
	Name               string             `json:"name"`
	Protocol           string             `json:"protocol"`
	LBAlgorithm        string             `json:"lbAlgorithm"`
	SessionPersistence string             `json:"sessionPersistence,omitempty"`
	ListenerIDs        []string           `json:"listenerIds,omitempty"`
	ProvisioningStatus string             `json:"provisioningStatus"`
	OperatingStatus    string             `json:"operatingStatus"`
	AdminStateUp       bool               `json:"adminStateUp"`
	Tags               []string           `json:"tags,omitempty"`
	Members            []MemberInfo       `json:"members,omitempty"`
	HealthMonitor      *HealthMonitorInfo `json:"healthMonitor,omitempty"`
}

// MemberInfo is a member of a PoolInfo.
type MemberInfo struct {
	ID                 string   `json:"id"`
	Name               string   `json:"name"`
	Address            string   `json:"address"`
	ProtocolPort       int      `json:"protocolPort"`
	Weight             int      `json:"weight"`
	Backup             bool     `json:"backup,omitempty"`
	SubnetID           string   `json:"subnetId,omitempty"`
	MonitorAddress     string   `json:"monitorAddress,omitempty"`
	MonitorPort        int      `json:"monitorPort,omitempty"`
	ProvisioningStatus string   `json:"provisioningStatus"`
	OperatingStatus    string   `json:"operatingStatus"`
	AdminStateUp       bool     `json:"adminStateUp"`
	Tags               []string `json:"tags,omitempty"`
}

// HealthMonitorInfo is the health monitor of a PoolInfo.
type HealthMonitorInfo struct {
	ID                 string   `json:"id"`
	Name               string   `json:"name"`
	Type               string   `json:"type"`
	Delay              int      `json:"delay"`
	Timeout            int      `json:"timeout"`
	MaxRetries         int      `json:"maxRetries"`
	MaxRetriesDown     int      `json:"maxRetriesDown"`
	HTTPMethod         string   `json:"httpMethod,omitempty"`
	URLPath            string   `json:"urlPath,omitempty"`
	ExpectedCodes      string   `json:"expectedCodes,omitempty"`
	ProvisioningStatus string   `json:"provisioningStatus"`
	OperatingStatus    string   `json:"operatingStatus"`
	AdminStateUp       bool     `json:"adminStateUp"`
	Tags               []string `json:"tags,omitempty"`
}

// LoadBalancers lists the load balancers (deleted ones excluded) in
// creation order, each with its tree, after completing the operations
// that are due.
func (e *Emulator) LoadBalancers() []LoadBalancerInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settleOctavia()
	var out []LoadBalancerInfo
	for _, lb := range e.octavia.lbs.All() {
		out = append(out, lbInfo(lb))
	}
	return out
}

// LoadBalancer reports one load balancer.
func (e *Emulator) LoadBalancer(id string) (LoadBalancerInfo, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settleOctavia()
	lb, ok := e.octavia.lbs.Get(id)
	if !ok {
		return LoadBalancerInfo{}, false
	}
	return lbInfo(lb), true
}

func lbInfo(lb *octaviaLB) LoadBalancerInfo {
	info := LoadBalancerInfo{
		ID: lb.id, Name: lb.name, Description: lb.description, ProjectID: lb.projectID, Provider: lb.provider,
		ProvisioningStatus: lb.prov, OperatingStatus: lb.oper, AdminStateUp: lb.adminUp,
		VIPAddress: lb.vipAddress, VIPPortID: lb.vipPortID, VIPSubnetID: lb.vipSubnetID, VIPNetworkID: lb.vipNetworkID,
		Tags: slices.Clone(lb.tags), Created: lb.created, Held: lb.held, FailNext: lb.failNext,
	}
	for _, a := range lb.additionalVIPs {
		info.AdditionalVIPs = append(info.AdditionalVIPs, a.ipAddress)
	}
	if lb.flavorID != nil {
		info.FlavorID = *lb.flavorID
	}
	if lb.zone != nil {
		info.AvailabilityZone = *lb.zone
	}
	if ovPending(lb.prov) {
		t := lb.readyAt
		info.ReadyAt = &t
	}
	for _, l := range lb.listeners {
		li := ListenerInfo{
			ID: l.id, Name: l.name, Protocol: l.protocol, ProtocolPort: l.port, AllowedCIDRs: slices.Clone(l.allowedCIDRs),
			ConnectionLimit: l.connLimit, ProvisioningStatus: l.prov, OperatingStatus: l.oper, AdminStateUp: l.adminUp,
			Tags:              slices.Clone(l.tags),
			TimeoutClientData: l.timeoutClient, TimeoutMemberConnect: l.timeoutConnect,
			TimeoutMemberData: l.timeoutMember, TimeoutTCPInspect: l.timeoutTCP,
		}
		if len(l.insertHeaders) > 0 {
			li.InsertHeaders = maps.Clone(l.insertHeaders)
		}
		if l.defaultPool != nil {
			li.DefaultPoolID = l.defaultPool.id
		}
		info.Listeners = append(info.Listeners, li)
	}
	for _, p := range lb.pools {
		pi := PoolInfo{
			ID: p.id, Name: p.name, Protocol: p.protocol, LBAlgorithm: p.algorithm,
			ProvisioningStatus: p.prov, OperatingStatus: p.oper, AdminStateUp: p.adminUp, Tags: slices.Clone(p.tags),
		}
		if p.persistence != nil {
			pi.SessionPersistence = p.persistence.typ
		}
		for _, l := range p.listenersOf() {
			pi.ListenerIDs = append(pi.ListenerIDs, l.id)
		}
		for _, m := range p.members {
			mi := MemberInfo{
				ID: m.id, Name: m.name, Address: m.address, ProtocolPort: m.port, Weight: m.weight, Backup: m.backup,
				ProvisioningStatus: m.prov, OperatingStatus: m.oper, AdminStateUp: m.adminUp, Tags: slices.Clone(m.tags),
			}
			if m.subnetID != nil {
				mi.SubnetID = *m.subnetID
			}
			if m.monitorAddress != nil {
				mi.MonitorAddress = *m.monitorAddress
			}
			if m.monitorPort != nil {
				mi.MonitorPort = *m.monitorPort
			}
			pi.Members = append(pi.Members, mi)
		}
		if h := p.monitor; h != nil {
			hi := &HealthMonitorInfo{
				ID: h.id, Name: h.name, Type: h.typ, Delay: h.delay, Timeout: h.timeout,
				MaxRetries: h.maxRetries, MaxRetriesDown: h.maxRetriesDown,
				ProvisioningStatus: h.prov, OperatingStatus: h.oper, AdminStateUp: h.adminUp, Tags: slices.Clone(h.tags),
			}
			for dst, src := range map[*string]*string{&hi.HTTPMethod: h.httpMethod, &hi.URLPath: h.urlPath, &hi.ExpectedCodes: h.expectedCodes} {
				if src != nil {
					*dst = *src
				}
			}
			pi.HealthMonitor = hi
		}
		info.Pools = append(info.Pools, pi)
	}
	return info
}

// adminLB finds a live load balancer after settling. Callers hold e.mu.
func (e *Emulator) adminLB(id string) (*octaviaLB, error) {
	e.settleOctavia()
	lb, ok := e.octavia.lbs.Get(id)
	if !ok {
		return nil, fmt.Errorf("load balancer %q: %w", id, ErrOctaviaNotFound)
	}
	return lb, nil
}

// SetLoadBalancerStatus ends the load balancer's pending operation now,
// as the controller worker would: "ACTIVE" completes it (a pending
// delete removes the tree) and "ERROR" fails it (the load balancer and
// its pending objects ERROR). On a settled load balancer, "ERROR" puts
// the load balancer in ERROR and "ACTIVE" brings it and any ERROR
// objects of its tree back to ACTIVE. A hold is released.
func (e *Emulator) SetLoadBalancerStatus(id, status string) error {
	if status != ovActive && status != ovError {
		return fmt.Errorf("cannot set load balancer status %q; have ACTIVE, ERROR", status)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	lb, err := e.adminLB(id)
	if err != nil {
		return err
	}
	lb.held = false
	now := e.now()
	switch {
	case ovPending(lb.prov) && status == ovActive:
		lb.failNext = false
		e.completeOperation(lb, now)
	case ovPending(lb.prov):
		e.failOperation(lb, now.Truncate(time.Second))
	case status == ovError:
		lb.prov = ovError
		e.touch(&lb.ovBase)
	default:
		reactivate := func(b *ovBase) {
			if b.prov == ovError {
				b.prov = ovActive
				e.touch(b)
			}
		}
		reactivate(&lb.ovBase)
		for _, l := range lb.listeners {
			reactivate(&l.ovBase)
		}
		for _, p := range lb.pools {
			reactivate(&p.ovBase)
			if p.monitor != nil {
				reactivate(&p.monitor.ovBase)
			}
			for _, m := range p.members {
				reactivate(&m.ovBase)
			}
		}
		e.refreshOperating(lb)
	}
	return nil
}

// onLB runs f on a load balancer under the lock.
func (e *Emulator) onLB(id string, f func(*octaviaLB)) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	lb, err := e.adminLB(id)
	if err != nil {
		return err
	}
	f(lb)
	return nil
}

// FailLoadBalancerOperation makes the load balancer's pending operation,
// or its next one, end in ERROR when it would have completed.
func (e *Emulator) FailLoadBalancerOperation(id string) error {
	return e.onLB(id, func(lb *octaviaLB) {
		lb.failNext = true
	})
}

// HoldLoadBalancer keeps the load balancer's pending operation (or its
// next one) pending, and the load balancer immutable, until
// ReleaseLoadBalancer: a worker that is stuck.
func (e *Emulator) HoldLoadBalancer(id string) error {
	return e.onLB(id, func(lb *octaviaLB) {
		lb.held = true
	})
}

// ReleaseLoadBalancer lets a held operation complete: at once if its
// delay has passed, else when it does.
func (e *Emulator) ReleaseLoadBalancer(id string) error {
	return e.onLB(id, func(lb *octaviaLB) {
		lb.held = false
		e.settleOctavia()
	})
}

// SetMemberHealth sets what the health manager reports for a member of a
// pool with a health monitor: "ERROR" (down), "DRAINING" or "ONLINE"
// (healthy again). The pool, listener and load balancer operating
// statuses follow (DEGRADED, ERROR). Members of unmonitored pools stay
// NO_MONITOR.
func (e *Emulator) SetMemberHealth(memberID, status string) error {
	if !slices.Contains([]string{ovOnline, ovError, ovDraining}, status) {
		return fmt.Errorf("cannot set member health %q; have ONLINE, ERROR, DRAINING", status)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settleOctavia()
	m, ok := e.octavia.members.Get(memberID)
	if !ok {
		return fmt.Errorf("member %q: %w", memberID, ErrOctaviaNotFound)
	}
	m.health = status
	if status == ovOnline {
		m.health = ""
	}
	e.refreshOperating(m.pool.lb)
	return nil
}

// SetOctaviaProvisioningDelay changes ProvisioningDelay for the
// operations that start from now on.
func (e *Emulator) SetOctaviaProvisioningDelay(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.octavia.delay = max(d, 0)
}

func octaviaAdminStatus(err error) int {
	if errors.Is(err, ErrOctaviaNotFound) {
		return http.StatusNotFound
	}
	return http.StatusBadRequest
}

// octaviaAdmin adds Octavia's admin routes to the admin mux:
//
//	GET  /loadbalancers                   [LoadBalancerInfo]
//	GET  /loadbalancers/{id}              LoadBalancerInfo
//	POST /loadbalancers/status            {"loadBalancerId", "status": "ACTIVE"|"ERROR"}
//	POST /loadbalancers/fail              {"loadBalancerId"}
//	POST /loadbalancers/hold              {"loadBalancerId"}; likewise release
//	POST /members/health                  {"memberId", "status": "ERROR"|"DRAINING"|"ONLINE"}
//	POST /octavia/provisioning-delay      {"delay": "30s"}
func (e *Emulator) octaviaAdmin(mux *http.ServeMux) {
	mux.HandleFunc("GET /loadbalancers", func(w http.ResponseWriter, r *http.Request) {
		lbs := e.LoadBalancers()
		if lbs == nil {
			lbs = []LoadBalancerInfo{}
		}
		cloudsim.WriteJSON(w, http.StatusOK, lbs)
	})
	mux.HandleFunc("GET /loadbalancers/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		lb, ok := e.LoadBalancer(id)
		if !ok {
			cloudsim.WriteJSONError(w, http.StatusNotFound, fmt.Errorf("load balancer %q: %w", id, ErrOctaviaNotFound))
			return
		}
		cloudsim.WriteJSON(w, http.StatusOK, lb)
	})
	type lbReq struct {
		LoadBalancerID string `json:"loadBalancerId"`
		Status         string `json:"status,omitempty"`
	}
	mux.HandleFunc("POST /loadbalancers/status", cloudsim.AdminHandler(func(req lbReq) (any, error) {
		return req, e.SetLoadBalancerStatus(req.LoadBalancerID, req.Status)
	}, octaviaAdminStatus))
	for name, f := range map[string]func(string) error{
		"fail": e.FailLoadBalancerOperation, "hold": e.HoldLoadBalancer, "release": e.ReleaseLoadBalancer,
	} {
		mux.HandleFunc("POST /loadbalancers/"+name, cloudsim.AdminHandler(func(req lbReq) (any, error) {
			return req, f(req.LoadBalancerID)
		}, octaviaAdminStatus))
	}
	mux.HandleFunc("POST /members/health", cloudsim.AdminHandler(func(req struct {
		MemberID string `json:"memberId"`
		Status   string `json:"status"`
	}) (any, error) {
		return req, e.SetMemberHealth(req.MemberID, req.Status)
	}, octaviaAdminStatus))
	mux.HandleFunc("POST /octavia/provisioning-delay", cloudsim.AdminHandler(func(req struct {
		Delay string `json:"delay"`
	}) (any, error) {
		d, err := time.ParseDuration(req.Delay)
		if err != nil {
			return nil, fmt.Errorf("delay %q: want a Go duration such as 30s: %w", req.Delay, err)
		}
		e.SetOctaviaProvisioningDelay(d)
		return req, nil
	}, octaviaAdminStatus))
}
