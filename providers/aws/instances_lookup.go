package aws

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/klog/v2"
)

// byIDs returns the live (not terminated) instances with the given IDs,
// from the snapshot where possible and with one batched call for the rest.
// IDs that are unknown, terminated or malformed are absent from the map.
func (in *instances) byIDs(ctx context.Context, ids []string) (map[string]*instance, error) {
	return in.Snap.ByIDs(ctx, ids)
}

// lookupID returns the instance with that ID; found is false only when
// EC2, asked directly about that ID, answered NotFound or terminated.
func (in *instances) lookupID(ctx context.Context, id string) (*instance, bool, error) {
	return in.Snap.Lookup(ctx, id)
}

// nodeName is the name of the Node of an instance: the Node whose
// providerID names it, else its private DNS name, which is what a kubelet
// registers as by default.
func (in *instances) nodeName(inst *instance) string {
	if name, ok := in.Nodes.NodeName(inst.id); ok {
		return name
	}
	return inst.privateDNS
}

// instanceIDFromNodeName recognises node names that are themselves an
// instance ID, or a resource-name hostname such as
// i-0abc.eu-west-1.compute.internal (i-0abc.ec2.internal in us-east-1):
// the resolver's KeyFromName, so such Nodes need no lookup by name.
func instanceIDFromNodeName(name string) string {
	if instanceIDRE.MatchString(name) {
		return name
	}
	first, rest, ok := strings.Cut(name, ".")
	if ok && instanceIDRE.MatchString(first) && (rest == "ec2.internal" || strings.HasSuffix(rest, ".compute.internal")) {
		return first
	}
	return ""
}

// vpcID is the cluster's VPC: the configured one, else the VPC most of the
// cluster's instances are in, found once and kept.
func (in *instances) vpcID(ctx context.Context) (string, error) {
	if vpc := in.knownVPC(); vpc != "" {
		return vpc, nil
	}
	return in.vpcDiscover.Do(ctx, "vpc", func(ctx context.Context) (string, error) {
		if vpc := in.knownVPC(); vpc != "" {
			return vpc, nil
		}
		all, err := in.Snap.All(ctx)
		if err != nil {
			return "", fmt.Errorf("find the cluster's VPC: %w", err)
		}
		votes := map[string]int{}
		best := ""
		for _, inst := range all {
			v := inst.vpc
			if v == "" {
				continue
			}
			votes[v]++
			if best == "" || votes[v] > votes[best] || (votes[v] == votes[best] && v < best) {
				best = v
			}
		}
		if best == "" {
			return "", fmt.Errorf("find the cluster's VPC: no instance is tagged %s; set vpcID in the cloud-config", in.clusterTag())
		}
		if len(votes) > 1 {
			klog.FromContext(ctx).Info("Cluster instances span several VPCs; using the most common one", "vpc", best, "instancesPerVPC", votes)
		}
		in.vpcMu.Lock()
		in.vpc = best
		in.vpcMu.Unlock()
		return best, nil
	})
}

// knownVPC is the VPC if it is configured or already discovered.
func (in *instances) knownVPC() string {
	if in.cfgVPC != "" {
		return in.cfgVPC
	}
	in.vpcMu.Lock()
	defer in.vpcMu.Unlock()
	return in.vpc
}

// listClusterInstances lists the cluster's live instances, the snapshot's
// source: one paginated call, whatever the cluster's size.
func (in *instances) listClusterInstances(ctx context.Context) ([]*instance, error) {
	filters := []ec2types.Filter{
		{Name: aws.String("tag-key"), Values: []string{in.clusterTag()}},
		{Name: aws.String("instance-state-name"), Values: liveInstanceStates},
	}
	if vpc := in.knownVPC(); vpc != "" {
		filters = append(filters, ec2types.Filter{Name: aws.String("vpc-id"), Values: []string{vpc}})
	}
	list, err := in.describeInstances(ctx, &ec2.DescribeInstancesInput{Filters: filters, MaxResults: aws.Int32(listPageSize)})
	if err != nil {
		return nil, fmt.Errorf("describe instances tagged %s: %w", in.clusterTag(), err)
	}
	klog.FromContext(ctx).V(4).Info("Listed cluster instances", "count", len(list))
	return list, nil
}

// describeByNames finds live instances by private DNS name, keyed by name.
func (in *instances) describeByNames(ctx context.Context, names []string) (map[string]*instance, error) {
	filters := []ec2types.Filter{
		{Name: aws.String("private-dns-name"), Values: names},
		{Name: aws.String("instance-state-name"), Values: liveInstanceStates},
	}
	if vpc := in.knownVPC(); vpc != "" {
		filters = append(filters, ec2types.Filter{Name: aws.String("vpc-id"), Values: []string{vpc}})
	}
	list, err := in.describeInstances(ctx, &ec2.DescribeInstancesInput{Filters: filters, MaxResults: aws.Int32(listPageSize)})
	if err != nil {
		return nil, fmt.Errorf("describe instances by private DNS name %s: %w", summarize(names), err)
	}
	out := make(map[string]*instance, len(list))
	for _, inst := range list {
		out[inst.privateDNS] = inst
	}
	return out, nil
}

// describeByIDs asks EC2 about instance IDs directly, in one call when all
// exist. EC2 fails the whole call with InvalidInstanceID.NotFound when any
// ID does not exist; the IDs it names are then definitively gone and the
// rest are asked again. If the message names none, the IDs are halved until
// each NotFound concerns a single ID, so "gone" always rests on EC2's word
// about that very ID.
func (in *instances) describeByIDs(ctx context.Context, ids []string) (map[string]*instance, error) {
	out := make(map[string]*instance, len(ids))
	return out, in.describeByIDsInto(ctx, ids, out)
}

func (in *instances) describeByIDsInto(ctx context.Context, ids []string, out map[string]*instance) error {
	if len(ids) == 0 {
		return nil
	}
	list, err := in.describeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: ids})
	if err == nil {
		for _, inst := range list {
			out[inst.id] = inst
		}
		return nil
	}
	if ec2ErrorCode(err) != errCodeInstanceNotFound {
		return fmt.Errorf("describe instances %s: %w", summarize(ids), err)
	}
	if len(ids) == 1 {
		return nil
	}
	named := map[string]bool{}
	for _, id := range instanceIDTokenRE.FindAllString(err.Error(), -1) {
		named[id] = true
	}
	var rest []string
	for _, id := range ids {
		if !named[id] {
			rest = append(rest, id)
		}
	}
	switch {
	case len(rest) == 0:
		return nil
	case len(rest) < len(ids):
		return in.describeByIDsInto(ctx, rest, out)
	}
	half := len(ids) / 2
	if err := in.describeByIDsInto(ctx, ids[:half], out); err != nil {
		return err
	}
	return in.describeByIDsInto(ctx, ids[half:], out)
}

// instanceIDTokenRE finds instance IDs in an error message.
var instanceIDTokenRE = regexp.MustCompile(`\bi-[0-9a-f]+\b`)

// describeInstances runs a (possibly paginated) DescribeInstances and
// keeps the compact form of each instance (instances_compact.go), so no
// SDK struct outlives its page.
func (in *instances) describeInstances(ctx context.Context, input *ec2.DescribeInstancesInput) ([]*instance, error) {
	var list []*instance
	tag := in.clusterTag()
	p := ec2.NewDescribeInstancesPaginator(in.ec2.DescribeInstances, input)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, r := range page.Reservations {
			for i := range r.Instances {
				list = append(list, compact(&r.Instances[i], tag))
			}
		}
	}
	return list, nil
}

// summarize names a few keys for an error message without flooding it.
func summarize(keys []string) string {
	const show = 5
	if len(keys) <= show {
		return fmt.Sprint(keys)
	}
	return fmt.Sprintf("%v and %d more", keys[:show], len(keys)-show)
}
