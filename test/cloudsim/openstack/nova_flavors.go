package openstack

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Nova flavors: GET /flavors, /flavors/detail and /flavors/{id}. All
// emulated flavors are public and enabled; flavor management is admin
// work and not emulated.

type flavor struct {
	seq        uint64 // the flavors table's "id", the sort tiebreak
	id, name   string
	vcpus      int
	ram        int // MiB
	disk       int // GiB
	ephemeral  int // GiB
	swap       int // MiB; 0 is none
	extraSpecs map[string]string
}

// FlavorSpec describes a flavor for AddFlavor.
type FlavorSpec struct {
	// ID is the flavor ID (Nova's flavorid), default a UUID.
	ID         string            `json:"id,omitempty"`
	Name       string            `json:"name"`
	VCPUs      int               `json:"vcpus"`
	RAM        int               `json:"ram"`
	Disk       int               `json:"disk"`
	Ephemeral  int               `json:"ephemeral,omitempty"`
	Swap       int               `json:"swap,omitempty"`
	ExtraSpecs map[string]string `json:"extraSpecs,omitempty"`
}

// addFlavor adds a flavor. Callers hold e.mu.
func (e *Emulator) addFlavor(spec FlavorSpec) (*flavor, error) {
	if spec.Name == "" || spec.VCPUs <= 0 || spec.RAM <= 0 || spec.Disk < 0 || spec.Ephemeral < 0 || spec.Swap < 0 {
		return nil, fmt.Errorf("flavor %+v: name, vcpus > 0 and ram > 0 are required, sizes must not be negative", spec)
	}
	if spec.ID == "" {
		spec.ID = e.ids.uuid()
	}
	for _, f := range e.flavors.All() {
		switch {
		case f.id == spec.ID:
			return nil, fmt.Errorf("flavor with ID %s already exists", spec.ID)
		case f.name == spec.Name:
			return nil, fmt.Errorf("flavor with name %s already exists", spec.Name)
		}
	}
	f := &flavor{
		seq: e.nextSeq(), id: spec.ID, name: spec.Name, vcpus: spec.VCPUs, ram: spec.RAM, disk: spec.Disk,
		ephemeral: spec.Ephemeral, swap: spec.Swap, extraSpecs: maps.Clone(spec.ExtraSpecs),
	}
	if f.extraSpecs == nil {
		f.extraSpecs = map[string]string{}
	}
	e.flavors.Put(f)
	return f, nil
}

// flavorByRef finds a flavor by ID, or else by name. Callers hold e.mu.
func (e *Emulator) flavorByRef(ref string) (*flavor, bool) {
	if f, ok := e.flavors.Get(ref); ok {
		return f, true
	}
	for _, f := range e.flavors.All() {
		if f.name == ref {
			return f, true
		}
	}
	return nil, false
}

var flavorSortKeys = []string{
	"created_at", "description", "disabled", "ephemeral_gb", "flavorid", "id",
	"is_public", "memory_mb", "name", "root_gb", "rxtx_factor", "swap",
	"updated_at", "vcpu_weight", "vcpus",
}

func flavorQuerySchema(c *novaCall) querySchema {
	return querySchema{
		props: []paramSpec{
			{key: "limit", kind: pNonNeg},
			{key: "marker", kind: pString},
			{key: "is_public", kind: pString},
			{key: "minRam", kind: pString},
			{key: "minDisk", kind: pString},
			{key: "sort_key", kind: pEnum, enum: flavorSortKeys},
			{key: "sort_dir", kind: pEnum, enum: []string{"asc", "desc"}},
		},
		strict: c.at("2.75"),
	}
}

func (e *Emulator) listFlavors(c *novaCall) (*novaResponse, *apiError) {
	return e.flavorList(c, false)
}

func (e *Emulator) listFlavorsDetail(c *novaCall) (*novaResponse, *apiError) {
	return e.flavorList(c, true)
}

// pyInt parses as Python's int() does for a decimal string.
func pyInt(s string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	return n, err == nil
}

func (e *Emulator) flavorList(c *novaCall, detail bool) (*novaResponse, *apiError) {
	q, err := flavorQuerySchema(c).validate(c.query)
	if err != nil {
		return nil, err
	}
	sortKey, _ := q.last("sort_key")
	if sortKey == "" {
		sortKey = "flavorid"
	}
	sortDir, _ := q.last("sort_dir")
	if sortDir == "" {
		sortDir = "asc"
	}
	minRAM, minDisk := 0, 0
	if v, ok := q.last("minRam"); ok {
		if minRAM, ok = pyInt(v); !ok {
			return nil, novaFault(http.StatusBadRequest, "Invalid minRam filter ["+v+"]")
		}
	}
	if v, ok := q.last("minDisk"); ok {
		if minDisk, ok = pyInt(v); !ok {
			return nil, novaFault(http.StatusBadRequest, "Invalid minDisk filter ["+v+"]")
		}
	}
	limit, marker, hasMarker := e.limitAndMarker(q)

	less := func(a, b *flavor) int {
		var r int
		switch sortKey {
		case "flavorid":
			r = strings.Compare(a.id, b.id)
		case "name":
			r = strings.Compare(a.name, b.name)
		case "memory_mb":
			r = cmp.Compare(a.ram, b.ram)
		case "root_gb":
			r = cmp.Compare(a.disk, b.disk)
		case "ephemeral_gb":
			r = cmp.Compare(a.ephemeral, b.ephemeral)
		case "swap":
			r = cmp.Compare(a.swap, b.swap)
		case "vcpus":
			r = cmp.Compare(a.vcpus, b.vcpus)
		}
		if r == 0 {
			r = cmp.Compare(a.seq, b.seq)
		}
		if sortDir == "desc" {
			r = -r
		}
		return r
	}
	all := slices.SortedFunc(slices.Values(e.flavors.All()), less)
	var markerFlavor *flavor
	if hasMarker {
		f, ok := e.flavors.Get(marker)
		if !ok {
			return nil, novaFault(http.StatusBadRequest, "marker ["+marker+"] not found")
		}
		markerFlavor = f
	}
	var page []*flavor
	for _, f := range all {
		if f.ram < minRAM || f.disk < minDisk {
			continue
		}
		if markerFlavor != nil && less(f, markerFlavor) <= 0 {
			continue
		}
		if len(page) == limit {
			break
		}
		page = append(page, f)
	}
	list := make([]any, 0, len(page))
	for _, f := range page {
		if detail {
			list = append(list, flavorView(c, f))
		} else {
			list = append(list, flavorBrief(c, f))
		}
	}
	body := map[string]any{"flavors": list}
	collection := "flavors"
	if detail {
		collection = "flavors/detail"
	}
	if len(page) > 0 {
		if l := e.collectionLinks(c, q, len(page), page[len(page)-1].id, collection); l != nil {
			body["flavors_links"] = l
		}
	}
	return &novaResponse{status: http.StatusOK, body: body}, nil
}

func (e *Emulator) getFlavor(c *novaCall) (*novaResponse, *apiError) {
	f, ok := e.flavors.Get(c.id)
	if !ok {
		return nil, novaFault(http.StatusNotFound, "Flavor "+c.id+" could not be found.")
	}
	return &novaResponse{status: http.StatusOK, body: map[string]any{"flavor": flavorView(c, f)}}, nil
}

func flavorBrief(c *novaCall, f *flavor) map[string]any {
	v := map[string]any{"id": f.id, "name": f.name, "links": links(c, "flavors", f.id)}
	if c.at("2.55") {
		v["description"] = nil
	}
	return v
}

// flavorView is the detailed flavor, as views.flavors.show renders it
// for a project member (who may read extra specs).
func flavorView(c *novaCall, f *flavor) map[string]any {
	v := map[string]any{
		"id":                         f.id,
		"name":                       f.name,
		"ram":                        f.ram,
		"disk":                       f.disk,
		"swap":                       "",
		"OS-FLV-EXT-DATA:ephemeral":  f.ephemeral,
		"OS-FLV-DISABLED:disabled":   false,
		"vcpus":                      f.vcpus,
		"os-flavor-access:is_public": true,
		"rxtx_factor":                json.RawMessage("1.0"),
		"links":                      links(c, "flavors", f.id),
	}
	if f.swap != 0 {
		v["swap"] = f.swap
	}
	if c.at("2.55") {
		v["description"] = nil
	}
	if c.at("2.61") {
		v["extra_specs"] = maps.Clone(f.extraSpecs)
	}
	if c.at("2.75") {
		v["swap"] = f.swap
	}
	return v
}
