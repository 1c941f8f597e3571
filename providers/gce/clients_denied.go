package gce

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"sync"

	"google.golang.org/api/googleapi"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/cloudmetrics"
	decl "github.com/multicloud-ccm/multicloud-ccm/providers/permissions"
)

// Compute Engine refuses a call the identity has no permission for with
// 403, reason "forbidden", and names the IAM permission and the resource
// it was checked on: "Required 'compute.forwardingRules.create'
// permission for 'projects/p/regions/r/forwardingRules/a1b2'" (Compute
// Engine API reference, "Authorization" and its error messages). A 403
// with reason rateLimitExceeded is throttling, retried elsewhere
// (retryable).
var requiredPermissionRE = regexp.MustCompile(`Required '(compute\.[A-Za-z]+\.[A-Za-z]+)' permission`)

// maxDeniedBody bounds what is read of a 403's body to find the
// permission; Compute Engine's error bodies are a few hundred bytes.
const maxDeniedBody = 64 << 10

// declared is the backend's declaration, built once: a denial looks up
// which features need the refused permission.
var declared = sync.OnceValue(Permissions)

// forbiddenBody is the body of a 403 (restored for the client to read),
// nil for any other response.
func forbiddenBody(resp *http.Response) []byte {
	if resp == nil || resp.StatusCode != http.StatusForbidden || resp.Body == nil {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDeniedBody))
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return nil
	}
	return body
}

// deniedError turns a 403 naming a missing permission (body, read by
// forbiddenBody) into the error the call returns: a *decl.DeniedError
// naming the permission and the features that need it, around the text
// of the error the client would have made (errorCode, and with it
// retryable and isNotFound, read it as the 403 forbidden it is: never
// retried, never "not found"). It counts the denial and logs it once.
// Any other response is left to the client: nil.
func deniedError(resp *http.Response, body []byte, rec *cloudmetrics.Recorder) error {
	perm, ok := deniedPermission(body)
	if !ok {
		return nil
	}
	// The client's own reading of the response, from a copy, as text
	// only: with a *googleapi.Error in the chain gax would make the call's
	// error an apierror.APIError printing only the 403's message, and the
	// Warning Event would lose what to grant. errorCode reads a
	// DeniedError as the 403 forbidden it is.
	gerr := googleapi.CheckResponseWithBody(&http.Response{StatusCode: resp.StatusCode, Header: resp.Header, Request: resp.Request}, body)
	features := declared().FeaturesOf(perm)
	rec.PermissionDenied(ProviderName, perm, features)
	return &decl.DeniedError{Permission: perm, Features: features, Err: errors.New(gerr.Error())}
}

// rateLimited says a 403 body is Compute Engine's throttling
// (rateLimitExceeded, userRateLimitExceeded), which retryable retries.
func rateLimited(body []byte) bool {
	reason, _ := forbiddenReason(body)
	return reason == "rateLimitExceeded" || reason == "userRateLimitExceeded"
}

// deniedPermission is the permission a Compute Engine 403 body names,
// when its reason is "forbidden".
func deniedPermission(body []byte) (string, bool) {
	reason, msg := forbiddenReason(body)
	if reason != "forbidden" && reason != "" {
		return "", false
	}
	m := requiredPermissionRE.FindStringSubmatch(msg)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// forbiddenReason is a 403 body's first reason and its message.
func forbiddenReason(body []byte) (reason, message string) {
	var e struct {
		Error struct {
			Message string `json:"message"`
			Errors  []struct {
				Reason  string `json:"reason"`
				Message string `json:"message"`
			} `json:"errors"`
		} `json:"error"`
	}
	if len(body) == 0 || json.Unmarshal(body, &e) != nil {
		return "", ""
	}
	message = e.Error.Message
	if len(e.Error.Errors) > 0 {
		reason = e.Error.Errors[0].Reason
		if e.Error.Errors[0].Message != "" {
			message = e.Error.Errors[0].Message
		}
	}
	return reason, message
}
