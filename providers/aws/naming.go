package aws

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"

	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
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

// upstreamTargetGroupPrefix is what every target group the upstream AWS
// CCM names for the Service starts with: "k8s-<ns[:8]>-<name[:8]>-", each
// part stripped of everything but letters and digits.
// upstream: kubernetes/cloud-provider-aws pkg/providers/v1/aws_loadbalancer.go:686-706
// (buildTargetGroupName, commit 63ec440c). MUST NOT change: upstream
// started again finds nothing by these names, but they are what it
// would make, and what ours finds its own again by.
func upstreamTargetGroupPrefix(svc *v1.Service) string {
	trim := func(s string) string {
		s = nonAlnumRE.ReplaceAllString(s, "")
		return s[:min(len(s), 8)]
	}
	return fmt.Sprintf("k8s-%s-%s-", trim(svc.Namespace), trim(svc.Name))
}

var nonAlnumRE = regexp.MustCompile("[^[:alnum:]]")

// upstreamTargetGroupHash is the 10 hex digits ending upstream's name of
// the target group of listener p: a SHA-1 over exactly what upstream
// feeds it, in its order: the cluster ID, namespace, name, the listener
// port, the node port, the target protocol, the target type (always
// instance), the health check's protocol and its interval
// (aws_loadbalancer.go:689-698). A change to any of them is a new target
// group, upstream and here alike.
func upstreamTargetGroupHash(clusterID string, svc *v1.Service, p listenerSpec, hc healthCheckSpec) string {
	h := sha1.New()
	for _, part := range []string{
		clusterID, svc.Namespace, svc.Name,
		strconv.Itoa(int(p.port)), strconv.Itoa(int(p.nodePort)),
		string(p.protocol()), string(elbv2types.TargetTypeEnumInstance),
		string(hc.protocol), strconv.Itoa(int(hc.interval)),
	} {
		h.Write([]byte(part))
	}
	return hex.EncodeToString(h.Sum(nil))[:10]
}

// tgNaming names a load balancer's target groups: prefix is shared by all
// of them, suffix tells one from another, and the target group record
// (loadBalancerRecords) holds the suffixes.
type tgNaming struct {
	prefix string
	suffix func(p listenerSpec) string
}

func (n tgNaming) name(p listenerSpec) string { return n.prefix + n.suffix(p) }

// ourTGNaming is "k8s-<hash>-<port>-<protocol>" (targetGroupName).
func ourTGNaming(clusterID string, svc *v1.Service) tgNaming {
	return tgNaming{prefix: targetGroupPrefix(clusterID, svc), suffix: func(p listenerSpec) string { return p.key().suffix() }}
}

// upstreamTGNaming is upstream's buildTargetGroupName for the Service's
// health check hc.
func upstreamTGNaming(clusterID string, svc *v1.Service, hc healthCheckSpec) tgNaming {
	return tgNaming{prefix: upstreamTargetGroupPrefix(svc), suffix: func(p listenerSpec) string { return upstreamTargetGroupHash(clusterID, svc, p, hc) }}
}
