package openstack

import (
	"net/http"
	"strconv"
)

// Neutron, mounted at /network. So far only its version document, which
// gophercloud reads (GET <endpoint>/) to find the v2.0 API before the
// first network call; the networks, ports and floating IPs Nova shows
// live in the emulator already (network.go) and get their API with the
// load-balancer work. Every other path is Neutron's 404.

const neutronPrefix = "/network"

const (
	opNeutronVersions    = "neutron:ListVersions"
	opNeutronUnsupported = "neutron:Unsupported"
)

type neutronService struct{ e *Emulator }

func (neutronService) name() string   { return "neutron" }
func (neutronService) prefix() string { return neutronPrefix }

func (n neutronService) route(r *http.Request, rest string) route {
	if (rest == "" || rest == "/") && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		return route{op: opNeutronVersions, public: true, serve: func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, http.StatusOK, map[string]any{"versions": []any{map[string]any{
				"id": "v2.0", "status": "CURRENT",
				"links": []any{map[string]string{"href": baseURL(r) + neutronPrefix + "/v2.0/", "rel": "self"}},
			}}})
		}}
	}
	return route{op: opNeutronUnsupported, serve: func(w http.ResponseWriter, r *http.Request) {
		writeError(w, neutronError(http.StatusNotFound, "HTTPNotFound", "The resource could not be found."))
	}}
}

// neutronError is Neutron's error body.
func neutronError(status int, typ, message string) *apiError {
	return &apiError{status: status, body: map[string]any{"NeutronError": map[string]string{"type": typ, "message": message, "detail": ""}}}
}

func (neutronService) writeUnauthenticated(w http.ResponseWriter, r *http.Request) {
	writeAuthRequired(w, r)
}

// writeThrottle: Neutron has no rate limiting of its own; clouds put it in
// front (a proxy or the rate-limit middleware), answering 429 with
// Retry-After.
func (n neutronService) writeThrottle(w http.ResponseWriter, r *http.Request, rt route) {
	w.Header().Set("Retry-After", strconv.Itoa(n.e.cfg.RetryAfter))
	writeError(w, neutronError(http.StatusTooManyRequests, "OverLimit", "Too Many Requests"))
}

func (neutronService) writeServerError(w http.ResponseWriter, r *http.Request, rt route) {
	writeError(w, neutronError(http.StatusInternalServerError, "HTTPInternalServerError", "Request Failed: internal server error while processing your request."))
}

// NeutronConfig configures Neutron.
type NeutronConfig struct{}

func (c *NeutronConfig) setDefaults() {}

// neutronState is Neutron's own state. Callers hold e.mu.
type neutronState struct{}

// initNeutron sets up Neutron's state; New calls it.
func (e *Emulator) initNeutron() {}

// neutronResources adds Neutron's resources to Resources. Callers hold e.mu.
func (e *Emulator) neutronResources(add func(kind, id, name, parent string, tags map[string]string)) {
}

// neutronAdmin adds Neutron's admin routes to the admin mux.
func (e *Emulator) neutronAdmin(mux *http.ServeMux) {}
