package openstack

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	v1 "k8s.io/api/core/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/flight"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/lbrecords"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/svcopts"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/ttlcache"

	"github.com/multicloud-ccm/multicloud-ccm/providers/lbhosts"
)

// lbRecordTTL bounds how long a record of a load balancer's pools and
// members is trusted: drift made outside the controller (a member removed
// by hand) is repaired by the next full sync within it.
const lbRecordTTL = 10 * time.Minute

// subnetCacheTTL bounds the age of the subnet list used to find the
// nodes' subnet.
const subnetCacheTTL = 5 * time.Minute

// loadBalancers implements cloudprovider.LoadBalancer with one Octavia
// load balancer per Service (or one several Services share through the
// load-balancer-id annotation, loadbalancer_shared.go): a listener and a
// pool per port, members on the NodePorts, an optional health monitor per
// pool, and a floating IP on the VIP port for external Services.
// Everything is found again by the upstream CCM's deterministic name (or
// its legacy one, or the annotation), so LBs it made are adopted and a
// restart mid-operation converges.
type loadBalancers struct {
	api       *clients
	cfg       *Section
	clusterID string
	clock     clock.Clock
	// in finds the servers of Nodes that have no address yet.
	in *instances
	// firstPoll is the first wait for a PENDING load balancer (tests
	// shorten it).
	firstPoll time.Duration

	// subnets caches the project's subnets (ID -> CIDR) for finding the
	// subnet of the nodes' addresses.
	subnets    *ttlcache.Cache[[]subnetInfo]
	subnetFill flight.Group[[]subnetInfo]
	// versions caches the Octavia API version (octaviaMinor).
	versions    *ttlcache.Cache[int]
	versionFill flight.Group[int]
	// records remember, per Service, the pools and members the last full
	// sync established, so a node set change costs one batch member
	// update per changed pool and no read.
	records *lbrecords.Store[lbRecord]
	// groups is the cluster's member security group, when
	// manageSecurityGroups is on.
	groups *memberGroup
	// upstreamGroups remembers the Services whose upstream CCM security
	// group is gone (loadbalancer_upstreamgroups.go).
	upstreamGroups upstreamGroups
	// locks serialise the work of Services sharing a load balancer.
	locks lbLocks
	// services writes the load-balancer-id annotation on Services; set at
	// Initialize, nil in tests without a cluster.
	services corev1client.CoreV1Interface
	// recorder records the backend's own Events on Services; set at
	// Initialize, nil in tests without a cluster.
	recorder record.EventRecorder
	// own remembers, per Service, the ID of its own load balancer (made
	// for it, or found by its name) as this process last synced it, so an
	// annotation naming that load balancer once it was deleted outside
	// Kubernetes reads as "make it again", not as a mistyped ID (resolve).
	own ownLBs
}

var _ cloudprovider.LoadBalancer = (*loadBalancers)(nil)

func newLoadBalancers(api *clients, s *Section, clusterID string, in *instances, clk clock.Clock) *loadBalancers {
	l := &loadBalancers{api: api, cfg: s, clusterID: clusterID, in: in, clock: clk, firstPoll: firstPoll}
	l.subnets = ttlcache.New[[]subnetInfo](subnetCacheTTL, clk)
	l.versions = ttlcache.New[int](octaviaVersionTTL, clk)
	l.records = lbrecords.New[lbRecord](lbRecordTTL, clk)
	if s.LoadBalancer.ManageSecurityGroups {
		l.groups = newMemberGroup(api, clusterID, s.LoadBalancer.Provider, clk)
	}
	return l
}

// lbName is the upstream OpenStack CCM's name for a Service's load
// balancer, "kube_service_<clusterID>_<namespace>_<name>" cut to Octavia's
// 255 characters, so load balancers it made are adopted, not duplicated.
// MUST NOT change.
func lbName(clusterID string, svc *v1.Service) string {
	return cut("kube_service_"+clusterID+"_"+svc.Namespace+"_"+svc.Name, 255)
}

// childName is the upstream name of a listener, pool or monitor: kind,
// the port's index and the load balancer's name.
func childName(kind string, index int, lb string) string {
	return cut(fmt.Sprintf("%s_%d_%s", kind, index, lb), 255)
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// serviceKey is "<namespace>/<name>".
func serviceKey(svc *v1.Service) string { return svc.Namespace + "/" + svc.Name }

// lbDescription marks a load balancer with the Service and cluster it
// serves, as the upstream CCM words it.
func lbDescription(clusterID string, svc *v1.Service) string {
	return fmt.Sprintf("Kubernetes external service %s from cluster %s", serviceKey(svc), clusterID)
}

// fipDescription is the upstream CCM's description of a floating IP it
// allocated for a Service. Only floating IPs with exactly this
// description (ours, or the upstream CCM's for the same Service) are ever
// released. MUST NOT change.
func fipDescription(clusterID string, svc *v1.Service) string {
	return fmt.Sprintf("Floating IP for Kubernetes external service %s from cluster %s", serviceKey(svc), clusterID)
}

// Tags on the load balancer: the cluster and the Service, so operators
// (and the conformance adapter) can list them. The Service's usage tag
// (usageTag) is upstream's, and says which Services use the load balancer.
func clusterTag(clusterID string) string { return "kube_cluster=" + clusterID }
func serviceTag(svc *v1.Service) string  { return "kube_service=" + serviceKey(svc) }

func (l *loadBalancers) logContext(ctx context.Context, svc *v1.Service) context.Context {
	return klog.NewContext(ctx, klog.FromContext(ctx).WithValues("service", klog.KObj(svc), "loadBalancer", lbName(l.clusterID, svc)))
}

// GetLoadBalancerName ignores clusterName (the --cluster-name flag): the
// cloud-config's clusterID names every resource we own.
func (l *loadBalancers) GetLoadBalancerName(_ context.Context, _ string, svc *v1.Service) string {
	return lbName(l.clusterID, svc)
}

// GetLoadBalancer reports whether anything of the Service's load balancer
// is left: the load balancer it uses (the annotation's, its own), or a
// floating IP we allocated for it. The service controller calls
// EnsureLoadBalancerDeleted only when this says exists, so a floating IP
// left by a crash between the two deletions counts too. A malformed
// annotation is not an error here: the service controller would keep the
// finalizer forever.
func (l *loadBalancers) GetLoadBalancer(ctx context.Context, _ string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	lbs, err := l.resolveAll(ctx, svc)
	if err != nil {
		return nil, false, err
	}
	if len(lbs) > 0 {
		st, err := l.status(ctx, svc, lbs[0])
		if err != nil {
			return nil, false, err
		}
		return st, true, nil
	}
	fips, err := l.ownedFloatingIPs(ctx, svc)
	if err != nil {
		return nil, false, err
	}
	return &v1.LoadBalancerStatus{}, len(fips) > 0, nil
}

// EnsureLoadBalancer creates or updates the Service's load balancer and
// returns its floating IP (or, internal, its VIP) as the status. The load
// balancer's ID goes onto the Service as the load-balancer-id annotation,
// even when the sync fails after finding or making it, as upstream.
func (l *loadBalancers) EnsureLoadBalancer(ctx context.Context, _ string, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	opts, err := parseLBOptions(svc, l.cfg)
	if err != nil {
		return nil, err
	}
	nodes = selectNodes(nodes, opts.nodeSelector)
	ctx = l.logContext(ctx, svc)
	op := l.records.Begin(serviceKey(svc))
	st, rec, id, err := l.ensure(ctx, svc, opts, nodes, true)
	op.End(rec, op.Start)
	if rerr := l.recordID(ctx, svc, id); rerr != nil {
		err = errors.Join(err, rerr)
	}
	if err != nil {
		return nil, fmt.Errorf("ensure load balancer %s for service %s: %w", lbName(l.clusterID, svc), serviceKey(svc), err)
	}
	return st, nil
}

// UpdateLoadBalancer follows a node set change: one batch member update
// per pool whose members changed, from the record of the last full sync
// when there is one.
func (l *loadBalancers) UpdateLoadBalancer(ctx context.Context, _ string, svc *v1.Service, nodes []*v1.Node) error {
	opts, err := parseLBOptions(svc, l.cfg)
	if err != nil {
		return err
	}
	nodes = selectNodes(nodes, opts.nodeSelector)
	ctx = l.logContext(ctx, svc)
	op := l.records.Begin(serviceKey(svc))
	if rec := op.Rec; rec != nil && rec.sig == opts.signature() {
		err := l.updateFromRecord(ctx, opts, nodes, rec)
		if err == nil {
			op.End(rec, op.RecAt)
			return nil
		}
		if !isConflict(err) && !isNotFound(err) && !errors.Is(err, errStaleRecord) {
			op.End(nil, op.Start)
			return fmt.Errorf("update members of load balancer %s for service %s: %w", lbName(l.clusterID, svc), serviceKey(svc), err)
		}
		// The load balancer changed under the record: sync it whole.
		klog.FromContext(ctx).V(2).Info("Record is stale; syncing the load balancer in full", "err", err)
	}
	_, rec, _, err := l.ensure(ctx, svc, opts, nodes, false)
	op.End(rec, op.Start)
	if err != nil {
		return fmt.Errorf("update load balancer %s for service %s: %w", lbName(l.clusterID, svc), serviceKey(svc), err)
	}
	return nil
}

// EnsureLoadBalancerDeleted removes the load balancer (cascade), the
// floating IPs we allocated for it unless kept, the Service's security
// group rules (and the member group with the last of them) and the
// upstream CCM's security group of the Service; of a load balancer other Services use, or that a
// person made, only the Service's listeners and tag. Anything already
// gone is fine.
func (l *loadBalancers) EnsureLoadBalancerDeleted(ctx context.Context, _ string, svc *v1.Service) error {
	ctx = l.logContext(ctx, svc)
	l.records.Forget(serviceKey(svc))
	if err := l.delete(ctx, svc); err != nil {
		return fmt.Errorf("delete load balancer %s of service %s: %w", lbName(l.clusterID, svc), serviceKey(svc), err)
	}
	l.own.set(serviceKey(svc), "")
	return nil
}

// status is the Service's status for its address (the floating IP on
// the VIP port, else the VIP), as ensure reports it. Annotations that
// do not parse count as unset: this only answers whether the load
// balancer exists.
func (l *loadBalancers) status(ctx context.Context, svc *v1.Service, lb *loadbalancers.LoadBalancer) (*v1.LoadBalancerStatus, error) {
	fip, err := l.floatingIPOnPort(ctx, lb.VipPortID)
	if err != nil {
		return nil, err
	}
	addr := lb.VipAddress
	fipAddr := ""
	if fip != nil {
		addr, fipAddr = fip.FloatingIP, fip.FloatingIP
	}
	families := svcopts.Families(svc)
	addrs := familyAddresses(families, lbServes(families, lb), lb, fipAddr)
	if len(addrs) == 0 {
		// A VIP of a family the Service lacks (ensure refuses it):
		// what the load balancer has.
		addrs = []string{addr}
	}
	hostname, _ := parseHostname(svc)
	proxy, _ := parseProxyProtocol(svc)
	return l.ingress(hostname, proxy != "", addrs...), nil
}

// ingress is the status for the address, as upstream's
// createLoadBalancerStatus (loadbalancer.go:1638-1666): the hostname
// annotation's name alone when set; with the PROXY protocol, the address
// with ipMode Proxy, so kube-proxy sends in-cluster clients through the
// load balancer (which adds the header their server expects) instead of
// straight to the endpoints, or with loadBalancer.enableIngressHostname
// the hostname <address>.<suffix> for kube-proxies that predate ipMode;
// else the address.
//
// A load balancer with a VIP of each family has an address of each, in
// spec.ipFamilies order, each as above.
func (l *loadBalancers) ingress(hostname string, proxy bool, addrs ...string) *v1.LoadBalancerStatus {
	if hostname != "" {
		return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{Hostname: hostname}}}
	}
	st := &v1.LoadBalancerStatus{}
	for _, addr := range addrs {
		switch {
		case proxy && l.cfg.LoadBalancer.EnableIngressHostname:
			st.Ingress = append(st.Ingress, v1.LoadBalancerIngress{Hostname: addr + "." + l.cfg.LoadBalancer.IngressHostnameSuffix})
		case proxy:
			mode := v1.LoadBalancerIPModeProxy
			st.Ingress = append(st.Ingress, v1.LoadBalancerIngress{IP: addr, IPMode: &mode})
		default:
			st.Ingress = append(st.Ingress, v1.LoadBalancerIngress{IP: addr})
		}
	}
	return st
}

// batchParallel is how many Services' members a node pass changes at
// once: each load balancer's pool is its own, so their member updates
// share nothing, and each waits for its own load balancer to be ACTIVE
// again.
const batchParallel = 20

var _ lbhosts.Updater = (*loadBalancers)(nil)

// UpdateLoadBalancerHosts updates every Service's members in one pass,
// batchParallel at a time.
func (l *loadBalancers) UpdateLoadBalancerHosts(ctx context.Context, clusterName string, svcs []*v1.Service, nodes []*v1.Node) []error {
	return lbhosts.Parallel(ctx, batchParallel, svcs, func(ctx context.Context, svc *v1.Service) error {
		return l.UpdateLoadBalancer(ctx, clusterName, svc, nodes)
	})
}
