package openstack

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"

	decl "github.com/multicloud-ccm/multicloud-ccm/providers/permissions"
)

// retryPolicy decides which failed calls gophercloud makes again and when.
// gophercloud retries nothing by itself; it offers two hooks, one for 429
// and one for every other failure, and both are this policy.
//
// A call is tried at most maxAttempts times (the section's maxAttempts):
//   - throttled (429, or 413 as Nova and older services send it): always
//     again, after the Retry-After the service asked for (capped), else
//     after exponential backoff; the service did not act on the request;
//   - 500, 502, 503, 504 and connection failures: again only for GET, HEAD,
//     PUT and DELETE, which OpenStack APIs make idempotent, and Keystone's
//     token creation. Any other POST may have been acted on before the
//     failure (a load balancer created, a floating IP allocated);
//     repeating it blindly could leak one, so it goes back to the caller,
//     whose next sync finds what exists by name and tags;
//   - anything else (4xx) is the answer, returned at once.
//
// Waits end early when the caller's context does.
type retryPolicy struct {
	maxAttempts int
	base, max   time.Duration
	// sleep waits d or until ctx is done; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error
}

func newRetryPolicy(maxAttempts int) *retryPolicy {
	return &retryPolicy{maxAttempts: maxAttempts, base: 250 * time.Millisecond, max: 20 * time.Second, sleep: sleepCtx}
}

// install sets the policy on pc.
func (p *retryPolicy) install(pc *gophercloud.ProviderClient) {
	// gophercloud calls the backoff hook while its own retry count is
	// below MaxBackoffRetries (0 would mean its default of 60).
	pc.MaxBackoffRetries = uint(max(p.maxAttempts-1, 0))
	if pc.MaxBackoffRetries == 0 {
		pc.RetryBackoffFunc = nil
	} else {
		pc.RetryBackoffFunc = p.backoff
	}
	pc.RetryFunc = p.retry
}

// backoff is gophercloud's hook for 429 (and Keystone's 498).
// On a cancelled wait the 429 itself is the answer.
func (p *retryPolicy) backoff(ctx context.Context, resp *gophercloud.ErrUnexpectedResponseCode, _ error, retries uint) error {
	if err := p.wait(ctx, retries, resp.ResponseHeader); err != nil {
		return *resp
	}
	return nil
}

// retry is gophercloud's hook for every other failure; failCount counts
// this call's retries so far, this one included.
func (p *retryPolicy) retry(ctx context.Context, method, url string, _ *gophercloud.RequestOpts, err error, failCount uint) error {
	// A policy denial the transport recognised (clients_denied.go) is
	// the answer, returned as itself rather than inside net/http's
	// *url.Error: it names the call already.
	var denied *decl.DeniedError
	if errors.As(err, &denied) {
		return denied
	}
	if int(failCount) >= p.maxAttempts || ctx.Err() != nil {
		return err
	}
	var header http.Header
	var resp gophercloud.ErrUnexpectedResponseCode
	status := 0
	if errors.As(err, &resp) {
		status, header = resp.Actual, resp.ResponseHeader
	}
	// Creating a token leaves nothing behind to leak.
	idempotent := method == http.MethodGet || method == http.MethodHead || method == http.MethodPut || method == http.MethodDelete ||
		method == http.MethodPost && strings.HasSuffix(url, "/auth/tokens")
	switch status {
	case http.StatusTooManyRequests, http.StatusRequestEntityTooLarge:
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		if !idempotent {
			return err
		}
	case 0:
		// A failed connection or a per-attempt timeout (the caller's own
		// context is checked above).
		if !idempotent {
			return err
		}
	default:
		return err
	}
	if werr := p.wait(ctx, failCount, header); werr != nil {
		return err
	}
	return nil
}

// wait sleeps before retry number n: what Retry-After asks (capped at
// max), else exponential backoff from base with jitter.
func (p *retryPolicy) wait(ctx context.Context, n uint, h http.Header) error {
	d, ok := retryAfter(h, time.Now())
	if !ok {
		d = p.base << min(n-1, 16)
		d += time.Duration(rand.Int64N(int64(d)/5 + 1))
	}
	return p.sleep(ctx, min(d, p.max))
}

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
