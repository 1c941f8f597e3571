package gce

import (
	"net/http"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// A kind is one resource type: where it lives, its computepb messages,
// which generic methods it answers, and hooks for what is particular to
// it. Adding a type is one file with a register function listed in
// registerKinds; rest.go serves it. Hooks run with the emulator's lock held and may read and
// change any state.
type kind struct {
	// Resource names the API resource in operation names
	// ("compute:<Resource>.<Method>"): "Instances", "Firewalls",
	// "RegionBackendServices".
	Resource string
	// Collection is the path segment: "instances", "forwardingRules".
	Collection string
	Scope      scope
	// Kind is the message's kind field, "compute#instance".
	Kind string
	// Singular is how GCE's in-use errors name one ("address",
	// "target_pool", "http_health_check").
	Singular string

	// New makes an empty resource message, NewList an empty list message
	// (items, nextPageToken, ...), NewAggregated an empty aggregated list
	// (a map of scope to scoped list); nil NewAggregated: no
	// aggregatedList.
	New, NewList, NewAggregated func() proto.Message

	// Verbs are the generic methods served; others answer 501.
	Verbs verb
	// DeleteNow: a delete forgets the resource at once and answers an
	// empty body instead of an operation (operations themselves).
	DeleteNow bool

	// Prepare validates and completes a resource being inserted, patched
	// or updated (defaults, normalised references, addresses). The
	// generic code then sets name, id, kind, selfLink, creationTimestamp
	// and zone or region. An error refuses the call, or, when async,
	// fails its operation.
	Prepare func(e *Emulator, c *change) *apiError
	// CheckDelete may refuse a delete (a subnetwork's own route). The
	// generic code refuses deleting what others use (Refs).
	CheckDelete func(e *Emulator, o *object) *apiError
	// Deleting is told when a delete is accepted, before its operation is
	// DONE (an instance goes STOPPING).
	Deleting func(e *Emulator, o *object)
	// Removed is told when the resource is gone, to release what it held
	// (addresses).
	Removed func(e *Emulator, o *object)
	// View fills in what is computed on every read (an address's status
	// and users) on m, a copy of the stored message.
	View func(e *Emulator, o *object, m proto.Message)
	// Refs lists the resources o references (refs.go).
	Refs func(e *Emulator, o *object) []ref
	// Forget is told that gone, a resource o references without
	// blocking its deletion, was deleted, so o can drop it as GCE does (a
	// deleted instance leaves its target pools and instance groups). Kinds
	// without it keep the dangling reference (a route's next hop).
	Forget func(e *Emulator, o *object, gone string)
	// Actions are custom methods on an item ("stop", "start", "wait"),
	// by path segment.
	Actions map[string]actionFunc

	store *cloudsim.Store[*object]
}

// verb is a set of generic methods.
type verb uint8

const (
	verbGet verb = 1 << iota
	verbList
	verbInsert
	verbDelete
	verbPatch
	verbUpdate

	verbsRead = verbGet | verbList
	verbsCRUD = verbGet | verbList | verbInsert | verbDelete
)

// actionFunc serves a custom method on o. It answers the call itself.
type actionFunc func(e *Emulator, w http.ResponseWriter, r *http.Request, o *object, op string)

// change is a resource being inserted (Old nil), patched or updated.
type change struct {
	// Type is the operationType: "insert", "patch" or "update".
	Type string
	Obj  *object
	// Msg is the resource as it will be stored.
	Msg proto.Message
	// Old is the stored resource before a patch or update.
	Old proto.Message
}

// object is one stored resource.
type object struct {
	kind *kind
	// location is the zone or region; "" for global and project scope.
	location string
	name     string
	path     string
	msg      proto.Message
	// busy is the operation changing the object until it is DONE; another
	// change meanwhile is refused with resourceNotReady.
	busy *operation
	// hidden: inserted by an operation not yet DONE. Gets and lists do not
	// see it; inserts of the same name conflict with it.
	hidden bool
	// members are what the resource holds that its message does not show
	// (an instance group's instances, as links, in the order added).
	members []string
}

func (o *object) link() string { return link(o.path) }

// kindTable holds the kinds by scope and collection.
type kindTable struct {
	byKey map[string]*kind
	all   []*kind
}

func newKindTable() *kindTable { return &kindTable{byKey: map[string]*kind{}} }

func kindKey(s scope, collection string) string { return s.String() + "/" + collection }

func (t *kindTable) add(k *kind) {
	key := kindKey(k.Scope, k.Collection)
	if t.byKey[key] != nil {
		panic("cloudsim/gce: kind registered twice: " + key)
	}
	k.store = cloudsim.NewStore("gce/"+key, func(o *object) string { return o.path })
	t.byKey[key] = k
	t.all = append(t.all, k)
}

func (t *kindTable) get(s scope, collection string) *kind { return t.byKey[kindKey(s, collection)] }

// aggregated finds the kind an aggregated list of collection lists.
func (t *kindTable) aggregated(collection string) *kind {
	for _, k := range t.all {
		if k.Collection == collection && k.NewAggregated != nil {
			return k
		}
	}
	return nil
}

// resourceName names p's resource for operation names: the kind's, or
// for an unknown collection its name capitalised
// ("networkEndpointGroups" -> "NetworkEndpointGroups"), so calls to what is not emulated are still counted
// under a readable name.
func (t *kindTable) resourceName(p reqPath) string {
	var k *kind
	switch {
	case p.Collection == "":
		return "Projects"
	case p.Scope == scopeAggregated:
		k = t.aggregated(p.Collection)
	default:
		k = t.get(p.Scope, p.Collection)
	}
	if k != nil {
		return k.Resource
	}
	return strings.ToUpper(p.Collection[:1]) + p.Collection[1:]
}

// registerKinds lists every kind the emulator serves. A new kind's file
// adds its register function here.
func registerKinds(t *kindTable) {
	registerGeography(t)
	registerOperations(t)
	registerNetworks(t)
	registerInstances(t)
	registerFirewalls(t)
	registerRoutes(t)
	registerAddresses(t)
	registerTargetPools(t)
	registerHTTPHealthChecks(t)
	registerForwardingRules(t)
	registerHealthChecks(t)
	registerRegionHealthChecks(t)
	registerRegionBackendServices(t)
	registerInstanceGroups(t)
}

// ---- generic access to computepb messages ----
//
// Every resource message has name, id, kind, selfLink and
// creationTimestamp, most a description and some labels, zone or region;
// the generic code reaches them by JSON name through protoreflect.

func fieldOf(m proto.Message, jsonName string) protoreflect.FieldDescriptor {
	return m.ProtoReflect().Descriptor().Fields().ByJSONName(jsonName)
}

// setString sets a string field if the message has it.
func setString(m proto.Message, jsonName, v string) {
	if fd := fieldOf(m, jsonName); fd != nil && fd.Kind() == protoreflect.StringKind && !fd.IsList() {
		m.ProtoReflect().Set(fd, protoreflect.ValueOfString(v))
	}
}

// getString reads a string field ("" when unset or absent).
func getString(m proto.Message, jsonName string) string {
	fd := fieldOf(m, jsonName)
	if fd == nil || fd.Kind() != protoreflect.StringKind || fd.IsList() || !m.ProtoReflect().Has(fd) {
		return ""
	}
	return m.ProtoReflect().Get(fd).String()
}

func setUint64(m proto.Message, jsonName string, v uint64) {
	if fd := fieldOf(m, jsonName); fd != nil && fd.Kind() == protoreflect.Uint64Kind {
		m.ProtoReflect().Set(fd, protoreflect.ValueOfUint64(v))
	}
}

func getUint64(m proto.Message, jsonName string) uint64 {
	if fd := fieldOf(m, jsonName); fd != nil && fd.Kind() == protoreflect.Uint64Kind {
		return m.ProtoReflect().Get(fd).Uint()
	}
	return 0
}

// labelsOf reads a message's labels map.
func labelsOf(m proto.Message) map[string]string {
	fd := fieldOf(m, "labels")
	if fd == nil || !fd.IsMap() {
		return nil
	}
	mp := m.ProtoReflect().Get(fd).Map()
	if mp.Len() == 0 {
		return nil
	}
	out := make(map[string]string, mp.Len())
	mp.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
		out[k.String()] = v.String()
		return true
	})
	return out
}

// checkLabels refuses labels GCE would refuse and sets the
// labelFingerprint of a resource being inserted with labels.
func checkLabels(c *change) *apiError {
	labels := labelsOf(c.Msg)
	for k, v := range labels {
		if !labelKeyRE.MatchString(k) || !labelValueRE.MatchString(v) {
			return errInvalid("resource.labels", k+"="+v, "Label keys and values must be lower case letters, digits, - and _.")
		}
	}
	if len(labels) > 0 {
		setString(c.Msg, "labelFingerprint", fingerprint(c.Obj.path+"/labels"))
	}
	return nil
}
