package service

import (
	"encoding/binary"
	"hash/fnv"
	"slices"
	"strconv"

	v1 "k8s.io/api/core/v1"
	servicehelper "k8s.io/cloud-provider/service/helpers"
)

// The contracts below are k8s.io/cloud-provider's service controller's
// (controllers/service/controller.go, v0.37.2), which clusters and tools
// depend on; each is cited where it is kept.

// ToBeDeletedTaint is the Cluster Autoscaler's taint on a Node it is
// about to remove: such a Node leaves the load balancers
// (controller.go:59, nodeUnTaintedPredicate).
const ToBeDeletedTaint = "ToBeDeletedByClusterAutoscaler"

// wantsLoadBalancer: a LoadBalancer Service without a
// spec.loadBalancerClass, which names another implementation
// (controller.go wantsLoadBalancer).
func wantsLoadBalancer(svc *v1.Service) bool {
	return svc.Spec.Type == v1.ServiceTypeLoadBalancer && svc.Spec.LoadBalancerClass == nil
}

// needsCleanup: the Service holds the load-balancer-cleanup finalizer and
// is being deleted or is no longer of type LoadBalancer
// (controller.go needsCleanup). A Service that changed its
// loadBalancerClass keeps its finalizer and is not cleaned up, as
// upstream.
func needsCleanup(svc *v1.Service) bool {
	if !servicehelper.HasLBFinalizer(svc) {
		return false
	}
	return svc.DeletionTimestamp != nil || svc.Spec.Type != v1.ServiceTypeLoadBalancer
}

// specHash digests every field whose change makes upstream's controller
// re-ensure the load balancer (controller.go needsUpdate): type and
// class, source ranges, ports (name, protocol, port, node port, target
// port, app protocol), session affinity and its config, loadBalancerIP,
// external IPs, annotations, UID, externalTrafficPolicy,
// healthCheckNodePort and the number of IP families. Two states of a
// Service with the same digest need no new EnsureLoadBalancer; the
// controller keeps the digest instead of a copy of the Service.
func specHash(svc *v1.Service) uint64 {
	h := fnv.New64a()
	w := func(parts ...string) {
		for _, p := range parts {
			// Length-prefixed, so "a"+"bc" and "ab"+"c" differ.
			var n [8]byte
			binary.LittleEndian.PutUint64(n[:], uint64(len(p)))
			_, _ = h.Write(n[:])
			_, _ = h.Write([]byte(p))
		}
	}
	s := &svc.Spec
	class := "<nil>"
	if s.LoadBalancerClass != nil {
		class = *s.LoadBalancerClass
	}
	w(string(s.Type), class, string(svc.UID), string(s.ExternalTrafficPolicy), strconv.Itoa(int(s.HealthCheckNodePort)),
		s.LoadBalancerIP, string(s.SessionAffinity), strconv.Itoa(len(s.IPFamilies)))
	w(strconv.Itoa(len(s.LoadBalancerSourceRanges)))
	w(s.LoadBalancerSourceRanges...)
	w(strconv.Itoa(len(s.ExternalIPs)))
	w(s.ExternalIPs...)
	if c := s.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
		w("affinity-timeout", strconv.Itoa(int(*c.ClientIP.TimeoutSeconds)))
	} else if c != nil {
		w("affinity-config")
	}
	w(strconv.Itoa(len(s.Ports)))
	for _, p := range s.Ports {
		app := "<nil>"
		if p.AppProtocol != nil {
			app = *p.AppProtocol
		}
		w(p.Name, string(p.Protocol), strconv.Itoa(int(p.Port)), strconv.Itoa(int(p.NodePort)), p.TargetPort.String(), strconv.Itoa(int(p.TargetPort.Type)), app)
	}
	keys := make([]string, 0, len(svc.Annotations))
	for k := range svc.Annotations {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	w(strconv.Itoa(len(keys)))
	for _, k := range keys {
		w(k, svc.Annotations[k])
	}
	return h.Sum64()
}

// needsUpdate says a Service's change needs its load balancer ensured
// again (controller.go needsUpdate, through specHash).
func needsUpdate(old, cur *v1.Service) bool {
	if !wantsLoadBalancer(old) && !wantsLoadBalancer(cur) {
		return false
	}
	return specHash(old) != specHash(cur)
}

// nodeIncluded: a Node without the
// node.kubernetes.io/exclude-from-external-load-balancers label, or with
// it set to a false boolean; any other value excludes it
// (controller.go nodeIncludedPredicate).
func nodeIncluded(n *v1.Node) bool {
	v, ok := n.Labels[v1.LabelNodeExcludeBalancers]
	if !ok {
		return true
	}
	b, err := strconv.ParseBool(v)
	return err == nil && !b
}

// nodeUntainted: not tainted for removal by the Cluster Autoscaler
// (controller.go nodeUnTaintedPredicate).
func nodeUntainted(n *v1.Node) bool {
	return !slices.ContainsFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.Key == ToBeDeletedTaint })
}

// inStableSet: the stable node set of KEP-3458 (controller.go
// stableNodeSetPredicates): not being deleted, included, untainted.
// Readiness is not a criterion: a NotReady Node stays a backend and the
// load balancer's health checks take it out, so node health flapping
// costs no cloud calls.
func inStableSet(n *v1.Node) bool {
	return n.DeletionTimestamp.IsZero() && nodeIncluded(n) && nodeUntainted(n)
}

// shouldSyncUpdatedNode: a Node update changes the load balancers'
// backends only when it changes whether the Node is included or its
// providerID (controller.go shouldSyncUpdatedNode); a new taint or
// deletion timestamp is picked up at the next sync, as upstream.
func shouldSyncUpdatedNode(old, cur *v1.Node) bool {
	return nodeIncluded(old) != nodeIncluded(cur) || old.Spec.ProviderID != cur.Spec.ProviderID
}

// nodeSetSignature digests a node set as upstream compares node sets
// (controller.go nodesSufficientlyEqual): the names with their
// providerIDs, in any order (a sum of each pair's FNV-1a digest, so no
// sort and no allocation: it runs over every Node at each sync).
func nodeSetSignature(nodes []*v1.Node) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	var sum uint64
	for _, n := range nodes {
		h := uint64(offset)
		for i := 0; i < len(n.Name); i++ {
			h = (h ^ uint64(n.Name[i])) * prime
		}
		h = (h ^ 0) * prime
		for i := 0; i < len(n.Spec.ProviderID); i++ {
			h = (h ^ uint64(n.Spec.ProviderID[i])) * prime
		}
		sum += h
	}
	return sum ^ uint64(len(nodes))
}

// loggableNodeNames are at most 20 of the nodes' names, then how many
// more (controller.go loggableNodeNames, maxNodeNamesToLog).
func loggableNodeNames(nodes []*v1.Node) []string {
	const most = 20
	names := make([]string, 0, min(len(nodes), most)+1)
	for i, n := range nodes {
		if i == most {
			names = append(names, "<"+strconv.Itoa(len(nodes)-most)+" more>")
			break
		}
		names = append(names, n.Name)
	}
	return names
}
