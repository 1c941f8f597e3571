package aws

import (
	"fmt"
	"hash/fnv"
	"strconv"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// DescribeInstanceTopology. Real EC2 has topology data only for a few
// accelerated and HPC instance types and answers every other instance
// with no entry at all (never InvalidAction), which is what clients that
// call it for every node (the upstream AWS CCM labels nodes with it)
// must cope with.

// topologyLayers is how many network nodes EC2 reports per instance type
// that has topology data: three for the types of the EC2 API reference's
// list, four for the p6 UltraServer generation.
var topologyLayers = map[string]int{
	"hpc6a.48xlarge": 3, "hpc6id.32xlarge": 3,
	"hpc7a.12xlarge": 3, "hpc7a.24xlarge": 3, "hpc7a.48xlarge": 3, "hpc7a.96xlarge": 3,
	"hpc7g.4xlarge": 3, "hpc7g.8xlarge": 3, "hpc7g.16xlarge": 3,
	"p3dn.24xlarge": 3, "p4d.24xlarge": 3, "p4de.24xlarge": 3,
	"p5.48xlarge": 3, "p5e.48xlarge": 3, "p5en.48xlarge": 3,
	"trn1.2xlarge": 3, "trn1.32xlarge": 3, "trn1n.32xlarge": 3,
	"trn2.48xlarge": 3, "trn2u.48xlarge": 3,
	"p6-b200.48xlarge": 4,
}

// Limits from the API reference.
const (
	topologyMaxIDs         = 100
	topologyDefaultResults = 20
	topologyMaxResults     = 100
)

type xmlInstanceTopology struct {
	InstanceID       string   `xml:"instanceId"`
	InstanceType     string   `xml:"instanceType"`
	GroupName        string   `xml:"groupName,omitempty"`
	NetworkNodes     []string `xml:"networkNodeSet>item"`
	AvailabilityZone string   `xml:"availabilityZone"`
	ZoneID           string   `xml:"zoneId"`
}

type describeInstanceTopologyResponse struct {
	Instances []xmlInstanceTopology `xml:"instanceSet>item"`
	NextToken string                `xml:"nextToken,omitempty"`
}

func (e *Emulator) topologyFields() fields[*instance] {
	return fields[*instance]{
		"availability-zone": func(i *instance) []string { return []string{i.zone} },
		"instance-type":     func(i *instance) []string { return []string{i.instanceType} },
		"zone-id":           func(i *instance) []string { return []string{e.zoneID(i.zone)} },
	}
}

func (e *Emulator) describeInstanceTopology(p params) (any, error) {
	ids, groups := p.list("InstanceId"), p.list("GroupName")
	if len(ids) > 0 && p.get("MaxResults") != "" {
		return nil, apiErr("InvalidParameterCombination", "The parameter instanceIds cannot be used with the parameter maxResults")
	}
	if len(ids) > topologyMaxIDs || len(groups) > topologyMaxIDs {
		return nil, invalidValue("InstanceId", strconv.Itoa(len(ids)), fmt.Sprintf("At most %d instance IDs and %d group names may be given.", topologyMaxIDs, topologyMaxIDs))
	}
	for _, id := range ids {
		if !instanceIDPattern.MatchString(id) {
			return nil, apiErr("InvalidInstanceID.Malformed", "Invalid id: %q", id)
		}
	}
	// The reference documents no NotFound error for this call: an ID
	// without topology, unknown or not, simply has no entry.
	var known []string
	for _, id := range ids {
		if e.instances.Has(id) {
			known = append(known, id)
		}
	}
	if len(ids) > 0 && len(known) == 0 {
		return describeInstanceTopologyResponse{}, nil
	}
	size, ok, err := p.intParam("MaxResults")
	if err != nil || ok && (size < 1 || size > topologyMaxResults) {
		return nil, invalidValue("MaxResults", p.get("MaxResults"), fmt.Sprintf("Expecting a value between 1 and %d.", topologyMaxResults))
	}
	if !ok && len(ids) == 0 {
		size = topologyDefaultResults
	}
	match, err := ec2Filter(p, e.topologyFields(), func(*instance) map[string]string { return nil })
	if err != nil {
		return nil, err
	}
	// Placement groups are not emulated: no instance is in one, so naming
	// any group selects nothing.
	hasTopology := func(i *instance) bool {
		_, ok := topologyLayers[i.instanceType]
		return ok && len(groups) == 0 && i.state != stateTerminated && i.state != stateShuttingDown
	}
	insts, next, err := ec2List(e.instances, known, notFoundInstances, cloudsim.PageRequest{Token: p.get("NextToken"), Size: size}, hasTopology, match)
	if err != nil {
		return nil, err
	}
	resp := describeInstanceTopologyResponse{NextToken: next}
	for _, i := range insts {
		resp.Instances = append(resp.Instances, xmlInstanceTopology{
			InstanceID: i.id, InstanceType: i.instanceType, AvailabilityZone: i.zone, ZoneID: e.zoneID(i.zone),
			NetworkNodes: e.networkNodes(i),
		})
	}
	return resp, nil
}

// networkNodes makes up a stable node hierarchy: one spine per zone,
// then ever smaller groups of instances in launch order, so neighbours
// share their upper layers as they would in one cluster placement group.
// EC2 reports nodes only for running instances.
func (e *Emulator) networkNodes(i *instance) []string {
	if i.state != stateRunning {
		return nil
	}
	n, _ := strconv.ParseUint(i.id[2:], 16, 64) // IDs carry their creation sequence
	layers := topologyLayers[i.instanceType]
	nodes := make([]string, layers)
	for l := range layers {
		// Layer 0 is shared by the zone; each further layer splits by 4.
		group := n >> (2*(layers-1-l) + 2)
		if l == 0 {
			group = 0
		}
		h := fnv.New64a()
		fmt.Fprintf(h, "%s/%s/%d/%d", e.cfg.AccountID, i.zone, l, group)
		nodes[l] = fmt.Sprintf("nn-%017x", h.Sum64())
	}
	return nodes
}
