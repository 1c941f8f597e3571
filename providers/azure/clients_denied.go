package azure

import (
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/cloudmetrics"
	decl "github.com/multicloud-ccm/multicloud-ccm/providers/permissions"
)

// deniedPolicy turns ARM's authorization denials into errors naming the
// RBAC action and the features that need it. It is a per-call policy,
// above azcore's retry policy: an error returned from a per-retry policy
// is retried, and a denial must not be (azcore does not retry a 403
// either). A long-running operation's initial PUT or DELETE and each of
// its polls are calls of their own, so a denied poll is named too.
type deniedPolicy struct{ rec *cloudmetrics.Recorder }

func (p *deniedPolicy) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	if err != nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		return resp, err
	}
	if derr := deniedError(resp, p.rec); derr != nil {
		return resp, derr
	}
	return resp, nil
}

// deniedError is the call's error for a 403 that is ARM's RBAC denial: a
// *decl.DeniedError naming the action and its features around the
// *azcore.ResponseError the generated client would have made of the
// response (so errors.As to it, and with it isNotFound, read the 403 it
// is: never "not found"). It counts the denial and logs it once. Any
// other response (another 403, such as Azure Policy's
// RequestDisallowedByPolicy, or a denial whose message names no action)
// is left to the client: nil.
func deniedError(resp *http.Response, rec *cloudmetrics.Recorder) error {
	// Payload reads the body once and keeps it for the client.
	body, err := runtime.Payload(resp)
	if err != nil {
		return nil
	}
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return nil
	}
	code := e.Error.Code
	if h := resp.Header.Get("x-ms-error-code"); h != "" {
		code = h
	}
	action, ok := deniedAction(code, e.Error.Message)
	if !ok {
		return nil
	}
	var re *azcore.ResponseError
	if rerr := runtime.NewResponseError(resp); !errors.As(rerr, &re) {
		return nil
	}
	perm := declaredSpelling(action)
	features := declared().FeaturesOf(perm)
	rec.PermissionDenied(ProviderName, perm, features)
	return &decl.DeniedError{Permission: perm, Features: features, Err: re}
}

// ARM's denials, as "Troubleshoot Azure RBAC" and users' reports word
// them. The message must be read: the code says only that a permission
// is missing, the message which one.
var (
	// AuthorizationFailed: the request's own action. "The client '<id>'
	// with object id '<oid>' does not have authorization to perform
	// action '<action>' over scope '<scope>' or the scope is invalid.",
	// where role assignment conditions exist "... does not have
	// authorization or an ABAC condition not fulfilled to perform action
	// ..." ("Troubleshoot Azure RBAC").
	authorizationFailedRE = regexp.MustCompile(`does not have authorization[^']*? to perform action '([^']+)'`)
	// LinkedAuthorizationFailed: the join action on a resource the body
	// references, the second action named. "The client ... has
	// permission to perform action '<action>' on scope '<scope>';
	// however, it does not have permission to perform action '<join>' on
	// the linked scope(s) '<id>' or the linked scope(s) are invalid."
	linkedAuthorizationFailedRE = regexp.MustCompile(`does not have permission to perform action '([^']+)' on the linked scope`)
)

// deniedAction is the action an ARM error of code with message says the
// caller lacks, as ARM spells it.
func deniedAction(code, message string) (string, bool) {
	var re *regexp.Regexp
	switch code {
	case "AuthorizationFailed":
		re = authorizationFailedRE
	case "LinkedAuthorizationFailed":
		re = linkedAuthorizationFailedRE
	default:
		return "", false
	}
	m := re.FindStringSubmatch(message)
	if m == nil || strings.TrimSpace(m[1]) == "" {
		return "", false
	}
	return m[1], true
}

// declared is the backend's declaration, built once: a denial looks up
// which features need the refused action.
var declared = sync.OnceValue(Permissions)

// declaredActions are every action the declaration names.
var declaredActions = sync.OnceValue(func() []string {
	grants, _ := declared().Grants()
	return decl.Permissions(grants)
})

// declaredSpelling is action as the declaration spells it: RBAC actions
// are case-insensitive, and ARM's messages do not always keep the
// operation strings' casing. An action the declaration lacks stays as
// ARM sent it.
func declaredSpelling(action string) string {
	for _, p := range declaredActions() {
		if strings.EqualFold(p, action) {
			return p
		}
	}
	return action
}
