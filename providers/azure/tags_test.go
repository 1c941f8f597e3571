package azure

import (
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"k8s.io/apimachinery/pkg/util/validation/field"

	azemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/azure"
)

// Config tags, as upstream's: tags and tagsMap (which wins in another
// case) on the load balancer, the manager's public IP and the security
// group; systemTags removes what is neither configured nor under one of
// its prefixes, never the manager's own keys.
func TestConfigTags(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, func(s *Section) {
		s.Tags = "team=web, Env=prod"
		s.TagsMap = map[string]string{"env": "staging"}
		s.SystemTags = "aks-managed"
	})
	// Someone else's tags on the security group: one under the system
	// prefix, one not.
	g, _ := env.emu.SecurityGroup(env.fx.SecurityGroupResourceGroup, env.fx.SecurityGroupName)
	g.Tags = map[string]*string{"aks-managed-cluster": to.Ptr("x"), "stale": to.Ptr("y")}
	g.Properties.DefaultSecurityRules = nil
	p, err := env.api.nsgs.BeginCreateOrUpdate(t.Context(), env.fx.SecurityGroupResourceGroup, env.fx.SecurityGroupName, g, nil)
	if err == nil {
		_, err = p.PollUntilDone(t.Context(), nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	svc := lbService("tagged", 80)
	svc.Annotations = map[string]string{string(annotationPIPTags): "team=api"}
	if _, err := env.cloud.lb.EnsureLoadBalancer(t.Context(), "kubernetes", svc, env.lbNodes(t, 1)); err != nil {
		t.Fatal(err)
	}
	tagsOf := func(m map[string]*string) string {
		var out []string
		for _, k := range sortedKeys(m) {
			out = append(out, k+"="+deref(m[k]))
		}
		return strings.Join(out, ",")
	}
	lb, _ := env.lb(t, "kubernetes")
	if got, want := tagsOf(lb.Tags), "env=staging,k8s-azure-cluster-name=kubernetes,team=web"; got != want {
		t.Errorf("load balancer tags %s, want %s", got, want)
	}
	pip, _ := env.emu.PublicIP(env.fx.ResourceGroup, upstreamNames("kubernetes", svc).pip)
	if got, want := tagsOf(pip.Tags), "env=staging,k8s-azure-cluster-name=kubernetes,k8s-azure-service=default/tagged,team=api"; got != want {
		t.Errorf("public IP tags %s, want %s (azure-pip-tags wins)", got, want)
	}
	g, _ = env.emu.SecurityGroup(env.fx.SecurityGroupResourceGroup, env.fx.SecurityGroupName)
	if got, want := tagsOf(g.Tags), "aks-managed-cluster=x,env=staging,team=web"; got != want {
		t.Errorf("security group tags %s, want %s", got, want)
	}
}

func TestConfigTagsInvalid(t *testing.T) {
	for _, s := range []*Section{
		{Tags: "team"},
		{Tags: "a=b=c"},
		{TagsMap: map[string]string{" ": "x"}},
		{Tags: "k8s-azure-cluster-name=x"},
		{TagsMap: map[string]string{"a/b": "x"}},
	} {
		if errs := validateTags(s, field.NewPath("azure")); len(errs) == 0 {
			t.Errorf("tags %q / %v accepted", s.Tags, s.TagsMap)
		} else if !strings.Contains(errs.ToAggregate().Error(), "azure.tags") {
			t.Errorf("error %v does not name the field", errs)
		}
	}
}
