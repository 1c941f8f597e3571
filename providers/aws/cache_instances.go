package aws

import (
	"context"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/clock"
)

// instanceSnapshot is the cluster's live (not terminated) instances as one
// listing saw them, plus instances looked up individually since then. It is
// replaced as a whole on every refresh, so its size follows the cluster's
// and old entries never accumulate.
type instanceSnapshot struct {
	fetchedAt time.Time
	byID      map[string]ec2types.Instance
	// byName maps private DNS names, which node names are, to instance IDs.
	byName map[string]string
}

func newInstanceSnapshot(at time.Time, list []ec2types.Instance) *instanceSnapshot {
	s := &instanceSnapshot{
		fetchedAt: at,
		byID:      make(map[string]ec2types.Instance, len(list)),
		byName:    make(map[string]string, len(list)),
	}
	for _, inst := range list {
		s.add(inst)
	}
	return s
}

func (s *instanceSnapshot) add(inst ec2types.Instance) {
	id := aws.ToString(inst.InstanceId)
	if id == "" || isTerminated(inst) {
		return
	}
	s.byID[id] = inst
	if name := aws.ToString(inst.PrivateDnsName); name != "" {
		s.byName[name] = id
	}
}

// instanceCache serves instance lookups from a snapshot no older than ttl,
// refreshed by one listing that concurrent callers share.
type instanceCache struct {
	clock clock.PassiveClock
	ttl   time.Duration
	list  func(ctx context.Context) ([]ec2types.Instance, error)

	refresh single[*instanceSnapshot]

	mu   sync.Mutex
	snap *instanceSnapshot
	// failedAt and failure remember the last failed listing for
	// refreshErrorHold, so that a throttled or failing API is not hit
	// again by every waiting Node the moment the listing fails.
	failedAt time.Time
	failure  error
}

// refreshErrorHold is how long a failed listing is answered from memory.
// The SDK has already retried with backoff by the time a listing fails.
const refreshErrorHold = time.Second

// fresh makes sure the snapshot is no older than ttl, listing the
// instances again if needed. A failed listing is an error: serving an older snapshot would
// break the age bound that InstanceExists and routes rely on.
func (c *instanceCache) fresh(ctx context.Context) error {
	c.mu.Lock()
	s, failedAt, failure := c.snap, c.failedAt, c.failure
	c.mu.Unlock()
	if s != nil && c.clock.Since(s.fetchedAt) <= c.ttl {
		return nil
	}
	if failure != nil && c.clock.Since(failedAt) < refreshErrorHold {
		return failure
	}
	_, err := c.refresh.do(ctx, func(ctx context.Context) (*instanceSnapshot, error) {
		// A caller that found the snapshot stale may arrive just after
		// another refresh finished; reuse that one.
		c.mu.Lock()
		s := c.snap
		c.mu.Unlock()
		if s != nil && c.clock.Since(s.fetchedAt) <= c.ttl {
			return s, nil
		}
		start := c.clock.Now()
		list, err := c.list(ctx)
		c.mu.Lock()
		defer c.mu.Unlock()
		if err != nil {
			c.failedAt, c.failure = c.clock.Now(), err
			return nil, err
		}
		c.failure = nil
		c.snap = newInstanceSnapshot(start, list)
		return c.snap, nil
	})
	return err
}

// byID returns the snapshot's instance with that ID. Callers must have
// called fresh recently.
func (c *instanceCache) byID(id string) (ec2types.Instance, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snap == nil {
		return ec2types.Instance{}, false
	}
	inst, ok := c.snap.byID[id]
	return inst, ok
}

// byName returns the snapshot's instance whose private DNS name is name.
func (c *instanceCache) byName(name string) (ec2types.Instance, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snap == nil {
		return ec2types.Instance{}, false
	}
	id, ok := c.snap.byName[name]
	if !ok {
		return ec2types.Instance{}, false
	}
	inst, ok := c.snap.byID[id]
	return inst, ok
}

// add records instances found by individual lookups in the current
// snapshot. They leave with it, so their age is bounded like everything
// else's. Entries the snapshot already has are not replaced: they may be
// newer than a lookup that was in flight during a refresh.
func (c *instanceCache) add(list []ec2types.Instance) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snap == nil {
		return
	}
	for _, inst := range list {
		if _, ok := c.snap.byID[aws.ToString(inst.InstanceId)]; !ok {
			c.snap.add(inst)
		}
	}
}

// all returns the snapshot's instances.
func (c *instanceCache) all() []ec2types.Instance {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snap == nil {
		return nil
	}
	out := make([]ec2types.Instance, 0, len(c.snap.byID))
	for _, inst := range c.snap.byID {
		out = append(out, inst)
	}
	return out
}

func isTerminated(inst ec2types.Instance) bool {
	return inst.State != nil && inst.State.Name == ec2types.InstanceStateNameTerminated
}
