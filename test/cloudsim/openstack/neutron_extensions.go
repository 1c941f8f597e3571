package openstack

import (
	"net/http"
)

// Neutron's extensions: GET /v2.0/extensions and /v2.0/extensions/{alias}.
// The set is what devstack's ML2/OVN Neutron loads for what the emulator
// serves; NeutronConfig.DisabledExtensions takes some away, and with them
// their attributes, filters and routes.

// Extension aliases the emulator's behaviour depends on.
const (
	extRouter                  = "router"
	extExtraRoute              = "extraroute"
	extExtraRouteAtomic        = "extraroute-atomic"
	extExternalNet             = "external-net"
	extSecurityGroup           = "security-group"
	extPortSecurity            = "port-security"
	extAllowedAddressPairs     = "allowed-address-pairs"
	extStandardAttrRevisions   = "standard-attr-revisions"
	extStandardAttrTag         = "standard-attr-tag"
	extStandardAttrDescription = "standard-attr-description"
	extStandardAttrTimestamp   = "standard-attr-timestamp"
	extTagCreation             = "tag-creation"
	extTagPortsBulkCreation    = "tag-ports-during-bulk-creation"
	extRevisionIfMatch         = "revision-if-match"
	extFIPPortDetails          = "fip-port-details"
	extFilterValidation        = "filter-validation"
	extStatefulSecurityGroup   = "stateful-security-group"
	extPortSecurityGroupFilter = "port-security-groups-filtering"
	extIPSubstringFilter       = "ip-substring-filtering"
	extNetMTU                  = "net-mtu"
	extExtGWMode               = "ext-gw-mode"
)

type neutronExtension struct {
	alias, name, description, updated string
}

// neutronExtensions are the extensions the emulated Neutron has, with
// neutron-lib's names, descriptions and timestamps.
var neutronExtensions = []neutronExtension{
	{extAllowedAddressPairs, "Allowed Address Pairs", "Provides allowed address pairs", "2013-07-23T10:00:00-00:00"},
	{extExtGWMode, "Neutron L3 Configurable external gateway mode", "Extension of the router abstraction for specifying whether SNAT should occur on the external gateway", "2013-03-28T10:00:00-00:00"},
	{extExternalNet, "Neutron external network", "Adds external network attribute to network resource.", "2013-01-14T10:00:00-00:00"},
	{extExtraRoute, "Neutron Extra Route", "Extra routes configuration for L3 router", "2013-02-01T10:00:00-00:00"},
	{extExtraRouteAtomic, "Atomically add/remove extra routes", "Edit extra routes of a router on server side by atomically adding/removing extra routes", "2019-07-10T00:00:00+00:00"},
	{extFilterValidation, "Filter parameters validation", "Provides validation on filter parameters.", "2018-07-04T10:00:00-00:00"},
	{extFIPPortDetails, "Floating IP Port Details Extension", "Add port_details attribute to Floating IP resource", "2018-04-09T10:00:00-00:00"},
	{extIPSubstringFilter, "IP address substring filtering", "Provides IP address substring filtering when listing ports", "2017-11-28T09:00:00-00:00"},
	{extNetMTU, "Network MTU", "Provides MTU attribute for a network resource.", "2015-03-25T10:00:00-00:00"},
	{"pagination", "Pagination support", "Extension that indicates that pagination is enabled.", "2016-06-12T00:00:00-00:00"},
	{extPortSecurity, "Port Security", "Provides port security", "2012-07-23T10:00:00-00:00"},
	{extPortSecurityGroupFilter, "Port filtering on security groups", "Provides security groups filtering when listing ports", "2018-01-09T09:00:00-00:00"},
	{"project-id", "project_id field enabled", "Extension that indicates that project_id field is enabled.", "2016-09-09T09:09:09-09:09"},
	{extRevisionIfMatch, "If-Match constraints based on revision_number", "Extension indicating that If-Match based on revision_number is supported.", "2016-12-11T00:00:00-00:00"},
	{extRouter, "Neutron L3 Router", "Router abstraction for basic L3 forwarding between L2 Neutron networks and access to external networks via a NAT gateway.", "2012-07-20T10:00:00-00:00"},
	{extSecurityGroup, "security-group", "The security groups extension.", "2012-10-05T10:00:00-00:00"},
	{"security-groups-normalized-cidr", "Normalized CIDR field for security group rules", "Add new field with normalized remote_ip_prefix cidr in SG rule", "2020-07-28T10:00:00-00:00"},
	{"security-groups-remote-address-group", "Remote address group id field for security group rules", "Add new field of remote address group id in SG rules", "2020-08-25T10:00:00-00:00"},
	{"security-groups-rules-belongs-to-default-sg", "Security group rule belongs to the project's default security group", "Flag to determine if the security group rule belongs to the project's default security group", "2023-05-23T10:00:00-00:00"},
	{"sorting", "Sorting support", "Extension that indicates that sorting is enabled.", "2016-06-12T00:00:00-00:00"},
	{extStandardAttrDescription, "standard-attr-description", "Extension to add descriptions to standard attributes", "2016-02-10T10:00:00-00:00"},
	{extStandardAttrRevisions, "Resource revision numbers", "This extension will display the revision number of neutron resources.", "2016-04-11T10:00:00-00:00"},
	{extStandardAttrTag, "Tag support for resources with standard attribute: subnet, trunk, network_segment_range, router, network, policy, subnetpool, port, security_group, floatingip", "Enables to set tag on resources with standard attribute.", "2017-01-01T00:00:00-00:00"},
	{extStandardAttrTimestamp, "Resource timestamps", "Adds created_at and updated_at fields to all Neutron resources that have Neutron standard attributes.", "2016-09-12T10:00:00-00:00"},
	{extStatefulSecurityGroup, "Stateful security group", "Indicates if the security group is stateful or not", "2019-11-26T09:00:00-00:00"},
	{extTagCreation, "Tag creation extension", "Allow to create multiple tags for a resource", "2024-23-07T10:00:00-00:00"},
	{extTagPortsBulkCreation, "Tag Ports During Bulk Creation", "Allow to tag ports during bulk creation", "2019-12-29T19:00:00-00:00"},
}

// extensionRequires are the emulated extensions' REQUIRED_EXTENSIONS
// (and the plugins that carry them).
var extensionRequires = map[string][]string{
	extExtraRoute:                                 {extRouter},
	extExtraRouteAtomic:                           {extRouter, extExtraRoute},
	extFIPPortDetails:                             {extRouter},
	extExtGWMode:                                  {extRouter},
	extStatefulSecurityGroup:                      {extSecurityGroup},
	extPortSecurityGroupFilter:                    {extSecurityGroup},
	"security-groups-normalized-cidr":             {extSecurityGroup},
	"security-groups-remote-address-group":        {extSecurityGroup},
	"security-groups-rules-belongs-to-default-sg": {extSecurityGroup},
	extRevisionIfMatch:                            {extStandardAttrRevisions},
	extTagCreation:                                {extStandardAttrTag},
	extTagPortsBulkCreation:                       {extStandardAttrTag},
}

// DefaultNeutronExtensions lists the aliases of the extensions the
// emulated Neutron has unless NeutronConfig.DisabledExtensions removes
// some.
func DefaultNeutronExtensions() []string {
	out := make([]string, len(neutronExtensions))
	for i, x := range neutronExtensions {
		out[i] = x.alias
	}
	return out
}

func (x neutronExtension) ntView() map[string]any {
	return map[string]any{"alias": x.alias, "name": x.name, "description": x.description, "updated": x.updated, "links": []any{}}
}

func (e *Emulator) listExtensions(c *neutronCall) (*neutronResponse, *apiError) {
	list := []any{}
	for _, x := range neutronExtensions {
		if e.hasExt(x.alias) {
			list = append(list, x.ntView())
		}
	}
	return neutronOK(map[string]any{"extensions": list}), nil
}

func (e *Emulator) getExtension(c *neutronCall) (*neutronResponse, *apiError) {
	for _, x := range neutronExtensions {
		if x.alias == c.id && e.hasExt(x.alias) {
			return neutronOK(map[string]any{"extension": x.ntView()}), nil
		}
	}
	return nil, neutronError(http.StatusNotFound, "HTTPNotFound", "Extension with alias "+c.id+" does not exist")
}
