package aws

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
)

// classicLoadBalancers implements cloudprovider.LoadBalancer with one
// Classic ELB per Service, named and shaped as the upstream AWS CCM makes
// it (kubernetes/cloud-provider-aws pkg/providers/v1/aws.go:2359-2800 and
// aws_loadbalancer.go:1169-1680), so a cluster moving from upstream finds
// its load balancers again and keeps their DNS names.
//
// Like the NLB code it keeps nothing that a restart loses: the load
// balancer is found by name, its security group by name in the VPC, and
// both are changed or deleted only when tagged as this cluster's and this
// Service's. It shares the NLB code's clients, configuration, caches,
// backend sets, subnet discovery and node security group rules.
type classicLoadBalancers struct {
	nlb *loadBalancers
}

var _ cloudprovider.LoadBalancer = (*classicLoadBalancers)(nil)

func newClassicLoadBalancers(nlb *loadBalancers) *classicLoadBalancers {
	return &classicLoadBalancers{nlb: nlb}
}

// clbState is what one sync found of a Service's Classic ELB.
type clbState struct {
	name string
	// lb is the load balancer with the Service's name, nil if none.
	lb *elbtypes.LoadBalancerDescription
	// owned says lb carries our cluster and service tags.
	owned bool
	tags  map[string]string
}

// GetLoadBalancerName is upstream's name: "a" + the UID without dashes,
// cut to 32 characters (upstream: aws.go:2848 GetLoadBalancerName via
// cloudprovider.DefaultLoadBalancerName). MUST NOT change: it is how an
// existing Classic ELB is found.
func (c *classicLoadBalancers) GetLoadBalancerName(_ context.Context, _ string, svc *v1.Service) string {
	return classicName(svc)
}

func classicName(svc *v1.Service) string { return cloudprovider.DefaultLoadBalancerName(svc) }

// GetLoadBalancer reports whether anything of the Service's Classic ELB is
// left: the load balancer, or its security group waiting to be deleted.
func (c *classicLoadBalancers) GetLoadBalancer(ctx context.Context, _ string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	st, err := c.load(ctx, svc)
	if err != nil {
		return nil, false, err
	}
	if st.lb != nil && st.owned {
		return clbStatus(st.lb), true, nil
	}
	sg, err := c.findSecurityGroup(ctx, svc, st.lb)
	if err != nil {
		return nil, false, err
	}
	if sg != nil && c.ownedSG(sg, svc) {
		return &v1.LoadBalancerStatus{}, true, nil
	}
	return nil, false, nil
}

// EnsureLoadBalancer creates or updates the Service's Classic ELB.
func (c *classicLoadBalancers) EnsureLoadBalancer(ctx context.Context, _ string, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	opts, err := parseCLBOptions(svc)
	if err != nil {
		return nil, err
	}
	ctx = c.logContext(ctx, svc)
	lb, err := c.ensure(ctx, svc, opts, nodes)
	if err != nil {
		return nil, fmt.Errorf("ensure Classic ELB %s for service %s: %w", classicName(svc), serviceKey(svc), err)
	}
	return clbStatus(lb), nil
}

// UpdateLoadBalancer follows a node set change: registered instances and
// node security group rules. One read of the load balancer, then only
// the calls the change needs.
func (c *classicLoadBalancers) UpdateLoadBalancer(ctx context.Context, _ string, svc *v1.Service, nodes []*v1.Node) error {
	opts, err := parseCLBOptions(svc)
	if err != nil {
		return err
	}
	ctx = c.logContext(ctx, svc)
	if err := c.update(ctx, svc, opts, nodes); err != nil {
		return fmt.Errorf("update Classic ELB %s instances for service %s: %w", classicName(svc), serviceKey(svc), err)
	}
	return nil
}

// EnsureLoadBalancerDeleted removes the Service's Classic ELB, then its
// security group with the node rules that reference it.
func (c *classicLoadBalancers) EnsureLoadBalancerDeleted(ctx context.Context, _ string, svc *v1.Service) error {
	ctx = c.logContext(ctx, svc)
	if err := c.delete(ctx, svc); err != nil {
		return fmt.Errorf("delete Classic ELB %s of service %s: %w", classicName(svc), serviceKey(svc), err)
	}
	return nil
}

func (c *classicLoadBalancers) logContext(ctx context.Context, svc *v1.Service) context.Context {
	logger := klog.FromContext(ctx).WithValues("service", klog.KObj(svc), "classicLoadBalancer", classicName(svc))
	return klog.NewContext(ctx, logger)
}

func clbStatus(lb *elbtypes.LoadBalancerDescription) *v1.LoadBalancerStatus {
	if lb == nil || aws.ToString(lb.DNSName) == "" {
		return &v1.LoadBalancerStatus{}
	}
	return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{Hostname: aws.ToString(lb.DNSName)}}}
}

func clbScheme(internal bool) string {
	if internal {
		return "internal"
	}
	return "internet-facing"
}

// ensure converges the Service's Classic ELB in dependency order, each
// step reading what exists and changing only what differs:
//
//	security group -> load balancer (listeners, security groups, tags)
//	-> health check -> policies -> attributes -> node rules -> instances
//
// The security group is tagged when created, and the load balancer when
// created, so a crash at any point leaves only things found again by
// name and recognised as ours.
func (c *classicLoadBalancers) ensure(ctx context.Context, svc *v1.Service, opts *clbOptions, nodes []*v1.Node) (*elbtypes.LoadBalancerDescription, error) {
	l := c.nlb
	if l.in == nil {
		return nil, errors.New("no instance lookup configured")
	}
	logger := klog.FromContext(ctx)
	st, err := c.load(ctx, svc)
	if err != nil {
		return nil, err
	}
	if st.lb != nil && !st.owned {
		return nil, fmt.Errorf("a Classic ELB named %s exists but is not tagged as this cluster's for service %s; refusing to adopt it", st.name, serviceKey(svc))
	}
	if st.lb != nil && aws.ToString(st.lb.Scheme) != clbScheme(opts.internal) {
		// A Classic ELB's scheme is fixed at creation: re-create it,
		// keeping its security group.
		logger.Info("Load balancer scheme changed; re-creating it", "from", aws.ToString(st.lb.Scheme), "to", clbScheme(opts.internal))
		if err := c.deleteELB(ctx, st); err != nil {
			return nil, err
		}
		st.lb = nil
	}
	vpc, err := c.vpcFor(ctx, st.lb)
	if err != nil {
		return nil, err
	}
	be, err := l.backends(ctx, nodes, vpc)
	if err != nil {
		return nil, err
	}
	// Subnets are resolved before anything is created, so a bad subnet
	// annotation leaves nothing behind.
	// An existing load balancer follows them too (syncSubnets); discovery
	// is cached, so that costs no call unless they changed.
	subnets, err := l.lbSubnets(ctx, opts.lbOptions, vpc)
	if err != nil {
		return nil, err
	}
	if len(subnets) == 0 {
		return nil, fmt.Errorf("no subnets found in %s for a %s load balancer", vpc, clbScheme(opts.internal))
	}
	if err := l.checkUserGroups(ctx, opts.userSGs, vpc); err != nil {
		return nil, err
	}
	// Our own group (upstream's k8s-elb-<name>), unless the user's
	// replace it.
	var sgID string
	var sgNew bool
	if len(opts.userSGs.replace) == 0 {
		if sgID, sgNew, err = c.ensureSecurityGroup(ctx, svc, opts, vpc); err != nil {
			return nil, err
		}
	}
	groups := opts.userSGs.groups(sgID)
	fresh := st.lb == nil
	if fresh {
		if err := c.create(ctx, svc, opts, st, subnets, groups); err != nil {
			return nil, err
		}
	} else {
		if err := c.ensureListeners(ctx, st, opts); err != nil {
			return nil, err
		}
		if err := c.syncSubnets(ctx, st, subnets); err != nil {
			return nil, err
		}
		if err := c.ensureSecurityGroups(ctx, st, groups); err != nil {
			return nil, err
		}
		if err := c.ensureExtraTags(ctx, st, opts); err != nil {
			return nil, err
		}
	}
	if err := c.ensureHealthCheck(ctx, st, opts); err != nil {
		return nil, err
	}
	if err := c.ensurePolicies(ctx, st, opts); err != nil {
		return nil, err
	}
	if err := c.ensureAttributes(ctx, st, opts); err != nil {
		return nil, err
	}
	// The nodes must admit the load balancer before instances are
	// registered, or the first health checks fail.
	opts.allTrafficNodeRule = c.allTrafficNodeRule(opts)
	if err := l.ensureNodeRules(ctx, svc, opts.lbOptions, opts.userSGs.ruleSource(sgID), sgNew && fresh, be); err != nil {
		return nil, err
	}
	if len(opts.userSGs.replace) > 0 {
		// The user's groups replaced ours: it goes, if it is left.
		if sg, err := c.findSecurityGroup(ctx, svc, st.lb); err != nil {
			return nil, err
		} else if sg != nil && c.ownedSG(sg, svc) {
			if err := l.deleteSecurityGroupWithRules(ctx, svc, sg, true); err != nil {
				return nil, err
			}
		}
	}
	if err := c.ensureInstances(ctx, st, be); err != nil {
		return nil, err
	}
	// What Forget asked is done: a Classic ELB's instances are read
	// with it, on every ensure.
	l.forgotten.Delete(serviceKey(svc))
	return st.lb, nil
}

// create makes the load balancer with its listeners, security group,
// subnets and tags in one call; what the create call cannot set (health
// check, policies, attributes) follows, and is found missing again if a
// crash cuts it short.
func (c *classicLoadBalancers) create(ctx context.Context, svc *v1.Service, opts *clbOptions, st *clbState, subnets, groups []string) error {
	tags := c.tags(svc, opts)
	in := &elb.CreateLoadBalancerInput{
		LoadBalancerName: aws.String(st.name),
		Listeners:        opts.listeners,
		Subnets:          subnets,
		SecurityGroups:   groups,
		Tags:             tags,
	}
	if opts.internal {
		in.Scheme = aws.String("internal")
	}
	out, err := c.nlb.api.elb.CreateLoadBalancer(ctx, in)
	if err != nil {
		if isAPIError(err, "CertificateNotFound") {
			return fmt.Errorf("annotation %s: certificate %s is not known to AWS in this account and region: %w", annotationSSLCert, certOf(opts), err)
		}
		return fmt.Errorf("create load balancer %s: %w", st.name, err)
	}
	st.lb = &elbtypes.LoadBalancerDescription{
		LoadBalancerName: aws.String(st.name),
		DNSName:          out.DNSName,
		Scheme:           aws.String(clbScheme(opts.internal)),
		Subnets:          subnets,
		SecurityGroups:   groups,
		Policies:         &elbtypes.Policies{},
	}
	for _, li := range opts.listeners {
		st.lb.ListenerDescriptions = append(st.lb.ListenerDescriptions, elbtypes.ListenerDescription{Listener: &li})
	}
	st.owned = true
	st.tags = map[string]string{}
	for _, t := range tags {
		st.tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	// AWS sets its own health check and, for TLS listeners, its default
	// negotiation policy on a new load balancer: read them back rather than
	// guess, so the next steps change only what differs.
	lb, err := c.describe(ctx, st.name)
	if err != nil {
		return err
	}
	if lb != nil {
		st.lb = lb
	}
	klog.FromContext(ctx).Info("Created Classic ELB", "scheme", clbScheme(opts.internal), "subnets", subnets, "dnsName", aws.ToString(out.DNSName))
	return nil
}

func certOf(opts *clbOptions) string {
	for _, l := range opts.listeners {
		if l.SSLCertificateId != nil {
			return aws.ToString(l.SSLCertificateId)
		}
	}
	return ""
}

// update follows a node set change with one read of the load balancer:
// instances, and node rules when the nodes' security groups changed (the
// NLB code's signature cache makes that free otherwise). Listener and
// health check drift is EnsureLoadBalancer's.
func (c *classicLoadBalancers) update(ctx context.Context, svc *v1.Service, opts *clbOptions, nodes []*v1.Node) error {
	l := c.nlb
	if l.in == nil {
		return errors.New("no instance lookup configured")
	}
	st, err := c.load(ctx, svc)
	if err != nil {
		return err
	}
	if st.lb == nil {
		return fmt.Errorf("load balancer %s not found", st.name)
	}
	if !st.owned {
		return fmt.Errorf("load balancer %s is not tagged as this cluster's for service %s", st.name, serviceKey(svc))
	}
	be, err := l.backends(ctx, nodes, aws.ToString(st.lb.VPCId))
	if err != nil {
		return err
	}
	if sgID := c.ruleSource(st.lb, opts); sgID != "" {
		opts.allTrafficNodeRule = c.allTrafficNodeRule(opts)
		if err := l.ensureNodeRules(ctx, svc, opts.lbOptions, sgID, false, be); err != nil {
			return err
		}
	}
	return c.ensureInstances(ctx, st, be)
}

// allTrafficNodeRule says the nodes admit the load balancer's own group
// as upstream admits it, with one rule for all traffic: on a config asking
// for upstream's shape, so upstream started again finds the rule it looks
// for (and, deleting the load balancer, revokes every rule that holds its
// group), unless the user's group replaces ours: the rules admitting a
// user's group are ours, told by their description.
func (c *classicLoadBalancers) allTrafficNodeRule(opts *clbOptions) bool {
	return c.nlb.upstreamShape() && len(opts.userSGs.replace) == 0
}

// ruleSource is the security group node rules admit: the first of the
// user's, else the load balancer's one group that is not an extra one
// (ours, unless someone changed it by hand).
func (c *classicLoadBalancers) ruleSource(lb *elbtypes.LoadBalancerDescription, opts *clbOptions) string {
	if len(opts.userSGs.replace) > 0 {
		return opts.userSGs.replace[0]
	}
	var own []string
	for _, id := range lb.SecurityGroups {
		if !slices.Contains(opts.userSGs.extra, id) {
			own = append(own, id)
		}
	}
	if len(own) == 1 {
		return own[0]
	}
	return ""
}

// delete removes the load balancer, then its security group (whose
// deletion revokes the node rules that reference it and waits, through
// api.RetryError, for AWS to release the load balancer's interfaces).
func (c *classicLoadBalancers) delete(ctx context.Context, svc *v1.Service) error {
	logger := klog.FromContext(ctx)
	st, err := c.load(ctx, svc)
	if err != nil {
		return err
	}
	if st.lb != nil {
		if st.owned {
			if g, err := parseUserGroups(svc); err == nil && len(g.replace) > 0 {
				// The user's group stays; the node rules admitting it
				// are ours.
				if err := c.nlb.revokeNodeRulesFrom(ctx, svc, g.replace[0], false); err != nil {
					return err
				}
			}
			if err := c.deleteELB(ctx, st); err != nil {
				return err
			}
		} else {
			logger.Info("A Classic ELB with this Service's name is not ours; leaving it alone")
		}
	}
	sg, err := c.findSecurityGroup(ctx, svc, st.lb)
	if err != nil {
		return err
	}
	if sg != nil {
		if !c.ownedSG(sg, svc) {
			logger.Info("A security group with this Service's Classic ELB name is not ours; leaving it alone", "securityGroup", aws.ToString(sg.GroupId))
		} else if err := c.nlb.deleteSecurityGroupWithRules(ctx, svc, sg, true); err != nil {
			return err
		}
	}
	return nil
}

func (c *classicLoadBalancers) deleteELB(ctx context.Context, st *clbState) error {
	_, err := c.nlb.api.elb.DeleteLoadBalancer(ctx, &elb.DeleteLoadBalancerInput{LoadBalancerName: aws.String(st.name)})
	if err != nil && !isAPIError(err, "LoadBalancerNotFound") {
		return fmt.Errorf("delete load balancer %s: %w", st.name, err)
	}
	klog.FromContext(ctx).Info("Deleted Classic ELB")
	return nil
}

// vpcFor is the load balancer's VPC, else the cluster's.
func (c *classicLoadBalancers) vpcFor(ctx context.Context, lb *elbtypes.LoadBalancerDescription) (string, error) {
	if lb != nil && aws.ToString(lb.VPCId) != "" {
		return aws.ToString(lb.VPCId), nil
	}
	return c.nlb.vpcFor(ctx, nil)
}

// load reads the Service's Classic ELB and its tags: two reads.
func (c *classicLoadBalancers) load(ctx context.Context, svc *v1.Service) (*clbState, error) {
	st := &clbState{name: classicName(svc)}
	lb, err := c.describe(ctx, st.name)
	if err != nil || lb == nil {
		return st, err
	}
	st.lb = lb
	out, err := c.nlb.api.elb.DescribeTags(ctx, &elb.DescribeTagsInput{LoadBalancerNames: []string{st.name}})
	if isAPIError(err, "LoadBalancerNotFound") {
		st.lb = nil
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("describe tags of load balancer %s: %w", st.name, err)
	}
	st.tags = map[string]string{}
	for _, d := range out.TagDescriptions {
		if aws.ToString(d.LoadBalancerName) != st.name {
			continue
		}
		for _, t := range d.Tags {
			st.tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
		}
	}
	st.owned = c.nlb.ownedTags(st.tags, svc)
	return st, nil
}

// describe returns the Classic ELB named name, or nil.
func (c *classicLoadBalancers) describe(ctx context.Context, name string) (*elbtypes.LoadBalancerDescription, error) {
	out, err := c.nlb.api.elb.DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{LoadBalancerNames: []string{name}})
	if isAPIError(err, "LoadBalancerNotFound") {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("describe load balancer %s: %w", name, err)
	}
	for i := range out.LoadBalancerDescriptions {
		if aws.ToString(out.LoadBalancerDescriptions[i].LoadBalancerName) == name {
			return &out.LoadBalancerDescriptions[i], nil
		}
	}
	return nil, nil
}

// tags are the load balancer's tags: upstream's (aws_loadbalancer.go:1202-1213:
// the cluster tag owned and the service name), then the user's in key order.
func (c *classicLoadBalancers) tags(svc *v1.Service, opts *clbOptions) []elbtypes.Tag {
	var out []elbtypes.Tag
	for _, t := range c.nlb.elbTags(svc, opts.lbOptions) {
		out = append(out, elbtypes.Tag{Key: t.Key, Value: t.Value})
	}
	return out
}

// ensureExtraTags adds or corrects the user's tags; as on NLBs, tags
// dropped from the annotation stay.
func (c *classicLoadBalancers) ensureExtraTags(ctx context.Context, st *clbState, opts *clbOptions) error {
	var add []elbtypes.Tag
	for _, k := range changedTagKeys(opts.extraTags, st.tags) {
		add = append(add, elbtypes.Tag{Key: aws.String(k), Value: aws.String(opts.extraTags[k])})
	}
	if len(add) == 0 {
		return nil
	}
	if _, err := c.nlb.api.elb.AddTags(ctx, &elb.AddTagsInput{LoadBalancerNames: []string{st.name}, Tags: add}); err != nil {
		return fmt.Errorf("tag load balancer %s: %w", st.name, err)
	}
	return nil
}

// ensureSecurityGroups makes the load balancer's groups exactly groups,
// as upstream keeps them (aws_loadbalancer.go ensureLoadBalancer: "This
// call just replaces the security groups").
func (c *classicLoadBalancers) ensureSecurityGroups(ctx context.Context, st *clbState, groups []string) error {
	if sameGroups(st.lb.SecurityGroups, groups) {
		return nil
	}
	if _, err := c.nlb.api.elb.ApplySecurityGroupsToLoadBalancer(ctx, &elb.ApplySecurityGroupsToLoadBalancerInput{LoadBalancerName: aws.String(st.name), SecurityGroups: groups}); err != nil {
		return fmt.Errorf("set security groups %v on load balancer %s: %w", groups, st.name, err)
	}
	klog.FromContext(ctx).Info("Set load balancer security groups", "from", st.lb.SecurityGroups, "to", groups)
	st.lb.SecurityGroups = groups
	return nil
}
