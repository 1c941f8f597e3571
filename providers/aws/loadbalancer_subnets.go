package aws

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/klog/v2"
)

// lbSubnets chooses the subnets of a new load balancer: the Service's
// annotation wins, then the cloud-config, then discovery by tags.
// Subnets are chosen only at creation; an NLB's subnets are not changed
// afterwards (AWS allows removing them only in limited cases).
func (l *loadBalancers) lbSubnets(ctx context.Context, opts *lbOptions, vpc string) ([]string, error) {
	if len(opts.subnets) > 0 {
		return l.resolveSubnetAnnotation(ctx, opts.subnets, vpc)
	}
	if l.cfg != nil {
		if opts.internal && len(l.cfg.Subnets.Internal) > 0 {
			return l.cfg.Subnets.Internal, nil
		}
		if !opts.internal && len(l.cfg.Subnets.Public) > 0 {
			return l.cfg.Subnets.Public, nil
		}
	}
	role := roleELBTagKey
	if opts.internal {
		role = roleInternalELBTag
	}
	key := vpc + "/" + role
	if ids, ok := l.subnets.Get(key); ok {
		return ids, nil
	}
	// Many Services created at once reach here together on an empty
	// cache; one DescribeSubnets serves them all.
	return l.subnetFills.Do(ctx, key, func(ctx context.Context) ([]string, error) {
		if ids, ok := l.subnets.Get(key); ok {
			return ids, nil
		}
		ids, err := l.discoverSubnets(ctx, vpc, role)
		if err != nil {
			return nil, err
		}
		l.subnets.Set(key, ids)
		return ids, nil
	})
}

// discoverSubnets picks one subnet per availability zone among the VPC's
// subnets with the role tag that are tagged for this cluster or for no
// cluster. Cluster-tagged subnets win; ties go to the smallest ID, so the
// choice is stable across restarts and controllers.
func (l *loadBalancers) discoverSubnets(ctx context.Context, vpc, role string) ([]string, error) {
	var subnets []ec2types.Subnet
	p := ec2.NewDescribeSubnetsPaginator(l.api.ec2.DescribeSubnets, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{
		{Name: aws.String("vpc-id"), Values: []string{vpc}},
		{Name: aws.String("tag-key"), Values: []string{role}},
	}})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describe subnets tagged %s in %s: %w", role, vpc, err)
		}
		subnets = append(subnets, page.Subnets...)
	}
	type candidate struct {
		id     string
		tagged bool
	}
	best := map[string]candidate{}
	ourTag := clusterTagKey(l.clusterID)
	for _, s := range subnets {
		tags := ec2Tags(s.Tags)
		if v, ok := tags[role]; !ok || v == "0" || strings.EqualFold(v, "false") {
			continue
		}
		tagged := false
		if v, ok := tags[ourTag]; ok {
			if v != clusterTagOwned && v != clusterTagShared {
				continue
			}
			tagged = true
		} else if taggedForOtherCluster(tags) {
			continue
		}
		c := candidate{id: aws.ToString(s.SubnetId), tagged: tagged}
		zone := aws.ToString(s.AvailabilityZone)
		cur, ok := best[zone]
		if !ok || (c.tagged && !cur.tagged) || (c.tagged == cur.tagged && c.id < cur.id) {
			best[zone] = c
		}
	}
	if len(best) == 0 {
		return nil, fmt.Errorf("no subnet in %s is tagged %s for cluster %s (tag %s=owned|shared, or no cluster tag); tag one per zone, set the cloud-config's subnets, or annotate the Service with %s",
			vpc, role, l.clusterID, ourTag, annotationSubnets)
	}
	ids := make([]string, 0, len(best))
	for _, c := range best {
		ids = append(ids, c.id)
	}
	sort.Strings(ids)
	klog.FromContext(ctx).V(2).Info("Discovered load balancer subnets", "role", role, "subnets", ids)
	return ids, nil
}

func taggedForOtherCluster(tags map[string]string) bool {
	for k := range tags {
		if strings.HasPrefix(k, clusterTagPrefix) {
			return true
		}
	}
	return false
}

// resolveSubnetAnnotation turns the annotation's subnet IDs and Name tags
// into IDs in the cluster VPC, at most one per zone, as an NLB requires.
func (l *loadBalancers) resolveSubnetAnnotation(ctx context.Context, entries []string, vpc string) ([]string, error) {
	var ids, names []string
	for _, e := range entries {
		if subnetIDRE.MatchString(e) {
			ids = append(ids, e)
		} else {
			names = append(names, e)
		}
	}
	var found []ec2types.Subnet
	if len(ids) > 0 {
		out, err := l.api.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: ids})
		if isAPIError(err, "InvalidSubnetID.NotFound") {
			return nil, fmt.Errorf("annotation %s: %w", annotationSubnets, err)
		}
		if err != nil {
			return nil, fmt.Errorf("describe subnets %v: %w", ids, err)
		}
		found = append(found, out.Subnets...)
	}
	if len(names) > 0 {
		out, err := l.api.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{
			{Name: aws.String("vpc-id"), Values: []string{vpc}},
			{Name: aws.String("tag:" + nameTagKey), Values: names},
		}})
		if err != nil {
			return nil, fmt.Errorf("describe subnets named %v: %w", names, err)
		}
		found = append(found, out.Subnets...)
	}
	byID := map[string]ec2types.Subnet{}
	byName := map[string][]string{}
	for _, s := range found {
		byID[aws.ToString(s.SubnetId)] = s
		if n, ok := ec2Tags(s.Tags)[nameTagKey]; ok {
			byName[n] = append(byName[n], aws.ToString(s.SubnetId))
		}
	}
	var out []string
	zones := map[string]string{}
	for _, e := range entries {
		id := e
		if !subnetIDRE.MatchString(e) {
			switch m := byName[e]; len(m) {
			case 0:
				return nil, fmt.Errorf("annotation %s: no subnet named %q in %s", annotationSubnets, e, vpc)
			case 1:
				id = m[0]
			default:
				return nil, fmt.Errorf("annotation %s: %d subnets are named %q in %s; use subnet IDs", annotationSubnets, len(m), e, vpc)
			}
		}
		s, ok := byID[id]
		if !ok {
			return nil, fmt.Errorf("annotation %s: subnet %s not found", annotationSubnets, id)
		}
		if aws.ToString(s.VpcId) != vpc {
			return nil, fmt.Errorf("annotation %s: subnet %s is in %s, not the cluster VPC %s", annotationSubnets, id, aws.ToString(s.VpcId), vpc)
		}
		zone := aws.ToString(s.AvailabilityZone)
		if other, dup := zones[zone]; dup && other != id {
			return nil, fmt.Errorf("annotation %s: subnets %s and %s are both in zone %s; a Network Load Balancer takes one subnet per zone", annotationSubnets, other, id, zone)
		}
		if _, dup := zones[zone]; !dup {
			zones[zone] = id
			out = append(out, id)
		}
	}
	return out, nil
}

func ec2Tags(tags []ec2types.Tag) map[string]string {
	m := make(map[string]string, len(tags))
	for _, t := range tags {
		m[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return m
}
