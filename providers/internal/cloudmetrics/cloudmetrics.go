// Package cloudmetrics counts and times every backend's calls to its
// cloud's API and its instance-snapshot lookups, under one set of metric
// names, so an operator reads AWS, Azure, GCE and OpenStack the same way on
// the manager's /metrics.
//
// The series count HTTP attempts, not SDK operations: a call the SDK
// retried three times counts three, so the numbers match what the cloud saw
// (and billed, and throttled). Backends report through their SDK's own
// extension point: an SDK middleware calls Recorder.Observe; an SDK whose
// extension point is the HTTP transport is wrapped with NewTransport.
//
// Every label value must come from a small fixed set: provider and service
// names, the API's operation names, HTTP status codes. Never an instance
// ID, a URL with IDs in it, or anything from a credential: each distinct
// value is a new series kept for the life of the process, and /metrics is
// readable by whoever may scrape it.
package cloudmetrics

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"github.com/multicloud-ccm/multicloud-ccm/providers/cloudhealth"
)

// Metric names as scraped. Dashboards and alerts depend on them.
const (
	RequestsName        = "multicloud_ccm_cloud_api_requests_total"
	DurationName        = "multicloud_ccm_cloud_api_request_duration_seconds"
	ThrottledName       = "multicloud_ccm_cloud_api_throttled_total"
	SnapshotLookupsName = "multicloud_ccm_instance_snapshot_lookups_total"
	// RateLimitRemainingName is the request budget a cloud reports left
	// (ARM's x-ms-ratelimit-remaining-* headers), so an alert can fire
	// before throttling starts.
	RateLimitRemainingName = "multicloud_ccm_cloud_api_ratelimit_remaining"
	// PermissionDeniedName counts calls the cloud refused because the
	// manager's identity lacks a permission, by permission and the
	// features that need it (providers/<cloud>/permissions.go).
	PermissionDeniedName = "multicloud_ccm_cloud_permission_denied_total"
)

// Codes for an attempt that got no HTTP response; otherwise the code label
// is the response's status code ("200", "503").
const (
	// CodeTimeout: the attempt hit its deadline (a hung or slow cloud).
	CodeTimeout = "timeout"
	// CodeCanceled: the caller gave up first (shutdown, a caller's context).
	CodeCanceled = "canceled"
	// CodeError: no response for any other reason (DNS, refused, reset, TLS).
	CodeError = "error"
)

// unknown stands in for an empty label value, so a hook that cannot name
// an operation still produces a bounded, visible series.
const unknown = "unknown"

// durationBuckets span a fast read from a nearby endpoint (5ms) up to a
// slow mutation or a client timeout (60s).
var durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60}

// Recorder holds one set of the metrics. Production code uses Default,
// which /metrics serves; tests may register a NewRecorder in a registry of
// their own.
type Recorder struct {
	requests  *metrics.CounterVec
	duration  *metrics.HistogramVec
	throttled *metrics.CounterVec
	snapshot  *metrics.CounterVec
	remaining *metrics.GaugeVec
	denied    *metrics.CounterVec
	// logged are the permissions whose denial was logged, so each is
	// logged once per process, not once per call.
	logged sync.Map
	// health, on the Default recorder, learns from every attempt whether
	// each cloud answers (the service controller's retries read it).
	health *cloudhealth.Board
}

// NewRecorder returns an unregistered Recorder. component-base metrics
// record nothing until registered, so register its Collectors.
func NewRecorder() *Recorder {
	return &Recorder{
		requests: metrics.NewCounterVec(&metrics.CounterOpts{
			Name: RequestsName,
			Help: "HTTP attempts to the cloud API by operation and HTTP status code (or timeout, canceled, error when no response came back); SDK retries count once per attempt.",
		}, []string{"provider", "service", "operation", "code"}),
		duration: metrics.NewHistogramVec(&metrics.HistogramOpts{
			Name:    DurationName,
			Help:    "Duration of one HTTP attempt to the cloud API, until its response arrived or it failed.",
			Buckets: durationBuckets,
		}, []string{"provider", "service", "operation"}),
		throttled: metrics.NewCounterVec(&metrics.CounterOpts{
			Name: ThrottledName,
			Help: "HTTP attempts the cloud API refused as throttled (rate limit exceeded); each is also in " + RequestsName + ".",
		}, []string{"provider", "service", "operation"}),
		snapshot: metrics.NewCounterVec(&metrics.CounterOpts{
			Name: SnapshotLookupsName,
			Help: "Node lookups answered from the backend's instance snapshot (hit) or that needed a cloud call (miss).",
		}, []string{"provider", "result"}),
		remaining: metrics.NewGaugeVec(&metrics.GaugeOpts{
			Name: RateLimitRemainingName,
			Help: "Requests the cloud API last reported left in its rate-limit budget, by budget (e.g. subscription-reads, subscription-writes).",
		}, []string{"provider", "service", "limit"}),
		denied: metrics.NewCounterVec(&metrics.CounterOpts{
			Name: PermissionDeniedName,
			Help: "Calls the cloud refused because the manager's identity lacks a permission, by permission and the features that need it; `multicloud-ccm permissions CLOUD-CONFIG` prints the policy to grant.",
		}, []string{"provider", "permission", "features"}),
	}
}

// Collectors are r's metrics, for registering in a registry.
func (r *Recorder) Collectors() []metrics.Registerable {
	return []metrics.Registerable{r.requests, r.duration, r.throttled, r.snapshot, r.remaining, r.denied}
}

var (
	defaultOnce     sync.Once
	defaultRecorder *Recorder
)

// Default returns the process's Recorder, registered in legacyregistry
// (which the manager serves on /metrics) on first use, exactly once.
func Default() *Recorder {
	defaultOnce.Do(func() {
		defaultRecorder = NewRecorder()
		defaultRecorder.health = cloudhealth.Default
		legacyregistry.MustRegister(defaultRecorder.Collectors()...)
	})
	return defaultRecorder
}

// Observe records one HTTP attempt to the cloud API: provider ("aws"),
// service ("ec2"), operation ("DescribeInstances"), code (an HTTP status
// such as "200", or CodeTimeout/CodeCanceled/CodeError), how long it took,
// and whether the cloud throttled it.
func (r *Recorder) Observe(provider, service, operation, code string, d time.Duration, throttled bool) {
	provider, service, operation, code = bounded(provider), bounded(service), bounded(operation), bounded(code)
	r.requests.WithLabelValues(provider, service, operation, code).Inc()
	r.duration.WithLabelValues(provider, service, operation).Observe(d.Seconds())
	if throttled {
		r.throttled.WithLabelValues(provider, service, operation).Inc()
	}
	if r.health != nil {
		status, _ := strconv.Atoi(code) // 0: no response
		if throttled {
			status = http.StatusTooManyRequests
		}
		r.health.Observe(provider, status, code == CodeCanceled)
	}
}

// PermissionDenied records a call the cloud refused for want of
// permission (named as the cloud's policies name it), needed by features,
// and logs it once per process: what to grant and why.
func (r *Recorder) PermissionDenied(provider, permission, features string) {
	provider, permission, features = bounded(provider), bounded(permission), bounded(features)
	r.denied.WithLabelValues(provider, permission, features).Inc()
	if _, seen := r.logged.LoadOrStore(provider+"\x00"+permission, true); !seen {
		klog.InfoS("The cloud denied a call: the manager's identity lacks a permission; grant it (multicloud-ccm permissions CLOUD-CONFIG prints the whole policy)",
			"provider", provider, "permission", permission, "features", features)
	}
}

// PermissionDenied records on the Default recorder.
func PermissionDenied(provider, permission, features string) {
	Default().PermissionDenied(provider, permission, features)
}

// SnapshotLookup records a node lookup served from the instance snapshot
// (hit) or one that needed a cloud call (miss).
func (r *Recorder) SnapshotLookup(provider string, hit bool) {
	result := "miss"
	if hit {
		result = "hit"
	}
	r.snapshot.WithLabelValues(bounded(provider), result).Inc()
}

// RateLimitRemaining records what the cloud last reported left of a
// rate-limit budget; limit names the budget from a small fixed set (the
// header's name, never a value from it).
func (r *Recorder) RateLimitRemaining(provider, service, limit string, v float64) {
	r.remaining.WithLabelValues(bounded(provider), bounded(service), bounded(limit)).Set(v)
}

// Observe records one HTTP attempt on the Default recorder; see
// Recorder.Observe.
func Observe(provider, service, operation, code string, d time.Duration, throttled bool) {
	Default().Observe(provider, service, operation, code, d, throttled)
}

// SnapshotLookup records an instance-snapshot hit or miss on the Default
// recorder; see Recorder.SnapshotLookup.
func SnapshotLookup(provider string, hit bool) {
	Default().SnapshotLookup(provider, hit)
}

// Code returns the code label for an attempt: the HTTP status when a
// response came back (status > 0), otherwise what err says about why not.
func Code(status int, err error) string {
	if status > 0 {
		return strconv.Itoa(status)
	}
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return CodeTimeout
	case errors.Is(err, context.Canceled):
		return CodeCanceled
	default:
		return CodeError
	}
}

func bounded(v string) string {
	if v == "" {
		return unknown
	}
	return v
}
