package azure

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
)

func nwRule(name string, priority int32, port string) *armnetwork.SecurityRule {
	return &armnetwork.SecurityRule{
		Name: to.Ptr(name),
		Properties: &armnetwork.SecurityRulePropertiesFormat{
			Protocol:                 to.Ptr(armnetwork.SecurityRuleProtocolTCP),
			SourceAddressPrefix:      to.Ptr("Internet"),
			SourcePortRange:          to.Ptr("*"),
			DestinationAddressPrefix: to.Ptr("20.64.0.9"),
			DestinationPortRange:     to.Ptr(port),
			Access:                   to.Ptr(armnetwork.SecurityRuleAccessAllow),
			Priority:                 to.Ptr(priority),
			Direction:                to.Ptr(armnetwork.SecurityRuleDirectionInbound),
		},
	}
}

// TestSecurityGroups: the fixture's group with Azure's default rules and
// its subnet; rules through the group's PUT and SecurityRules_*; the
// priority checks.
func TestSecurityGroups(t *testing.T) {
	env := newTestEnv(t, Config{})
	f := env.emu.Fixture()
	ctx := nwCtx(t)
	groups := env.network.NewSecurityGroupsClient()
	sg, err := groups.Get(ctx, f.ResourceGroup, f.SecurityGroupName, nil)
	if err != nil {
		t.Fatal(err)
	}
	var defaults []string
	for _, r := range sg.Properties.DefaultSecurityRules {
		defaults = append(defaults, deref(r.Name))
	}
	slices.Sort(defaults)
	if want := []string{"AllowAzureLoadBalancerInBound", "AllowInternetOutBound", "AllowVnetInBound", "AllowVnetOutBound", "DenyAllInBound", "DenyAllOutBound"}; !slices.Equal(defaults, want) {
		t.Fatalf("default rules %v", defaults)
	}
	if ids := sg.Properties.Subnets; len(ids) != 1 || deref(ids[0].ID) != f.SubnetID {
		t.Fatalf("security group subnets %+v", ids)
	}
	def, err := env.network.NewDefaultSecurityRulesClient().Get(ctx, f.ResourceGroup, f.SecurityGroupName, "DenyAllInBound", nil)
	if err != nil || deref(def.Properties.Priority) != 65500 || deref(def.Properties.Access) != armnetwork.SecurityRuleAccessDeny {
		t.Fatalf("DenyAllInBound %v %+v", err, def.Properties)
	}

	// The whole group's PUT with rules.
	sg.Properties.SecurityRules = []*armnetwork.SecurityRule{nwRule("allow-80", 500, "80"), nwRule("allow-443", 501, "443")}
	p, err := groups.BeginCreateOrUpdate(ctx, f.ResourceGroup, f.SecurityGroupName, sg.SecurityGroup, nil)
	sg2 := nwDone(t, p, err).SecurityGroup
	if len(sg2.Properties.SecurityRules) != 2 || len(sg2.Properties.DefaultSecurityRules) != 6 {
		t.Fatalf("rules %d defaults %d", len(sg2.Properties.SecurityRules), len(sg2.Properties.DefaultSecurityRules))
	}
	r := sg2.Properties.SecurityRules[1]
	if deref(r.ID) != f.SecurityGroupID+"/securityRules/allow-80" || deref(r.Type) != "Microsoft.Network/networkSecurityGroups/securityRules" || deref(r.Etag) == "" {
		t.Fatalf("rule %s %s %s", deref(r.ID), deref(r.Type), deref(r.Etag))
	}
	if r.Properties.SourcePortRanges == nil || len(r.Properties.SourcePortRanges) != 0 {
		t.Fatal("sourcePortRanges not filled as []")
	}

	for _, tc := range []struct {
		name  string
		rules []*armnetwork.SecurityRule
		code  string
		msg   string
	}{
		{"same priority and direction", []*armnetwork.SecurityRule{nwRule("a", 500, "80"), nwRule("b", 500, "81")}, "SecurityRuleConflict",
			"Security rule a conflicts with rule b. Rules cannot have the same Priority and Direction."},
		{"priority too low", []*armnetwork.SecurityRule{nwRule("a", 99, "80")}, "SecurityRuleInvalidPriority",
			"Security rule has invalid Priority. Value provided: 99 Allowed range 100-4096."},
		{"priority too high", []*armnetwork.SecurityRule{nwRule("a", 4097, "80")}, "SecurityRuleInvalidPriority", "Value provided: 4097"},
		{"bad port range", []*armnetwork.SecurityRule{nwRule("a", 500, "any")}, "SecurityRuleInvalidPortRange", "Value provided: any."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := sg2
			x.Properties = &armnetwork.SecurityGroupPropertiesFormat{SecurityRules: tc.rules}
			p, err := groups.BeginCreateOrUpdate(ctx, f.ResourceGroup, f.SecurityGroupName, x, nil)
			re := nwWantErr(t, nwErr(t, p, err), http.StatusBadRequest, tc.code)
			if !strings.Contains(re.Error(), tc.msg) {
				t.Fatalf("message: %v", re)
			}
		})
	}

	// SecurityRules_* see and change the same rules.
	rules := env.network.NewSecurityRulesClient()
	rp, err := rules.BeginCreateOrUpdate(ctx, f.ResourceGroup, f.SecurityGroupName, "allow-8080", *nwRule("", 502, "8080-8090"), nil)
	nwDone(t, rp, err)
	rp, err = rules.BeginCreateOrUpdate(ctx, f.ResourceGroup, f.SecurityGroupName, "clash", *nwRule("", 501, "22"), nil)
	re := nwWantErr(t, nwErr(t, rp, err), http.StatusBadRequest, "SecurityRuleConflict")
	if !strings.Contains(re.Error(), "Security rule allow-443 conflicts with rule clash.") {
		t.Fatalf("message: %v", re)
	}
	var names []string
	for pg := rules.NewListPager(f.ResourceGroup, f.SecurityGroupName, nil); pg.More(); {
		page, err := pg.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range page.Value {
			names = append(names, deref(v.Name))
		}
	}
	if !slices.Equal(names, []string{"allow-443", "allow-80", "allow-8080"}) {
		t.Fatalf("rules %v", names)
	}
	dp, err := rules.BeginDelete(ctx, f.ResourceGroup, f.SecurityGroupName, "allow-80", nil)
	nwDone(t, dp, err)
	sg3, _ := env.emu.SecurityGroup(f.ResourceGroup, f.SecurityGroupName)
	if len(sg3.Properties.SecurityRules) != 2 || deref(sg3.Etag) == deref(sg2.Etag) {
		t.Fatalf("after delete: %d rules, etag %s (was %s)", len(sg3.Properties.SecurityRules), deref(sg3.Etag), deref(sg2.Etag))
	}
	_, err = rules.Get(ctx, f.ResourceGroup, f.SecurityGroupName, "allow-80", nil)
	re = nwWantErr(t, err, http.StatusNotFound, "NotFound")
	if !strings.Contains(re.Error(), "Resource "+f.SecurityGroupID+"/securityRules/allow-80 not found.") {
		t.Fatalf("message: %v", re)
	}
	_, err = rules.Get(ctx, f.ResourceGroup, "no-such-nsg", "x", nil)
	nwWantErr(t, err, http.StatusNotFound, "ResourceNotFound")

	// A group in use cannot be deleted.
	gp, err := groups.BeginDelete(ctx, f.ResourceGroup, f.SecurityGroupName, nil)
	nwWantErr(t, nwErr(t, gp, err), http.StatusBadRequest, "InUseNetworkSecurityGroupCannotBeDeleted")
}
