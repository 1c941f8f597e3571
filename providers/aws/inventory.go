package aws

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/multicloud-ccm/multicloud-ccm/providers/inventory"
)

// The inventory: every resource this cluster's load balancers are made
// of, for drift repair and orphan cleanup (providers/inventory), read with
// listings shared by all Services:
//
//	elbv2 DescribeLoadBalancers   every load balancer, 400 a page
//	elbv2 DescribeTags            the NLBs named as ours or upstream's, 20 a call
//	elbv2 DescribeTargetGroups    every target group, 400 a page, each with
//	                              the load balancers whose listeners use it
//	elbv2 DescribeTags            only target groups no owned NLB accounts
//	                              for by name and listener or record (left
//	                              behind, or named by upstream), 20 a call
//	elb   DescribeLoadBalancers   every Classic ELB with its listeners,
//	                              instances, health check and policies, 400 a page
//	elb   DescribeTags            the Classic ELBs named as upstream names them, 20 a call
//	ec2   DescribeSecurityGroups  every group of the cluster VPC with its rules
//	                              and tags, 1000 a page
//
// So the number of calls grows with pages (and tag batches of 20), not
// with Services: one Service or twenty cost the same.
//
// What a listing cannot show, the inventory does not read per load
// balancer, and drift there goes unseen until an ensure happens anyway:
//   - an NLB's listeners: DescribeListeners takes one load balancer. A
//     listener is derived from its target group's LoadBalancerArns (the
//     target group says which load balancer's listener forwards to it; a
//     deleted listener leaves it empty), and its port from the target
//     group's name. A listener's protocol, certificate or security policy
//     changed, or its port changed while it still forwards to the same
//     target group, is not seen;
//   - registered targets: DescribeTargetHealth takes one target group; a
//     target deregistered by hand is not seen (a Classic ELB's instances
//     are in its description, and are seen), though an ensure after
//     Forget reads and repairs them;
//   - attributes of NLBs, target groups and Classic ELBs (one call each);
//   - a listener someone added to our NLB forwarding to a target group
//     not ours (an ensure deletes it);
//   - the user's additional tags: a tag someone else set would be drift
//     that no ensure removes.
//
// Node rules are one part each, so a rule revoked by hand is a missing
// part. An UpdateLoadBalancer after the nodes' security groups changed
// revokes the rules from groups no node has any more: one case where an
// update removes parts, so every node rule is marked FollowsNodes (drift
// repair takes its absence after an update for the update's doing).
//
// No part has a UID: AWS records none. NLBs are named for the Service's
// namespace and name; a Classic ELB's name holds 31 of its UID's 32 hex
// digits, not enough to give the UID, so a Classic ELB left by a deleted
// Service whose name a new Service took is listed as the new one's.
//
// Ownership is by the cluster's marks only: the cluster tag with value
// owned and the kubernetes.io/service-name tag on a load balancer, target
// group or security group (upstream's Classic ELB groups carry the
// cluster tag alone: their load balancer of the same name says whose they
// are); the description naming the cluster and the Service on a node rule
// (or, on an adopted NLB without security group, upstream's naming the
// NLB). Names only choose whose ELB tags are read, since those cost a
// call per 20: NLBs and target groups named "k8s-..." (ours, and
// upstream's target groups) or "a<UID>" (upstream's NLBs, every Classic
// ELB), and a target group named for an owned NLB's Service (the hash in
// the name is of the cluster and the Service) that the NLB uses or
// records is ours without a read. Another cluster's resources never
// match.
type lbInventory struct {
	l *loadBalancers
	// elbPageSize and ec2PageSize are the listings' page sizes, the
	// APIs' maximum; tests make them small to see paging.
	elbPageSize, ec2PageSize int32
}

var _ inventory.Inventory = (*lbInventory)(nil)

func newInventory(l *loadBalancers) *lbInventory {
	return &lbInventory{l: l, elbPageSize: 400, ec2PageSize: 1000}
}

// Kinds of parts, in AWS's terms.
const (
	partNLB           = "network load balancer"
	partListener      = "listener"
	partTargetGroup   = "target group"
	partClassic       = "classic load balancer"
	partSecurityGroup = "security group"
	partRule          = "security group rule"
	partElasticIP     = "elastic ip"
)

// Deletion order of orphans, lowest first. The load balancer goes before
// its target groups (AWS refuses to delete a target group a listener
// uses; deleting the load balancer deletes its listeners), node rules
// after it and its security group last, which AWS keeps in use until the
// load balancer is gone and the rules referencing it are revoked. Rules
// of an adopted NLB without security group name only their load
// balancer, so they go while it still exists to name their Service.
const (
	// orderFirst: listeners, and those rules.
	orderFirst = iota
	orderLoadBalancer
	orderTargetGroup
	orderNodeRule
	orderSecurityGroup
	orderKept
)

// upstreamNamePattern is cloudprovider.DefaultLoadBalancerName's shape:
// "a" and the Service UID without dashes, at most 32 characters. The
// upstream CCM names NLBs so, and Classic ELBs are named so by both.
var upstreamNamePattern = regexp.MustCompile(`^a[0-9A-Za-z]{1,31}$`)

// serviceOf is a Service with only the name, for the naming functions,
// which read nothing else.
func serviceOf(nn types.NamespacedName) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: nn.Namespace, Name: nn.Name}}
}

func parseServiceKey(s string) (types.NamespacedName, bool) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}

// owner is the Service tags mark as this cluster's, if they do.
func (inv *lbInventory) owner(tags map[string]string) (types.NamespacedName, bool) {
	if tags[clusterTagKey(inv.l.clusterID)] != clusterTagOwned {
		return types.NamespacedName{}, false
	}
	return parseServiceKey(tags[serviceNameTagKey])
}

// ruleOwner is the Service a node rule's description names, if it is
// this cluster's (nodeRuleDescription: "... NLB of Service <ns>/<name>").
func (inv *lbInventory) ruleOwner(desc string) (types.NamespacedName, bool) {
	prefix := strings.TrimSuffix(nodeRuleDescription(inv.l.clusterID, &v1.Service{}), "/")
	rest, ok := strings.CutPrefix(desc, prefix)
	if !ok {
		return types.NamespacedName{}, false
	}
	return parseServiceKey(rest)
}

// ownedNLB is an NLB of this cluster found by the listing.
type ownedNLB struct {
	lb  elbv2types.LoadBalancer
	svc types.NamespacedName
	// record is the target group suffixes its tags record (loadbalancer_state.go).
	record map[string]bool
}

func (n *ownedNLB) name() string { return aws.ToString(n.lb.LoadBalancerName) }
func (n *ownedNLB) arn() string  { return aws.ToString(n.lb.LoadBalancerArn) }

// ownedTG is a target group of this cluster.
type ownedTG struct {
	tg  elbv2types.TargetGroup
	svc types.NamespacedName
}

// ownedCLB is a Classic ELB of this cluster.
type ownedCLB struct {
	lb  elbtypes.LoadBalancerDescription
	svc types.NamespacedName
}

// ownGroup is a load balancer security group of this cluster.
type ownGroup struct {
	sg  *ec2types.SecurityGroup
	svc types.NamespacedName
	// classic: a Classic ELB's (k8s-elb-<name>), whose rules in node
	// groups are all the load balancer's, whoever described them.
	classic bool
}

// scan is one Owned run's listings.
type scan struct {
	nlbs   map[string]*ownedNLB // by ARN
	byName map[string]*ownedNLB
	tgs    []ownedTG
	clbs   map[string]*ownedCLB // by name
	groups []ec2types.SecurityGroup
	byID   map[string]*ec2types.SecurityGroup
	ours   map[string]*ownGroup // by ID
}

// Owned lists this cluster's load-balancer resources; see the comment
// on lbInventory for what it reads.
func (inv *lbInventory) Owned(ctx context.Context) ([]inventory.Owned, error) {
	s := &scan{nlbs: map[string]*ownedNLB{}, byName: map[string]*ownedNLB{}, clbs: map[string]*ownedCLB{}, byID: map[string]*ec2types.SecurityGroup{}, ours: map[string]*ownGroup{}}
	if err := inv.scanNLBs(ctx, s); err != nil {
		return nil, err
	}
	if err := inv.scanTargetGroups(ctx, s); err != nil {
		return nil, err
	}
	if err := inv.scanClassic(ctx, s); err != nil {
		return nil, err
	}
	if err := inv.scanSecurityGroups(ctx, s); err != nil {
		return nil, err
	}
	out := inv.parts(s)
	slices.SortFunc(out, func(a, b inventory.Owned) int {
		return cmp.Or(cmp.Compare(a.Order, b.Order), strings.Compare(a.Kind, b.Kind),
			strings.Compare(a.Service.String(), b.Service.String()), strings.Compare(a.Name, b.Name), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

// scanNLBs lists every load balancer and keeps this cluster's NLBs.
func (inv *lbInventory) scanNLBs(ctx context.Context, s *scan) error {
	l := inv.l
	var cands []elbv2types.LoadBalancer
	in := &elbv2.DescribeLoadBalancersInput{PageSize: aws.Int32(inv.elbPageSize)}
	for {
		out, err := l.api.elbv2.DescribeLoadBalancers(ctx, in)
		if err != nil {
			return fmt.Errorf("list load balancers: %w", err)
		}
		for _, lb := range out.LoadBalancers {
			name := aws.ToString(lb.LoadBalancerName)
			if lb.Type == elbv2types.LoadBalancerTypeEnumNetwork && (strings.HasPrefix(name, nlbNames.Prefix+"-") || upstreamNamePattern.MatchString(name)) {
				cands = append(cands, lb)
			}
		}
		if aws.ToString(out.NextMarker) == "" {
			break
		}
		in.Marker = out.NextMarker
	}
	arns := make([]string, len(cands))
	for i, lb := range cands {
		arns[i] = aws.ToString(lb.LoadBalancerArn)
	}
	tags, err := inv.elbv2Tags(ctx, arns)
	if err != nil {
		return err
	}
	for _, lb := range cands {
		arn, name := aws.ToString(lb.LoadBalancerArn), aws.ToString(lb.LoadBalancerName)
		t, ok := tags[arn]
		// An NLB named otherwise with our tags (an older version's, a
		// tool's) is ours too: tags are the mark, names only choose whose
		// tags are worth a call.
		if !ok {
			continue // deleted since it was listed
		}
		svc, ok := inv.owner(t)
		if !ok {
			continue
		}
		n := &ownedNLB{lb: lb, svc: svc, record: parseRecord(t)}
		s.nlbs[arn], s.byName[name] = n, n
	}
	return nil
}

// scanTargetGroups lists every target group and keeps this cluster's: by
// name those of an owned NLB's Service (its hash is the cluster's and the
// Service's), by tags those left behind or named by upstream.
func (inv *lbInventory) scanTargetGroups(ctx context.Context, s *scan) error {
	l := inv.l
	byPrefix := map[string]*ownedNLB{}
	for _, n := range s.nlbs {
		byPrefix[targetGroupPrefix(l.clusterID, serviceOf(n.svc))] = n
	}
	var unknown []elbv2types.TargetGroup
	p := elbv2.NewDescribeTargetGroupsPaginator(l.api.elbv2.DescribeTargetGroups, &elbv2.DescribeTargetGroupsInput{PageSize: aws.Int32(inv.elbPageSize)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("list target groups: %w", err)
		}
		for _, tg := range out.TargetGroups {
			name := aws.ToString(tg.TargetGroupName)
			if !strings.HasPrefix(name, nlbNames.Prefix+"-") {
				continue
			}
			// Ours by name: named for an owned NLB's Service (the hash is
			// of the cluster and the Service) and attached to it or
			// recorded on it. DeleteOrphan checks the tags.
			prefix := name[:min(len(name), len(nlbNames.Prefix)+nlbNames.HashLen+2)]
			if n := byPrefix[prefix]; n != nil && (slices.Contains(tg.LoadBalancerArns, n.arn()) || n.record[strings.TrimPrefix(name, prefix)]) {
				s.tgs = append(s.tgs, ownedTG{tg: tg, svc: n.svc})
				continue
			}
			// Used only by load balancers not ours: not ours either.
			foreign := len(tg.LoadBalancerArns) > 0
			for _, arn := range tg.LoadBalancerArns {
				if s.nlbs[arn] != nil {
					foreign = false
				}
			}
			if !foreign {
				unknown = append(unknown, tg)
			}
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	arns := make([]string, len(unknown))
	for i, tg := range unknown {
		arns[i] = aws.ToString(tg.TargetGroupArn)
	}
	tags, err := inv.elbv2Tags(ctx, arns)
	if err != nil {
		return err
	}
	for _, tg := range unknown {
		if svc, ok := inv.owner(tags[aws.ToString(tg.TargetGroupArn)]); ok {
			s.tgs = append(s.tgs, ownedTG{tg: tg, svc: svc})
		}
	}
	return nil
}

// scanClassic lists every Classic ELB and keeps this cluster's.
func (inv *lbInventory) scanClassic(ctx context.Context, s *scan) error {
	l := inv.l
	var cands []elbtypes.LoadBalancerDescription
	in := &elb.DescribeLoadBalancersInput{PageSize: aws.Int32(inv.elbPageSize)}
	for {
		out, err := l.api.elb.DescribeLoadBalancers(ctx, in)
		if err != nil {
			return fmt.Errorf("list Classic ELBs: %w", err)
		}
		for _, lb := range out.LoadBalancerDescriptions {
			if upstreamNamePattern.MatchString(aws.ToString(lb.LoadBalancerName)) {
				cands = append(cands, lb)
			}
		}
		if aws.ToString(out.NextMarker) == "" {
			break
		}
		in.Marker = out.NextMarker
	}
	names := make([]string, len(cands))
	for i, lb := range cands {
		names[i] = aws.ToString(lb.LoadBalancerName)
	}
	tags, err := inv.classicTags(ctx, names)
	if err != nil {
		return err
	}
	for _, lb := range cands {
		name := aws.ToString(lb.LoadBalancerName)
		if svc, ok := inv.owner(tags[name]); ok {
			s.clbs[name] = &ownedCLB{lb: lb, svc: svc}
		}
	}
	return nil
}

// scanSecurityGroups lists every group of the cluster VPC: the load
// balancers' own groups, and the node groups holding their rules.
func (inv *lbInventory) scanSecurityGroups(ctx context.Context, s *scan) error {
	l := inv.l
	vpc, err := l.vpcFor(ctx, nil)
	if err != nil {
		return err
	}
	p := ec2.NewDescribeSecurityGroupsPaginator(l.api.ec2.DescribeSecurityGroups, &ec2.DescribeSecurityGroupsInput{
		Filters:    []ec2types.Filter{{Name: aws.String("vpc-id"), Values: []string{vpc}}},
		MaxResults: aws.Int32(inv.ec2PageSize),
	})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("list security groups of %s: %w", vpc, err)
		}
		s.groups = append(s.groups, out.SecurityGroups...)
	}
	for i := range s.groups {
		sg := &s.groups[i]
		id, name := aws.ToString(sg.GroupId), aws.ToString(sg.GroupName)
		s.byID[id] = sg
		tags := sgTags(sg)
		if tags[clusterTagKey(l.clusterID)] != clusterTagOwned {
			continue
		}
		svc, tagged := parseServiceKey(tags[serviceNameTagKey])
		switch {
		case strings.HasPrefix(name, clbSecurityGroupPrefix):
			if !hasTag(tags, serviceNameTagKey) {
				// Upstream tags its Classic ELB groups with the
				// cluster only: the load balancer of that name says
				// whose it is, if it is left.
				svc = types.NamespacedName{}
				if c := s.clbs[strings.TrimPrefix(name, clbSecurityGroupPrefix)]; c != nil {
					svc = c.svc
				}
			} else if !tagged {
				continue
			}
			s.ours[id] = &ownGroup{sg: sg, svc: svc, classic: true}
		case tagged:
			// An NLB's (k8s-nlb-<namespace>-<name>-<hash>), or any
			// other group with our tags.
			s.ours[id] = &ownGroup{sg: sg, svc: svc}
		}
	}
	return nil
}

func hasTag(tags map[string]string, k string) bool { _, ok := tags[k]; return ok }

// parts turns the listings into the inventory.
func (inv *lbInventory) parts(s *scan) []inventory.Owned {
	var out []inventory.Owned
	// users are the groups load balancers have that are not ours: the
	// Services' own (annotations), kept.
	type use struct {
		svcs map[types.NamespacedName]bool
		lbs  []string
	}
	users := map[string]*use{}
	useGroups := func(lbName string, svc types.NamespacedName, ids []string) {
		for _, id := range ids {
			if s.ours[id] != nil {
				continue
			}
			u := users[id]
			if u == nil {
				u = &use{svcs: map[types.NamespacedName]bool{}}
				users[id] = u
			}
			u.svcs[svc] = true
			u.lbs = append(u.lbs, lbName)
		}
	}

	for _, n := range s.nlbs {
		out = append(out, inventory.Owned{
			Kind: partNLB, ID: n.arn(), Name: n.name(), Service: n.svc, Order: orderLoadBalancer,
			Detail: fmt.Sprintf("%s; security groups %s", n.lb.Scheme, s.groupNames(n.lb.SecurityGroups)),
		})
		useGroups(n.name(), n.svc, n.lb.SecurityGroups)
		for _, az := range n.lb.AvailabilityZones {
			for _, a := range az.LoadBalancerAddresses {
				if id := aws.ToString(a.AllocationId); id != "" {
					// The Service's Elastic IPs (annotation): the user's.
					out = append(out, inventory.Owned{
						Kind: partElasticIP, ID: id, Name: aws.ToString(a.IpAddress), Service: n.svc, Kept: true, Order: orderKept,
						Detail: fmt.Sprintf("address of %s in %s", n.name(), aws.ToString(az.SubnetId)),
					})
				}
			}
		}
	}
	for _, t := range s.tgs {
		tg := t.tg
		name := aws.ToString(tg.TargetGroupName)
		var lbs []string
		for _, arn := range tg.LoadBalancerArns {
			n := s.nlbs[arn]
			if n == nil {
				lbs = append(lbs, arn)
				continue
			}
			lbs = append(lbs, n.name())
			// The listener that makes the target group the load
			// balancer's: seen through the target group only.
			port := listenerPort(name)
			out = append(out, inventory.Owned{
				Kind: partListener, ID: n.arn() + listenerIDSep + aws.ToString(tg.TargetGroupArn), Name: n.name() + ":" + port,
				Service: t.svc, Order: orderFirst, Detail: fmt.Sprintf("port %s -> %s", port, name),
			})
		}
		slices.Sort(lbs)
		used := "no listener"
		if len(lbs) > 0 {
			used = "listener of " + strings.Join(lbs, ",")
		}
		out = append(out, inventory.Owned{
			Kind: partTargetGroup, ID: aws.ToString(tg.TargetGroupArn), Name: name, Service: t.svc, Order: orderTargetGroup,
			Detail: fmt.Sprintf("%s:%d; health %s; %s", tg.Protocol, aws.ToInt32(tg.Port), tgHealthText(tg), used),
		})
	}
	for _, c := range s.clbs {
		name := aws.ToString(c.lb.LoadBalancerName)
		out = append(out, inventory.Owned{
			Kind: partClassic, ID: name, Name: name, Service: c.svc, Order: orderLoadBalancer,
			Detail: s.classicText(&c.lb),
		})
		useGroups(name, c.svc, c.lb.SecurityGroups)
	}
	for id, g := range s.ours {
		out = append(out, inventory.Owned{
			Kind: partSecurityGroup, ID: id, Name: aws.ToString(g.sg.GroupName), Service: g.svc, Order: orderSecurityGroup,
			Detail: "ingress " + rulesText(cidrRules(g.sg.IpPermissions)),
		})
	}
	for id, u := range users {
		var svc types.NamespacedName
		if len(u.svcs) == 1 {
			for k := range u.svcs {
				svc = k
			}
		}
		name := ""
		if sg := s.byID[id]; sg != nil {
			name = aws.ToString(sg.GroupName)
		}
		slices.Sort(u.lbs)
		out = append(out, inventory.Owned{
			Kind: partSecurityGroup, ID: id, Name: name, Service: svc, Kept: true, Order: orderKept,
			Detail: "the Service's own, on " + strings.Join(slices.Compact(u.lbs), ","),
		})
	}
	out = append(out, inv.ruleParts(s)...)
	return out
}

// ruleParts are the rules in node groups that the cluster's load
// balancers own: ours (described for the cluster and the Service), any
// rule sourced from a Classic ELB's group, and the CIDR rules of an
// adopted NLB without security group (described with its name).
func (inv *lbInventory) ruleParts(s *scan) []inventory.Owned {
	var out []inventory.Owned
	add := func(holder *ec2types.SecurityGroup, r sgRule, svc types.NamespacedName, order int) {
		src := r.cidr
		if r.group != "" {
			src = s.groupNames([]string{r.group})
		}
		hid := aws.ToString(holder.GroupId)
		// Every rule here is in a node group, which ensureNodeRules and
		// ensureUpstreamNodeRules empty once no backend uses it, on an
		// update too.
		out = append(out, inventory.Owned{
			Kind: partRule, ID: ruleID(hid, r), Name: aws.ToString(holder.GroupName), Service: svc, Order: order,
			Detail: fmt.Sprintf("%s from %s into %s", ruleText(r), src, hid), FollowsNodes: true,
		})
	}
	for i := range s.groups {
		sg := &s.groups[i]
		for _, p := range sg.IpPermissions {
			base := sgRule{proto: aws.ToString(p.IpProtocol), from: aws.ToInt32(p.FromPort), to: aws.ToInt32(p.ToPort)}
			for _, pair := range p.UserIdGroupPairs {
				r := base
				r.group = aws.ToString(pair.GroupId)
				if svc, ok := inv.ruleOwner(aws.ToString(pair.Description)); ok {
					add(sg, r, svc, orderNodeRule)
				} else if g := s.ours[r.group]; g != nil && g.classic && aws.ToString(sg.GroupId) != r.group {
					add(sg, r, g.svc, orderNodeRule)
				}
			}
			cidr := func(c, desc string) {
				lbName, ok := strings.CutPrefix(desc, upstreamNLBClientRule+"=")
				if !ok {
					lbName, ok = strings.CutPrefix(desc, upstreamNLBHealthRule+"=")
				}
				n := s.byName[lbName]
				if !ok || n == nil || len(n.lb.SecurityGroups) > 0 {
					return
				}
				r := base
				r.cidr = normalizeCIDR(c)
				add(sg, r, n.svc, orderFirst)
			}
			for _, r := range p.IpRanges {
				cidr(aws.ToString(r.CidrIp), aws.ToString(r.Description))
			}
			for _, r := range p.Ipv6Ranges {
				cidr(aws.ToString(r.CidrIpv6), aws.ToString(r.Description))
			}
		}
		// The MTU rule the adopted NLBs share (Service zero) is an orphan
		// once no client rule in the group needs it: two of them deleted
		// at once by an older version, or by hand, left it behind.
		for _, r := range unneededMTURules(sg) {
			out = append(out, inventory.Owned{
				Kind: partRule, ID: ruleID(aws.ToString(sg.GroupId), r), Name: aws.ToString(sg.GroupName), Unneeded: true, Order: orderFirst,
				Detail: fmt.Sprintf("%s from %s into %s (%s, which no NLB client rule needs)", ruleText(r), r.cidr, aws.ToString(sg.GroupId), upstreamNLBMTURule),
			})
		}
	}
	return out
}

// groupNames names groups for a Detail: ours by name, which a re-created
// group keeps, others by ID, sorted.
func (s *scan) groupNames(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if g := s.ours[id]; g != nil {
			out = append(out, aws.ToString(g.sg.GroupName))
		} else {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// classicText is what an ensure sets on a Classic ELB, as its
// description shows it.
func (s *scan) classicText(lb *elbtypes.LoadBalancerDescription) string {
	var listeners []string
	listenerPolicies := map[int32][]string{}
	for _, d := range lb.ListenerDescriptions {
		li := d.Listener
		if li == nil {
			continue
		}
		t := fmt.Sprintf("%s:%d->%s:%d", strings.ToUpper(aws.ToString(li.Protocol)), li.LoadBalancerPort,
			strings.ToUpper(aws.ToString(li.InstanceProtocol)), aws.ToInt32(li.InstancePort))
		if c := aws.ToString(li.SSLCertificateId); c != "" {
			t += " " + c
		}
		listeners = append(listeners, t)
		if len(d.PolicyNames) > 0 {
			listenerPolicies[li.LoadBalancerPort] = slices.Sorted(slices.Values(d.PolicyNames))
		}
	}
	slices.Sort(listeners)
	var instances []string
	for _, i := range lb.Instances {
		instances = append(instances, aws.ToString(i.InstanceId))
	}
	slices.Sort(instances)
	health := "none"
	if hc := lb.HealthCheck; hc != nil {
		health = fmt.Sprintf("%s every %ds timeout %ds healthy %d unhealthy %d", aws.ToString(hc.Target),
			aws.ToInt32(hc.Interval), aws.ToInt32(hc.Timeout), aws.ToInt32(hc.HealthyThreshold), aws.ToInt32(hc.UnhealthyThreshold))
	}
	subnets := slices.Sorted(slices.Values(lb.Subnets))
	text := fmt.Sprintf("%s; listeners %s; health %s; instances %s; security groups %s; subnets %s",
		aws.ToString(lb.Scheme), orNone(listeners), health, orNone(instances), s.groupNames(lb.SecurityGroups), orNone(subnets))
	var policies []string
	for _, port := range slices.Sorted(func(yield func(int32) bool) {
		for p := range listenerPolicies {
			if !yield(p) {
				return
			}
		}
	}) {
		policies = append(policies, fmt.Sprintf("listener %d: %s", port, strings.Join(listenerPolicies[port], "+")))
	}
	var backend []string
	for _, b := range lb.BackendServerDescriptions {
		if len(b.PolicyNames) > 0 {
			backend = append(backend, fmt.Sprintf("instance port %d: %s", aws.ToInt32(b.InstancePort), strings.Join(slices.Sorted(slices.Values(b.PolicyNames)), "+")))
		}
	}
	slices.Sort(backend)
	if all := append(policies, backend...); len(all) > 0 {
		text += "; policies " + strings.Join(all, ", ")
	}
	return text
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ",")
}

// tgHealthText is a target group's health check.
func tgHealthText(tg elbv2types.TargetGroup) string {
	t := fmt.Sprintf("%s %s", tg.HealthCheckProtocol, aws.ToString(tg.HealthCheckPort))
	if tg.HealthCheckProtocol != elbv2types.ProtocolEnumTcp {
		t += " " + aws.ToString(tg.HealthCheckPath)
	}
	return fmt.Sprintf("%s every %ds timeout %ds healthy %d unhealthy %d", t, aws.ToInt32(tg.HealthCheckIntervalSeconds),
		aws.ToInt32(tg.HealthCheckTimeoutSeconds), aws.ToInt32(tg.HealthyThresholdCount), aws.ToInt32(tg.UnhealthyThresholdCount))
}

// listenerPort is the Service port in one of our target group names
// ("k8s-<hash>-<port>-<protocol>"), or "?" for a name upstream gave.
func listenerPort(tgName string) string {
	parts := strings.Split(tgName, "-")
	if len(parts) == 4 && len(parts[1]) == nlbNames.HashLen {
		if _, err := strconv.Atoi(parts[2]); err == nil {
			return parts[2]
		}
	}
	return "?"
}

func ruleText(r sgRule) string {
	switch {
	case r.proto == "-1":
		return "all traffic"
	case r.from == r.to:
		return fmt.Sprintf("%s %d", r.proto, r.from)
	}
	return fmt.Sprintf("%s %d-%d", r.proto, r.from, r.to)
}

// rulesText is a group's CIDR ingress, sorted.
func rulesText(rules map[sgRule]bool) string {
	var out []string
	for r := range rules {
		out = append(out, ruleText(r)+" from "+r.cidr)
	}
	slices.Sort(out)
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// A derived listener's ID is its load balancer's ARN and its target
// group's, which is all that identifies it without a per-load-balancer
// read.
const listenerIDSep = " -> "

// A rule's ID: "<group> <protocol> <from> <to> <source>", where source
// is a group ID or a CIDR. EC2's own rule IDs come from
// DescribeSecurityGroupRules, a second listing.
func ruleID(holder string, r sgRule) string {
	src := r.cidr
	if r.group != "" {
		src = r.group
	}
	return fmt.Sprintf("%s %s %d %d %s", holder, r.proto, r.from, r.to, src)
}

func parseRuleID(id string) (holder string, r sgRule, err error) {
	f := strings.Fields(id)
	if len(f) != 5 {
		return "", r, fmt.Errorf("malformed security group rule ID %q", id)
	}
	from, err1 := strconv.Atoi(f[2])
	to, err2 := strconv.Atoi(f[3])
	if err1 != nil || err2 != nil {
		return "", r, fmt.Errorf("malformed security group rule ID %q", id)
	}
	r = sgRule{proto: f[1], from: int32(from), to: int32(to)}
	if strings.HasPrefix(f[4], "sg-") {
		r.group = f[4]
	} else {
		r.cidr = f[4]
	}
	return f[0], r, nil
}

// elbv2Tags reads the tags of ELBv2 resources, 20 a call. A resource
// deleted since it was listed fails its whole batch; the batch is then
// read one by one, and what is gone has no tags.
func (inv *lbInventory) elbv2Tags(ctx context.Context, arns []string) (map[string]map[string]string, error) {
	out := make(map[string]map[string]string, len(arns))
	read := func(batch []string) error {
		res, err := inv.l.api.elbv2.DescribeTags(ctx, &elbv2.DescribeTagsInput{ResourceArns: batch})
		if err != nil {
			return err
		}
		for _, d := range res.TagDescriptions {
			m := make(map[string]string, len(d.Tags))
			for _, t := range d.Tags {
				m[aws.ToString(t.Key)] = aws.ToString(t.Value)
			}
			out[aws.ToString(d.ResourceArn)] = m
		}
		return nil
	}
	gone := func(err error) bool {
		return isAPIError(err, "LoadBalancerNotFound") || isAPIError(err, "TargetGroupNotFound") || isAPIError(err, "ListenerNotFound")
	}
	if err := readInBatches(arns, read, gone); err != nil {
		return nil, fmt.Errorf("describe tags: %w", err)
	}
	return out, nil
}

// readInBatches reads ids describeTagsBatch at a time; a batch that fails
// because one of its resources is gone (deleted since it was listed) is
// read again one by one, so the others' tags are still read.
func readInBatches(ids []string, read func([]string) error, gone func(error) bool) error {
	for start := 0; start < len(ids); start += describeTagsBatch {
		batch := ids[start:min(start+describeTagsBatch, len(ids))]
		err := read(batch)
		if gone(err) && len(batch) > 1 {
			for _, id := range batch {
				if err = read([]string{id}); err != nil && !gone(err) {
					break
				}
				err = nil
			}
		} else if gone(err) {
			err = nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// classicTags reads the tags of Classic ELBs, 20 a call, as elbv2Tags.
func (inv *lbInventory) classicTags(ctx context.Context, names []string) (map[string]map[string]string, error) {
	out := make(map[string]map[string]string, len(names))
	read := func(batch []string) error {
		res, err := inv.l.api.elb.DescribeTags(ctx, &elb.DescribeTagsInput{LoadBalancerNames: batch})
		if err != nil {
			return err
		}
		for _, d := range res.TagDescriptions {
			m := make(map[string]string, len(d.Tags))
			for _, t := range d.Tags {
				m[aws.ToString(t.Key)] = aws.ToString(t.Value)
			}
			out[aws.ToString(d.LoadBalancerName)] = m
		}
		return nil
	}
	gone := func(err error) bool { return isAPIError(err, "LoadBalancerNotFound") }
	if err := readInBatches(names, read, gone); err != nil {
		return nil, fmt.Errorf("describe tags of Classic ELBs: %w", err)
	}
	return out, nil
}

// Forget drops what the backend remembers of the Service's load
// balancer: its record (so UpdateLoadBalancer reads the cloud), the node
// rules confirmed for it, and, at its next ensure, the targets confirmed
// for its target groups. Everything else an ensure does it reads anyway.
func (inv *lbInventory) Forget(nn types.NamespacedName) {
	l := inv.l
	svc := serviceOf(nn)
	l.records.Forget(l.recordKey(svc))
	l.nodeRules.Delete(serviceKey(svc))
	l.forgotten.Store(serviceKey(svc), struct{}{})
}

// DeleteOrphan deletes one part of a Service's load balancer, found by
// Owned; what is gone already is success. It reads nothing of the
// Service, which no longer exists.
func (inv *lbInventory) DeleteOrphan(ctx context.Context, o inventory.Owned) error {
	if o.Kept {
		return fmt.Errorf("%s %s is the Service's own (user-supplied), never deleted", o.Kind, o.ID)
	}
	l := inv.l
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("orphan", o.Kind, "id", o.ID, "service", o.Service.String()))
	var err error
	switch o.Kind {
	case partListener:
		err = inv.deleteListener(ctx, o.ID)
	case partNLB:
		_, err = l.api.elbv2.DeleteLoadBalancer(ctx, &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: aws.String(o.ID)})
		if isAPIError(err, "LoadBalancerNotFound") {
			err = nil
		}
	case partTargetGroup:
		err = inv.deleteTargetGroup(ctx, o)
	case partClassic:
		_, err = l.api.elb.DeleteLoadBalancer(ctx, &elb.DeleteLoadBalancerInput{LoadBalancerName: aws.String(o.ID)})
		if isAPIError(err, "LoadBalancerNotFound") {
			err = nil
		}
	case partSecurityGroup:
		// The rules sourced from it go first (a Classic ELB's whoever
		// made them); AWS keeps it while the deleted load balancer's
		// interfaces are in it, which is an api.RetryError.
		err = l.deleteSecurityGroupWithRules(ctx, serviceOf(o.Service), &ec2types.SecurityGroup{GroupId: aws.String(o.ID)},
			strings.HasPrefix(o.Name, clbSecurityGroupPrefix))
	case partRule:
		err = inv.revokeRule(ctx, o.ID)
	default:
		err = fmt.Errorf("unknown kind %q", o.Kind)
	}
	if err != nil {
		return fmt.Errorf("delete %s %s of service %s: %w", o.Kind, o.ID, o.Service, err)
	}
	klog.FromContext(ctx).Info("Deleted orphaned load balancer part")
	if o.Service.Name != "" {
		inv.Forget(o.Service)
	}
	return nil
}

// deleteListener deletes the listeners of a load balancer that forward
// to a target group.
func (inv *lbInventory) deleteListener(ctx context.Context, id string) error {
	lbARN, tgARN, ok := strings.Cut(id, listenerIDSep)
	if !ok {
		return fmt.Errorf("malformed listener ID %q", id)
	}
	listeners, err := inv.l.listeners(ctx, lbARN)
	if err != nil {
		return err
	}
	for _, li := range listeners {
		if forwardTarget(li) != tgARN {
			continue
		}
		if _, err := inv.l.api.elbv2.DeleteListener(ctx, &elbv2.DeleteListenerInput{ListenerArn: li.ListenerArn}); err != nil && !isAPIError(err, "ListenerNotFound") {
			return err
		}
	}
	return nil
}

// deleteTargetGroup deletes a target group once its tags confirm it is
// the Service's: the listing may have known it by its name alone.
func (inv *lbInventory) deleteTargetGroup(ctx context.Context, o inventory.Owned) error {
	l := inv.l
	tags, err := inv.elbv2Tags(ctx, []string{o.ID})
	if err != nil {
		return err
	}
	t, ok := tags[o.ID]
	if !ok {
		return nil
	}
	if svc, mine := inv.owner(t); !mine || svc != o.Service {
		return fmt.Errorf("target group %s is not tagged as this cluster's for service %s; not deleting it", o.Name, o.Service)
	}
	_, err = l.api.elbv2.DeleteTargetGroup(ctx, &elbv2.DeleteTargetGroupInput{TargetGroupArn: aws.String(o.ID)})
	if err != nil && !isAPIError(err, "TargetGroupNotFound") {
		return err
	}
	l.targets.Delete(o.ID)
	return nil
}

// revokeRule revokes one node rule. An adopted NLB's CIDR rule takes the
// MTU rule upstream keeps beside the client rules, once no client rule
// in the group has its CIDR.
func (inv *lbInventory) revokeRule(ctx context.Context, id string) error {
	l := inv.l
	holder, r, err := parseRuleID(id)
	if err != nil {
		return err
	}
	if r.cidr != "" {
		// An adopted NLB's CIDR rule, or the MTU rule they share: the MTU
		// rule is decided under the group's lock, from a read after the
		// other workers' writes, like the ensures' (syncGroupUpstreamRules).
		defer l.groupLocks.Lock(holder)()
	}
	if isMTURule(r) {
		// Listed as no longer needed; a client rule added since needs it.
		sg, err := l.describeGroup(ctx, holder)
		if err != nil || sg == nil || !slices.Contains(unneededMTURules(sg), r) {
			return err
		}
	}
	perm := ec2types.IpPermission{IpProtocol: aws.String(r.proto), FromPort: aws.Int32(r.from), ToPort: aws.Int32(r.to)}
	if r.proto == "-1" {
		perm.FromPort, perm.ToPort = nil, nil
	}
	switch {
	case r.group != "":
		perm.UserIdGroupPairs = []ec2types.UserIdGroupPair{{GroupId: aws.String(r.group)}}
	case strings.Contains(r.cidr, ":"):
		perm.Ipv6Ranges = []ec2types.Ipv6Range{{CidrIpv6: aws.String(r.cidr)}}
	default:
		perm.IpRanges = []ec2types.IpRange{{CidrIp: aws.String(r.cidr)}}
	}
	_, err = l.api.ec2.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: aws.String(holder), IpPermissions: []ec2types.IpPermission{perm}})
	if isAPIError(err, "InvalidGroup.NotFound") {
		return nil
	}
	if err != nil && !isAPIError(err, "InvalidPermission.NotFound") {
		return err
	}
	if r.cidr == "" || isMTURule(r) {
		return nil
	}
	sg, err := l.describeGroup(ctx, holder)
	if err != nil || sg == nil {
		return err
	}
	return l.changeNodeRules(ctx, holder, nil, unneededMTURules(sg), upstreamNLBMTURule)
}
