package aws

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	v1 "k8s.io/api/core/v1"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/svcopts"
)

// The user's security groups, with upstream's names and meanings
// (kubernetes/cloud-provider-aws pkg/providers/v1/aws.go:147-152 and
// buildELBSecurityGroupList, aws.go:1996-2025):
//   - annotationSecurityGroups replaces the group the load balancer would
//     get from us: none is made, and the user's groups (which we never
//     change) decide who reaches it; node rules admit the first of them;
//   - annotationExtraSecurityGroups are attached besides (after ours, or
//     after the user's).
//
// The load balancer's groups are then exactly that list, as upstream
// keeps them (ApplySecurityGroupsToLoadBalancer when they differ).
// Upstream serves both on Classic ELBs, and on NLBs only in its
// NLBSecurityGroupMode Managed; here every NLB this backend makes has a
// security group, so both are served on NLBs too.
const (
	annotationSecurityGroups      svcopts.Annotation = "service.beta.kubernetes.io/aws-load-balancer-security-groups"
	annotationExtraSecurityGroups svcopts.Annotation = "service.beta.kubernetes.io/aws-load-balancer-extra-security-groups"
)

var securityGroupIDPattern = regexp.MustCompile(`^sg-([0-9a-f]{8}|[0-9a-f]{17})$`)

// userGroups are the security groups the Service names.
type userGroups struct {
	// replace are annotationSecurityGroups', in order.
	replace []string
	// extra are annotationExtraSecurityGroups', in order.
	extra []string
}

// parseUserGroups reads both annotations. An empty value asks for
// nothing, as upstream; an entry that is no security group ID is an error
// naming the annotation.
func parseUserGroups(svc *v1.Service) (userGroups, error) {
	var g userGroups
	for _, f := range []struct {
		a   svcopts.Annotation
		dst *[]string
	}{{annotationSecurityGroups, &g.replace}, {annotationExtraSecurityGroups, &g.extra}} {
		if v, ok := f.a.Lookup(svc); !ok || strings.TrimSpace(v) == "" {
			continue
		}
		ids, _, err := f.a.List(svc)
		if err != nil {
			return g, err
		}
		for _, id := range ids {
			if !securityGroupIDPattern.MatchString(id) {
				v, _ := f.a.Lookup(svc)
				return g, f.a.Invalid(v, "security group IDs such as sg-0123456789abcdef0, comma-separated")
			}
		}
		*f.dst = ids
	}
	return g, nil
}

// any says the Service names security groups of its own.
func (g userGroups) any() bool { return len(g.replace)+len(g.extra) > 0 }

// groups is the load balancer's security group list: the user's or ours
// (own), then the extra ones, each once.
func (g userGroups) groups(own string) []string {
	var out []string
	if len(g.replace) > 0 {
		out = slices.Clone(g.replace)
	} else if own != "" {
		out = []string{own}
	}
	for _, id := range g.extra {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// ruleSource is the group node rules admit: the first of the user's, else
// ours.
func (g userGroups) ruleSource(own string) string {
	if len(g.replace) > 0 {
		return g.replace[0]
	}
	return own
}

// sameGroups says two security group lists hold the same groups.
func sameGroups(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, id := range a {
		if !slices.Contains(b, id) {
			return false
		}
	}
	return true
}

// checkUserGroups makes sure the Service's groups exist in the VPC, so a
// typo is an error naming the annotation rather than AWS's.
func (l *loadBalancers) checkUserGroups(ctx context.Context, g userGroups, vpc string) error {
	if !g.any() {
		return nil
	}
	ids := g.groups("")
	out, err := l.api.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: ids})
	if isAPIError(err, "InvalidGroup.NotFound") || isAPIError(err, "InvalidGroupId.Malformed") {
		return fmt.Errorf("annotations %s / %s: %w", annotationSecurityGroups, annotationExtraSecurityGroups, err)
	}
	if err != nil {
		return fmt.Errorf("describe security groups %v: %w", ids, err)
	}
	for _, sg := range out.SecurityGroups {
		if aws.ToString(sg.VpcId) != vpc {
			return fmt.Errorf("annotations %s / %s: security group %s is in %s, not in the load balancer's VPC %s",
				annotationSecurityGroups, annotationExtraSecurityGroups, aws.ToString(sg.GroupId), aws.ToString(sg.VpcId), vpc)
		}
	}
	return nil
}

// revokeNodeRulesFrom revokes the Service's node rules whose source is
// src (any description when anyRule): the rules admitting a group that
// is going, or that is not ours to delete but was the Service's source.
func (l *loadBalancers) revokeNodeRulesFrom(ctx context.Context, svc *v1.Service, src string, anyRule bool) error {
	desc := nodeRuleDescription(l.clusterID, svc)
	match := desc
	if anyRule {
		match = ""
	}
	holders, err := l.groupsReferencing(ctx, src)
	if err != nil {
		return err
	}
	for _, h := range holders {
		_, remove := diffRules(nil, groupRules(h.IpPermissions, src, match))
		if err := l.changeNodeRules(ctx, aws.ToString(h.GroupId), nil, remove, desc); err != nil {
			return err
		}
	}
	l.nodeRules.Delete(serviceKey(svc))
	return nil
}

// otherSourceRules are the rules in perms described desc whose source is
// a group other than src: the Service's rules left from a source it no
// longer uses.
func otherSourceRules(perms []ec2types.IpPermission, src, desc string) map[sgRule]bool {
	out := map[sgRule]bool{}
	for _, p := range perms {
		for _, pair := range p.UserIdGroupPairs {
			if g := aws.ToString(pair.GroupId); g != src && aws.ToString(pair.Description) == desc {
				out[sgRule{proto: aws.ToString(p.IpProtocol), from: aws.ToInt32(p.FromPort), to: aws.ToInt32(p.ToPort), group: g}] = true
			}
		}
	}
	return out
}

// deleteUnusedLBSecurityGroup deletes the Service's own NLB security
// group, if one is left after the user's groups replaced it.
func (l *loadBalancers) deleteUnusedLBSecurityGroup(ctx context.Context, svc *v1.Service, vpc string) error {
	sg, err := l.findLBSecurityGroup(ctx, svc, vpc)
	if err != nil || sg == nil || !l.ownedSG(sg, svc) {
		return err
	}
	return l.deleteLBSecurityGroup(ctx, svc, sg)
}
