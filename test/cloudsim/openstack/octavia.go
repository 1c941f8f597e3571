package openstack

import (
	"net/http"
	"strconv"
)

// Octavia, mounted at /load-balancer. So far only its version document,
// which gophercloud reads (GET <endpoint>/) to find the v2 API; load
// balancers, listeners, pools and members come with the load-balancer
// work. Every other path is Octavia's 404.

const octaviaPrefix = "/load-balancer"

const (
	opOctaviaVersions    = "octavia:ListVersions"
	opOctaviaUnsupported = "octavia:Unsupported"
)

type octaviaService struct{ e *Emulator }

func (octaviaService) name() string   { return "octavia" }
func (octaviaService) prefix() string { return octaviaPrefix }

func (o octaviaService) route(r *http.Request, rest string) route {
	if (rest == "" || rest == "/") && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		return route{op: opOctaviaVersions, public: true, serve: func(w http.ResponseWriter, r *http.Request) {
			link := func(v string) []any {
				return []any{map[string]string{"href": baseURL(r) + octaviaPrefix + "/" + v, "rel": "self"}}
			}
			writeJSON(w, http.StatusOK, map[string]any{"versions": []any{
				map[string]any{"id": "v2.0", "status": "SUPPORTED", "updated": "2016-12-11T00:00:00Z", "links": link("v2.0")},
				map[string]any{"id": "v2", "status": "CURRENT", "updated": "2023-05-08T00:00:00Z", "links": link("v2")},
			}})
		}}
	}
	return route{op: opOctaviaUnsupported, serve: func(w http.ResponseWriter, r *http.Request) {
		writeError(w, octaviaFault(http.StatusNotFound, "Client", "The resource could not be found."))
	}}
}

// octaviaFault is Octavia's (WSME) error body.
func octaviaFault(status int, code, message string) *apiError {
	return &apiError{status: status, body: map[string]any{"faultcode": code, "faultstring": message, "debuginfo": nil}}
}

func (octaviaService) writeUnauthenticated(w http.ResponseWriter, r *http.Request) {
	writeAuthRequired(w, r)
}

// writeThrottle: Octavia has no rate limiting of its own; a proxy in
// front answers 429 with Retry-After.
func (o octaviaService) writeThrottle(w http.ResponseWriter, r *http.Request, rt route) {
	w.Header().Set("Retry-After", strconv.Itoa(o.e.cfg.RetryAfter))
	writeError(w, octaviaFault(http.StatusTooManyRequests, "Client", "Too Many Requests"))
}

func (octaviaService) writeServerError(w http.ResponseWriter, r *http.Request, rt route) {
	writeError(w, octaviaFault(http.StatusInternalServerError, "Server", "Internal Server Error"))
}

// OctaviaConfig configures Octavia.
type OctaviaConfig struct{}

func (c *OctaviaConfig) setDefaults() {}

// octaviaState is Octavia's own state. Callers hold e.mu.
type octaviaState struct{}

// initOctavia sets up Octavia's state; New calls it.
func (e *Emulator) initOctavia() {}

// octaviaResources adds Octavia's resources to Resources. Callers hold e.mu.
func (e *Emulator) octaviaResources(add func(kind, id, name, parent string, tags map[string]string)) {
}

// octaviaAdmin adds Octavia's admin routes to the admin mux.
func (e *Emulator) octaviaAdmin(mux *http.ServeMux) {}
