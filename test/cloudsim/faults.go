package cloudsim

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"
)

// Fault targets other than an exact operation name. A target ending in "*"
// (e.g. "elbv2:*") matches every operation with that prefix.
const (
	AllOps      = "*"        // every operation
	MutatingOps = "mutating" // operations the Cloud classifies as mutating
	ReadOps     = "read"     // all other operations
)

// FaultSpec describes faults injected into the operations Op targets.
//
// Every spec matching a call applies independently: latencies add up (so
// {"*": 50ms} plus {"mutating": 200ms} makes mutating calls take 250ms),
// every matching rate limit must have a token, and each spec's error
// counters advance on their own. A call is processed in this order: hang,
// latency, throttling, server error, and only then served. Calls that are
// hung, throttled or failed are still counted, which is how tests observe
// client retries.
type FaultSpec struct {
	// Op is an operation name, "*", "mutating", "read", or a prefix ending in "*".
	Op string `json:"op"`

	// Latency is added before the call is answered. In JSON it is a Go
	// duration string ("50ms").
	Latency time.Duration `json:"latency,omitempty"`

	// Hang blocks every matching call until its client gives up (the request
	// context ends) or the server closes. HangNext hangs only the next N calls.
	Hang     bool `json:"hang,omitempty"`
	HangNext int  `json:"hangNext,omitempty"`

	// RatePerSecond and Burst define a token bucket shared by all calls the
	// spec matches; a call finding it empty gets the cloud's throttling
	// error. Burst defaults to max(1, ceil(RatePerSecond)). Zero means no limit.
	RatePerSecond float64 `json:"ratePerSecond,omitempty"`
	Burst         int     `json:"burst,omitempty"`
	// ThrottleNext throttles the next N calls regardless of the bucket.
	ThrottleNext int `json:"throttleNext,omitempty"`

	// ErrorRate (0..1) fails that fraction of calls with the cloud's 5xx,
	// drawn from a generator seeded with Seed, so runs are reproducible.
	ErrorRate float64 `json:"errorRate,omitempty"`
	Seed      int64   `json:"seed,omitempty"`
	// FailNext fails the next N calls; FailEvery fails every Nth call.
	FailNext  int `json:"failNext,omitempty"`
	FailEvery int `json:"failEvery,omitempty"`
}

// Validate reports whether the spec is usable.
func (f FaultSpec) Validate() error {
	switch {
	case f.Op == "":
		return errors.New("fault spec: op is required")
	case f.Latency < 0:
		return errors.New("fault spec: latency must not be negative")
	case f.RatePerSecond < 0 || f.Burst < 0:
		return errors.New("fault spec: ratePerSecond and burst must not be negative")
	case f.ErrorRate < 0 || f.ErrorRate > 1:
		return errors.New("fault spec: errorRate must be within 0..1")
	case f.HangNext < 0 || f.ThrottleNext < 0 || f.FailNext < 0 || f.FailEvery < 0:
		return errors.New("fault spec: counts must not be negative")
	}
	return nil
}

// Matches reports whether the spec targets op.
func (f FaultSpec) Matches(op string, mutating bool) bool {
	return matchTarget(f.Op, op, mutating)
}

func matchTarget(target, op string, mutating bool) bool {
	switch target {
	case AllOps:
		return true
	case MutatingOps:
		return mutating
	case ReadOps:
		return !mutating
	}
	if prefix, ok := strings.CutSuffix(target, "*"); ok {
		return strings.HasPrefix(op, prefix)
	}
	return target == op
}

// MarshalJSON writes Latency as a duration string.
func (f FaultSpec) MarshalJSON() ([]byte, error) {
	type plain FaultSpec
	out := struct {
		plain
		Latency string `json:"latency,omitempty"`
	}{plain: plain(f)}
	if f.Latency != 0 {
		out.Latency = f.Latency.String()
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads Latency as a duration string or as nanoseconds.
func (f *FaultSpec) UnmarshalJSON(b []byte) error {
	type plain FaultSpec
	in := struct {
		*plain
		Latency any `json:"latency,omitempty"`
	}{plain: (*plain)(f)}
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	switch v := in.Latency.(type) {
	case nil:
		f.Latency = 0
	case string:
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("fault spec: latency: %w", err)
		}
		f.Latency = d
	case float64:
		f.Latency = time.Duration(v)
	default:
		return fmt.Errorf("fault spec: latency must be a duration string, got %T", v)
	}
	return nil
}

// fault is an installed FaultSpec plus its running state. The *Next
// counters in spec count down as they fire, so Faults() shows what is left.
type fault struct {
	spec   FaultSpec
	rng    *rand.Rand
	tokens float64
	last   time.Time
	seen   int // matching calls that reached the error stage, for FailEvery
}

func newFault(spec FaultSpec, now time.Time) *fault {
	f := &fault{
		spec: spec,
		rng:  rand.New(rand.NewPCG(uint64(spec.Seed), 0x636c6f756473696d)),
		last: now,
	}
	if spec.RatePerSecond > 0 && f.spec.Burst == 0 {
		f.spec.Burst = max(1, int(math.Ceil(spec.RatePerSecond)))
	}
	f.tokens = float64(f.spec.Burst)
	return f
}

// refill adds the tokens earned since the last call and reports whether
// one is available.
func (f *fault) refill(now time.Time) bool {
	if f.spec.RatePerSecond <= 0 {
		return true
	}
	f.tokens = math.Min(float64(f.spec.Burst), f.tokens+now.Sub(f.last).Seconds()*f.spec.RatePerSecond)
	f.last = now
	return f.tokens >= 1
}

// verdict is what the faults decided for one call.
type verdict struct {
	hang     bool
	latency  time.Duration
	throttle bool
	fail     bool
}

// faultSet holds the installed faults, keyed by target.
type faultSet struct {
	mu     sync.Mutex
	faults map[string]*fault
}

func (s *faultSet) set(spec FaultSpec, now time.Time) error {
	if err := spec.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.faults == nil {
		s.faults = make(map[string]*fault)
	}
	s.faults[spec.Op] = newFault(spec, now)
	return nil
}

func (s *faultSet) clear(op string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if op == "" {
		s.faults = nil
		return
	}
	delete(s.faults, op)
}

func (s *faultSet) list() []FaultSpec {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]FaultSpec, 0, len(s.faults))
	for _, f := range s.faults {
		out = append(out, f.spec)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Op < out[j].Op })
	return out
}

// decide runs one call through every matching fault.
func (s *faultSet) decide(op string, mutating bool, now time.Time) verdict {
	s.mu.Lock()
	defer s.mu.Unlock()
	var matching []*fault
	for _, f := range s.faults {
		if f.spec.Matches(op, mutating) {
			matching = append(matching, f)
		}
	}
	if len(matching) == 0 {
		return verdict{}
	}
	// Map order is random; counters must fire in a reproducible order.
	sort.Slice(matching, func(i, j int) bool { return matching[i].spec.Op < matching[j].spec.Op })

	var v verdict
	for _, f := range matching {
		if f.spec.HangNext > 0 {
			f.spec.HangNext--
			return verdict{hang: true}
		}
		if f.spec.Hang {
			return verdict{hang: true}
		}
	}
	for _, f := range matching {
		v.latency += f.spec.Latency
	}

	for _, f := range matching {
		if f.spec.ThrottleNext > 0 {
			f.spec.ThrottleNext--
			v.throttle = true
			return v
		}
	}
	// A throttled call must not spend tokens in the other buckets, so check
	// them all before taking any.
	allowed := true
	for _, f := range matching {
		if !f.refill(now) {
			allowed = false
		}
	}
	if !allowed {
		v.throttle = true
		return v
	}
	for _, f := range matching {
		if f.spec.RatePerSecond > 0 {
			f.tokens--
		}
	}

	for _, f := range matching {
		f.seen++
		switch {
		case f.spec.FailNext > 0:
			f.spec.FailNext--
			v.fail = true
		case f.spec.FailEvery > 0 && f.seen%f.spec.FailEvery == 0:
			v.fail = true
		case f.spec.ErrorRate > 0 && f.rng.Float64() < f.spec.ErrorRate:
			v.fail = true
		}
	}
	return v
}
