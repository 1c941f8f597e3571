// Package azure emulates the slice of Azure a cloud-controller-manager
// uses, on the real wire protocols, so the real azidentity, armcompute and
// armnetwork clients can talk to it: an Azure AD (Entra ID) token endpoint
// and Azure Resource Manager JSON for Microsoft.Compute (virtual machines
// with their instance view, availability sets, scale sets and their VMs) and
// Microsoft.Network (network interfaces, public IPs, load balancers,
// network security groups, route tables, virtual networks and subnets).
// Import it as cloudsimazure and serve it with cloudsim.Start:
//
//	emu := cloudsimazure.New(cloudsimazure.Config{})
//	srv, _ := cloudsim.Start(emu) // https: azcore refuses bearer tokens over http
//	// trust emu.CAPEM(); authority host srv.URL()+"/", ARM endpoint srv.URL()
//
// ARM's behaviour that clients depend on is kept (arm.go): api-version
// checks per resource type, the error envelope {"error":{"code","message"}}
// with ARM's and the resource providers' own codes, ETags with If-Match
// and If-None-Match (412 PreconditionFailed), long-running PUT, PATCH,
// DELETE and POST actions (Azure-AsyncOperation and Location headers,
// provisioningState Updating or Deleting until the operation completes
// after Config.OperationDelay), nextLink paging,
// x-ms-ratelimit-remaining-* headers, and 429 throttling with
// Retry-After.
//
// Operation names are "<service>:<operationId>" with the REST
// specification's operationIds ("network:LoadBalancers_CreateOrUpdate",
// "compute:VirtualMachines_ListAll", "aad:Token"), so call counts read
// like the SDK's method names.
//
// State is in memory behind one mutex; IDs are deterministic for a seed.
package azure

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// Config configures an Emulator. Zero values get defaults.
type Config struct {
	// TenantID is the Azure AD tenant tokens are issued for, default
	// 72f988bf-0000-0000-0000-000000000001.
	TenantID string
	// SubscriptionID is the one subscription, default
	// 00000000-0000-0000-0000-000000000001.
	SubscriptionID string
	// Location is the region, default eastus.
	Location string
	// Zones are the location's availability zones, default 1, 2 and 3.
	Zones []string
	// ClusterID names the fixture (resource group, virtual network, ...),
	// default "kubernetes".
	ClusterID string
	// DualStack gives the fixture's virtual network and node subnet an
	// IPv6 prefix besides their IPv4 one (FixtureVNetCIDRv6,
	// FixtureSubnetCIDRv6), and every VM and scale set instance the
	// admin API launches a second IP configuration, "ipconfig-v6", with a
	// private IPv6 address (VMInfo.PrivateIPv6).
	DualStack bool
	// ClientID and ClientSecret are the one service principal's
	// credentials; defaults are fixed test values (Fixture reports them).
	ClientID     string
	ClientSecret string
	// OperationDelay is how long a long-running PUT or DELETE stays in
	// progress (provisioningState Updating or Deleting, the async
	// operation InProgress) before it completes. Default 0: complete at
	// the first poll.
	OperationDelay time.Duration
	// RetryAfter is the Retry-After, in whole seconds, of long-running
	// operations in progress and of throttled calls, default 1.
	RetryAfter int
	// PageSize is the most items one list response holds before a
	// nextLink, default 100.
	PageSize int
	// TokenLifetime is how long access tokens live, default one hour.
	TokenLifetime time.Duration
	// Seed makes IDs: the same seed and the same calls give the same IDs.
	Seed uint64
	// Now is the clock, default time.Now.
	Now func() time.Time
}

// Defaults of Config.
const (
	DefaultTenantID       = "72f988bf-0000-0000-0000-000000000001"
	DefaultSubscriptionID = "00000000-0000-0000-0000-000000000001"
	DefaultLocation       = "eastus"
	DefaultClientID       = "5d1e4a47-0000-0000-0000-0000000000c1"
	DefaultClientSecret   = "cloudsim-client-secret" //nolint:gosec // a test credential
)

func (c *Config) setDefaults() {
	if c.TenantID == "" {
		c.TenantID = DefaultTenantID
	}
	if c.SubscriptionID == "" {
		c.SubscriptionID = DefaultSubscriptionID
	}
	if c.Location == "" {
		c.Location = DefaultLocation
	}
	if len(c.Zones) == 0 {
		c.Zones = []string{"1", "2", "3"}
	}
	c.Zones = append([]string(nil), c.Zones...)
	if c.ClusterID == "" {
		c.ClusterID = "kubernetes"
	}
	if c.ClientID == "" {
		c.ClientID = DefaultClientID
	}
	if c.ClientSecret == "" {
		c.ClientSecret = DefaultClientSecret
	}
	if c.RetryAfter <= 0 {
		c.RetryAfter = 1
	}
	if c.PageSize <= 0 {
		c.PageSize = 100
	}
	if c.TokenLifetime <= 0 {
		c.TokenLifetime = time.Hour
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Emulator is the Azure cloud. It implements cloudsim.Cloud,
// cloudsim.TLSCloud, cloudsim.Instances and cloudsim.Authorizer
// (authz.go).
type Emulator struct {
	cfg   Config
	certs *certs
	kinds *kindTable

	mu sync.Mutex
	// groups are the resource groups by lower-cased name, holding their
	// names as created.
	groups map[string]string
	// objs holds every resource by lower-cased ID.
	objs map[string]*object
	// ops are the long-running operations by ID.
	ops map[string]*asyncOp
	// tokens are the access tokens issued, with their expiry.
	tokens map[string]time.Time
	// seq counts IDs handed out, for deterministic names.
	seq uint64
	// requests counts ARM reads and writes for the rate-limit headers.
	reads, writes int
	// generation moves with every ARM write and every resource added or
	// removed (admin calls included): see Generation.
	generation uint64
	// opDelay can be changed at run time (SetOperationDelay).
	opDelay time.Duration
	// aad holds Azure AD's registrations (aad.go), comp the compute
	// admin's counters (admin.go).
	aad  aadState
	comp computeState

	admin http.Handler

	// hooks are tests' BeforeNext functions and the answer counts
	// (hooks.go), behind their own lock: a hook may call the emulator.
	hooks hooks
}

// New returns an emulator holding the fixture (fixture.go) and no
// virtual machines.
func New(cfg Config) *Emulator {
	cfg.setDefaults()
	e := &Emulator{
		cfg:     cfg,
		certs:   newCerts(),
		groups:  map[string]string{},
		objs:    map[string]*object{},
		ops:     map[string]*asyncOp{},
		tokens:  map[string]time.Time{},
		opDelay: cfg.OperationDelay,
	}
	e.kinds = newKindTable()
	registerCompute(e.kinds)
	registerNetwork(e.kinds)
	e.admin = e.adminHandler()
	e.mu.Lock()
	e.buildFixture()
	e.mu.Unlock()
	return e
}

var (
	_ cloudsim.Cloud     = (*Emulator)(nil)
	_ cloudsim.TLSCloud  = (*Emulator)(nil)
	_ cloudsim.Instances = (*Emulator)(nil)
)

// Name implements cloudsim.Cloud.
func (e *Emulator) Name() string { return "azure" }

// Config is the emulator's configuration, defaults applied.
func (e *Emulator) Config() Config { return e.cfg }

// SetOperationDelay changes how long long-running operations take from
// now on.
// Generation changes whenever a resource may have changed: every ARM
// write and every resource the admin API adds or removes. A test reading
// the same state many times (a benchmark polling 200 Services) can keep
// what it built from it until the generation moves.
func (e *Emulator) Generation() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.generation
}

func (e *Emulator) SetOperationDelay(d time.Duration) {
	e.mu.Lock()
	e.opDelay = d
	e.mu.Unlock()
}

// ServerTLS implements cloudsim.TLSCloud: a certificate for 127.0.0.1 and
// localhost signed by the emulator's own CA.
func (e *Emulator) ServerTLS() *tls.Config { return e.certs.serverTLS() }

// CAPEM is the CA certificate clients must trust, PEM-encoded.
func (e *Emulator) CAPEM() []byte { return e.certs.caPEM }

// Operation implements cloudsim.Cloud.
func (e *Emulator) Operation(r *http.Request) (string, error) {
	if op, ok := aadOperation(r); ok {
		return op, nil
	}
	p, err := parseARMPath(r.URL.Path)
	if err != nil {
		return "", err
	}
	return e.kinds.operation(r.Method, p), nil
}

// Mutating implements cloudsim.Cloud: PUTs, DELETEs and POST actions.
func (e *Emulator) Mutating(op string) bool {
	for _, suffix := range []string{"_CreateOrUpdate", "_Delete", "_UpdateTags", "_Update", "_UpdateInstances", "_Start", "_PowerOff", "_Deallocate", "_Restart"} {
		if strings.HasSuffix(op, suffix) {
			return true
		}
	}
	return false
}

// Serve implements cloudsim.Cloud.
func (e *Emulator) Serve(w http.ResponseWriter, r *http.Request, op string) {
	e.serveHooked(w, r, op, e.serve)
}

func (e *Emulator) serve(w http.ResponseWriter, r *http.Request, op string) {
	if strings.HasPrefix(op, "aad:") {
		e.serveAAD(w, r, op)
		return
	}
	e.serveARM(w, r, op)
}

// WriteThrottle implements cloudsim.Cloud with ARM's subscription-level
// throttling answer: 429 SubscriptionRequestsThrottled with Retry-After
// (or, for Azure AD, 429 with its own error body).
func (e *Emulator) WriteThrottle(w http.ResponseWriter, r *http.Request, op string) {
	w.Header().Set("Retry-After", fmt.Sprint(e.cfg.RetryAfter))
	if strings.HasPrefix(op, "aad:") {
		writeAADError(w, http.StatusTooManyRequests, "temporarily_unavailable", 50196, "The server is temporarily unavailable; too many requests.")
		return
	}
	kind := "reads"
	if e.Mutating(op) {
		kind = "writes"
	}
	writeARMError(w, &armError{
		Status: http.StatusTooManyRequests, Code: "SubscriptionRequestsThrottled",
		Message: fmt.Sprintf("Number of '%s' requests for subscription '%s' actor '%s' exceeded. Please try again after '%d' seconds after additional tokens are available. Refer to https://aka.ms/arm-throttling for additional information.",
			strings.TrimSuffix(kind, "s"), e.cfg.SubscriptionID, e.cfg.ClientID, e.cfg.RetryAfter),
	})
}

// WriteServerError implements cloudsim.Cloud with ARM's 500.
func (e *Emulator) WriteServerError(w http.ResponseWriter, r *http.Request, op string) {
	if strings.HasPrefix(op, "aad:") {
		writeAADError(w, http.StatusInternalServerError, "server_error", 50000, "There was an error issuing a token.")
		return
	}
	writeARMError(w, &armError{Status: http.StatusInternalServerError, Code: "InternalServerError",
		Message: "Encountered internal server error. Diagnostic information: timestamp '" + e.cfg.Now().UTC().Format("20060102T150405Z") + "'."})
}

// Admin implements cloudsim.Cloud.
func (e *Emulator) Admin() http.Handler { return e.admin }
