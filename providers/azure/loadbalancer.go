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

// poolName is the cluster's backend pool of a family on either load
// balancer, as upstream's getBackendPoolName names them
// (cloud-provider-azure pkg/provider/azure_standard.go:251-267: the
// cluster name, which is clusterID here, and "<cluster>-IPv6" for IPv6,
// dual-stack or not). It MUST NOT change: switched clusters keep
// upstream's.
func (l *loadBalancers) poolName(v6 bool) string {
	if v6 {
		return l.clusterID + ipv6Suffix
	}
	return l.clusterID
}

// poolID is the pool's resource ID on load balancer lbName.
func (l *loadBalancers) poolID(lbName string, v6 bool) string {
	return l.lbID(lbName) + "/backendAddressPools/" + l.poolName(v6)
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
				return nil, lbWriteError(name, err)
			}
			resp, err := p.PollUntilDone(ctx, pollOptions)
			if err != nil {
				return nil, lbWriteError(name, err)
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
		// The cluster's load balancer goes with its last frontend, as
		// upstream's does: it finds it by name and deletes it once no
		// frontend is left (cloud-provider-azure v1.36.5
		// pkg/provider/azure_loadbalancer.go:664-740 cleanOrphanedLoadBalancer).
		// So one upstream made (untagged, and never tagged here) goes too;
		// one tagged for another cluster stays.
		empty: func(v *armnetwork.LoadBalancer) bool {
			return l.ownLB(v) && (v.Properties == nil || len(v.Properties.FrontendIPConfigurations) == 0)
		},
		// NIC-based pools: the scale sets leave them first, which ARM
		// wants before it deletes the load balancer
		// (loadbalancer_nicpool.go releaseForDelete).
		beforeDelete: func(ctx context.Context, cur *armnetwork.LoadBalancer) error {
			return l.releaseForDelete(ctx, cur, name)
		},
	}
}

// ownLB says a load balancer with the cluster's name is the cluster's:
// tagged for this cluster, or not tagged for any (upstream's own tag
// nothing with the cluster: cloud-provider-azure v1.36.5
// pkg/provider/azure_loadbalancer.go:4342-4355 ensureLoadBalancerTagged
// writes only the config's tags). The tag tells apart two clusters of
// one name in one resource group, as listOwnLoadBalancers does.
func (l *loadBalancers) ownLB(v *armnetwork.LoadBalancer) bool {
	for _, k := range []string{tagCluster, tagLegacyCluster} {
		if c, ok := v.Tags[k]; ok && !strings.EqualFold(deref(c), l.clusterID) {
			return false
		}
	}
	return true
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

// famWants are the Service's frontends as this sync wants them, one per
// family in the Service's order, named after base.
func (l *loadBalancers) famWants(base lbNames, sp *lbSpec) []*feWant {
	out := make([]*feWant, 0, len(sp.fams))
	for _, f := range sp.fams {
		out = append(out, &feWant{f: f, names: base.forFamily(f.v6, sp.dualStack), pool: l.poolName(f.v6)})
	}
	return out
}

// allNames are every name the Service's parts may have: upstream's and
// this manager's legacy ones, of both families.
func (l *loadBalancers) allNames(svc *v1.Service) []lbNames {
	up, legacy := upstreamNames(l.clusterID, svc), legacyNames(l.clusterID, svc)
	return []lbNames{up, up.forFamily(true, true), legacy, legacy.forFamily(true, true)}
}

// GetLoadBalancer reports the Service's frontend addresses, one per
// family, if the Service has a frontend on either load balancer.
func (l *loadBalancers) GetLoadBalancer(ctx context.Context, _ string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	fams := serviceFamilies(svc)
	st, exists := &v1.LoadBalancerStatus{}, false
	for _, v6 := range fams {
		names := []lbNames{upstreamNames(l.clusterID, svc).forFamily(v6, len(fams) == 2), legacyNames(l.clusterID, svc).forFamily(v6, len(fams) == 2)}
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
			fs, err := l.frontendStatus(ctx, fe)
			if err != nil {
				return nil, false, err
			}
			st.Ingress = append(st.Ingress, fs.Ingress...)
			exists = true
			break
		}
	}
	return st, exists, nil
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

// familyIPs are the addresses of one family among ips.
func familyIPs(ips []string, v6 bool) []string {
	var out []string
	for _, ip := range ips {
		if strings.Contains(ip, ":") == v6 {
			out = append(out, ip)
		}
	}
	return out
}

// EnsureLoadBalancer creates or updates the Service's frontends (one per
// IP family), rules, probes, NSG rules and public IPs, and returns its
// addresses.
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
	lbName := l.lbNameFor(sp.internal)
	// An IPv6-only Service is refused before anything is made for it
	// when the load balancer has no IPv4 frontend that outlasts every
	// Service (loadbalancer_families.go); the write checks again.
	only6 := !slices.ContainsFunc(sp.fams, func(f famSpec) bool { return !f.v6 })
	var pipVersions map[string]bool
	if only6 {
		if pipVersions, err = l.withLastingIPv4(ctx, this, lbName); err != nil {
			return nil, err
		}
	}
	base, err := l.namesFor(ctx, svc)
	if err != nil {
		return nil, err
	}
	wants := l.famWants(base, sp)
	want6 := slices.ContainsFunc(sp.fams, func(f famSpec) bool { return f.v6 })
	// The names of a family the Service no longer has (dual-stack made
	// single-stack): its frontend goes with this sync, and its public IP.
	var gone []lbNames
	for _, n := range []lbNames{base.forFamily(false, false), base.forFamily(true, true)} {
		if !slices.ContainsFunc(wants, func(w *feWant) bool { return strings.EqualFold(w.names.frontend, n.frontend) }) {
			gone = append(gone, n)
		}
	}
	// previous are the public IPs the Service's frontends had, on either
	// load balancer, before this sync (by family, as wants), and
	// goneSeen says a gone family's frontend was there.
	previous := make([]string, len(wants))
	goneSeen := make([]bool, len(gone))
	notePIPs := func(lb *armnetwork.LoadBalancer) {
		for i, w := range wants {
			if old := ruleFrontend(lb, w.names); old != nil && old.Properties != nil && old.Properties.PublicIPAddress != nil {
				previous[i] = deref(old.Properties.PublicIPAddress.ID)
			}
		}
		for i, n := range gone {
			goneSeen[i] = goneSeen[i] || findFrontend(lb, n.frontend) != nil
		}
	}
	removeNames := make([]lbNames, 0, len(wants)+len(gone))
	for _, w := range wants {
		removeNames = append(removeNames, w.names)
	}
	removeNames = append(removeNames, gone...)
	// The Service may have moved between public and internal; not while
	// its IPv4 frontend is the last beside IPv6 ones there.
	leave := l.keepingIPv4(l.lbNameFor(!sp.internal), "moving the Service off it", removeService(removeNames...))
	if _, err := other.submit(ctx, false, func(lb *armnetwork.LoadBalancer) (bool, error) {
		notePIPs(lb)
		return leave(lb)
	}); err != nil {
		return nil, err
	}
	pipAddress := make([]string, len(wants))
	for i, w := range wants {
		if w.fe, pipAddress[i], err = l.frontendFor(ctx, svc, sp, w.f, w.names); err != nil {
			return nil, err
		}
	}
	backendIPs := l.noteBackends(backends)
	// The security rules' destinations, by family: the Service's address
	// with floating IP, else the nodes'. An internal Service's new
	// dynamic address is known only once the load balancer has it.
	dsts := make([][]string, len(wants))
	for i, w := range wants {
		if !w.f.floatingIP {
			dsts[i] = familyIPs(backendIPs, w.f.v6)
			continue
		}
		switch {
		case pipAddress[i] != "":
			dsts[i] = []string{pipAddress[i]}
		case sp.internal && w.f.staticIP != "":
			dsts[i] = []string{w.f.staticIP}
		case sp.internal:
			if cur, _, err := this.current(ctx, false); err == nil {
				if old := findFrontend(cur, w.names.frontend); old != nil && old.Properties != nil && deref(old.Properties.PrivateIPAddress) != "" && sameFrontend(old.Properties, w.fe.Properties) {
					dsts[i] = []string{*old.Properties.PrivateIPAddress}
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
		if cur, _, err := w.current(ctx, false); err == nil && slices.ContainsFunc(wants, func(fw *feWant) bool { return ruleFrontend(cur, fw.names) != nil }) {
			live = true
		}
	}
	if err := l.dropNICMembers(ctx, this, lbName); err != nil {
		return nil, err
	}
	var lb *armnetwork.LoadBalancer
	g, gctx := errgroup.WithContext(ctx)
	if all := slices.Concat(dsts...); len(all) > 0 {
		l.noteDests(svc, all, sp, false)
		first := &nsgEdit{add: sp.access.rules(all)}
		if live {
			if err := l.writeSecurity(ctx, first); err != nil {
				return nil, err
			}
		} else {
			g.Go(func() error { return l.writeSecurity(gctx, first) })
		}
	}
	g.Go(func() error {
		var err error
		lb, err = this.submit(gctx, true, func(lb *armnetwork.LoadBalancer) (bool, error) {
			notePIPs(lb)
			var changed bool
			if only6 {
				ch, err := l.ensureIPv6Only(lb, lbName, wants, sp, pipVersions)
				if err != nil {
					return false, err
				}
				changed = ch
			} else {
				changed = ensureService(lb, l.lbID(lbName), wants, sp)
			}
			// The config's tags only, as upstream's ensureLoadBalancerTagged:
			// a load balancer the upstream CCM made is served as it is,
			// without the cluster's tag (ownLB needs none; the one created
			// here carries it from fresh).
			changed = l.tags.reconcile(&lb.Tags, nil) || changed
			return l.ensurePools(lb, backends, want6) || changed, nil
		})
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	got := make([]*armnetwork.FrontendIPConfiguration, len(wants))
	for i, w := range wants {
		if got[i] = findFrontend(lb, w.frontend); got[i] == nil {
			return nil, fmt.Errorf("load balancer %s has no frontend %s after the write", lbName, w.frontend)
		}
		if len(dsts[i]) == 0 && got[i].Properties != nil && deref(got[i].Properties.PrivateIPAddress) != "" {
			dsts[i] = []string{*got[i].Properties.PrivateIPAddress}
		}
	}
	if err := l.ensureNICMembers(ctx, lb, sp.internal, backends); err != nil {
		return nil, err
	}
	all := slices.Concat(dsts...)
	l.noteDests(svc, all, sp, false)
	edit, err := l.securityEdit(svc, l.allNames(svc), all, sp.access, nil)
	if err != nil {
		return nil, err
	}
	if err := l.writeSecurity(ctx, edit); err != nil {
		return nil, err
	}
	l.noteDests(svc, all, sp, true)
	// A Service that moved to a user's public IP, or to internal, no
	// longer needs the one the manager made for it; nor does a family it
	// no longer has.
	for i, w := range wants {
		if previous[i] != "" && l.isOwnPIPID(svc, previous[i], w.names.pip) && !strings.EqualFold(feIPID(w.fe), previous[i]) {
			if err := l.releasePublicIP(ctx, svc, w.names.pip); err != nil {
				return nil, err
			}
		}
	}
	for i, n := range gone {
		if goneSeen[i] {
			if err := l.releasePublicIP(ctx, svc, n.pip); err != nil {
				return nil, err
			}
		}
	}
	st := &v1.LoadBalancerStatus{}
	for i := range wants {
		if pipAddress[i] != "" {
			st.Ingress = append(st.Ingress, v1.LoadBalancerIngress{IP: pipAddress[i]})
			continue
		}
		fs, err := l.frontendStatus(ctx, got[i])
		if err != nil {
			return nil, err
		}
		st.Ingress = append(st.Ingress, fs.Ingress...)
	}
	return st, nil
}

func feIPID(fe *armnetwork.FrontendIPConfiguration) string {
	if fe.Properties != nil && fe.Properties.PublicIPAddress != nil {
		return deref(fe.Properties.PublicIPAddress.ID)
	}
	return ""
}

// UpdateLoadBalancer brings the shared backend pools in step with nodes:
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
		return l.ensurePools(lb, backends, false), nil
	})
	if err != nil || lb == nil {
		return err
	}
	if err := l.ensureNICMembers(ctx, lb, sp.internal, backends); err != nil {
		return err
	}
	if !slices.ContainsFunc(sp.fams, func(f famSpec) bool { return !f.floatingIP }) {
		return nil
	}
	// Without floating IP the Service's security rules admit clients to
	// the nodes themselves: they follow the node set. A family with
	// floating IP (an internal dual-stack Service's IPv4 half) keeps its
	// frontend's address.
	base, err := l.namesFor(ctx, svc)
	if err != nil {
		return err
	}
	var dsts []string
	for _, w := range l.famWants(base, sp) {
		fe := ruleFrontend(lb, w.names)
		switch {
		case fe == nil:
			return nil
		case !w.f.floatingIP:
			dsts = append(dsts, familyIPs(backendIPs, w.f.v6)...)
		case fe.Properties != nil && deref(fe.Properties.PrivateIPAddress) != "":
			dsts = append(dsts, *fe.Properties.PrivateIPAddress)
		}
	}
	l.noteDests(svc, dsts, sp, false)
	edit, err := l.securityEdit(svc, l.allNames(svc), dsts, sp.access, nil)
	if err != nil {
		return err
	}
	if err := l.writeSecurity(ctx, edit); err != nil {
		return err
	}
	l.noteDests(svc, dsts, sp, true)
	return nil
}

// EnsureLoadBalancerDeleted removes the Service's NSG rules, its
// frontends, rules and probes (the load balancer with its last frontend),
// then its public IPs if the manager made them. Anything already gone is
// fine, so a deletion interrupted at any point completes on the next try.
func (l *loadBalancers) EnsureLoadBalancerDeleted(ctx context.Context, _ string, svc *v1.Service) error {
	// Both namings: a Service made before upstream's names may still
	// have parts under the legacy ones.
	all := l.allNames(svc)
	if l.nsg != nil {
		// The Service's destinations leave every rule. Without floating
		// IP they are the nodes', shared with other such Services; the
		// rules of the Service's own NodePorts are its alone, so all
		// their destinations go even when the nodes' addresses are not
		// known yet (the first sync after a restart).
		var extra []string
		if sp, err := serviceSpec(l.cfg, svc); err == nil && slices.ContainsFunc(sp.fams, func(f famSpec) bool { return !f.floatingIP }) {
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
		edit, err := l.securityEdit(svc, all, nil, nil, extra)
		if err != nil {
			return err
		}
		if err := l.writeSecurity(ctx, edit); err != nil {
			return err
		}
	}
	l.dropDests(svc)
	// The writer decides from the load balancer as the other Services'
	// removals leave it: whichever batch takes the last frontend releases
	// the NIC-based pools and deletes it. An IPv4 frontend that IPv6
	// ones still need stays (loadbalancer_families.go).
	var held *heldFrontend
	for _, internal := range []bool{false, true} {
		w, _ := l.writerFor(&lbSpec{internal: internal})
		var h *heldFrontend
		if _, err := w.submit(ctx, false, l.removeServiceHolding(l.lbNameFor(internal), &h, all...)); err != nil {
			return err
		}
		if h != nil {
			held = h
		}
	}
	// The public IPs of the Service's families, under either naming,
	// but the one a held frontend still uses.
	fams := serviceFamilies(svc)
	for _, v6 := range fams {
		for _, n := range []lbNames{upstreamNames(l.clusterID, svc), legacyNames(l.clusterID, svc)} {
			name := n.forFamily(v6, len(fams) == 2).pip
			if held != nil && held.pip != "" && l.isOwnPIPID(svc, held.pip, name) {
				continue
			}
			if err := l.releasePublicIP(ctx, svc, name); err != nil {
				return err
			}
		}
	}
	if held != nil {
		return l.heldError(held)
	}
	return l.leaveSharedPublicIP(ctx, svc)
}

// lbWriteError names Azure's rule on ARM's refusal of a load balancer
// with IPv6 frontends and no IPv4 one.
func lbWriteError(name string, err error) error {
	if isIPv4Required(err) {
		return fmt.Errorf("load balancer %s would have IPv6 frontends and no IPv4 one: %w: %w", name, errNeedsIPv4Frontend, err)
	}
	return err
}

// leaveSharedPublicIP takes a Service that asked for another Service's
// address off that public IP's list (deleting it if the Service was the
// last).
func (l *loadBalancers) leaveSharedPublicIP(ctx context.Context, svc *v1.Service) error {
	sp, err := serviceSpec(l.cfg, svc)
	if err != nil || sp.internal {
		return nil
	}
	rg := l.pipResourceGroup(svc)
	for _, f := range sp.fams {
		if f.staticIP == "" {
			continue
		}
		pip, err := l.publicIPByAddress(ctx, rg, f.staticIP)
		if errors.Is(err, errNoPublicIP) {
			// Gone already (it was this Service's own), or never there.
			continue
		}
		if err != nil {
			return err
		}
		if err := l.bindPublicIP(ctx, rg, pip, svc, false); err != nil {
			return err
		}
	}
	return nil
}

// backendAddresses are the pools' addresses: each Node's first InternalIP
// of each family, or, for a Node whose addresses are not in its status
// yet (the node controller has not initialised it; the service controller
// does not sync again when it does), its VM's private addresses.
// Control-plane Nodes are left out unless excludeMasterFromStandardLB is
// false.
func (l *loadBalancers) backendAddresses(ctx context.Context, nodes []*v1.Node) ([]backend, error) {
	out := make([]backend, 0, len(nodes))
	exclude := l.cfg.ExcludeMasterFromStandardLB == nil || *l.cfg.ExcludeMasterFromStandardLB
	for _, n := range nodes {
		if exclude && controlPlaneNode(n) {
			continue
		}
		b := backend{node: n.Name}
		b.ip, b.ip6 = internalIPs(n.Status.Addresses)
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
			if b.ip == "" {
				b.ip, b.ip6 = internalIPs(v.addresses)
			}
			b.ipConfig, b.ipConfig6 = v.ipConfig, v.ipConfig6
			out = append(out, b)
			continue
		}
		if b.ip == "" {
			v, err := l.in.Lookup(ctx, n)
			if err == nil {
				b.ip, b.ip6 = internalIPs(v.addresses)
			}
			if b.ip == "" {
				if err == nil {
					err = fmt.Errorf("VM %s has no private IP address", v.id)
				}
				klog.FromContext(ctx).Info("Leaving node out of the backend pool", "node", klog.KObj(n), "err", err)
				continue
			}
		}
		out = append(out, b)
	}
	return out, nil
}

// internalIPs are the first InternalIP of each family among addrs.
func internalIPs(addrs []v1.NodeAddress) (ip4, ip6 string) {
	for _, a := range addrs {
		if a.Type != v1.NodeInternalIP {
			continue
		}
		if strings.Contains(a.Address, ":") {
			if ip6 == "" {
				ip6 = a.Address
			}
		} else if ip4 == "" {
			ip4 = a.Address
		}
	}
	return ip4, ip6
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
