package azure

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v6"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
)

// TestPolicyDeniesAsAzureDoes: under a policy for the service principal,
// a call whose action is outside it is ARM's 403 AuthorizationFailed
// naming the client, the action and the scope; a write whose body
// references a resource whose join action is outside it is 403
// LinkedAuthorizationFailed naming the linked scope; nothing denied is
// served; the actions the principal's calls needed are recorded, another
// application's calls are neither checked nor recorded.
func TestPolicyDeniesAsAzureDoes(t *testing.T) {
	env := newTestEnv(t, Config{})
	f := env.emu.Fixture()
	env.srv.SetPolicy(DefaultClientID, []string{
		"Microsoft.Network/publicIPAddresses/read",
		"Microsoft.Network/publicIPAddresses/write",
		"Microsoft.Network/locations/operations/read",
		"Microsoft.Network/loadBalancers/write",
		"Microsoft.Compute/virtualMachines/read",
	})
	pip := env.nwPublicIP(t, f.ResourceGroup, "web-pip", "")

	lbs := env.network.NewLoadBalancersClient()
	_, err := lbs.NewListPager(f.ResourceGroup, nil).NextPage(nwCtx(t))
	re := nwWantErr(t, err, http.StatusForbidden, "AuthorizationFailed")
	for _, want := range []string{"The client '" + DefaultClientID + "' with object id '", "does not have authorization to perform action 'Microsoft.Network/loadBalancers/read' over scope '/subscriptions/" + f.SubscriptionID + "/resourceGroups/" + f.ResourceGroup + "/providers/Microsoft.Network/loadBalancers'"} {
		if !strings.Contains(re.Error(), want) {
			t.Errorf("the denial does not say %q: %v", want, re)
		}
	}

	// The load balancer's write is allowed, the public IP its frontend
	// references is not joinable: the linked check fails, nothing is made.
	lbID := nwLBID(f, "kubernetes")
	err = env.nwLBErr(t, f.ResourceGroup, "kubernetes", nwLB(f, lbID, deref(pip.ID), "10.240.0.4"))
	re = nwWantErr(t, err, http.StatusForbidden, "LinkedAuthorizationFailed")
	for _, want := range []string{"has permission to perform action 'Microsoft.Network/loadBalancers/write' on scope '" + lbID + "'", "does not have permission to perform action 'Microsoft.Network/publicIPAddresses/join/action' on the linked scope(s) '" + deref(pip.ID) + "'"} {
		if !strings.Contains(re.Error(), want) {
			t.Errorf("the denial does not say %q: %v", want, re)
		}
	}
	if _, ok := env.emu.LoadBalancer(f.ResourceGroup, "kubernetes"); ok {
		t.Error("a denied write was served")
	}

	// A subscription-wide listing needs the read action as a group's does.
	if _, err := env.compute.NewVirtualMachinesClient().NewListAllPager(&armcompute.VirtualMachinesClientListAllOptions{StatusOnly: to.Ptr("true")}).NextPage(nwCtx(t)); err != nil {
		t.Errorf("an allowed subscription-wide listing: %v", err)
	}
	wantUsed := []string{
		"Microsoft.Compute/virtualMachines/read",
		"Microsoft.Network/loadBalancers/read",
		"Microsoft.Network/loadBalancers/write",
		"Microsoft.Network/locations/operations/read",
		"Microsoft.Network/publicIPAddresses/join/action",
		"Microsoft.Network/publicIPAddresses/read",
		"Microsoft.Network/publicIPAddresses/write",
		"Microsoft.Network/virtualNetworks/joinLoadBalancer/action",
	}
	if got := env.srv.Used(); !slices.Equal(got, wantUsed) {
		t.Errorf("used\n%v, want\n%v", got, wantUsed)
	}
	if got := env.srv.Denied(); !slices.Equal(got, []string{"Microsoft.Network/loadBalancers/read", "Microsoft.Network/publicIPAddresses/join/action"}) {
		t.Errorf("denied %v", got)
	}

	// With the joins granted the same write goes through.
	env.srv.SetPolicy(DefaultClientID, append(wantUsed, "Microsoft.Network/loadBalancers/read"))
	env.nwPutLB(t, f.ResourceGroup, "kubernetes", nwLB(f, lbID, deref(pip.ID), "10.240.0.4"))

	// Another application is not the policy's.
	env.srv.ResetUsed()
	env.srv.SetPolicy(DefaultClientID, []string{})
	admin, err := armnetwork.NewClientFactory(f.SubscriptionID, staticToken{token: env.emu.IssueTokenFor(AdminClientID)}, env.opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.NewLoadBalancersClient().Get(nwCtx(t), f.ResourceGroup, "kubernetes", nil); err != nil {
		t.Errorf("another application's call: %v", err)
	}
	if got := env.srv.Used(); len(got) != 0 {
		t.Errorf("another application's calls recorded: %v", got)
	}
	// No policy: everything is served.
	env.srv.SetPolicy("", nil)
	if _, err := lbs.Get(nwCtx(t), f.ResourceGroup, "kubernetes", nil); err != nil {
		t.Errorf("without a policy: %v", err)
	}
}

// TestPermissionsOfRequests: the actions ARM derives from a request's
// URL and method, and the join actions of what a write's body
// references.
func TestPermissionsOfRequests(t *testing.T) {
	emu := New(Config{})
	f := emu.Fixture()
	sub, rg := "/subscriptions/"+f.SubscriptionID, "/subscriptions/"+f.SubscriptionID+"/resourceGroups/"+f.ResourceGroup
	ss := rg + "/providers/Microsoft.Compute/virtualMachineScaleSets/pool"
	pool := nwLBID(f, "kubernetes") + "/backendAddressPools/kubernetes"
	for _, tc := range []struct {
		method, path, body string
		want               []string
	}{
		{"GET", rg + "/providers/Microsoft.Compute/virtualMachines/vm-1", "", []string{"Microsoft.Compute/virtualMachines/read"}},
		{"GET", sub + "/providers/Microsoft.Compute/virtualMachines", "", []string{"Microsoft.Compute/virtualMachines/read"}},
		{"GET", rg + "/providers/microsoft.compute/virtualmachines/vm-1/instanceview", "", []string{"Microsoft.Compute/virtualMachines/instanceView/read"}},
		{"GET", ss + "/virtualmachines/0/instanceView", "", []string{"Microsoft.Compute/virtualMachineScaleSets/virtualMachines/instanceView/read"}},
		{"POST", ss + "/manualupgrade", "{}", []string{"Microsoft.Compute/virtualMachineScaleSets/manualUpgrade/action"}},
		{"GET", ss + "/virtualMachines/0/networkInterfaces/nic/ipConfigurations/ipconfig1/publicIPAddresses/pip", "", []string{"Microsoft.Compute/virtualMachineScaleSets/virtualMachines/networkInterfaces/ipConfigurations/publicIPAddresses/read"}},
		{"GET", ss + "/networkInterfaces", "", []string{"Microsoft.Compute/virtualMachineScaleSets/networkInterfaces/read"}},
		{"DELETE", rg + "/providers/Microsoft.Network/publicIPAddresses/pip", "", []string{"Microsoft.Network/publicIPAddresses/delete"}},
		{"GET", sub + "/providers/Microsoft.Network/locations/eastus/operations/abc", "", []string{"Microsoft.Network/locations/operations/read"}},
		{"GET", sub + "/providers/Microsoft.Compute/locations/eastus/operationResults/abc", "", []string{"Microsoft.Compute/locations/operationResults/read"}},
		{"GET", sub + "/providers/Microsoft.Network", "", []string{"Microsoft.Resources/subscriptions/providers/read"}},
		// A scale set model names its subnet and pool; a repeated
		// reference is one need.
		{"PATCH", ss, `{"properties":{"virtualMachineProfile":{"networkProfile":{"networkInterfaceConfigurations":[{"name":"nic","properties":{"primary":true,"ipConfigurations":[
			{"name":"a","properties":{"subnet":{"id":"` + f.SubnetID + `"},"loadBalancerBackendAddressPools":[{"id":"` + pool + `"}]}},
			{"name":"b","properties":{"subnet":{"id":"` + f.SubnetID + `"}}}]}}]}}}}`,
			[]string{"Microsoft.Compute/virtualMachineScaleSets/write", "Microsoft.Network/loadBalancers/backendAddressPools/join/action", "Microsoft.Network/virtualNetworks/subnets/join/action"}},
		// A subnet names its security group and route table; its
		// ipConfigurations are back-references.
		{"PUT", f.SubnetID, `{"properties":{"addressPrefix":"10.240.0.0/16","networkSecurityGroup":{"id":"` + f.SecurityGroupID + `"},"routeTable":{"id":"` + f.RouteTableID + `"},"ipConfigurations":[{"id":"x"}]}}`,
			[]string{"Microsoft.Network/virtualNetworks/subnets/write", "Microsoft.Network/networkSecurityGroups/join/action", "Microsoft.Network/routeTables/join/action"}},
		// An expanded reference is not looked into.
		{"PUT", rg + "/providers/Microsoft.Network/networkInterfaces/nic", `{"properties":{"ipConfigurations":[{"name":"c","properties":{"publicIPAddress":{"id":"p","properties":{"publicIPPrefix":{"id":"q"}}}}}]}}`,
			[]string{"Microsoft.Network/networkInterfaces/write", "Microsoft.Network/publicIPAddresses/join/action"}},
	} {
		r := httptest.NewRequest(tc.method, tc.path+"?api-version=2024-05-01", strings.NewReader(tc.body))
		op, err := emu.Operation(r)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.path, err)
		}
		if got := emu.Permissions(r, op); !slices.Equal(got, tc.want) {
			t.Errorf("%s %s (%s):\n got %v\nwant %v", tc.method, tc.path, op, got, tc.want)
		}
	}
	r := httptest.NewRequest("POST", "/"+f.TenantID+"/oauth2/v2.0/token", strings.NewReader("grant_type=client_credentials"))
	op, _ := emu.Operation(r)
	if got := emu.Permissions(r, op); len(got) != 0 {
		t.Errorf("Azure AD's token endpoint needs %v; it is not under RBAC", got)
	}
}
