package openstack

import (
	"errors"
	"net/http"

	"github.com/gophercloud/gophercloud/v2"
)

// How this backend reads OpenStack errors: by HTTP status only, never by
// message text, which differs between services and releases.
//
// Only Nova's 404 for a GET of that very server ID means a server is gone.
// Throttling (429, and Nova's legacy 413 with Retry-After), 5xx, timeouts
// and authentication failures (401 after gophercloud re-authenticated,
// 403) are errors: the caller retries later, and no Node is deleted on
// them.

// statusOf is the HTTP status of an OpenStack API error, 0 for anything
// else (a timeout, a refused connection, a cancelled context).
func statusOf(err error) int {
	var e gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &e) {
		return e.Actual
	}
	return 0
}

// isNotFound reports the service's own 404.
func isNotFound(err error) bool { return statusOf(err) == http.StatusNotFound }

// isConflict reports 409: Octavia's answer to a change while the load
// balancer is PENDING_*, Neutron's to a conflicting change.
func isConflict(err error) bool { return statusOf(err) == http.StatusConflict }

// isThrottled reports the service refusing for rate: 429, or 413 as Nova
// and older services send it.
func isThrottled(err error) bool {
	s := statusOf(err)
	return s == http.StatusTooManyRequests || s == http.StatusRequestEntityTooLarge
}
