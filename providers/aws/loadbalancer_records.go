package aws

import (
	"time"

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
	// nodeRuleSig is nodeRuleSignature of the node rules confirmed for lbSG.
	nodeRuleSig string
	tgs         map[portKey]*tgRecord
}

// tgRecord is one target group and the targets registered with it.
type tgRecord struct {
	arn, name string
	// nodePort is the port targets are registered on.
	nodePort int32
	// registered are the targets registered (not draining).
	registered map[target]bool
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
