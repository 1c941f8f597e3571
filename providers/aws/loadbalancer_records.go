package aws

import (
	"sort"
	"strings"
	"time"
	"unique"

	v1 "k8s.io/api/core/v1"
)

// lbRecordTTL bounds how long UpdateLoadBalancer trusts what an earlier
// full sync established. A record older than this sends the next update
// down the full read path, so drift made outside the controller (a target
// deregistered by hand, a target group replaced) is repaired within it.
// Updates that use a record do not refresh its age: only a full read does.
const lbRecordTTL = 10 * time.Minute

// lbRecord is what the last successful EnsureLoadBalancer or full
// UpdateLoadBalancer of a Service established, plus the target changes
// made since by updates that used it. The store (providers/internal/
// lbrecords) decides when it may be trusted.
type lbRecord struct {
	lbARN string
	// vpc is the load balancer's VPC, which backends must be in.
	vpc string
	// lbSG is the security group the node rules reference, "" if none.
	lbSG string
	// upstream is the name of an NLB without a security group (upstream
	// made it) whose node rules admit clients by CIDR, "" if none; then
	// subnetCIDRs are its subnets', the sources of its health checks.
	upstream    string
	subnetCIDRs []string
	// nodeRuleSig is nodeRuleSignature of the node rules confirmed for
	// lbSG, or upstreamRules.signature of upstream's.
	nodeRuleSig string
	tgs         map[portKey]*tgRecord
}

// tgRecord is one target group and the targets registered with it.
type tgRecord struct {
	arn, name string
	// nodePort is the port targets are registered on.
	nodePort int32
	// registered are the targets registered (not draining).
	registered targetSet
}

// targetSet is a record's set of registered targets, stored so that
// Services whose load balancers target the same instances share one copy:
// the instance IDs on the target group's node port are one interned
// string (unique.Make), which the Go runtime keeps once for all equal
// sets and frees when none is left. A cluster of 5000 Nodes with 1000 LB
// Services then holds its records in memory proportional to its distinct
// node sets, not to Services x Nodes.
type targetSet struct {
	port int32
	// ids are the sorted instance IDs registered on port, comma-joined.
	ids unique.Handle[string]
	// other are targets registered on another port: stopped instances
	// kept from before a NodePort change. Rare and short-lived.
	other []target
}

func newTargetSet(port int32, m map[target]bool) targetSet {
	ids := make([]string, 0, len(m))
	var other []target
	for t := range m {
		if t.port == port {
			ids = append(ids, t.id)
		} else {
			other = append(other, t)
		}
	}
	sort.Strings(ids)
	return targetSet{port: port, ids: unique.Make(strings.Join(ids, ",")), other: other}
}

// targets expands the set for diffing.
func (s targetSet) targets() map[target]bool {
	joined := s.ids.Value()
	out := make(map[target]bool, strings.Count(joined, ",")+1+len(s.other))
	if joined != "" {
		for _, id := range strings.Split(joined, ",") {
			out[target{id, s.port}] = true
		}
	}
	for _, t := range s.other {
		out[t] = true
	}
	return out
}

// matches says the record covers exactly the Service's current ports, each
// target group registering targets on the current NodePort. Anything else
// (the Service changed and EnsureLoadBalancer has not caught up) takes the
// full path, which behaves as it always did.
func (r *lbRecord) matches(opts *lbOptions) bool {
	if len(r.tgs) != len(opts.ports) {
		return false
	}
	for _, p := range opts.ports {
		tg, ok := r.tgs[p.key()]
		if !ok || tg.nodePort != p.nodePort || tg.arn == "" {
			return false
		}
	}
	return true
}

// recordKey identifies a Service's load balancer.
func (l *loadBalancers) recordKey(svc *v1.Service) string {
	return serviceKey(svc) + "\x00" + loadBalancerName(l.clusterID, svc)
}
