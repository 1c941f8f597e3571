// Package gce emulates the slice of Google Compute Engine a
// cloud-controller-manager uses, on the real wire protocol, so the real
// cloud.google.com/go/compute/apiv1 REST clients can talk to it over plain
// HTTP. Import it as cloudsimgce and serve it with cloudsim.Start:
//
//	emu := cloudsimgce.New(cloudsimgce.Config{})
//	srv, _ := cloudsim.Start(emu)
//	c, _ := compute.NewInstancesRESTClient(ctx,
//		option.WithEndpoint(srv.URL()), option.WithoutAuthentication())
//
// Requests are /compute/v1/projects/{project}/{zones/{z}|regions/{r}|global}/{collection}[/{name}[/{method}]]
// and /compute/v1/projects/{project}/aggregated/{collection}; answers are
// the protojson of computepb messages, so they decode exactly as the
// client expects. What clients depend on is kept: selfLinks and
// references as https://www.googleapis.com/compute/v1/ URLs, uint64 IDs,
// pageToken/maxResults paging, list filters (filter.go), Operations that
// stay PENDING and RUNNING for Config.OperationDelay before they are DONE
// (with the change applied only then) and their wait endpoints, and
// Google's JSON error bodies with Compute Engine's reasons (notFound,
// alreadyExists, resourceInUseByAnotherResource, resourceNotReady,
// invalid, rateLimitExceeded, backendError).
//
// Each resource type is a kind in one table (kinds.go): its scope (zonal,
// regional or global), collection, message types and hooks. A new type is
// one more file that registers a kind; the generic REST handlers
// (rest.go) serve it, custom methods go through customAction (actions.go).
// Served: zones and regions; the fixture's network and subnetwork
// (read-only, fixture.go; dual-stack, with a secondary range for pods)
// and more networks the admin API makes (admin_networks.go: any stack
// type, internal or external IPv6); instances (instances.go, made by the
// admin API, with up to 8 interfaces, alias IP ranges and internal or
// external IPv6 ranges, aliasranges.go, changed by
// updateNetworkInterface, instances_nic.go); firewalls, routes and regional addresses; and for load
// balancers, target pools (targetpools.go) and their legacy HTTP health
// checks (httphealthchecks.go; computepb lacks that message, so it is
// built in legacy_messages.go and clients reach it through
// google.golang.org/api/compute/v1), EXTERNAL and INTERNAL forwarding
// rules (forwardingrules.go, their IPs in forwardingrules_ip.go),
// global and regional health checks (healthchecks.go,
// regionhealthchecks.go), INTERNAL regional backend services
// (regionbackendservices.go) and the unmanaged instance groups they
// balance over (instancegroups.go, listInstances in
// instancegroups_list.go).
//
// Credentials work as on Google Cloud (oauth2.go, auth.go,
// serviceaccounts.go): NewServiceAccountKey makes a key file whose
// token_uri is the emulator's TokenPath, golang.org/x/oauth2/google
// trades it there for an access token (operation "oauth2:Token"), and a
// call carrying a token the emulator did not issue, or one that expired,
// is 401 authError. Calls without an Authorization header are served.
//
// Operation names are "compute:<Resource>.<method>" with the API's own
// resource and method names ("compute:Instances.AggregatedList",
// "compute:Firewalls.Insert", "compute:ZoneOperations.Wait"), so call
// counts read like the client's method names.
//
// State is in memory behind one mutex (credentials behind their own);
// IDs are deterministic for a seed.
package gce

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// Config configures an Emulator. Zero values get defaults.
type Config struct {
	// Project is the one project, default "test-project". Calls naming
	// another project are answered 404.
	Project string
	// Region is the one region, default "us-central1".
	Region string
	// Zones are the region's zones, as names ("us-central1-a") or
	// suffixes ("a"), default a, b and c.
	Zones []string
	// ClusterID names the fixture ("<ClusterID>-net", "<ClusterID>-subnet"),
	// default "kubernetes".
	ClusterID string
	// OperationDelay is how long an Operation stays PENDING (the first
	// half) and then RUNNING before it is DONE and its change applied.
	// Default 0: DONE in the answer to the call that started it.
	OperationDelay time.Duration
	// WaitTimeout bounds how long an operations wait call blocks before it
	// answers with the operation as it is, default 2 minutes as on GCE.
	WaitTimeout time.Duration
	// PageSize is the most items a list answers when the caller asks for
	// no maxResults, and the largest maxResults allowed, default 500.
	PageSize int
	// ExternalCIDR is where ephemeral and reserved external addresses
	// come from, default 35.192.0.0/12.
	ExternalCIDR string
	// SubnetCIDR is the fixture subnetwork's range, default 10.128.0.0/20.
	SubnetCIDR string
	// PodCIDR is the fixture subnetwork's secondary range "pods", which
	// instances' alias IP ranges for pods come from, default 10.4.0.0/14
	// (kOps's default cluster CIDR on GCE). It must be IPv4 and not
	// overlap SubnetCIDR.
	PodCIDR string
	// ProjectNumber appears in rate-limit messages, default 123456789012.
	ProjectNumber uint64
	// Seed makes IDs: the same seed and the same calls give the same IDs.
	Seed uint64
	// Now is the clock, default time.Now.
	Now func() time.Time
}

// Defaults of Config.
const (
	DefaultProject      = "test-project"
	DefaultRegion       = "us-central1"
	DefaultPageSize     = 500
	DefaultExternalCIDR = "35.192.0.0/12"
	DefaultSubnetCIDR   = "10.128.0.0/20"
	DefaultPodCIDR      = "10.4.0.0/14"
)

func (c *Config) setDefaults() {
	if c.Project == "" {
		c.Project = DefaultProject
	}
	if c.Region == "" {
		c.Region = DefaultRegion
	}
	if len(c.Zones) == 0 {
		c.Zones = []string{"a", "b", "c"}
	}
	zones := make([]string, len(c.Zones))
	for i, z := range c.Zones {
		if !strings.HasPrefix(z, c.Region+"-") {
			z = c.Region + "-" + z
		}
		zones[i] = z
	}
	c.Zones = zones
	if c.ClusterID == "" {
		c.ClusterID = "kubernetes"
	}
	if c.WaitTimeout <= 0 {
		c.WaitTimeout = 2 * time.Minute
	}
	if c.PageSize <= 0 {
		c.PageSize = DefaultPageSize
	}
	if c.ExternalCIDR == "" {
		c.ExternalCIDR = DefaultExternalCIDR
	}
	if c.SubnetCIDR == "" {
		c.SubnetCIDR = DefaultSubnetCIDR
	}
	if c.PodCIDR == "" {
		c.PodCIDR = DefaultPodCIDR
	}
	if c.ProjectNumber == 0 {
		c.ProjectNumber = 123456789012
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Emulator is the Compute Engine cloud. It implements cloudsim.Cloud and
// cloudsim.Instances.
type Emulator struct {
	cfg   Config
	kinds *kindTable
	admin http.Handler

	mu sync.Mutex
	// seq counts IDs handed out, for deterministic IDs and names.
	seq uint64
	// generation moves with every change to any resource: see Generation.
	generation uint64
	// pending are the operations not yet DONE, in the order they began.
	pending []*operation
	// requestIDs maps a mutation's requestId to its Operation, so a
	// retried call gets the first one's operation back, as on GCE.
	requestIDs map[string]*object
	// failures are operation failures the admin API injected, by
	// operation name.
	failures map[string][]OperationFailure
	// opDelay can be changed at run time (SetOperationDelay).
	opDelay time.Duration
	ips     *ipam
	// refs caches who references whom (refs.go), rebuilt when the
	// generation moves.
	refs refIndex
	// zoneNext spreads zone-less launches over the zones.
	zoneNext int
	// auth holds service accounts and access tokens, behind its own lock
	// so checking a token never waits on the resources.
	auth authState
}

// New returns an emulator holding the fixture (fixture.go) and no
// instances.
func New(cfg Config) *Emulator {
	cfg.setDefaults()
	e := &Emulator{
		cfg:        cfg,
		requestIDs: map[string]*object{},
		failures:   map[string][]OperationFailure{},
		opDelay:    cfg.OperationDelay,
	}
	e.kinds = newKindTable()
	registerKinds(e.kinds)
	e.ips = newIPAM()
	e.admin = e.adminHandler()
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.buildFixture(); err != nil {
		// Only a malformed Config gets here (a CIDR that does not parse).
		panic(fmt.Sprintf("cloudsim/gce: fixture: %v", err))
	}
	return e
}

var (
	_ cloudsim.Cloud     = (*Emulator)(nil)
	_ cloudsim.Instances = (*Emulator)(nil)
)

// Name implements cloudsim.Cloud.
func (e *Emulator) Name() string { return "gce" }

// Config is the emulator's configuration, defaults applied.
func (e *Emulator) Config() Config { return e.cfg }

// SetOperationDelay changes how long operations started from now on take.
func (e *Emulator) SetOperationDelay(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.opDelay = d
}

// Generation changes whenever a resource may have changed, through the
// API or the admin API, so a test reading the same state many times can
// keep what it built until it moves.
func (e *Emulator) Generation() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settle(e.cfg.Now())
	return e.generation
}

// Operation implements cloudsim.Cloud.
func (e *Emulator) Operation(r *http.Request) (string, error) {
	if r.URL.Path == TokenPath {
		return tokenOp, nil
	}
	p, err := parsePath(r.URL.Path)
	if err != nil {
		return "", err
	}
	method, err := p.method(r.Method)
	if err != nil {
		return "", err
	}
	return "compute:" + e.kinds.resourceName(p) + "." + method, nil
}

// Mutating implements cloudsim.Cloud: everything but gets, lists,
// operation waits and token requests.
func (e *Emulator) Mutating(op string) bool {
	if op == tokenOp {
		return false
	}
	_, method, _ := strings.Cut(strings.TrimPrefix(op, "compute:"), ".")
	switch {
	case method == "Wait", method == "AggregatedList",
		strings.HasPrefix(method, "Get"), strings.HasPrefix(method, "List"):
		return false
	}
	return true
}

// Serve implements cloudsim.Cloud: token requests (oauth2.go), and API
// calls with valid credentials or none (auth.go).
func (e *Emulator) Serve(w http.ResponseWriter, r *http.Request, op string) {
	switch {
	case op == tokenOp:
		e.serveToken(w, r)
	case !e.bearerOK(r):
		writeAuthError(w)
	default:
		e.serveREST(w, r, op)
	}
}

// WriteThrottle implements cloudsim.Cloud with Compute Engine's answer to
// a project over a rate quota: 403 rateLimitExceeded in the usageLimits
// domain, for reads and writes alike (the rate quota documentation names
// no other code). The Go client retries neither it nor a 429 by default,
// only 503 and 504 on reads, so a backend must back off on its own.
func (e *Emulator) WriteThrottle(w http.ResponseWriter, r *http.Request, op string) {
	if op == tokenOp {
		writeOAuthError(w, &oauthError{Status: http.StatusTooManyRequests, Code: "rate_limit_exceeded", Description: "Rate limit exceeded."})
		return
	}
	writeError(w, errRateLimit(op, e.Mutating(op), e.cfg.ProjectNumber))
}

// WriteServerError implements cloudsim.Cloud with 503 backendError, which
// the Go client retries for reads.
func (e *Emulator) WriteServerError(w http.ResponseWriter, r *http.Request, op string) {
	if op == tokenOp {
		writeOAuthError(w, &oauthError{Status: http.StatusServiceUnavailable, Code: "internal_failure", Description: "Backend Error"})
		return
	}
	writeError(w, errBackend(e.cfg.Now()))
}

// Admin implements cloudsim.Cloud.
func (e *Emulator) Admin() http.Handler { return e.admin }
