package openstack

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Nova servers: GET /servers and /servers/detail (filters, sorting,
// marker/limit pagination), GET and DELETE /servers/{id}, and the os-stop
// and os-start actions. Servers are created through the admin API
// (Launch), not POST /servers.

// Nova's vm_state values the emulator uses, and their power states.
const (
	vmActive   = "active"
	vmBuilding = "building"
	vmStopped  = "stopped"
	vmError    = "error"
	vmDeleted  = "deleted"

	powerNoState  = 0
	powerRunning  = 1
	powerShutdown = 4
)

// Server statuses (the API's "status"), by vm_state with no task.
const (
	StatusActive  = "ACTIVE"
	StatusBuild   = "BUILD"
	StatusShutoff = "SHUTOFF"
	StatusError   = "ERROR"
	StatusDeleted = "DELETED"
)

var statusOfVMState = map[string]string{
	vmActive: StatusActive, vmBuilding: StatusBuild, vmStopped: StatusShutoff, vmError: StatusError, vmDeleted: StatusDeleted,
}

// novaStateMap is nova.api.openstack.common._STATE_MAP: the status for
// each vm_state and task_state ("default": no task). List filters by
// status go through it, so every status Nova knows is valid, even those
// no emulated server can be in.
var novaStateMap = map[string]map[string]string{
	"active": {
		"default": "ACTIVE", "rebooting": "REBOOT", "reboot_pending": "REBOOT", "reboot_started": "REBOOT",
		"rebooting_hard": "HARD_REBOOT", "reboot_pending_hard": "HARD_REBOOT", "reboot_started_hard": "HARD_REBOOT",
		"updating_password": "PASSWORD", "rebuilding": "REBUILD", "rebuild_block_device_mapping": "REBUILD",
		"rebuild_spawning": "REBUILD", "migrating": "MIGRATING", "resize_prep": "RESIZE", "resize_migrating": "RESIZE",
		"resize_migrated": "RESIZE", "resize_finish": "RESIZE",
	},
	"building": {"default": "BUILD"},
	"stopped": {
		"default": "SHUTOFF", "resize_prep": "RESIZE", "resize_migrating": "RESIZE", "resize_migrated": "RESIZE",
		"resize_finish": "RESIZE", "rebuilding": "REBUILD", "rebuild_block_device_mapping": "REBUILD",
		"rebuild_spawning": "REBUILD",
	},
	"resized":           {"default": "VERIFY_RESIZE", "resize_reverting": "REVERT_RESIZE"},
	"paused":            {"default": "PAUSED", "migrating": "MIGRATING"},
	"suspended":         {"default": "SUSPENDED"},
	"rescued":           {"default": "RESCUE"},
	"error":             {"default": "ERROR", "rebuilding": "REBUILD", "rebuild_block_device_mapping": "REBUILD", "rebuild_spawning": "REBUILD"},
	"deleted":           {"default": "DELETED"},
	"soft-delete":       {"default": "SOFT_DELETED"},
	"shelved":           {"default": "SHELVED"},
	"shelved_offloaded": {"default": "SHELVED_OFFLOADED"},
}

type server struct {
	seq        uint64 // the instances table's "id": the last sort key
	id, name   string
	hostname   string
	projectID  string
	userID     string
	flavor     flavor // Nova keeps the flavor the server was booted with
	imageID    string
	zone       string
	pinnedZone string // the zone asked for at boot, "" when none was
	host       string
	vmState    string
	powerState int
	metadata   map[string]string
	tags       []string
	// portIDs are the server's ports in the order they were attached
	// (Nova's VIF order); the first is the one Launch gives a public IP.
	portIDs []string
	// accessIPv4 and accessIPv6 are the access addresses given at boot.
	accessIPv4, accessIPv6 string
	// launchFIP is the floating IP Launch allocated, which Terminate
	// releases; a DELETE through the API leaves it, as Nova does.
	launchFIP    string
	created      time.Time
	updated      time.Time
	launchedAt   *time.Time
	terminatedAt *time.Time
	fault        *serverFault
	deleted      bool
}

type serverFault struct {
	code    int
	message string
	created time.Time
}

// primaryPort is the server's first port, "" when it has none.
func (s *server) primaryPort() string {
	if len(s.portIDs) == 0 {
		return ""
	}
	return s.portIDs[0]
}

func (s *server) status() string {
	if s.deleted {
		return StatusDeleted
	}
	return statusOfVMState[s.vmState]
}

// sanitizeHostname is nova.utils.sanitize_hostname, for ASCII names.
func sanitizeHostname(name, fallback string) string {
	if len(name) > 63 {
		name = name[:63]
	}
	var b strings.Builder
	for _, r := range name {
		switch {
		case r == ' ' || r == '_' || r == '.':
			b.WriteByte('-')
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		}
	}
	h := strings.Trim(strings.ToLower(b.String()), ".-")
	if h == "" {
		return fallback
	}
	return h
}

// --- GET /servers, /servers/detail ---

func (e *Emulator) listServers(c *novaCall) (*novaResponse, *apiError) {
	return e.serverList(c, false)
}

func (e *Emulator) listServersDetail(c *novaCall) (*novaResponse, *apiError) {
	return e.serverList(c, true)
}

// serverSortKeys is the sort_key enum of the servers query schema; the
// ignored ones (schema.SERVER_LIST_IGNORE_SORT_KEY) are accepted and
// dropped before 2.75 and refused after.
var (
	serverSortKeys = []string{
		"access_ip_v4", "access_ip_v6", "auto_disk_config", "availability_zone", "config_drive", "created_at",
		"display_description", "display_name", "host", "hostname", "image_ref", "instance_type_id", "kernel_id",
		"key_name", "launch_index", "launched_at", "locked_by", "node", "power_state", "progress", "project_id",
		"ramdisk_id", "root_device_name", "task_state", "terminated_at", "updated_at", "user_id", "uuid", "vm_state",
	}
	serverIgnoredSortKeys = []string{
		"architecture", "cell_name", "cleaned", "default_ephemeral_device", "default_swap_device", "deleted",
		"deleted_at", "disable_terminate", "ephemeral_gb", "ephemeral_key_uuid", "id", "key_data", "launched_on",
		"locked", "memory_mb", "os_type", "reservation_id", "root_gb", "shutdown_terminate", "user_data", "vcpus",
		"vm_mode",
	}
)

// serverQuerySchema is schema.index_query for the request's version.
func serverQuerySchema(c *novaCall) querySchema {
	regex := []string{
		"kernel_id", "ramdisk_id", "hostname", "key_name", "power_state", "node", "flavor", "reservation_id",
		"launched_at", "terminated_at", "availability_zone", "name", "display_name", "description",
		"display_description", "locked_by", "root_device_name", "config_drive", "access_ip_v4", "access_ip_v6",
		"auto_disk_config", "progress", "ip", "ip6", "created_at",
	}
	plain := []string{
		"user_id", "project_id", "tenant_id", "launch_index", "image_ref", "image", "vm_state", "task_state", "host",
		"uuid", "sort_dir", "all_tenants", "soft_deleted", "deleted", "status",
		"block_device_mapping", "services", "metadata", "system_metadata", "info_cache", "security_groups", "pci_devices",
		"marker",
	}
	var props []paramSpec
	for _, k := range regex {
		props = append(props, paramSpec{key: k, kind: pRegex})
	}
	for _, k := range plain {
		props = append(props, paramSpec{key: k, kind: pString})
	}
	props = append(props,
		paramSpec{key: "limit", kind: pNonNeg},
		paramSpec{key: "changes-since", kind: pDateTime})
	sortEnum := append(slices.Clone(serverSortKeys), serverIgnoredSortKeys...)
	if c.at("2.26") {
		for _, k := range []string{"tags", "tags-any", "not-tags", "not-tags-any"} {
			props = append(props, paramSpec{key: k, kind: pRegex})
		}
	}
	if c.at("2.66") {
		props = append(props, paramSpec{key: "changes-before", kind: pDateTime})
	}
	if c.at("2.73") {
		props = append(props, paramSpec{key: "locked", kind: pString})
		sortEnum = append([]string{"locked"}, slices.DeleteFunc(sortEnum, func(k string) bool { return k == "locked" })...)
	}
	if c.at("2.75") {
		sortEnum = slices.DeleteFunc(sortEnum, func(k string) bool { return slices.Contains(serverIgnoredSortKeys, k) })
	}
	props = append(props, paramSpec{key: "sort_key", kind: pEnum, enum: sortEnum})
	return querySchema{props: props, strict: c.at("2.75"), underscore: true}
}

// allowedServerFilters is _get_server_search_options: the filters a
// non-admin may use at the request's version; the others are dropped.
func allowedServerFilters(c *novaCall) []string {
	opts := []string{"reservation_id", "name", "status", "image", "flavor", "ip", "changes-since", "all_tenants"}
	if c.at("2.5") {
		opts = append(opts, "ip6")
	}
	if c.at("2.26") {
		opts = append(opts, "tags", "tags-any", "not-tags", "not-tags-any")
	}
	if c.at("2.66") {
		opts = append(opts, "changes-before")
	}
	if c.at("2.73") {
		opts = append(opts, "locked")
	}
	if c.at("2.83") {
		opts = append(opts, "availability_zone", "config_drive", "key_name", "created_at", "launched_at",
			"terminated_at", "power_state", "task_state", "vm_state", "progress", "user_id")
	}
	if c.at("2.90") {
		opts = append(opts, "hostname")
	}
	return opts
}

// pyBool is oslo's bool_from_string(strict=True).
func pyBool(s string) (bool, *apiError) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "t", "true", "on", "y", "yes":
		return true, nil
	case "0", "f", "false", "off", "n", "no":
		return false, nil
	}
	return false, novaFault(http.StatusBadRequest, "Invalid input received: Unrecognized value '"+s+
		"', acceptable values are: '0', '1', 'f', 'false', 'n', 'no', 'off', 'on', 't', 'true', 'y', 'yes'")
}

// serverFilter is the compiled search of one listing.
type serverFilter struct {
	projectID      string
	includeDeleted bool
	where          []func(*server) bool
}

func (f *serverFilter) add(p func(*server) bool) { f.where = append(f.where, p) }

func (f *serverFilter) match(s *server) bool {
	if s.projectID != f.projectID || (s.deleted && !f.includeDeleted) {
		return false
	}
	for _, p := range f.where {
		if !p(s) {
			return false
		}
	}
	return true
}

// dbRegexp is a DB-side REGEXP filter: MySQL matches anywhere in the
// value and, with Nova's utf8 collations, ignores case. A NULL column
// never matches.
func dbRegexp(pattern string, value func(*server) (string, bool)) (func(*server) bool, error) {
	re, err := regexp.Compile("(?i)" + pattern)
	if err != nil {
		return nil, err
	}
	return func(s *server) bool {
		v, ok := value(s)
		return ok && re.MatchString(v)
	}, nil
}

func optTime(t *time.Time) (string, bool) {
	if t == nil {
		return "", false
	}
	return t.UTC().Format("2006-01-02 15:04:05.000000"), true
}

// regexFilterColumns are the non-admin filters Nova applies as DB
// regular expressions, by the instances column they read.
var regexFilterColumns = map[string]func(*server) (string, bool){
	"name":              func(s *server) (string, bool) { return s.name, true },
	"availability_zone": func(s *server) (string, bool) { return s.zone, true },
	"hostname":          func(s *server) (string, bool) { return s.hostname, true },
	"reservation_id":    func(s *server) (string, bool) { return reservationID(s), true },
	"key_name":          func(*server) (string, bool) { return "", false },
	"config_drive":      func(*server) (string, bool) { return "", true },
	"power_state":       func(s *server) (string, bool) { return strconv.Itoa(s.powerState), true },
	"progress":          func(*server) (string, bool) { return "0", true },
	"created_at":        func(s *server) (string, bool) { return optTime(&s.created) },
	"launched_at":       func(s *server) (string, bool) { return optTime(s.launchedAt) },
	"terminated_at":     func(s *server) (string, bool) { return optTime(s.terminatedAt) },
}

// reservationID is stable per server; Nova's is per boot request.
func reservationID(s *server) string { return fmt.Sprintf("r-%08x", s.seq) }

// buildServerFilter turns the request's search options into predicates,
// as ServersController._get_servers and compute.API.get_all do for a
// non-admin. The boolean is false when nothing can match (an unknown
// flavor, or an unknown status before 2.38).
func (e *Emulator) buildServerFilter(c *novaCall, q query, detail bool) (*serverFilter, bool, *apiError) {
	allowed := allowedServerFilters(c)
	opts := map[string]string{}
	for _, k := range q.keys() {
		if slices.Contains(allowed, k) {
			opts[k], _ = q.last(k)
		}
	}
	f := &serverFilter{projectID: c.tok.projectID}

	vmStates := []string(nil)
	if _, ok := opts["status"]; ok {
		delete(opts, "status")
		states, tasks := map[string]bool{}, map[string]bool{}
		for _, st := range q.all("status") {
			for vm, byTask := range novaStateMap {
				for task, status := range byTask {
					if strings.EqualFold(status, st) {
						states[vm], tasks[task] = true, true
					}
				}
			}
		}
		if len(states) == 0 {
			if c.at("2.38") {
				return nil, false, novaFault(http.StatusBadRequest, "Invalid status value")
			}
			return nil, false, nil
		}
		vmStates = slices.Sorted(maps.Keys(states))
		if !tasks["default"] {
			// Only task states are asked for; no emulated server has one.
			f.add(func(*server) bool { return false })
		}
	}
	if vmStates == nil {
		if v, ok := opts["vm_state"]; ok {
			vmStates = []string{v}
		}
	}

	var since, before *time.Time
	if v, ok := opts["changes-since"]; ok {
		t, _ := parseISOTime(v)
		since = &t
	}
	if v, ok := opts["changes-before"]; ok {
		t, _ := parseISOTime(v)
		before = &t
		if since != nil && before.Before(*since) {
			return nil, false, novaFault(http.StatusBadRequest, "The value of changes-since must be less than or equal to changes-before.")
		}
	}
	// Deleted servers are listed only by changes-since/-before.
	f.includeDeleted = since != nil || before != nil
	if len(vmStates) == 1 && vmStates[0] == vmDeleted {
		return nil, false, novaFault(http.StatusForbidden, "Only administrators may list deleted instances")
	}

	if v, ok := opts["all_tenants"]; ok {
		all := true
		if v != "" {
			var err *apiError
			if all, err = pyBool(v); err != nil {
				return nil, false, err
			}
		}
		if all {
			action := "index"
			if detail {
				action = "detail"
			}
			return nil, false, novaFault(http.StatusForbidden,
				"Policy doesn't allow os_compute_api:servers:"+action+":get_all_tenants to be performed.")
		}
	}
	if v, ok := opts["locked"]; ok {
		locked, err := pyBool(v)
		if err != nil {
			return nil, false, err
		}
		f.add(func(*server) bool { return !locked })
	}

	if vmStates != nil {
		f.add(func(s *server) bool { return slices.Contains(vmStates, s.vmState) })
	}
	if since != nil {
		f.add(func(s *server) bool { return !s.updated.Before(*since) })
	}
	if before != nil {
		f.add(func(s *server) bool { return !s.updated.After(*before) })
	}
	for key, col := range regexFilterColumns {
		if v, ok := opts[key]; ok {
			p, err := dbRegexp(v, col)
			if err != nil { // Python accepted it, RE2 does not
				return nil, false, novaFault(http.StatusBadRequest, fmt.Sprintf(
					"Invalid input for query parameters %s. Value: %s. %s is not a 'regex'", key, v, pyRepr(v)))
			}
			f.add(p)
		}
	}
	if v, ok := opts["flavor"]; ok {
		if _, known := e.flavors.Get(v); !known {
			return nil, false, nil
		}
		f.add(func(s *server) bool { return s.flavor.id == v })
	}
	if v, ok := opts["image"]; ok {
		f.add(func(s *server) bool { return s.imageID == v })
	}
	if v, ok := opts["user_id"]; ok {
		f.add(func(s *server) bool { return s.userID == v })
	}
	if v, ok := opts["task_state"]; ok {
		_ = v // no emulated server has a task
		f.add(func(*server) bool { return false })
	}
	// ip and ip6 go to Neutron as substring filters on fixed IPs, of
	// one family each.
	for key, v6 := range map[string]bool{"ip": false, "ip6": true} {
		v, ok := opts[key]
		if !ok {
			continue
		}
		f.add(func(s *server) bool {
			return !s.deleted && slices.ContainsFunc(s.portIDs, func(id string) bool {
				p, ok := e.ports.Get(id)
				return ok && slices.ContainsFunc(p.allocations(), func(a ipAlloc) bool {
					return a.ip.Is6() == v6 && strings.Contains(a.ip.String(), v)
				})
			})
		})
	}
	tagList := func(key string) ([]string, bool) {
		v, ok := opts[key]
		if !ok {
			return nil, false
		}
		return strings.Split(v, ","), true
	}
	if tags, ok := tagList("tags"); ok {
		f.add(func(s *server) bool { return containsAll(s.tags, tags) })
	}
	if tags, ok := tagList("tags-any"); ok {
		f.add(func(s *server) bool { return containsAny(s.tags, tags) })
	}
	if tags, ok := tagList("not-tags"); ok {
		f.add(func(s *server) bool { return !containsAll(s.tags, tags) })
	}
	if tags, ok := tagList("not-tags-any"); ok {
		f.add(func(s *server) bool { return !containsAny(s.tags, tags) })
	}
	return f, true, nil
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

func containsAny(have, want []string) bool {
	return slices.ContainsFunc(want, func(w string) bool { return slices.Contains(have, w) })
}

// compareServerKey compares two servers by one sort key, as the
// instances table would: NULLs first (MySQL's ascending order). Keys the
// emulator does not model compare equal.
func compareServerKey(a, b *server, key string) int {
	switch key {
	case "created_at":
		return a.created.Compare(b.created)
	case "updated_at":
		return a.updated.Compare(b.updated)
	case "launched_at":
		return compareOptTime(a.launchedAt, b.launchedAt)
	case "terminated_at":
		return compareOptTime(a.terminatedAt, b.terminatedAt)
	case "display_name":
		return strings.Compare(a.name, b.name)
	case "hostname":
		return strings.Compare(a.hostname, b.hostname)
	case "uuid":
		return strings.Compare(a.id, b.id)
	case "availability_zone":
		return strings.Compare(a.zone, b.zone)
	case "vm_state":
		return strings.Compare(a.vmState, b.vmState)
	case "power_state":
		return cmp.Compare(a.powerState, b.powerState)
	case "project_id":
		return strings.Compare(a.projectID, b.projectID)
	case "user_id":
		return strings.Compare(a.userID, b.userID)
	case "instance_type_id":
		return cmp.Compare(a.flavor.seq, b.flavor.seq)
	case "image_ref":
		return strings.Compare(a.imageID, b.imageID)
	case "id":
		return cmp.Compare(a.seq, b.seq)
	}
	return 0
}

func compareOptTime(a, b *time.Time) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	return a.Compare(*b)
}

// serverSort is process_sort_params over get_sort_params: the requested
// keys (default created_at), then created_at and id, the directions
// defaulting to the first one given (default desc).
func serverSort(c *novaCall, q query) (keys, dirs []string, err *apiError) {
	keys = q.all("sort_key")
	dirs = q.all("sort_dir")
	for i := range keys {
		keys[i] = strings.TrimSpace(keys[i])
	}
	for i := range dirs {
		dirs[i] = strings.TrimSpace(dirs[i])
	}
	if len(keys) == 0 {
		keys = []string{"created_at"}
	}
	if len(dirs) == 0 {
		dirs = []string{"desc"}
	}
	// remove_invalid_sort_keys
	ignored := serverIgnoredSortKeys
	if c.at("2.73") {
		ignored = slices.DeleteFunc(slices.Clone(ignored), func(k string) bool { return k == "locked" })
	}
	for i := 0; i < len(keys); {
		k := keys[i]
		switch {
		case slices.Contains(ignored, k):
			if len(dirs) > i {
				dirs = slices.Delete(dirs, i, i+1)
			}
			keys = slices.Delete(keys, i, i+1)
			continue
		case k == "host" || k == "node":
			return nil, nil, novaFault(http.StatusForbidden, "Only administrators can sort servers by "+k)
		}
		i++
	}
	def := "desc"
	if len(dirs) > 0 {
		def = dirs[0]
	}
	for _, d := range dirs {
		if d != "asc" && d != "desc" {
			return nil, nil, novaFault(http.StatusBadRequest, "Invalid input received: Unknown sort direction, must be 'desc' or 'asc'")
		}
	}
	for len(dirs) < len(keys) {
		dirs = append(dirs, def)
	}
	if len(dirs) > len(keys) {
		return nil, nil, novaFault(http.StatusBadRequest, "Invalid input received: Sort direction size exceeds sort key size")
	}
	for _, k := range []string{"created_at", "id"} {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
			dirs = append(dirs, def)
		}
	}
	return keys, dirs, nil
}

func (e *Emulator) serverList(c *novaCall, detail bool) (*novaResponse, *apiError) {
	q, err := serverQuerySchema(c).validate(c.query)
	if err != nil {
		return nil, err
	}
	collection := "servers"
	if detail {
		collection = "servers/detail"
	}
	empty := &novaResponse{status: http.StatusOK, body: map[string]any{"servers": []any{}}}
	filter, possible, err := e.buildServerFilter(c, q, detail)
	if err != nil {
		return nil, err
	}
	if !possible {
		return empty, nil
	}
	limit, marker, hasMarker := e.limitAndMarker(q)
	keys, dirs, err := serverSort(c, q)
	if err != nil {
		return nil, err
	}
	compare := func(a, b *server) int {
		for i, k := range keys {
			r := compareServerKey(a, b, k)
			if dirs[i] == "desc" {
				r = -r
			}
			if r != 0 {
				return r
			}
		}
		return 0
	}
	var markerServer *server
	if hasMarker {
		// Nova looks the marker up elevated, deleted rows included: any
		// server that ever existed marks a position, whatever the
		// filters.
		s, ok := e.servers.Get(marker)
		if !ok {
			s, ok = e.deleted[marker]
		}
		if !ok {
			return nil, novaFault(http.StatusBadRequest, "marker ["+marker+"] not found")
		}
		markerServer = s
	}
	var matched []*server
	if limit > 0 {
		for _, s := range e.servers.All() {
			if filter.match(s) {
				matched = append(matched, s)
			}
		}
		if filter.includeDeleted {
			for _, s := range e.deleted {
				if filter.match(s) {
					matched = append(matched, s)
				}
			}
		}
		slices.SortFunc(matched, compare)
		if markerServer != nil {
			i, _ := slices.BinarySearchFunc(matched, markerServer, compare)
			if i < len(matched) && matched[i] == markerServer {
				i++
			}
			matched = matched[i:]
		}
		matched = matched[:min(limit, len(matched))]
	}
	list := make([]any, 0, len(matched))
	for _, s := range matched {
		if detail {
			list = append(list, e.serverView(c, s, false))
		} else {
			list = append(list, map[string]any{"id": s.id, "name": s.name, "links": links(c, "servers", s.id)})
		}
	}
	body := map[string]any{"servers": list}
	if len(matched) > 0 {
		if l := e.collectionLinks(c, q, len(matched), matched[len(matched)-1].id, collection); l != nil {
			body["servers_links"] = l
		}
	}
	return &novaResponse{status: http.StatusOK, body: body}, nil
}

// --- GET /servers/{id} ---

// projectServer is a live server of the caller's project; others are
// as unknown as servers that never existed.
func (e *Emulator) projectServer(c *novaCall) (*server, *apiError) {
	s, ok := e.servers.Get(c.id)
	if !ok || s.projectID != c.tok.projectID {
		return nil, novaServerNotFound(c.id)
	}
	return s, nil
}

func (e *Emulator) getServer(c *novaCall) (*novaResponse, *apiError) {
	s, err := e.projectServer(c)
	if err != nil {
		return nil, err
	}
	return &novaResponse{status: http.StatusOK, body: map[string]any{"server": e.serverView(c, s, true)}}, nil
}

// serverView is a server as views.servers.ViewBuilder.show renders it
// for a project member at the request's microversion. show adds what
// only GET /servers/{id} has (server_groups).
func (e *Emulator) serverView(c *novaCall, s *server, show bool) map[string]any {
	status := s.status()
	v := map[string]any{
		"id":                                   s.id,
		"name":                                 s.name,
		"status":                               status,
		"tenant_id":                            s.projectID,
		"user_id":                              s.userID,
		"metadata":                             maps.Clone(s.metadata),
		"hostId":                               hostID(s.host, s.projectID),
		"image":                                map[string]any{"id": s.imageID, "links": []any{map[string]any{"rel": "bookmark", "href": c.bookURL + "/images/" + s.imageID}}},
		"flavor":                               e.serverFlavor(c, s),
		"created":                              novaTime(s.created),
		"updated":                              novaTime(s.updated),
		"addresses":                            e.serverAddresses(s),
		"accessIPv4":                           s.accessIPv4,
		"accessIPv6":                           s.accessIPv6,
		"links":                                links(c, "servers", s.id),
		"OS-DCF:diskConfig":                    "MANUAL",
		"OS-EXT-AZ:availability_zone":          s.zone,
		"config_drive":                         "",
		"key_name":                             nil,
		"OS-SRV-USG:launched_at":               novaNaiveTime(s.launchedAt),
		"OS-SRV-USG:terminated_at":             novaNaiveTime(s.terminatedAt),
		"OS-EXT-STS:task_state":                nil,
		"OS-EXT-STS:vm_state":                  s.vmState,
		"OS-EXT-STS:power_state":               s.powerState,
		"os-extended-volumes:volumes_attached": []any{},
	}
	if s.metadata == nil {
		v["metadata"] = map[string]string{}
	}
	if status == StatusActive || status == StatusBuild {
		v["progress"] = 0
	}
	if (status == StatusError || status == StatusDeleted) && s.fault != nil {
		// A non-admin sees no details of a 500 fault.
		v["fault"] = map[string]any{"code": s.fault.code, "created": novaTime(s.fault.created), "message": s.fault.message}
	}
	if !s.deleted {
		// Security groups come from the server's Neutron port.
		v["security_groups"] = []any{map[string]any{"name": "default"}}
	}
	if c.at("2.9") {
		v["locked"] = false
	}
	if c.at("2.19") {
		v["description"] = nil
	}
	if c.at("2.26") {
		tags := slices.Clone(s.tags)
		if tags == nil {
			tags = []string{}
		}
		v["tags"] = tags
	}
	if c.at("2.63") {
		v["trusted_image_certificates"] = nil
	}
	if show && c.at("2.71") {
		v["server_groups"] = []any{}
	}
	if c.at("2.73") {
		v["locked_reason"] = nil
	}
	if c.at("2.90") {
		v["OS-EXT-SRV-ATTR:hostname"] = s.hostname
	}
	if c.at("2.96") {
		if s.pinnedZone == "" {
			v["pinned_availability_zone"] = nil
		} else {
			v["pinned_availability_zone"] = s.pinnedZone
		}
	}
	return v
}

// serverFlavor is the flavor reference before 2.47 and the embedded
// flavor (with extra specs, which a member may read) from 2.47 on.
func (e *Emulator) serverFlavor(c *novaCall, s *server) map[string]any {
	f := s.flavor
	if !c.at("2.47") {
		return map[string]any{
			"id":    f.id,
			"links": []any{map[string]any{"rel": "bookmark", "href": c.bookURL + "/flavors/" + f.id}},
		}
	}
	return map[string]any{
		"vcpus":         f.vcpus,
		"ram":           f.ram,
		"disk":          f.disk,
		"ephemeral":     f.ephemeral,
		"swap":          f.swap,
		"original_name": f.name,
		"extra_specs":   maps.Clone(f.extraSpecs),
	}
}

// serverAddresses lists the server's port addresses by network name:
// the fixed addresses of the network's ports (each port's in Neutron's
// fixed_ips order, version 4 or 6), then their floating IPs;
// they are hidden while the server builds, and gone once it is deleted.
// As Nova's get_networks_for_instance_from_nw_info and its addresses
// view, the networks come in the order of the server's first port on
// each (an OrderedDict over the VIFs, which the JSON keeps).
func (e *Emulator) serverAddresses(s *server) networkAddresses {
	var out networkAddresses
	if s.vmState == vmBuilding || s.deleted {
		return out
	}
	for _, id := range s.portIDs {
		p, ok := e.ports.Get(id)
		if !ok {
			continue
		}
		n, _ := e.networks.Get(p.networkID)
		i := slices.IndexFunc(out, func(a networkAddressList) bool { return a.label == n.name })
		if i < 0 {
			out = append(out, networkAddressList{label: n.name})
			i = len(out) - 1
		}
		for _, a := range p.fixedIPs() {
			version := 4
			if a.ip.Is6() {
				version = 6
			}
			out[i].fixed = append(out[i].fixed, map[string]any{
				"addr": a.ip.String(), "version": version, "OS-EXT-IPS:type": "fixed", "OS-EXT-IPS-MAC:mac_addr": p.mac,
			})
		}
		if f := e.floatingIPOf(p.id); f != nil {
			out[i].floating = append(out[i].floating, map[string]any{
				"addr": f.address.String(), "version": 4, "OS-EXT-IPS:type": "floating", "OS-EXT-IPS-MAC:mac_addr": p.mac,
			})
		}
	}
	return out
}

// networkAddresses is a server's "addresses": a JSON object whose
// members keep the VIF order, as the OrderedDict Nova renders does.
type networkAddresses []networkAddressList

// networkAddressList is one network's addresses, fixed ones first.
type networkAddressList struct {
	label           string
	fixed, floating []any
}

// MarshalJSON implements json.Marshaler.
func (a networkAddresses) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, n := range a {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(n.label)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(append(slices.Clone(n.fixed), n.floating...))
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// --- DELETE /servers/{id} ---

func (e *Emulator) deleteServer(c *novaCall) (*novaResponse, *apiError) {
	s, err := e.projectServer(c)
	if err != nil {
		return nil, err
	}
	e.removeServer(s)
	return &novaResponse{status: http.StatusNoContent}, nil
}

// removeServer deletes a server as Nova does: its port goes (and with it
// any floating IP association; the floating IP itself stays allocated),
// and the row is kept, soft-deleted, for markers and changes-since.
// Callers hold e.mu.
func (e *Emulator) removeServer(s *server) {
	now := e.now()
	for _, id := range s.portIDs {
		e.deletePort(id)
	}
	e.servers.Delete(s.id)
	s.deleted = true
	s.vmState = vmDeleted
	s.powerState = powerNoState
	s.updated = now
	s.terminatedAt = &now
	e.deleted[s.id] = s
}

// --- POST /servers/{id}/action ---

// actionKey peeks at the single key of an action body (Nova's
// action_peek), leaving the body for the handler. "" when there is none.
func actionKey(r *http.Request) string {
	if r.Body == nil {
		return ""
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil || len(m) != 1 {
		return ""
	}
	for k := range m {
		return k
	}
	return ""
}

func (e *Emulator) serverAction(c *novaCall) (*novaResponse, *apiError) {
	body, _ := io.ReadAll(c.r.Body)
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, novaFault(http.StatusBadRequest, "Malformed message body: cannot understand JSON")
	}
	if len(m) != 1 {
		return nil, novaFault(http.StatusBadRequest, "Malformed message body: too many body keys")
	}
	var (
		action string
		arg    json.RawMessage
	)
	for k, v := range m {
		action, arg = k, v
	}
	var allowed []string
	switch action {
	case "os-stop":
		allowed = []string{vmActive, vmError}
	case "os-start":
		allowed = []string{vmStopped}
	default:
		return nil, novaFault(http.StatusBadRequest, "There is no such action: "+action)
	}
	if string(bytes.TrimSpace(arg)) != "null" {
		return nil, novaFault(http.StatusBadRequest, fmt.Sprintf(
			"Invalid input for field/attribute %s. Value: %s. %s is not of type 'null'", action, arg, arg))
	}
	s, err := e.projectServer(c)
	if err != nil {
		return nil, err
	}
	verb := strings.TrimPrefix(action, "os-")
	if !slices.Contains(allowed, s.vmState) {
		return nil, novaFault(http.StatusConflict, fmt.Sprintf("Cannot '%s' instance %s while it is in vm_state %s", verb, s.id, s.vmState))
	}
	if s.launchedAt == nil {
		return nil, novaFault(http.StatusConflict, fmt.Sprintf("Cannot '%s' instance %s while it is in launched_at None", verb, s.id))
	}
	if action == "os-stop" {
		e.setServerState(s, vmStopped)
	} else {
		e.setServerState(s, vmActive)
	}
	return &novaResponse{status: http.StatusAccepted}, nil
}

// setServerState moves a live server to a vm_state with its power state.
// Stopping and starting keep every address, unlike on EC2. Callers hold
// e.mu.
func (e *Emulator) setServerState(s *server, vmState string) {
	now := e.now()
	s.vmState = vmState
	s.updated = now
	switch vmState {
	case vmActive:
		s.powerState = powerRunning
		if s.launchedAt == nil {
			s.launchedAt = &now
		}
		s.fault = nil
	case vmStopped:
		s.powerState = powerShutdown
	case vmBuilding:
		s.powerState = powerNoState
	case vmError:
		if s.fault == nil {
			s.fault = &serverFault{code: http.StatusInternalServerError, message: "Exceeded maximum number of retries.", created: now}
		}
	}
}

// hostID is Nova's obfuscated host ID: sha224 of the project ID and the
// host name, "" when the server has no host.
func hostID(host, projectID string) string {
	if host == "" {
		return ""
	}
	sum := sha256.Sum224([]byte(projectID + host))
	return hex.EncodeToString(sum[:])
}
