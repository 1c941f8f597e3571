package gce

import (
	"io"
	"net/http"
	"regexp"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The generic REST methods every kind gets: get, insert, delete, patch
// and update (lists are in list.go), dispatched by serveREST.

// serveREST answers one API call.
func (e *Emulator) serveREST(w http.ResponseWriter, r *http.Request, op string) {
	p, err := parsePath(r.URL.Path)
	if err != nil {
		// Operation accepted the path, so this cannot happen.
		writeError(w, errNotEmulated(op))
		return
	}
	_, method, _ := strings.Cut(strings.TrimPrefix(op, "compute:"), ".")
	if method == "Wait" {
		// A wait blocks, so it takes the lock itself.
		e.serveWait(w, r, p, op)
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settle(e.cfg.Now())
	k, aerr := e.resolve(p, op)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	serve := map[string]struct {
		verb verb
		f    func(http.ResponseWriter, *http.Request, *kind, reqPath, string)
	}{
		"List": {verbList, e.list}, "AggregatedList": {verbList, e.aggregatedList},
		"Get": {verbGet, e.get}, "Insert": {verbInsert, e.insert}, "Delete": {verbDelete, e.delete},
		"Patch": {verbPatch, e.modify}, "Update": {verbUpdate, e.modify},
	}
	if s, ok := serve[method]; ok && p.Action == "" {
		if k.Verbs&s.verb == 0 {
			writeError(w, errNotEmulated(op))
			return
		}
		s.f(w, r, k, p, op)
		return
	}
	act := k.Actions[p.Action]
	if act == nil {
		writeError(w, errNotEmulated(op))
		return
	}
	o, aerr := e.visible(k, e.objectPath(k, p.Location, p.Name))
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	act(e, w, r, o, op)
}

// resolve checks p's project and location and finds its kind.
func (e *Emulator) resolve(p reqPath, op string) (*kind, *apiError) {
	if p.Project != e.cfg.Project {
		return nil, errNotFound("projects/" + p.Project)
	}
	switch p.Scope {
	case scopeZonal:
		if !e.isZone(p.Location) {
			return nil, errUnknownZone(p.Location)
		}
	case scopeRegional:
		if p.Location != e.cfg.Region {
			return nil, errUnknownRegion(p.Location)
		}
	}
	var k *kind
	if p.Scope == scopeAggregated {
		k = e.kinds.aggregated(p.Collection)
	} else if p.Collection != "" {
		k = e.kinds.get(p.Scope, p.Collection)
	}
	if k == nil {
		return nil, errNotEmulated(op)
	}
	return k, nil
}

func (e *Emulator) isZone(z string) bool {
	for _, zone := range e.cfg.Zones {
		if zone == z {
			return true
		}
	}
	return false
}

// visible finds the resource at path that gets and lists show.
func (e *Emulator) visible(k *kind, path string) (*object, *apiError) {
	o, ok := k.store.Get(path)
	if !ok || o.hidden {
		return nil, errNotFound(path)
	}
	return o, nil
}

// lookup finds the visible resource a reference names, of any kind.
func (e *Emulator) lookup(ref string) *object {
	path, ok := e.refPath(ref)
	if !ok {
		return nil
	}
	p, _ := parsePath(path)
	k := e.kinds.get(p.Scope, p.Collection)
	if k == nil {
		return nil
	}
	o, aerr := e.visible(k, path)
	if aerr != nil {
		return nil
	}
	return o
}

// view is o as a read shows it: a copy of the stored message with the
// kind's computed fields.
func (e *Emulator) view(o *object) proto.Message {
	m := proto.Clone(o.msg)
	if o.kind.View != nil {
		o.kind.View(e, o, m)
	}
	return m
}

func writeMessage(w http.ResponseWriter, status int, m proto.Message) {
	b, err := protojson.Marshal(m)
	if err != nil {
		writeError(w, &apiError{Status: http.StatusInternalServerError, Reason: "internalError", Message: err.Error()})
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// readMessage decodes a request body into m strictly: GCE refuses
// unknown fields.
func readMessage(r *http.Request, m proto.Message) *apiError {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return errBadJSON(err)
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return errRequired("resource")
	}
	if err := protojson.Unmarshal(b, m); err != nil {
		return errBadJSON(err)
	}
	return nil
}

func (e *Emulator) get(w http.ResponseWriter, r *http.Request, k *kind, p reqPath, op string) {
	o, aerr := e.visible(k, e.objectPath(k, p.Location, p.Name))
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	writeMessage(w, http.StatusOK, e.view(o))
}

// nameRE is what GCE requires of resource names (RFC 1035 labels).
var nameRE = regexp.MustCompile(`^[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?$`)

func validName(field, name string) *apiError {
	if name == "" {
		return errRequired(field)
	}
	if !nameRE.MatchString(name) {
		return errInvalid(field, name, "Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'")
	}
	return nil
}

// replayed answers a mutation whose requestId was seen before with the
// first call's operation, as GCE does, and reports whether it did.
func (e *Emulator) replayed(w http.ResponseWriter, r *http.Request) bool {
	id := r.URL.Query().Get("requestId")
	if id == "" {
		return false
	}
	opObj, ok := e.requestIDs[id]
	if !ok {
		return false
	}
	writeMessage(w, http.StatusOK, e.view(opObj))
	return true
}

func (e *Emulator) insert(w http.ResponseWriter, r *http.Request, k *kind, p reqPath, op string) {
	if e.replayed(w, r) {
		return
	}
	m := k.New()
	if aerr := readMessage(r, m); aerr != nil {
		writeError(w, aerr)
		return
	}
	name := getString(m, "name")
	if aerr := validName("resource.name", name); aerr != nil {
		writeError(w, aerr)
		return
	}
	path := e.objectPath(k, p.Location, name)
	if k.store.Has(path) {
		writeError(w, errAlreadyExists(path))
		return
	}
	o := &object{kind: k, location: p.Location, name: name, path: path, msg: m}
	e.stamp(o, m, e.newID(), e.timestamp(e.cfg.Now()))
	var fail *apiError
	if k.Prepare != nil {
		if aerr := k.Prepare(e, &change{Type: "insert", Obj: o, Msg: m}); aerr != nil {
			if !aerr.async {
				writeError(w, aerr)
				return
			}
			fail = aerr
		}
	}
	// Stored at once, hidden until the operation is DONE, so a second
	// insert of the name conflicts and what Prepare took is accounted.
	o.hidden = true
	k.store.Put(o)
	e.generation++
	opObj := e.begin(r, op, o, "insert", fail,
		func() { o.hidden = false },
		func() { e.removeObject(o) })
	writeMessage(w, http.StatusOK, e.view(opObj))
}

// stamp sets what GCE sets on every resource, whatever the client sent.
func (e *Emulator) stamp(o *object, m proto.Message, id uint64, created string) {
	setString(m, "kind", o.kind.Kind)
	setUint64(m, "id", id)
	setString(m, "name", o.name)
	setString(m, "selfLink", o.link())
	setString(m, "creationTimestamp", created)
	switch o.kind.Scope {
	case scopeZonal:
		setString(m, "zone", link(e.zonePath(o.location)))
	case scopeRegional:
		setString(m, "region", link(e.regionPath(o.location)))
	}
}

// removeObject forgets o and lets its kind release what it held.
func (e *Emulator) removeObject(o *object) {
	if !e.stored(o) {
		// The admin API or another operation took it already.
		return
	}
	o.kind.store.Delete(o.path)
	if o.kind.Removed != nil {
		o.kind.Removed(e, o)
	}
	e.generation++
	e.forget(o.path)
}

// checkChangeable refuses a change to o while another is in progress.
func checkChangeable(o *object) *apiError {
	if o.busy != nil {
		return errNotReady(o.path)
	}
	return nil
}

func (e *Emulator) delete(w http.ResponseWriter, r *http.Request, k *kind, p reqPath, op string) {
	if e.replayed(w, r) {
		return
	}
	o, aerr := e.visible(k, e.objectPath(k, p.Location, p.Name))
	if aerr == nil {
		aerr = e.checkDelete(o)
	}
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	if k.DeleteNow {
		e.removeObject(o)
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		_, _ = w.Write([]byte("{}"))
		return
	}
	// A failed delete leaves the resource as it was before Deleting.
	before := proto.Clone(o.msg)
	if k.Deleting != nil {
		k.Deleting(e, o)
	}
	opObj := e.begin(r, op, o, "delete", nil, func() { e.removeObject(o) }, func() { o.msg = before })
	writeMessage(w, http.StatusOK, e.view(opObj))
}

// checkDelete is every reason to refuse deleting o: a change in
// progress, the kind's own rule, a resource that uses it.
func (e *Emulator) checkDelete(o *object) *apiError {
	if aerr := checkChangeable(o); aerr != nil {
		return aerr
	}
	if o.kind.CheckDelete != nil {
		if aerr := o.kind.CheckDelete(e, o); aerr != nil {
			return aerr
		}
	}
	if users := e.users(o.path, true); len(users) > 0 {
		return errInUse(o.kind.Singular, o.path, users[0])
	}
	return nil
}

// modify serves Patch (JSON merge patch of the fields sent) and Update
// (the whole resource replaced).
func (e *Emulator) modify(w http.ResponseWriter, r *http.Request, k *kind, p reqPath, op string) {
	if e.replayed(w, r) {
		return
	}
	o, aerr := e.visible(k, e.objectPath(k, p.Location, p.Name))
	if aerr == nil {
		aerr = checkChangeable(o)
	}
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	body := k.New()
	if aerr := readMessage(r, body); aerr != nil {
		writeError(w, aerr)
		return
	}
	opType := "update"
	m := body
	if strings.HasSuffix(op, ".Patch") {
		opType = "patch"
		if n := getString(body, "name"); n != "" && n != o.name {
			writeError(w, errInvalid("resource.name", n, "The name of a resource cannot be changed."))
			return
		}
		m = proto.Clone(o.msg)
		mergePatch(m.ProtoReflect(), body.ProtoReflect())
	} else if n := getString(body, "name"); n != o.name {
		writeError(w, errInvalid("resource.name", n, "Must match the name of the resource being updated."))
		return
	}
	e.stamp(o, m, getUint64(o.msg, "id"), getString(o.msg, "creationTimestamp"))
	var fail *apiError
	if k.Prepare != nil {
		if aerr := k.Prepare(e, &change{Type: opType, Obj: o, Msg: m, Old: o.msg}); aerr != nil {
			if !aerr.async {
				writeError(w, aerr)
				return
			}
			fail = aerr
		}
	}
	opObj := e.begin(r, op, o, opType, fail, func() { o.msg = m; e.generation++ }, nil)
	writeMessage(w, http.StatusOK, e.view(opObj))
}

// mergePatch applies a JSON merge patch: each field the patch sets
// replaces the stored one (lists and maps whole), except messages, which
// merge field by field.
func mergePatch(dst, patch protoreflect.Message) {
	patch.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Message() != nil && !fd.IsList() && !fd.IsMap() && dst.Has(fd) {
			mergePatch(dst.Mutable(fd).Message(), v.Message())
			return true
		}
		dst.Set(fd, v)
		return true
	})
}
