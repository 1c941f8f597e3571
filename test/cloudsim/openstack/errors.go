package openstack

import (
	"net/http"
)

// Errors are spelled the way each service spells them. No message ever
// carries a password, an application credential secret or a token: the
// real services take care not to, and the emulator is stricter still
// (Keystone itself echoes an unrecognised token in one 404; see
// errTokenNotFound).

// apiError is an error answer: a status and the service's JSON body.
type apiError struct {
	status int
	body   any
	header http.Header
}

func (e *apiError) Error() string { return http.StatusText(e.status) }

// keystoneError is Keystone's error body, also used by keystonemiddleware:
//
//	{"error": {"code": 401, "message": "...", "title": "Unauthorized"}}
//
// The title is Python's http.client.responses text, which matches Go's.
func keystoneError(status int, message string) *apiError {
	return &apiError{status: status, body: map[string]any{"error": map[string]any{
		"code": status, "message": message, "title": http.StatusText(status),
	}}}
}

// Keystone's messages. SecurityError subclasses (every 401) only ever
// show their generic text outside insecure_debug mode.
const (
	msgUnauthorized     = "The request you have made requires authentication."
	msgNotFound         = "The resource could not be found."
	msgUnexpected       = "An unexpected error prevented the server from fulfilling your request."
	msgMethodNotAllowed = "The method is not allowed for the requested URL."
	msgRateLimited      = "This request was rate-limited."
	msgTokenInvalid     = "Failed to validate token"
	msgUnsupportedAuth  = "Attempted to authenticate with an unsupported method."
)

// keystoneValidationError is Keystone's ValidationError for a missing or
// malformed attribute.
func keystoneValidationError(attribute, target string) *apiError {
	return keystoneError(http.StatusBadRequest, "Expecting to find "+attribute+" in "+target+
		". The server could not comply with the request since it is either malformed or otherwise incorrect."+
		" The client is assumed to be in error.")
}

// errTokenNotFound answers a subject token that is unknown, expired or
// revoked. Keystone says "Failed to validate token" for expired and
// revoked tokens but echoes an unrecognisable one in its message ("This
// is not a recognized Fernet token <token>"); the emulator never puts a
// token in a message, so it gives the first text for all three.
func errTokenNotFound() *apiError { return keystoneError(http.StatusNotFound, msgTokenInvalid) }

// novaFaultNames are Nova's fault keys by status (nova.api.openstack.wsgi.Fault).
var novaFaultNames = map[int]string{
	400: "badRequest",
	401: "unauthorized",
	403: "forbidden",
	404: "itemNotFound",
	405: "badMethod",
	409: "conflictingRequest",
	413: "overLimit",
	415: "badMediaType",
	429: "overLimit",
	501: "notImplemented",
	503: "serviceUnavailable",
}

// novaFault is Nova's error body: {"<faultName>": {"code", "message"}},
// "computeFault" for statuses without a name of their own.
func novaFault(status int, message string) *apiError {
	name, ok := novaFaultNames[status]
	if !ok {
		name = "computeFault"
	}
	return &apiError{status: status, body: map[string]any{name: map[string]any{"code": status, "message": message}}}
}

// novaNotFound is Nova's 404 for an unknown server.
func novaServerNotFound(id string) *apiError {
	return novaFault(http.StatusNotFound, "Instance "+id+" could not be found.")
}

// msgComputeFault is webob's HTTPInternalServerError explanation, which
// Nova's FaultWrapper keeps for unexpected errors.
const msgComputeFault = "The server has either erred or is incapable of performing the requested operation."

// writeAuthRequired answers a call without a valid token the way
// keystonemiddleware's auth_token does in front of every service (Nova,
// Neutron, Octavia alike): 401, Keystone's error body, and a
// WWW-Authenticate header naming Keystone (its www_authenticate_uri,
// which devstack sets to the versionless identity URL).
func writeAuthRequired(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("WWW-Authenticate", `Keystone uri="`+baseURL(r)+keystonePrefix+`"`)
	e := keystoneError(http.StatusUnauthorized, msgUnauthorized)
	writeJSON(w, e.status, e.body)
}

// writeError writes an apiError with its headers.
func writeError(w http.ResponseWriter, e *apiError) {
	for k, vs := range e.header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	writeJSON(w, e.status, e.body)
}
