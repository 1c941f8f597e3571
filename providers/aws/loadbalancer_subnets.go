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
		// Cached like discovery: a Classic ELB checks its subnets on
		// every sync.
		key := vpc + "/annotation/" + strings.Join(opts.subnets, ",")
		if ids, ok := l.subnets.Get(key); ok {
			return ids, nil
		}
		ids, err := l.resolveSubnetAnnotation(ctx, opts.subnets, vpc)
		if err == nil {
			l.subnets.Set(key, ids)
		}
		return ids, err
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

// discoverSubnets picks one subnet per availability zone the way the
// upstream AWS CCM does (kubernetes/cloud-provider-aws
// pkg/providers/v1/aws.go:1651-1793, findSubnets and findELBSubnets), so
// a VPC that worked there works here: the candidates are the VPC's
// subnets tagged for this cluster or for no cluster at all; an
// internet-facing load balancer takes only public ones (their route
// table, or the VPC's main one, routes to an internet gateway, aws.go:1879);
// in a zone with several, the one with the role tag (role is
// kubernetes.io/role/elb or .../internal-elb) wins, then the one with the
// cluster tag, then the smallest ID. Two listings, cached with the result.
// Unlike upstream there is no fallback to the manager's own subnet: it
// may run anywhere.
func (l *loadBalancers) discoverSubnets(ctx context.Context, vpc, role string) ([]string, error) {
	internal := role == roleInternalELBTag
	inVPC := []ec2types.Filter{{Name: aws.String("vpc-id"), Values: []string{vpc}}}
	var subnets []ec2types.Subnet
	sp := ec2.NewDescribeSubnetsPaginator(l.api.ec2.DescribeSubnets, &ec2.DescribeSubnetsInput{Filters: inVPC})
	for sp.HasMorePages() {
		page, err := sp.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describe subnets in %s: %w", vpc, err)
		}
		subnets = append(subnets, page.Subnets...)
	}
	var public map[string]bool
	if !internal {
		var tables []ec2types.RouteTable
		rp := ec2.NewDescribeRouteTablesPaginator(l.api.ec2.DescribeRouteTables, &ec2.DescribeRouteTablesInput{Filters: inVPC})
		for rp.HasMorePages() {
			page, err := rp.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("describe route tables in %s: %w", vpc, err)
			}
			tables = append(tables, page.RouteTables...)
		}
		public = publicSubnets(tables, subnets)
	}
	type candidate struct {
		id                 string
		hasRole, ourTagged bool
	}
	better := func(a, b candidate) bool {
		if a.hasRole != b.hasRole {
			return a.hasRole
		}
		if a.ourTagged != b.ourTagged {
			return a.ourTagged
		}
		return a.id < b.id
	}
	best := map[string]candidate{}
	ourTag := clusterTagKey(l.clusterID)
	for _, s := range subnets {
		tags := ec2Tags(s.Tags)
		_, ours := tags[ourTag]
		if !ours && taggedForOtherCluster(tags) {
			continue
		}
		id, zone := aws.ToString(s.SubnetId), aws.ToString(s.AvailabilityZone)
		if id == "" || zone == "" || (!internal && !public[id]) {
			continue
		}
		_, hasRole := tags[role]
		c := candidate{id: id, hasRole: hasRole, ourTagged: ours}
		if cur, ok := best[zone]; !ok || better(c, cur) {
			best[zone] = c
		}
	}
	if len(best) == 0 {
		kind := "subnet"
		if !internal {
			kind = "public subnet (routed to an internet gateway)"
		}
		return nil, fmt.Errorf("no %s in %s is tagged for cluster %s (%s) or for no cluster; tag one per zone (%s breaks ties), set the cloud-config's subnets, or annotate the Service with %s",
			kind, vpc, l.clusterID, ourTag, role, annotationSubnets)
	}
	// In zone order, as upstream returns them (aws.go:1768-1790): pinned
	// addresses are paired with the subnets in this order.
	zones := make([]string, 0, len(best))
	for z := range best {
		zones = append(zones, z)
	}
	sort.Strings(zones)
	ids := make([]string, 0, len(best))
	for _, z := range zones {
		ids = append(ids, best[z].id)
	}
	klog.FromContext(ctx).V(2).Info("Discovered load balancer subnets", "internal", internal, "subnets", ids)
	return ids, nil
}

// publicSubnets reports which subnets route to an internet gateway: their
// explicitly associated route table does, or, without one, the VPC's main
// table does (upstream's isSubnetPublic, aws.go:1879-1920).
func publicSubnets(tables []ec2types.RouteTable, subnets []ec2types.Subnet) map[string]bool {
	toIGW := func(t ec2types.RouteTable) bool {
		for _, r := range t.Routes {
			if strings.HasPrefix(aws.ToString(r.GatewayId), "igw") {
				return true
			}
		}
		return false
	}
	explicit := map[string]bool{}
	mainPublic := false
	for _, t := range tables {
		for _, a := range t.Associations {
			if aws.ToBool(a.Main) {
				mainPublic = toIGW(t)
			}
			if id := aws.ToString(a.SubnetId); id != "" {
				explicit[id] = toIGW(t)
			}
		}
	}
	out := map[string]bool{}
	for _, s := range subnets {
		id := aws.ToString(s.SubnetId)
		if pub, ok := explicit[id]; ok {
			out[id] = pub
		} else {
			out[id] = mainPublic
		}
	}
	return out
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
