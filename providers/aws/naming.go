package aws

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/naming"
)

// Tag keys every resource this backend creates carries. The cluster tag is
// the one the upstream AWS CCM and the AWS Load Balancer Controller use, so
// tooling that audits clusters by tag keeps working. Tags are persisted in
// AWS: they MUST NOT change, or every existing resource is orphaned.
const (
	clusterTagPrefix    = "kubernetes.io/cluster/"
	serviceNameTagKey   = "kubernetes.io/service-name"
	clusterTagOwned     = "owned"
	clusterTagShared    = "shared"
	roleELBTagKey       = "kubernetes.io/role/elb"
	roleInternalELBTag  = "kubernetes.io/role/internal-elb"
	nameTagKey          = "Name"
	maxELBNameLength    = 32
	lbSecurityGroupName = "k8s-nlb-"
)

// nlbNames is how NLBs and target groups are named:
// "k8s-<ns[:8]>-<name[:8]>-<hash[:10]>", at most 32 characters, only
// [a-z0-9-], starting with "k8s-" (so never "internal-", which ELB
// refuses) and ending with the hash. MUST NOT change: existing NLBs are
// found by these names.
var nlbNames = naming.Scheme{Prefix: "k8s", ReadableLen: 8, HashLen: 10, MaxLen: maxELBNameLength}

func clusterTagKey(clusterID string) string { return clusterTagPrefix + clusterID }

func serviceKey(svc *v1.Service) string { return naming.ServiceKey(svc) }

// loadBalancerName is the Service's NLB name.
func loadBalancerName(clusterID string, svc *v1.Service) string {
	return nlbNames.Name(clusterID, svc)
}

// targetGroupName is "k8s-<hash>-<port>-<protocol>", at most
// 4+10+1+5+1+6 = 27 characters. Everything a Service's target groups are
// named by is in the name, so a target group created just before a crash is
// found again by name on the next run, and all of a Service's target groups
// share the prefix "k8s-<hash>-". MUST NOT change.
func targetGroupName(clusterID string, svc *v1.Service, k portKey) string {
	return targetGroupPrefix(clusterID, svc) + k.suffix()
}

func targetGroupPrefix(clusterID string, svc *v1.Service) string {
	return nlbNames.HashPrefix(clusterID, svc)
}

// securityGroupName names the load balancer's own security group. Security
// group names may be 255 characters, so it carries the full Service name
// for humans plus the hash for uniqueness. MUST NOT change.
func securityGroupName(clusterID string, svc *v1.Service) string {
	return fmt.Sprintf("%s%s-%s-%s", lbSecurityGroupName, svc.Namespace, svc.Name, naming.ServiceHash(clusterID, svc, nlbNames.HashLen))
}

// nodeRuleDescription marks the node security group rules a Service owns,
// so revoking never touches a rule someone else added. MUST NOT change.
func nodeRuleDescription(clusterID string, svc *v1.Service) string {
	return fmt.Sprintf("multicloud-ccm %s: NLB of Service %s", clusterID, serviceKey(svc))
}
