package openstack

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/pagination"
	v1 "k8s.io/api/core/v1"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/snapshot"
)

// How the backend reads Nova: one paginated GET /servers/detail for the
// project serves every Node; what that listing lacks is asked for by name
// (one regular-expression filter for a batch of names) or by ID (a GET of
// that server, the only answer that can say "gone").

const (
	// serverPageSize is the page the listing asks for: Nova's default
	// [api] max_limit, so a cloud that kept it answers 1000 Nodes in one
	// call, and one with a lower limit pages through its own.
	serverPageSize = 1000
	// maxNamesPerFilter caps the names in one name filter, keeping the
	// URL well under the 8 KiB proxies and eventlet accept.
	maxNamesPerFilter = 40
	// maxLookupBatch caps the IDs or names one snapshot lookup takes.
	maxLookupBatch = 5000
)

// server is what the backend keeps of a Nova server: a few strings and
// the Node addresses, computed once when the server is read.
type server struct {
	id, name, status, zone string
	// flavor is the flavor's name, embedded in the server since
	// microversion 2.47.
	flavor    string
	addresses []v1.NodeAddress
}

// novaServer is the part of Nova's server JSON the backend reads.
type novaServer struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Status string `json:"status"`
	Zone   string `json:"OS-EXT-AZ:availability_zone"`
	Flavor struct {
		OriginalName string `json:"original_name"`
	} `json:"flavor"`
	Addresses  map[string][]novaAddress `json:"addresses"`
	AccessIPv4 string                   `json:"accessIPv4"`
	AccessIPv6 string                   `json:"accessIPv6"`
	Metadata   map[string]string        `json:"metadata"`
}

type novaAddress struct {
	Addr string `json:"addr"`
	// Type is fixed (the port's own address) or floating.
	Type string `json:"OS-EXT-IPS:type"`
}

// server is the backend's server with its Node addresses
// (instances_addresses.go), computed from its ports when it needsPorts.
func (s *novaServer) server(attached []attachedPort, opts *NetworkingSection) *server {
	if !s.needsPorts() {
		attached = s.assumedPorts()
	}
	return &server{
		id: s.ID, name: s.Name, status: s.Status, zone: s.Zone, flavor: s.Flavor.OriginalName,
		addresses: nodeAddresses(s, attached, opts),
	}
}

// listServers lists the project's servers, page by page.
func listServers(ctx context.Context, compute *gophercloud.ServiceClient, opts servers.ListOpts) ([]novaServer, error) {
	var out []novaServer
	err := servers.List(compute, opts).EachPage(ctx, func(_ context.Context, page pagination.Page) (bool, error) {
		var list []novaServer
		err := servers.ExtractServersInto(page, &list)
		out = append(out, list...)
		return true, err
	})
	return out, err
}

// getServer is a GET of one server: found is false only on Nova's 404
// for that ID.
func getServer(ctx context.Context, compute *gophercloud.ServiceClient, id string) (s *novaServer, found bool, err error) {
	var ns novaServer
	err = servers.Get(ctx, compute, id).ExtractInto(&ns)
	if isNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("get server %s: %w", id, err)
	}
	return &ns, true, nil
}

// serverReader lists and looks up the project's servers for the
// snapshot, with the ports of those that need them for their addresses.
type serverReader struct {
	compute, network *gophercloud.ServiceClient
	networking       *NetworkingSection
}

// servers turns Nova's servers into the backend's, reading the ports of
// those whose addresses depend on them: one listing per
// maxDevicesPerPortFilter such servers, none in a cluster of servers with
// one fixed address each.
func (r serverReader) servers(ctx context.Context, raw []novaServer) ([]*server, error) {
	var need []string
	for i := range raw {
		if raw[i].needsPorts() {
			need = append(need, raw[i].ID)
		}
	}
	attached, err := listAttachedPorts(ctx, r.network, need)
	if err != nil {
		return nil, err
	}
	out := make([]*server, len(raw))
	for i := range raw {
		out[i] = raw[i].server(attached[raw[i].ID], r.networking)
	}
	return out, nil
}

// list is the snapshot's listing: every server of the project.
func (r serverReader) list(ctx context.Context) ([]*server, error) {
	raw, err := r.listRaw(ctx)
	if err != nil {
		return nil, err
	}
	return r.servers(ctx, raw)
}

func (r serverReader) listRaw(ctx context.Context) ([]novaServer, error) {
	list, err := listServers(ctx, r.compute, servers.ListOpts{Limit: serverPageSize})
	if err != nil {
		return nil, fmt.Errorf("list servers: %w", err)
	}
	return list, nil
}

// lookupIDs asks Nova about ids. Nova filters lists by UUID for
// administrators only, so a few IDs are a GET each and more are one
// listing plus a GET of each ID the listing lacks (snapshot.Lookup, the
// tenant one group): a server is absent from the result only when a GET
// of its ID answered 404.
func (r serverReader) lookupIDs(ctx context.Context, ids []string) (map[string]*server, error) {
	found, err := snapshot.Lookup[string, novaServer]{
		Group: func(string) string { return "" },
		Key:   func(id string) string { return id },
		KeyOf: func(s novaServer) string { return s.ID },
		Bulk: func(ctx context.Context, _ []string) ([]novaServer, error) {
			return r.listRaw(ctx)
		},
		Get: func(ctx context.Context, id string) (novaServer, bool, error) {
			s, ok, err := getServer(ctx, r.compute, id)
			if !ok || err != nil {
				return novaServer{}, false, err
			}
			return *s, true, nil
		},
	}.Do(ctx, ids)
	if err != nil {
		return nil, err
	}
	raw := make([]novaServer, 0, len(found))
	for _, id := range ids {
		if s, ok := found[id]; ok {
			raw = append(raw, s)
		}
	}
	list, err := r.servers(ctx, raw)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*server, len(list))
	for _, s := range list {
		out[s.id] = s
	}
	return out, nil
}

// lookupNames finds servers named exactly as given. Nova's name filter is
// a case-insensitive regular expression matched anywhere, so a batch is
// one anchored alternation and the answer is filtered to exact names.
func (r serverReader) lookupNames(ctx context.Context, names []string) (map[string]*server, error) {
	out := map[string]*server{}
	for chunk := range slices.Chunk(names, maxNamesPerFilter) {
		quoted := make([]string, len(chunk))
		for i, n := range chunk {
			quoted[i] = regexp.QuoteMeta(n)
		}
		raw, err := listServers(ctx, r.compute, servers.ListOpts{Name: "^(" + strings.Join(quoted, "|") + ")$", Limit: serverPageSize})
		if err != nil {
			return nil, fmt.Errorf("list servers by name: %w", err)
		}
		raw = slices.DeleteFunc(raw, func(s novaServer) bool { return !slices.Contains(chunk, s.Name) })
		list, err := r.servers(ctx, raw)
		if err != nil {
			return nil, err
		}
		for _, s := range list {
			if prev := out[s.name]; prev != nil && prev.id != s.id {
				return nil, fmt.Errorf("servers %s and %s are both named %q; give the Node a providerID", prev.id, s.id, s.name)
			}
			out[s.name] = s
		}
	}
	return out, nil
}

// serverStatusShutdown is the status of a stopped server. Nova's other
// statuses (ACTIVE, BUILD, REBOOT, PAUSED, SUSPENDED, ERROR, ...) are not
// shut down: upstream reports only SHUTOFF, and a paused or suspended
// server resumes with its memory intact.
const serverStatusShutdown = "SHUTOFF"

// serverGone is a status Nova still shows for a server that is gone for
// good: DELETED appears only in changes-since listings, which the
// backend does not use, but would mean the same as a 404.
func serverGone(s *server) bool { return s != nil && s.status == "DELETED" }
