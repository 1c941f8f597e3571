package cloudmetrics

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// TransportOptions configure NewTransport.
type TransportOptions struct {
	// Provider and Service are the provider and service labels, e.g.
	// "openstack" and "compute".
	Provider string
	Service  string
	// Operation names a request's API operation from a small fixed set,
	// e.g. by matching the path against the API's path templates
	// ("servers.get" for GET /servers/{id}). It must never return an ID or
	// the path itself: every distinct value is a series kept forever. Nil
	// names each request by its HTTP method alone.
	Operation func(*http.Request) string
	// Throttled reports whether a response other than 429 is the cloud
	// throttling, for clouds that also say so otherwise (GCE: 403 with
	// reason rateLimitExceeded; Nova: 413 with Retry-After). A hook that
	// reads the body must leave an equivalent unread body in its place.
	// Nil means only 429 is throttling.
	Throttled func(*http.Response) bool
	// Recorder receives the observations; nil means Default.
	Recorder *Recorder
}

// NewTransport wraps next so that every HTTP attempt through it is
// recorded, for SDKs whose extension point is the HTTP client (gophercloud,
// Google's REST clients). The SDK retries above the transport, so each
// retry is recorded on its own, as it should be. The duration runs until
// the response headers arrived.
func NewTransport(next http.RoundTripper, o TransportOptions) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	if o.Recorder == nil {
		o.Recorder = Default()
	}
	return &transport{next: next, o: o}
}

type transport struct {
	next http.RoundTripper
	o    TransportOptions
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	op := req.Method
	if t.o.Operation != nil {
		op = t.o.Operation(req)
	}
	start := time.Now()
	resp, err := t.next.RoundTrip(req)
	d := time.Since(start)

	status := 0
	throttled := false
	if err == nil && resp != nil {
		status = resp.StatusCode
		throttled = status == http.StatusTooManyRequests || t.o.Throttled != nil && t.o.Throttled(resp)
	}
	code := Code(status, err)
	// A deadline on the request's own context is a timeout even when the
	// transport reports it as a plain cancellation.
	if status == 0 && code != CodeTimeout && errors.Is(req.Context().Err(), context.DeadlineExceeded) {
		code = CodeTimeout
	}
	t.o.Recorder.Observe(t.o.Provider, t.o.Service, op, code, d, throttled)
	return resp, err
}
