package azure

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// Azure RBAC as Azure Resource Manager applies it, for a policy set on
// the Server (cloudsim.Authorizer):
//
//   - the caller is the application (client) ID of its bearer token's
//     claims ("appid"), lower-cased, as ARM's denials name it; a request
//     without a valid token of the emulator's is nobody's (ARM answers it
//     401 before any authorization, serveARM);
//   - a request needs the action ARM derives from its URL, in the format
//     "{Namespace}/{resourceType}[/{childType}...]/{read|write|delete}"
//     ("Understand Azure role definitions", Actions: a GET or a list is
//     read, a PUT or PATCH write, a DELETE delete, a POST to an action
//     "/{action}/action"; the operation strings are those of "Azure
//     resource provider operations": Microsoft.Compute,
//     Microsoft.Network, Microsoft.Resources). Subscription-wide lists
//     need the same read action as a resource group's; a long-running
//     operation's status needs "{Namespace}/locations/operations/read"
//     (and operationResults/read for the Location header's URL), which
//     upstream's permission list names for Compute
//     (cloud-provider-azure site/content/en/topics/azure-permissions.md);
//   - a PUT or PATCH also needs, on every resource its body references,
//     that resource's "join" action: the linked access check, denied as
//     LinkedAuthorizationFailed. The references and their actions are
//     linkActions; that a write needs the join of every reference in its
//     body, not only of the ones it adds, is inferred from the denials
//     users report for writes that keep a reference as it was (a scale
//     set update and its subnet, a subnet update and its security group).
//
// Inferred, not checked against ARM: that Network's operation status
// polls need Microsoft.Network/locations/operations/read as Compute's
// need theirs (the operation string exists; upstream's list names only
// Compute's), the action of Providers - Get
// (Microsoft.Resources/subscriptions/providers/read), the join-of-every-
// reference rule above, and the scope a list's denial names.
//
// A policy here is a set of action names without scopes: where a grant
// must be assigned is the declaration's Scope (providers/permissions),
// not checked.

var _ cloudsim.Authorizer = (*Emulator)(nil)

// AdminClientID is the operator's application: the identity a test
// harness calls ARM as when it plays a user, another controller or the
// upstream CCM (IssueTokenFor), so a policy set for the manager's
// application never applies to it.
const AdminClientID = "5d1e4a47-0000-0000-0000-0000000000ad"

// IssueTokenFor issues an ARM access token for the application clientID
// directly (no credential needed), for tests that act as someone other
// than the configured service principal.
func (e *Emulator) IssueTokenFor(clientID string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	tok, _ := e.issueToken(clientID, "https://management.azure.com/")
	return tok
}

// tokenClaims are the claims of r's bearer token if it is one the
// emulator issued and it has not expired; nil otherwise.
func (e *Emulator) tokenClaims(r *http.Request) map[string]any {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return nil
	}
	tok = strings.TrimSpace(tok)
	e.mu.Lock()
	exp, issued := e.tokens[tok]
	now := e.cfg.Now()
	e.mu.Unlock()
	if !issued || !now.Before(exp) {
		return nil
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return nil
	}
	return decodeJWTPart(parts[1])
}

// Principal implements cloudsim.Authorizer: the application (client) ID
// of the request's bearer token, lower-cased; "" for Azure AD's own
// endpoints and for a request ARM would refuse as unauthenticated.
func (e *Emulator) Principal(r *http.Request) string {
	appid, _ := e.tokenClaims(r)["appid"].(string)
	return strings.ToLower(appid)
}

// need is one permission a request needs: the action, and the scope it
// is checked on (the request's own for the first, the referenced
// resource for a linked one).
type need struct{ action, scope string }

// Permissions implements cloudsim.Authorizer: the request's action, then
// the join actions of the resources its body references, each once.
func (e *Emulator) Permissions(r *http.Request, op string) []string {
	var out []string
	for _, n := range e.needs(r, op) {
		out = append(out, n.action)
	}
	return out
}

// actionNames are the operation strings' spelling of the emulator's
// action path segments, which clients send in any case.
var actionNames = map[string]string{
	"instanceview":  "instanceView",
	"manualupgrade": "manualUpgrade",
}

// needs are what r needs: nothing for Azure AD (its token endpoint is
// not under RBAC), else its action and, for a write, the linked ones.
func (e *Emulator) needs(r *http.Request, op string) []need {
	if strings.HasPrefix(op, "aad:") {
		return nil
	}
	p, err := parseARMPath(r.URL.Path)
	if err != nil {
		return nil
	}
	scope := strings.TrimSuffix(r.URL.Path, "/")
	verb := map[string]string{http.MethodGet: "read", http.MethodHead: "read", http.MethodPut: "write", http.MethodPatch: "write", http.MethodDelete: "delete", http.MethodPost: "action"}[r.Method]
	if verb == "" {
		return nil
	}
	var action string
	switch {
	case len(p.Types) == 0:
		// GET /subscriptions/{id}/providers/{namespace} (Providers - Get).
		action = "Microsoft.Resources/subscriptions/providers/read"
	case isAsyncOpPath(p):
		typ := "operations"
		if strings.EqualFold(p.Types[1], "operationResults") {
			typ = "operationResults"
		}
		action = canonicalNS(p.NS) + "/locations/" + typ + "/read"
	default:
		types := slices.Clone(p.Types)
		ns := canonicalNS(p.NS)
		if k, act, ok := e.kinds.resolve(p); ok {
			ns, types = k.ns, k.types()
			if act != nil {
				last := p.Types[len(p.Types)-1]
				if name, ok := actionNames[strings.ToLower(last)]; ok {
					last = name
				}
				types = append(types, last)
			}
		}
		action = ns + "/" + strings.Join(types, "/") + "/" + verb
	}
	out := []need{{action: action, scope: scope}}
	if r.Method != http.MethodPut && r.Method != http.MethodPatch {
		return out
	}
	body, ok := readJSONBody(r)
	if !ok {
		return out
	}
	seen := map[string]bool{}
	walkLinks(body, func(action, id string) {
		key := action + "\x00" + strings.ToLower(id)
		if !seen[key] {
			seen[key] = true
			out = append(out, need{action: action, scope: id})
		}
	})
	slices.SortStableFunc(out[1:], func(a, b need) int { return strings.Compare(a.action+a.scope, b.action+b.scope) })
	return out
}

// canonicalNS spells the namespaces the emulator serves as the operation
// strings do; any other stays as sent.
func canonicalNS(ns string) string {
	for _, c := range []string{computeNS, networkNS, "Microsoft.Resources"} {
		if strings.EqualFold(ns, c) {
			return c
		}
	}
	return ns
}

// readJSONBody decodes a request body and puts it back for Serve.
func readJSONBody(r *http.Request) (map[string]any, bool) {
	if r.Body == nil {
		return nil, false
	}
	b, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(b))
	if err != nil {
		return nil, false
	}
	var body map[string]any
	if json.Unmarshal(b, &body) != nil {
		return nil, false
	}
	return body, true
}

// linkActions are the properties that reference another resource, with
// the action the linked access check asks on it ("Azure resource
// provider operations", Microsoft.Network: "Joins a subnet", "Joins a
// public IP address", "Joins a load balancer backend address pool",
// "Joins a network security group", "Joins a route table", ...). A
// reference is an object with an "id", or a list of them, wherever it
// is nested (a load balancer's frontends, a NIC's or a scale set
// model's IP configurations, a virtual network's subnets).
// "virtualNetwork" is an IP-based backend pool's (or address's)
// network: "Microsoft.Network/virtualNetworks/joinLoadBalancer/action",
// which the AKS service permissions list for IP-based backend pools.
// Read-only back-references (a subnet's ipConfigurations, a security
// group's networkInterfaces, a public IP's ipConfiguration, a pool's
// backendIPConfigurations) are none of these, and are never checked.
var linkActions = map[string]string{
	"subnet":                                "Microsoft.Network/virtualNetworks/subnets/join/action",
	"publicIPAddress":                       "Microsoft.Network/publicIPAddresses/join/action",
	"publicIPPrefix":                        "Microsoft.Network/publicIPPrefixes/join/action",
	"loadBalancerBackendAddressPools":       "Microsoft.Network/loadBalancers/backendAddressPools/join/action",
	"loadBalancerInboundNatRules":           "Microsoft.Network/loadBalancers/inboundNatRules/join/action",
	"loadBalancerInboundNatPools":           "Microsoft.Network/loadBalancers/inboundNatPools/join/action",
	"healthProbe":                           "Microsoft.Network/loadBalancers/probes/join/action",
	"networkSecurityGroup":                  "Microsoft.Network/networkSecurityGroups/join/action",
	"routeTable":                            "Microsoft.Network/routeTables/join/action",
	"natGateway":                            "Microsoft.Network/natGateways/join/action",
	"applicationSecurityGroups":             "Microsoft.Network/applicationSecurityGroups/join/action",
	"sourceApplicationSecurityGroups":       "Microsoft.Network/applicationSecurityGroups/join/action",
	"destinationApplicationSecurityGroups":  "Microsoft.Network/applicationSecurityGroups/join/action",
	"applicationGatewayBackendAddressPools": "Microsoft.Network/applicationGateways/backendAddressPools/join/action",
	"virtualNetwork":                        "Microsoft.Network/virtualNetworks/joinLoadBalancer/action",
}

// walkLinks calls found for every reference in v (see linkActions); a
// reference is not looked into (an expanded one's own references are
// its, not the body's).
func walkLinks(v any, found func(action, id string)) {
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			action, link := linkActions[k]
			if !link {
				walkLinks(child, found)
				continue
			}
			refs, _ := child.([]any)
			if m, ok := child.(map[string]any); ok {
				refs = []any{m}
			}
			for _, ref := range refs {
				if id := idOfRef(ref); id != "" {
					found(action, id)
				}
			}
		}
	case []any:
		for _, child := range x {
			walkLinks(child, found)
		}
	}
}

// WriteDenied implements cloudsim.Authorizer with ARM's 403s, worded as
// ARM words them: AuthorizationFailed when the request's own action is
// missing ("The client '<appid>' with object id '<oid>' does not have
// authorization to perform action '<action>' over scope '<scope>' or the
// scope is invalid. If access was recently granted, please refresh your
// credentials."), LinkedAuthorizationFailed when a referenced resource's
// join action is ("... has permission to perform action '<action>' on
// scope '<scope>'; however, it does not have permission to perform
// action '<join>' on the linked scope(s) '<id>' or the linked scope(s)
// are invalid."). The scope of a list is its collection path here; ARM's
// wording for lists was not checked.
func (e *Emulator) WriteDenied(w http.ResponseWriter, r *http.Request, op, missing string) {
	claims := e.tokenClaims(r)
	appid, _ := claims["appid"].(string)
	oid, _ := claims["oid"].(string)
	needs := e.needs(r, op)
	if len(needs) == 0 {
		writeARMError(w, &armError{Status: http.StatusForbidden, Code: "AuthorizationFailed", Message: "The client does not have authorization to perform this action."})
		return
	}
	i := slices.IndexFunc(needs, func(n need) bool { return n.action == missing })
	if i <= 0 {
		writeARMError(w, &armError{Status: http.StatusForbidden, Code: "AuthorizationFailed",
			Message: fmt.Sprintf("The client '%s' with object id '%s' does not have authorization to perform action '%s' over scope '%s' or the scope is invalid. If access was recently granted, please refresh your credentials.",
				appid, oid, missing, needs[0].scope)})
		return
	}
	writeARMError(w, &armError{Status: http.StatusForbidden, Code: "LinkedAuthorizationFailed",
		Message: fmt.Sprintf("The client '%s' with object id '%s' has permission to perform action '%s' on scope '%s'; however, it does not have permission to perform action '%s' on the linked scope(s) '%s' or the linked scope(s) are invalid.",
			appid, oid, needs[0].action, needs[0].scope, missing, needs[i].scope)})
}
