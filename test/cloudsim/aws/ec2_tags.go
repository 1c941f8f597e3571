package aws

import "strings"

// maxTags is AWS's per-resource tag limit, for EC2 and ELBv2 alike.
const maxTags = 50

func checkEC2Tag(t tag) error {
	switch {
	case t.Key == "":
		return invalidValue("Tag.Key", "", "Tag keys must not be empty.")
	case strings.HasPrefix(strings.ToLower(t.Key), "aws:"):
		return invalidValue("Tag.Key", t.Key, "Tag keys starting with 'aws:' are reserved for internal use.")
	case len(t.Key) > 128 || len(t.Value) > 256:
		return invalidValue("Tag", t.Key, "Tag keys are limited to 128 and values to 256 characters.")
	}
	return nil
}

// ec2TagMap returns the live tag map of any EC2 resource, with the
// prefix-specific NotFound error EC2 gives for unknown IDs.
func (e *Emulator) ec2TagMap(id string) (map[string]string, error) {
	prefix, _, _ := strings.Cut(id, "-")
	switch prefix {
	case "i":
		// The tagging actions answer a malformed ID with the generic
		// InvalidID, where DescribeInstances says
		// InvalidInstanceID.Malformed; upstream's tagging controller
		// skips Nodes on InvalidID (aws.go:1098).
		if !instanceIDPattern.MatchString(id) {
			return nil, apiErr("InvalidID", "The ID '%s' is not valid", id)
		}
		inst, err := e.instanceParam(id)
		if err != nil {
			return nil, err
		}
		return inst.tags, nil
	case "sg":
		sg, err := e.groupByID(id)
		if err != nil {
			return nil, err
		}
		return sg.tags, nil
	case "vpc":
		if v, ok := e.vpcs.Get(id); ok {
			return v.tags, nil
		}
		return nil, apiErr("InvalidVpcID.NotFound", "The vpc ID '%s' does not exist", id)
	case "subnet":
		if s, ok := e.subnets.Get(id); ok {
			return s.tags, nil
		}
		return nil, apiErr("InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", id)
	case "igw":
		if g, ok := e.internetGateways.Get(id); ok {
			return g.tags, nil
		}
		return nil, apiErr("InvalidInternetGatewayID.NotFound", "The internetGateway ID '%s' does not exist", id)
	case "eipalloc":
		a, err := e.addressParam(id)
		if err != nil {
			return nil, err
		}
		return a.tags, nil
	case "eni":
		n, err := e.interfaceParam(id)
		if err != nil {
			return nil, err
		}
		return n.tags, nil
	case "rtb":
		if rt, ok := e.routeTables.Get(id); ok {
			return rt.tags, nil
		}
		return nil, apiErr("InvalidRouteTableID.NotFound", "The routeTable ID '%s' does not exist", id)
	}
	return nil, apiErr("InvalidID", "The ID '%s' is not valid", id)
}

func (e *Emulator) createTags(p params) (any, error) {
	ids, tags := p.list("ResourceId"), p.tags("Tag")
	if len(ids) == 0 {
		return nil, missing("ResourceId")
	}
	if len(tags) == 0 {
		return nil, missing("Tag")
	}
	for _, t := range tags {
		if err := checkEC2Tag(t); err != nil {
			return nil, err
		}
	}
	// Validate every resource first: CreateTags is all or nothing.
	var maps []map[string]string
	for _, id := range ids {
		m, err := e.ec2TagMap(id)
		if err != nil {
			return nil, err
		}
		n := len(m)
		for _, t := range tags {
			if _, ok := m[t.Key]; !ok {
				n++
			}
		}
		if n > maxTags {
			return nil, apiErr("TagLimitExceeded", "The maximum number of Tags for resource %s has been reached.", id)
		}
		maps = append(maps, m)
	}
	for _, m := range maps {
		for _, t := range tags {
			m[t.Key] = t.Value
		}
	}
	return returnResponse{Return: true}, nil
}

// deleteTags removes the listed keys; a tag given with a value is removed
// only if the value matches, and no tags at all removes every tag, as in EC2.
func (e *Emulator) deleteTags(p params) (any, error) {
	ids := p.list("ResourceId")
	if len(ids) == 0 {
		return nil, missing("ResourceId")
	}
	specs := p.structs("Tag")
	var maps []map[string]string
	for _, id := range ids {
		m, err := e.ec2TagMap(id)
		if err != nil {
			return nil, err
		}
		maps = append(maps, m)
	}
	for _, m := range maps {
		if len(specs) == 0 {
			clear(m)
			continue
		}
		for _, s := range specs {
			key := s.get("Key")
			if s.has("Value") && m[key] != s.get("Value") {
				continue
			}
			delete(m, key)
		}
	}
	return returnResponse{Return: true}, nil
}
