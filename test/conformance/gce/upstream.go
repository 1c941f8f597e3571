package gce

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	computev1 "google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	cloudsimgce "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/gce"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

// The resource kinds of the emulator's inventory: each message's kind
// field (test/cloudsim/gce resources.go). Global and regional health
// checks are both compute#healthCheck.
const (
	kindForwardingRule  = "compute#forwardingRule"
	kindAddress         = "compute#address"
	kindTargetPool      = "compute#targetPool"
	kindHTTPHealthCheck = "compute#httpHealthCheck"
	kindHealthCheck     = "compute#healthCheck"
	kindBackendService  = "compute#backendService"
	kindInstanceGroup   = "compute#instanceGroup"
	kindFirewall        = "compute#firewall"
)

// annotationLBType asks the upstream GCE CCM for an internal load
// balancer with "Internal" (gce_annotations.go:38-47: also the deprecated
// cloud.google.com key and the lower-case value).
const annotationLBType = "networking.gke.io/load-balancer-type"

// What upstream puts in the nodes' health checks (gce.go:78-83,
// gce_healthchecks.go:33-38): kube-proxy's /healthz on 10256, every 8 s
// with a 1 s timeout, healthy after 1 success, unhealthy after 3
// failures.
const (
	upstreamHCPath      = "/healthz"
	upstreamHCPort      = 10256
	upstreamHCInterval  = 8
	upstreamHCTimeout   = 1
	upstreamHCHealthy   = 1
	upstreamHCUnhealthy = 3
)

// upstreamL4Ranges are the L3/L4 health checkers' ranges upstream opens
// to the nodes (gce_loadbalancer.go:74, the default of
// --cloud-provider-gce-lb-src-cidrs). Upstream sends them in the order
// of a Go map (utilnet.IPNetSet.StringSlice); this is the listed order.
var upstreamL4Ranges = []string{"130.211.0.0/22", "35.191.0.0/16", "209.85.152.0/22", "209.85.204.0/22"}

// MakeUpstreamLoadBalancer makes what the upstream GCE CCM
// (kubernetes/cloud-provider-gcp at 4e245312, providers/gce) leaves for
// a Service with default settings, through the Compute Engine API with
// the writes it makes, in its order (and the reads that give their
// inputs), every part named after base =
// cloudprovider.DefaultLoadBalancerName ("a" and the dashless UID, 32
// characters; gce_loadbalancer.go:147-150) and clusterID = clusterName,
// standing for the upstream cluster's ingress-uid. Its descriptions carry
// no cluster ID (gce_loadbalancer_naming.go); the firewall rules target
// the nodes' network tag, upstream's node-tags from gce.conf (without
// them upstream looks for a tag prefixing the instances' names,
// gce_instances.go computeHostTags). The first call of both shapes is
// the GET of the forwarding rule base that finds none
// (gce_loadbalancer.go:171).
//
// External (gce_loadbalancer_external.go ensureExternalLoadBalancer,
// 61-319):
//   - the address base reserved, premium tier, described
//     {"kubernetes.io/service-name":"<ns>/<name>"}, then read for its IP
//     (ensureStaticIP, 201 and 1424-1470);
//   - the firewall rule "k8s-fw-<base>" described
//     {"kubernetes.io/service-name":"<ns>/<name>", "kubernetes.io/service-ip":"<ip>"}
//     admitting 0.0.0.0/0 to the IP on the ports (tcp, upstream's port
//     ranges) at the nodes' tag, priority 1000 (ensureAllowNodeFirewall,
//     224 and 1187-1228; firewallObject 1145-1185);
//   - unless another Service made them (or, with externalTrafficPolicy
//     Local, the Service's own "k8s-<base>-http-hc" described as its
//     client rule and health check base on healthCheckNodePort): the
//     firewall rule "k8s-<clusterID>-node-http-hc" described
//     {"kubernetes.io/cluster-id":"<clusterID>"} admitting the health
//     checkers to tcp 10256, with the first Service's IP as destination
//     as upstream's createFirewall gives it
//     (ensureHTTPHealthCheckFirewall, 1035-1076), and the legacy HTTP
//     health check "k8s-<clusterID>-node" on 10256 /healthz described
//     {"kubernetes.io/service-name":"k8s-<clusterID>-node"} (264,
//     makeHTTPHealthCheck 739-751, ensureHTTPHealthCheck 791-823);
//   - the target pool base with the backends as "/zones/z/instances/i"
//     and the health check, session affinity NONE, described as the
//     address (createTargetPoolAndHealthCheck, 625-667);
//   - the forwarding rule base, described as the address, TCP, port
//     range lo-hi, premium tier, on the IP and the target pool
//     (createForwardingRule, 291 and 1078-1106);
//   - the address deleted, the rule keeping the IP as an ephemeral one
//     (the deferred release, 171-186 with 298).
//
// Internal (gce_loadbalancer_internal.go ensureInternalLoadBalancer,
// 59-272):
//   - per zone of the backends the instance group "k8s-ig--<clusterID>"
//     made if missing (no network: the first member gives it) and the
//     zone's backends added by full URL, by name (121-122,
//     ensureInternalInstanceGroup 661-736);
//   - unless another Service made it, the GLOBAL health check
//     "k8s-<clusterID>-node", HTTP 10256 /healthz, with no description
//     as it is shared (141-148, ensureInternalHealthCheck 620-659,
//     newInternalLBHealthCheck 899-918);
//   - the INTERNAL address base in the cluster's subnetwork, described as
//     the external one (the address manager, 167-182;
//     gce_address_manager.go HoldAddress 61-97, ensureAddressReservation
//     122-146);
//   - the regional backend service base, TCP, INTERNAL, session affinity
//     NONE, the groups and the health check, described as the address
//     (225-226, ensureInternalBackendService 819-846);
//   - the INTERNAL forwarding rule base on that IP in the subnetwork and
//     network, TCP, ports the Service's, described as json.Marshal gives
//     {"kubernetes.io/service-name":"<ns>/<name>"} (184-201, 232-237,
//     1093-1105), then read for its IP (240-245);
//   - the firewall rule "k8s-fw-<base>", as the external one but with
//     GCE's default priority, and unless another Service made it
//     "k8s-<clusterID>-node-hc" with no description admitting the health
//     checkers to tcp 10256 (ensureInternalFirewalls 600-618,
//     ensureInternalFirewall 520-598; naming: makeHealthCheckFirewallName
//     86-91, not the external "-http-hc");
//   - the address deleted (ReleaseAddress, the deferred call at 176-181).
//
// Upstream also puts its finalizer on the Service, gke.networking.io/l4-netlb-v1
// (external 104-108) or gke.networking.io/l4-ilb-v1 (internal 99-103),
// returned in Finalizers; it writes no annotations by default
// (--enable-l4-lb-annotations is off). The cluster ID is upstream's own,
// upstreamUID, which it keeps in kube-system/ingress-uid
// (UpstreamConfigMaps), not clusterName.
func (c *Cloud) MakeUpstreamLoadBalancer(svc *corev1.Service, _ string, backends []conformance.Instance) (conformance.UpstreamLoadBalancer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if len(svc.Spec.Ports) == 0 {
		return conformance.UpstreamLoadBalancer{}, errors.New("a load balancer Service without ports")
	}
	api, err := c.upstreamClients(ctx)
	if err != nil {
		return conformance.UpstreamLoadBalancer{}, err
	}
	defer api.close()
	// A backend given without its zone (the benchmark's) is looked up.
	backends = slices.Clone(backends)
	for i, b := range backends {
		if b.Zone == "" {
			info, ok := c.emu.GetInstance(b.ID)
			if !ok {
				return conformance.UpstreamLoadBalancer{}, fmt.Errorf("no instance %s", b.ID)
			}
			backends[i].Zone = info.Zone
		}
	}
	u := &upstreamLB{Cloud: c, api: api, svc: svc, clusterID: upstreamUID, backends: backends,
		base: cloudprovider.DefaultLoadBalancerName(svc), svcKey: svc.Namespace + "/" + svc.Name}

	c.mu.Lock()
	if c.upstream == nil {
		c.upstream = map[string][]string{}
	}
	if !slices.Contains(c.upstream[u.svcKey], u.base) {
		c.upstream[u.svcKey] = append(c.upstream[u.svcKey], u.base)
	}
	c.cached = nil
	c.mu.Unlock()

	if _, err := api.rules.Get(ctx, &computepb.GetForwardingRuleRequest{Project: c.fx.Project, Region: c.fx.Region, ForwardingRule: u.base}); err == nil {
		return conformance.UpstreamLoadBalancer{}, fmt.Errorf("forwarding rule %s exists already", u.base)
	} else if !notFound(err) {
		return conformance.UpstreamLoadBalancer{}, fmt.Errorf("get forwarding rule %s: %w", u.base, err)
	}
	// Exclusive: a new forwarding rule, target pool or backend service
	// (of either shape) would be a second load balancer for the Service.
	// Health checks, instance groups and firewall rules are left out: one
	// made besides upstream's is a part of another name, not a duplicate,
	// and replacing upstream's is what Kept catches.
	var ip string
	var exclusive, kept []string
	finalizer := "gke.networking.io/l4-netlb-v1"
	if upstreamInternal(svc) {
		finalizer = "gke.networking.io/l4-ilb-v1"
		ip, err = u.internal(ctx)
		exclusive = []string{kindForwardingRule, kindBackendService, kindTargetPool}
		kept = []string{kindForwardingRule, kindBackendService, kindHealthCheck, kindInstanceGroup, kindFirewall}
	} else {
		ip, err = u.external(ctx)
		exclusive = []string{kindForwardingRule, kindTargetPool, kindBackendService}
		kept = []string{kindForwardingRule, kindTargetPool, kindHTTPHealthCheck, kindFirewall}
	}
	if err != nil {
		return conformance.UpstreamLoadBalancer{}, err
	}
	// Addresses are in neither list. Upstream leaves none (the rule holds
	// its IP as an ephemeral one), and a manager that keeps its load
	// balancers' IPs reserved promotes that IP with an address of its own
	// on its first sync: a new address resource, but the same IP, not a
	// duplicate; an address with another IP would change the Service's
	// status, which the scenario checks, or be left after deletion, which
	// it checks too.
	return conformance.UpstreamLoadBalancer{
		ID:         "projects/" + c.fx.Project + "/regions/" + c.fx.Region + "/forwardingRules/" + u.base,
		Status:     corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: ip}}},
		Exclusive:  exclusive,
		Kept:       kept,
		Finalizers: []string{finalizer},
	}, nil
}

// upstreamUID is the cluster ID the upstream CCM generated for the
// cluster (gce_clusterid.go makeUID: 8 random bytes, hex).
const upstreamUID = "5f1e2d3c4b5a6978"

// UpstreamConfigMaps is the ConfigMap upstream keeps its cluster ID in
// (gce_clusterid.go:43-53, 186-210): both keys, as it creates them.
func (c *Cloud) UpstreamConfigMaps() []*corev1.ConfigMap {
	return []*corev1.ConfigMap{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "ingress-uid"},
		Data:       map[string]string{"uid": upstreamUID, "provider-uid": upstreamUID},
	}}
}

// upstreamInternal is upstream's getSvcScheme (gce_loadbalancer.go:322-327
// with gce_annotations.go:115-140): the type annotation, either key, is
// Internal or internal.
func upstreamInternal(svc *corev1.Service) bool {
	for _, k := range []string{annotationLBType, "cloud.google.com/load-balancer-type"} {
		if v, ok := svc.Annotations[k]; ok {
			return v == "Internal" || v == "internal"
		}
	}
	return false
}

// upstreamLB is one MakeUpstreamLoadBalancer call.
type upstreamLB struct {
	*Cloud
	api       *upstreamAPI
	svc       *corev1.Service
	clusterID string
	backends  []conformance.Instance
	base      string
	svcKey    string
}

// external is ensureExternalLoadBalancer for a new Service; it returns
// the IP.
func (u *upstreamLB) external(ctx context.Context) (string, error) {
	fx := u.fx
	ports := u.svc.Spec.Ports
	svcDesc := serviceDescription(u.svcKey)

	// ensureStaticIP: reserve, then read by name.
	if err := u.api.wait(ctx, "reserve address "+u.base)(u.api.addresses.Insert(ctx, &computepb.InsertAddressRequest{Project: fx.Project, Region: fx.Region, AddressResource: &computepb.Address{
		Name: proto.String(u.base), Description: proto.String(svcDesc), NetworkTier: proto.String("PREMIUM"),
	}})); err != nil {
		return "", err
	}
	addr, err := u.api.addresses.Get(ctx, &computepb.GetAddressRequest{Project: fx.Project, Region: fx.Region, Address: u.base})
	if err != nil {
		return "", fmt.Errorf("get address %s: %w", u.base, err)
	}
	ip := addr.GetAddress()

	// ensureAllowNodeFirewall.
	if err := u.createFirewall(ctx, &computepb.Firewall{
		Name: proto.String("k8s-fw-" + u.base), Description: proto.String(firewallDescription(u.svcKey, ip)),
		Network: proto.String(fx.NetworkURL), SourceRanges: []string{"0.0.0.0/0"}, TargetTags: []string{u.nodeTag()},
		Allowed:           []*computepb.Allowed{{IPProtocol: proto.String(strings.ToLower(string(ports[0].Protocol))), Ports: portRanges(ports)}},
		Priority:          proto.Int32(1000),
		DestinationRanges: []string{ip},
	}); err != nil {
		return "", err
	}

	// createTargetPoolAndHealthCheck: the nodes' health check's firewall,
	// the health check, the pool. A Service with externalTrafficPolicy
	// Local and a healthCheckNodePort gets its own health check, named
	// base, on that port (ensureExternalLoadBalancer 245-262 with
	// servicehelpers.GetServiceHealthCheckPathPort), and its own firewall
	// rule "k8s-<base>-http-hc" described as the Service's client rule
	// (ensureHTTPHealthCheckFirewall 1035-1076, MakeHealthCheckFirewallName
	// gce_loadbalancer_naming.go:119-124), made after the GET finding none.
	hcName, hcPort := "k8s-"+u.clusterID+"-node", int64(upstreamHCPort)
	hcFW := &computepb.Firewall{
		Name: proto.String(hcName + "-http-hc"), Description: proto.String(fmt.Sprintf(`{"kubernetes.io/cluster-id":"%s"}`, u.clusterID)),
		Network: proto.String(fx.NetworkURL), SourceRanges: slices.Clone(upstreamL4Ranges), TargetTags: []string{u.nodeTag()},
		Allowed:           []*computepb.Allowed{{IPProtocol: proto.String("tcp"), Ports: []string{strconv.Itoa(upstreamHCPort)}}},
		Priority:          proto.Int32(1000),
		DestinationRanges: []string{ip},
	}
	ensureHCFirewall := u.ensureFirewall
	if local := u.svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal && u.svc.Spec.HealthCheckNodePort != 0; local {
		hcName, hcPort = u.base, int64(u.svc.Spec.HealthCheckNodePort)
		hcFW.Name, hcFW.Description = proto.String("k8s-"+u.base+"-http-hc"), proto.String(firewallDescription(u.svcKey, ip))
		hcFW.Allowed[0].Ports = []string{strconv.Itoa(int(hcPort))}
		ensureHCFirewall = u.createFirewall
	}
	if err := ensureHCFirewall(ctx, hcFW); err != nil {
		return "", err
	}
	hc, err := u.api.legacyHC.Get(fx.Project, hcName).Context(ctx).Do()
	if notFound(err) {
		op, ierr := u.api.legacyHC.Insert(fx.Project, &computev1.HttpHealthCheck{
			Name: hcName, Port: hcPort, RequestPath: upstreamHCPath, Description: serviceDescription(hcName),
			CheckIntervalSec: upstreamHCInterval, TimeoutSec: upstreamHCTimeout, HealthyThreshold: upstreamHCHealthy, UnhealthyThreshold: upstreamHCUnhealthy,
		}).Context(ctx).Do()
		if err := u.api.waitLegacy(ctx, fx.Project, op, ierr); err != nil {
			return "", fmt.Errorf("create HTTP health check %s: %w", hcName, err)
		}
		hc, err = u.api.legacyHC.Get(fx.Project, hcName).Context(ctx).Do()
	}
	if err != nil {
		return "", fmt.Errorf("get HTTP health check %s: %w", hcName, err)
	}
	var instances []string
	for _, b := range u.backends {
		instances = append(instances, fmt.Sprintf("/zones/%s/instances/%s", b.Zone, b.ID))
	}
	if err := u.api.wait(ctx, "create target pool "+u.base)(u.api.pools.Insert(ctx, &computepb.InsertTargetPoolRequest{Project: fx.Project, Region: fx.Region, TargetPoolResource: &computepb.TargetPool{
		Name: proto.String(u.base), Description: proto.String(svcDesc), Instances: instances,
		SessionAffinity: proto.String(upstreamAffinity(u.svc.Spec.SessionAffinity)), HealthChecks: []string{hc.SelfLink},
	}})); err != nil {
		return "", err
	}

	// createForwardingRule.
	lo, hi := ports[0].Port, ports[0].Port
	for _, p := range ports {
		lo, hi = min(lo, p.Port), max(hi, p.Port)
	}
	if err := u.api.wait(ctx, "create forwarding rule "+u.base)(u.api.rules.Insert(ctx, &computepb.InsertForwardingRuleRequest{Project: fx.Project, Region: fx.Region, ForwardingRuleResource: &computepb.ForwardingRule{
		Name: proto.String(u.base), Description: proto.String(svcDesc), IPAddress: proto.String(ip),
		IPProtocol: proto.String(string(ports[0].Protocol)), PortRange: proto.String(fmt.Sprintf("%d-%d", lo, hi)),
		Target:      proto.String(cloudsimgce.LinkBase + "projects/" + fx.Project + "/regions/" + fx.Region + "/targetPools/" + u.base),
		NetworkTier: proto.String("PREMIUM"),
	}})); err != nil {
		return "", err
	}

	// The deferred release: the address goes, the rule keeps its IP.
	if err := u.api.wait(ctx, "release address "+u.base)(u.api.addresses.Delete(ctx, &computepb.DeleteAddressRequest{Project: fx.Project, Region: fx.Region, Address: u.base})); err != nil {
		return "", err
	}
	return ip, nil
}

// internal is ensureInternalLoadBalancer for a new Service with
// externalTrafficPolicy Cluster; it returns the IP.
func (u *upstreamLB) internal(ctx context.Context) (string, error) {
	fx := u.fx
	ports := u.svc.Spec.Ports
	protocol := string(ports[0].Protocol)
	svcDesc := serviceDescription(u.svcKey)

	// ensureInternalInstanceGroups.
	igName := "k8s-ig--" + u.clusterID
	byZone := map[string][]string{}
	for _, b := range u.backends {
		byZone[b.Zone] = append(byZone[b.Zone], b.ID)
	}
	var backends []*computepb.Backend
	for _, zone := range sortedKeys(byZone) {
		link, err := u.ensureInstanceGroup(ctx, igName, zone, byZone[zone])
		if err != nil {
			return "", err
		}
		backends = append(backends, &computepb.Backend{Group: proto.String(link)})
	}

	// ensureInternalHealthCheck: the global health check.
	hcName := "k8s-" + u.clusterID + "-node"
	hc, err := u.api.healthChecks.Get(ctx, &computepb.GetHealthCheckRequest{Project: fx.Project, HealthCheck: hcName})
	if notFound(err) {
		if err := u.api.wait(ctx, "create health check "+hcName)(u.api.healthChecks.Insert(ctx, &computepb.InsertHealthCheckRequest{Project: fx.Project, HealthCheckResource: &computepb.HealthCheck{
			Name: proto.String(hcName), CheckIntervalSec: proto.Int32(upstreamHCInterval), TimeoutSec: proto.Int32(upstreamHCTimeout),
			HealthyThreshold: proto.Int32(upstreamHCHealthy), UnhealthyThreshold: proto.Int32(upstreamHCUnhealthy),
			HttpHealthCheck: &computepb.HTTPHealthCheck{Port: proto.Int32(upstreamHCPort), RequestPath: proto.String(upstreamHCPath)},
			Type:            proto.String("HTTP"),
		}})); err != nil {
			return "", err
		}
		hc, err = u.api.healthChecks.Get(ctx, &computepb.GetHealthCheckRequest{Project: fx.Project, HealthCheck: hcName})
	}
	if err != nil {
		return "", fmt.Errorf("get health check %s: %w", hcName, err)
	}

	// The address manager's HoldAddress.
	if _, err := u.api.addresses.Get(ctx, &computepb.GetAddressRequest{Project: fx.Project, Region: fx.Region, Address: u.base}); err == nil {
		return "", fmt.Errorf("address %s exists already", u.base)
	} else if !notFound(err) {
		return "", fmt.Errorf("get address %s: %w", u.base, err)
	}
	if err := u.api.wait(ctx, "reserve address "+u.base)(u.api.addresses.Insert(ctx, &computepb.InsertAddressRequest{Project: fx.Project, Region: fx.Region, AddressResource: &computepb.Address{
		Name: proto.String(u.base), Description: proto.String(svcDesc), AddressType: proto.String("INTERNAL"), Subnetwork: proto.String(fx.SubnetworkURL),
	}})); err != nil {
		return "", err
	}
	addr, err := u.api.addresses.Get(ctx, &computepb.GetAddressRequest{Project: fx.Project, Region: fx.Region, Address: u.base})
	if err != nil {
		return "", fmt.Errorf("get address %s: %w", u.base, err)
	}

	// ensureInternalBackendService.
	if err := u.api.wait(ctx, "create backend service "+u.base)(u.api.backendServices.Insert(ctx, &computepb.InsertRegionBackendServiceRequest{Project: fx.Project, Region: fx.Region, BackendServiceResource: &computepb.BackendService{
		Name: proto.String(u.base), Protocol: proto.String(protocol), Description: proto.String(svcDesc),
		HealthChecks: []string{hc.GetSelfLink()}, Backends: backends,
		SessionAffinity: proto.String(upstreamAffinity(u.svc.Spec.SessionAffinity)), LoadBalancingScheme: proto.String("INTERNAL"),
	}})); err != nil {
		return "", err
	}

	// ensureInternalForwardingRule, then the rule read for its IP.
	rule := &computepb.ForwardingRule{
		Name: proto.String(u.base), Description: proto.String(svcDesc), IPAddress: proto.String(addr.GetAddress()),
		BackendService: proto.String(cloudsimgce.LinkBase + "projects/" + fx.Project + "/regions/" + fx.Region + "/backendServices/" + u.base),
		IPProtocol:     proto.String(protocol), LoadBalancingScheme: proto.String("INTERNAL"),
		Subnetwork: proto.String(fx.SubnetworkURL), Network: proto.String(fx.NetworkURL),
	}
	for _, p := range ports {
		rule.Ports = append(rule.Ports, strconv.Itoa(int(p.Port)))
	}
	if len(rule.Ports) > 5 {
		rule.Ports, rule.AllPorts = nil, proto.Bool(true)
	}
	if err := u.api.wait(ctx, "create forwarding rule "+u.base)(u.api.rules.Insert(ctx, &computepb.InsertForwardingRuleRequest{Project: fx.Project, Region: fx.Region, ForwardingRuleResource: rule})); err != nil {
		return "", err
	}
	got, err := u.api.rules.Get(ctx, &computepb.GetForwardingRuleRequest{Project: fx.Project, Region: fx.Region, ForwardingRule: u.base})
	if err != nil {
		return "", fmt.Errorf("get forwarding rule %s: %w", u.base, err)
	}
	ip := got.GetIPAddress()

	// ensureInternalFirewalls: traffic, then the nodes' health checks.
	if err := u.createFirewall(ctx, &computepb.Firewall{
		Name: proto.String("k8s-fw-" + u.base), Description: proto.String(firewallDescription(u.svcKey, ip)),
		Network: proto.String(fx.NetworkURL), SourceRanges: []string{"0.0.0.0/0"}, TargetTags: []string{u.nodeTag()},
		Allowed:           []*computepb.Allowed{{IPProtocol: proto.String(strings.ToLower(protocol)), Ports: portRanges(ports)}},
		DestinationRanges: []string{ip},
	}); err != nil {
		return "", err
	}
	if err := u.ensureFirewall(ctx, &computepb.Firewall{
		Name:    proto.String(hcName + "-hc"),
		Network: proto.String(fx.NetworkURL), SourceRanges: slices.Clone(upstreamL4Ranges), TargetTags: []string{u.nodeTag()},
		Allowed: []*computepb.Allowed{{IPProtocol: proto.String("tcp"), Ports: []string{strconv.Itoa(upstreamHCPort)}}},
	}); err != nil {
		return "", err
	}

	// ReleaseAddress.
	if err := u.api.wait(ctx, "release address "+u.base)(u.api.addresses.Delete(ctx, &computepb.DeleteAddressRequest{Project: fx.Project, Region: fx.Region, Address: u.base})); err != nil {
		return "", err
	}
	return ip, nil
}

// ensureInstanceGroup is ensureInternalInstanceGroup: the group made if
// missing, then read for its link, and the names it lacks added by full
// URL in name order (ToInstanceReferences, gce_instances.go:88-94).
func (u *upstreamLB) ensureInstanceGroup(ctx context.Context, name, zone string, names []string) (string, error) {
	fx := u.fx
	ig, err := u.api.groups.Get(ctx, &computepb.GetInstanceGroupRequest{Project: fx.Project, Zone: zone, InstanceGroup: name})
	have := map[string]bool{}
	switch {
	case notFound(err):
		if err := u.api.wait(ctx, "create instance group "+name)(u.api.groups.Insert(ctx, &computepb.InsertInstanceGroupRequest{Project: fx.Project, Zone: zone,
			InstanceGroupResource: &computepb.InstanceGroup{Name: proto.String(name)}})); err != nil {
			return "", err
		}
		if ig, err = u.api.groups.Get(ctx, &computepb.GetInstanceGroupRequest{Project: fx.Project, Zone: zone, InstanceGroup: name}); err != nil {
			return "", fmt.Errorf("get instance group %s in %s: %w", name, zone, err)
		}
	case err != nil:
		return "", fmt.Errorf("get instance group %s in %s: %w", name, zone, err)
	default:
		it := u.api.groups.ListInstances(ctx, &computepb.ListInstancesInstanceGroupsRequest{Project: fx.Project, Zone: zone, InstanceGroup: name,
			InstanceGroupsListInstancesRequestResource: &computepb.InstanceGroupsListInstancesRequest{InstanceState: proto.String("ALL")}})
		for {
			m, err := it.Next()
			if err != nil {
				if errors.Is(err, iterator.Done) {
					break
				}
				return "", fmt.Errorf("list instances of %s in %s: %w", name, zone, err)
			}
			have[lastSegment(m.GetInstance())] = true
		}
	}
	var refs []*computepb.InstanceReference
	for _, n := range slices.Sorted(slices.Values(names)) {
		if !have[n] {
			refs = append(refs, &computepb.InstanceReference{Instance: proto.String(cloudsimgce.LinkBase + "projects/" + fx.Project + "/zones/" + zone + "/instances/" + n)})
		}
	}
	if len(refs) > 0 {
		if err := u.api.wait(ctx, "add instances to "+name)(u.api.groups.AddInstances(ctx, &computepb.AddInstancesInstanceGroupRequest{Project: fx.Project, Zone: zone, InstanceGroup: name,
			InstanceGroupsAddInstancesRequestResource: &computepb.InstanceGroupsAddInstancesRequest{Instances: refs}})); err != nil {
			return "", err
		}
	}
	return ig.GetSelfLink(), nil
}

// createFirewall makes a Service's own firewall rule, after the GET that
// finds none.
func (u *upstreamLB) createFirewall(ctx context.Context, fw *computepb.Firewall) error {
	if _, err := u.api.firewalls.Get(ctx, &computepb.GetFirewallRequest{Project: u.fx.Project, Firewall: fw.GetName()}); err == nil {
		return fmt.Errorf("firewall %s exists already", fw.GetName())
	} else if !notFound(err) {
		return fmt.Errorf("get firewall %s: %w", fw.GetName(), err)
	}
	return u.api.wait(ctx, "create firewall "+fw.GetName())(u.api.firewalls.Insert(ctx, &computepb.InsertFirewallRequest{Project: u.fx.Project, FirewallResource: fw}))
}

// ensureFirewall makes a cluster's shared firewall rule unless another
// Service made it already (upstream would correct one that drifted; ours
// are made only here).
func (u *upstreamLB) ensureFirewall(ctx context.Context, fw *computepb.Firewall) error {
	_, err := u.api.firewalls.Get(ctx, &computepb.GetFirewallRequest{Project: u.fx.Project, Firewall: fw.GetName()})
	switch {
	case err == nil:
		return nil
	case !notFound(err):
		return fmt.Errorf("get firewall %s: %w", fw.GetName(), err)
	}
	return u.api.wait(ctx, "create firewall "+fw.GetName())(u.api.firewalls.Insert(ctx, &computepb.InsertFirewallRequest{Project: u.fx.Project, FirewallResource: fw}))
}

// serviceDescription is upstream's makeServiceDescription, also
// makeHealthCheckDescription, makeBackendServiceDescription for an
// unshared backend service and the address manager's
// (gce_loadbalancer_naming.go:93-115, gce_address_manager.go:127).
func serviceDescription(name string) string {
	return fmt.Sprintf(`{"kubernetes.io/service-name":"%s"}`, name)
}

// firewallDescription is upstream's makeFirewallDescription
// (gce_loadbalancer_naming.go:139-142), with its space.
func firewallDescription(svcKey, ip string) string {
	return fmt.Sprintf(`{"kubernetes.io/service-name":"%s", "kubernetes.io/service-ip":"%s"}`, svcKey, ip)
}

// upstreamAffinity is translateAffinityType
// (gce_loadbalancer_external.go:974-984).
func upstreamAffinity(a corev1.ServiceAffinity) string {
	if a == corev1.ServiceAffinityClientIP {
		return "CLIENT_IP"
	}
	return "NONE"
}

// portRanges is upstream's getPortRanges of the Service's ports
// (gce_loadbalancer_internal.go:999-1055): sorted, runs of consecutive
// ports as "lo-hi", duplicates once.
func portRanges(ports []corev1.ServicePort) []string {
	var ns []int
	for _, p := range ports {
		ns = append(ns, int(p.Port))
	}
	sort.Ints(ns)
	ns = slices.Compact(ns)
	var out []string
	for i := 0; i < len(ns); {
		j := i
		for j+1 < len(ns) && ns[j+1] == ns[j]+1 {
			j++
		}
		if i == j {
			out = append(out, strconv.Itoa(ns[i]))
		} else {
			out = append(out, fmt.Sprintf("%d-%d", ns[i], ns[j]))
		}
		i = j + 1
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// upstreamAPI are the Compute Engine clients MakeUpstreamLoadBalancer
// calls, the REST clients of cloud.google.com/go/compute and, for the
// legacy HTTP health checks it has none for, google.golang.org/api's
// (as providers/gce/clients.go builds them), calling as the harness's
// service account (adminOptions), never the manager's.
type upstreamAPI struct {
	addresses       *compute.AddressesClient
	firewalls       *compute.FirewallsClient
	rules           *compute.ForwardingRulesClient
	pools           *compute.TargetPoolsClient
	healthChecks    *compute.HealthChecksClient
	backendServices *compute.RegionBackendServicesClient
	groups          *compute.InstanceGroupsClient
	legacyHC        *computev1.HttpHealthChecksService
	legacyOps       *computev1.GlobalOperationsService
	closers         []interface{ Close() error }
}

func (c *Cloud) upstreamClients(ctx context.Context) (*upstreamAPI, error) {
	opts := c.adminOptions("")
	a := &upstreamAPI{}
	var errs []error
	add := func(cl interface{ Close() error }, err error) {
		errs = append(errs, err)
		if err == nil {
			a.closers = append(a.closers, cl)
		}
	}
	var err error
	a.addresses, err = compute.NewAddressesRESTClient(ctx, opts...)
	add(a.addresses, err)
	a.firewalls, err = compute.NewFirewallsRESTClient(ctx, opts...)
	add(a.firewalls, err)
	a.rules, err = compute.NewForwardingRulesRESTClient(ctx, opts...)
	add(a.rules, err)
	a.pools, err = compute.NewTargetPoolsRESTClient(ctx, opts...)
	add(a.pools, err)
	a.healthChecks, err = compute.NewHealthChecksRESTClient(ctx, opts...)
	add(a.healthChecks, err)
	a.backendServices, err = compute.NewRegionBackendServicesRESTClient(ctx, opts...)
	add(a.backendServices, err)
	a.groups, err = compute.NewInstanceGroupsRESTClient(ctx, opts...)
	add(a.groups, err)
	legacy, err := computev1.NewService(ctx, c.adminOptions("/compute/v1/")...)
	errs = append(errs, err)
	if err == nil {
		a.legacyHC, a.legacyOps = computev1.NewHttpHealthChecksService(legacy), computev1.NewGlobalOperationsService(legacy)
	}
	if err := errors.Join(errs...); err != nil {
		a.close()
		return nil, err
	}
	return a, nil
}

func (a *upstreamAPI) close() {
	for _, c := range a.closers {
		_ = c.Close()
	}
}

// wait waits for the operation a call started and fails on its error,
// naming what was done.
func (a *upstreamAPI) wait(ctx context.Context, what string) func(*compute.Operation, error) error {
	return func(op *compute.Operation, err error) error {
		if err == nil {
			err = op.Wait(ctx)
		}
		if err == nil {
			if e := op.Proto().GetError(); e != nil && len(e.GetErrors()) > 0 {
				err = fmt.Errorf("operation %s: %s: %s", op.Name(), e.GetErrors()[0].GetCode(), e.GetErrors()[0].GetMessage())
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}
}

// waitLegacy waits for a global operation the discovery client started.
func (a *upstreamAPI) waitLegacy(ctx context.Context, project string, op *computev1.Operation, err error) error {
	for err == nil && op.Status != "DONE" {
		op, err = a.legacyOps.Wait(project, op.Name).Context(ctx).Do()
	}
	if err != nil {
		return err
	}
	if op.Error != nil && len(op.Error.Errors) > 0 {
		return fmt.Errorf("operation %s: %s: %s", op.Name, op.Error.Errors[0].Code, op.Error.Errors[0].Message)
	}
	return nil
}

// notFound is Compute Engine's 404, from either client.
func notFound(err error) bool {
	var ge *googleapi.Error
	return errors.As(err, &ge) && ge.Code == 404
}

// TrackUID tells the adapter a Service's UID, so the parts a real upstream
// CCM names after it (cloudprovider.DefaultLoadBalancerName, with
// descriptions that name no cluster) are found as that Service's
// (test/upstreamcheck).
func (c *Cloud) TrackUID(svc types.NamespacedName, uid types.UID) {
	base := cloudprovider.DefaultLoadBalancerName(&corev1.Service{ObjectMeta: metav1.ObjectMeta{UID: uid}})
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.upstream == nil {
		c.upstream = map[string][]string{}
	}
	if !slices.Contains(c.upstream[svc.String()], base) {
		c.upstream[svc.String()] = append(c.upstream[svc.String()], base)
	}
	c.cached = nil
}
