package permissions

import (
	"bytes"
	"encoding/json"
	"strings"
)

// AzurePolicy is an Azure custom role definition allowing the grants'
// actions, in the JSON `az role definition create --role-definition`
// reads (and New-AzRoleDefinition -InputFile): Name, IsCustom,
// Description, Actions, NotActions, DataActions and AssignableScopes
// ("Azure custom roles", custom role properties). Its assignable scope is
// the cluster's resource group, with placeholders to fill in; the other
// resource groups the cluster's config names need the role assigned too.
//
// A role definition has no per-action scopes: a grant with a Scope (a
// linked resource's join action, a subscription-wide listing) is an
// action of the role like any other, and the Description says where
// else it must be assigned, so one document still holds the whole
// policy.
func AzurePolicy(grants []Grant) ([]byte, error) {
	type role struct {
		Name             string   `json:"Name"`
		IsCustom         bool     `json:"IsCustom"`
		Description      string   `json:"Description"`
		Actions          []string `json:"Actions"`
		NotActions       []string `json:"NotActions"`
		DataActions      []string `json:"DataActions"`
		AssignableScopes []string `json:"AssignableScopes"`
	}
	desc := "What the multicloud-ccm cloud-controller-manager calls. Assign it on the cluster's resource group (resourceGroup), and on vnetResourceGroup, securityGroupResourceGroup, routeTableResourceGroup and loadBalancerResourceGroup where they differ."
	// The scoped grants, by scope in the order first met.
	scopes, byScope := byScope(grants)
	if len(scopes) > 0 {
		var parts []string
		for _, s := range scopes {
			parts = append(parts, strings.Join(byScope[s], ", ")+" on "+s)
		}
		desc += " These actions are checked on other scopes, where it (or a role with just them) must be assigned as well: " + strings.Join(parts, "; ") + "."
	}
	doc := role{
		Name:             "multicloud-ccm",
		IsCustom:         true,
		Description:      desc,
		Actions:          Permissions(grants),
		NotActions:       []string{},
		DataActions:      []string{},
		AssignableScopes: []string{"/subscriptions/<subscription-id>/resourceGroups/<resource-group>"},
	}
	if doc.Actions == nil {
		doc.Actions = []string{}
	}
	// The placeholders' angle brackets stay as they are: az reads the
	// file, not a browser.
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
