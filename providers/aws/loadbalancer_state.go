package aws

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
)

// describeTagsBatch is DescribeTags' limit of resources per call.
const describeTagsBatch = 20

// lbState is what one sync found in AWS for a Service, read with one
// DescribeLoadBalancers, one DescribeTargetGroups and batched DescribeTags.
type lbState struct {
	name string
	// lb is the load balancer with the Service's name, nil if none.
	lb *elbv2types.LoadBalancer
	// owned says lb carries our cluster and service tags. A load balancer
	// with our name that isn't ours is never changed or deleted.
	owned  bool
	lbTags map[string]string
	// tgs are the Service's target groups by name: those attached to lb,
	// plus (after resolveRecorded) those recorded on lb but detached.
	tgs map[string]elbv2types.TargetGroup
	// record is the set of target group name suffixes recorded on lb.
	record map[string]bool
	// upstream says lb has upstream's name: one the upstream CCM made,
	// or (loadBalancer.upstreamShape) one made here as upstream makes it.
	upstream bool
	// upstreamTGs says the target groups made for lb get upstream's names
	// (upstreamTGNaming): lb has upstream's name and the config asks for
	// upstream's shape. Otherwise they get ours (ourTGNaming), and those
	// upstream named are taken over under ours (takeOverTargetGroups).
	upstreamTGs bool
	// tgPrefix is what the names of the target groups made for lb start
	// with; the record holds the rest of each name.
	tgPrefix string
}

// sgless says the load balancer has no security group: one upstream made
// in its default mode, whose node rules admit clients by CIDR.
func (st *lbState) sgless() bool { return st.lb != nil && len(st.lb.SecurityGroups) == 0 }

func (st *lbState) lbARN() string { return aws.ToString(st.lb.LoadBalancerArn) }

// newState is the state of a Service's load balancer before it is read:
// named as a new one is named, ours or (loadBalancer.upstreamShape)
// upstream's.
func (l *loadBalancers) newState(svc *v1.Service) *lbState {
	return l.namedState(svc, l.upstreamShape())
}

// namedState is the state of the load balancer with our name, or with
// upstream's.
func (l *loadBalancers) namedState(svc *v1.Service, upstream bool) *lbState {
	st := &lbState{name: loadBalancerName(l.clusterID, svc), tgPrefix: targetGroupPrefix(l.clusterID, svc), tgs: map[string]elbv2types.TargetGroup{}}
	if upstream {
		st.name, st.upstream = upstreamNLBName(svc), true
		if l.upstreamShape() {
			st.upstreamTGs, st.tgPrefix = true, upstreamTargetGroupPrefix(svc)
		}
	}
	return st
}

// upstreamShape says new load balancers are made as upstream makes them
// (loadBalancer.upstreamShape).
func (l *loadBalancers) upstreamShape() bool {
	return l.cfg != nil && l.cfg.LoadBalancer.UpstreamShape
}

// load reads the Service's load balancer, with withTGs its attached target
// groups, and their tags, and checks that what carries our names is ours.
// It looks for the name a new one gets first; the other name is looked for
// only when the Service may have a load balancer under it: it has an
// address (upstream made it, or ours before the config asked for
// upstream's shape), or is being deleted. A new Service costs one read.
func (l *loadBalancers) load(ctx context.Context, svc *v1.Service, withTGs bool) (*lbState, error) {
	st := l.newState(svc)
	lb, err := l.describeLoadBalancer(ctx, st.name)
	if err == nil && lb == nil && (mayHaveUpstreamNLB(svc) || !svc.DeletionTimestamp.IsZero()) {
		other := l.namedState(svc, !st.upstream)
		if lb, err = l.describeLoadBalancer(ctx, other.name); lb != nil {
			st = other
		}
	}
	if err != nil || lb == nil {
		return st, err
	}
	st.lb = lb
	var attached []elbv2types.TargetGroup
	if withTGs {
		if attached, err = l.targetGroupsOf(ctx, st.lbARN()); err != nil {
			return nil, err
		}
	}
	arns := []string{st.lbARN()}
	for _, tg := range attached {
		arns = append(arns, aws.ToString(tg.TargetGroupArn))
	}
	tags, err := l.describeTags(ctx, arns)
	if err != nil {
		return nil, err
	}
	st.lbTags = tags[st.lbARN()]
	st.owned = l.ownedTags(st.lbTags, svc)
	if !st.owned {
		return st, nil
	}
	st.record = parseRecord(st.lbTags)
	for _, tg := range attached {
		name := aws.ToString(tg.TargetGroupName)
		if !l.ownedTags(tags[aws.ToString(tg.TargetGroupArn)], svc) {
			return nil, fmt.Errorf("target group %s attached to our load balancer %s is not tagged as ours; refusing to touch it", name, st.name)
		}
		st.tgs[name] = tg
	}
	if !st.upstreamTGs {
		takeOverTargetGroups(l.clusterID, svc, st)
	}
	return st, nil
}

// resolveRecorded finds the recorded target groups that are not attached:
// created just before a crash, or detached just before one. They are looked
// up by name, which only happens after such an interruption.
func (l *loadBalancers) resolveRecorded(ctx context.Context, svc *v1.Service, st *lbState) error {
	var missing []string
	prefix := st.tgPrefix
	for suffix := range st.record {
		if _, ok := st.tgs[prefix+suffix]; !ok {
			missing = append(missing, prefix+suffix)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	sort.Strings(missing)
	found := map[string]elbv2types.TargetGroup{}
	var arns []string
	for _, name := range missing {
		// One name per call: DescribeTargetGroups fails as a whole when any
		// name is unknown.
		out, err := l.api.elbv2.DescribeTargetGroups(ctx, &elbv2.DescribeTargetGroupsInput{Names: []string{name}})
		if isAPIError(err, "TargetGroupNotFound") {
			continue
		}
		if err != nil {
			return fmt.Errorf("describe target group %s: %w", name, err)
		}
		for _, tg := range out.TargetGroups {
			found[name] = tg
			arns = append(arns, aws.ToString(tg.TargetGroupArn))
		}
	}
	if len(arns) == 0 {
		return nil
	}
	tags, err := l.describeTags(ctx, arns)
	if err != nil {
		return err
	}
	for name, tg := range found {
		if !l.ownedTags(tags[aws.ToString(tg.TargetGroupArn)], svc) {
			return fmt.Errorf("target group %s exists but is not tagged as ours; refusing to adopt or delete it", name)
		}
		st.tgs[name] = tg
	}
	return nil
}

// describeLoadBalancer returns the load balancer named name, or nil.
func (l *loadBalancers) describeLoadBalancer(ctx context.Context, name string) (*elbv2types.LoadBalancer, error) {
	out, err := l.api.elbv2.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{Names: []string{name}})
	if isAPIError(err, "LoadBalancerNotFound") {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("describe load balancer %s: %w", name, err)
	}
	for i := range out.LoadBalancers {
		if aws.ToString(out.LoadBalancers[i].LoadBalancerName) == name {
			return &out.LoadBalancers[i], nil
		}
	}
	return nil, nil
}

// targetGroupsOf lists the target groups attached to a load balancer's
// listeners.
func (l *loadBalancers) targetGroupsOf(ctx context.Context, lbARN string) ([]elbv2types.TargetGroup, error) {
	var tgs []elbv2types.TargetGroup
	p := elbv2.NewDescribeTargetGroupsPaginator(l.api.elbv2.DescribeTargetGroups, &elbv2.DescribeTargetGroupsInput{LoadBalancerArn: aws.String(lbARN)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if isAPIError(err, "LoadBalancerNotFound") {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("describe target groups of %s: %w", lbARN, err)
		}
		tgs = append(tgs, out.TargetGroups...)
	}
	return tgs, nil
}

// describeTags reads tags of ELBv2 resources, 20 ARNs per call.
func (l *loadBalancers) describeTags(ctx context.Context, arns []string) (map[string]map[string]string, error) {
	out := make(map[string]map[string]string, len(arns))
	for start := 0; start < len(arns); start += describeTagsBatch {
		batch := arns[start:min(start+describeTagsBatch, len(arns))]
		res, err := l.api.elbv2.DescribeTags(ctx, &elbv2.DescribeTagsInput{ResourceArns: batch})
		if err != nil {
			return nil, fmt.Errorf("describe tags of %v: %w", batch, err)
		}
		for _, d := range res.TagDescriptions {
			m := make(map[string]string, len(d.Tags))
			for _, t := range d.Tags {
				m[aws.ToString(t.Key)] = aws.ToString(t.Value)
			}
			out[aws.ToString(d.ResourceArn)] = m
		}
	}
	return out, nil
}

// ownedTags says the tags mark a resource this cluster created for svc.
func (l *loadBalancers) ownedTags(tags map[string]string, svc *v1.Service) bool {
	return tags[clusterTagKey(l.clusterID)] == clusterTagOwned && tags[serviceNameTagKey] == serviceKey(svc)
}

// elbTags are the tags every ELBv2 resource we create carries: ours,
// then the user's additional tags in key order.
func (l *loadBalancers) elbTags(svc *v1.Service, opts *lbOptions) []elbv2types.Tag {
	tags := []elbv2types.Tag{
		{Key: aws.String(clusterTagKey(l.clusterID)), Value: aws.String(clusterTagOwned)},
		{Key: aws.String(serviceNameTagKey), Value: aws.String(serviceKey(svc))},
	}
	for _, k := range slices.Sorted(maps.Keys(opts.extraTags)) {
		tags = append(tags, elbv2types.Tag{Key: aws.String(k), Value: aws.String(opts.extraTags[k])})
	}
	return tags
}

// changedTagKeys are the keys of want that have lacks or holds with
// another value, sorted: the tags a load balancer of either kind needs.
func changedTagKeys(want, have map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if v, ok := have[k]; !ok || v != want[k] {
			out = append(out, k)
		}
	}
	return out
}

// ensureExtraTags adds or corrects the user's additional tags on the load
// balancer, in one call and none when they are in place. Tags the user
// removed from the annotation stay: nothing records which tags were the
// user's, and removing a tag someone else set would be worse.
func (l *loadBalancers) ensureExtraTags(ctx context.Context, st *lbState, opts *lbOptions) error {
	var add []elbv2types.Tag
	for _, k := range changedTagKeys(opts.extraTags, st.lbTags) {
		add = append(add, elbv2types.Tag{Key: aws.String(k), Value: aws.String(opts.extraTags[k])})
	}
	if len(add) == 0 {
		return nil
	}
	if _, err := l.api.elbv2.AddTags(ctx, &elbv2.AddTagsInput{ResourceArns: []string{st.lbARN()}, Tags: add}); err != nil {
		return fmt.Errorf("tag load balancer %s: %w", st.name, err)
	}
	for _, t := range add {
		st.lbTags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return nil
}

// The record: the names of the target groups we may have created for a load
// balancer are written onto the load balancer's tags before they are
// created and removed only after they are deleted. A target group that is
// not attached to a listener (a crash between CreateTargetGroup and
// CreateListener, or between detaching and DeleteTargetGroup) is thus
// always found again, without listing every target group in the account.
// Tag values are limited to 256 characters and may not hold commas, so the
// suffixes are space-separated across as many keys as needed.
const (
	recordTagKey      = "multicloud-ccm.io/target-groups"
	maxTagValueLength = 256
)

func recordKey(i int) string {
	if i == 0 {
		return recordTagKey
	}
	return fmt.Sprintf("%s-%d", recordTagKey, i+1)
}

func parseRecord(tags map[string]string) map[string]bool {
	rec := map[string]bool{}
	for k, v := range tags {
		if k != recordTagKey && !strings.HasPrefix(k, recordTagKey+"-") {
			continue
		}
		for _, s := range strings.Fields(v) {
			rec[s] = true
		}
	}
	return rec
}

// recordTags encodes a record as tags, and lists the keys of the current
// tags that the new encoding no longer uses.
func recordTags(rec map[string]bool, current map[string]string) (set []elbv2types.Tag, remove []string) {
	suffixes := make([]string, 0, len(rec))
	for s := range rec {
		suffixes = append(suffixes, s)
	}
	sort.Strings(suffixes)
	var values []string
	cur := ""
	for _, s := range suffixes {
		if cur != "" && len(cur)+1+len(s) > maxTagValueLength {
			values = append(values, cur)
			cur = ""
		}
		if cur != "" {
			cur += " "
		}
		cur += s
	}
	if cur != "" || len(values) == 0 {
		values = append(values, cur)
	}
	used := map[string]bool{}
	for i, v := range values {
		used[recordKey(i)] = true
		set = append(set, elbv2types.Tag{Key: aws.String(recordKey(i)), Value: aws.String(v)})
	}
	for k := range current {
		if (k == recordTagKey || strings.HasPrefix(k, recordTagKey+"-")) && !used[k] {
			remove = append(remove, k)
		}
	}
	sort.Strings(remove)
	return set, remove
}

// writeRecord replaces the record on the load balancer, with no call when
// it is unchanged.
func (l *loadBalancers) writeRecord(ctx context.Context, st *lbState, rec map[string]bool) error {
	if equalSets(rec, st.record) {
		return nil
	}
	set, remove := recordTags(rec, st.lbTags)
	if _, err := l.api.elbv2.AddTags(ctx, &elbv2.AddTagsInput{ResourceArns: []string{st.lbARN()}, Tags: set}); err != nil {
		return fmt.Errorf("record target groups on %s: %w", st.name, err)
	}
	if st.lbTags == nil {
		st.lbTags = map[string]string{}
	}
	for _, t := range set {
		st.lbTags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	if len(remove) > 0 {
		if _, err := l.api.elbv2.RemoveTags(ctx, &elbv2.RemoveTagsInput{ResourceArns: []string{st.lbARN()}, TagKeys: remove}); err != nil {
			return fmt.Errorf("trim target group record on %s: %w", st.name, err)
		}
		for _, k := range remove {
			delete(st.lbTags, k)
		}
	}
	st.record = rec
	return nil
}

// clearRecord removes the record from the load balancer's tags, in one
// call and none when there is none. Only when every target group it
// named is attached or deleted.
func (l *loadBalancers) clearRecord(ctx context.Context, st *lbState) error {
	var keys []string
	for k := range st.lbTags {
		if k == recordTagKey || strings.HasPrefix(k, recordTagKey+"-") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		return nil
	}
	if _, err := l.api.elbv2.RemoveTags(ctx, &elbv2.RemoveTagsInput{ResourceArns: []string{st.lbARN()}, TagKeys: keys}); err != nil {
		return fmt.Errorf("remove target group record from %s: %w", st.name, err)
	}
	for _, k := range keys {
		delete(st.lbTags, k)
	}
	st.record = map[string]bool{}
	return nil
}

func equalSets(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}
