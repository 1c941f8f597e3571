package azure

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
)

// Network security groups: security rules (nested, SecurityRules_*),
// the six default security rules (nested, read-only,
// DefaultSecurityRules_*), and the subnets and network interfaces that
// use the group.

const (
	securityRuleType        = "Microsoft.Network/networkSecurityGroups/securityRules"
	defaultSecurityRuleType = "Microsoft.Network/networkSecurityGroups/defaultSecurityRules"
)

func putSecurityGroup(e *Emulator, c *putCall) *armError {
	if op := e.busyFamily(c.ID, c.Old); op != nil {
		return errAnotherOperation(op, c.Host)
	}
	sg, aerr := decodeBody[armnetwork.SecurityGroup](c.Body)
	if aerr != nil {
		return aerr
	}
	if sg.Properties == nil {
		sg.Properties = &armnetwork.SecurityGroupPropertiesFormat{}
	}
	p := sg.Properties
	seen := newNames(c.ID)
	var rules []*armnetwork.SecurityRule
	for i, r := range p.SecurityRules {
		if r == nil {
			continue
		}
		n := childName(r.Name, r.ID)
		if pr := seen.add(n, fmt.Sprintf("properties.securityRules[%d]", i)); pr != nil {
			return errInvalidFormat(pr)
		}
		if aerr := completeSecurityRule(c.ID+"/securityRules/"+n, r); aerr != nil {
			return aerr
		}
		for _, q := range rules {
			if aerr := securityRuleConflict(q, r); aerr != nil {
				return aerr
			}
		}
		rules = append(rules, r)
	}
	bodies := make([]map[string]any, 0, len(rules))
	for _, r := range rules {
		bodies = append(bodies, encodeJSON(r))
	}
	p.SecurityRules, p.DefaultSecurityRules, p.Subnets, p.NetworkInterfaces, p.FlowLogs = nil, nil, nil, nil, nil
	p.ResourceGUID = nil
	if c.Old != nil {
		if g, _ := c.Old.props()["resourceGuid"].(string); g != "" {
			p.ResourceGUID = to.Ptr(g)
		}
	}
	if p.ResourceGUID == nil {
		p.ResourceGUID = to.Ptr(e.newGUID())
	}
	replaceBody(c.Body, sg)
	rg, names := c.names()
	e.setChildren(rg, names, c.ID, e.netKind("networkSecurityGroups/securityRules"), bodies)
	e.ensureDefaultSecurityRules(rg, names, c.ID)
	return nil
}

// completeSecurityRule checks a security rule and fills what the
// provider fills.
func completeSecurityRule(id string, r *armnetwork.SecurityRule) *armError {
	r.ID, r.Name, r.Type, r.Etag = to.Ptr(id), to.Ptr(lastSegment(id)), to.Ptr(securityRuleType), nil
	if r.Properties == nil {
		return errMissing("properties")
	}
	sp := r.Properties
	if n := deref(sp.Priority); n < 100 || n > 4096 {
		return errBadRequest("SecurityRuleInvalidPriority", "Security rule has invalid Priority. Value provided: %d Allowed range 100-4096.", n)
	}
	proto, ok := canon(sp.Protocol, armnetwork.PossibleSecurityRuleProtocolValues(), "")
	if !ok {
		return errBadValue("properties.protocol", deref(sp.Protocol))
	}
	access, ok := canon(sp.Access, armnetwork.PossibleSecurityRuleAccessValues(), "")
	if !ok {
		return errBadValue("properties.access", deref(sp.Access))
	}
	dir, ok := canon(sp.Direction, armnetwork.PossibleSecurityRuleDirectionValues(), "")
	if !ok {
		return errBadValue("properties.direction", deref(sp.Direction))
	}
	sp.Protocol, sp.Access, sp.Direction = &proto, &access, &dir
	ports := append([]*string{sp.SourcePortRange, sp.DestinationPortRange}, append(slices.Clone(sp.SourcePortRanges), sp.DestinationPortRanges...)...)
	for _, pr := range ports {
		if pr != nil && !validPortRange(*pr) {
			return errBadRequest("SecurityRuleInvalidPortRange",
				"Security rule has invalid Port range. Value provided: %s. Value should be an integer OR integer range with '-' delimiter. Valid range 0-65535.", *pr)
		}
	}
	if deref(sp.SourceAddressPrefix) == "" && len(sp.SourceAddressPrefixes) == 0 && len(sp.SourceApplicationSecurityGroups) == 0 {
		return errBadRequest("SecurityRuleParameterMissing", "Security rule %s must specify a source address prefix, source address prefixes or source application security groups.", id)
	}
	if deref(sp.DestinationAddressPrefix) == "" && len(sp.DestinationAddressPrefixes) == 0 && len(sp.DestinationApplicationSecurityGroups) == 0 {
		return errBadRequest("SecurityRuleParameterMissing", "Security rule %s must specify a destination address prefix, destination address prefixes or destination application security groups.", id)
	}
	for _, list := range []*[]*string{&sp.SourcePortRanges, &sp.DestinationPortRanges, &sp.SourceAddressPrefixes, &sp.DestinationAddressPrefixes} {
		if *list == nil {
			*list = []*string{}
		}
	}
	return nil
}

// validPortRange: "*", a port, or "low-high", within 0-65535.
func validPortRange(s string) bool {
	if s == "*" {
		return true
	}
	lo, hi, isRange := strings.Cut(s, "-")
	a, err := strconv.Atoi(lo)
	if err != nil || a < 0 || a > 65535 {
		return false
	}
	if !isRange {
		return true
	}
	b, err := strconv.Atoi(hi)
	return err == nil && b >= a && b <= 65535
}

// securityRuleConflict: two rules must not share priority and
// direction. existing is named first, as the provider words it.
func securityRuleConflict(existing, r *armnetwork.SecurityRule) *armError {
	ep, rp := existing.Properties, r.Properties
	if deref(ep.Priority) == deref(rp.Priority) && strings.EqualFold(string(deref(ep.Direction)), string(deref(rp.Direction))) {
		return errBadRequest("SecurityRuleConflict", "Security rule %s conflicts with rule %s. Rules cannot have the same Priority and Direction. To learn more, see aka.ms/nsgrules.", deref(existing.Name), deref(r.Name))
	}
	return nil
}

// putSecurityRule is SecurityRules_CreateOrUpdate.
func putSecurityRule(e *Emulator, c *putCall) *armError {
	sg, aerr := e.putChildPrologue(c)
	if aerr != nil {
		return aerr
	}
	r, aerr := decodeBody[armnetwork.SecurityRule](c.Body)
	if aerr != nil {
		return aerr
	}
	if aerr := completeSecurityRule(c.ID, &r); aerr != nil {
		return aerr
	}
	for _, o := range e.childrenOf(sg.id, e.netKind("networkSecurityGroups/securityRules")) {
		if o == c.Old {
			continue
		}
		other, _ := decodeAs[armnetwork.SecurityRule](o.body)
		if other.Properties != nil {
			if aerr := securityRuleConflict(&other, &r); aerr != nil {
				return aerr
			}
		}
	}
	replaceBody(c.Body, r)
	e.touch(sg.id)
	return nil
}

// ensureDefaultSecurityRules gives a security group Azure's six default
// rules if it lacks them.
func (e *Emulator) ensureDefaultSecurityRules(rg string, parentNames []string, sgID string) {
	k := e.netKind("networkSecurityGroups/defaultSecurityRules")
	if len(e.childrenOf(sgID, k)) > 0 {
		return
	}
	rule := func(name, desc, access string, priority int, direction, src, dst string) {
		e.insert(k, rg, append(slices.Clone(parentNames), name), map[string]any{
			"properties": map[string]any{
				"description":                desc,
				"protocol":                   "*",
				"sourcePortRange":            "*",
				"destinationPortRange":       "*",
				"sourceAddressPrefix":        src,
				"destinationAddressPrefix":   dst,
				"access":                     access,
				"priority":                   priority,
				"direction":                  direction,
				"sourcePortRanges":           []any{},
				"destinationPortRanges":      []any{},
				"sourceAddressPrefixes":      []any{},
				"destinationAddressPrefixes": []any{},
				"provisioningState":          "Succeeded",
			},
		})
	}
	rule("AllowVnetInBound", "Allow inbound traffic from all VMs in VNET", "Allow", 65000, "Inbound", "VirtualNetwork", "VirtualNetwork")
	rule("AllowAzureLoadBalancerInBound", "Allow inbound traffic from azure load balancer", "Allow", 65001, "Inbound", "AzureLoadBalancer", "*")
	rule("DenyAllInBound", "Deny all inbound traffic", "Deny", 65500, "Inbound", "*", "*")
	rule("AllowVnetOutBound", "Allow outbound traffic from all VMs to all VMs in VNET", "Allow", 65000, "Outbound", "VirtualNetwork", "VirtualNetwork")
	rule("AllowInternetOutBound", "Allow outbound traffic from all VMs to Internet", "Allow", 65001, "Outbound", "*", "Internet")
	rule("DenyAllOutBound", "Deny all outbound traffic", "Deny", 65500, "Outbound", "*", "*")
}

// referrers lists, by ID, the objects of a network type whose
// properties[key].id is id.
func (e *Emulator) referrers(typ, key, id string) []string {
	var out []string
	for _, o := range e.objs {
		if strings.EqualFold(o.kind.typ, typ) && strings.EqualFold(o.kind.ns, networkNS) && sameID(refID(o.props(), key), id) {
			out = append(out, o.id)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) })
	return out
}

func viewSecurityGroup(e *Emulator, o *object, _ url.Values) (map[string]any, *armError) {
	out := copyBody(o.body)
	p := propsOf(out)
	p["provisioningState"] = e.stateOf(o)
	rules, aerr := e.renderChildren(o, e.netKind("networkSecurityGroups/securityRules"))
	if aerr != nil {
		return nil, aerr
	}
	defaults, aerr := e.renderChildren(o, e.netKind("networkSecurityGroups/defaultSecurityRules"))
	if aerr != nil {
		return nil, aerr
	}
	p["securityRules"], p["defaultSecurityRules"] = rules, defaults
	if ids := e.referrers("virtualNetworks/subnets", "networkSecurityGroup", o.id); len(ids) > 0 {
		p["subnets"] = subResources(ids)
	}
	if ids := e.referrers("networkInterfaces", "networkSecurityGroup", o.id); len(ids) > 0 {
		p["networkInterfaces"] = subResources(ids)
	}
	return out, nil
}

func delSecurityGroup(e *Emulator, o *object) *armError {
	if aerr := delFamily(e, o); aerr != nil {
		return aerr
	}
	users := append(e.referrers("virtualNetworks/subnets", "networkSecurityGroup", o.id), e.referrers("networkInterfaces", "networkSecurityGroup", o.id)...)
	if len(users) > 0 {
		return errBadRequest("InUseNetworkSecurityGroupCannotBeDeleted",
			"Network security group %s cannot be deleted because it is in use by the following resources: %s. In order to delete the Network security group, remove the association with the resource(s). To learn how to do this, see aka.ms/deletensg.",
			o.id, strings.Join(users, ", "))
	}
	return nil
}
