package gce

import (
	"fmt"
	"strings"
)

// Paths and links. A resource is named by its relative path
// ("projects/p/zones/us-central1-a/instances/node-1"); GCE shows it as a
// link under LinkBase (selfLink, zone, network, targetLink, ...) whatever
// endpoint the client called, and accepts references as full links,
// relative paths, or paths below the project ("global/networks/n").

// LinkBase prefixes every link the emulator writes, as the real API's.
const LinkBase = "https://www.googleapis.com/compute/v1/"

// apiRoot is where every API path starts.
const apiRoot = "/compute/v1/"

// scope says where a collection lives.
type scope uint8

const (
	// scopeGlobal: projects/p/global/<collection>.
	scopeGlobal scope = iota + 1
	// scopeRegional: projects/p/regions/<region>/<collection>.
	scopeRegional
	// scopeZonal: projects/p/zones/<zone>/<collection>.
	scopeZonal
	// scopeProject: projects/p/<collection>, the zones and regions
	// themselves.
	scopeProject
	// scopeAggregated: projects/p/aggregated/<collection>, a request
	// shape only (aggregatedList), never a kind's scope.
	scopeAggregated
)

func (s scope) String() string {
	return [...]string{"?", "global", "regional", "zonal", "project", "aggregated"}[min(int(s), 5)]
}

// reqPath is a parsed API path below /compute/v1/.
type reqPath struct {
	Project    string
	Scope      scope
	Location   string // zone or region, for zonal and regional paths
	Collection string // "" for the project itself
	Name       string // "" for a collection
	Action     string // a custom method after the name ("stop", "wait")
}

// parsePath parses /compute/v1/projects/{p}/... (or the same without the
// leading /compute/v1/, for references).
func parsePath(path string) (reqPath, error) {
	rest, ok := strings.CutPrefix(path, apiRoot)
	if !ok {
		rest = strings.TrimPrefix(path, "/")
	}
	segs := strings.Split(rest, "/")
	var p reqPath
	if len(segs) < 2 || segs[0] != "projects" {
		return p, fmt.Errorf("not a Compute Engine API path: %s", path)
	}
	for _, s := range segs[1:] {
		if s == "" {
			return p, fmt.Errorf("empty segment in %s", path)
		}
	}
	p.Project, segs = segs[1], segs[2:]
	var tail []string
	switch {
	case len(segs) == 0:
		p.Scope = scopeProject
		return p, nil
	case (segs[0] == "zones" || segs[0] == "regions") && len(segs) <= 2:
		p.Scope, p.Collection = scopeProject, segs[0]
		if len(segs) == 2 {
			p.Name = segs[1]
		}
		return p, nil
	case segs[0] == "zones" || segs[0] == "regions":
		p.Scope, p.Location, tail = scopeZonal, segs[1], segs[2:]
		if segs[0] == "regions" {
			p.Scope = scopeRegional
		}
	case segs[0] == "global" && len(segs) >= 2:
		p.Scope, tail = scopeGlobal, segs[1:]
	case segs[0] == "aggregated" && len(segs) == 2:
		p.Scope, p.Collection = scopeAggregated, segs[1]
		return p, nil
	default:
		return p, fmt.Errorf("not a Compute Engine API path: %s", path)
	}
	if len(tail) > 3 {
		return p, fmt.Errorf("not a Compute Engine API path: %s", path)
	}
	p.Collection = tail[0]
	if len(tail) > 1 {
		p.Name = tail[1]
	}
	if len(tail) > 2 {
		p.Action = tail[2]
	}
	return p, nil
}

// method names the API method an HTTP method on p invokes, as the
// discovery document names it, capitalised: List, AggregatedList, Get,
// Insert, Delete, Patch, Update, or a custom method ("Stop", "Wait").
func (p reqPath) method(httpMethod string) (string, error) {
	switch {
	case p.Collection == "" && httpMethod == "GET":
		return "Get", nil
	case p.Scope == scopeAggregated && httpMethod == "GET":
		return "AggregatedList", nil
	case p.Name == "" && httpMethod == "GET":
		return "List", nil
	case p.Name == "" && httpMethod == "POST" && p.Scope != scopeProject && p.Scope != scopeAggregated:
		return "Insert", nil
	case p.Name != "" && p.Action == "":
		if m, ok := map[string]string{"GET": "Get", "DELETE": "Delete", "PATCH": "Patch", "PUT": "Update"}[httpMethod]; ok {
			return m, nil
		}
	case p.Action != "" && (httpMethod == "POST" || httpMethod == "GET" || httpMethod == "PATCH"):
		// Custom methods are POSTs, but for the few that follow PATCH
		// semantics and say so (instances.updateNetworkInterface).
		return strings.ToUpper(p.Action[:1]) + p.Action[1:], nil
	}
	return "", fmt.Errorf("%s is not a Compute Engine method on %s", httpMethod, p.relative())
}

// relative is p's path without /compute/v1/.
func (p reqPath) relative() string {
	parts := []string{"projects", p.Project}
	switch p.Scope {
	case scopeZonal:
		parts = append(parts, "zones", p.Location)
	case scopeRegional:
		parts = append(parts, "regions", p.Location)
	case scopeGlobal:
		parts = append(parts, "global")
	case scopeAggregated:
		parts = append(parts, "aggregated")
	}
	for _, s := range []string{p.Collection, p.Name, p.Action} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "/")
}

// locationPath is the path of a zone or region ("projects/p/zones/z"),
// or of the project's global collections for "".
func (e *Emulator) locationPath(s scope, loc string) string {
	switch s {
	case scopeZonal:
		return "projects/" + e.cfg.Project + "/zones/" + loc
	case scopeRegional:
		return "projects/" + e.cfg.Project + "/regions/" + loc
	case scopeGlobal:
		return "projects/" + e.cfg.Project + "/global"
	}
	return "projects/" + e.cfg.Project
}

// collectionPath is where a kind's resources in loc live.
func (e *Emulator) collectionPath(k *kind, loc string) string {
	return e.locationPath(k.Scope, loc) + "/" + k.Collection
}

// objectPath is the relative path of a resource.
func (e *Emulator) objectPath(k *kind, loc, name string) string {
	return e.collectionPath(k, loc) + "/" + name
}

func (e *Emulator) zonePath(z string) string   { return e.locationPath(scopeZonal, z) }
func (e *Emulator) regionPath(r string) string { return e.locationPath(scopeRegional, r) }

// link is the full URL of a relative path.
func link(path string) string { return LinkBase + path }

// refPath turns a reference as a client may send it (a link on any host,
// "projects/p/...", "global/networks/n", "zones/z/instances/i") into a
// relative path; ok is false for anything else.
func (e *Emulator) refPath(ref string) (string, bool) {
	if i := strings.Index(ref, apiRoot); i >= 0 && strings.Contains(ref[:i], "://") {
		ref = ref[i+len(apiRoot):]
	}
	ref = strings.TrimPrefix(ref, "/")
	switch {
	case strings.HasPrefix(ref, "projects/"):
	case strings.HasPrefix(ref, "global/"), strings.HasPrefix(ref, "zones/"), strings.HasPrefix(ref, "regions/"):
		ref = "projects/" + e.cfg.Project + "/" + ref
	default:
		return "", false
	}
	p, err := parsePath(ref)
	if err != nil || p.Name == "" || p.Action != "" || p.Scope == scopeAggregated {
		return "", false
	}
	return p.relative(), true
}

// lastSegment is what follows a link's last slash: a resource's name.
func lastSegment(s string) string { return s[strings.LastIndex(s, "/")+1:] }
