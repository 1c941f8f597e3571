package aws

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// registerBatch bounds targets per (De)RegisterTargets call.
const registerBatch = 200

// backendSet is the instances behind a Service's load balancer.
type backendSet struct {
	// ids are the instance IDs to register, sorted.
	ids []string
	// keep are Nodes' instances that can't be registered now (stopped,
	// stopping) but stay registered if they are: EC2 refuses to register
	// them, and deregistering them would leave them out after a restart
	// until some unrelated change made the service controller sync again.
	keep map[string]bool
	// groups are both kinds' security groups, for the node rules. Only
	// the groups are kept, sharing the snapshot's slices: at 5000 Nodes a
	// copy of every instance per sync would cost tens of MB per worker.
	groups map[string][]ec2types.GroupIdentifier
}

// backends maps the service controller's node set to instances. Nodes not
// yet initialized (no providerID) are left out: the service controller
// passes them in regardless of readiness and updates the backends again
// once they have one. Instances gone, terminating or in another VPC can't
// be registered and are left out too.
func (l *loadBalancers) backends(ctx context.Context, nodes []*v1.Node, vpc string) (*backendSet, error) {
	logger := klog.FromContext(ctx)
	var ids []string
	seen := map[string]bool{}
	for _, n := range nodes {
		if n.Spec.ProviderID == "" {
			logger.V(2).Info("Node has no providerID yet; not a load balancer backend", "node", klog.KObj(n))
			continue
		}
		// With a providerID this is a parse, so an error is permanent; one
		// malformed Node must not hold every load balancer hostage.
		id, err := l.in.instanceIDForNode(ctx, n)
		if err != nil {
			logger.Info("Node's instance is unknown; not a load balancer backend", "node", klog.KObj(n), "err", err)
			continue
		}
		if id != "" && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	found := map[string]*ec2types.Instance{}
	if len(ids) > 0 {
		var err error
		if found, err = l.in.byIDs(ctx, ids); err != nil {
			return nil, fmt.Errorf("describe backend instances: %w", err)
		}
	}
	set := &backendSet{groups: make(map[string][]ec2types.GroupIdentifier, len(ids)), keep: map[string]bool{}}
	for _, id := range ids {
		inst, ok := found[id]
		if !ok {
			logger.V(2).Info("Backend instance not found; skipping", "instance", id)
			continue
		}
		if v := aws.ToString(inst.VpcId); vpc != "" && v != "" && v != vpc {
			logger.Info("Backend instance is in another VPC; skipping", "instance", id, "vpc", v)
			continue
		}
		state := ec2types.InstanceStateNameRunning
		if inst.State != nil {
			state = inst.State.Name
		}
		switch state {
		case ec2types.InstanceStateNameRunning, ec2types.InstanceStateNamePending:
			set.ids = append(set.ids, id)
			set.groups[id] = inst.SecurityGroups
		case ec2types.InstanceStateNameStopped, ec2types.InstanceStateNameStopping:
			set.keep[id] = true
			set.groups[id] = inst.SecurityGroups
		}
	}
	sort.Strings(set.ids)
	return set, nil
}

type target struct {
	id   string
	port int32
}

func (t target) String() string { return fmt.Sprintf("%s:%d", t.id, t.port) }

// ensureTargets registers and deregisters only the difference between the
// backends and the target group's targets. The current targets are read
// with DescribeTargetHealth unless the target group was just created or we
// confirmed this exact set recently. It returns the targets registered
// afterwards, for the Service's record.
func (l *loadBalancers) ensureTargets(ctx context.Context, tg elbv2types.TargetGroup, port int32, be *backendSet, fresh bool) (map[target]bool, error) {
	arn := aws.ToString(tg.TargetGroupArn)
	want := wantedTargets(be, port)
	sig := targetSignature(want, be.keep)
	// A confirmed set without stopped instances is exactly what is
	// registered. With them, which of them are registered (and on which
	// port) is only known from a read.
	if cached, ok := l.targets.Get(arn); ok && cached == sig && len(be.keep) == 0 {
		return want, nil
	}
	have := map[target]bool{}
	if !fresh {
		out, err := l.api.elbv2.DescribeTargetHealth(ctx, &elbv2.DescribeTargetHealthInput{TargetGroupArn: tg.TargetGroupArn})
		if err != nil {
			return nil, fmt.Errorf("describe targets of %s: %w", aws.ToString(tg.TargetGroupName), err)
		}
		for _, d := range out.TargetHealthDescriptions {
			if d.Target == nil {
				continue
			}
			// A draining target is on its way out; if it is wanted it must
			// be registered again.
			if d.TargetHealth != nil && d.TargetHealth.State == elbv2types.TargetHealthStateEnumDraining {
				continue
			}
			have[target{aws.ToString(d.Target.Id), aws.ToInt32(d.Target.Port)}] = true
		}
	}
	registered, err := l.changeTargets(ctx, tg.TargetGroupArn, aws.ToString(tg.TargetGroupName), want, have, be, false)
	if err != nil {
		return nil, err
	}
	l.targets.Set(arn, sig)
	return registered, nil
}

// wantedTargets are the backends that must be registered on port.
func wantedTargets(be *backendSet, port int32) map[target]bool {
	want := make(map[target]bool, len(be.ids))
	for _, id := range be.ids {
		want[target{id, port}] = true
	}
	return want
}

// changeTargets registers what is wanted but not had, and deregisters what
// is had but neither wanted nor a stopped backend's. It returns what is
// registered afterwards. strict reports InvalidTarget from
// DeregisterTargets, which otherwise means the target is gone already:
// when have came from memory rather than a read, it says memory is wrong.
func (l *loadBalancers) changeTargets(ctx context.Context, tgARN *string, tgName string, want, have map[target]bool, be *backendSet, strict bool) (map[target]bool, error) {
	registered := make(map[target]bool, len(want))
	var add, remove []elbv2types.TargetDescription
	for t := range want {
		registered[t] = true
		if !have[t] {
			add = append(add, elbv2types.TargetDescription{Id: aws.String(t.id), Port: aws.Int32(t.port)})
		}
	}
	for t := range have {
		switch {
		case want[t]:
		case be.keep[t.id]:
			registered[t] = true
		default:
			remove = append(remove, elbv2types.TargetDescription{Id: aws.String(t.id), Port: aws.Int32(t.port)})
		}
	}
	if len(add)+len(remove) == 0 {
		return registered, nil
	}
	sortTargets(add)
	sortTargets(remove)
	// Whatever happens next, the confirmed set no longer is.
	l.targets.Delete(aws.ToString(tgARN))
	for start := 0; start < len(add); start += registerBatch {
		batch := add[start:min(start+registerBatch, len(add))]
		if _, err := l.api.elbv2.RegisterTargets(ctx, &elbv2.RegisterTargetsInput{TargetGroupArn: tgARN, Targets: batch}); err != nil {
			return nil, fmt.Errorf("register %d targets with %s: %w", len(batch), tgName, err)
		}
	}
	for start := 0; start < len(remove); start += registerBatch {
		batch := remove[start:min(start+registerBatch, len(remove))]
		_, err := l.api.elbv2.DeregisterTargets(ctx, &elbv2.DeregisterTargetsInput{TargetGroupArn: tgARN, Targets: batch})
		if err != nil && (strict || !isAPIError(err, "InvalidTarget")) {
			return nil, fmt.Errorf("deregister %d targets from %s: %w", len(batch), tgName, err)
		}
	}
	klog.FromContext(ctx).Info("Updated targets", "targetGroup", tgName, "registered", len(add), "deregistered", len(remove), "total", len(want))
	return registered, nil
}

// targetSignature identifies a set of targets plus the kept instances.
// Hashed so a thousand-node cluster's many target groups cost a few bytes
// each in the cache; written into the hash piece by piece, since at 5000
// Nodes every sync computes it.
func targetSignature(set map[target]bool, keep map[string]bool) string {
	ts := make([]target, 0, len(set))
	for t := range set {
		ts = append(ts, t)
	}
	sort.Slice(ts, func(i, j int) bool {
		if ts[i].id != ts[j].id {
			return ts[i].id < ts[j].id
		}
		return ts[i].port < ts[j].port
	})
	kept := make([]string, 0, len(keep))
	for id := range keep {
		kept = append(kept, id)
	}
	sort.Strings(kept)
	h := sha256.New()
	var port [4]byte
	for _, t := range ts {
		h.Write([]byte(t.id))
		binary.BigEndian.PutUint32(port[:], uint32(t.port))
		h.Write(port[:])
	}
	for _, id := range kept {
		h.Write([]byte("keep:" + id + ","))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func sortTargets(ts []elbv2types.TargetDescription) {
	sort.Slice(ts, func(i, j int) bool { return aws.ToString(ts[i].Id) < aws.ToString(ts[j].Id) })
}
