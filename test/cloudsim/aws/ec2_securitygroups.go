package aws

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

type securityGroup struct {
	id          string
	name        string
	description string
	vpcID       string
	isDefault   bool // the VPC's "default" group, which cannot be deleted
	ingress     []*sgRule
	egress      []*sgRule
	tags        map[string]string
}

// sgRule is one security group rule: a protocol and port range from one
// source (a CIDR or another group). EC2 gives every rule an sgr- ID, and
// so do we, which lets Resources() report leaked rules one by one.
type sgRule struct {
	id          string
	protocol    string // tcp, udp, icmp, or -1 for all
	fromPort    int
	toPort      int
	cidr        string
	groupID     string
	description string
}

// sameAs compares what EC2 compares for duplicates: everything but the
// ID and description.
func (r *sgRule) sameAs(o *sgRule) bool {
	return r.protocol == o.protocol && r.fromPort == o.fromPort && r.toPort == o.toPort &&
		r.cidr == o.cidr && r.groupID == o.groupID
}

// ipv6 says the rule's source is an IPv6 CIDR (Ipv6Ranges, not IpRanges).
func (r *sgRule) ipv6() bool { return strings.Contains(r.cidr, ":") }

func (r *sgRule) String() string {
	peer := r.cidr
	if r.groupID != "" {
		peer = r.groupID
	}
	if r.protocol == "-1" {
		return fmt.Sprintf("peer: %s, ALL, ALLOW", peer)
	}
	return fmt.Sprintf("peer: %s, %s, from port: %d, to port: %d, ALLOW", peer, strings.ToUpper(r.protocol), r.fromPort, r.toPort)
}

func (e *Emulator) newSecurityGroup(vpcID, name, description string, tags map[string]string) *securityGroup {
	id, _ := e.newID("sg")
	ruleID, _ := e.newID("sgr")
	sg := &securityGroup{
		id: id, name: name, description: description, vpcID: vpcID, tags: copyTags(tags),
		// New groups allow all egress, as in EC2.
		egress: []*sgRule{{id: ruleID, protocol: "-1", cidr: "0.0.0.0/0"}},
	}
	e.securityGroups.Put(sg)
	return sg
}

func (e *Emulator) createSecurityGroupChecked(vpcID, name, description string, tags map[string]string) (*securityGroup, error) {
	switch {
	case name == "":
		return nil, missing("GroupName")
	case description == "":
		return nil, missing("GroupDescription")
	case strings.HasPrefix(name, "sg-"):
		return nil, invalidValue("GroupName", name, "Group names may not be in the format sg-*.")
	case len(name) > 255:
		return nil, invalidValue("GroupName", name, "Group names must be at most 255 characters.")
	case vpcID == "":
		return nil, apiErr("VPCIdNotSpecified", "No default VPC for this user")
	}
	if _, ok := e.vpcs.Get(vpcID); !ok {
		return nil, apiErr("InvalidVpcID.NotFound", "The vpc ID '%s' does not exist", vpcID)
	}
	for _, sg := range e.securityGroups.All() {
		if sg.vpcID == vpcID && sg.name == name {
			return nil, apiErr("InvalidGroup.Duplicate", "The security group '%s' already exists for VPC '%s'", name, vpcID)
		}
	}
	return e.newSecurityGroup(vpcID, name, description, tags), nil
}

// groupParam resolves GroupId (or, failing that, GroupName, which EC2
// only honours in the default VPC; we have none, so it never matches).
func (e *Emulator) groupParam(p params) (*securityGroup, error) {
	id := p.get("GroupId")
	if id == "" {
		if name := p.get("GroupName"); name != "" {
			return nil, apiErr("InvalidGroup.NotFound", "The security group '%s' does not exist in default VPC 'none'", name)
		}
		return nil, missing("GroupId")
	}
	return e.groupByID(id)
}

func (e *Emulator) groupByID(id string) (*securityGroup, error) {
	if !groupIDPattern.MatchString(id) {
		return nil, apiErr("InvalidGroupId.Malformed", "Invalid id: %q (expecting \"sg-...\")", id)
	}
	sg, ok := e.securityGroups.Get(id)
	if !ok {
		return nil, apiErr("InvalidGroup.NotFound", "The security group '%s' does not exist", id)
	}
	return sg, nil
}

// tagSpecifications returns the tags of TagSpecification.N entries for
// resourceType.
func tagSpecifications(p params, resourceType string) (map[string]string, error) {
	tags := map[string]string{}
	for _, spec := range p.structs("TagSpecification") {
		if rt := spec.get("ResourceType"); rt != resourceType {
			return nil, invalidValue("TagSpecification.ResourceType", rt, "The resource type is not valid for this call.")
		}
		for _, t := range spec.tags("Tag") {
			if err := checkEC2Tag(t); err != nil {
				return nil, err
			}
			tags[t.Key] = t.Value
		}
	}
	return tags, nil
}

type createSecurityGroupResponse struct {
	GroupID string   `xml:"groupId"`
	Tags    []ec2Tag `xml:"tagSet>item"`
}

func (e *Emulator) createSecurityGroup(p params) (any, error) {
	tags, err := tagSpecifications(p, "security-group")
	if err != nil {
		return nil, err
	}
	sg, err := e.createSecurityGroupChecked(p.get("VpcId"), p.get("GroupName"), p.get("GroupDescription"), tags)
	if err != nil {
		return nil, err
	}
	return createSecurityGroupResponse{GroupID: sg.id, Tags: ec2Tags(sg.tags)}, nil
}

func (e *Emulator) deleteSecurityGroup(p params) (any, error) {
	sg, err := e.groupParam(p)
	if err != nil {
		return nil, err
	}
	if sg.isDefault {
		return nil, apiErr("CannotDelete", "the specified group: %q name: \"default\" cannot be deleted by a user", sg.id)
	}
	if user := e.groupUser(sg.id); user != "" {
		return nil, apiErr("DependencyViolation", "resource %s has a dependent object (%s)", sg.id, user)
	}
	e.securityGroups.Delete(sg.id)
	return deleteSecurityGroupResponse{Return: true, GroupID: sg.id}, nil
}

type deleteSecurityGroupResponse struct {
	Return  bool   `xml:"return"`
	GroupID string `xml:"groupId"`
}

// groupUser names something that still depends on group id, or "".
func (e *Emulator) groupUser(id string) string {
	for _, lb := range e.loadBalancers.All() {
		if slices.Contains(lb.securityGroups, id) {
			return "load balancer " + lb.name
		}
	}
	for _, lb := range e.classicLBs.All() {
		if slices.Contains(lb.securityGroups, id) {
			return "load balancer " + lb.name
		}
	}
	for _, sg := range e.securityGroups.All() {
		if sg.id == id {
			continue // a group may reference itself
		}
		for _, r := range append(slices.Clone(sg.ingress), sg.egress...) {
			if r.groupID == id {
				return "rule in " + sg.id
			}
		}
	}
	for _, inst := range e.instances.All() {
		if inst.state != stateTerminated && slices.Contains(inst.securityGroups, id) {
			return "instance " + inst.id
		}
	}
	return ""
}

// --- rules ---

// normalizeProtocol spells protocols the way EC2 reports them.
func normalizeProtocol(proto string) (string, bool) {
	switch strings.ToLower(proto) {
	case "tcp", "6":
		return "tcp", true
	case "udp", "17":
		return "udp", true
	case "icmp", "1":
		return "icmp", true
	case "-1", "all":
		return "-1", true
	}
	return "", false
}

// parsePermissions reads IpPermissions.N (or the legacy top-level
// IpProtocol/FromPort/ToPort/CidrIp) into one rule per source.
func (e *Emulator) parsePermissions(p params) ([]*sgRule, error) {
	perms := p.structs("IpPermissions")
	if len(perms) == 0 && p.get("IpProtocol") != "" {
		legacy := params{p.v}
		perms = []params{legacy}
	}
	var rules []*sgRule
	for _, perm := range perms {
		proto, ok := normalizeProtocol(perm.get("IpProtocol"))
		if !ok {
			return nil, invalidValue("IpProtocol", perm.get("IpProtocol"), "Valid values are tcp, udp, icmp, -1 or a protocol number.")
		}
		from, to, err := portRange(perm, proto)
		if err != nil {
			return nil, err
		}
		base := sgRule{protocol: proto, fromPort: from, toPort: to}
		cidrs := perm.structs("IpRanges")
		if c := perm.get("CidrIp"); c != "" { // legacy form
			cidrs = append(cidrs, params{map[string][]string{"CidrIp": {c}}})
		}
		for _, r := range cidrs {
			prefix, err := netip.ParsePrefix(r.get("CidrIp"))
			if err != nil || !prefix.Addr().Is4() {
				// EC2's answer to an IPv6 (or any malformed) CIDR in
				// IpRanges, HTTP 400: "CIDR block ::/0 is malformed"
				// (aws/aws-cli#2428, hashicorp/terraform#14382).
				return nil, apiErr(codeInvalidParameterValue, "CIDR block %s is malformed", r.get("CidrIp"))
			}
			rule := base
			rule.cidr, rule.description = prefix.Masked().String(), r.get("Description")
			rules = append(rules, &rule)
		}
		// Ipv6Ranges.N.CidrIpv6, canonicalised as IpRanges are (host bits
		// masked, RFC 5952 form), so a non-canonical spelling of an
		// existing rule is a duplicate.
		for _, r := range perm.structs("Ipv6Ranges") {
			prefix, err := netip.ParsePrefix(r.get("CidrIpv6"))
			if err != nil || !prefix.Addr().Is6() || prefix.Addr().Is4In6() {
				return nil, apiErr(codeInvalidParameterValue, "CIDR block %s is malformed", r.get("CidrIpv6"))
			}
			rule := base
			rule.cidr, rule.description = prefix.Masked().String(), r.get("Description")
			rules = append(rules, &rule)
		}
		for _, g := range perm.structs("Groups") {
			src, err := e.groupByID(g.get("GroupId"))
			if err != nil {
				return nil, err
			}
			rule := base
			rule.groupID, rule.description = src.id, g.get("Description")
			rules = append(rules, &rule)
		}
	}
	if len(rules) == 0 {
		return nil, missing("IpPermissions")
	}
	return rules, nil
}

func portRange(p params, proto string) (int, int, error) {
	if proto == "-1" {
		return 0, 0, nil // ports are meaningless for "all"
	}
	from, fromOK, err1 := p.intParam("FromPort")
	to, toOK, err2 := p.intParam("ToPort")
	if err1 != nil || err2 != nil || !fromOK || !toOK {
		return 0, 0, invalidValue("FromPort/ToPort", p.get("FromPort")+"/"+p.get("ToPort"), "Both ports are required for "+proto+".")
	}
	if proto == "icmp" { // type and code, -1 meaning any
		if from < -1 || from > 255 || to < -1 || to > 255 {
			return 0, 0, invalidValue("FromPort/ToPort", fmt.Sprintf("%d/%d", from, to), "ICMP type and code must be within -1..255.")
		}
		return from, to, nil
	}
	if from < 0 || to > 65535 || from > to {
		return 0, 0, apiErr("InvalidParameterValue", "Invalid port range %d-%d", from, to)
	}
	return from, to, nil
}

type xmlSecurityGroupRule struct {
	ID         string `xml:"securityGroupRuleId"`
	GroupID    string `xml:"groupId"`
	OwnerID    string `xml:"groupOwnerId"`
	IsEgress   bool   `xml:"isEgress"`
	IPProtocol string `xml:"ipProtocol"`
	FromPort   int    `xml:"fromPort"`
	ToPort     int    `xml:"toPort"`
	CidrIPv4   string `xml:"cidrIpv4,omitempty"`
	CidrIPv6   string `xml:"cidrIpv6,omitempty"`
	Referenced string `xml:"referencedGroupInfo>groupId,omitempty"`
	Desc       string `xml:"description,omitempty"`
}

type authorizeResponse struct {
	Return bool                   `xml:"return"`
	Rules  []xmlSecurityGroupRule `xml:"securityGroupRuleSet>item"`
}

func (e *Emulator) authorizeSecurityGroupIngress(p params) (any, error) {
	sg, err := e.groupParam(p)
	if err != nil {
		return nil, err
	}
	rules, err := e.parsePermissions(p)
	if err != nil {
		return nil, err
	}
	// All or nothing: any duplicate, existing or within the request, fails the call.
	for i, r := range rules {
		for _, other := range append(slices.Clone(sg.ingress), rules[:i]...) {
			if r.sameAs(other) {
				return nil, apiErr("InvalidPermission.Duplicate", "the specified rule %q already exists", r.String())
			}
		}
	}
	resp := authorizeResponse{Return: true}
	for _, r := range rules {
		r.id, _ = e.newID("sgr")
		sg.ingress = append(sg.ingress, r)
		x := xmlSecurityGroupRule{
			ID: r.id, GroupID: sg.id, OwnerID: e.cfg.AccountID, IPProtocol: r.protocol,
			FromPort: r.fromPort, ToPort: r.toPort, Referenced: r.groupID, Desc: r.description,
		}
		if r.ipv6() {
			x.CidrIPv6 = r.cidr
		} else {
			x.CidrIPv4 = r.cidr
		}
		if r.protocol == "-1" {
			x.FromPort, x.ToPort = -1, -1
		}
		resp.Rules = append(resp.Rules, x)
	}
	return resp, nil
}

func (e *Emulator) revokeSecurityGroupIngress(p params) (any, error) {
	sg, err := e.groupParam(p)
	if err != nil {
		return nil, err
	}
	rules, err := e.parsePermissions(p)
	if err != nil {
		return nil, err
	}
	for _, r := range rules {
		if !slices.ContainsFunc(sg.ingress, r.sameAs) {
			return nil, apiErr("InvalidPermission.NotFound", "The specified rule does not exist in this security group.")
		}
	}
	for _, r := range rules {
		sg.ingress = slices.DeleteFunc(sg.ingress, r.sameAs)
	}
	return returnResponse{Return: true}, nil
}

// --- DescribeSecurityGroups ---

type xmlIPRange struct {
	CidrIP      string `xml:"cidrIp"`
	Description string `xml:"description,omitempty"`
}

type xmlIPv6Range struct {
	CidrIPv6    string `xml:"cidrIpv6"`
	Description string `xml:"description,omitempty"`
}

type xmlUserIDGroupPair struct {
	GroupID     string `xml:"groupId"`
	UserID      string `xml:"userId"`
	Description string `xml:"description,omitempty"`
}

type xmlIPPermission struct {
	IPProtocol string               `xml:"ipProtocol"`
	FromPort   *int                 `xml:"fromPort,omitempty"`
	ToPort     *int                 `xml:"toPort,omitempty"`
	Groups     []xmlUserIDGroupPair `xml:"groups>item"`
	IPRanges   []xmlIPRange         `xml:"ipRanges>item"`
	IPv6Ranges []xmlIPv6Range       `xml:"ipv6Ranges>item"`
}

type xmlSecurityGroup struct {
	OwnerID     string            `xml:"ownerId"`
	GroupID     string            `xml:"groupId"`
	GroupName   string            `xml:"groupName"`
	Description string            `xml:"groupDescription"`
	VpcID       string            `xml:"vpcId"`
	Arn         string            `xml:"securityGroupArn"`
	Ingress     []xmlIPPermission `xml:"ipPermissions>item"`
	Egress      []xmlIPPermission `xml:"ipPermissionsEgress>item"`
	Tags        []ec2Tag          `xml:"tagSet>item"`
}

type describeSecurityGroupsResponse struct {
	Groups    []xmlSecurityGroup `xml:"securityGroupInfo>item"`
	NextToken string             `xml:"nextToken,omitempty"`
}

// permissions folds rules back into EC2's IpPermission shape: one entry
// per protocol and port range, listing every source.
func (e *Emulator) permissions(rules []*sgRule) []xmlIPPermission {
	var out []xmlIPPermission
	index := map[string]int{}
	for _, r := range rules {
		key := fmt.Sprintf("%s/%d/%d", r.protocol, r.fromPort, r.toPort)
		i, ok := index[key]
		if !ok {
			perm := xmlIPPermission{IPProtocol: r.protocol}
			if r.protocol != "-1" {
				from, to := r.fromPort, r.toPort
				perm.FromPort, perm.ToPort = &from, &to
			}
			out = append(out, perm)
			i = len(out) - 1
			index[key] = i
		}
		if r.groupID != "" {
			out[i].Groups = append(out[i].Groups, xmlUserIDGroupPair{GroupID: r.groupID, UserID: e.cfg.AccountID, Description: r.description})
		} else if r.ipv6() {
			out[i].IPv6Ranges = append(out[i].IPv6Ranges, xmlIPv6Range{CidrIPv6: r.cidr, Description: r.description})
		} else {
			out[i].IPRanges = append(out[i].IPRanges, xmlIPRange{CidrIP: r.cidr, Description: r.description})
		}
	}
	return out
}

func ruleValues(rules []*sgRule, f func(*sgRule) string) []string {
	var out []string
	for _, r := range rules {
		if v := f(r); v != "" {
			out = append(out, v)
		}
	}
	return out
}

var securityGroupFields = fields[*securityGroup]{
	"group-id":    func(sg *securityGroup) []string { return []string{sg.id} },
	"group-name":  func(sg *securityGroup) []string { return []string{sg.name} },
	"vpc-id":      func(sg *securityGroup) []string { return []string{sg.vpcID} },
	"description": func(sg *securityGroup) []string { return []string{sg.description} },
	"ip-permission.cidr": func(sg *securityGroup) []string {
		return ruleValues(sg.ingress, func(r *sgRule) string {
			if r.ipv6() {
				return ""
			}
			return r.cidr
		})
	},
	"ip-permission.ipv6-cidr": func(sg *securityGroup) []string {
		return ruleValues(sg.ingress, func(r *sgRule) string {
			if !r.ipv6() {
				return ""
			}
			return r.cidr
		})
	},
	"ip-permission.group-id": func(sg *securityGroup) []string {
		return ruleValues(sg.ingress, func(r *sgRule) string { return r.groupID })
	},
	"ip-permission.protocol": func(sg *securityGroup) []string {
		return ruleValues(sg.ingress, func(r *sgRule) string { return r.protocol })
	},
	"ip-permission.from-port": func(sg *securityGroup) []string {
		return ruleValues(sg.ingress, func(r *sgRule) string { return strconv.Itoa(r.fromPort) })
	},
	"ip-permission.to-port": func(sg *securityGroup) []string {
		return ruleValues(sg.ingress, func(r *sgRule) string { return strconv.Itoa(r.toPort) })
	},
}

func (e *Emulator) describeSecurityGroups(p params) (any, error) {
	ids, names := p.list("GroupId"), p.list("GroupName")
	for _, id := range ids {
		if _, err := e.groupByID(id); err != nil {
			return nil, err
		}
	}
	for _, name := range names {
		if !slices.ContainsFunc(e.securityGroups.All(), func(sg *securityGroup) bool { return sg.name == name }) {
			return nil, apiErr("InvalidGroup.NotFound", "The security group '%s' does not exist", name)
		}
	}
	named := func(sg *securityGroup) bool { return len(names) == 0 || slices.Contains(names, sg.name) }
	groups, next, err := ec2Describe(e.securityGroups, p, ids, notFound{"InvalidGroup.NotFound", "The security group %s does not exist"},
		securityGroupFields, func(sg *securityGroup) map[string]string { return sg.tags }, named)
	if err != nil {
		return nil, err
	}
	resp := describeSecurityGroupsResponse{NextToken: next}
	for _, sg := range groups {
		resp.Groups = append(resp.Groups, xmlSecurityGroup{
			OwnerID: e.cfg.AccountID, GroupID: sg.id, GroupName: sg.name, Description: sg.description, VpcID: sg.vpcID,
			Arn:     fmt.Sprintf("arn:aws:ec2:%s:%s:security-group/%s", e.cfg.Region, e.cfg.AccountID, sg.id),
			Ingress: e.permissions(sg.ingress), Egress: e.permissions(sg.egress), Tags: ec2Tags(sg.tags),
		})
	}
	return resp, nil
}
