package gce

import (
	"errors"
	"io"
	"net/http"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// instanceGroups.listInstances: a POST that reads, paged like any list
// (maxResults, pageToken, filter on the items), whose body chooses ALL
// instances (the default) or the RUNNING ones. Each item is the
// instance's link, its status and the group's named ports. Items come in
// the instances' creation order, so the page tokens are cursors as in
// other lists.

func listGroupInstances(e *Emulator, w http.ResponseWriter, r *http.Request, o *object, op string) {
	if r.Method != http.MethodPost {
		writeError(w, errNotEmulated(op))
		return
	}
	req, aerr := readListInstancesBody(r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	state := req.GetInstanceState()
	switch state {
	case "":
		state = "ALL"
	case "ALL", "RUNNING":
	default:
		writeError(w, errInvalid("instanceState", state, "Must be ALL or RUNNING."))
		return
	}
	lq, aerr := e.parseListQuery(r, (&computepb.InstanceWithNamedPorts{}).ProtoReflect().Descriptor(), op)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	ig := o.msg.(*computepb.InstanceGroup)
	instances := e.kinds.get(scopeZonal, "instances").store
	views := map[*object]*computepb.InstanceWithNamedPorts{}
	var items []*object
	for _, inst := range instances.All() {
		status := inst.msg.(*computepb.Instance).GetStatus()
		if !containsLink(o.members, inst.path) || state == "RUNNING" && status != StatusRunning {
			continue
		}
		v := &computepb.InstanceWithNamedPorts{Instance: proto.String(inst.link()), Status: proto.String(status)}
		for _, np := range ig.GetNamedPorts() {
			v.NamedPorts = append(v.NamedPorts, proto.Clone(np).(*computepb.NamedPort))
		}
		if lq.filter != nil && !lq.filter.match(v.ProtoReflect()) {
			continue
		}
		views[inst] = v
		items = append(items, inst)
	}
	page, err := instances.Page(items, lq.page)
	if err != nil {
		if errors.Is(err, cloudsim.ErrInvalidPageToken) {
			writeError(w, errInvalid("pageToken", lq.page.Token, "Invalid page token."))
			return
		}
		writeError(w, errInvalid("maxResults", "", err.Error()))
		return
	}
	out := &computepb.InstanceGroupsListInstances{
		Kind:     proto.String("compute#instanceGroupsListInstances"),
		Id:       proto.String(o.path),
		SelfLink: proto.String(o.link() + "/listInstances"),
	}
	for _, inst := range page.Items {
		out.Items = append(out.Items, views[inst])
	}
	if page.NextToken != "" {
		out.NextPageToken = proto.String(page.NextToken)
	}
	writeMessage(w, http.StatusOK, out)
}

// readListInstancesBody reads the body of listInstances, which may be
// empty (ALL), the documented InstanceGroupsListInstancesRequest, or what
// cloud.google.com/go/compute/apiv1 (v1.73) sends for this paged method:
// the whole ListInstancesInstanceGroupsRequest, project, zone, paging and
// all, with the documented body in instanceGroupsListInstancesRequestResource.
// Fields beyond those are ignored here, since that client sends them.
func readListInstancesBody(r *http.Request) (*computepb.InstanceGroupsListInstancesRequest, *apiError) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, errBadJSON(err)
	}
	req := &computepb.InstanceGroupsListInstancesRequest{}
	if strings.TrimSpace(string(b)) == "" {
		return req, nil
	}
	lenient := protojson.UnmarshalOptions{DiscardUnknown: true}
	wrapped := &computepb.ListInstancesInstanceGroupsRequest{}
	if err := lenient.Unmarshal(b, wrapped); err == nil && wrapped.InstanceGroupsListInstancesRequestResource != nil {
		return wrapped.InstanceGroupsListInstancesRequestResource, nil
	}
	if err := lenient.Unmarshal(b, req); err != nil {
		return nil, errBadJSON(err)
	}
	return req, nil
}

// containsLink reports whether links holds the link of path.
func containsLink(links []string, path string) bool {
	l := link(path)
	for _, x := range links {
		if x == l {
			return true
		}
	}
	return false
}
