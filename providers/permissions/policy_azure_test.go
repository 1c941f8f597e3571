package permissions

import (
	"encoding/json"
	"testing"
)

// TestAzurePolicy: a custom role definition as `az role definition
// create --role-definition` reads it, actions sorted and once, the
// scoped grants' actions in the role and their scopes in its
// description.
func TestAzurePolicy(t *testing.T) {
	got, err := AzurePolicy([]Grant{
		{Permission: "Microsoft.Network/loadBalancers/write", Why: "w"},
		{Permission: "Microsoft.Compute/virtualMachines/read", Why: "r"},
		{Permission: "Microsoft.Compute/virtualMachines/read", Scope: "the subscription", Why: "status"},
		{Permission: "Microsoft.Network/virtualNetworks/subnets/join/action", Scope: "the nodes' subnet", Why: "frontend"},
		{Permission: "Microsoft.Network/routeTables/join/action", Scope: "the nodes' subnet", Why: "subnet"},
	})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{
  "Name": "multicloud-ccm",
  "IsCustom": true,
  "Description": "What the multicloud-ccm cloud-controller-manager calls. Assign it on the cluster's resource group (resourceGroup), and on vnetResourceGroup, securityGroupResourceGroup, routeTableResourceGroup and loadBalancerResourceGroup where they differ. These actions are checked on other scopes, where it (or a role with just them) must be assigned as well: Microsoft.Compute/virtualMachines/read on the subscription; Microsoft.Network/virtualNetworks/subnets/join/action, Microsoft.Network/routeTables/join/action on the nodes' subnet.",
  "Actions": [
    "Microsoft.Compute/virtualMachines/read",
    "Microsoft.Network/loadBalancers/write",
    "Microsoft.Network/routeTables/join/action",
    "Microsoft.Network/virtualNetworks/subnets/join/action"
  ],
  "NotActions": [],
  "DataActions": [],
  "AssignableScopes": [
    "/subscriptions/<subscription-id>/resourceGroups/<resource-group>"
  ]
}
`
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	var parsed map[string]any
	if err := json.Unmarshal(got, &parsed); err != nil {
		t.Fatalf("not JSON: %v", err)
	}

	// No scoped grant: the description says where to assign it only.
	got, err = AzurePolicy([]Grant{{Permission: "Microsoft.Network/loadBalancers/read", Why: "r"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got, &parsed); err != nil {
		t.Fatal(err)
	}
	if d := parsed["Description"].(string); d != "What the multicloud-ccm cloud-controller-manager calls. Assign it on the cluster's resource group (resourceGroup), and on vnetResourceGroup, securityGroupResourceGroup, routeTableResourceGroup and loadBalancerResourceGroup where they differ." {
		t.Errorf("description %q", d)
	}
}
