package gce

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// apiError is one Compute Engine error. On the wire it is Google's JSON
// error body, which google.golang.org/api/googleapi decodes into a
// *googleapi.Error (Code, Message, Errors[0].Reason):
//
//	{"error":{"code":404,"message":"The resource '...' was not found",
//	  "errors":[{"message":"...","domain":"global","reason":"notFound"}]}}
//
// Some failures are not answered to the call at all but reported by the
// call's Operation once DONE (an address already taken); those carry an
// operation error code instead (opCode) and async.
type apiError struct {
	Status  int
	Reason  string
	Message string
	// Domain is "global" unless set.
	Domain string
	// async: the call is accepted and its operation fails with opCode.
	async  bool
	opCode string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Reason, e.Message) }

func writeError(w http.ResponseWriter, e *apiError) {
	domain := e.Domain
	if domain == "" {
		domain = "global"
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(e.Status)
	body := map[string]any{"error": map[string]any{
		"code":    e.Status,
		"message": e.Message,
		"errors":  []map[string]string{{"message": e.Message, "domain": domain, "reason": e.Reason}},
	}}
	_ = json.NewEncoder(w).Encode(body)
}

// The errors every kind uses, worded as Compute Engine words them. path
// is a resource's relative path ("projects/p/zones/z/instances/x").

func errNotFound(path string) *apiError {
	return &apiError{Status: http.StatusNotFound, Reason: "notFound",
		Message: fmt.Sprintf("The resource '%s' was not found", path)}
}

func errAlreadyExists(path string) *apiError {
	return &apiError{Status: http.StatusConflict, Reason: "alreadyExists",
		Message: fmt.Sprintf("The resource '%s' already exists", path)}
}

// errInUse refuses to delete a resource another one still uses; singular
// is how GCE names the kind in this message ("address", "target_pool").
func errInUse(singular, path, user string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Reason: "resourceInUseByAnotherResource",
		Message: fmt.Sprintf("The %s resource '%s' is already being used by '%s'", singular, path, user)}
}

// errNotReady refuses a change to a resource whose previous change is
// still in progress.
func errNotReady(path string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Reason: "resourceNotReady",
		Message: fmt.Sprintf("The resource '%s' is not ready", path)}
}

func errInvalid(field, value, why string) *apiError {
	msg := fmt.Sprintf("Invalid value for field '%s': '%s'.", field, value)
	if why != "" {
		msg += " " + why
	}
	return &apiError{Status: http.StatusBadRequest, Reason: "invalid", Message: msg}
}

func errRequired(field string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Reason: "required",
		Message: fmt.Sprintf("Required field '%s' not specified", field)}
}

func errBadJSON(err error) *apiError {
	return &apiError{Status: http.StatusBadRequest, Reason: "invalid",
		Message: "Invalid JSON payload received. " + err.Error()}
}

func errUnknownZone(z string) *apiError { return errInvalid("zone", z, "Unknown zone.") }

func errUnknownRegion(r string) *apiError { return errInvalid("region", r, "Unknown region.") }

// errNotEmulated answers a method the real API has and the emulator does
// not: 501, so a test cannot mistake it for one of GCE's own answers.
func errNotEmulated(op string) *apiError {
	return &apiError{Status: http.StatusNotImplemented, Reason: "notImplemented",
		Message: fmt.Sprintf("cloudsim: %s is not emulated", op)}
}

// errConditionNotMet answers a stale fingerprint.
func errConditionNotMet(what string) *apiError {
	return &apiError{Status: http.StatusPreconditionFailed, Reason: "conditionNotMet",
		Message: fmt.Sprintf("Supplied fingerprint does not match current fingerprint of %s.", what)}
}

// errIPInUse fails an operation reserving or using an address someone
// else holds.
func errIPInUse(ip string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Reason: "ipInUseByAnotherResource", async: true,
		opCode:  "IP_IN_USE_BY_ANOTHER_RESOURCE",
		Message: fmt.Sprintf("IP '%s' is already being used by another resource.", ip)}
}

// errRateLimit is the rate-quota answer, naming the quota group the
// operation counts against as the real message does.
func errRateLimit(op string, mutating bool, projectNumber uint64) *apiError {
	_, method, _ := strings.Cut(op, ".")
	metric := "Queries"
	switch {
	case mutating:
	case strings.Contains(op, "Operations."):
		metric = "Operation read requests"
	case strings.HasPrefix(method, "List") || method == "AggregatedList":
		metric = "List requests"
	default:
		metric = "Read requests"
	}
	return &apiError{Status: http.StatusForbidden, Reason: "rateLimitExceeded", Domain: "usageLimits",
		Message: fmt.Sprintf("Quota exceeded for quota metric '%s' and limit '%s per minute' of service 'compute.googleapis.com' for consumer 'project_number:%d'.",
			metric, metric, projectNumber)}
}

// errBackend is Compute Engine's transient server error.
func errBackend(now time.Time) *apiError {
	return &apiError{Status: http.StatusServiceUnavailable, Reason: "backendError",
		Message: fmt.Sprintf("Internal error. Please try again or contact Google Support. (Code: '%X')", now.UnixNano())}
}

// httpErrorMessage is an operation's httpErrorMessage for a status:
// "BAD REQUEST", "NOT FOUND", as GCE spells them.
func httpErrorMessage(status int) string {
	return strings.ToUpper(http.StatusText(status))
}
