package aws

import "strings"

// maxTagResources is how many ARNs one AddTags/RemoveTags/DescribeTags takes.
const maxTagResources = 20

// elbTagParams reads and validates a Tags.member.N list.
func elbTagParams(p params, prefix string) (map[string]string, error) {
	tags := map[string]string{}
	for _, t := range p.tags(prefix) {
		switch {
		case t.Key == "":
			return nil, validation("A tag key must be specified")
		case strings.HasPrefix(strings.ToLower(t.Key), "aws:"):
			return nil, validation("Tag keys starting with 'aws:' are reserved")
		case len(t.Key) > 128 || len(t.Value) > 256:
			return nil, validation("Tag keys are limited to 128 and values to 256 characters")
		}
		if _, dup := tags[t.Key]; dup {
			return nil, apiErr("DuplicateTagKeys", "Tag key '%s' is duplicated", t.Key)
		}
		tags[t.Key] = t.Value
	}
	if len(tags) > maxTags {
		return nil, apiErr("TooManyTags", "You cannot have more than %d tags per resource", maxTags)
	}
	return tags, nil
}

// elbTagMap returns the live tag map of the resource arn names.
func (e *Emulator) elbTagMap(arn string) (map[string]string, error) {
	switch arnKind(arn) {
	case arnLoadBalancer:
		if lb, ok := e.loadBalancers.Get(arn); ok {
			return lb.tags, nil
		}
		return nil, apiErr("LoadBalancerNotFound", "Load balancer '%s' not found", arn)
	case arnTargetGroup:
		if tg, ok := e.targetGroups.Get(arn); ok {
			return tg.tags, nil
		}
		return nil, apiErr("TargetGroupNotFound", "Target groups '%s' not found", arn)
	case arnListener:
		if l, ok := e.listeners.Get(arn); ok {
			return l.tags, nil
		}
		return nil, apiErr("ListenerNotFound", "Listener '%s' not found", arn)
	}
	return nil, validation("'%s' is not a valid Elastic Load Balancing ARN", arn)
}

// tagTargets resolves ResourceArns.member.N, all of which must exist.
func (e *Emulator) tagTargets(p params) ([]map[string]string, error) {
	arns := p.list("ResourceArns.member")
	if len(arns) == 0 {
		return nil, validation("At least one resource ARN must be specified")
	}
	if len(arns) > maxTagResources {
		return nil, validation("You can specify up to %d resource ARNs", maxTagResources)
	}
	var maps []map[string]string
	for _, arn := range arns {
		m, err := e.elbTagMap(arn)
		if err != nil {
			return nil, err
		}
		maps = append(maps, m)
	}
	return maps, nil
}

func (e *Emulator) addTags(p params) (any, error) {
	maps, err := e.tagTargets(p)
	if err != nil {
		return nil, err
	}
	tags, err := elbTagParams(p, "Tags.member")
	if err != nil {
		return nil, err
	}
	if len(tags) == 0 {
		return nil, validation("At least one tag must be specified")
	}
	for _, m := range maps {
		n := len(m)
		for k := range tags {
			if _, ok := m[k]; !ok {
				n++
			}
		}
		if n > maxTags {
			return nil, apiErr("TooManyTags", "You cannot have more than %d tags per resource", maxTags)
		}
	}
	for _, m := range maps {
		for k, v := range tags {
			m[k] = v
		}
	}
	return emptyResponse{}, nil
}

func (e *Emulator) removeTags(p params) (any, error) {
	maps, err := e.tagTargets(p)
	if err != nil {
		return nil, err
	}
	keys := p.list("TagKeys.member")
	if len(keys) == 0 {
		return nil, validation("At least one tag key must be specified")
	}
	for _, m := range maps {
		for _, k := range keys {
			delete(m, k)
		}
	}
	return emptyResponse{}, nil
}

type xmlTagDescription struct {
	ResourceArn string   `xml:"ResourceArn"`
	Tags        []elbTag `xml:"Tags>member"`
}

type describeTagsResponse struct {
	TagDescriptions []xmlTagDescription `xml:"TagDescriptions>member"`
}

func (e *Emulator) describeTags(p params) (any, error) {
	maps, err := e.tagTargets(p)
	if err != nil {
		return nil, err
	}
	var resp describeTagsResponse
	for i, arn := range p.list("ResourceArns.member") {
		resp.TagDescriptions = append(resp.TagDescriptions, xmlTagDescription{ResourceArn: arn, Tags: elbTags(maps[i])})
	}
	return resp, nil
}
