package azure

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// loadBalancers implements cloudprovider.LoadBalancer with the cluster's
// one Standard Load Balancer (and its -internal twin): each Service is a
// frontend IP configuration named after its UID (as upstream names it,
// a<uid without dashes>) with its own public IP, one rule and one probe
// per port, and the NodePort rules in the network security group. Every
// Service shares one backend pool of node IPs, so a node-set change is
// one pool write per load balancer whatever the number of Services.
// Changes to the shared load balancer and security group go through
// shared (shared.go): coalesced, ETag-checked, re-applied on 412.
type loadBalancers struct {
	cfg       *Section
	clusterID string
	api       *clients
	in        *instances
	clk       clock.PassiveClock

	public, internal *shared[armnetwork.LoadBalancer]
	// nsg is nil when no securityGroupName is configured.
	nsg *shared[armnetwork.SecurityGroup]

	// services lists the cluster's Services (the informer's cache), nil
	// until SetInformers.
	services func() ([]*v1.Service, error)
	// mu guards dests and backendIPs (loadbalancer_nsg.go).
	mu         sync.Mutex
	dests      map[string]svcDests
	backendIPs []string
	// tags are the config's (tags.go).
	tags tagger
	// nics keeps NIC-based pools' members (loadbalancer_nicpool.go); nil
	// with nodeIP pools.
	nics *nicPools
}

var _ cloudprovider.LoadBalancer = (*loadBalancers)(nil)

// Tags on what the manager creates, upstream's keys: a resource is the
// manager's to change or delete only when they name this cluster (and, for
// a public IP, this Service).
const (
	tagCluster = "k8s-azure-cluster-name"
	tagService = "k8s-azure-service"
	// The keys upstream wrote before, which it still reads (cloud-provider-azure
	// pkg/consts/consts.go:352,355); so does this manager, never writing them.
	tagLegacyService = "service"
	tagLegacyCluster = "kubernetes-cluster-name"
)

// pollEvery is how often long-running operations are polled when ARM
// gives no Retry-After; azcore allows no less than a second.
var pollOptions = &runtime.PollUntilDoneOptions{Frequency: time.Second}

func newLoadBalancers(api *clients, s *Section, clusterID string, in *instances, clk clock.Clock) *loadBalancers {
	l := &loadBalancers{cfg: s, clusterID: clusterID, api: api, in: in, clk: clk, dests: map[string]svcDests{}, tags: newTagger(s)}
	name := s.lbName(clusterID)
	l.public = newShared("load balancer "+name, l.lbOps(name), clk)
	l.internal = newShared("load balancer "+name+"-internal", l.lbOps(name+"-internal"), clk)
	if s.nicPools() {
		l.nics = newNICPools(api)
	}
	if s.SecurityGroupName != "" {
		l.nsg = newShared("network security group "+s.SecurityGroupName, l.nsgOps(), clk)
	}
	return l
}

// withPrecondition sends If-Match: etag, or If-None-Match: * to create.
// Only the initial request carries it: the poller's own requests use the
// caller's plain context.
func withPrecondition(ctx context.Context, etag string) context.Context {
	h := http.Header{}
	if etag == "" {
		h.Set("If-None-Match", "*")
	} else {
		h.Set("If-Match", etag)
	}
	return policy.WithHTTPHeader(ctx, h)
}

// cloneJSON deep-copies an ARM model through its own JSON form.
func cloneJSON[T any](v *T) *T {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	out := new(T)
	if err := json.Unmarshal(b, out); err != nil {
		panic(err)
	}
	return out
}

func (l *loadBalancers) lbID(name string) string {
	return "/subscriptions/" + l.cfg.SubscriptionID + "/resourceGroups/" + l.cfg.LoadBalancerResourceGroup +
		"/providers/Microsoft.Network/loadBalancers/" + name
}

// poolName is the cluster's backend pool on either load balancer, as
// upstream's getBackendPoolName names its IPv4 pool (cloud-provider-azure
// pkg/provider/azure_standard.go:261-267: the cluster name, which is
// clusterID here). It MUST NOT change: switched clusters keep upstream's.
func (l *loadBalancers) poolName() string { return l.clusterID }

// poolID is the pool's resource ID on load balancer lbName.
func (l *loadBalancers) poolID(lbName string) string {
	return l.lbID(lbName) + "/backendAddressPools/" + l.poolName()
}

func (l *loadBalancers) lbOps(name string) sharedOps[armnetwork.LoadBalancer] {
	rg := l.cfg.LoadBalancerResourceGroup
	return sharedOps[armnetwork.LoadBalancer]{
		get: func(ctx context.Context) (*armnetwork.LoadBalancer, bool, error) {
			resp, err := l.api.lbs.Get(ctx, rg, name, nil)
			if isNotFound(err) {
				return nil, false, nil
			}
			if err != nil {
				return nil, false, err
			}
			return &resp.LoadBalancer, true, nil
		},
		put: func(ctx context.Context, v *armnetwork.LoadBalancer, etag string) (*armnetwork.LoadBalancer, error) {
			p, err := l.api.lbs.BeginCreateOrUpdate(withPrecondition(ctx, etag), rg, name, *v, nil)
			if err != nil {
				return nil, err
			}
			resp, err := p.PollUntilDone(ctx, pollOptions)
			if err != nil {
				return nil, err
			}
			return &resp.LoadBalancer, nil
		},
		del: func(ctx context.Context, etag string) error {
			p, err := l.api.lbs.BeginDelete(withPrecondition(ctx, etag), rg, name, nil)
			if err != nil {
				return err
			}
			_, err = p.PollUntilDone(ctx, pollOptions)
			return err
		},
		etag:  func(v *armnetwork.LoadBalancer) string { return deref(v.Etag) },
		clone: cloneJSON[armnetwork.LoadBalancer],
		fresh: func() *armnetwork.LoadBalancer {
			return &armnetwork.LoadBalancer{
				Location:   to.Ptr(l.cfg.Location),
				SKU:        &armnetwork.LoadBalancerSKU{Name: to.Ptr(armnetwork.LoadBalancerSKUNameStandard), Tier: to.Ptr(armnetwork.LoadBalancerSKUTierRegional)},
				Tags:       l.tags.fresh(map[string]string{tagCluster: l.clusterID}),
				Properties: &armnetwork.LoadBalancerPropertiesFormat{},
			}
		},
		// A load balancer the manager created goes with its last
		// frontend; one someone else made stays.
		empty: func(v *armnetwork.LoadBalancer) bool {
			return deref(v.Tags[tagCluster]) == l.clusterID && (v.Properties == nil || len(v.Properties.FrontendIPConfigurations) == 0)
		},
	}
}

func (l *loadBalancers) nsgOps() sharedOps[armnetwork.SecurityGroup] {
	rg, name := l.cfg.SecurityGroupResourceGroup, l.cfg.SecurityGroupName
	return sharedOps[armnetwork.SecurityGroup]{
		get: func(ctx context.Context) (*armnetwork.SecurityGroup, bool, error) {
			resp, err := l.api.nsgs.Get(ctx, rg, name, nil)
			if isNotFound(err) {
				return nil, false, nil
			}
			if err != nil {
				return nil, false, err
			}
			return &resp.SecurityGroup, true, nil
		},
		put: func(ctx context.Context, v *armnetwork.SecurityGroup, etag string) (*armnetwork.SecurityGroup, error) {
			if etag == "" {
				return nil, fmt.Errorf("network security group %s/%s does not exist; the manager adds rules to it but never creates it", rg, name)
			}
			// Azure fills the default rules in; sending them back is
			// refused on some API versions.
			v.Properties.DefaultSecurityRules = nil
			p, err := l.api.nsgs.BeginCreateOrUpdate(withPrecondition(ctx, etag), rg, name, *v, nil)
			if err != nil {
				return nil, err
			}
			resp, err := p.PollUntilDone(ctx, pollOptions)
			if err != nil {
				return nil, err
			}
			return &resp.SecurityGroup, nil
		},
		del:   func(context.Context, string) error { return errors.New("never deletes the network security group") },
		etag:  func(v *armnetwork.SecurityGroup) string { return deref(v.Etag) },
		clone: cloneJSON[armnetwork.SecurityGroup],
		fresh: func() *armnetwork.SecurityGroup {
			return &armnetwork.SecurityGroup{Properties: &armnetwork.SecurityGroupPropertiesFormat{}}
		},
	}
}

func serviceKey(svc *v1.Service) string { return svc.Namespace + "/" + svc.Name }

// writerFor is the Service's load balancer writer.
func (l *loadBalancers) writerFor(sp *lbSpec) (this, other *shared[armnetwork.LoadBalancer]) {
	if sp.internal {
		return l.internal, l.public
	}
	return l.public, l.internal
}

func (l *loadBalancers) lbNameFor(internal bool) string {
	if internal {
		return l.cfg.lbName(l.clusterID) + "-internal"
	}
	return l.cfg.lbName(l.clusterID)
}

// GetLoadBalancerName is the cluster load balancer the Service is on.
func (l *loadBalancers) GetLoadBalancerName(_ context.Context, _ string, svc *v1.Service) string {
	internal, _, _ := annotationInternal.Bool(svc)
	return l.lbNameFor(internal)
}

// GetLoadBalancer reports the Service's frontend address, if the Service
// has a frontend on either load balancer.
func (l *loadBalancers) GetLoadBalancer(ctx context.Context, _ string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	names := []lbNames{upstreamNames(l.clusterID, svc), legacyNames(l.clusterID, svc)}
	for _, w := range []*shared[armnetwork.LoadBalancer]{l.public, l.internal} {
		lb, found, err := w.current(ctx, false)
		if err != nil {
			return nil, false, err
		}
		if !found {
			continue
		}
		var fe *armnetwork.FrontendIPConfiguration
		for _, n := range names {
			if fe == nil {
				fe = ruleFrontend(lb, n)
			}
		}
		if fe == nil {
			continue
		}
		st, err := l.frontendStatus(ctx, fe)
		return st, err == nil, err
	}
	return nil, false, nil
}

// frontendStatus is a frontend's address: its private IP, or its public
// IP's address.
func (l *loadBalancers) frontendStatus(ctx context.Context, fe *armnetwork.FrontendIPConfiguration) (*v1.LoadBalancerStatus, error) {
	if fe.Properties == nil {
		return &v1.LoadBalancerStatus{}, nil
	}
	if a := deref(fe.Properties.PrivateIPAddress); a != "" {
		return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: a}}}, nil
	}
	if fe.Properties.PublicIPAddress != nil && fe.Properties.PublicIPAddress.ID != nil {
		rg, name, ok := resourceGroupAndName(*fe.Properties.PublicIPAddress.ID)
		if !ok {
			return nil, fmt.Errorf("frontend %s: malformed public IP ID", deref(fe.Name))
		}
		resp, err := l.api.publicIPs.Get(ctx, rg, name, nil)
		if err != nil {
			return nil, fmt.Errorf("get public IP %s/%s: %w", rg, name, err)
		}
		if resp.Properties != nil && deref(resp.Properties.IPAddress) != "" {
			return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: *resp.Properties.IPAddress}}}, nil
		}
	}
	return &v1.LoadBalancerStatus{}, nil
}

// EnsureLoadBalancer creates or updates the Service's frontend, rules,
// probes, NSG rules and public IP, and returns its address.
func (l *loadBalancers) EnsureLoadBalancer(ctx context.Context, _ string, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	sp, err := serviceSpec(l.cfg, svc)
	if err != nil {
		return nil, err
	}
	backends, err := l.backendAddresses(ctx, nodes)
	if err != nil {
		return nil, err
	}
	this, other := l.writerFor(sp)
	names, err := l.namesFor(ctx, svc)
	if err != nil {
		return nil, err
	}
	// previousPIP is the public IP the Service's frontend had, on either
	// load balancer, before this sync.
	var previousPIP string
	notePIP := func(lb *armnetwork.LoadBalancer) {
		if old := ruleFrontend(lb, names); old != nil && old.Properties != nil && old.Properties.PublicIPAddress != nil {
			previousPIP = deref(old.Properties.PublicIPAddress.ID)
		}
	}
	// The Service may have moved between public and internal.
	if _, err := other.submit(ctx, false, func(lb *armnetwork.LoadBalancer) (bool, error) {
		notePIP(lb)
		return removeService(names)(lb)
	}); err != nil {
		return nil, err
	}
	fe, pipAddress, err := l.frontendFor(ctx, svc, sp, names)
	if err != nil {
		return nil, err
	}
	lbName := l.lbNameFor(sp.internal)
	backendIPs := l.noteBackends(backends)
	// The security rules' destinations: the Service's address with
	// floating IP, else the nodes'. An internal Service's new dynamic
	// address is known only once the load balancer has it.
	dsts := backendIPs
	if sp.floatingIP {
		dsts = nil
		switch {
		case pipAddress != "":
			dsts = []string{pipAddress}
		case sp.internal && sp.staticIP != "":
			dsts = []string{sp.staticIP}
		case sp.internal:
			if cur, _, err := this.current(ctx, false); err == nil {
				if old := findFrontend(cur, names.frontend); old != nil && old.Properties != nil && deref(old.Properties.PrivateIPAddress) != "" && sameFrontend(old.Properties, fe.Properties) {
					dsts = []string{*old.Properties.PrivateIPAddress}
				}
			}
		}
	}
	// A live Service's new rules (its ports changed, floating IP turned
	// on or off) go into the security group before the load balancer
	// sends traffic to the new ports, and the old go only after: no moment
	// admits neither. A new Service's rules and load balancer parts are
	// independent, and their writes (each a long-running operation) go at
	// once.
	live := false
	for _, w := range []*shared[armnetwork.LoadBalancer]{this, other} {
		if cur, _, err := w.current(ctx, false); err == nil && ruleFrontend(cur, names) != nil {
			live = true
		}
	}
	if err := l.dropNICMembers(ctx, this, lbName); err != nil {
		return nil, err
	}
	var lb *armnetwork.LoadBalancer
	g, gctx := errgroup.WithContext(ctx)
	if len(dsts) > 0 {
		l.noteDests(svc, dsts, sp, false)
		first := &nsgEdit{add: sp.access.rules(dsts)}
		if live {
			if err := l.writeSecurity(ctx, first); err != nil {
				return nil, err
			}
		} else {
			g.Go(func() error { return l.writeSecurity(gctx, first) })
		}
	}
	var frontend string
	g.Go(func() error {
		var err error
		lb, err = this.submit(gctx, true, func(lb *armnetwork.LoadBalancer) (bool, error) {
			notePIP(lb)
			var changed bool
			changed, frontend = ensureService(lb, l.lbID(lbName), l.poolName(), names, fe, sp)
			// The config's tags, and the cluster's: a load balancer the
			// upstream CCM made (untagged) is taken over, so it goes with
			// its last Service as upstream's would.
			changed = l.tags.reconcile(&lb.Tags, map[string]string{tagCluster: l.clusterID}) || changed
			return l.ensurePool(lb, backends) || changed, nil
		})
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	got := findFrontend(lb, frontend)
	if got == nil {
		return nil, fmt.Errorf("load balancer %s has no frontend %s after the write", lbName, frontend)
	}
	if err := l.ensureNICMembers(ctx, lb, sp.internal, backends); err != nil {
		return nil, err
	}
	if len(dsts) == 0 && got.Properties != nil && deref(got.Properties.PrivateIPAddress) != "" {
		dsts = []string{*got.Properties.PrivateIPAddress}
		l.noteDests(svc, dsts, sp, false)
	}
	edit, err := l.securityEdit(svc, []lbNames{upstreamNames(l.clusterID, svc), legacyNames(l.clusterID, svc)}, dsts, sp.access, nil)
	if err != nil {
		return nil, err
	}
	if err := l.writeSecurity(ctx, edit); err != nil {
		return nil, err
	}
	l.noteDests(svc, dsts, sp, true)
	// A Service that moved to a user's public IP, or to internal, no
	// longer needs the one the manager made for it.
	if previousPIP != "" && l.isOwnPIPID(svc, previousPIP, names.pip) && !strings.EqualFold(feIPID(fe), previousPIP) {
		if err := l.releasePublicIP(ctx, svc, names.pip); err != nil {
			return nil, err
		}
	}
	if pipAddress != "" {
		return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: pipAddress}}}, nil
	}
	return l.frontendStatus(ctx, got)
}

func feIPID(fe *armnetwork.FrontendIPConfiguration) string {
	if fe.Properties != nil && fe.Properties.PublicIPAddress != nil {
		return deref(fe.Properties.PublicIPAddress.ID)
	}
	return ""
}

// UpdateLoadBalancer brings the shared backend pool in step with nodes:
// one write for every Service on the load balancer together, and none
// when another Service's update already did it.
func (l *loadBalancers) UpdateLoadBalancer(ctx context.Context, _ string, svc *v1.Service, nodes []*v1.Node) error {
	sp, err := serviceSpec(l.cfg, svc)
	if err != nil {
		return err
	}
	backends, err := l.backendAddresses(ctx, nodes)
	if err != nil {
		return err
	}
	this, _ := l.writerFor(sp)
	backendIPs := l.noteBackends(backends)
	if err := l.dropNICMembers(ctx, this, l.lbNameFor(sp.internal)); err != nil {
		return err
	}
	// An update never creates the load balancer: a Service being deleted
	// must not bring it back.
	lb, err := this.submit(ctx, false, func(lb *armnetwork.LoadBalancer) (bool, error) {
		return l.ensurePool(lb, backends), nil
	})
	if err != nil || lb == nil {
		return err
	}
	if err := l.ensureNICMembers(ctx, lb, sp.internal, backends); err != nil {
		return err
	}
	if sp.floatingIP {
		return nil
	}
	// Without floating IP the Service's security rules admit clients to
	// the nodes themselves: they follow the node set.
	names, err := l.namesFor(ctx, svc)
	if err != nil || ruleFrontend(lb, names) == nil {
		return err
	}
	l.noteDests(svc, backendIPs, sp, false)
	edit, err := l.securityEdit(svc, []lbNames{upstreamNames(l.clusterID, svc), legacyNames(l.clusterID, svc)}, backendIPs, sp.access, nil)
	if err != nil {
		return err
	}
	if err := l.writeSecurity(ctx, edit); err != nil {
		return err
	}
	l.noteDests(svc, backendIPs, sp, true)
	return nil
}

// EnsureLoadBalancerDeleted removes the Service's NSG rules, its frontend,
// rules and probes (the load balancer with its last frontend), then its
// public IP if the manager made it. Anything already gone is fine, so a
// deletion interrupted at any point completes on the next try.
func (l *loadBalancers) EnsureLoadBalancerDeleted(ctx context.Context, _ string, svc *v1.Service) error {
	// Both namings: a Service made before upstream's names may still
	// have parts under the legacy ones.
	up, legacy := upstreamNames(l.clusterID, svc), legacyNames(l.clusterID, svc)
	if l.nsg != nil {
		// The Service's destinations leave every rule. Without floating
		// IP they are the nodes', shared with other such Services; the
		// rules of the Service's own NodePorts are its alone, so all
		// their destinations go even when the nodes' addresses are not
		// known yet (the first sync after a restart).
		var extra []string
		if sp, err := serviceSpec(l.cfg, svc); err == nil && !sp.floatingIP {
			l.mu.Lock()
			extra = slices.Clone(l.backendIPs)
			l.mu.Unlock()
			if g, found, err := l.nsg.current(ctx, false); err == nil && found && g.Properties != nil {
				own := sp.access.allowRuleNames()
				for _, r := range g.Properties.SecurityRules {
					if r != nil && r.Properties != nil && slices.Contains(own, deref(r.Name)) {
						extra = append(extra, destinations(r.Properties)...)
					}
				}
			}
		}
		edit, err := l.securityEdit(svc, []lbNames{up, legacy}, nil, nil, extra)
		if err != nil {
			return err
		}
		if err := l.writeSecurity(ctx, edit); err != nil {
			return err
		}
	}
	l.dropDests(svc)
	for i, w := range []*shared[armnetwork.LoadBalancer]{l.public, l.internal} {
		if err := l.releaseNICPool(ctx, w, l.lbNameFor(i == 1), up, legacy); err != nil {
			return err
		}
		if _, err := w.submit(ctx, false, removeService(up, legacy)); err != nil {
			return err
		}
	}
	if err := l.releasePublicIP(ctx, svc, up.pip); err != nil {
		return err
	}
	if err := l.releasePublicIP(ctx, svc, legacy.pip); err != nil {
		return err
	}
	return l.leaveSharedPublicIP(ctx, svc)
}

// leaveSharedPublicIP takes a Service that asked for another Service's
// address off that public IP's list (deleting it if the Service was the
// last).
func (l *loadBalancers) leaveSharedPublicIP(ctx context.Context, svc *v1.Service) error {
	sp, err := serviceSpec(l.cfg, svc)
	if err != nil || sp.internal || sp.staticIP == "" {
		return nil
	}
	rg := l.pipResourceGroup(svc)
	pip, err := l.publicIPByAddress(ctx, rg, sp.staticIP)
	if errors.Is(err, errNoPublicIP) {
		// Gone already (it was this Service's own), or never there.
		return nil
	}
	if err != nil {
		return err
	}
	return l.bindPublicIP(ctx, rg, pip, svc, false)
}

// backendAddresses are the pool's addresses: each Node's first InternalIP,
// or, for a Node whose addresses are not in its status yet (the node
// controller has not initialised it; the service controller does not sync
// again when it does), its VM's private address. Control-plane Nodes are
// left out unless excludeMasterFromStandardLB is false.
func (l *loadBalancers) backendAddresses(ctx context.Context, nodes []*v1.Node) ([]backend, error) {
	out := make([]backend, 0, len(nodes))
	exclude := l.cfg.ExcludeMasterFromStandardLB == nil || *l.cfg.ExcludeMasterFromStandardLB
	for _, n := range nodes {
		if exclude && controlPlaneNode(n) {
			continue
		}
		ip := ""
		for _, a := range n.Status.Addresses {
			if a.Type == v1.NodeInternalIP && !strings.Contains(a.Address, ":") {
				ip = a.Address
				break
			}
		}
		if l.nics != nil {
			// A NIC-based pool needs the node's NIC: from the snapshot,
			// which one listing fills for every node. Only the cloud's
			// own "not found" leaves a node out; any other error fails
			// the sync rather than take nodes out of the pool.
			v, err := l.in.Lookup(ctx, n)
			if errors.Is(err, cloudprovider.InstanceNotFound) {
				klog.FromContext(ctx).Info("Leaving node out of the backend pool", "node", klog.KObj(n), "err", err)
				continue
			}
			if err != nil {
				return nil, err
			}
			if v.ipConfig == "" {
				klog.FromContext(ctx).Info("Leaving node out of the backend pool: its VM has no network interface", "node", klog.KObj(n))
				continue
			}
			if ip == "" {
				for _, a := range v.addresses {
					if a.Type == v1.NodeInternalIP {
						ip = a.Address
						break
					}
				}
			}
			out = append(out, backend{node: n.Name, ip: ip, ipConfig: v.ipConfig})
			continue
		}
		if ip == "" {
			var err error
			if ip, err = l.in.nodeIP(ctx, n); err != nil {
				klog.FromContext(ctx).Info("Leaving node out of the backend pool", "node", klog.KObj(n), "err", err)
				continue
			}
		}
		out = append(out, backend{node: n.Name, ip: ip})
	}
	return out, nil
}

// controlPlaneNode is upstream's isControlPlaneNode
// (cloud-provider-azure pkg/provider/azure_standard.go:142-157): the
// node-role.kubernetes.io/control-plane or .../master label with any
// value, or kubernetes.io/role=master.
func controlPlaneNode(n *v1.Node) bool {
	if _, ok := n.Labels["node-role.kubernetes.io/control-plane"]; ok {
		return true
	}
	if _, ok := n.Labels["node-role.kubernetes.io/master"]; ok {
		return true
	}
	return n.Labels["kubernetes.io/role"] == "master"
}
