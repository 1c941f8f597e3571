package openstack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/cloudmetrics"
	decl "github.com/multicloud-ccm/multicloud-ccm/providers/permissions"
)

// OpenStack services refuse a call whose policy rule the roles of the
// manager's user do not satisfy with 403, each in its own words
// (test/cloudsim/openstack/authz.go WriteDenied cites the sources):
//
//   - Nova: {"forbidden": {"code": 403, "message": "Policy doesn't allow
//     <rule> to be performed."}};
//   - Neutron: {"NeutronError": {"type": "PolicyNotAuthorized", "message":
//     "<check> is disallowed by policy"}}, where <check> is the action's
//     rule and-ed with the attribute rules of the request
//     ("(rule:update_port and rule:update_port:allowed_address_pairs)");
//   - Octavia: {"faultstring": "Policy does not allow this request to be
//     performed."}, naming no rule: it is derived from the method and the
//     path, as Octavia names its rules;
//   - Keystone: {"error": {"message": "You are not authorized to perform
//     the requested action: <rule>."}}.
//
// Each is told apart from the services' other 403s (Nova's and Octavia's
// quotas) by its message: no code or type says "policy" in Nova, Octavia
// or Keystone, so the text is read there, and only there.
//
// Neutron hides what a policy forbids reading: a listing answers 200 with
// an empty collection and a GET of one resource 404, so those denials
// cannot be recognised here (nor by any client).

var (
	novaPolicyRE     = regexp.MustCompile(`^Policy doesn't allow (\S+) to be performed\.$`)
	keystonePolicyRE = regexp.MustCompile(`^You are not authorized to perform the requested action: (\S+)\.$`)
	// neutronRuleRE finds the rules of an oslo.policy check as it prints
	// one: RuleCheck is "rule:<name>", and/or/not put them in parentheses.
	neutronRuleRE = regexp.MustCompile(`rule:([^\s()]+)`)
)

const (
	neutronPolicySuffix = " is disallowed by policy"
	octaviaPolicyFault  = "Policy does not allow this request to be performed."
	// maxDeniedBody bounds what is read of a 403's body to find the rule;
	// the services' error bodies are a few hundred bytes.
	maxDeniedBody = 64 << 10
)

// declared is the backend's declaration, built once: a denial looks up
// which features need the refused rule.
var declared = sync.OnceValue(Permissions)

// deniedTransport turns a service's policy denial into the error the
// call returns: a *decl.DeniedError naming the rule and the features that
// need it, counted and logged once (cloudmetrics.PermissionDenied),
// around the gophercloud.ErrUnexpectedResponseCode gophercloud would have
// made of the 403, so statusOf and gophercloud.ResponseCodeIs still read
// it as the 403 it is: never "not found", never a conflict to wait out.
//
// gophercloud hands an error from the HTTP client to RetryFunc only (it
// re-authenticates on a 401 response alone), and the retry policy
// returns a denial at once (clients_retry.go): a denied call is tried
// once. Any other response, a 403 for another reason included, goes on
// to gophercloud as it came.
type deniedTransport struct {
	next http.RoundTripper
	// service is the service label ("compute", "network",
	// "load-balancer", "identity"), base the endpoint's path, below which
	// Octavia's paths name its rules.
	service, base string
	rec           *cloudmetrics.Recorder
}

func (t *deniedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusForbidden || resp.Body == nil {
		return resp, err
	}
	body, rerr := io.ReadAll(io.LimitReader(resp.Body, maxDeniedBody))
	rules := deniedRules(t.service, r.Method, strings.TrimPrefix(r.URL.Path, t.base), r.URL.Query(), body)
	if rerr != nil || len(rules) == 0 {
		// Not a denial: the response as it came, what was read put back.
		resp.Body = readCloser{io.MultiReader(bytes.NewReader(body), resp.Body), resp.Body}
		return resp, nil
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	perm, features := denied(rules)
	t.rec.PermissionDenied(ProviderName, perm, features)
	return nil, &decl.DeniedError{Permission: perm, Features: features, Err: gophercloud.ErrUnexpectedResponseCode{
		// Info replaces the "Expected HTTP response code [...]" text: the
		// codes the call expected are gophercloud's to know.
		BaseError:      gophercloud.BaseError{Info: fmt.Sprintf("Request forbidden: [%s %s], error message: %s", r.Method, r.URL, bytes.TrimSpace(body))},
		URL:            r.URL.String(),
		Method:         r.Method,
		Actual:         resp.StatusCode,
		Body:           body,
		ResponseHeader: resp.Header,
	}}
}

type readCloser struct {
	io.Reader
	io.Closer
}

// denied names what a denial lacks and the features that need it. One
// rule is named as the service and the declaration spell it. Several
// (a Neutron check and-ing attribute rules, Octavia's batch member
// update) are all named, "a or b": the service does not say which of
// them the user lacks, and naming one it has would send the operator
// looking in the wrong place.
func denied(rules []string) (permission, features string) {
	d := declared()
	if len(rules) == 1 {
		return rules[0], d.FeaturesOf(rules[0])
	}
	var names []string
	for _, f := range d.Features {
		if slices.ContainsFunc(f.Grants, func(g decl.Grant) bool { return slices.Contains(rules, g.Permission) }) {
			names = append(names, f.Name)
		}
	}
	return strings.Join(rules, " or "), strings.Join(names, ",")
}

// deniedRules are the rules a service's 403 body says were refused, in
// the order the service checks them; none when the 403 is not a policy
// denial. path is the request's path below the service's endpoint.
func deniedRules(service, method, path string, query url.Values, body []byte) []string {
	switch service {
	case "compute":
		// Nova's fault is keyed by its name ("forbidden").
		var fault map[string]struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(body, &fault) != nil {
			return nil
		}
		for _, f := range fault {
			if m := novaPolicyRE.FindStringSubmatch(f.Message); m != nil {
				return []string{m[1]}
			}
		}
	case "network":
		var e struct {
			NeutronError struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"NeutronError"`
		}
		if json.Unmarshal(body, &e) != nil || e.NeutronError.Type != "PolicyNotAuthorized" {
			return nil
		}
		return neutronRules(e.NeutronError.Message)
	case "load-balancer":
		var e struct {
			Faultstring string `json:"faultstring"`
		}
		if json.Unmarshal(body, &e) != nil || e.Faultstring != octaviaPolicyFault {
			return nil
		}
		return octaviaRules(method, path, query)
	case "identity":
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(body, &e) != nil {
			return nil
		}
		if m := keystonePolicyRE.FindStringSubmatch(e.Error.Message); m != nil {
			return []string{m[1]}
		}
	}
	return nil
}

// neutronRules are the rules of a PolicyNotAuthorized message, once
// each: "rule:<name>" wherever the check names one, else the check
// itself when it is a bare name.
func neutronRules(message string) []string {
	check, ok := strings.CutSuffix(message, neutronPolicySuffix)
	if !ok {
		return nil
	}
	var out []string
	for _, m := range neutronRuleRE.FindAllStringSubmatch(check, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	if len(out) == 0 {
		if c := strings.Trim(check, "() "); c != "" && !strings.ContainsAny(c, " ()") {
			out = []string{c}
		}
	}
	return out
}

// octaviaObjects are Octavia's RBAC object names by collection path
// (octavia/common/constants.py RBAC_*).
var octaviaObjects = map[string]string{
	"loadbalancers": "loadbalancer", "listeners": "listener", "pools": "pool",
	"healthmonitors": "healthmonitor", "l7policies": "l7policy", "providers": "provider",
	"flavors": "flavor", "flavorprofiles": "flavor-profile",
	"availabilityzones": "availability-zone", "availabilityzoneprofiles": "availability-zone-profile",
}

// octaviaRules names the rules Octavia checked for a request, as its
// controllers do (octavia/api/v2/controllers/*.py _auth_validate_action):
// os_load-balancer_api:<object>:<get_all|get_one|post|put|delete>, the
// member and l7rule objects under their pool and l7policy, and
// loadbalancer:get_status, get_stats and put_failover, listener:get_stats.
// The batch member update (PUT pools/{id}/members) checks member:post,
// member:put and, unless additive_only, member:delete. The optional
// vip_sg_ids rules of a load balancer's body are not named: the backend
// sends none.
func octaviaRules(method, path string, query url.Values) []string {
	var parts []string
	for _, seg := range strings.Split(strings.Trim(path, "/"), "/") {
		if seg != "" && seg != "lbaas" && !isVersion(seg) {
			parts = append(parts, seg)
		}
	}
	if len(parts) == 0 {
		return nil
	}
	obj, ok := octaviaObjects[parts[0]]
	if !ok {
		return nil
	}
	item := len(parts) == 2
	if len(parts) > 2 {
		switch sub := parts[2]; {
		case sub == "members" && obj == "pool", sub == "rules" && obj == "l7policy":
			obj = map[string]string{"members": "member", "rules": "l7rule"}[sub]
			item = len(parts) == 4
			if len(parts) > 4 {
				return nil
			}
		case len(parts) != 3:
			return nil
		case sub == "status" && obj == "loadbalancer" && method == http.MethodGet:
			return []string{octaviaAPIRule(obj, "get_status")}
		case sub == "stats" && (obj == "loadbalancer" || obj == "listener") && method == http.MethodGet:
			return []string{octaviaAPIRule(obj, "get_stats")}
		case sub == "failover" && obj == "loadbalancer" && method == http.MethodPut:
			return []string{octaviaAPIRule(obj, "put_failover")}
		default:
			return nil
		}
	}
	var verbs []string
	switch {
	case item && (method == http.MethodGet || method == http.MethodHead):
		verbs = []string{"get_one"}
	case item && method == http.MethodPut:
		verbs = []string{"put"}
	case item && method == http.MethodDelete:
		verbs = []string{"delete"}
	case !item && (method == http.MethodGet || method == http.MethodHead):
		verbs = []string{"get_all"}
	case !item && method == http.MethodPost:
		verbs = []string{"post"}
	case !item && method == http.MethodPut && obj == "member":
		verbs = []string{"post", "put"}
		if !trueString(query.Get("additive_only")) {
			verbs = append(verbs, "delete")
		}
	}
	var out []string
	for _, v := range verbs {
		out = append(out, octaviaAPIRule(obj, v))
	}
	return out
}

// octaviaAPIRule is an Octavia rule spelled as the declaration spells it
// (octaviaRule in permissions.go).
func octaviaAPIRule(object, verb string) string { return octaviaRule(object+":"+verb, "").Permission }

// trueString reads a boolean query value as oslo's
// strutils.bool_from_string does.
func trueString(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "t", "true", "on", "y", "yes":
		return true
	}
	return false
}
