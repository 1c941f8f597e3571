package gce

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// Lists. A list answers at most maxResults items (default and ceiling
// Config.PageSize, GCE's 500) and a nextPageToken while more remain; the
// tokens are cursors, so deleting items between pages neither repeats nor
// skips the others. filter (filter.go) narrows the items before they are
// paged. orderBy is not emulated and answers 501.

// listQuery is a list call's parameters.
type listQuery struct {
	filter *filter
	page   cloudsim.PageRequest
}

// maxResultsCeiling is the largest maxResults GCE accepts.
const maxResultsCeiling = 500

// parseListQuery reads a list call's paging and filter; the filter must
// name fields of md, the listed message.
func (e *Emulator) parseListQuery(r *http.Request, md protoreflect.MessageDescriptor, op string) (listQuery, *apiError) {
	q := r.URL.Query()
	var lq listQuery
	if q.Get("orderBy") != "" {
		return lq, errNotEmulated(op + " with orderBy")
	}
	lq.page.Size = e.cfg.PageSize
	if s := q.Get("maxResults"); s != "" {
		n, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return lq, errInvalid("maxResults", s, "")
		}
		if n > uint64(max(maxResultsCeiling, e.cfg.PageSize)) {
			return lq, errInvalid("maxResults", s, fmt.Sprintf("Must be less than or equal to %d", max(maxResultsCeiling, e.cfg.PageSize)))
		}
		if n > 0 {
			lq.page.Size = int(n)
		}
	}
	lq.page.Token = q.Get("pageToken")
	if s := q.Get("filter"); s != "" {
		f, err := parseFilter(s)
		if err == nil {
			err = f.check(md)
		}
		if err != nil {
			return lq, errInvalid("filter", s, "Invalid list filter expression.")
		}
		lq.filter = f
	}
	return lq, nil
}

// selectPage views the visible objects keep accepts, filters them and
// cuts the page asked for. The views come back with the page's objects.
func (e *Emulator) selectPage(k *kind, lq listQuery, keep func(*object) bool) (cloudsim.Page[*object], map[*object]proto.Message, *apiError) {
	views := map[*object]proto.Message{}
	var items []*object
	for _, o := range k.store.All() {
		if o.hidden || !keep(o) {
			continue
		}
		v := e.view(o)
		if lq.filter != nil && !lq.filter.match(v.ProtoReflect()) {
			continue
		}
		views[o] = v
		items = append(items, o)
	}
	page, err := k.store.Page(items, lq.page)
	if err != nil {
		if errors.Is(err, cloudsim.ErrInvalidPageToken) {
			return page, nil, errInvalid("pageToken", lq.page.Token, "Invalid page token.")
		}
		return page, nil, errInvalid("maxResults", strconv.Itoa(lq.page.Size), "")
	}
	return page, views, nil
}

func (e *Emulator) list(w http.ResponseWriter, r *http.Request, k *kind, p reqPath, op string) {
	lq, aerr := e.parseListQuery(r, k.New().ProtoReflect().Descriptor(), op)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	page, views, aerr := e.selectPage(k, lq, func(o *object) bool { return o.location == p.Location })
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	out := k.NewList()
	m := out.ProtoReflect()
	items := m.Mutable(m.Descriptor().Fields().ByJSONName("items")).List()
	for _, o := range page.Items {
		items.Append(protoreflect.ValueOfMessage(views[o].ProtoReflect()))
	}
	coll := e.collectionPath(k, p.Location)
	setString(out, "kind", k.Kind+"List")
	setString(out, "id", coll)
	setString(out, "selfLink", link(coll))
	if page.NextToken != "" {
		setString(out, "nextPageToken", page.NextToken)
	}
	writeMessage(w, http.StatusOK, out)
}

// aggregatedList answers every zone's (or region's) items at once, keyed
// "zones/<zone>" ("regions/<region>"). The page is cut across all of
// them; a scope with nothing on the page is still listed, with GCE's
// NO_RESULTS_ON_PAGE warning instead of items.
func (e *Emulator) aggregatedList(w http.ResponseWriter, r *http.Request, k *kind, p reqPath, op string) {
	lq, aerr := e.parseListQuery(r, k.New().ProtoReflect().Descriptor(), op)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	page, views, aerr := e.selectPage(k, lq, func(*object) bool { return true })
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	out := k.NewAggregated()
	m := out.ProtoReflect()
	itemsFD := m.Descriptor().Fields().ByJSONName("items")
	scoped := m.Mutable(itemsFD).Map()
	prefix, locations := "zones/", e.cfg.Zones
	if k.Scope == scopeRegional {
		prefix, locations = "regions/", []string{e.cfg.Region}
	}
	byLoc := map[string][]*object{}
	for _, o := range page.Items {
		byLoc[o.location] = append(byLoc[o.location], o)
	}
	for _, loc := range locations {
		key := prefix + loc
		sl := scoped.NewValue().Message()
		if objs := byLoc[loc]; len(objs) > 0 {
			list := sl.Mutable(scopedItemsField(sl.Descriptor())).List()
			for _, o := range objs {
				list.Append(protoreflect.ValueOfMessage(views[o].ProtoReflect()))
			}
		} else {
			setWarning(sl, "warning", "NO_RESULTS_ON_PAGE",
				fmt.Sprintf("There are no results for scope '%s' on this page.", key), "scope", key)
		}
		scoped.Set(protoreflect.ValueOfString(key).MapKey(), protoreflect.ValueOfMessage(sl))
	}
	id := "projects/" + e.cfg.Project + "/aggregated/" + k.Collection
	setString(out, "kind", aggregatedKind(k))
	setString(out, "id", id)
	setString(out, "selfLink", link(id))
	if page.NextToken != "" {
		setString(out, "nextPageToken", page.NextToken)
	}
	writeMessage(w, http.StatusOK, out)
}

// aggregatedKind is "compute#instanceAggregatedList" for "compute#instance".
func aggregatedKind(k *kind) string { return k.Kind + "AggregatedList" }

// scopedItemsField is a scoped list's one repeated field ("instances",
// "addresses"), the other being its warning.
func scopedItemsField(md protoreflect.MessageDescriptor) protoreflect.FieldDescriptor {
	fields := md.Fields()
	for i := range fields.Len() {
		if fd := fields.Get(i); fd.IsList() {
			return fd
		}
	}
	panic("cloudsim/gce: scoped list without items: " + string(md.FullName()))
}

// setWarning sets m's warning field (Warning or Warnings message) to code
// and message with data key=value pairs.
func setWarning(m protoreflect.Message, jsonName, code, message string, kv ...string) {
	w := newWarning(m, m.Descriptor().Fields().ByJSONName(jsonName), code, message, kv...)
	m.Set(m.Descriptor().Fields().ByJSONName(jsonName), protoreflect.ValueOfMessage(w))
}

// newWarning makes a value of a Warning-shaped message field (singular or
// repeated).
func newWarning(m protoreflect.Message, fd protoreflect.FieldDescriptor, code, message string, kv ...string) protoreflect.Message {
	var w protoreflect.Message
	if fd.IsList() {
		w = m.Mutable(fd).List().NewElement().Message()
	} else {
		w = m.NewField(fd).Message()
	}
	setString(w.Interface(), "code", code)
	setString(w.Interface(), "message", message)
	data := w.Mutable(w.Descriptor().Fields().ByJSONName("data")).List()
	for pair := range slices.Chunk(kv, 2) {
		d := data.NewElement().Message()
		setString(d.Interface(), "key", pair[0])
		setString(d.Interface(), "value", pair[1])
		data.Append(protoreflect.ValueOfMessage(d))
	}
	return w
}
