package aws

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/maphash"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unique"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/flight"
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
	// groups are both kinds' security group IDs, for the node rules. Only
	// the groups are kept, sharing the snapshot's slices: at 5000 Nodes a
	// copy of every instance per sync would cost megabytes per worker.
	groups map[string][]string

	// One set serves many Services (see sharedBackends), so what each of
	// them derives from it is derived once, on first use.
	mu        sync.Mutex
	derived   bool
	joined    unique.Handle[string]
	digest    string
	groupSets []string
}

// backendsMaxAge is how long one backendSet serves every Service synced
// with the same Nodes. The service controller hands each of N Services
// the same M Nodes; working the set out once per burst instead of once
// per Service saves N x M map entries (at 5000 Nodes and 1000 Services,
// most of what the CCM allocated). The instances in it are as old as the
// snapshot's answer anyway; sharing adds at most this much.
const backendsMaxAge = 2 * time.Second

// sharedBackends holds the backendSet last worked out and for which
// Nodes, and shares one computation among concurrent syncs.
type sharedBackends struct {
	seed  maphash.Seed
	fills flight.Group[*backendSet]

	mu  sync.Mutex
	key string
	at  time.Time
	set *backendSet
}

// nodeSetKey identifies the Nodes (names and providerIDs, in any order)
// and the VPC. The service controller lists Nodes from an informer, so
// the same set comes in a different order each time.
func (sb *sharedBackends) nodeSetKey(nodes []*v1.Node, vpc string) string {
	var sum uint64
	var h maphash.Hash
	h.SetSeed(sb.seed)
	for _, n := range nodes {
		h.Reset()
		h.WriteString(n.Name)
		h.WriteByte(0)
		h.WriteString(n.Spec.ProviderID)
		sum += h.Sum64()
	}
	return fmt.Sprintf("%s/%d/%x", vpc, len(nodes), sum)
}

// backends is backendsFor, shared between Services synced with the same
// Nodes within backendsMaxAge. The set must not be modified.
func (l *loadBalancers) backends(ctx context.Context, nodes []*v1.Node, vpc string) (*backendSet, error) {
	sb := &l.shared
	key := sb.nodeSetKey(nodes, vpc)
	sb.mu.Lock()
	if sb.set != nil && sb.key == key && l.clock.Since(sb.at) <= backendsMaxAge {
		set := sb.set
		sb.mu.Unlock()
		return set, nil
	}
	sb.mu.Unlock()
	return sb.fills.Do(ctx, key, func(ctx context.Context) (*backendSet, error) {
		start := l.clock.Now()
		set, err := l.backendsFor(ctx, nodes, vpc)
		if err != nil {
			return nil, err
		}
		sb.mu.Lock()
		sb.key, sb.at, sb.set = key, start, set
		sb.mu.Unlock()
		return set, nil
	})
}

// backendsFor maps the service controller's node set to instances. Nodes not
// yet initialized (no providerID) are left out: the service controller
// passes them in regardless of readiness and updates the backends again
// once they have one. Instances gone, terminating or in another VPC can't
// be registered and are left out too.
func (l *loadBalancers) backendsFor(ctx context.Context, nodes []*v1.Node, vpc string) (*backendSet, error) {
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
		id, err := l.in.KeyForNode(ctx, n)
		if err != nil {
			logger.Info("Node's instance is unknown; not a load balancer backend", "node", klog.KObj(n), "err", err)
			continue
		}
		if id != "" && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	found := map[string]*instance{}
	if len(ids) > 0 {
		var err error
		if found, err = l.in.byIDs(ctx, ids); err != nil {
			return nil, fmt.Errorf("describe backend instances: %w", err)
		}
	}
	set := &backendSet{groups: make(map[string][]string, len(ids)), keep: map[string]bool{}}
	for _, id := range ids {
		inst, ok := found[id]
		if !ok {
			logger.V(2).Info("Backend instance not found; skipping", "instance", id)
			continue
		}
		if v := inst.vpc; vpc != "" && v != "" && v != vpc {
			logger.Info("Backend instance is in another VPC; skipping", "instance", id, "vpc", v)
			continue
		}
		switch inst.state {
		case ec2types.InstanceStateNameRunning, ec2types.InstanceStateNamePending:
			set.ids = append(set.ids, id)
			set.groups[id] = inst.securityGroups
		case ec2types.InstanceStateNameStopped, ec2types.InstanceStateNameStopping:
			set.keep[id] = true
			set.groups[id] = inst.securityGroups
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
func (l *loadBalancers) ensureTargets(ctx context.Context, tg elbv2types.TargetGroup, port int32, be *backendSet, fresh bool) (targetSet, error) {
	arn := aws.ToString(tg.TargetGroupArn)
	want := be.wanted(port)
	// A confirmed set without stopped instances is exactly what is
	// registered. With them, which of them are registered (and on which
	// port) is only known from a read.
	if cached, ok := l.targets.Get(arn); ok && cached == want.sig && len(be.keep) == 0 {
		return want.set(), nil
	}
	var have map[target]bool
	if !fresh {
		out, err := l.api.elbv2.DescribeTargetHealth(ctx, &elbv2.DescribeTargetHealthInput{TargetGroupArn: tg.TargetGroupArn})
		if err != nil {
			return targetSet{}, fmt.Errorf("describe targets of %s: %w", aws.ToString(tg.TargetGroupName), err)
		}
		have = make(map[target]bool, len(out.TargetHealthDescriptions))
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
		return targetSet{}, err
	}
	l.targets.Set(arn, want.sig)
	return registered, nil
}

// wantedTargets are the backends to register on one port: the backend
// set's sorted instance IDs, shared by every Service synced with the same
// Nodes, so a Service costs no per-Node memory of its own.
type wantedTargets struct {
	// ids are sorted and shared: never modified.
	ids  []string
	port int32
	// joined is ids as a record holds them (see targetSet).
	joined unique.Handle[string]
	// sig identifies ids, port and the kept instances, for the cache of
	// confirmed target sets.
	sig string
}

func (w wantedTargets) has(t target) bool {
	if t.port != w.port {
		return false
	}
	_, ok := slices.BinarySearch(w.ids, t.id)
	return ok
}

// set is the record of exactly the wanted targets being registered.
func (w wantedTargets) set() targetSet { return targetSet{port: w.port, ids: w.joined} }

// wanted returns the targets that must be registered on port.
func (be *backendSet) wanted(port int32) wantedTargets {
	be.mu.Lock()
	defer be.mu.Unlock()
	if !be.derived {
		be.joined = unique.Make(strings.Join(be.ids, ","))
		be.digest = targetsDigest(be.ids, be.keep)
		be.derived = true
	}
	return wantedTargets{ids: be.ids, port: port, joined: be.joined, sig: be.digest + ":" + strconv.Itoa(int(port))}
}

// changeTargets registers what is wanted but not had, and deregisters what
// is had but neither wanted nor a stopped backend's. It returns what is
// registered afterwards. strict reports InvalidTarget from
// DeregisterTargets, which otherwise means the target is gone already:
// when have came from memory rather than a read, it says memory is wrong.
// A nil have is a new target group.
func (l *loadBalancers) changeTargets(ctx context.Context, tgARN *string, tgName string, want wantedTargets, have map[target]bool, be *backendSet, strict bool) (targetSet, error) {
	// The IDs to add, in order; for a new target group the shared slice
	// itself rather than a copy per Service.
	add := want.ids
	if len(have) > 0 {
		add = nil
		for _, id := range want.ids {
			if !have[target{id, want.port}] {
				add = append(add, id)
			}
		}
	}
	var remove, kept []target
	for t := range have {
		switch {
		case want.has(t):
		case be.keep[t.id]:
			kept = append(kept, t)
		default:
			remove = append(remove, t)
		}
	}
	registered := want.set()
	if len(kept) > 0 {
		m := make(map[target]bool, len(want.ids)+len(kept))
		for _, id := range want.ids {
			m[target{id, want.port}] = true
		}
		for _, t := range kept {
			m[t] = true
		}
		registered = newTargetSet(want.port, m)
	}
	if len(add)+len(remove) == 0 {
		return registered, nil
	}
	slices.SortFunc(remove, func(a, b target) int {
		return cmp.Or(strings.Compare(a.id, b.id), cmp.Compare(a.port, b.port))
	})
	// Whatever happens next, the confirmed set no longer is.
	l.targets.Delete(aws.ToString(tgARN))
	// Descriptions are built a batch at a time: at 5000 Nodes a whole set
	// of them per Service would be most of a sync's memory.
	for start := 0; start < len(add); start += registerBatch {
		batch := add[start:min(start+registerBatch, len(add))]
		descs := make([]elbv2types.TargetDescription, len(batch))
		for i, id := range batch {
			descs[i] = elbv2types.TargetDescription{Id: aws.String(id), Port: aws.Int32(want.port)}
		}
		if _, err := l.api.elbv2.RegisterTargets(ctx, &elbv2.RegisterTargetsInput{TargetGroupArn: tgARN, Targets: descs}); err != nil {
			return targetSet{}, fmt.Errorf("register %d targets with %s: %w", len(batch), tgName, err)
		}
	}
	for start := 0; start < len(remove); start += registerBatch {
		batch := remove[start:min(start+registerBatch, len(remove))]
		descs := make([]elbv2types.TargetDescription, len(batch))
		for i, t := range batch {
			descs[i] = elbv2types.TargetDescription{Id: aws.String(t.id), Port: aws.Int32(t.port)}
		}
		_, err := l.api.elbv2.DeregisterTargets(ctx, &elbv2.DeregisterTargetsInput{TargetGroupArn: tgARN, Targets: descs})
		if err != nil && (strict || !isAPIError(err, "InvalidTarget")) {
			return targetSet{}, fmt.Errorf("deregister %d targets from %s: %w", len(batch), tgName, err)
		}
	}
	klog.FromContext(ctx).Info("Updated targets", "targetGroup", tgName, "registered", len(add), "deregistered", len(remove), "total", len(want.ids))
	return registered, nil
}

// targetsDigest identifies sorted instance IDs plus the kept instances.
// Hashed so a thousand-node cluster's many target groups cost a few bytes
// each in the cache; written into the hash piece by piece.
func targetsDigest(ids []string, keep map[string]bool) string {
	kept := make([]string, 0, len(keep))
	for id := range keep {
		kept = append(kept, id)
	}
	sort.Strings(kept)
	h := sha256.New()
	// One scratch buffer: a []byte(string) per target would allocate.
	buf := make([]byte, 0, 64)
	for _, id := range ids {
		buf = append(append(buf[:0], id...), ',')
		h.Write(buf)
	}
	for _, id := range kept {
		buf = append(append(append(buf[:0], "keep:"...), id...), ',')
		h.Write(buf)
	}
	return hex.EncodeToString(h.Sum(nil))
}
