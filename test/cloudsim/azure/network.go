package azure

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Microsoft.Network: public IP addresses, load balancers (with their
// backend address pools as nested resources), network security groups
// (security rules and default security rules nested), route tables
// (routes nested), virtual networks (subnets nested) and network
// interfaces.
//
// Nested resources are objects of their own under their parent's ID, so
// the child endpoints (Subnets_*, Routes_*, SecurityRules_*,
// LoadBalancerBackendAddressPools_*) and the parent see the same data:
// the parent's PUT replaces the set (a child the body leaves out is
// deleted, as the network provider does), the parent's GET embeds them.
//
// Back-references (a public IP's ipConfiguration, a subnet's
// ipConfigurations, a route table's subnets, a security group's subnets
// and networkInterfaces, a pool's backendIPConfigurations) are computed
// when a resource is shown, from the forward references stored on the
// other side, so they follow resources as they come and go. Private
// addresses are allocated against the same scan.
//
// With Config.OperationDelay > 0 the provider's concurrency rules show:
// a write on a resource while another operation is in progress on it,
// its parent or a sibling nested resource is refused with 409
// AnotherOperationInProgress (a second PUT of the same resource is
// accepted and supersedes the first, as the network provider does), and
// a write that references a resource still Updating or Deleting is
// refused with 429 RetryableError/ReferencedResourceNotProvisioned, which
// azcore retries.

const networkNS = "Microsoft.Network"

// networkAPIVersions are the api-versions the emulated provider accepts:
// what the current armnetwork generation sends (2025-05-01), armnetwork/v6's
// and older ones, down to the Azure Stack Hub profile's 2018-11-01 (what
// the upstream Azure CCM sends for AzureStackCloud), all of which ARM
// serves.
var networkAPIVersions = []string{"2025-05-01", "2024-05-01", "2024-03-01", "2023-09-01", "2018-11-01"}

func registerNetwork(t *kindTable) {
	add := func(k *kind) {
		k.service, k.ns, k.apiVersions, k.etag, k.lro = "network", networkNS, networkAPIVersions, true, true
		if strings.Contains(k.typ, "/") {
			k.notFound = nestedNotFound
		} else {
			k.tracked, k.listAll = true, true
		}
		t.add(k)
	}
	add(&kind{typ: "publicIPAddresses", group: "PublicIPAddresses",
		put: putPublicIP, del: delPublicIP, view: viewPublicIP})
	add(&kind{typ: "loadBalancers", group: "LoadBalancers",
		put: putLoadBalancer, del: delLoadBalancer, removed: removedLoadBalancer, view: viewLoadBalancer})
	add(&kind{typ: "loadBalancers/backendAddressPools", group: "LoadBalancerBackendAddressPools",
		put: putBackendPool, del: delBackendPool, removed: removedChild, view: viewBackendPool})
	add(&kind{typ: "networkSecurityGroups", group: "NetworkSecurityGroups",
		put: putSecurityGroup, del: delSecurityGroup, view: viewSecurityGroup})
	add(&kind{typ: "networkSecurityGroups/securityRules", group: "SecurityRules",
		put: putSecurityRule, del: delFamily, removed: removedChild, view: viewChild})
	add(&kind{typ: "networkSecurityGroups/defaultSecurityRules", group: "DefaultSecurityRules",
		readOnly: true, view: viewChild})
	add(&kind{typ: "routeTables", group: "RouteTables",
		put: putRouteTable, del: delRouteTable, view: viewRouteTable})
	add(&kind{typ: "routeTables/routes", group: "Routes",
		put: putRoute, del: delFamily, removed: removedChild, view: viewChild})
	add(&kind{typ: "virtualNetworks", group: "VirtualNetworks",
		put: putVirtualNetwork, del: delVirtualNetwork, view: viewVirtualNetwork})
	add(&kind{typ: "virtualNetworks/subnets", group: "Subnets",
		put: putSubnet, del: delSubnet, removed: removedSubnet, view: viewSubnet})
	add(&kind{typ: "networkInterfaces", group: "NetworkInterfaces",
		put: putNetworkInterface, del: delNetworkInterface, removed: removedNetworkInterface, view: viewNetworkInterface})
	// Private Link Services are served only as far as other clients look
	// for them (the upstream Azure CCM lists them at start): a listing is
	// empty, a GET is ResourceNotFound, and none can be made here.
	add(&kind{typ: "privateLinkServices", group: "PrivateLinkServices", readOnly: true, view: viewChild})
}

// netKind returns a Microsoft.Network kind by type path.
func (e *Emulator) netKind(typ string) *kind { return e.kindOf(networkNS, typ) }

// ---- errors, worded as the network provider words them ----

func errBadRequest(code, format string, args ...any) *armError {
	return &armError{Status: http.StatusBadRequest, Code: code, Message: fmt.Sprintf(format, args...)}
}

// errInvalidFormat is the provider's answer to a body it cannot take
// apart: InvalidRequestFormat with the particular problems as details.
func errInvalidFormat(details ...*armError) *armError {
	return &armError{Status: http.StatusBadRequest, Code: "InvalidRequestFormat", Message: "Cannot parse the request.", Details: details}
}

func detail(code, format string, args ...any) *armError {
	return &armError{Code: code, Message: fmt.Sprintf(format, args...)}
}

func errInvalidReference(ref, referrer string) *armError {
	return errBadRequest("InvalidResourceReference",
		"Resource %s referenced by resource %s was not found. Please make sure that the referenced resource exists, and that both resources are in the same region.", ref, referrer)
}

func errNestedNotFound(id string) *armError {
	return &armError{Status: http.StatusNotFound, Code: "NotFound", Message: fmt.Sprintf("Resource %s not found.", id)}
}

// nestedNotFound is the 404 of a nested network resource: ARM's
// ResourceNotFound for a parent that does not exist, the provider's
// NotFound for a missing child of one that does.
func nestedNotFound(e *Emulator, p armPath) *armError {
	pk := e.kinds.byKey[typeKey(p.NS, p.Types[:len(p.Types)-1])]
	pp := armPath{Sub: p.Sub, RG: p.RG, NS: p.NS, Types: p.Types[:len(p.Types)-1], Names: p.Names[:len(p.Names)-1]}
	if pk != nil && e.objectAt(pk, pp) == nil {
		return errResourceNotFound(pk, pp)
	}
	return errNestedNotFound(resourceIDOf(p))
}

func resourceIDOf(p armPath) string {
	return "/subscriptions/" + p.Sub + "/resourceGroups/" + p.RG + "/providers/" + p.NS + "/" + strings.Join(interleave(p.Types, p.Names), "/")
}

// errAnotherOperation refuses a write while an operation is in progress
// on the resource or one it belongs with.
func errAnotherOperation(op *asyncOp, host string) *armError {
	uri := "/subscriptions/" + op.obj.idSub() + "/providers/" + op.ns + "/locations/" + locationOf(op.obj) + "/operations/" + op.id + "?api-version=" + op.apiVersion
	if host != "" {
		uri = op.url(host, "operations")
	}
	return &armError{Status: http.StatusConflict, Code: "AnotherOperationInProgress",
		Message: "Another operation on this or dependent resource is in progress. To retrieve status of the operation use uri: " + uri + "."}
}

// operationNames are the provider's names of its PUT operations, as
// ReferencedResourceNotProvisioned quotes them.
var operationNames = map[string]string{
	"publicipaddresses":                   "PublicIpAddress",
	"loadbalancers":                       "LoadBalancer",
	"loadbalancers/backendaddresspools":   "LoadBalancerBackendAddressPool",
	"networksecuritygroups":               "NetworkSecurityGroup",
	"networksecuritygroups/securityrules": "SecurityRule",
	"routetables":                         "RouteTable",
	"routetables/routes":                  "Route",
	"virtualnetworks":                     "VirtualNetwork",
	"virtualnetworks/subnets":             "Subnet",
	"networkinterfaces":                   "NetworkInterface",
}

// checkProvisioned refuses a reference to a resource an operation is
// still working on: 429 RetryableError, which clients retry.
func (e *Emulator) checkProvisioned(ref *object, referrer string) *armError {
	if ref == nil {
		return nil
	}
	op := ref.pending
	if op == nil || op.done {
		// A resource is Updating while anything nested in it is.
		op = e.busyFamily(ref.id, nil)
	}
	if op == nil {
		return nil
	}
	state, verb := "Updating", "Put"
	if op.method == http.MethodDelete && op.obj == ref {
		state, verb = "Deleting", "Delete"
	} else if op.method == http.MethodDelete {
		verb = "Delete"
	}
	return &armError{Status: http.StatusTooManyRequests, Code: "RetryableError", Message: "A retryable error occured.",
		Details: []*armError{detail("ReferencedResourceNotProvisioned",
			"Cannot proceed with operation because resource %s used by resource %s is not in Succeeded state. Resource is in %s state and the last operation that updated/is updating the resource is %s%sOperation.",
			ref.id, referrer, state, verb, operationNames[strings.ToLower(op.obj.kind.typ)])}}
}

// ---- IDs ----

// parentOf is the ID of the resource an ID is nested in.
func parentOf(id string) string {
	segs := strings.Split(id, "/")
	return strings.Join(segs[:len(segs)-2], "/")
}

// topLevelOf is the ID of the top-level resource an ID is, or is nested
// in: /subscriptions/s/resourceGroups/g/providers/ns/type/name.
func topLevelOf(id string) string {
	segs := strings.Split(id, "/")
	if len(segs) > 9 {
		segs = segs[:9]
	}
	return strings.Join(segs, "/")
}

func lastSegment(id string) string { return id[strings.LastIndex(id, "/")+1:] }

func sameID(a, b string) bool { return a != "" && strings.EqualFold(a, b) }

// lookupKind returns the object with id if it is of the kind typ.
func (e *Emulator) lookupKind(id, typ string) *object {
	o := e.lookup(id)
	if o == nil || !strings.EqualFold(o.kind.ns, networkNS) || !strings.EqualFold(o.kind.typ, typ) {
		return nil
	}
	return o
}

// ---- JSON helpers ----

// decodeBody decodes a request body into an armnetwork model; a body
// the model cannot take is the provider's InvalidRequestFormat.
func decodeBody[T any](body map[string]any) (T, *armError) {
	v, err := decodeAs[T](body)
	if err != nil {
		return v, errInvalidFormat(detail("InvalidJson", "%s", err.Error()))
	}
	return v, nil
}

// copyBody deep-copies a stored body for a view to complete (cheaper
// than a JSON round trip; bodies hold JSON values).
func copyBody(m map[string]any) map[string]any { return deepCopy(m).(map[string]any) }

func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = deepCopy(x)
		}
		return m
	case []any:
		s := make([]any, len(t))
		for i, x := range t {
			s[i] = deepCopy(x)
		}
		return s
	}
	return v
}

// replaceBody makes dst the JSON form of v, in place (the core stores the
// map the hook completed).
func replaceBody(dst map[string]any, v any) {
	m := encodeJSON(v)
	clear(dst)
	maps.Copy(dst, m)
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// refID reads m[key].id.
func refID(m map[string]any, key string) string {
	r, _ := m[key].(map[string]any)
	s, _ := r["id"].(string)
	return s
}

func subResource(id string) map[string]any { return map[string]any{"id": id} }

func subResources(ids []string) []any {
	out := make([]any, 0, len(ids))
	for _, id := range ids {
		out = append(out, subResource(id))
	}
	return out
}

// childName is a child's name from the body: its name, else the last
// segment of its id.
func childName(name, id *string) string {
	if n := deref(name); n != "" {
		return n
	}
	if s := deref(id); s != "" {
		return lastSegment(s)
	}
	return ""
}

// nameSet tracks the names of one collection of child resources.
type nameSet struct {
	parent string
	seen   map[string]bool
}

func newNames(parent string) *nameSet { return &nameSet{parent: parent, seen: map[string]bool{}} }

// add returns the problem with name, if any: missing or taken.
func (n *nameSet) add(name, path string) *armError {
	if name == "" {
		return detail("MissingJsonName", "Value for name is missing. Path %s.", path)
	}
	if n.seen[strings.ToLower(name)] {
		return detail("DuplicateResourceName", "Resource %s has two child resources with the same name (%s).", n.parent, name)
	}
	n.seen[strings.ToLower(name)] = true
	return nil
}

// ---- nested resources ----

// childrenOf returns the objects of kind k nested directly under parent,
// by ID.
func (e *Emulator) childrenOf(parentID string, k *kind) []*object {
	segs := k.types()
	prefix := strings.ToLower(parentID + "/" + segs[len(segs)-1] + "/")
	var out []*object
	for key, o := range e.objs {
		if o.kind == k && strings.HasPrefix(key, prefix) && !strings.Contains(key[len(prefix):], "/") {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b *object) int { return strings.Compare(strings.ToLower(a.id), strings.ToLower(b.id)) })
	return out
}

// setChildren makes the children of kind k under the parent exactly
// bodies (complete, each with its name), updating the objects whose names
// remain and removing the others. The caller has checked the removals
// are allowed.
func (e *Emulator) setChildren(parentRG string, parentNames []string, parentID string, k *kind, bodies []map[string]any) {
	keep := map[string]bool{}
	for _, b := range bodies {
		name, _ := b["name"].(string)
		keep[strings.ToLower(name)] = true
		names := append(slices.Clone(parentNames), name)
		if o := e.lookup(parentID + "/" + k.types()[len(k.types())-1] + "/" + name); o != nil && o.kind == k {
			b["id"], b["name"], b["type"], b["etag"] = o.id, o.name(), k.fullType(), e.newETag()
			propsOf(b)["provisioningState"] = "Succeeded"
			o.body = b
			continue
		}
		propsOf(b)["provisioningState"] = "Succeeded"
		e.insert(k, parentRG, names, b)
	}
	for _, o := range e.childrenOf(parentID, k) {
		if !keep[strings.ToLower(o.name())] {
			e.remove(o)
		}
	}
}

// dropped returns the children of kind k under parentID a new set of
// names leaves out.
func (e *Emulator) dropped(parentID string, k *kind, kept map[string]bool) []*object {
	var out []*object
	for _, o := range e.childrenOf(parentID, k) {
		if !kept[strings.ToLower(o.name())] {
			out = append(out, o)
		}
	}
	return out
}

// renderChildren renders the children of kind k under parent for
// embedding in the parent's view.
func (e *Emulator) renderChildren(parent *object, k *kind) ([]any, *armError) {
	out := []any{}
	for _, c := range e.childrenOf(parent.id, k) {
		b, aerr := e.render(c, url.Values{})
		if aerr != nil {
			return nil, aerr
		}
		out = append(out, b)
	}
	return out, nil
}

// busyFamily returns an operation in progress on the resource family of
// id (the top-level resource and everything nested in it), other than on
// self.
func (e *Emulator) busyFamily(id string, self *object) *asyncOp {
	top := strings.ToLower(topLevelOf(id))
	var found *asyncOp
	for _, op := range e.ops {
		o := op.obj
		if op.done || o == self || o.pending != op {
			continue
		}
		key := strings.ToLower(o.id)
		if e.objs[key] != o {
			continue
		}
		if key == top || strings.HasPrefix(key, top+"/") {
			if found == nil || op.start.Before(found.start) {
				found = op
			}
		}
	}
	return found
}

// families are the types whose resources have nested ones: their state
// follows their children's operations.
var families = map[string]bool{"loadbalancers": true, "networksecuritygroups": true, "routetables": true, "virtualnetworks": true}

// stateOf is the provisioningState a GET shows: Updating while an
// operation is in progress on anything in the family (Deleting for the
// object's own DELETE).
func (e *Emulator) stateOf(o *object) string {
	if o.pending != nil && !o.pending.done {
		if o.pending.method == http.MethodDelete {
			return "Deleting"
		}
		return "Updating"
	}
	if (len(o.names) > 1 || families[strings.ToLower(o.kind.typ)]) && e.busyFamily(o.id, o) != nil {
		return "Updating"
	}
	if s, _ := o.props()["provisioningState"].(string); s != "" {
		return s
	}
	return "Succeeded"
}

// touch gives a resource a new ETag, as the provider does when a
// back-reference it shows changes.
func (e *Emulator) touch(id string) {
	if o := e.lookup(id); o != nil {
		e.renewETag(o)
	}
}

// touchParent is for a nested resource's writes: the parent is
// rewritten with it.
func (e *Emulator) touchParent(id string) { e.touch(parentOf(id)) }

// delFamily refuses a DELETE while another operation is in progress on
// the resource's family.
func delFamily(e *Emulator, o *object) *armError {
	if op := e.busyFamily(o.id, o); op != nil {
		return errAnotherOperation(op, "")
	}
	return nil
}

// removedChild: a nested resource gone rewrites its parent.
func removedChild(e *Emulator, o *object) { e.touchParent(o.id) }

// viewChild shows a nested resource with its family's state.
func viewChild(e *Emulator, o *object, _ url.Values) (map[string]any, *armError) {
	out := copyBody(o.body)
	propsOf(out)["provisioningState"] = e.stateOf(o)
	return out, nil
}

// putChildPrologue is the common start of a nested resource's PUT: the
// family must be idle, the parent is returned.
func (e *Emulator) putChildPrologue(c *putCall) (*object, *armError) {
	if op := e.busyFamily(c.ID, c.Old); op != nil {
		return nil, errAnotherOperation(op, c.Host)
	}
	parent := e.lookup(parentOf(c.ID))
	if parent == nil {
		return nil, errParentNotFound(parentOf(c.ID))
	}
	return parent, nil
}

// parentNames returns the names the PUT's object has (its path names as
// first created) and its resource group.
func (c *putCall) names() (rg string, names []string) {
	if c.Old != nil {
		return c.Old.rg, c.Old.names
	}
	return c.Path.RG, c.Path.Names
}
