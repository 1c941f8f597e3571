package aws

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// NLB attributes as upstream keeps them (kubernetes/cloud-provider-aws
// pkg/providers/v1/aws_loadbalancer.go:444-520 reconcileLBAttributes):
// cross-zone load balancing and S3 access logs from the same annotations
// as a Classic ELB's, each back to AWS's default (off, no bucket) when its
// annotation is absent.
//
// Upstream reads the attributes on every sync. Here they are read only
// for a Service with one of the annotations, or whose NLB carries
// lbAttributesTag (set when we wrote a value other than the default,
// removed once the defaults are back) or was made by upstream, which may
// have written them: every other sync costs no call.
const (
	nlbAttrCrossZone    = "load_balancing.cross_zone.enabled"
	nlbAttrAccessLogs   = "access_logs.s3.enabled"
	nlbAttrAccessBucket = "access_logs.s3.bucket"
	nlbAttrAccessPrefix = "access_logs.s3.prefix"
	// lbAttributesTag marks an NLB whose attributes we changed from AWS's
	// defaults. MUST NOT change: it is how a later sync knows to restore them.
	lbAttributesTag = "multicloud-ccm.io/attributes"
)

// nlbAttributes are the attribute values the Service asks for, and
// whether any of the annotations is present.
type nlbAttributes struct {
	set  bool
	want map[string]string
}

// parseNLBAttributes reads the annotations with upstream's defaults.
func parseNLBAttributes(svc *v1.Service) (nlbAttributes, error) {
	a := nlbAttributes{want: map[string]string{
		nlbAttrCrossZone: "false", nlbAttrAccessLogs: "false", nlbAttrAccessBucket: "", nlbAttrAccessPrefix: "",
	}}
	crossZone, czSet, err := annotationCrossZone.Bool(svc)
	if err != nil {
		return a, err
	}
	logs, logsSet, err := annotationAccessLogEnabled.Bool(svc)
	if err != nil {
		return a, err
	}
	bucket, bucketSet := annotationAccessLogBucket.Lookup(svc)
	prefix, prefixSet := annotationAccessLogPrefix.Lookup(svc)
	if logs && bucket == "" {
		return a, fmt.Errorf("annotation %s=true needs %s, the S3 bucket to write to", annotationAccessLogEnabled, annotationAccessLogBucket)
	}
	a.set = czSet || logsSet || bucketSet || prefixSet
	a.want[nlbAttrCrossZone] = fmt.Sprint(crossZone)
	a.want[nlbAttrAccessLogs] = fmt.Sprint(logs)
	a.want[nlbAttrAccessBucket] = bucket
	a.want[nlbAttrAccessPrefix] = prefix
	return a, nil
}

// nonDefault says a holds a value other than AWS's default.
func (a nlbAttributes) nonDefault() bool {
	return a.want[nlbAttrCrossZone] == "true" || a.want[nlbAttrAccessLogs] == "true" || a.want[nlbAttrAccessBucket] != "" || a.want[nlbAttrAccessPrefix] != ""
}

// ensureNLBAttributes writes the attributes that differ, and keeps
// lbAttributesTag in step. fresh says the NLB was just created with AWS's
// defaults, so nothing needs reading unless the Service asks for more.
func (l *loadBalancers) ensureNLBAttributes(ctx context.Context, st *lbState, attrs nlbAttributes, fresh bool) error {
	_, tagged := st.lbTags[lbAttributesTag]
	if !attrs.nonDefault() && (fresh || (!attrs.set && !tagged && !st.upstream)) {
		return nil
	}
	arn := st.lb.LoadBalancerArn
	// A new NLB has AWS's defaults, which are what upstream's absent
	// annotations mean.
	have := map[string]string{nlbAttrCrossZone: "false", nlbAttrAccessLogs: "false", nlbAttrAccessBucket: "", nlbAttrAccessPrefix: ""}
	if !fresh {
		cur, err := l.api.elbv2.DescribeLoadBalancerAttributes(ctx, &elbv2.DescribeLoadBalancerAttributesInput{LoadBalancerArn: arn})
		if err != nil {
			return fmt.Errorf("describe attributes of load balancer %s: %w", st.name, err)
		}
		for _, a := range cur.Attributes {
			have[aws.ToString(a.Key)] = aws.ToString(a.Value)
		}
	}
	var diff []elbv2types.LoadBalancerAttribute
	for _, k := range slices.Sorted(maps.Keys(attrs.want)) {
		if have[k] != attrs.want[k] {
			diff = append(diff, elbv2types.LoadBalancerAttribute{Key: aws.String(k), Value: aws.String(attrs.want[k])})
		}
	}
	// Tag before writing a non-default value, so a crash in between still
	// leaves the mark that makes a later sync restore the defaults.
	if attrs.nonDefault() && !tagged {
		if _, err := l.api.elbv2.AddTags(ctx, &elbv2.AddTagsInput{ResourceArns: []string{aws.ToString(arn)},
			Tags: []elbv2types.Tag{{Key: aws.String(lbAttributesTag), Value: aws.String("set")}}}); err != nil {
			return fmt.Errorf("tag load balancer %s: %w", st.name, err)
		}
		st.lbTags[lbAttributesTag] = "set"
	}
	if len(diff) > 0 {
		if _, err := l.api.elbv2.ModifyLoadBalancerAttributes(ctx, &elbv2.ModifyLoadBalancerAttributesInput{LoadBalancerArn: arn, Attributes: diff}); err != nil {
			return fmt.Errorf("set attributes of load balancer %s (annotations %s, %s): %w", st.name, annotationCrossZone, annotationAccessLogEnabled, err)
		}
		klog.FromContext(ctx).Info("Set load balancer attributes", "attributes", len(diff))
	}
	if !attrs.nonDefault() && tagged {
		if _, err := l.api.elbv2.RemoveTags(ctx, &elbv2.RemoveTagsInput{ResourceArns: []string{aws.ToString(arn)}, TagKeys: []string{lbAttributesTag}}); err != nil {
			return fmt.Errorf("untag load balancer %s: %w", st.name, err)
		}
		delete(st.lbTags, lbAttributesTag)
	}
	return nil
}
