package aws

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
)

// NLBs the upstream AWS CCM made are adopted in place, so a switched
// cluster keeps their DNS names:
//   - the load balancer is upstream's name, cloudprovider.DefaultLoadBalancerName
//     (aws.go EnsureLoadBalancer), tagged like ours with the cluster and
//     kubernetes.io/service-name (aws_loadbalancer.go:152-156), so our
//     ownership check holds for it;
//   - its target groups, named k8s-<ns8>-<name8>-<10hex> by upstream
//     (aws_loadbalancer.go:686-706) and tagged like ours, are taken over
//     under our names for their ports (takeOverTargetGroups), so they keep
//     serving: none is replaced unless the Service asks for a change that
//     would replace one of ours too;
//   - upstream's default NLB has no security group, and AWS never lets
//     one be added to such an NLB, so the nodes' security groups admit its
//     clients and health checks by CIDR, as upstream does it
//     (updateInstanceSecurityGroupsForNLB, aws_loadbalancer.go:977-1100):
//     ensureUpstreamNodeRules keeps those rules with upstream's
//     descriptions, and they go with the load balancer.
//
// NLBs this backend creates are named and secured its own way
// (naming.go, loadbalancer_securitygroups.go); only adopted ones, without
// a security group, take this path.

// The descriptions upstream gives its NLB node rules, "<prefix>=<lb name>"
// (aws.go:70-80). MUST NOT change: they are how an adopted NLB's rules are
// told from every other rule in a node security group.
const (
	upstreamNLBHealthRule = "kubernetes.io/rule/nlb/health"
	upstreamNLBClientRule = "kubernetes.io/rule/nlb/client"
	// upstreamNLBMTURule admits ICMP "fragmentation needed" from the
	// clients of every such NLB; one description for all of them.
	upstreamNLBMTURule = "kubernetes.io/rule/nlb/mtu"
)

// upstreamNLBName is the name upstream gives a Service's NLB.
func upstreamNLBName(svc *v1.Service) string { return cloudprovider.DefaultLoadBalancerName(svc) }

// mayHaveUpstreamNLB says the Service may be served by an NLB upstream
// made: it has an address. A Service that never had one (every new
// Service) costs no extra read.
func mayHaveUpstreamNLB(svc *v1.Service) bool {
	return len(svc.Status.LoadBalancer.Ingress) > 0
}

// takeOverTargetGroups renames, in st.tgs, the attached target groups
// upstream named to the names ours would have for the same Service port
// and protocol, so every later step (listeners, stale removal, targets,
// deletion) treats them as ours. A target group whose node port matches
// no Service port keeps its name: it is stale and goes once the listeners
// no longer use it.
func takeOverTargetGroups(clusterID string, svc *v1.Service, st *lbState) {
	prefix := targetGroupPrefix(clusterID, svc)
	var foreign []string
	for name := range st.tgs {
		if !strings.HasPrefix(name, prefix) {
			foreign = append(foreign, name)
		}
	}
	sort.Strings(foreign)
	for _, name := range foreign {
		tg := st.tgs[name]
		for _, p := range svc.Spec.Ports {
			if p.NodePort != aws.ToInt32(tg.Port) {
				continue
			}
			ours := prefix + portKey{port: p.Port, proto: tg.Protocol}.suffix()
			if _, taken := st.tgs[ours]; !taken {
				delete(st.tgs, name)
				st.tgs[ours] = tg
			}
			break
		}
	}
}

// upstreamRules are the node rules an NLB without a security group needs,
// as upstream computes them: its clients on every traffic port, and its
// subnets on the health check ports unless the client rule already covers
// them (aws_loadbalancer.go:1036-1041).
type upstreamRules struct {
	lbName         string
	client, health map[sgRule]bool
}

func (u upstreamRules) clientDesc() string { return upstreamNLBClientRule + "=" + u.lbName }
func (u upstreamRules) healthDesc() string { return upstreamNLBHealthRule + "=" + u.lbName }

func newUpstreamRules(lbName string, opts *lbOptions, subnetCIDRs []string) upstreamRules {
	u := upstreamRules{lbName: lbName, client: map[sgRule]bool{}, health: map[sgRule]bool{}}
	clientPorts, healthPorts := map[int32]bool{}, map[int32]bool{}
	allTCP := true
	// Only IPv4 clients reach the nodes: target groups here are IPv4, and
	// a dualstack NLB passes an IPv6 client's traffic on from its own
	// IPv4 address (loadbalancer_families.go). Upstream would put an IPv6
	// range in IpRanges, which EC2 refuses ("CIDR block ::/0 is
	// malformed", aws_loadbalancer.go:1069-1085).
	var clients []netip.Prefix
	for _, c := range opts.sourceRanges {
		if c.Addr().Is4() {
			clients = append(clients, c)
		}
	}
	for _, p := range opts.ports {
		for _, proto := range protocols(p) {
			allTCP = allTCP && proto == "tcp"
			for _, c := range clients {
				u.client[sgRule{proto: proto, from: p.nodePort, to: p.nodePort, cidr: c.String()}] = true
			}
		}
		clientPorts[p.nodePort] = true
		if n := opts.healthCheck.nodePort; n != 0 {
			healthPorts[n] = true
		} else {
			healthPorts[p.nodePort] = true
		}
	}
	open := len(clients) == 1 && clients[0].String() == "0.0.0.0/0"
	if open && allTCP && maps.Equal(clientPorts, healthPorts) {
		return u
	}
	for port := range healthPorts {
		for _, c := range subnetCIDRs {
			u.health[sgRule{proto: "tcp", from: port, to: port, cidr: normalizeCIDR(c)}] = true
		}
	}
	return u
}

// signature identifies the rules and the backends' groups they were
// confirmed for, like nodeRuleSignature does for ours.
func (u upstreamRules) signature(be *backendSet) string {
	var rules []string
	for r := range u.client {
		rules = append(rules, "c "+r.proto+fmt.Sprint(r.from)+r.cidr)
	}
	for r := range u.health {
		rules = append(rules, "h "+r.proto+fmt.Sprint(r.from)+r.cidr)
	}
	sort.Strings(rules)
	var groups []string
	if be != nil {
		groups = be.distinctGroupSets()
	}
	return fmt.Sprint("upstream ", u.lbName, rules, groups)
}

// describedCIDRRules flattens a group's CIDR-sourced ingress whose
// description is desc, or starts with desc when prefix is set.
func describedCIDRRules(perms []ec2types.IpPermission, desc string, prefix bool) map[sgRule]bool {
	out := map[sgRule]bool{}
	match := func(d *string) bool {
		if prefix {
			return strings.HasPrefix(aws.ToString(d), desc)
		}
		return aws.ToString(d) == desc
	}
	for _, p := range perms {
		base := sgRule{proto: aws.ToString(p.IpProtocol), from: aws.ToInt32(p.FromPort), to: aws.ToInt32(p.ToPort)}
		for _, r := range p.IpRanges {
			if match(r.Description) {
				rr := base
				rr.cidr = normalizeCIDR(aws.ToString(r.CidrIp))
				out[rr] = true
			}
		}
		for _, r := range p.Ipv6Ranges {
			if match(r.Description) {
				rr := base
				rr.cidr = normalizeCIDR(aws.ToString(r.CidrIpv6))
				out[rr] = true
			}
		}
	}
	return out
}

// lbSubnetCIDRs are the CIDRs of the subnets an NLB is in: the sources of
// its health checks.
func (l *loadBalancers) lbSubnetCIDRs(ctx context.Context, lb *elbv2types.LoadBalancer) ([]string, error) {
	var ids []string
	for _, az := range lb.AvailabilityZones {
		if id := aws.ToString(az.SubnetId); id != "" {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("load balancer %s reports no subnets", aws.ToString(lb.LoadBalancerName))
	}
	// NLBs mostly share their subnets: one read serves them all, and a
	// subnet's CIDR never changes.
	sort.Strings(ids)
	key := "cidrs/" + strings.Join(ids, ",")
	if cidrs, ok := l.subnets.Get(key); ok {
		return cidrs, nil
	}
	out, err := l.api.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: ids})
	if err != nil {
		return nil, fmt.Errorf("describe subnets of load balancer %s: %w", aws.ToString(lb.LoadBalancerName), err)
	}
	var cidrs []string
	for _, s := range out.Subnets {
		cidrs = append(cidrs, aws.ToString(s.CidrBlock))
	}
	sort.Strings(cidrs)
	l.subnets.Set(key, cidrs)
	return cidrs, nil
}

// clusterTaggedGroups are the VPC's security groups carrying the cluster
// tag: where upstream keeps NLB node rules (getTaggedSecurityGroups), so
// where they are looked for when the backends are not known.
func (l *loadBalancers) clusterTaggedGroups(ctx context.Context, vpc string) ([]ec2types.SecurityGroup, error) {
	var out []ec2types.SecurityGroup
	p := ec2.NewDescribeSecurityGroupsPaginator(l.api.ec2.DescribeSecurityGroups, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag-key"), Values: []string{clusterTagKey(l.clusterID)}},
		{Name: aws.String("vpc-id"), Values: []string{vpc}},
	}})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describe the cluster's security groups: %w", err)
		}
		out = append(out, page.SecurityGroups...)
	}
	return out, nil
}

// ensureUpstreamNodeRules makes each backend's cluster security group hold
// exactly u's rules, and every other cluster group none of them, then
// keeps the shared MTU rule in step with the client rules left. With be
// nil (deletion) every group loses them. It reads groups only when its
// inputs changed since it last succeeded.
//
// The MTU rule is shared by every upstream-shaped NLB whose clients the
// group admits, so it is decided under the group's lock from a read made
// after the other workers' writes (syncGroupUpstreamRules): decided from
// the first read, two NLBs deleted at once each saw the other's client
// rule and kept the MTU rule, which was then left behind.
func (l *loadBalancers) ensureUpstreamNodeRules(ctx context.Context, svc *v1.Service, u upstreamRules, vpc string, be *backendSet) error {
	key := serviceKey(svc)
	sig := u.signature(be)
	if be != nil {
		if cached, ok := l.nodeRules.Get(key); ok && cached == sig {
			return nil
		}
	}
	l.nodeRules.Delete(key)
	tagged, err := l.clusterTaggedGroups(ctx, vpc)
	if err != nil {
		return err
	}
	known := map[string]*ec2types.SecurityGroup{}
	for i := range tagged {
		known[aws.ToString(tagged[i].GroupId)] = &tagged[i]
	}
	targets := map[string]bool{}
	if be != nil {
		if err := l.readBackendGroups(ctx, be, known); err != nil {
			return err
		}
		targets = l.nodeSecurityGroups(be, known)
	}
	ids := make([]string, 0, len(known))
	for id := range known {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		sg := known[id]
		if sg == nil {
			continue
		}
		// A crash between a client rule's change and the MTU rule's left
		// the MTU rule out of step (missing, or needed by nothing): it is
		// decided again too.
		if len(upstreamRuleChanges(sg, u, targets[id]).all()) == 0 && !mtuOutOfStep(sg) {
			continue
		}
		if err := l.syncGroupUpstreamRules(ctx, id, u, targets[id]); err != nil {
			return err
		}
	}
	if be != nil {
		l.nodeRules.Set(key, sig)
	}
	return nil
}

// upstreamChanges are the rule changes that make one group hold an NLB's
// upstream-shaped rules (or none of them).
type upstreamChanges struct {
	addClient, remClient, addHealth, remHealth []sgRule
}

func (c upstreamChanges) all() []sgRule {
	return slices.Concat(c.addClient, c.remClient, c.addHealth, c.remHealth)
}

// upstreamRuleChanges compares sg with u's rules, wanted there or not.
func upstreamRuleChanges(sg *ec2types.SecurityGroup, u upstreamRules, target bool) upstreamChanges {
	var wantClient, wantHealth map[sgRule]bool
	if target {
		wantClient, wantHealth = u.client, u.health
	}
	var c upstreamChanges
	c.addClient, c.remClient = diffRules(wantClient, describedCIDRRules(sg.IpPermissions, u.clientDesc(), false))
	c.addHealth, c.remHealth = diffRules(wantHealth, describedCIDRRules(sg.IpPermissions, u.healthDesc(), false))
	return c
}

// mtuRules are the MTU rules a group needs for the client rules of every
// upstream-shaped NLB in it: ICMP "fragmentation needed" from each IPv4
// client range (aws_loadbalancer.go updateInstanceSecurityGroupForNLBMTU;
// upstream's MTU rule is IPv4 ICMP only).
func mtuRules(clients map[sgRule]bool) map[sgRule]bool {
	want := map[sgRule]bool{}
	for r := range clients {
		if !strings.Contains(r.cidr, ":") {
			want[sgRule{proto: "icmp", from: 3, to: 4, cidr: r.cidr}] = true
		}
	}
	return want
}

// mtuOutOfStep says sg's MTU rules are not those its client rules need.
func mtuOutOfStep(sg *ec2types.SecurityGroup) bool {
	add, rem := diffRules(mtuRules(describedCIDRRules(sg.IpPermissions, upstreamNLBClientRule+"=", true)),
		describedCIDRRules(sg.IpPermissions, upstreamNLBMTURule, false))
	return len(add)+len(rem) > 0
}

// isMTURule says r has the shape of upstream's MTU rule.
func isMTURule(r sgRule) bool { return r.proto == "icmp" && r.from == 3 && r.to == 4 && r.cidr != "" }

// unneededMTURules are the MTU rules in sg that no upstream-shaped NLB's
// client rule needs any more.
func unneededMTURules(sg *ec2types.SecurityGroup) []sgRule {
	_, rem := diffRules(mtuRules(describedCIDRRules(sg.IpPermissions, upstreamNLBClientRule+"=", true)),
		describedCIDRRules(sg.IpPermissions, upstreamNLBMTURule, false))
	return rem
}

// syncGroupUpstreamRules makes group hold u's rules (none unless target),
// and the MTU rule follow every client rule left, from a read of the group
// made under its lock: every other worker's change to it is seen.
func (l *loadBalancers) syncGroupUpstreamRules(ctx context.Context, group string, u upstreamRules, target bool) error {
	defer l.groupLocks.Lock(group)()
	sg, err := l.describeGroup(ctx, group)
	if err != nil || sg == nil {
		return err // gone: no rule left to change
	}
	c := upstreamRuleChanges(sg, u, target)
	if err := l.changeNodeRules(ctx, group, nil, c.remHealth, u.healthDesc()); err != nil {
		return err
	}
	if err := l.changeNodeRules(ctx, group, nil, c.remClient, u.clientDesc()); err != nil {
		return err
	}
	if err := l.changeNodeRules(ctx, group, c.addHealth, nil, u.healthDesc()); err != nil {
		return err
	}
	if err := l.changeNodeRules(ctx, group, c.addClient, nil, u.clientDesc()); err != nil {
		return err
	}
	clients := describedCIDRRules(sg.IpPermissions, upstreamNLBClientRule+"=", true)
	for _, r := range c.remClient {
		delete(clients, r)
	}
	for _, r := range c.addClient {
		clients[r] = true
	}
	addM, remM := diffRules(mtuRules(clients), describedCIDRRules(sg.IpPermissions, upstreamNLBMTURule, false))
	return l.changeNodeRules(ctx, group, addM, remM, upstreamNLBMTURule)
}

// describeGroup reads one security group; nil when it is gone.
func (l *loadBalancers) describeGroup(ctx context.Context, id string) (*ec2types.SecurityGroup, error) {
	out, err := l.api.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{id}})
	if isAPIError(err, "InvalidGroup.NotFound") {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("describe node security group %s: %w", id, err)
	}
	if len(out.SecurityGroups) == 0 {
		return nil, nil
	}
	return &out.SecurityGroups[0], nil
}

// syncUpstreamRules keeps the node rules of st's load balancer, which has
// no security group, and notes them in rec for later updates.
func (l *loadBalancers) syncUpstreamRules(ctx context.Context, svc *v1.Service, opts *lbOptions, st *lbState, be *backendSet, rec *lbRecord) error {
	cidrs, err := l.lbSubnetCIDRs(ctx, st.lb)
	if err != nil {
		return err
	}
	u := newUpstreamRules(st.name, opts, cidrs)
	if err := l.ensureUpstreamNodeRules(ctx, svc, u, aws.ToString(st.lb.VpcId), be); err != nil {
		return err
	}
	rec.upstream, rec.subnetCIDRs, rec.nodeRuleSig = st.name, cidrs, u.signature(be)
	return nil
}
