package aws

import (
	"context"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go/middleware"
)

// maxRetryBackoff caps the SDK's exponential backoff between attempts.
const maxRetryBackoff = 20 * time.Second

// newBackoff is the backoff between attempts; tests replace it.
var newBackoff = func() retry.BackoffDelayer { return retry.NewExponentialJitterBackoff(maxRetryBackoff) }

// Why the retry sleep is ours: during an outage every call sits in the
// SDK's backoff, up to 20 s a sleep, and a call that began in the outage
// (the instance snapshot's listing, which every ensure waits for) would
// finish its sleep long after the API answers again: recovery took 15 s
// after the fault cleared, 9 of them asleep. So the sleep moves from the
// retry middleware (which gets RetryDelay's answer) into GetRetryToken,
// which has the call's context, and a call that has seen nothing but
// failures from its service since it began wakes as soon as that service
// answers any call. Throttling is backed off in full: waking a throttled
// call because another call was served would throttle it again. A call
// that saw the service answer others while it failed (a flaky API, not
// an outage) backs off in full too.

// serviceAnswers tells, per AWS service (EC2, ELB), when it answered a
// call: a generation bumped at each answer, and a channel closed at the
// next one for the calls asleep in their retry backoff.
type serviceAnswers struct {
	mu  sync.Mutex
	svc map[string]*answers
}

type answers struct {
	gen  uint64
	next chan struct{}
}

func newServiceAnswers() *serviceAnswers { return &serviceAnswers{svc: map[string]*answers{}} }

func (s *serviceAnswers) get(service string) *answers {
	a, ok := s.svc[service]
	if !ok {
		a = &answers{}
		s.svc[service] = a
	}
	return a
}

// answered records that service answered an attempt, waking the calls
// that wait for it.
func (s *serviceAnswers) answered(service string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.get(service)
	a.gen++
	if a.next != nil {
		close(a.next)
		a.next = nil
	}
}

// generation is the service's answer count so far.
func (s *serviceAnswers) generation(service string) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.get(service).gen
}

// nextAnswer is closed at the service's next answer, or nil when it has
// answered since generation since (the caller then backs off in full).
func (s *serviceAnswers) nextAnswer(service string, since uint64) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.get(service)
	if a.gen != since {
		return nil
	}
	if a.next == nil {
		a.next = make(chan struct{})
	}
	return a.next
}

// callRetries is one call's retry state, put in its context by the
// retryCall middleware (one per call, shared by its attempts).
type callRetries struct {
	// since is the service's answer generation when the call began.
	since uint64
	// retries are the retries slept so far.
	retries int
}

type callRetriesKey struct{}

// retryCall is the Finalize middleware just before the SDK's retry
// middleware: it gives the call its callRetries.
type retryCall struct{ answers *serviceAnswers }

func (*retryCall) ID() string { return "MulticloudCCMRetryCall" }

func (m *retryCall) HandleFinalize(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (
	middleware.FinalizeOutput, middleware.Metadata, error,
) {
	st := &callRetries{since: m.answers.generation(awsmiddleware.GetServiceID(ctx))}
	return next.HandleFinalize(context.WithValue(ctx, callRetriesKey{}, st), in)
}

// addRetryCall places retryCall before the retry middleware (a stack
// without one makes one attempt per call and needs no state).
func addRetryCall(stack *middleware.Stack, answers *serviceAnswers) error {
	if _, ok := stack.Finalize.Get((&retry.Attempt{}).ID()); !ok {
		return nil
	}
	return stack.Finalize.Insert(&retryCall{answers: answers}, (&retry.Attempt{}).ID(), middleware.Before)
}

// wakingRetryer is the SDK's standard retryer whose backoff sleep happens
// in GetRetryToken and ends early when the service answers again after
// an outage (see above). RetryDelay answers 0: the sleep is over by then.
type wakingRetryer struct {
	aws.RetryerV2
	backoff retry.BackoffDelayer
	answers *serviceAnswers
}

func (r *wakingRetryer) RetryDelay(int, error) (time.Duration, error) { return 0, nil }

func (r *wakingRetryer) GetRetryToken(ctx context.Context, opErr error) (func(error) error, error) {
	release, err := r.RetryerV2.GetRetryToken(ctx, opErr)
	if err != nil {
		return release, err
	}
	st, _ := ctx.Value(callRetriesKey{}).(*callRetries)
	if st == nil {
		// Not through sdkConfig's stack: back off as a first retry.
		st = &callRetries{since: ^uint64(0)}
	}
	st.retries++
	delay, err := r.backoff.BackoffDelay(st.retries, opErr)
	if err != nil {
		return release, err
	}
	var wake <-chan struct{}
	if throttles.IsErrorThrottle(opErr) != aws.TrueTernary {
		wake = r.answers.nextAnswer(awsmiddleware.GetServiceID(ctx), st.since)
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-wake:
	case <-ctx.Done():
		_ = release(ctx.Err())
		return func(error) error { return nil }, &aws.RequestCanceledError{Err: ctx.Err()}
	}
	return release, nil
}

// noteAnswers is the Finalize middleware just after the retry middleware
// (once per attempt): an attempt the service answered (any status below
// 500 but 429, an error like a 404 included) wakes the calls asleep after
// an outage.
type noteAnswers struct{ answers *serviceAnswers }

func (*noteAnswers) ID() string { return "MulticloudCCMNoteAnswers" }

func (m *noteAnswers) HandleFinalize(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (
	middleware.FinalizeOutput, middleware.Metadata, error,
) {
	out, md, err := next.HandleFinalize(ctx, in)
	if status := attemptStatus(md, err); status > 0 && status < 500 && status != 429 && throttles.IsErrorThrottle(err) != aws.TrueTernary {
		m.answers.answered(awsmiddleware.GetServiceID(ctx))
	}
	return out, md, err
}

// wakeRetries returns the retryer and the stack option that make the
// SDK's retries wake when their service answers again after an outage;
// both share one serviceAnswers.
func wakeRetries(maxAttempts int) (func() aws.Retryer, func(*middleware.Stack) error) {
	answers := newServiceAnswers()
	retryer := func() aws.Retryer {
		return &wakingRetryer{
			RetryerV2: retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = maxAttempts
				// The client-side retry quota would stop retrying exactly
				// when the CCM is being throttled hardest; backoff, not a
				// quota, is what keeps us polite.
				o.RateLimiter = noRateLimit{}
			}),
			backoff: newBackoff(),
			answers: answers,
		}
	}
	stack := func(stack *middleware.Stack) error {
		if err := addRetryCall(stack, answers); err != nil {
			return err
		}
		if _, ok := stack.Finalize.Get((&retry.Attempt{}).ID()); !ok {
			return nil
		}
		return stack.Finalize.Insert(&noteAnswers{answers: answers}, (&retry.Attempt{}).ID(), middleware.After)
	}
	return retryer, stack
}
