package gce

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// Authorization as Compute Engine does it (cloudsim.Authorizer): a call
// is checked against the IAM permissions of the service account behind
// its bearer token, and needs
//
//   - the permission of its method, "compute.<collection>.<verb>", where
//     the collection is the API resource's (instances, regionBackendServices,
//     zoneOperations) and the verb the method's: list (aggregatedList and
//     instanceGroups.listInstances too), get (operations' wait too),
//     create for insert, delete, update for patch and update, and a
//     custom method's own name (instances.stop, targetPools.addInstance,
//     forwardingRules.setTarget), but for instanceGroups.addInstances,
//     removeInstances and setNamedPorts, which need
//     compute.instanceGroups.update;
//   - and one more for each resource the call makes use of, on that
//     resource: compute.networks.updatePolicy on the network a firewall
//     rule (created, changed or deleted) or a route (created or deleted)
//     is in; compute.instances.use on an instance a target pool, an
//     instance group or a route's next hop takes; compute.targetPools.use
//     and compute.regionBackendServices.use on a forwarding rule's
//     target or backend service; compute.httpHealthChecks.useReadOnly,
//     compute.healthChecks.useReadOnly and
//     compute.regionHealthChecks.useReadOnly on the checks a target pool
//     or backend service names; compute.instanceGroups.use on a backend
//     service's groups; compute.subnetworks.use on the subnetwork of an
//     internal address or forwarding rule; compute.addresses.use (an
//     external one) or compute.addresses.useInternal on a reserved
//     address a forwarding rule takes the IP of.
//
// An internal address is created and deleted with
// compute.addresses.createInternal and deleteInternal instead of create
// and delete.
//
// The permission names are Compute Engine's (IAM permissions reference,
// compute.*; the API reference's "IAM Permissions" of each method). What
// is inferred rather than read there: that operations' wait needs the
// operation's get (there is no wait permission); that a route's next-hop
// instance needs compute.instances.use and deleting a route
// compute.networks.updatePolicy, by the rule every other reference
// follows; that removeInstance and removeHealthCheck need nothing on the
// instance or check removed.
//
// The denial is Compute Engine's 403 forbidden, "Required '<permission>'
// permission for '<resource>'", the resource the permission is checked
// on: the project for a list, the resource itself for the other methods
// (the one to be made for an insert), the used resource for the extras.

var _ cloudsim.Authorizer = (*Emulator)(nil)

// Principal implements cloudsim.Authorizer: the service account the
// bearer token was issued to (oauth2.go). A call without credentials, or
// with a token the emulator did not issue or that expired, has none (the
// latter is answered 401 before any authorization, auth.go).
func (e *Emulator) Principal(r *http.Request) string {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return e.auth.principal(strings.TrimSpace(tok), e.cfg.Now())
}

// Permissions implements cloudsim.Authorizer.
func (e *Emulator) Permissions(r *http.Request, op string) []string {
	var out []string
	for _, n := range e.needs(r, op) {
		out = append(out, n.permission)
	}
	return out
}

// WriteDenied implements cloudsim.Authorizer.
func (e *Emulator) WriteDenied(w http.ResponseWriter, r *http.Request, op, missing string) {
	resource := "projects/" + e.cfg.Project
	for _, n := range e.needs(r, op) {
		if n.permission == missing {
			resource = n.resource
			break
		}
	}
	writeError(w, errForbidden(missing, resource))
}

// errForbidden is Compute Engine's answer to a caller without a
// permission.
func errForbidden(permission, resource string) *apiError {
	return &apiError{Status: http.StatusForbidden, Reason: "forbidden",
		Message: fmt.Sprintf("Required '%s' permission for '%s'", permission, resource)}
}

// need is one permission a call needs and the resource it is checked on.
type need struct {
	permission string
	resource   string
}

// groupUpdates are the instance groups' methods that need update.
var groupUpdates = map[string]bool{"AddInstances": true, "RemoveInstances": true, "SetNamedPorts": true}

// needs are what the call r for op needs, its method's permission
// first.
func (e *Emulator) needs(r *http.Request, op string) []need {
	if op == tokenOp {
		// The token endpoint is OAuth2's, not Compute Engine's.
		return nil
	}
	p, err := parsePath(r.URL.Path)
	if err != nil {
		return nil
	}
	resource, method, _ := strings.Cut(strings.TrimPrefix(op, "compute:"), ".")
	collection := strings.ToLower(resource[:1]) + resource[1:]
	project := "projects/" + p.Project
	target := p.relative()
	if p.Action != "" {
		target = strings.TrimSuffix(target, "/"+p.Action)
	}
	var verb string
	switch {
	case method == "List", method == "AggregatedList", method == "ListInstances":
		verb, target = "list", project
	case method == "Get", method == "Wait":
		verb = "get"
	case method == "Insert":
		verb = "create"
	case method == "Delete":
		verb = "delete"
	case method == "Patch", method == "Update", resource == "InstanceGroups" && groupUpdates[method]:
		verb = "update"
	default:
		verb = strings.ToLower(method[:1]) + method[1:]
	}
	body := readBody(r)
	if method == "Insert" {
		if name, _ := body["name"].(string); name != "" {
			target += "/" + name
		}
	}
	x := &extras{e: e, project: p.Project}
	main := need{"compute." + collection + "." + verb, target}
	switch resource + "." + method {
	case "Addresses.Insert":
		if body["addressType"] == "INTERNAL" {
			main.permission = "compute.addresses.createInternal"
			x.use("compute.subnetworks.use", body["subnetwork"])
		}
	case "Addresses.Delete":
		if a, ok := e.storedMsg(target).(*computepb.Address); ok && a.GetAddressType() == "INTERNAL" {
			main.permission = "compute.addresses.deleteInternal"
		}
	case "Firewalls.Insert":
		x.network(body["network"])
	case "Firewalls.Patch", "Firewalls.Update", "Firewalls.Delete":
		if f, ok := e.storedMsg(target).(*computepb.Firewall); ok {
			x.network(f.GetNetwork())
		}
	case "Routes.Insert":
		x.network(body["network"])
		x.use("compute.instances.use", body["nextHopInstance"])
	case "Routes.Delete":
		if rt, ok := e.storedMsg(target).(*computepb.Route); ok {
			x.network(rt.GetNetwork())
		}
	case "TargetPools.Insert":
		x.uses("compute.instances.use", body["instances"], "")
		x.uses("compute.httpHealthChecks.useReadOnly", body["healthChecks"], "")
	case "TargetPools.AddInstance", "InstanceGroups.AddInstances":
		x.uses("compute.instances.use", body["instances"], "instance")
	case "TargetPools.AddHealthCheck":
		x.uses("compute.httpHealthChecks.useReadOnly", body["healthChecks"], "healthCheck")
	case "ForwardingRules.Insert":
		x.use("compute.targetPools.use", body["target"])
		x.use("compute.regionBackendServices.use", body["backendService"])
		if body["loadBalancingScheme"] == "INTERNAL" {
			x.use("compute.subnetworks.use", body["subnetwork"])
		}
		x.ruleAddress(body["IPAddress"])
	case "ForwardingRules.SetTarget":
		x.use("compute.targetPools.use", body["target"])
	case "RegionBackendServices.Insert", "RegionBackendServices.Patch", "RegionBackendServices.Update":
		x.healthChecks(body["healthChecks"])
		if backends, ok := body["backends"].([]any); ok {
			for _, b := range backends {
				if m, ok := b.(map[string]any); ok {
					x.use("compute.instanceGroups.use", m["group"])
				}
			}
		}
	}
	return append([]need{main}, x.out...)
}

// extras collects the permissions a call needs on the resources it uses.
type extras struct {
	e       *Emulator
	project string
	out     []need
}

// use adds permission on the resource ref names, when it names one.
func (x *extras) use(permission string, ref any) {
	s, _ := ref.(string)
	if s == "" {
		return
	}
	path, ok := x.e.refPath(s)
	if !ok {
		path = s
	}
	for _, n := range x.out {
		if n.permission == permission && n.resource == path {
			return
		}
	}
	x.out = append(x.out, need{permission, path})
}

// uses adds permission on each reference of a list: strings, or objects
// whose field holds the reference ({"instance": link}).
func (x *extras) uses(permission string, refs any, field string) {
	list, _ := refs.([]any)
	for _, v := range list {
		if m, ok := v.(map[string]any); ok && field != "" {
			v = m[field]
		}
		x.use(permission, v)
	}
}

// network adds compute.networks.updatePolicy on a firewall rule's or a
// route's network (the default network when none is named).
func (x *extras) network(ref any) {
	if s, _ := ref.(string); s == "" {
		ref = "projects/" + x.project + "/global/networks/" + defaultNetwork
	}
	x.use("compute.networks.updatePolicy", ref)
}

// defaultNetwork is the network a firewall rule is in when it names none,
// as on GCE.
const defaultNetwork = "default"

// healthChecks adds the use of a backend service's checks, global or
// regional.
func (x *extras) healthChecks(refs any) {
	list, _ := refs.([]any)
	for _, v := range list {
		s, _ := v.(string)
		path, ok := x.e.refPath(s)
		switch {
		case !ok:
		case strings.Contains(path, "/regions/"):
			x.use("compute.regionHealthChecks.useReadOnly", path)
		default:
			x.use("compute.healthChecks.useReadOnly", path)
		}
	}
}

// ruleAddress adds the use of the reserved address whose IP a forwarding
// rule takes, named by reference or by its IP; an IP no address reserves
// (an ephemeral internal one) uses nothing.
func (x *extras) ruleAddress(v any) {
	s, _ := v.(string)
	if s == "" {
		return
	}
	var a *computepb.Address
	var path string
	if p, ok := x.e.refPath(s); ok {
		path = p
		a, _ = x.e.storedMsg(p).(*computepb.Address)
	} else if ip, err := netip.ParseAddr(s); err == nil {
		x.e.mu.Lock()
		if o := x.e.addressHolding(ip.String()); o != nil {
			path, a = o.path, o.msg.(*computepb.Address)
		}
		x.e.mu.Unlock()
	}
	if a == nil {
		return
	}
	if a.GetAddressType() == "INTERNAL" {
		x.use("compute.addresses.useInternal", path)
		return
	}
	x.use("compute.addresses.use", path)
}

// storedMsg is the message of the resource at path, nil when there is none.
func (e *Emulator) storedMsg(path string) any {
	e.mu.Lock()
	defer e.mu.Unlock()
	if o := e.objectAt(path); o != nil {
		return o.msg
	}
	return nil
}

// readBody decodes a request's JSON body, and puts it back for whoever
// reads it next; nil when there is none.
func readBody(r *http.Request) map[string]any {
	if r.Body == nil {
		return nil
	}
	b, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	if err != nil || len(b) == 0 {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}
