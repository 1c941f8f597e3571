package aws

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	v1 "k8s.io/api/core/v1"
	"k8s.io/cloud-provider/api"
	"k8s.io/klog/v2"
)

// sgReleaseRetry is when to try deleting a load balancer's security group
// again while AWS still holds the deleted NLB's network interfaces in it.
const sgReleaseRetry = 5 * time.Second

// The security group design: each NLB gets a security group of its own,
// created, tagged and deleted by us. Its ingress is exactly the listener
// ports from the Service's source ranges. The nodes' security groups get
// one rule per NodePort (and the health check NodePort) whose source is
// that load balancer security group and whose description names the
// Service. We add and revoke only such rules there, and never create,
// modify otherwise or delete a node security group.

// sgRule is an ingress rule in a form that can be compared.
type sgRule struct {
	proto    string
	from, to int32
	cidr     string // source CIDR, or ""
	group    string // source security group, or ""
}

func (r sgRule) permission(description string) ec2types.IpPermission {
	p := ec2types.IpPermission{IpProtocol: aws.String(r.proto), FromPort: aws.Int32(r.from), ToPort: aws.Int32(r.to)}
	if r.proto == "-1" {
		// All protocols (upstream's Classic ELB node rule) have no ports.
		p.FromPort, p.ToPort = nil, nil
	}
	switch {
	case r.group != "":
		p.UserIdGroupPairs = []ec2types.UserIdGroupPair{{GroupId: aws.String(r.group), Description: aws.String(description)}}
	case netip.MustParsePrefix(r.cidr).Addr().Is4():
		p.IpRanges = []ec2types.IpRange{{CidrIp: aws.String(r.cidr), Description: aws.String(description)}}
	default:
		p.Ipv6Ranges = []ec2types.Ipv6Range{{CidrIpv6: aws.String(r.cidr), Description: aws.String(description)}}
	}
	return p
}

func permissions(rules []sgRule, description string) []ec2types.IpPermission {
	sort.Slice(rules, func(i, j int) bool {
		a, b := rules[i], rules[j]
		if a.proto != b.proto {
			return a.proto < b.proto
		}
		if a.from != b.from {
			return a.from < b.from
		}
		return a.cidr+a.group < b.cidr+b.group
	})
	out := make([]ec2types.IpPermission, 0, len(rules))
	for _, r := range rules {
		out = append(out, r.permission(description))
	}
	return out
}

// cidrRules flattens a group's CIDR-sourced ingress.
func cidrRules(perms []ec2types.IpPermission) map[sgRule]bool {
	out := map[sgRule]bool{}
	for _, p := range perms {
		base := sgRule{proto: aws.ToString(p.IpProtocol), from: aws.ToInt32(p.FromPort), to: aws.ToInt32(p.ToPort)}
		for _, r := range p.IpRanges {
			rr := base
			rr.cidr = normalizeCIDR(aws.ToString(r.CidrIp))
			out[rr] = true
		}
		for _, r := range p.Ipv6Ranges {
			rr := base
			rr.cidr = normalizeCIDR(aws.ToString(r.CidrIpv6))
			out[rr] = true
		}
	}
	return out
}

func normalizeCIDR(s string) string {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked().String()
	}
	return s
}

// groupRules flattens a group's ingress from source group src whose
// description is desc (any, if desc is empty): the node rules one Service
// owns.
func groupRules(perms []ec2types.IpPermission, src, desc string) map[sgRule]bool {
	out := map[sgRule]bool{}
	for _, p := range perms {
		for _, pair := range p.UserIdGroupPairs {
			if aws.ToString(pair.GroupId) != src || (desc != "" && aws.ToString(pair.Description) != desc) {
				continue
			}
			out[sgRule{proto: aws.ToString(p.IpProtocol), from: aws.ToInt32(p.FromPort), to: aws.ToInt32(p.ToPort), group: src}] = true
		}
	}
	return out
}

func protocols(p listenerSpec) []string {
	var out []string
	if p.tcp {
		out = append(out, "tcp")
	}
	if p.udp {
		out = append(out, "udp")
	}
	return out
}

// listenerRules is what the load balancer security group must allow.
func listenerRules(opts *lbOptions) map[sgRule]bool {
	out := map[sgRule]bool{}
	for _, p := range opts.ports {
		for _, proto := range protocols(p) {
			for _, c := range opts.sourceRanges {
				out[sgRule{proto: proto, from: p.port, to: p.port, cidr: c.String()}] = true
			}
		}
	}
	return out
}

// nodePortRules is what each node security group must allow from the load
// balancer security group: the NodePorts, and the health check NodePort.
func nodePortRules(opts *lbOptions, lbSG string) map[sgRule]bool {
	out := map[sgRule]bool{}
	for _, p := range opts.ports {
		for _, proto := range protocols(p) {
			out[sgRule{proto: proto, from: p.nodePort, to: p.nodePort, group: lbSG}] = true
		}
	}
	if n := opts.healthCheck.nodePort; n != 0 {
		out[sgRule{proto: "tcp", from: n, to: n, group: lbSG}] = true
	}
	return out
}

func diffRules(want, have map[sgRule]bool) (add, remove []sgRule) {
	for r := range want {
		if !have[r] {
			add = append(add, r)
		}
	}
	for r := range have {
		if !want[r] {
			remove = append(remove, r)
		}
	}
	return add, remove
}

func sgTags(sg *ec2types.SecurityGroup) map[string]string { return ec2Tags(sg.Tags) }

func (l *loadBalancers) ownedSG(sg *ec2types.SecurityGroup, svc *v1.Service) bool {
	return l.ownedTags(sgTags(sg), svc)
}

// findLBSecurityGroup returns the security group named for the Service in
// the VPC, or nil. The caller checks it is ours.
func (l *loadBalancers) findLBSecurityGroup(ctx context.Context, svc *v1.Service, vpc string) (*ec2types.SecurityGroup, error) {
	return l.findSecurityGroupNamed(ctx, securityGroupName(l.clusterID, svc), vpc)
}

// findSecurityGroupNamed returns the security group named name in the
// VPC, or nil. The caller checks it is ours.
func (l *loadBalancers) findSecurityGroupNamed(ctx context.Context, name, vpc string) (*ec2types.SecurityGroup, error) {
	out, err := l.api.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{
		{Name: aws.String("group-name"), Values: []string{name}},
		{Name: aws.String("vpc-id"), Values: []string{vpc}},
	}})
	if err != nil {
		return nil, fmt.Errorf("describe security group %s: %w", name, err)
	}
	for i := range out.SecurityGroups {
		if aws.ToString(out.SecurityGroups[i].GroupName) == name {
			return &out.SecurityGroups[i], nil
		}
	}
	return nil, nil
}

// ensureLBSecurityGroup finds or creates the load balancer's security
// group and makes its ingress match the listeners and source ranges. isNew
// says it was just created, so no node rule can reference it yet.
func (l *loadBalancers) ensureLBSecurityGroup(ctx context.Context, svc *v1.Service, opts *lbOptions, vpc string) (id string, isNew bool, err error) {
	name := securityGroupName(l.clusterID, svc)
	sg, err := l.findLBSecurityGroup(ctx, svc, vpc)
	if err != nil {
		return "", false, err
	}
	if sg != nil && !l.ownedSG(sg, svc) {
		return "", false, fmt.Errorf("security group %s (%s) exists in %s but is not tagged as ours; refusing to adopt it", name, aws.ToString(sg.GroupId), vpc)
	}
	if sg == nil {
		if sg, isNew, err = l.createLBSecurityGroup(ctx, svc, opts, vpc); err != nil {
			return "", false, err
		}
	}
	id = aws.ToString(sg.GroupId)
	if err := l.syncListenerIngress(ctx, svc, sg, listenerRules(opts)); err != nil {
		return "", false, err
	}
	return id, isNew, nil
}

// syncListenerIngress makes the CIDR-sourced ingress of a load balancer's
// own security group exactly want.
func (l *loadBalancers) syncListenerIngress(ctx context.Context, svc *v1.Service, sg *ec2types.SecurityGroup, want map[sgRule]bool) error {
	id := aws.ToString(sg.GroupId)
	add, remove := diffRules(want, cidrRules(sg.IpPermissions))
	desc := fmt.Sprintf("listener of Service %s", serviceKey(svc))
	if len(add) > 0 {
		_, err := l.api.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(id), IpPermissions: permissions(add, desc)})
		if err != nil && !isAPIError(err, "InvalidPermission.Duplicate") {
			return fmt.Errorf("allow listener traffic in %s: %w", id, err)
		}
	}
	if len(remove) > 0 {
		_, err := l.api.ec2.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: aws.String(id), IpPermissions: permissions(remove, desc)})
		if err != nil && !isAPIError(err, "InvalidPermission.NotFound") {
			return fmt.Errorf("revoke stale listener rules in %s: %w", id, err)
		}
	}
	if len(add)+len(remove) > 0 {
		klog.FromContext(ctx).Info("Updated load balancer security group", "securityGroup", id, "added", len(add), "revoked", len(remove))
	}
	return nil
}

func (l *loadBalancers) createLBSecurityGroup(ctx context.Context, svc *v1.Service, opts *lbOptions, vpc string) (*ec2types.SecurityGroup, bool, error) {
	return l.createOwnedSecurityGroup(ctx, svc, opts, securityGroupName(l.clusterID, svc),
		fmt.Sprintf("NLB of Service %s in cluster %s", serviceKey(svc), l.clusterID), vpc, false,
		func(sg *ec2types.SecurityGroup) bool { return l.ownedSG(sg, svc) })
}

// createOwnedSecurityGroup creates a load balancer's security group named
// name, tagged as the Service's with the user's additional tags, or with
// upstreamTags as upstream tags its groups: the cluster tag and the
// user's tags only (aws.go:1595, buildTags). A group of that name that is
// already ours by owned (a create whose answer was lost) is returned as
// found.
func (l *loadBalancers) createOwnedSecurityGroup(ctx context.Context, svc *v1.Service, opts *lbOptions, name, description, vpc string,
	upstreamTags bool, owned func(*ec2types.SecurityGroup) bool) (*ec2types.SecurityGroup, bool, error) {
	tags := []ec2types.Tag{
		{Key: aws.String(clusterTagKey(l.clusterID)), Value: aws.String(clusterTagOwned)},
		{Key: aws.String(serviceNameTagKey), Value: aws.String(serviceKey(svc))},
		{Key: aws.String(nameTagKey), Value: aws.String(name)},
	}
	if upstreamTags {
		tags = tags[:1]
	}
	for _, t := range l.elbTags(svc, opts)[2:] {
		if upstreamTags || aws.ToString(t.Key) != nameTagKey {
			tags = append(tags, ec2types.Tag{Key: t.Key, Value: t.Value})
		}
	}
	out, err := l.api.ec2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{
		GroupName:   aws.String(name),
		Description: aws.String(description),
		VpcId:       aws.String(vpc),
		// Tagged in the same call, so no crash can leave it untagged and
		// unrecognisable as ours.
		TagSpecifications: []ec2types.TagSpecification{{
			ResourceType: ec2types.ResourceTypeSecurityGroup,
			Tags:         tags,
		}},
	})
	if isAPIError(err, "InvalidGroup.Duplicate") {
		sg, ferr := l.findSecurityGroupNamed(ctx, name, vpc)
		if ferr != nil || sg == nil || !owned(sg) {
			return nil, false, fmt.Errorf("security group %s exists in %s but is not ours: %w", name, vpc, err)
		}
		return sg, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("create security group %s: %w", name, err)
	}
	klog.FromContext(ctx).Info("Created load balancer security group", "securityGroup", aws.ToString(out.GroupId), "name", name)
	return &ec2types.SecurityGroup{GroupId: out.GroupId, GroupName: aws.String(name), VpcId: aws.String(vpc)}, true, nil
}

// ensureNodeRules lets the load balancer reach the backends: each
// backend's cluster security group gets our NodePort rules from the load
// balancer security group, and groups no backend uses any more lose them.
// It reads security groups only when its inputs changed since it last
// succeeded (or that was long ago); newSG says lbSG was just created.
func (l *loadBalancers) ensureNodeRules(ctx context.Context, svc *v1.Service, opts *lbOptions, lbSG string, newSG bool, be *backendSet) error {
	want := nodePortRules(opts, lbSG)
	allTraffic := sgRule{proto: "-1", group: lbSG}
	if opts.allTrafficNodeRule {
		want = map[sgRule]bool{allTraffic: true}
	}
	sig := nodeRuleSignature(lbSG, want, be)
	key := serviceKey(svc)
	if cached, ok := l.nodeRules.Get(key); ok && cached == sig {
		return nil
	}
	l.nodeRules.Delete(key)
	desc := nodeRuleDescription(l.clusterID, svc)
	// Rules are added with our description, or upstream's all-traffic
	// rule with none, as upstream adds it.
	addDesc := desc
	if opts.allTrafficNodeRule {
		addDesc = ""
	}
	groupsKey := strings.Join(be.distinctGroupSets(), "|")
	// No rule can reference a group we just created, so with the
	// backends' cluster groups known, the rules are only added: no read
	// of node groups that, with one rule per Service, grow large.
	if chosen, ok := l.clusterGroups.Get(groupsKey); ok && newSG {
		add, _ := diffRules(want, nil)
		for _, id := range chosen {
			if err := l.changeNodeRules(ctx, id, add, nil, addDesc); err != nil {
				return err
			}
		}
		l.nodeRules.Set(key, sig)
		return nil
	}
	var holders []ec2types.SecurityGroup
	if !newSG {
		var err error
		if holders, err = l.groupsReferencing(ctx, lbSG); err != nil {
			return err
		}
	}
	known := map[string]*ec2types.SecurityGroup{}
	for i := range holders {
		known[aws.ToString(holders[i].GroupId)] = &holders[i]
	}
	if err := l.readBackendGroups(ctx, be, known); err != nil {
		return err
	}
	targets := l.nodeSecurityGroups(be, known)
	chosen := make([]string, 0, len(targets))
	for id := range targets {
		chosen = append(chosen, id)
	}
	sort.Strings(chosen)
	l.clusterGroups.Set(groupsKey, chosen)
	ids := make([]string, 0, len(known))
	for id := range known {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		sg := known[id]
		var have map[sgRule]bool
		if sg != nil {
			have = groupRules(sg.IpPermissions, lbSG, desc)
			if opts.allTrafficNodeRule && admitsAll(sg.IpPermissions, lbSG) {
				have[allTraffic] = true
			}
		}
		var add, remove []sgRule
		if targets[id] {
			add, remove = diffRules(want, have)
			if sg != nil && admitsAll(sg.IpPermissions, lbSG) {
				// Upstream's Classic ELB rule (all traffic from the load
				// balancer's group, aws.go:3062-3080) already admits it:
				// an adopted one needs no rule of ours, and its group's
				// deletion revokes upstream's.
				add = nil
			}
		} else {
			_, remove = diffRules(nil, have)
		}
		if sg != nil {
			// Rules from a source the Service no longer uses (its own
			// group replaced by the user's, or back).
			_, stale := diffRules(nil, otherSourceRules(sg.IpPermissions, lbSG, desc))
			remove = append(remove, stale...)
		}
		if err := l.changeNodeRules(ctx, id, add, nil, addDesc); err != nil {
			return err
		}
		if err := l.changeNodeRules(ctx, id, nil, remove, desc); err != nil {
			return err
		}
	}
	l.nodeRules.Set(key, sig)
	return nil
}

// readBackendGroups adds to known the backends' security groups it lacks,
// in one read; a group that is gone stays known as nil.
func (l *loadBalancers) readBackendGroups(ctx context.Context, be *backendSet, known map[string]*ec2types.SecurityGroup) error {
	var unknown []string
	for _, groups := range be.groups {
		for _, gid := range groups {
			if _, ok := known[gid]; !ok && gid != "" {
				known[gid] = nil
				unknown = append(unknown, gid)
			}
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	out, err := l.api.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: unknown})
	if err != nil {
		return fmt.Errorf("describe node security groups %v: %w", unknown, err)
	}
	for i := range out.SecurityGroups {
		known[aws.ToString(out.SecurityGroups[i].GroupId)] = &out.SecurityGroups[i]
	}
	return nil
}

// nodeSecurityGroups picks each backend's cluster security group: the one
// tagged with the cluster tag, else its first, as the upstream CCM does.
func (l *loadBalancers) nodeSecurityGroups(be *backendSet, known map[string]*ec2types.SecurityGroup) map[string]bool {
	out := map[string]bool{}
	for _, groups := range be.groups {
		if len(groups) == 0 {
			continue
		}
		pick := groups[0]
		for _, g := range groups {
			if sg := known[g]; sg != nil {
				if _, ok := sgTags(sg)[clusterTagKey(l.clusterID)]; ok {
					pick = g
					break
				}
			}
		}
		out[pick] = true
	}
	return out
}

// groupsReferencing lists the security groups with an ingress rule whose
// source is sg: every node group holding one of our rules.
func (l *loadBalancers) groupsReferencing(ctx context.Context, sg string) ([]ec2types.SecurityGroup, error) {
	var out []ec2types.SecurityGroup
	p := ec2.NewDescribeSecurityGroupsPaginator(l.api.ec2.DescribeSecurityGroups, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{
		{Name: aws.String("ip-permission.group-id"), Values: []string{sg}},
	}})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describe security groups referencing %s: %w", sg, err)
		}
		out = append(out, page.SecurityGroups...)
	}
	return out, nil
}

func (l *loadBalancers) changeNodeRules(ctx context.Context, group string, add, remove []sgRule, desc string) error {
	if len(add) > 0 {
		_, err := l.api.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(group), IpPermissions: permissions(add, desc)})
		if err != nil && !isAPIError(err, "InvalidPermission.Duplicate") {
			return fmt.Errorf("allow load balancer traffic in node security group %s: %w", group, err)
		}
	}
	if len(remove) > 0 {
		_, err := l.api.ec2.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: aws.String(group), IpPermissions: permissions(remove, desc)})
		if err != nil && !isAPIError(err, "InvalidPermission.NotFound") {
			return fmt.Errorf("revoke stale load balancer rules in node security group %s: %w", group, err)
		}
	}
	if len(add)+len(remove) > 0 {
		klog.FromContext(ctx).Info("Updated node security group rules", "securityGroup", group, "added", len(add), "revoked", len(remove))
	}
	return nil
}

func nodeRuleSignature(lbSG string, want map[sgRule]bool, be *backendSet) string {
	rules := make([]string, 0, len(want))
	for r := range want {
		rules = append(rules, fmt.Sprintf("%s/%d-%d", r.proto, r.from, r.to))
	}
	sort.Strings(rules)
	return fmt.Sprint(lbSG, rules, be.distinctGroupSets())
}

// distinctGroupSets are the backends' distinct security group lists, each
// as one string, sorted: a few strings for thousands of instances.
func (be *backendSet) distinctGroupSets() []string {
	be.mu.Lock()
	defer be.mu.Unlock()
	if be.groupSets != nil {
		return be.groupSets
	}
	distinct := map[string]bool{}
	var key []byte
	for _, groups := range be.groups {
		key = key[:0]
		for _, g := range groups {
			key = append(append(key, g...), ' ')
		}
		// The lookup with string(key) does not allocate; only new sets do.
		if !distinct[string(key)] {
			distinct[string(key)] = true
		}
	}
	sets := make([]string, 0, len(distinct))
	for g := range distinct {
		sets = append(sets, g)
	}
	sort.Strings(sets)
	be.groupSets = sets
	return sets
}

// deleteLBSecurityGroup revokes our rules that reference the load balancer
// security group, then deletes it. AWS refuses with DependencyViolation
// until it has released the deleted NLB's network interfaces, which takes
// seconds to minutes; rather than sleep in the service controller's worker
// (holding up every other Service), that becomes an api.RetryError, and
// the controller calls again after sgReleaseRetry without an error Event.
func (l *loadBalancers) deleteLBSecurityGroup(ctx context.Context, svc *v1.Service, sg *ec2types.SecurityGroup) error {
	return l.deleteSecurityGroupWithRules(ctx, svc, sg, false)
}

// deleteSecurityGroupWithRules is deleteLBSecurityGroup; anyRule also
// revokes rules sourced from sg that someone else described, for a group
// whose name alone ties it to one load balancer (a Classic ELB's, which
// the upstream CCM may have made with rules of its own).
func (l *loadBalancers) deleteSecurityGroupWithRules(ctx context.Context, svc *v1.Service, sg *ec2types.SecurityGroup, anyRule bool) error {
	id := aws.ToString(sg.GroupId)
	if err := l.revokeNodeRulesFrom(ctx, svc, id, anyRule); err != nil {
		return err
	}
	_, err := l.api.ec2.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: aws.String(id)})
	switch {
	case err == nil || isAPIError(err, "InvalidGroup.NotFound"):
		klog.FromContext(ctx).Info("Deleted load balancer security group", "securityGroup", id)
		return nil
	case isAPIError(err, "DependencyViolation"):
		return api.NewRetryError(fmt.Sprintf("security group %s is still in use by the deleted load balancer's network interfaces; AWS releases them within minutes", id), sgReleaseRetry)
	default:
		return fmt.Errorf("delete security group %s: %w", id, err)
	}
}

// admitsAll says perms hold a rule admitting all traffic from group src.
func admitsAll(perms []ec2types.IpPermission, src string) bool {
	for _, p := range perms {
		if aws.ToString(p.IpProtocol) != "-1" {
			continue
		}
		for _, pair := range p.UserIdGroupPairs {
			if aws.ToString(pair.GroupId) == src {
				return true
			}
		}
	}
	return false
}
