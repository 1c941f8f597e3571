// Package openstack emulates the slice of OpenStack a
// cloud-controller-manager uses, on the real wire protocols, so the real
// gophercloud clients can talk to it. This part covers Keystone v3
// (identity) and Nova (compute v2.1); Neutron and Octavia plug into the
// same service table later. Import it as cloudsimopenstack and serve it
// with cloudsim.Start:
//
//	emu := cloudsimopenstack.NewDefault(cloudsimopenstack.Config{})
//	srv, _ := cloudsim.Start(emu)
//	fx := emu.Fixture()
//	// authenticate gophercloud against srv.URL()+"/identity/v3" with
//	// fx.Username/fx.Password (or fx.AppCredID/fx.AppCredSecret)
//
// Every service shares the one base URL under its own path prefix, as
// devstack lays them out: Keystone at /identity, Nova at /compute (API
// root /compute/v2.1); the token catalog points at <base>/network and
// <base>/load-balancer for the services to come. Links, catalog URLs and
// version documents are built from the request's Host, as the real
// services do without a configured public endpoint, so the emulator works
// in-process and standalone alike.
//
// Operation names are "<service>:<CamelCaseName>" ("keystone:CreateToken",
// "nova:ListServersDetail"); requests to paths a service does not
// implement are "<service>:Unsupported" and answered with that service's
// 404. Every call but the version documents and Keystone's token issue
// must carry a valid, unexpired X-Auth-Token, else it is answered 401:
// by Keystone itself for Keystone calls, and for the other services the
// way keystonemiddleware's auth_token answers in front of them.
//
// State is in memory behind one mutex; IDs are deterministic for a seed.
package openstack

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// Config configures an Emulator. Zero values get defaults.
type Config struct {
	// Region is the Keystone region of every catalog endpoint, default
	// "RegionOne".
	Region string
	// Zones are Nova availability zones, default nova, az-1 and az-2.
	Zones []string
	// ClusterID names the fixture's node network ("<ClusterID>-nodes"),
	// default "kubernetes".
	ClusterID string
	// TokenLifetime is how long Keystone tokens live ([token] expiration),
	// default one hour.
	TokenLifetime time.Duration
	// MaxLimit is Nova's [api] max_limit, the most items a list returns
	// per page, default 1000.
	MaxLimit int
	// RetryAfter is the Retry-After (whole seconds) of throttled calls,
	// default 1.
	RetryAfter int
	// LegacyOverLimit throttles with the legacy 413 overLimit answer
	// instead of 429. gophercloud's RetryBackoffFunc only sees 429s.
	LegacyOverLimit bool
	// NodeCIDR is the fixture's node subnet, default 10.0.0.0/16.
	NodeCIDR string
	// NodeIPv6CIDR, when set, gives the node network a second, IPv6
	// subnet (fixture SubnetIPv6ID), with NodeIPv6Mode as both its
	// ipv6_address_mode and ipv6_ra_mode ("" none: stateful from the
	// pool, slaac, dhcpv6-stateful or dhcpv6-stateless), and the router
	// an interface on it (its gateway, ::1). Every server port then has
	// an IPv4 and an IPv6 fixed IP: SLAAC and DHCPv6-stateless ones by
	// Neutron itself (EUI-64), stateful ones as a launch asks for both.
	NodeIPv6CIDR string
	NodeIPv6Mode string
	// FloatingCIDR is the external network's subnet that floating IPs come
	// from, default 172.24.0.0/16.
	FloatingCIDR string
	// NoExternalNetwork leaves the external network out of the fixture,
	// as in a cloud with project networks only: the router has no
	// gateway, and servers can get no floating IP.
	NoExternalNetwork bool
	// Seed makes IDs: the same seed and the same calls give the same IDs.
	Seed uint64
	// Now is the clock (token expiry, timestamps), default time.Now.
	Now func() time.Time
	// Neutron and Octavia configure those services (neutron.go,
	// octavia.go).
	Neutron NeutronConfig
	Octavia OctaviaConfig
}

func (c *Config) setDefaults() {
	if c.Region == "" {
		c.Region = "RegionOne"
	}
	if len(c.Zones) == 0 {
		c.Zones = []string{"nova", "az-1", "az-2"}
	}
	c.Zones = append([]string(nil), c.Zones...)
	if c.ClusterID == "" {
		c.ClusterID = "kubernetes"
	}
	if c.TokenLifetime <= 0 {
		c.TokenLifetime = time.Hour
	}
	if c.MaxLimit <= 0 {
		c.MaxLimit = 1000
	}
	if c.RetryAfter <= 0 {
		c.RetryAfter = 1
	}
	if c.NodeCIDR == "" {
		c.NodeCIDR = "10.0.0.0/16"
	}
	if c.FloatingCIDR == "" {
		c.FloatingCIDR = "172.24.0.0/16"
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	c.Neutron.setDefaults()
	c.Octavia.setDefaults()
}

// Emulator is the OpenStack cloud. It implements cloudsim.Cloud and
// cloudsim.Instances.
type Emulator struct {
	cfg      Config
	services []service

	mu  sync.Mutex
	ids idGen
	seq uint64 // creation sequence: Nova's "id" column, the tiebreak of every sort

	// Keystone.
	domains  *cloudsim.Store[*domain]
	projects *cloudsim.Store[*project]
	users    *cloudsim.Store[*user]
	appCreds *cloudsim.Store[*appCred]
	roles    map[string]string // role name -> ID
	// serviceIDs and endpointIDs identify the catalog's entries.
	serviceIDs, endpointIDs []string
	tokens                  map[string]*token // never listed anywhere

	// Networking, owned by Neutron once it is emulated; Nova reads it
	// for server addresses.
	networks    *cloudsim.Store[*network]
	subnets     *cloudsim.Store[*subnet]
	ports       *cloudsim.Store[*port]
	floatingIPs *cloudsim.Store[*floatingIP]
	fipByPort   map[string]*floatingIP // associated floating IPs by port ID

	// Nova.
	flavors *cloudsim.Store[*flavor]
	images  *cloudsim.Store[*image]
	servers *cloudsim.Store[*server]
	// deleted keeps deleted servers, as Nova soft-deletes rows: they
	// still work as list markers and show up (status DELETED) in
	// changes-since listings, but nowhere else.
	deleted   map[string]*server
	launchSeq int // round-robin over zones for launches without one

	// neutron and octavia hold those services' own state (routers,
	// security groups; load balancers and their children).
	neutron neutronState
	octavia octaviaState

	fixture Fixture
}

var (
	_ cloudsim.Cloud     = (*Emulator)(nil)
	_ cloudsim.Instances = (*Emulator)(nil)
)

// New returns an emulator with its Keystone roles and nothing else: no
// users, projects, networks or flavors. Most tests want NewDefault.
func New(cfg Config) *Emulator {
	cfg.setDefaults()
	e := &Emulator{
		cfg:         cfg,
		ids:         newIDGen(cfg.Seed),
		domains:     cloudsim.NewStore("keystone:domain", func(d *domain) string { return d.id }),
		projects:    cloudsim.NewStore("keystone:project", func(p *project) string { return p.id }),
		users:       cloudsim.NewStore("keystone:user", func(u *user) string { return u.id }),
		appCreds:    cloudsim.NewStore("keystone:application-credential", func(a *appCred) string { return a.id }),
		roles:       map[string]string{},
		tokens:      map[string]*token{},
		networks:    cloudsim.NewStore("neutron:network", func(n *network) string { return n.id }),
		subnets:     cloudsim.NewStore("neutron:subnet", func(s *subnet) string { return s.id }),
		ports:       cloudsim.NewStore("neutron:port", func(p *port) string { return p.id }),
		floatingIPs: cloudsim.NewStore("neutron:floatingip", func(f *floatingIP) string { return f.id }),
		fipByPort:   map[string]*floatingIP{},
		flavors:     cloudsim.NewStore("nova:flavor", func(f *flavor) string { return f.id }),
		images:      cloudsim.NewStore("glance:image", func(i *image) string { return i.id }),
		servers:     cloudsim.NewStore("nova:server", func(s *server) string { return s.id }),
		deleted:     map[string]*server{},
	}
	// Keystone's bootstrap roles; "member" implies "reader".
	for _, r := range []string{"admin", "member", "reader"} {
		e.roles[r] = e.ids.hex32()
	}
	for range catalog {
		e.serviceIDs = append(e.serviceIDs, e.ids.hex32())
		for range interfaces {
			e.endpointIDs = append(e.endpointIDs, e.ids.hex32())
		}
	}
	e.initNeutron()
	e.initOctavia()
	e.services = []service{keystoneService{e}, novaService{e}, neutronService{e}, octaviaService{e}}
	return e
}

// Region is the emulated region.
func (e *Emulator) Region() string { return e.cfg.Region }

// Zones are the Nova availability zones.
func (e *Emulator) Zones() []string { return append([]string(nil), e.cfg.Zones...) }

func (e *Emulator) now() time.Time { return e.cfg.Now().UTC() }

// nextSeq returns the next creation sequence number. Callers hold e.mu.
func (e *Emulator) nextSeq() uint64 {
	e.seq++
	return e.seq
}

// Name implements cloudsim.Cloud.
func (e *Emulator) Name() string { return "openstack" }

// service is one OpenStack API served under a path prefix of the shared
// base URL. Neutron and Octavia add themselves to New's table. Note that
// gophercloud's NewNetworkV2 and NewLoadBalancerV2 GET their unversioned
// catalog endpoint (<base>/network/, <base>/load-balancer/) for version
// discovery before the first call, so those services must answer it.
type service interface {
	// name prefixes the service's operation names ("nova").
	name() string
	// prefix is the path the service is mounted at ("/compute").
	prefix() string
	// route names the operation for r, whose path below prefix is rest
	// ("" or starting with "/"), and returns what serves it.
	route(r *http.Request, rest string) route
	// writeUnauthenticated answers a call that needs a token and has no
	// valid one (keystonemiddleware's 401 for every service but Keystone).
	writeUnauthenticated(w http.ResponseWriter, r *http.Request)
	// writeThrottle and writeServerError answer with the service's own
	// rate-limit and 5xx errors.
	writeThrottle(w http.ResponseWriter, r *http.Request, rt route)
	writeServerError(w http.ResponseWriter, r *http.Request, rt route)
}

// route is one operation of a service.
type route struct {
	op string
	// public operations need no token (version documents, token issue).
	public bool
	serve  func(w http.ResponseWriter, r *http.Request)
}

// find returns the service whose prefix r's path is under, and the rest
// of the path.
func (e *Emulator) find(r *http.Request) (service, string, bool) {
	p := r.URL.Path
	for _, s := range e.services {
		if rest, ok := strings.CutPrefix(p, s.prefix()); ok && (rest == "" || rest[0] == '/') {
			return s, rest, true
		}
	}
	return nil, "", false
}

func (e *Emulator) routeOf(r *http.Request) (service, route, error) {
	s, rest, ok := e.find(r)
	if !ok {
		names := make([]string, len(e.services))
		for i, s := range e.services {
			names[i] = s.prefix()
		}
		return nil, route{}, errors.New("openstack: " + r.URL.Path + " is under no service prefix (" + strings.Join(names, ", ") + ")")
	}
	return s, s.route(r, rest), nil
}

// Operation implements cloudsim.Cloud: "<service>:<Name>".
func (e *Emulator) Operation(r *http.Request) (string, error) {
	_, rt, err := e.routeOf(r)
	if err != nil {
		return "", err
	}
	return rt.op, nil
}

// Mutating implements cloudsim.Cloud: writes (POST, PUT, PATCH, DELETE
// operations, Keystone's token issue and revocation included) are
// mutating.
func (e *Emulator) Mutating(op string) bool { return mutatingOps[op] }

// mutatingOps lists the writes; each service file registers its own.
var mutatingOps = map[string]bool{}

func registerMutating(ops ...string) {
	for _, op := range ops {
		mutatingOps[op] = true
	}
}

// Serve implements cloudsim.Cloud.
func (e *Emulator) Serve(w http.ResponseWriter, r *http.Request, op string) {
	s, rt, err := e.routeOf(r)
	if err != nil { // Operation accepted it, so this cannot happen
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	setRequestIDs(w, rt.op)
	if !rt.public {
		tok := r.Header.Get("X-Auth-Token")
		e.mu.Lock()
		_, ok := e.validToken(tok)
		e.mu.Unlock()
		if !ok {
			s.writeUnauthenticated(w, r)
			return
		}
	}
	rt.serve(w, r)
}

// WriteThrottle implements cloudsim.Cloud with the service's own
// rate-limit answer (Nova: 429 overLimit with Retry-After).
func (e *Emulator) WriteThrottle(w http.ResponseWriter, r *http.Request, op string) {
	s, rt, err := e.routeOf(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusTooManyRequests)
		return
	}
	setRequestIDs(w, rt.op)
	s.writeThrottle(w, r, rt)
}

// WriteServerError implements cloudsim.Cloud with the service's own 500
// (Nova: computeFault).
func (e *Emulator) WriteServerError(w http.ResponseWriter, r *http.Request, op string) {
	s, rt, err := e.routeOf(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	setRequestIDs(w, rt.op)
	s.writeServerError(w, r, rt)
}

// setRequestIDs sets the request ID headers every OpenStack API answers
// with (oslo.middleware's request_id; Nova adds its older name).
func setRequestIDs(w http.ResponseWriter, op string) {
	id := "req-" + randomUUID()
	w.Header().Set("X-Openstack-Request-Id", id)
	if strings.HasPrefix(op, novaOp) {
		w.Header().Set("X-Compute-Request-Id", id)
	}
}

// writeJSON writes v as the JSON body. Like Python's json.dumps, it
// leaves &, < and > unescaped (they appear in next links).
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		http.Error(w, "openstack: encoding response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// baseURL is the scheme and host the client reached us at; the services
// build every link from it.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}
