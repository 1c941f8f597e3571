package aws

// Classic ELB tags, addressed by load balancer name.

// clbTagNames resolves LoadBalancerNames.member.N: at least one, at most
// max, every one existing.
func (e *Emulator) clbTagNames(p params, max int) ([]*classicLB, error) {
	names := p.list("LoadBalancerNames.member")
	if len(names) == 0 {
		return nil, clbRequired("loadBalancerNames")
	}
	if len(names) > max {
		return nil, validation("1 validation error detected: Value at 'loadBalancerNames' failed to satisfy constraint: Member must have length less than or equal to %d", max)
	}
	var lbs []*classicLB
	for _, n := range names {
		lb, ok := e.classicLBs.Get(n)
		if !ok {
			return nil, clbNotFound(n)
		}
		lbs = append(lbs, lb)
	}
	return lbs, nil
}

// clbAddTags adds or overwrites tags on one load balancer (the API takes
// one name only), up to maxTags per load balancer.
func (e *Emulator) clbAddTags(p params) (any, error) {
	lbs, err := e.clbTagNames(p, 1)
	if err != nil {
		return nil, err
	}
	tags, err := elbTagParams(p, "Tags.member")
	if err != nil {
		return nil, err
	}
	if len(tags) == 0 {
		return nil, clbRequired("tags")
	}
	for _, lb := range lbs {
		n := len(lb.tags)
		for k := range tags {
			if _, ok := lb.tags[k]; !ok {
				n++
			}
		}
		if n > maxTags {
			return nil, apiErr("TooManyTags", "Load balancer %s would have %d tags; a load balancer can have at most %d", lb.name, n, maxTags)
		}
	}
	for _, lb := range lbs {
		for k, v := range tags {
			lb.tags[k] = v
		}
	}
	return emptyResponse{}, nil
}

func (e *Emulator) clbRemoveTags(p params) (any, error) {
	lbs, err := e.clbTagNames(p, 1)
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, t := range p.structs("Tags.member") {
		keys = append(keys, t.get("Key"))
	}
	if len(keys) == 0 {
		return nil, clbRequired("tags")
	}
	for _, lb := range lbs {
		for _, k := range keys {
			delete(lb.tags, k)
		}
	}
	return emptyResponse{}, nil
}

type xmlCLBTagDescription struct {
	LoadBalancerName string   `xml:"LoadBalancerName"`
	Tags             []elbTag `xml:"Tags>member"`
}

type clbDescribeTagsResponse struct {
	TagDescriptions []xmlCLBTagDescription `xml:"TagDescriptions>member"`
}

// clbDescribeTags takes up to 20 names, like ELBv2's DescribeTags takes
// 20 ARNs.
func (e *Emulator) clbDescribeTags(p params) (any, error) {
	lbs, err := e.clbTagNames(p, maxTagResources)
	if err != nil {
		return nil, err
	}
	var resp clbDescribeTagsResponse
	for _, lb := range lbs {
		resp.TagDescriptions = append(resp.TagDescriptions, xmlCLBTagDescription{LoadBalancerName: lb.name, Tags: elbTags(lb.tags)})
	}
	return resp, nil
}
