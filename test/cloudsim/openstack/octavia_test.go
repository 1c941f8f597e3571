package openstack_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/apiversions"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/providers"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimopenstack "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

// ovClock is a fake clock the tests move by hand.
type ovClock struct {
	mu  sync.Mutex
	now time.Time
}

func newOVClock() *ovClock { return &ovClock{now: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *ovClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *ovClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// octaviaEnv is an emulator on a fake clock with a load-balancer client.
type octaviaEnv struct {
	*env
	clock *ovClock
	lb    *gophercloud.ServiceClient
}

func newOctaviaEnv(t *testing.T, cfg cloudsimopenstack.Config) *octaviaEnv {
	t.Helper()
	clock := newOVClock()
	cfg.Now = clock.Now
	e := newEnv(t, cfg)
	c, err := openstack.NewLoadBalancerV2(e.provider(t), gophercloud.EndpointOpts{Region: "RegionOne"})
	ok(t, err)
	return &octaviaEnv{env: e, clock: clock, lb: c}
}

// createLB creates a load balancer on the fixture's node subnet.
func (e *octaviaEnv) createLB(t *testing.T, opts loadbalancers.CreateOpts) *loadbalancers.LoadBalancer {
	t.Helper()
	if opts.VipSubnetID == "" && opts.VipNetworkID == "" && opts.VipPortID == "" {
		opts.VipSubnetID = e.fx.SubnetID
	}
	lb, err := loadbalancers.Create(ctx(t), e.lb, opts).Extract()
	ok(t, err)
	return lb
}

// settle moves the clock past the provisioning delay.
func (e *octaviaEnv) settle() { e.clock.advance(time.Second) }

func (e *octaviaEnv) getLB(t *testing.T, id string) *loadbalancers.LoadBalancer {
	t.Helper()
	lb, err := loadbalancers.Get(ctx(t), e.lb, id).Extract()
	ok(t, err)
	return lb
}

// activeLB creates a load balancer and waits (on the fake clock) for it.
func (e *octaviaEnv) activeLB(t *testing.T, opts loadbalancers.CreateOpts) *loadbalancers.LoadBalancer {
	t.Helper()
	lb := e.createLB(t, opts)
	e.settle()
	return e.getLB(t, lb.ID)
}

// wantFault checks an Octavia error answer: status, faultcode and text.
func wantFault(t *testing.T, err error, status int, faultstring string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want %d %q, got success", status, faultstring)
	}
	ce := codeError(t, err)
	if ce.Actual != status {
		t.Fatalf("status %d, want %d: %s", ce.Actual, status, ce.Body)
	}
	var body struct {
		Faultcode   string `json:"faultcode"`
		Faultstring string `json:"faultstring"`
	}
	if jerr := json.Unmarshal(ce.Body, &body); jerr != nil {
		t.Fatalf("error body %s: %v", ce.Body, jerr)
	}
	code := "Client"
	if status >= 500 {
		code = "Server"
	}
	if body.Faultcode != code || body.Faultstring != faultstring {
		t.Fatalf("fault %q %q, want %q %q", body.Faultcode, body.Faultstring, code, faultstring)
	}
}

func fullyPopulated(name string) loadbalancers.CreateOpts {
	w := 5
	return loadbalancers.CreateOpts{
		Name: name,
		Tags: []string{"kube_service_default_web", "cluster=k1"},
		Listeners: []listeners.CreateOpts{{
			Name: "http", Protocol: listeners.ProtocolTCP, ProtocolPort: 80,
			AllowedCIDRs: []string{"10.1.0.0/16"},
			DefaultPool: &pools.CreateOpts{
				Name: "http-pool", Protocol: pools.ProtocolTCP, LBMethod: pools.LBMethodRoundRobin,
				Members: []pools.CreateMemberOpts{
					{Address: "10.0.0.21", ProtocolPort: 30080, Name: "node-1"},
					{Address: "10.0.0.22", ProtocolPort: 30080, Name: "node-2", Weight: &w},
				},
				Monitor: monitors.CreateOpts{Type: monitors.TypeTCP, Delay: 5, Timeout: 3, MaxRetries: 2},
			},
		}},
	}
}

func TestOctaviaVersionDocument(t *testing.T) {
	cases := []struct {
		max  string
		want int
	}{{"", 27}, {"v2.10", 11}, {"v2.30", 31}}
	for _, tc := range cases {
		t.Run("max "+tc.max, func(t *testing.T) {
			e := newOctaviaEnv(t, cloudsimopenstack.Config{Octavia: cloudsimopenstack.OctaviaConfig{MaxVersion: tc.max}})
			pages, err := apiversions.List(e.lb).AllPages(ctx(t))
			ok(t, err)
			vs, err := apiversions.ExtractAPIVersions(pages)
			ok(t, err)
			if len(vs) != tc.want {
				t.Fatalf("%d versions, want %d: %+v", len(vs), tc.want, vs)
			}
			for i, v := range vs {
				status := "SUPPORTED"
				if i == len(vs)-1 {
					status = "CURRENT"
				}
				if v.Status != status || !strings.HasPrefix(v.ID, "v2.") {
					t.Errorf("version %d: %+v", i, v)
				}
			}
			w := e.do(t, "GET", "/load-balancer/", "")
			first := w.body["versions"].([]any)[0].(map[string]any)
			if first["id"] != "v2.0" || first["updated"] != "2016-12-11T00:00:00Z" ||
				first["links"].([]any)[0].(map[string]any)["href"] != e.srv.URL()+"/load-balancer/v2" {
				t.Errorf("v2.0: %v", first)
			}
		})
	}
	if got := currentOctaviaVersion(t); got != "v2.26" {
		t.Errorf("default CURRENT %s", got)
	}
}

func currentOctaviaVersion(t *testing.T) string {
	e := newOctaviaEnv(t, cloudsimopenstack.Config{})
	pages, err := apiversions.List(e.lb).AllPages(ctx(t))
	ok(t, err)
	vs, _ := apiversions.ExtractAPIVersions(pages)
	for _, v := range vs {
		if v.Status == "CURRENT" {
			return v.ID
		}
	}
	return ""
}

func TestOctaviaProviders(t *testing.T) {
	e := newOctaviaEnv(t, cloudsimopenstack.Config{})
	pages, err := providers.List(e.lb, nil).AllPages(ctx(t))
	ok(t, err)
	ps, err := providers.ExtractProviders(pages)
	ok(t, err)
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
		if p.Description == "" {
			t.Errorf("provider %s has no description", p.Name)
		}
	}
	if !slices.Equal(names, []string{"amphora", "octavia", "ovn"}) {
		t.Errorf("providers %v", names)
	}
	lb := e.createLB(t, loadbalancers.CreateOpts{Name: "default"})
	if lb.Provider != "amphora" {
		t.Errorf("default provider %q", lb.Provider)
	}
	_, err = loadbalancers.Create(ctx(t), e.lb, loadbalancers.CreateOpts{VipSubnetID: e.fx.SubnetID, Provider: "f5"}).Extract()
	wantFault(t, err, 400, "Provider 'f5' is not enabled.")
}

// A fully-populated create is PENDING_CREATE throughout, its load
// balancer immutable, until the provisioning delay has passed; then
// everything is ACTIVE and ONLINE, and a cascade delete leaves nothing.
func TestOctaviaFullyPopulatedLifecycle(t *testing.T) {
	e := newOctaviaEnv(t, cloudsimopenstack.Config{})
	before := e.srv.Resources()

	lb := e.createLB(t, fullyPopulated("web"))
	if lb.ProvisioningStatus != "PENDING_CREATE" || lb.OperatingStatus != "OFFLINE" || lb.VipPortID == "" ||
		lb.VipNetworkID != e.fx.NetworkID || !strings.HasPrefix(lb.VipAddress, "10.0.") || lb.Provider != "amphora" {
		t.Fatalf("created %+v", lb)
	}
	if len(lb.Listeners) != 1 || len(lb.Pools) != 1 || len(lb.Pools[0].Members) != 2 || lb.Pools[0].Monitor.ID == "" {
		t.Fatalf("graph %+v", lb)
	}
	l, p := lb.Listeners[0], lb.Pools[0]
	if l.ProvisioningStatus != "PENDING_CREATE" || l.DefaultPoolID != p.ID || !slices.Equal(l.AllowedCIDRs, []string{"10.1.0.0/16"}) {
		t.Errorf("listener %+v", l)
	}
	if p.Members[0].OperatingStatus != "OFFLINE" || p.Members[1].Weight != 5 {
		t.Errorf("members %+v", p.Members)
	}
	vip := findResource(e.srv.Resources(), cloudsimopenstack.KindPort, lb.VipPortID)
	if vip == nil || vip.Name != lb.VipAddress {
		t.Fatalf("VIP port %v", vip)
	}

	// Pending: every write is refused, reads show the pending state.
	_, err := listeners.Create(ctx(t), e.lb, listeners.CreateOpts{LoadbalancerID: lb.ID, Protocol: "TCP", ProtocolPort: 443}).Extract()
	wantFault(t, err, 409, "Load Balancer "+lb.ID+" is immutable and cannot be updated.")
	name := "renamed"
	_, err = loadbalancers.Update(ctx(t), e.lb, lb.ID, loadbalancers.UpdateOpts{Name: &name}).Extract()
	wantFault(t, err, 409, "Invalid state PENDING_CREATE of loadbalancer resource "+lb.ID)
	_, err = pools.CreateMember(ctx(t), e.lb, p.ID, pools.CreateMemberOpts{Address: "10.0.0.23", ProtocolPort: 30080}).Extract()
	wantFault(t, err, 409, "Pool "+p.ID+" is immutable and cannot be updated.")
	if got := e.getLB(t, lb.ID); got.ProvisioningStatus != "PENDING_CREATE" {
		t.Errorf("before the delay: %s", got.ProvisioningStatus)
	}

	e.clock.advance(100 * time.Millisecond)
	got := e.getLB(t, lb.ID)
	if got.ProvisioningStatus != "ACTIVE" || got.OperatingStatus != "ONLINE" || got.UpdatedAt.IsZero() {
		t.Fatalf("after the delay: %s %s %v", got.ProvisioningStatus, got.OperatingStatus, got.UpdatedAt)
	}
	tree, err := loadbalancers.GetStatuses(ctx(t), e.lb, lb.ID).Extract()
	ok(t, err)
	tl := tree.Loadbalancer.Listeners[0]
	if tl.ProvisioningStatus != "ACTIVE" || tl.OperatingStatus != "ONLINE" || len(tl.Pools) != 1 || len(tl.Pools[0].Members) != 2 {
		t.Fatalf("status tree %+v", tree.Loadbalancer)
	}
	for _, m := range tl.Pools[0].Members {
		if m.ProvisioningStatus != "ACTIVE" || m.OperatingStatus != "ONLINE" {
			t.Errorf("member %+v", m)
		}
	}
	page, err := loadbalancers.List(e.lb, loadbalancers.ListOpts{Tags: []string{"cluster=k1"}}).AllPages(ctx(t))
	ok(t, err)
	if all, _ := loadbalancers.ExtractLoadBalancers(page); len(all) != 1 || all[0].ID != lb.ID {
		t.Errorf("listed %+v", all)
	}

	// Without cascade a load balancer with children stays.
	err = loadbalancers.Delete(ctx(t), e.lb, lb.ID, nil).ExtractErr()
	wantFault(t, err, 400, "Validation failure: Cannot delete Load Balancer "+lb.ID+" - it has children")

	ok(t, loadbalancers.Delete(ctx(t), e.lb, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr())
	if got := e.getLB(t, lb.ID); got.ProvisioningStatus != "PENDING_DELETE" {
		t.Errorf("deleting: %s", got.ProvisioningStatus)
	}
	err = loadbalancers.Delete(ctx(t), e.lb, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr()
	wantFault(t, err, 409, "Invalid state PENDING_DELETE of loadbalancer resource "+lb.ID)
	e.settle()
	_, err = loadbalancers.Get(ctx(t), e.lb, lb.ID).Extract()
	wantFault(t, err, 404, "Load Balancer "+lb.ID+" not found.")
	_, err = pools.Get(ctx(t), e.lb, p.ID).Extract()
	wantFault(t, err, 404, "Pool "+p.ID+" not found.")
	added, removed := cloudsim.DiffResources(before, e.srv.Resources())
	if len(added) != 0 || len(removed) != 0 {
		t.Errorf("leaked %v, lost %v", added, removed)
	}
}

func findResource(rs []cloudsim.Resource, kind, id string) *cloudsim.Resource {
	for i := range rs {
		if rs[i].Kind == kind && rs[i].ID == id {
			return &rs[i]
		}
	}
	return nil
}

// Step-by-step creation, as the upstream CCM does it: every child write
// puts the load balancer in PENDING_UPDATE, and Resources names each
// object with its parent and tags.
func TestOctaviaStepByStep(t *testing.T) {
	e := newOctaviaEnv(t, cloudsimopenstack.Config{Octavia: cloudsimopenstack.OctaviaConfig{ProvisioningDelay: -1}})
	lb := e.createLB(t, loadbalancers.CreateOpts{Name: "svc", Tags: []string{"owner"}})
	if lb.ProvisioningStatus != "PENDING_CREATE" {
		t.Fatalf("created %s", lb.ProvisioningStatus)
	}
	// With no delay the next call already sees ACTIVE.
	l, err := listeners.Create(ctx(t), e.lb, listeners.CreateOpts{
		LoadbalancerID: lb.ID, Protocol: listeners.ProtocolTCP, ProtocolPort: 80, Tags: []string{"l"},
	}).Extract()
	ok(t, err)
	if l.ProvisioningStatus != "PENDING_CREATE" || l.TimeoutClientData != 50000 || l.ConnLimit != -1 {
		t.Errorf("listener %+v", l)
	}
	if got := e.emu.LoadBalancers()[0]; got.ProvisioningStatus != "ACTIVE" {
		t.Errorf("after the listener: %s", got.ProvisioningStatus)
	}
	p, err := pools.Create(ctx(t), e.lb, pools.CreateOpts{
		ListenerID: l.ID, Protocol: pools.ProtocolTCP, LBMethod: pools.LBMethodLeastConnections,
	}).Extract()
	ok(t, err)
	if len(p.Loadbalancers) != 1 || p.Loadbalancers[0].ID != lb.ID || len(p.Listeners) != 1 {
		t.Errorf("pool %+v", p)
	}
	_, err = pools.Create(ctx(t), e.lb, pools.CreateOpts{
		ListenerID: l.ID, Protocol: pools.ProtocolTCP, LBMethod: pools.LBMethodRoundRobin,
	}).Extract()
	wantFault(t, err, 409, "This listener already has a default pool")
	m, err := pools.CreateMember(ctx(t), e.lb, p.ID, pools.CreateMemberOpts{Address: "10.0.0.30", ProtocolPort: 31000}).Extract()
	ok(t, err)
	if m.OperatingStatus != "NO_MONITOR" {
		t.Errorf("member without a monitor: %s", m.OperatingStatus)
	}
	_, err = pools.CreateMember(ctx(t), e.lb, p.ID, pools.CreateMemberOpts{Address: "10.0.0.30", ProtocolPort: 31000}).Extract()
	wantFault(t, err, 409, "Another member on this pool is already using ip 10.0.0.30 on protocol_port 31000")
	hm, err := monitors.Create(ctx(t), e.lb, monitors.CreateOpts{PoolID: p.ID, Type: "HTTP", Delay: 3, Timeout: 5, MaxRetries: 3}).Extract()
	ok(t, err)
	if hm.URLPath != "/" || hm.HTTPMethod != "GET" || hm.ExpectedCodes != "200" || hm.MaxRetriesDown != 3 {
		t.Errorf("monitor defaults %+v", hm)
	}
	_, err = monitors.Create(ctx(t), e.lb, monitors.CreateOpts{PoolID: p.ID, Type: "TCP", Delay: 3, Timeout: 1, MaxRetries: 3}).Extract()
	wantFault(t, err, 409, "This pool already has a health monitor")
	m, err = pools.GetMember(ctx(t), e.lb, p.ID, m.ID).Extract()
	ok(t, err)
	if m.OperatingStatus != "ONLINE" || m.ProvisioningStatus != "ACTIVE" {
		t.Errorf("monitored member %s %s", m.ProvisioningStatus, m.OperatingStatus)
	}
	ok(t, monitors.Delete(ctx(t), e.lb, hm.ID).ExtractErr())
	m, err = pools.GetMember(ctx(t), e.lb, p.ID, m.ID).Extract()
	ok(t, err)
	if m.OperatingStatus != "NO_MONITOR" {
		t.Errorf("after the monitor went: %s", m.OperatingStatus)
	}

	rs := e.srv.Resources()
	for kind, id := range map[string]string{
		cloudsimopenstack.KindLoadBalancer: lb.ID, cloudsimopenstack.KindListener: l.ID,
		cloudsimopenstack.KindPool: p.ID, cloudsimopenstack.KindMember: m.ID,
	} {
		if findResource(rs, kind, id) == nil {
			t.Errorf("no %s %s in %v", kind, id, rs)
		}
	}
	if r := findResource(rs, cloudsimopenstack.KindLoadBalancer, lb.ID); r.Parent != e.fx.ProjectID || r.Tags["owner"] != "" || len(r.Tags) != 1 {
		t.Errorf("load balancer resource %+v", r)
	}
	if r := findResource(rs, cloudsimopenstack.KindMember, m.ID); r.Parent != p.ID {
		t.Errorf("member resource %+v", r)
	}

	// Deleting the pool takes its members; the listener loses its
	// default pool.
	ok(t, pools.Delete(ctx(t), e.lb, p.ID).ExtractErr())
	l, err = listeners.Get(ctx(t), e.lb, l.ID).Extract()
	ok(t, err)
	if l.DefaultPoolID != "" {
		t.Errorf("default pool %q after its delete", l.DefaultPoolID)
	}
	if findResource(e.srv.Resources(), cloudsimopenstack.KindMember, m.ID) != nil {
		t.Error("member outlived its pool")
	}
}

// The batch member update keeps the IDs of members it matches by address
// and port, deletes the others and creates the new ones.
func TestOctaviaBatchUpdateMembers(t *testing.T) {
	e := newOctaviaEnv(t, cloudsimopenstack.Config{})
	lb := e.activeLB(t, fullyPopulated("batch"))
	p := lb.Pools[0]
	ms, err := pools.ListMembers(e.lb, p.ID, nil).AllPages(ctx(t))
	ok(t, err)
	old, _ := pools.ExtractMembers(ms)
	keep := old[0]

	w := 7
	e.srv.ResetCalls()
	ok(t, pools.BatchUpdateMembers(ctx(t), e.lb, p.ID, []pools.BatchUpdateMemberOpts{
		{Address: keep.Address, ProtocolPort: keep.ProtocolPort, Weight: &w},
		{Address: "10.0.0.40", ProtocolPort: 30080},
	}).ExtractErr())
	if n := e.srv.CallCount("octavia:BatchUpdateMembers"); n != 1 {
		t.Errorf("BatchUpdateMembers counted %d", n)
	}
	got := e.getLB(t, lb.ID)
	if got.ProvisioningStatus != "PENDING_UPDATE" {
		t.Errorf("load balancer %s", got.ProvisioningStatus)
	}
	ms, err = pools.ListMembers(e.lb, p.ID, nil).AllPages(ctx(t))
	ok(t, err)
	pending, _ := pools.ExtractMembers(ms)
	statuses := map[string]string{}
	for _, m := range pending {
		statuses[m.Address] = m.ProvisioningStatus
	}
	if statuses[keep.Address] != "PENDING_UPDATE" || statuses[old[1].Address] != "PENDING_DELETE" || statuses["10.0.0.40"] != "PENDING_CREATE" {
		t.Errorf("pending statuses %v", statuses)
	}

	e.settle()
	ms, err = pools.ListMembers(e.lb, p.ID, nil).AllPages(ctx(t))
	ok(t, err)
	now, _ := pools.ExtractMembers(ms)
	if len(now) != 2 {
		t.Fatalf("members %+v", now)
	}
	for _, m := range now {
		switch m.Address {
		case keep.Address:
			if m.ID != keep.ID || m.Weight != 7 || m.ProvisioningStatus != "ACTIVE" {
				t.Errorf("kept member %+v (was %s)", m, keep.ID)
			}
		case "10.0.0.40":
			if m.ID == old[1].ID || m.OperatingStatus != "ONLINE" {
				t.Errorf("new member %+v", m)
			}
		default:
			t.Errorf("unexpected member %+v", m)
		}
	}

	// The same set again changes nothing: no pending state.
	ok(t, pools.BatchUpdateMembers(ctx(t), e.lb, p.ID, []pools.BatchUpdateMemberOpts{
		{Address: keep.Address, ProtocolPort: keep.ProtocolPort, Weight: &w},
		{Address: "10.0.0.40", ProtocolPort: 30080},
	}).ExtractErr())
	if got := e.getLB(t, lb.ID); got.ProvisioningStatus != "PENDING_UPDATE" {
		// An unchanged batch still updates the members it names, as
		// Octavia's does; only an empty diff is a no-op.
		t.Errorf("repeat batch: %s", got.ProvisioningStatus)
	}
	e.settle()
	ok(t, pools.BatchUpdateMembers(ctx(t), e.lb, p.ID, []pools.BatchUpdateMemberOpts{}).ExtractErr())
	if got := e.getLB(t, lb.ID); got.ProvisioningStatus != "PENDING_UPDATE" {
		t.Errorf("emptying batch: %s", got.ProvisioningStatus)
	}
	e.settle()
	ok(t, pools.BatchUpdateMembers(ctx(t), e.lb, p.ID, []pools.BatchUpdateMemberOpts{}).ExtractErr())
	if got := e.getLB(t, lb.ID); got.ProvisioningStatus != "ACTIVE" {
		t.Errorf("no-op batch: %s", got.ProvisioningStatus)
	}
}

// Each provider driver refuses what its source refuses, with a 501.
func TestOctaviaProviderRefusals(t *testing.T) {
	e := newOctaviaEnv(t, cloudsimopenstack.Config{Octavia: cloudsimopenstack.OctaviaConfig{ProvisioningDelay: -1}})
	amp := e.createLB(t, loadbalancers.CreateOpts{Name: "amp"})
	ovn := e.createLB(t, loadbalancers.CreateOpts{Name: "ovn", Provider: "ovn"})
	ovnListener, err := listeners.Create(ctx(t), e.lb, listeners.CreateOpts{LoadbalancerID: ovn.ID, Protocol: "TCP", ProtocolPort: 80}).Extract()
	ok(t, err)
	ovnPool, err := pools.Create(ctx(t), e.lb, pools.CreateOpts{ListenerID: ovnListener.ID, Protocol: "TCP", LBMethod: pools.LBMethodSourceIpPort}).Extract()
	ok(t, err)

	cases := []struct {
		name string
		call func() error
		msg  string
	}{
		{"amphora SOURCE_IP_PORT", func() error {
			_, err := pools.Create(ctx(t), e.lb, pools.CreateOpts{LoadbalancerID: amp.ID, Protocol: "TCP", LBMethod: pools.LBMethodSourceIpPort}).Extract()
			return err
		}, "Provider 'amphora' does not support a requested option: Amphora provider does not support SOURCE_IP_PORT algorithm."},
		{"ovn ROUND_ROBIN", func() error {
			_, err := pools.Create(ctx(t), e.lb, pools.CreateOpts{LoadbalancerID: ovn.ID, Protocol: "TCP", LBMethod: pools.LBMethodRoundRobin}).Extract()
			return err
		}, "Provider 'ovn' does not support a requested option: OVN provider does not support ROUND_ROBIN algorithm"},
		{"ovn HTTP listener", func() error {
			_, err := listeners.Create(ctx(t), e.lb, listeners.CreateOpts{LoadbalancerID: ovn.ID, Protocol: "HTTP", ProtocolPort: 8080}).Extract()
			return err
		}, "Provider 'ovn' does not support a requested option: OVN provider does not support HTTP protocol"},
		{"ovn allowed_cidrs", func() error {
			_, err := listeners.Create(ctx(t), e.lb, listeners.CreateOpts{LoadbalancerID: ovn.ID, Protocol: "TCP", ProtocolPort: 8443, AllowedCIDRs: []string{"10.0.0.0/8"}}).Extract()
			return err
		}, "Provider 'ovn' does not support a requested option: OVN provider does not support allowed_cidrs option"},
		{"ovn HTTP monitor", func() error {
			_, err := monitors.Create(ctx(t), e.lb, monitors.CreateOpts{PoolID: ovnPool.ID, Type: "HTTP", Delay: 5, Timeout: 3, MaxRetries: 2}).Extract()
			return err
		}, "Provider 'ovn' does not support a requested option: OVN provider does not support HTTP health monitor type. Supported types: UDP-CONNECT, TCP"},
		{"ovn member outside the VIP subnet", func() error {
			_, err := pools.CreateMember(ctx(t), e.lb, ovnPool.ID, pools.CreateMemberOpts{Address: "192.168.5.5", ProtocolPort: 80}).Extract()
			return err
		}, "Provider 'ovn' does not support a requested option: Subnet is required, or Loadbalancer associated with Pool must have a subnet, for Member creation with OVN Provider Driver if it is not the same as LB VIP subnet"},
		{"ovn failover", func() error {
			return loadbalancers.Failover(ctx(t), e.lb, ovn.ID).ExtractErr()
		}, "Provider 'ovn' does not support a requested option: OVN provider does not support loadbalancer failover"},
		{"ovn fully populated", func() error {
			opts := fullyPopulated("ovn-full")
			opts.Provider, opts.VipSubnetID = "ovn", e.fx.SubnetID
			_, err := loadbalancers.Create(ctx(t), e.lb, opts).Extract()
			return err
		}, "Provider 'ovn' does not support a requested option: OVN provider does not support allowed_cidrs option"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { wantFault(t, tc.call(), http.StatusNotImplemented, tc.msg) })
	}
	// Refusals change nothing: the load balancers stay ACTIVE.
	for _, lb := range e.emu.LoadBalancers() {
		if lb.ProvisioningStatus != "ACTIVE" {
			t.Errorf("%s %s after refusals", lb.Name, lb.ProvisioningStatus)
		}
	}
	ovnMember, err := pools.CreateMember(ctx(t), e.lb, ovnPool.ID, pools.CreateMemberOpts{Address: "10.0.0.50", ProtocolPort: 80}).Extract()
	ok(t, err)
	if ovnMember.SubnetID != "" {
		t.Errorf("member subnet %q", ovnMember.SubnetID)
	}
}

// Requests Octavia refuses, with its words.
func TestOctaviaValidation(t *testing.T) {
	e := newOctaviaEnv(t, cloudsimopenstack.Config{Octavia: cloudsimopenstack.OctaviaConfig{
		ProvisioningDelay: -1, Quotas: cloudsimopenstack.OctaviaQuotas{LoadBalancers: 2},
	}})
	countPorts := func() int {
		n := 0
		for _, r := range e.srv.Resources() {
			if r.Kind == cloudsimopenstack.KindPort {
				n++
			}
		}
		return n
	}
	basePorts := countPorts()
	lb := e.createLB(t, fullyPopulated("v"))
	tok := e.token(t)
	sub := e.fx.SubnetID
	cases := []struct {
		name, method, path, body string
		status                   int
		msg                      string
	}{
		{"no VIP", "POST", "loadbalancers", `{"loadbalancer": {"name": "x"}}`, 400,
			"Validation failure: VIP must contain one of: vip_port_id, vip_network_id, vip_subnet_id."},
		{"unknown subnet", "POST", "loadbalancers", `{"loadbalancer": {"vip_subnet_id": "8a3b2a60-3c56-4d55-9fd9-0d2c5d3e0a11"}}`, 400,
			"Subnet 8a3b2a60-3c56-4d55-9fd9-0d2c5d3e0a11 not found."},
		{"not a UUID", "POST", "loadbalancers", `{"loadbalancer": {"vip_subnet_id": "nope"}}`, 400,
			"Invalid input for field/attribute vip_subnet_id. Value: 'nope'. Value should be UUID format"},
		{"unknown attribute", "POST", "loadbalancers", `{"loadbalancer": {"vip_subnet_id": "` + sub + `", "color": "red"}}`, 400,
			"Unknown attribute for argument load_balancer.loadbalancer: color"},
		{"nested unknown attribute", "POST", "loadbalancers", `{"loadbalancer": {"vip_subnet_id": "` + sub + `", "listeners": [{"protocol": "TCP", "protocol_port": 80, "default_pool": {"name": "p", "protocol": "TCP", "lb_algorithm": "ROUND_ROBIN", "members": [{"address": "10.0.0.9", "protocol_port": 80, "bogus": 1}]}}]}}`, 400,
			"Unknown attribute for argument load_balancer.loadbalancer.listeners.default_pool.members: bogus"},
		{"VIP outside the subnet", "POST", "loadbalancers", `{"loadbalancer": {"vip_subnet_id": "` + sub + `", "vip_address": "192.0.2.10"}}`, 500,
			"Provider 'amphora' reports error: IP address 192.0.2.10 is not a valid IP for the specified subnet."},
		{"VIP in use", "POST", "loadbalancers", `{"loadbalancer": {"vip_subnet_id": "` + sub + `", "vip_address": "` + lb.VipAddress + `"}}`, 409,
			"The VIP IP address is already in use: IP address " + lb.VipAddress + " already allocated in subnet " + sub},
		{"unnamed default pool", "POST", "loadbalancers", `{"loadbalancer": {"vip_subnet_id": "` + sub + `", "listeners": [{"protocol": "TCP", "protocol_port": 80, "default_pool": {"protocol": "TCP", "lb_algorithm": "ROUND_ROBIN"}}]}}`, 400,
			"Validation failure: Pools must be named when creating a fully populated loadbalancer."},
		{"pool protocol", "POST", "loadbalancers", `{"loadbalancer": {"vip_subnet_id": "` + sub + `", "listeners": [{"protocol": "HTTP", "protocol_port": 80, "default_pool": {"name": "p", "protocol": "UDP", "lb_algorithm": "ROUND_ROBIN"}}]}}`, 400,
			"Validation failure: The pool protocol 'UDP' is invalid while the listener protocol is 'HTTP'."},
		{"missing protocol", "POST", "listeners", `{"listener": {"loadbalancer_id": "` + lb.ID + `", "protocol_port": 80}}`, 400,
			"Invalid input for field/attribute protocol. Value: 'None'. Mandatory field missing."},
		{"port range", "POST", "listeners", `{"listener": {"loadbalancer_id": "` + lb.ID + `", "protocol": "TCP", "protocol_port": 70000}}`, 400,
			"Invalid input for field/attribute protocol_port. Value: '70000'. Value should be lower or equal to 65535"},
		{"bad protocol", "POST", "listeners", `{"listener": {"loadbalancer_id": "` + lb.ID + `", "protocol": "FTP", "protocol_port": 21}}`, 400,
			"Invalid input for field/attribute protocol. Value: 'FTP'. Value should be one of: HTTP, HTTPS, PROMETHEUS, SCTP, TCP, TERMINATED_HTTPS, UDP"},
		{"duplicate listener", "POST", "listeners", `{"listener": {"loadbalancer_id": "` + lb.ID + `", "protocol": "HTTP", "protocol_port": 80}}`, 409,
			"Another Listener on this Load Balancer is already using protocol TCP and protocol_port 80"},
		{"TLS without Barbican", "POST", "listeners", `{"listener": {"loadbalancer_id": "` + lb.ID + `", "protocol": "TERMINATED_HTTPS", "protocol_port": 443, "default_tls_container_ref": "https://barbican/v1/containers/x"}}`, 400,
			"Could not retrieve certificate: ['https://barbican/v1/containers/x']"},
		{"unknown load balancer", "POST", "listeners", `{"listener": {"loadbalancer_id": "8a3b2a60-3c56-4d55-9fd9-0d2c5d3e0a11", "protocol": "TCP", "protocol_port": 81}}`, 404,
			"Load Balancer 8a3b2a60-3c56-4d55-9fd9-0d2c5d3e0a11 not found."},
		{"max_retries range", "POST", "healthmonitors", `{"healthmonitor": {"pool_id": "` + lb.Pools[0].ID + `", "type": "TCP", "delay": 1, "timeout": 1, "max_retries": 11}}`, 400,
			"Invalid input for field/attribute max_retries. Value: '11'. Value should be lower or equal to 10"},
		{"url_path on TCP monitor", "POST", "healthmonitors", `{"healthmonitor": {"pool_id": "` + lb.Pools[0].ID + `", "type": "TCP", "delay": 1, "timeout": 1, "max_retries": 1, "url_path": "/healthz"}}`, 400,
			"url_path is not a valid option for health monitors of type TCP"},
		{"reserved member address", "POST", "pools/" + lb.Pools[0].ID + "/members", `{"member": {"address": "169.254.169.254", "protocol_port": 80}}`, 400,
			"169.254.169.254 is not a valid option for member address"},
		{"pool without parent", "POST", "pools", `{"pool": {"protocol": "TCP", "lb_algorithm": "ROUND_ROBIN"}}`, 400,
			"Validation failure: Must provide at least one of: loadbalancer_id, listener_id"},
		{"bad filter", "GET", "loadbalancers?color=red", "", 400, "One or more arguments are either duplicate or invalid"},
		{"bad marker", "GET", "loadbalancers?marker=nope", "", 400, "Supplied pagination marker 'nope' is not valid."},
		{"bad sort direction", "GET", "loadbalancers?sort=name:up", "", 400, "Supplied sort direction 'up' is not valid."},
		{"bad sort key", "GET", "pools?sort_key=color", "", 400, "Supplied sort key 'color' is not valid."},
		{"bad limit", "GET", "listeners?limit=many", "", 400, "Supplied pagination limit 'many' is not valid."},
		{"not JSON", "POST", "loadbalancers", `{`, 400, "Request is not in valid JSON format"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := e.do(t, tc.method, "/load-balancer/v2/lbaas/"+tc.path, tc.body, "X-Auth-Token", tok)
			if w.status != tc.status || w.body["faultstring"] != tc.msg {
				t.Errorf("%d %v, want %d %q", w.status, w.body["faultstring"], tc.status, tc.msg)
			}
		})
	}
	// The quota counts the load balancers there are.
	e.createLB(t, loadbalancers.CreateOpts{Name: "second"})
	_, err := loadbalancers.Create(ctx(t), e.lb, loadbalancers.CreateOpts{VipSubnetID: sub}).Extract()
	wantFault(t, err, 403, "Quota has been met for resources: Load Balancer")
	// Nothing refused left a port behind.
	if n := countPorts() - basePorts; n != 2 {
		t.Errorf("%d new ports for 2 load balancers", n)
	}
}

// Tags are refused by deployments older than 2.5, and allowed CIDRs by
// those older than 2.12.
func TestOctaviaVersionGatedAttributes(t *testing.T) {
	e := newOctaviaEnv(t, cloudsimopenstack.Config{Octavia: cloudsimopenstack.OctaviaConfig{MaxVersion: "v2.4"}})
	_, err := loadbalancers.Create(ctx(t), e.lb, loadbalancers.CreateOpts{VipSubnetID: e.fx.SubnetID, Tags: []string{"a"}}).Extract()
	wantFault(t, err, 400, "Unknown attribute for argument load_balancer.loadbalancer: tags")
	w := e.do(t, "POST", "/load-balancer/v2.0/lbaas/loadbalancers", `{"loadbalancer": {"vip_subnet_id": "`+e.fx.SubnetID+`"}}`,
		"X-Auth-Token", e.token(t))
	lb := w.body["loadbalancer"].(map[string]any)
	if _, has := lb["tags"]; has || w.status != 201 {
		t.Errorf("2.4 answer %d %v", w.status, lb)
	}
	_, err = listeners.Create(ctx(t), e.lb, listeners.CreateOpts{LoadbalancerID: lb["id"].(string), Protocol: "TCP", ProtocolPort: 1, AllowedCIDRs: []string{"10.0.0.0/8"}}).Extract()
	wantFault(t, err, 400, "Unknown attribute for argument listener_.listener: allowed_cidrs")
}

func TestOctaviaPaginationAndFilters(t *testing.T) {
	e := newOctaviaEnv(t, cloudsimopenstack.Config{Octavia: cloudsimopenstack.OctaviaConfig{ProvisioningDelay: -1}})
	tagSets := [][]string{{"a"}, {"a", "b"}, {"b"}, {"c"}, nil}
	var ids []string
	for i, tags := range tagSets {
		lb := e.createLB(t, loadbalancers.CreateOpts{Name: "lb-" + string(rune('0'+i)), Tags: tags})
		ids = append(ids, lb.ID)
		e.clock.advance(time.Second) // distinct created_at, the first sort key
	}
	// Pages of two: gophercloud follows the next links to the end.
	e.srv.ResetCalls()
	pages, err := loadbalancers.List(e.lb, loadbalancers.ListOpts{Limit: 2}).AllPages(ctx(t))
	ok(t, err)
	all, err := loadbalancers.ExtractLoadBalancers(pages)
	ok(t, err)
	var got []string
	for _, lb := range all {
		got = append(got, lb.ID)
	}
	if !slices.Equal(got, ids) {
		t.Errorf("paged %v, want %v", got, ids)
	}
	if n := e.srv.CallCount("octavia:ListLoadBalancers"); n != 3 {
		t.Errorf("%d list calls for 5 items in pages of 2", n)
	}
	w := e.do(t, "GET", "/load-balancer/v2/lbaas/loadbalancers?limit=2&marker="+ids[1], "", "X-Auth-Token", e.token(t))
	links := w.body["loadbalancers_links"].([]any)
	if len(links) != 2 || links[0].(map[string]any)["rel"] != "previous" ||
		links[1].(map[string]any)["href"] != e.srv.URL()+"/load-balancer/v2/lbaas/loadbalancers?limit=2&marker="+ids[3] {
		t.Errorf("links %v", links)
	}
	w = e.do(t, "GET", "/load-balancer/v2/lbaas/loadbalancers?sort=created_at:desc&limit=1&fields=id&fields=name", "", "X-Auth-Token", e.token(t))
	first := w.body["loadbalancers"].([]any)[0].(map[string]any)
	if first["id"] != ids[4] || len(first) != 2 {
		t.Errorf("desc first %v", first)
	}

	cases := []struct {
		name string
		opts loadbalancers.ListOpts
		want []int
	}{
		{"tags", loadbalancers.ListOpts{Tags: []string{"a", "b"}}, []int{1}},
		{"tags-any", loadbalancers.ListOpts{TagsAny: []string{"a", "c"}}, []int{0, 1, 3}},
		{"not-tags", loadbalancers.ListOpts{TagsNot: []string{"a", "b"}}, []int{0, 2, 3, 4}},
		{"not-tags-any", loadbalancers.ListOpts{TagsNotAny: []string{"a", "b"}}, []int{3, 4}},
		{"name", loadbalancers.ListOpts{Name: "lb-2"}, []int{2}},
		{"vip subnet and status", loadbalancers.ListOpts{VipSubnetID: e.fx.SubnetID, ProvisioningStatus: "ACTIVE"}, []int{0, 1, 2, 3, 4}},
		{"provider", loadbalancers.ListOpts{Provider: "ovn"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pages, err := loadbalancers.List(e.lb, tc.opts).AllPages(ctx(t))
			ok(t, err)
			lbs, _ := loadbalancers.ExtractLoadBalancers(pages)
			var got, want []string
			for _, lb := range lbs {
				got = append(got, lb.ID)
			}
			for _, i := range tc.want {
				want = append(want, ids[i])
			}
			if !slices.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

// The admin hooks play the worker: hold, release, fail, and the health
// manager's view of members.
func TestOctaviaAdminHooks(t *testing.T) {
	e := newOctaviaEnv(t, cloudsimopenstack.Config{})
	lb := e.createLB(t, fullyPopulated("admin"))
	ok(t, e.emu.HoldLoadBalancer(lb.ID))
	e.clock.advance(time.Hour)
	if got := e.getLB(t, lb.ID); got.ProvisioningStatus != "PENDING_CREATE" {
		t.Fatalf("held: %s", got.ProvisioningStatus)
	}
	ok(t, e.emu.ReleaseLoadBalancer(lb.ID))
	if got := e.getLB(t, lb.ID); got.ProvisioningStatus != "ACTIVE" {
		t.Fatalf("released: %s", got.ProvisioningStatus)
	}

	// The next operation fails: the load balancer and the objects it
	// touched end in ERROR, and only a delete is accepted.
	ok(t, e.emu.FailLoadBalancerOperation(lb.ID))
	l, err := listeners.Create(ctx(t), e.lb, listeners.CreateOpts{LoadbalancerID: lb.ID, Protocol: "UDP", ProtocolPort: 53}).Extract()
	ok(t, err)
	e.settle()
	if got := e.getLB(t, lb.ID); got.ProvisioningStatus != "ERROR" {
		t.Fatalf("failed: %s", got.ProvisioningStatus)
	}
	if got, err := listeners.Get(ctx(t), e.lb, l.ID).Extract(); err != nil || got.ProvisioningStatus != "ERROR" {
		t.Fatalf("failed listener %+v %v", got, err)
	}
	_, err = listeners.Update(ctx(t), e.lb, l.ID, listeners.UpdateOpts{}).Extract()
	wantFault(t, err, 409, "Load Balancer "+lb.ID+" is immutable and cannot be updated.")
	ok(t, e.emu.SetLoadBalancerStatus(lb.ID, "ACTIVE"))
	if got, _ := listeners.Get(ctx(t), e.lb, l.ID).Extract(); got.ProvisioningStatus != "ACTIVE" {
		t.Errorf("recovered listener %s", got.ProvisioningStatus)
	}

	// A member the health manager sees down degrades the tree.
	info, _ := e.emu.LoadBalancer(lb.ID)
	member := info.Pools[0].Members[0]
	ok(t, e.emu.SetMemberHealth(member.ID, "ERROR"))
	tree, err := loadbalancers.GetStatuses(ctx(t), e.lb, lb.ID).Extract()
	ok(t, err)
	if tree.Loadbalancer.OperatingStatus != "DEGRADED" || tree.Loadbalancer.Listeners[0].OperatingStatus != "DEGRADED" {
		t.Errorf("degraded tree %+v", tree.Loadbalancer)
	}

	// Over HTTP.
	w := e.do(t, "GET", "/admin/openstack/loadbalancers/"+lb.ID, "")
	if w.status != 200 || w.body["provisioningStatus"] != "ACTIVE" || len(w.body["pools"].([]any)) != 1 {
		t.Errorf("admin GET %d %s", w.status, w.raw)
	}
	w = e.do(t, "POST", "/admin/openstack/loadbalancers/status", `{"loadBalancerId": "`+lb.ID+`", "status": "ERROR"}`)
	if w.status != 200 || e.getLB(t, lb.ID).ProvisioningStatus != "ERROR" {
		t.Errorf("admin status %d %s", w.status, w.raw)
	}
	if w := e.do(t, "POST", "/admin/openstack/loadbalancers/hold", `{"loadBalancerId": "nope"}`); w.status != 404 {
		t.Errorf("unknown load balancer %d %s", w.status, w.raw)
	}
	if w := e.do(t, "POST", "/admin/openstack/octavia/provisioning-delay", `{"delay": "1m"}`); w.status != 200 {
		t.Errorf("delay %d %s", w.status, w.raw)
	}
	// An ERROR load balancer can still be deleted; with the longer delay
	// it stays PENDING_DELETE for a minute.
	ok(t, loadbalancers.Delete(ctx(t), e.lb, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr())
	e.settle()
	if got := e.getLB(t, lb.ID); got.ProvisioningStatus != "PENDING_DELETE" {
		t.Errorf("after a second of a minute: %s", got.ProvisioningStatus)
	}
	e.clock.advance(time.Minute)
	if _, ok := e.emu.LoadBalancer(lb.ID); ok {
		t.Error("load balancer outlived its delete")
	}
}

// Faults are injected by Octavia's operation names, answered with its
// error body.
func TestOctaviaFaults(t *testing.T) {
	e := newOctaviaEnv(t, cloudsimopenstack.Config{})
	setFault(t, e.env, cloudsim.FaultSpec{Op: "octavia:ListLoadBalancers", ThrottleNext: 1})
	_, err := loadbalancers.List(e.lb, nil).AllPages(ctx(t))
	if !gophercloud.ResponseCodeIs(err, http.StatusTooManyRequests) {
		t.Fatalf("want 429, got %v", err)
	}
	setFault(t, e.env, cloudsim.FaultSpec{Op: "octavia:CreateLoadBalancer", FailNext: 1})
	_, err = loadbalancers.Create(ctx(t), e.lb, loadbalancers.CreateOpts{VipSubnetID: e.fx.SubnetID}).Extract()
	wantFault(t, err, 500, "Internal Server Error")
	if len(e.emu.LoadBalancers()) != 0 {
		t.Error("a failed create created")
	}
	if !e.emu.Mutating("octavia:BatchUpdateMembers") || e.emu.Mutating("octavia:ListMembers") {
		t.Error("mutating ops")
	}
}
