package aws

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// ensure converges the Service's NLB, step by step in dependency order, each
// step reading what exists and changing only what differs:
//
//	security group -> load balancer -> record -> target groups -> listeners
//	-> stale target groups -> record -> node rules -> targets
//
// Every step can be interrupted and redone: resources are found by their
// deterministic names and ownership tags, never by what a previous run
// remembered.
func (l *loadBalancers) ensure(ctx context.Context, svc *v1.Service, opts *lbOptions, nodes []*v1.Node) (*elbv2types.LoadBalancer, error) {
	if l.in == nil {
		return nil, errors.New("no instance lookup configured")
	}
	// Ensure never trusts the record; it reads everything and, once it
	// has succeeded, leaves a record of what it established.
	op := l.records.Begin(l.recordKey(svc))
	lb, rec, err := l.ensureFull(ctx, svc, opts, nodes)
	op.End(rec, op.Start)
	return lb, err
}

// targetGroupsChange says an ensure will create or remove a target group
// of st's: one want names is not there, or one there (attached or
// recorded) is not wanted.
func targetGroupsChange(st *lbState, want map[string]bool, prefix string) bool {
	for suffix := range want {
		if _, ok := st.tgs[prefix+suffix]; !ok {
			return true
		}
	}
	for name := range st.tgs {
		if !want[strings.TrimPrefix(name, prefix)] {
			return true
		}
	}
	return false
}

// ensureFull is ensure's every step. It returns the record of what it
// established, or nil when it can't describe it exactly.
func (l *loadBalancers) ensureFull(ctx context.Context, svc *v1.Service, opts *lbOptions, nodes []*v1.Node) (*elbv2types.LoadBalancer, *lbRecord, error) {
	logger := klog.FromContext(ctx)
	pins, err := parseAddressPins(svc, opts.internal)
	if err != nil {
		return nil, nil, err
	}
	st, err := l.load(ctx, svc, true)
	if err != nil {
		return nil, nil, err
	}
	if st.lb != nil && !st.owned {
		return nil, nil, fmt.Errorf("a load balancer named %s exists but is not tagged as this cluster's for service %s; refusing to adopt it", st.name, serviceKey(svc))
	}
	if st.lb != nil && st.lb.Scheme != scheme(opts) {
		// An NLB's scheme is fixed at creation. Tear the NLB down (keeping
		// its security group) and build it again.
		logger.Info("Load balancer scheme changed; re-creating it", "from", st.lb.Scheme, "to", scheme(opts))
		if err := l.deleteELB(ctx, svc, st); err != nil {
			return nil, nil, err
		}
		// The new one is named and shaped as every new one, whoever
		// made the old one.
		st = l.newState(svc)
	}
	if st.lb != nil && !pins.matches(st.lb) {
		return nil, nil, fmt.Errorf("the addresses in annotations %s / %s differ from those of load balancer %s, and an NLB's addresses are fixed when it is created; restore them, or delete and re-create the Service to move to the new ones",
			annotationEIPAllocations, annotationPrivateIPv4, st.name)
	}
	if st.lb != nil {
		// Before the security group: an NLB kept ipv4 admits IPv4
		// clients only.
		if err := l.ensureIPAddressType(ctx, st, opts); err != nil {
			return nil, nil, err
		}
	}
	vpc, err := l.vpcFor(ctx, st.lb)
	if err != nil {
		return nil, nil, err
	}
	be, err := l.backends(ctx, nodes, vpc)
	if err != nil {
		return nil, nil, err
	}
	// Subnets are resolved before anything is created, so a bad subnet
	// annotation leaves nothing behind.
	var mappings []elbv2types.SubnetMapping
	if st.lb == nil {
		subnets, err := l.lbSubnets(ctx, opts, vpc)
		if err != nil {
			return nil, nil, err
		}
		if mappings, err = pins.subnetMappings(subnets); err != nil {
			return nil, nil, err
		}
	}
	// An NLB upstream made without a security group can never get one;
	// its node rules admit clients by CIDR (loadbalancer_upstream.go). A
	// new one made in upstream's shape has none either.
	sgless := st.sgless() || (st.lb == nil && st.upstreamTGs)
	if err := l.checkUserGroups(ctx, opts.userSGs, vpc); err != nil {
		return nil, nil, err
	}
	// Our own group, unless the user's replace it.
	var sgID string
	var sgNew bool
	if !sgless && len(opts.userSGs.replace) == 0 {
		if sgID, sgNew, err = l.ensureLBSecurityGroup(ctx, svc, opts, vpc); err != nil {
			return nil, nil, err
		}
	}
	groups := opts.userSGs.groups(sgID)
	ruleSrc := opts.userSGs.ruleSource(sgID)
	if sgless {
		// Upstream's default NLB security group mode makes none and
		// takes none from annotations (aws.go:2284-2294).
		groups = nil
	}

	fresh := st.lb == nil
	naming := l.tgNaming(svc, opts, st)
	want := desiredRecord(naming, opts)
	recordTouched := false
	if fresh {
		if sgless && opts.userSGs.any() {
			logger.Info("Load balancer is made as upstream makes it, without security groups, so it can never have any; the security group annotations do not apply to it", "annotations", []string{string(annotationSecurityGroups), string(annotationExtraSecurityGroups)})
		}
		if err := l.createLoadBalancer(ctx, svc, opts, st, mappings, groups, want); err != nil {
			return nil, nil, err
		}
	} else {
		if sgless && opts.userSGs.any() {
			logger.Info("Load balancer was made without security groups, so it can never have any; the security group annotations do not apply to it", "annotations", []string{string(annotationSecurityGroups), string(annotationExtraSecurityGroups)})
		}
		if !sgless && !sameGroups(st.lb.SecurityGroups, groups) {
			if _, err := l.api.elbv2.SetSecurityGroups(ctx, &elbv2.SetSecurityGroupsInput{LoadBalancerArn: st.lb.LoadBalancerArn, SecurityGroups: groups}); err != nil {
				return nil, nil, fmt.Errorf("set security groups %v on load balancer %s: %w", groups, st.name, err)
			}
			logger.Info("Set load balancer security groups", "from", st.lb.SecurityGroups, "to", groups)
			st.lb.SecurityGroups = groups
		}
		if err := l.resolveRecorded(ctx, svc, st); err != nil {
			return nil, nil, err
		}
		// After the recorded ones are found: one created under the
		// wanted name just before a crash is used, not taken over for.
		takeOverByNodePort(st, naming, opts)
		// Record what we are about to create before creating it. With no
		// target group to create or remove, the record is not written: an
		// adopted NLB (upstream's, which has none) keeps its tags as
		// upstream made them, its target groups found by its listeners.
		if recordTouched = targetGroupsChange(st, want, st.tgPrefix); recordTouched {
			if err := l.writeRecord(ctx, st, union(union(st.record, want), upstreamAttached(st))); err != nil {
				return nil, nil, err
			}
		}
		if err := l.ensureExtraTags(ctx, st, opts); err != nil {
			return nil, nil, err
		}
	}

	if err := l.ensureNLBAttributes(ctx, st, opts.lbAttributes, fresh); err != nil {
		return nil, nil, err
	}
	tgs, created, err := l.ensureTargetGroups(ctx, svc, opts, st, naming, vpc)
	if err != nil {
		return nil, nil, err
	}
	if err := l.ensureListeners(ctx, svc, opts, st, tgs, fresh); err != nil {
		return nil, nil, err
	}
	var stale []string
	prefix := st.tgPrefix
	for name := range st.tgs {
		if !want[strings.TrimPrefix(name, prefix)] {
			stale = append(stale, name)
		}
	}
	sort.Strings(stale)
	if err := l.deleteTargetGroups(ctx, st, stale); err != nil {
		return nil, nil, err
	}
	switch {
	case st.upstreamTGs:
		// Every target group is attached or deleted now, so the record
		// has nothing left to find: it goes, and the load balancer keeps
		// exactly upstream's tags.
		if err := l.clearRecord(ctx, st); err != nil {
			return nil, nil, err
		}
	case fresh || recordTouched || len(created) > 0:
		if err := l.writeRecord(ctx, st, want); err != nil {
			return nil, nil, err
		}
	}

	// The nodes must accept the load balancer's traffic before targets
	// are registered, or the first health checks fail.
	rec := &lbRecord{lbARN: st.lbARN(), vpc: aws.ToString(st.lb.VpcId), tgs: make(map[portKey]*tgRecord, len(opts.ports))}
	if sgless {
		if err := l.syncUpstreamRules(ctx, svc, opts, st, be, rec); err != nil {
			return nil, nil, err
		}
	} else {
		// Only a group made for a new load balancer can have no rules yet.
		if err := l.ensureNodeRules(ctx, svc, opts, ruleSrc, sgNew && fresh, be); err != nil {
			return nil, nil, err
		}
		if len(opts.userSGs.replace) > 0 {
			// The user's groups replaced ours: it goes, if it is left.
			if err := l.deleteUnusedLBSecurityGroup(ctx, svc, vpc); err != nil {
				return nil, nil, err
			}
		}
	}
	if _, ok := l.forgotten.LoadAndDelete(serviceKey(svc)); ok {
		// Drift repair forgot the Service: targets deregistered behind
		// our back must be read, not taken from the confirmed sets.
		for _, tg := range tgs {
			l.targets.Delete(aws.ToString(tg.TargetGroupArn))
		}
	}
	for _, p := range opts.ports {
		tg := tgs[p.key()]
		registered, err := l.ensureTargets(ctx, tg, p.nodePort, be, created[p.key()])
		if err != nil {
			return nil, nil, err
		}
		rec.tgs[p.key()] = &tgRecord{arn: aws.ToString(tg.TargetGroupArn), name: aws.ToString(tg.TargetGroupName), nodePort: p.nodePort, registered: registered}
	}
	if sgless {
		return st.lb, rec, nil
	}
	rec.lbSG = ruleSrc
	rec.nodeRuleSig = nodeRuleSignature(ruleSrc, nodePortRules(opts, ruleSrc), be)
	return st.lb, rec, nil
}

// upstreamAttached are the record suffixes of the target groups attached
// to a load balancer whose target groups get upstream's names, by their
// own names. Its record is gone while nothing changes (ensureFull), so
// before a change it must name the attached ones too: one detached by a
// listener change is then still found if a crash comes before its
// deletion. Empty for other load balancers, whose record at rest already
// names every attached one.
func upstreamAttached(st *lbState) map[string]bool {
	out := map[string]bool{}
	if !st.upstreamTGs {
		return out
	}
	for _, tg := range st.tgs {
		if name := aws.ToString(tg.TargetGroupName); strings.HasPrefix(name, st.tgPrefix) {
			out[strings.TrimPrefix(name, st.tgPrefix)] = true
		}
	}
	return out
}

func scheme(opts *lbOptions) elbv2types.LoadBalancerSchemeEnum {
	if opts.internal {
		return elbv2types.LoadBalancerSchemeEnumInternal
	}
	return elbv2types.LoadBalancerSchemeEnumInternetFacing
}

func union(a, b map[string]bool) map[string]bool {
	out := make(map[string]bool, len(a)+len(b))
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// createLoadBalancer creates the NLB with its security group attached (an
// NLB created without one can never get one) and the target group record
// already in its tags.
func (l *loadBalancers) createLoadBalancer(ctx context.Context, svc *v1.Service, opts *lbOptions, st *lbState, mappings []elbv2types.SubnetMapping, groups []string, rec map[string]bool) error {
	recTags, _ := recordTags(rec, nil)
	tags := append(l.elbTags(svc, opts), recTags...)
	out, err := l.api.elbv2.CreateLoadBalancer(ctx, &elbv2.CreateLoadBalancerInput{
		Name:           aws.String(st.name),
		Type:           elbv2types.LoadBalancerTypeEnumNetwork,
		Scheme:         scheme(opts),
		IpAddressType:  opts.addressType(),
		SubnetMappings: mappings,
		SecurityGroups: groups,
		Tags:           tags,
	})
	if err != nil {
		return fmt.Errorf("create load balancer %s: %w", st.name, err)
	}
	if len(out.LoadBalancers) == 0 {
		return fmt.Errorf("create load balancer %s: empty response", st.name)
	}
	st.lb = &out.LoadBalancers[0]
	st.owned = true
	st.record = rec
	st.lbTags = map[string]string{}
	for _, t := range tags {
		st.lbTags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	klog.FromContext(ctx).Info("Created load balancer", "scheme", scheme(opts), "ipAddressType", opts.addressType(), "subnets", len(mappings), "dnsName", aws.ToString(st.lb.DNSName))
	return nil
}

// update follows a node set change. With a fresh record of what the last
// full sync established it makes only the target (and, if the nodes'
// security groups changed, node rule) calls the change needs. Without one,
// or when the record turns out stale, it reads the load balancer and its
// target groups and changes only targets and node rules. Listener and
// target group drift is left to EnsureLoadBalancer, which the service
// controller runs on Service changes.
func (l *loadBalancers) update(ctx context.Context, svc *v1.Service, opts *lbOptions, nodes []*v1.Node) error {
	if l.in == nil {
		return errors.New("no instance lookup configured")
	}
	logger := klog.FromContext(ctx)
	op := l.records.Begin(l.recordKey(svc))
	if rec := op.Rec; rec != nil && rec.matches(opts) {
		err := l.updateFromRecord(ctx, svc, opts, nodes, rec)
		if err == nil {
			klog.FromContext(ctx).V(4).Info("Updated load balancer from its record", "age", l.clock.Since(op.RecAt))
			op.End(rec, op.RecAt)
			return nil
		}
		if !staleRecord(err) {
			op.End(nil, op.Start)
			return err
		}
		logger.Info("Load balancer changed behind our back; reading it again", "err", err)
	}
	rec, err := l.updateFull(ctx, svc, opts, nodes)
	op.End(rec, op.Start)
	return err
}

// updateFromRecord changes targets by the difference between the backends
// and what rec says is registered, and updates rec to match. On error rec
// is left half-updated; the caller drops it.
func (l *loadBalancers) updateFromRecord(ctx context.Context, svc *v1.Service, opts *lbOptions, nodes []*v1.Node, rec *lbRecord) error {
	be, err := l.backends(ctx, nodes, rec.vpc)
	if err != nil {
		return err
	}
	if rec.upstream != "" {
		u := newUpstreamRules(rec.upstream, opts, rec.subnetCIDRs)
		if sig := u.signature(be); sig != rec.nodeRuleSig {
			if err := l.ensureUpstreamNodeRules(ctx, svc, u, rec.vpc, be); err != nil {
				return err
			}
			rec.nodeRuleSig = sig
		}
	}
	if rec.lbSG != "" {
		if sig := nodeRuleSignature(rec.lbSG, nodePortRules(opts, rec.lbSG), be); sig != rec.nodeRuleSig {
			if err := l.ensureNodeRules(ctx, svc, opts, rec.lbSG, false, be); err != nil {
				return err
			}
			rec.nodeRuleSig = sig
		}
	}
	for _, p := range opts.ports {
		tg := rec.tgs[p.key()]
		want := be.wanted(p.nodePort)
		// Registered as wanted already: the record's interned IDs are
		// the backend set's, compared without expanding either.
		if r := tg.registered; r.port == want.port && r.ids == want.joined && len(r.other) == 0 {
			continue
		}
		registered, err := l.changeTargets(ctx, aws.String(tg.arn), tg.name, want, tg.registered.targets(), be, true)
		if err != nil {
			return err
		}
		tg.registered = registered
	}
	return nil
}

// updateFull is the update that trusts nothing but the caches: it reads
// the load balancer and its target groups. It returns the record of what
// it established, or nil when that is incomplete (a target group missing).
func (l *loadBalancers) updateFull(ctx context.Context, svc *v1.Service, opts *lbOptions, nodes []*v1.Node) (*lbRecord, error) {
	st, err := l.load(ctx, svc, true)
	if err != nil {
		return nil, err
	}
	if st.lb == nil {
		return nil, fmt.Errorf("load balancer %s not found", st.name)
	}
	if !st.owned {
		return nil, fmt.Errorf("load balancer %s is not tagged as this cluster's for service %s", st.name, serviceKey(svc))
	}
	be, err := l.backends(ctx, nodes, aws.ToString(st.lb.VpcId))
	if err != nil {
		return nil, err
	}
	rec := &lbRecord{lbARN: st.lbARN(), vpc: aws.ToString(st.lb.VpcId), tgs: make(map[portKey]*tgRecord, len(opts.ports))}
	var lbSG string
	if st.sgless() {
		if err := l.syncUpstreamRules(ctx, svc, opts, st, be, rec); err != nil {
			return nil, err
		}
	} else if len(opts.userSGs.replace) > 0 {
		lbSG = opts.userSGs.replace[0]
	} else if len(st.lb.SecurityGroups) == 1 {
		lbSG = st.lb.SecurityGroups[0]
	} else {
		vpc, err := l.vpcFor(ctx, st.lb)
		if err != nil {
			return nil, err
		}
		sg, err := l.findLBSecurityGroup(ctx, svc, vpc)
		if err != nil {
			return nil, err
		}
		if sg != nil && l.ownedSG(sg, svc) {
			lbSG = aws.ToString(sg.GroupId)
		}
	}
	if lbSG != "" {
		if err := l.ensureNodeRules(ctx, svc, opts, lbSG, false, be); err != nil {
			return nil, err
		}
		rec.lbSG = lbSG
		rec.nodeRuleSig = nodeRuleSignature(lbSG, nodePortRules(opts, lbSG), be)
	}
	complete := true
	naming := l.tgNaming(svc, opts, st)
	takeOverByNodePort(st, naming, opts)
	for _, p := range opts.ports {
		name := naming.name(p)
		tg, ok := st.tgs[name]
		if !ok {
			klog.FromContext(ctx).Info("Target group missing; EnsureLoadBalancer will create it", "targetGroup", name)
			complete = false
			continue
		}
		registered, err := l.ensureTargets(ctx, tg, p.nodePort, be, false)
		if err != nil {
			return nil, err
		}
		rec.tgs[p.key()] = &tgRecord{arn: aws.ToString(tg.TargetGroupArn), name: name, nodePort: p.nodePort, registered: registered}
	}
	if !complete {
		return nil, nil
	}
	return rec, nil
}
