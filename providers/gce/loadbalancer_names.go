package gce

import (
	"context"
	"encoding/json"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/naming"
)

// Names of what a Service's load balancer is made of, upstream's, so load
// balancers the upstream GCE CCM made are found and adopted rather than
// duplicated: everything is named after the Service's UID
// ("a<uid without dashes>", 32 characters at most), firewall rules with
// the k8s-fw- prefix, the shared node health check after the cluster.

// lbName is the Service's base name: the target pool, the first
// forwarding rule, the reserved address and (Local) the health check.
func lbName(svc *v1.Service) string {
	return cloudprovider.DefaultLoadBalancerName(svc)
}

// forwardingRuleName is the forwarding rule for one protocol: the base
// name for the Service's first protocol (as upstream names its one rule),
// "<base>-<protocol>" for others.
func forwardingRuleName(base string, protocol v1.Protocol, first bool) string {
	if first {
		return base
	}
	return base + "-" + strings.ToLower(string(protocol))
}

// firewallName is the rule admitting clients to the Service's ports.
func firewallName(base string) string { return "k8s-fw-" + base }

// nodeHealthCheckName is the cluster's shared health check of kube-proxy
// on every node (Services with externalTrafficPolicy Cluster), upstream's
// "k8s-<cluster ID>-node" (gce_loadbalancer_naming.go MakeNodesHealthCheckName).
func nodeHealthCheckName(clusterID string) string {
	return "k8s-" + naming.Alnum(clusterID, 40) + "-node"
}

// healthCheckFirewallName admits Google's health checkers to a health
// check's port on the nodes, as upstream's MakeHealthCheckFirewallName
// (gce_loadbalancer_naming.go:114-121): "<node check>-http-hc" for the
// cluster's shared check, "k8s-<check>-http-hc" for a Service's own.
// These MUST NOT change: switched clusters find upstream's rules by them.
func healthCheckFirewallName(healthCheck string, shared bool) string {
	if shared {
		return healthCheck + "-http-hc"
	}
	return "k8s-" + healthCheck + "-http-hc"
}

// internalHealthCheckFirewallName admits the health checkers to an
// internal load balancer's (global) health check, as upstream names it
// (makeHealthCheckFirewallName, gce_loadbalancer_naming.go:86-91):
// "k8s-<cluster ID>-node-hc" for the shared check, "<check>-hc" for a
// Service's own. MUST NOT change.
func internalHealthCheckFirewallName(healthCheck string) string { return healthCheck + "-hc" }

// legacyHealthCheckFirewallName is the name this manager gave a Service's
// own health check rule before 2026-11-26 ("<check>-http-hc"), still
// deleted with the Service.
func legacyHealthCheckFirewallName(healthCheck string) string { return healthCheck + "-http-hc" }

// Google's health checkers and the network load balancer's probes come
// from these ranges (documented for target pools and backend services).
var healthCheckRanges = []string{"35.191.0.0/16", "130.211.0.0/22", "209.85.152.0/22", "209.85.204.0/22"}

// kubeProxyHealthPort is kube-proxy's shared health port (healthz).
const kubeProxyHealthPort = 10256

// description is what the manager writes into a resource's description:
// the Service (upstream's key) and the cluster, as JSON. A resource is
// the manager's to change or delete only when both match.
type description struct {
	Service string `json:"kubernetes.io/service-name,omitempty"`
	Cluster string `json:"kubernetes.io/cluster-id,omitempty"`
	// Address marks an address the manager reserved (as opposed to the
	// user's spec.loadBalancerIP), so only those are released.
	Address string `json:"kubernetes.io/reserved-by,omitempty"`
	// UID is the Service's UID, on the Service's parts made since
	// issue 22 (older ones have none): orphan cleanup tells the parts of
	// a Service deleted and made again under the same name from the new
	// one's by it. The names carry only 31 of its 32 hex digits.
	UID string `json:"kubernetes.io/service-uid,omitempty"`
}

// serviceUIDKey carries the UID of the Service an ensure is for, so the
// parts it makes record it (describe) without every helper taking it.
type serviceUIDKey struct{}

func withServiceUID(ctx context.Context, uid types.UID) context.Context {
	return context.WithValue(ctx, serviceUIDKey{}, uid)
}

// describe is the description of a part of the Service svcKey ("" for
// the cluster's shared parts, which record no Service and no UID).
func (l *loadBalancers) describe(ctx context.Context, svcKey string) description {
	d := description{Service: svcKey, Cluster: l.clusterID}
	if uid, ok := ctx.Value(serviceUIDKey{}).(types.UID); ok && svcKey != "" {
		d.UID = string(uid)
	}
	return d
}

func (d description) String() string {
	b, _ := json.Marshal(d)
	return string(b)
}

// parseDescription reads a description the manager wrote; anything else
// is the zero description (not the manager's).
func parseDescription(s string) description {
	var d description
	if json.Unmarshal([]byte(s), &d) != nil {
		return description{}
	}
	return d
}

// ours says whether a resource's description names this cluster and,
// when svc is given, this Service.
func ours(desc, clusterID, svc string) bool {
	d := parseDescription(desc)
	return d.Cluster == clusterID && (svc == "" || d.Service == svc)
}

// owns says whether a part named name, with description desc, is this
// cluster's and (svc "" for the cluster's shared parts) the Service's to
// change and delete: this manager's description, or the upstream GCE
// CCM's, which names no cluster (gce_loadbalancer_naming.go:88-130):
//   - a Service's parts, {"kubernetes.io/service-name":"<ns>/<name>"}
//     (firewall rules add "kubernetes.io/service-ip"): those are named
//     after the Service's UID, so the Service's name and theirs together
//     are this Service's;
//   - health checks, {"kubernetes.io/service-name":"<the check's name>"}:
//     a Service's own is named after its UID, the shared one after
//     sharedID;
//   - the shared check's firewall rule, {"kubernetes.io/cluster-id":"<sharedID>"};
//   - an internal load balancer's health check, its firewall rule and the
//     instance groups, no description at all: named after the Service's
//     UID or the cluster ID, name (given) makes them the caller's.
func (l *loadBalancers) owns(desc, svc, name string) bool {
	if strings.TrimSpace(desc) == "" {
		return name != ""
	}
	d := parseDescription(desc)
	switch d.Cluster {
	case l.clusterID:
		return d.Service == svc
	case "":
		return (svc != "" && d.Service == svc) || (name != "" && d.Service == name)
	}
	return svc == "" && d.Service == "" && d.Cluster == l.sharedID()
}

// setSharedID names the cluster's shared parts after the upstream CCM's
// cluster ID.
func (l *loadBalancers) setSharedID(id string) {
	l.sharedMu.Lock()
	defer l.sharedMu.Unlock()
	l.upstreamID = id
}

// sharedID is what the cluster's shared parts are named after: the
// upstream CCM's cluster ID when the cluster has one, else clusterID.
func (l *loadBalancers) sharedID() string {
	l.sharedMu.Lock()
	defer l.sharedMu.Unlock()
	if l.upstreamID != "" {
		return l.upstreamID
	}
	return l.clusterID
}
