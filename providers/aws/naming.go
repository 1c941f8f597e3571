package aws

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Tag keys every resource this backend creates carries. The cluster tag is
// the one the upstream AWS CCM and the AWS Load Balancer Controller use, so
// tooling that audits clusters by tag keeps working.
const (
	clusterTagPrefix    = "kubernetes.io/cluster/"
	serviceNameTagKey   = "kubernetes.io/service-name"
	clusterTagOwned     = "owned"
	clusterTagShared    = "shared"
	roleELBTagKey       = "kubernetes.io/role/elb"
	roleInternalELBTag  = "kubernetes.io/role/internal-elb"
	nameTagKey          = "Name"
	maxELBNameLength    = 32
	serviceHashLength   = 10
	readablePartLength  = 8
	lbNamePrefix        = "k8s-"
	lbSecurityGroupName = "k8s-nlb-"
)

func clusterTagKey(clusterID string) string { return clusterTagPrefix + clusterID }

func serviceKey(svc *v1.Service) string { return svc.Namespace + "/" + svc.Name }

// serviceHash identifies a Service within a cluster. The UID is left out on
// purpose: a Service deleted and re-created under the same name must find
// (and, after a crash, clean up) what its predecessor's run left behind.
func serviceHash(clusterID string, svc *v1.Service) string {
	sum := sha256.Sum256([]byte(clusterID + "\x00" + svc.Namespace + "\x00" + svc.Name))
	return hex.EncodeToString(sum[:])[:serviceHashLength]
}

// alnum keeps [a-z0-9] so the readable parts never contribute a leading,
// trailing or doubled '-' to an ELB name, and truncates to n characters.
func alnum(s string, n int) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			if b.Len() == n {
				break
			}
		}
	}
	return b.String()
}

// loadBalancerName is "k8s-<ns>-<name>-<hash>": at most 4+8+1+8+1+10 = 32
// characters, only [a-z0-9-], starting with "k8s-" (so never "internal-"),
// ending with the hash (never '-'). The readable parts help a human in the
// console; the hash, over the full cluster ID and namespace/name, makes it
// unique.
func loadBalancerName(clusterID string, svc *v1.Service) string {
	ns := alnum(svc.Namespace, readablePartLength)
	name := alnum(svc.Name, readablePartLength)
	parts := []string{strings.TrimSuffix(lbNamePrefix, "-")}
	for _, p := range []string{ns, name} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	parts = append(parts, serviceHash(clusterID, svc))
	return strings.Join(parts, "-")
}

// targetGroupName is "k8s-<hash>-<port>-<protocol>", at most
// 4+10+1+5+1+6 = 27 characters. Everything a Service's target groups are
// named by is in the name, so a target group created just before a crash is
// found again by name on the next run, and all of a Service's target groups
// share the prefix "k8s-<hash>-".
func targetGroupName(clusterID string, svc *v1.Service, k portKey) string {
	return targetGroupPrefix(clusterID, svc) + k.suffix()
}

func targetGroupPrefix(clusterID string, svc *v1.Service) string {
	return lbNamePrefix + serviceHash(clusterID, svc) + "-"
}

// securityGroupName names the load balancer's own security group. Security
// group names may be 255 characters, so it carries the full Service name
// for humans plus the hash for uniqueness.
func securityGroupName(clusterID string, svc *v1.Service) string {
	return fmt.Sprintf("%s%s-%s-%s", lbSecurityGroupName, svc.Namespace, svc.Name, serviceHash(clusterID, svc))
}

// nodeRuleDescription marks the node security group rules a Service owns,
// so revoking never touches a rule someone else added.
func nodeRuleDescription(clusterID string, svc *v1.Service) string {
	return fmt.Sprintf("multicloud-ccm %s: NLB of Service %s", clusterID, serviceKey(svc))
}
