package gce

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	compute "cloud.google.com/go/compute/apiv1"
	"github.com/googleapis/gax-go/v2"
	"github.com/googleapis/gax-go/v2/apierror"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	computev1 "google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
	"k8s.io/klog/v2"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/cloudmetrics"
	decl "github.com/multicloud-ccm/multicloud-ccm/providers/permissions"
)

// ProviderName is the backend's name in cloud-configs and providerIDs.
const ProviderName = "gce"

// computeScope is the OAuth scope the backend's calls need.
const computeScope = "https://www.googleapis.com/auth/compute"

// clients are the Compute Engine REST clients the backend uses, sharing
// one authenticated, metered HTTP client.
type clients struct {
	instances       *compute.InstancesClient
	zones           *compute.ZonesClient
	addresses       *compute.AddressesClient
	forwardingRules *compute.ForwardingRulesClient
	targetPools     *compute.TargetPoolsClient
	// httpHealthChecks are the legacy HTTP health checks, the only kind
	// a target pool takes; cloud.google.com/go/compute has no client for
	// them, so they go through google.golang.org/api/compute/v1.
	httpHealthChecks *computev1.HttpHealthChecksService
	firewalls        *compute.FirewallsClient
	globalOperations *compute.GlobalOperationsClient
	regionOperations *compute.RegionOperationsClient
	routes           *compute.RoutesClient
	// The internal passthrough load balancer's parts.
	instanceGroups     *compute.InstanceGroupsClient
	regionHealthChecks *compute.RegionHealthChecksClient
	// healthChecks are the global health checks internal load balancers
	// use, as upstream's do.
	healthChecks          *compute.HealthChecksClient
	regionBackendServices *compute.RegionBackendServicesClient
	// subnetworks are read for an internal IPv6 Service's subnetwork.
	subnetworks *compute.SubnetworksClient
	// retry is the call option every call carries: the SDK's defaults
	// retry reads on 503/504 only, never a throttled call.
	retry gax.CallOption
}

// clientSetup is how the clients reach Compute Engine, before any call.
type clientSetup struct {
	endpoint string
	http     *http.Client
	retry    *retryPolicy
}

// newClientSetup builds the HTTP stack: the credentials' token source,
// the per-attempt metrics and the request timeout.
func newClientSetup(ctx context.Context, s *Section, rec *cloudmetrics.Recorder) (*clientSetup, error) {
	if rec == nil {
		rec = cloudmetrics.Default()
	}
	base := &meteredTransport{rec: rec, next: http.DefaultTransport.(*http.Transport).Clone(), timeout: s.RequestTimeout}
	// Token fetches go through the same metered transport (operation
	// oauth2 "token"), so a failing token endpoint shows on /metrics.
	ts, err := tokenSource(context.WithValue(ctx, oauth2.HTTPClient, &http.Client{Transport: base}), s)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Transport: &oauth2.Transport{Source: ts, Base: base}}
	return &clientSetup{endpoint: s.Endpoint, http: hc, retry: newRetryPolicy(s.MaxAttempts)}, nil
}

// tokenSource is the credentials: the service account key of the
// section, else Application Default Credentials. Errors name where the
// credentials were looked for, never their content.
func tokenSource(ctx context.Context, s *Section) (oauth2.TokenSource, error) {
	var key []byte
	switch {
	case s.CredentialsJSON != "":
		key = []byte(s.CredentialsJSON)
	case s.CredentialsFile != "":
		b, err := os.ReadFile(s.CredentialsFile)
		if err != nil {
			return nil, fmt.Errorf("gce.credentialsFile: %w", err)
		}
		if problem := keyProblem(b); problem != "" {
			return nil, fmt.Errorf("gce.credentialsFile %s: %s", s.CredentialsFile, problem)
		}
		key = b
	}
	if key != nil {
		//nolint:staticcheck // the key's type was checked: a service account key, not arbitrary JSON.
		creds, err := google.CredentialsFromJSON(ctx, key, computeScope)
		if err != nil {
			return nil, errors.New("gce: the service account key could not be used (check client_email, private_key and token_uri)")
		}
		return creds.TokenSource, nil
	}
	creds, err := google.FindDefaultCredentials(ctx, computeScope)
	if err != nil {
		return nil, fmt.Errorf("gce: no credentials: set credentialsFile, or give the manager Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, workload identity or the instance's service account): %w", err)
	}
	return creds.TokenSource, nil
}

// newClients builds the REST clients and checks the credentials with
// one token fetch, so wrong credentials stop the manager at start. A
// token endpoint that is throttled or failing (429, 408, 5xx) says
// nothing of the credentials, and stopping on it would keep a restarted
// manager down for as long as it lasts: the manager then starts without
// a first token, which its first call fetches again.
func newClients(ctx context.Context, setup *clientSetup) (*clients, error) {
	opts := []option.ClientOption{option.WithHTTPClient(setup.http)}
	if setup.endpoint != "" {
		opts = append(opts, option.WithEndpoint(setup.endpoint))
	}
	c := &clients{retry: gax.WithRetry(setup.retry.retryer)}
	var err error
	if c.instances, err = compute.NewInstancesRESTClient(ctx, opts...); err != nil {
		return nil, err
	}
	if c.zones, err = compute.NewZonesRESTClient(ctx, opts...); err != nil {
		return nil, err
	}
	if c.addresses, err = compute.NewAddressesRESTClient(ctx, opts...); err != nil {
		return nil, err
	}
	if c.forwardingRules, err = compute.NewForwardingRulesRESTClient(ctx, opts...); err != nil {
		return nil, err
	}
	if c.targetPools, err = compute.NewTargetPoolsRESTClient(ctx, opts...); err != nil {
		return nil, err
	}
	legacyOpts := []option.ClientOption{option.WithHTTPClient(setup.http)}
	if setup.endpoint != "" {
		// The discovery client's endpoint includes the API's base path.
		legacyOpts = append(legacyOpts, option.WithEndpoint(strings.TrimSuffix(setup.endpoint, "/")+"/compute/v1/"))
	}
	legacy, err := computev1.NewService(ctx, legacyOpts...)
	if err != nil {
		return nil, err
	}
	c.httpHealthChecks = computev1.NewHttpHealthChecksService(legacy)
	if c.firewalls, err = compute.NewFirewallsRESTClient(ctx, opts...); err != nil {
		return nil, err
	}
	if c.globalOperations, err = compute.NewGlobalOperationsRESTClient(ctx, opts...); err != nil {
		return nil, err
	}
	if c.regionOperations, err = compute.NewRegionOperationsRESTClient(ctx, opts...); err != nil {
		return nil, err
	}
	if c.routes, err = compute.NewRoutesRESTClient(ctx, opts...); err != nil {
		return nil, err
	}
	if c.instanceGroups, err = compute.NewInstanceGroupsRESTClient(ctx, opts...); err != nil {
		return nil, err
	}
	if c.regionHealthChecks, err = compute.NewRegionHealthChecksRESTClient(ctx, opts...); err != nil {
		return nil, err
	}
	if c.healthChecks, err = compute.NewHealthChecksRESTClient(ctx, opts...); err != nil {
		return nil, err
	}
	if c.regionBackendServices, err = compute.NewRegionBackendServicesRESTClient(ctx, opts...); err != nil {
		return nil, err
	}
	if c.subnetworks, err = compute.NewSubnetworksRESTClient(ctx, opts...); err != nil {
		return nil, err
	}
	if tr, ok := setup.http.Transport.(*oauth2.Transport); ok {
		if _, err := tr.Source.Token(); err != nil {
			err = fmt.Errorf("gce: getting an access token: %w", err)
			if !transientTokenError(err) {
				return nil, err
			}
			klog.FromContext(ctx).Error(err, "The token endpoint is busy or failing; starting without a first token, which the first call fetches")
		}
	}
	return c, nil
}

// meteredTransport records every HTTP attempt under the shared metric
// names and bounds each attempt by the request timeout.
type meteredTransport struct {
	rec     *cloudmetrics.Recorder
	next    http.RoundTripper
	timeout time.Duration
}

func (t *meteredTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	service, op := computeOperation(r.Method, r.URL.Path)
	ctx, cancel := context.WithCancel(r.Context())
	if t.timeout > 0 {
		ctx, cancel = context.WithTimeout(r.Context(), t.timeout)
	}
	r = r.WithContext(ctx)
	start := time.Now()
	resp, err := t.next.RoundTrip(r)
	// A 403's body says whether it is throttling or a missing permission
	// (clients_denied.go).
	body := forbiddenBody(resp)
	t.observe(service, op, resp, err, time.Since(start), body)
	if err != nil {
		cancel()
		return nil, err
	}
	if derr := deniedError(resp, body, t.rec); derr != nil {
		// A denial is returned as the call's error, naming the permission
		// and its features.
		cancel()
		return nil, derr
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

func (t *meteredTransport) observe(service, op string, resp *http.Response, err error, d time.Duration, forbidden []byte) {
	status := 0
	if resp != nil {
		status = resp.StatusCode
	}
	// 429 is always throttling; 403 only with reason rateLimitExceeded or
	// userRateLimitExceeded, which is in the body.
	throttled := status == http.StatusTooManyRequests || status == http.StatusForbidden && rateLimited(forbidden)
	t.rec.Observe(ProviderName, service, op, cloudmetrics.Code(status, err), d, throttled)
}

// cancelOnClose ends an attempt's timeout when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// computeOperation names a Compute Engine request by collection and
// method, never by a resource's name: GET .../zones/z/instances is
// (compute, "instances.list"), POST .../regions/r/forwardingRules is
// "forwardingRules.insert", POST .../targetPools/tp/addInstance is
// "targetPools.addInstance", GET .../aggregated/instances is
// "instances.aggregatedList", a wait on an operation "zoneOperations.wait".
func computeOperation(method, path string) (service, op string) {
	_, rest, ok := strings.Cut(path, "/projects/")
	if !ok {
		if strings.Contains(path, "token") {
			return "oauth2", "token"
		}
		return "compute", "other"
	}
	segs := strings.Split(strings.Trim(rest, "/"), "/")[1:] // drop the project
	scope := ""
	if len(segs) >= 2 && (segs[0] == "zones" || segs[0] == "regions") {
		scope = segs[0]
		segs = segs[2:]
	} else if len(segs) >= 1 && segs[0] == "global" {
		scope = "global"
		segs = segs[1:]
	}
	if len(segs) >= 2 && segs[0] == "aggregated" {
		return "compute", segs[1] + ".aggregatedList"
	}
	if len(segs) == 0 {
		// GET .../zones/z or .../regions/r itself.
		if scope != "" && scope != "global" {
			return "compute", scope + ".get"
		}
		return "compute", "projects.get"
	}
	coll := segs[0]
	if coll == "operations" {
		switch scope {
		case "zones":
			coll = "zoneOperations"
		case "regions":
			coll = "regionOperations"
		default:
			coll = "globalOperations"
		}
	}
	switch {
	case len(segs) == 1 && method == http.MethodGet:
		return "compute", coll + ".list"
	case len(segs) == 1 && method == http.MethodPost:
		return "compute", coll + ".insert"
	case len(segs) == 2 && method == http.MethodGet:
		return "compute", coll + ".get"
	case len(segs) == 2 && method == http.MethodDelete:
		return "compute", coll + ".delete"
	case len(segs) == 2 && method == http.MethodPatch:
		return "compute", coll + ".patch"
	case len(segs) == 2 && method == http.MethodPut:
		return "compute", coll + ".update"
	case len(segs) >= 3:
		return "compute", coll + "." + segs[len(segs)-1]
	}
	return "compute", coll + "." + strings.ToLower(method)
}

// retryPolicy retries throttled and unavailable calls with backoff, up to
// maxAttempts in all: 429, 403 rateLimitExceeded/userRateLimitExceeded,
// 500, 502, 503 and 504.
type retryPolicy struct {
	maxAttempts int
	backoff     gax.Backoff
}

func newRetryPolicy(maxAttempts int) *retryPolicy {
	return &retryPolicy{maxAttempts: maxAttempts, backoff: gax.Backoff{Initial: 200 * time.Millisecond, Max: 30 * time.Second, Multiplier: 2}}
}

// retryer is a fresh gax.Retryer per call.
func (p *retryPolicy) retryer() gax.Retryer {
	return &countingRetryer{p: p, backoff: p.backoff}
}

type countingRetryer struct {
	p        *retryPolicy
	backoff  gax.Backoff
	attempts int
}

func (r *countingRetryer) Retry(err error) (time.Duration, bool) {
	r.attempts++
	if r.attempts >= r.p.maxAttempts || !retryable(err) {
		return 0, false
	}
	return r.backoff.Pause(), true
}

// retryable says a call failed in a way that trying again may fix.
func retryable(err error) bool {
	code, reason := errorCode(err)
	switch code {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	case http.StatusForbidden:
		return reason == "rateLimitExceeded" || reason == "userRateLimitExceeded"
	}
	return false
}

// transientTokenError says the token endpoint answered with a status
// that is no verdict on the credentials: throttled (429), timed out
// (408) or failing (5xx). A wrong or revoked key is a 400 or 401
// (invalid_grant), and no answer at all (a wrong token_uri) stays an
// error too.
func transientTokenError(err error) bool {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.Response == nil {
		return false
	}
	code := re.Response.StatusCode
	return code == http.StatusTooManyRequests || code == http.StatusRequestTimeout || code >= 500
}

// errorCode is a Compute Engine error's HTTP status and first reason.
func errorCode(err error) (int, string) {
	var denied *decl.DeniedError
	if errors.As(err, &denied) {
		// A denial the transport recognised (clients_denied.go).
		return http.StatusForbidden, "forbidden"
	}
	var gerr *googleapi.Error
	if errors.As(err, &gerr) {
		reason := ""
		if len(gerr.Errors) > 0 {
			reason = gerr.Errors[0].Reason
		}
		return gerr.Code, reason
	}
	var aerr *apierror.APIError
	if errors.As(err, &aerr) {
		return aerr.HTTPCode(), aerr.Reason()
	}
	return 0, ""
}

// isNotFound is Compute Engine's definitive "no such resource": 404.
func isNotFound(err error) bool {
	code, _ := errorCode(err)
	return code == http.StatusNotFound
}
