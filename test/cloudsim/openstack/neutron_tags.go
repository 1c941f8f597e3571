package openstack

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Neutron's tags (standard-attr-tag, tag-creation): /v2.0/{resources}/{id}/tags
// and /tags/{tag} on networks, subnets, ports, floating IPs, security
// groups and routers. Every change of a resource's tags is a change of
// the resource: its revision goes up.

// tagTarget finds the standard attributes of the resource a tag route
// names, and whether the caller may change them: projects may read the
// tags of the external networks they see but not set them.
func (e *Emulator) tagTarget(c *neutronCall) (*stdAttrs, bool, *apiError) {
	notFound := neutronNotFound("TagResourceNotFound",
		"Resource "+strings.ReplaceAll(c.tagged, "-", "_")+" "+c.id+" could not be found.")
	switch c.tagged {
	case "networks":
		if n, ok := e.networks.Get(c.id); ok && e.networkVisible(c, n) {
			return &n.std, n.projectID == c.project, nil
		}
	case "subnets":
		if s, ok := e.subnets.Get(c.id); ok && e.subnetVisible(c, s) {
			return &s.std, s.projectID == c.project, nil
		}
	case "ports":
		if p, ok := e.ports.Get(c.id); ok && p.projectID == c.project {
			return &p.std, true, nil
		}
	case "floatingips":
		if f, ok := e.floatingIPs.Get(c.id); ok && f.projectID == c.project {
			return &f.std, true, nil
		}
	case "security-groups":
		if g, ok := e.neutron.secGroups.Get(c.id); ok && g.projectID == c.project {
			return &g.std, true, nil
		}
	case "routers":
		if r, ok := e.neutron.routers.Get(c.id); ok && r.projectID == c.project {
			return &r.std, true, nil
		}
	}
	return nil, false, notFound
}

// writableTags is tagTarget for changes.
func (e *Emulator) writableTags(c *neutronCall, action string) (*stdAttrs, *apiError) {
	s, mine, err := e.tagTarget(c)
	if err != nil {
		return nil, err
	}
	if !mine {
		member := strings.TrimSuffix(strings.ReplaceAll(c.tagged, "-", "_"), "s")
		return nil, neutronError(http.StatusForbidden, "PolicyNotAuthorized",
			"rule:"+action+"_"+member+":tags is disallowed by policy")
	}
	return s, nil
}

// ntValidateTag is tagging.validate_tag.
func ntValidateTag(tag string) *apiError {
	if len([]rune(tag)) > maxTagLen {
		return ntInvalidInput(fmt.Sprintf("'%s' exceeds maximum length of %d", tag, maxTagLen))
	}
	return nil
}

// ntValidateTagList is validate_list_of_unique_strings with the tag
// length, for the body of PUT and POST .../tags and ports' "tags".
func ntValidateTagList(v any, attr string) ([]string, *apiError) {
	bad := func(msg string) *apiError {
		if attr == "" {
			return ntInvalidInput(msg)
		}
		return ntHTTPBadRequest("Invalid input for " + attr + ". Reason: " + msg + ".")
	}
	l, ok := v.([]any)
	if !ok {
		return nil, bad("'" + pyStr(v) + "' is not a list")
	}
	out := []string{}
	for _, it := range l {
		s, ok := it.(string)
		if !ok {
			return nil, bad("'" + pyStr(it) + "' is not a valid string")
		}
		if len([]rune(s)) > maxTagLen {
			return nil, bad(fmt.Sprintf("'%s' exceeds maximum length of %d", s, maxTagLen))
		}
		if slices.Contains(out, s) {
			return nil, bad("Duplicate items in the list: '" + s + "'")
		}
		out = append(out, s)
	}
	return out, nil
}

// tagsBody reads {"tags": [...]} (tagging.validate_tags) and checks the
// per-resource limit.
func (c *neutronCall) tagsBody() ([]string, *apiError) {
	var body map[string]any
	if err := json.Unmarshal(c.body, &body); err != nil {
		return nil, ntHTTPBadRequest("Body contains invalid data")
	}
	v, ok := body["tags"]
	if !ok {
		return nil, ntInvalidInput("Invalid tags body")
	}
	tags, err := ntValidateTagList(v, "")
	if err != nil {
		return nil, err
	}
	if len(tags) > maxTagsCount {
		return nil, c.tooManyTags()
	}
	return tags, nil
}

func (c *neutronCall) tooManyTags() *apiError {
	return ntBadRequest(strings.ReplaceAll(c.tagged, "-", "_"), fmt.Sprintf("The number of tags exceed the per-resource limit of %d", maxTagsCount))
}

func (e *Emulator) listTags(c *neutronCall) (*neutronResponse, *apiError) {
	s, _, err := e.tagTarget(c)
	if err != nil {
		return nil, err
	}
	return neutronOK(map[string]any{"tags": ntStrings(s.tags)}), nil
}

func (e *Emulator) getTag(c *neutronCall) (*neutronResponse, *apiError) {
	if err := ntValidateTag(c.tag); err != nil {
		return nil, err
	}
	s, _, err := e.tagTarget(c)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(s.tags, c.tag) {
		return nil, neutronNotFound("TagNotFound", "Tag "+c.tag+" could not be found.")
	}
	return &neutronResponse{status: http.StatusNoContent}, nil
}

// replaceTags is PUT .../tags: the body's tags become the resource's.
func (e *Emulator) replaceTags(c *neutronCall) (*neutronResponse, *apiError) {
	tags, err := c.tagsBody()
	if err != nil {
		return nil, err
	}
	s, err := e.writableTags(c, "update")
	if err != nil {
		return nil, err
	}
	if !ntSameSet(s.tags, tags) {
		s.tags = tags
		s.bump(e.now())
	}
	return neutronOK(map[string]any{"tags": tags}), nil
}

// addTags is POST .../tags (tag-creation): the body's tags are added to
// the resource's.
func (e *Emulator) addTags(c *neutronCall) (*neutronResponse, *apiError) {
	tags, err := c.tagsBody()
	if err != nil {
		return nil, err
	}
	s, err := e.writableTags(c, "create")
	if err != nil {
		return nil, err
	}
	next := slices.Clone(s.tags)
	for _, t := range tags {
		if !slices.Contains(next, t) {
			next = append(next, t)
		}
	}
	if len(next) > maxTagsCount {
		return nil, c.tooManyTags()
	}
	if len(next) != len(s.tags) {
		s.tags = next
		s.bump(e.now())
	}
	return neutronOK(map[string]any{"tags": tags}), nil
}

func (e *Emulator) addTag(c *neutronCall) (*neutronResponse, *apiError) {
	if err := ntValidateTag(c.tag); err != nil {
		return nil, err
	}
	s, err := e.writableTags(c, "update")
	if err != nil {
		return nil, err
	}
	if !slices.Contains(s.tags, c.tag) {
		if len(s.tags)+1 > maxTagsCount {
			return nil, c.tooManyTags()
		}
		s.tags = append(s.tags, c.tag)
		s.bump(e.now())
	}
	return &neutronResponse{status: http.StatusCreated}, nil
}

func (e *Emulator) deleteTag(c *neutronCall) (*neutronResponse, *apiError) {
	if err := ntValidateTag(c.tag); err != nil {
		return nil, err
	}
	s, err := e.writableTags(c, "delete")
	if err != nil {
		return nil, err
	}
	if !slices.Contains(s.tags, c.tag) {
		return nil, neutronNotFound("TagNotFound", "Tag "+c.tag+" could not be found.")
	}
	s.tags = slices.DeleteFunc(s.tags, func(t string) bool { return t == c.tag })
	s.bump(e.now())
	return &neutronResponse{status: http.StatusNoContent}, nil
}

func (e *Emulator) deleteAllTags(c *neutronCall) (*neutronResponse, *apiError) {
	s, err := e.writableTags(c, "delete")
	if err != nil {
		return nil, err
	}
	if len(s.tags) > 0 {
		s.tags = nil
		s.bump(e.now())
	}
	return &neutronResponse{status: http.StatusNoContent}, nil
}

func ntSameSet(a, b []string) bool {
	return len(a) == len(b) && containsAll(a, b)
}
