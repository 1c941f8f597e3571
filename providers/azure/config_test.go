package azure

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/multicloud-ccm/multicloud-ccm/config"
)

// sections serves only the azure section, as a registry with the Azure
// backend compiled in does.
type sections struct{}

func (sections) NewSection(p string) (config.Section, bool) {
	if p != "azure" {
		return nil, false
	}
	return &Section{}, true
}
func (sections) Compiled() []string { return []string{"azure"} }

const docHeader = "apiVersion: multicloud-ccm.io/v1alpha1\nkind: CloudConfig\nprovider: azure\nclusterID: prod-1\nazure:\n"

func parse(t *testing.T, section ...string) (*config.CloudConfig, error) {
	t.Helper()
	return config.Parse([]byte(docHeader+"  "+strings.Join(section, "\n  ")+"\n"), sections{})
}

const testSecret = "s3cr3t-client-secret~value"

var (
	// base is the part of an azure.json every config has.
	base = []string{
		"tenantId: 72f988bf-86f1-41af-91ab-2d7cd011db47",
		"subscriptionId: 11111111-2222-3333-4444-555555555555",
		"resourceGroup: MC_prod_k8s_westeurope",
		"location: westeurope",
		"vnetName: k8s-vnet",
		"subnetName: k8s-subnet",
	}
	secretAuth = append(slices.Clone(base), "aadClientId: 5d1e4a47-1111-2222-3333-0123456789ab", "aadClientSecret: "+testSecret)
)

func with(lines []string, more ...string) []string { return append(slices.Clone(lines), more...) }

func without(lines []string, drop ...string) []string {
	var out []string
	for _, l := range lines {
		if !slices.ContainsFunc(drop, func(d string) bool { return strings.HasPrefix(l, d+":") }) {
			out = append(out, l)
		}
	}
	return out
}

func TestValidConfigs(t *testing.T) {
	for _, tt := range []struct {
		name    string
		section []string
		check   func(t *testing.T, s *Section)
	}{
		{"client secret, defaults", secretAuth, func(t *testing.T, s *Section) {
			if s.Cloud != CloudPublic || s.VMType != VMTypeVMSS || s.RequestTimeout != 30*time.Second || s.RoutesEnabled() {
				t.Errorf("defaults: cloud %q vmType %q requestTimeout %v routes %v", s.Cloud, s.VMType, s.RequestTimeout, s.RoutesEnabled())
			}
			for _, rg := range []string{s.VnetResourceGroup, s.SecurityGroupResourceGroup, s.RouteTableResourceGroup, s.LoadBalancerResourceGroup} {
				if rg != "MC_prod_k8s_westeurope" {
					t.Errorf("resource group default %q, want resourceGroup", rg)
				}
			}
			if s.lbName("prod-1") != "prod-1" {
				t.Errorf("load balancer name %q, want the clusterID", s.lbName("prod-1"))
			}
		}},
		{"client certificate", with(base, "aadClientId: 5d1e4a47-1111-2222-3333-0123456789ab", "aadClientCertPath: /etc/kubernetes/sp.pfx", "aadClientCertPassword: pfx-password"), nil},
		{"system-assigned managed identity", with(base, "useManagedIdentityExtension: true"), nil},
		{"user-assigned managed identity", with(base, "useManagedIdentityExtension: true", "userAssignedIdentityID: 9a8b7c6d-1111-2222-3333-0123456789ab"), nil},
		{"workload identity", with(base, "useFederatedWorkloadIdentityExtension: true", "aadClientId: 5d1e4a47-1111-2222-3333-0123456789ab"), func(t *testing.T, s *Section) {
			if s.AADFederatedTokenFile != DefaultFederatedTokenFile {
				t.Errorf("token file %q", s.AADFederatedTokenFile)
			}
		}},
		{"region written long, China cloud, vmss, everything set", with(without(secretAuth, "location"),
			`location: "China North 3"`, "cloud: AzureChinaCloud", "vmType: vmss",
			"vnetResourceGroup: net-rg", "securityGroupName: k8s-nsg", "securityGroupResourceGroup: nsg-rg",
			"routeTableName: k8s-routes", "routeTableResourceGroup: rt-rg",
			"loadBalancerName: kubernetes", "loadBalancerResourceGroup: lb-rg",
			"requestTimeout: 10s", "maxAttempts: 3", "instanceCacheTTL: 30s",
		), func(t *testing.T, s *Section) {
			if s.Location != "chinanorth3" || !s.RoutesEnabled() || s.LoadBalancerResourceGroup != "lb-rg" || s.VMType != VMTypeVMSS {
				t.Errorf("section %+v", s)
			}
		}},
		{"Azure Stack Hub", with(without(secretAuth, "location"), "location: local", "cloud: AzureStackCloud",
			"activeDirectoryAuthorityHost: https://adfs.local.azurestack.external/",
			"resourceManagerEndpoint: https://management.local.azurestack.external/",
			"caFile: /etc/ssl/azurestack-ca.pem",
		), func(t *testing.T, s *Section) {
			if s.ResourceManagerAudience != s.ResourceManagerEndpoint {
				t.Errorf("audience %q, want the endpoint", s.ResourceManagerAudience)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parse(t, tt.section...)
			if err != nil {
				t.Fatal(err)
			}
			if tt.check != nil {
				tt.check(t, cfg.Section.(*Section))
			}
		})
	}
}

// TestBadConfigs: each problem is reported with its field path, and every
// problem of a config at once, and never with a secret in it.
func TestBadConfigs(t *testing.T) {
	for _, tt := range []struct {
		name    string
		section []string
		want    []string
	}{
		{"no credentials", base, []string{"azure: Required value: credentials: aadClientId with aadClientSecret, aadClientId with aadClientCertPath, useManagedIdentityExtension, or useFederatedWorkloadIdentityExtension"}},
		{"secret and managed identity", with(secretAuth, "useManagedIdentityExtension: true"),
			[]string{"azure: Forbidden: aadClientSecret and useManagedIdentityExtension: set exactly one way to authenticate"}},
		{"certificate and workload identity", with(base, "aadClientId: 5d1e4a47-1111-2222-3333-0123456789ab", "aadClientCertPath: /sp.pem", "useFederatedWorkloadIdentityExtension: true"),
			[]string{"azure: Forbidden: aadClientCertPath and useFederatedWorkloadIdentityExtension"}},
		{"secret without client ID", without(secretAuth, "aadClientId"),
			[]string{"azure.aadClientId: Required value: the service principal's application (client) ID that aadClientSecret belongs to"}},
		{"certificate password without certificate", with(base, "aadClientId: 5d1e4a47-1111-2222-3333-0123456789ab", "aadClientCertPassword: pfx-pw"),
			[]string{"azure.aadClientCertPath: Required value"}},
		{"client ID not a GUID", with(without(secretAuth, "aadClientId"), "aadClientId: my-app"),
			[]string{`azure.aadClientId: Invalid value: "my-app": must be an application (client) ID, a GUID`}},
		{"managed identity with aadClientId", with(base, "useManagedIdentityExtension: true", "aadClientId: 5d1e4a47-1111-2222-3333-0123456789ab"),
			[]string{"azure.aadClientId: Forbidden: a managed identity is named by userAssignedIdentityID"}},
		{"user-assigned identity without managed identity", with(secretAuth, "userAssignedIdentityID: 9a8b7c6d-1111-2222-3333-0123456789ab"),
			[]string{"azure.userAssignedIdentityID: Forbidden: only with useManagedIdentityExtension"}},
		{"required fields missing", []string{"aadClientId: 5d1e4a47-1111-2222-3333-0123456789ab", "aadClientSecret: " + testSecret},
			[]string{"azure.tenantId: Required value", "azure.subscriptionId: Required value", "azure.resourceGroup: Required value",
				"azure.location: Required value", "azure.vnetName: Required value", "azure.subnetName: Required value"}},
		{"malformed IDs and names", with(without(secretAuth, "subscriptionId", "tenantId", "resourceGroup", "vnetName"),
			"subscriptionId: my-subscription", "tenantId: contoso tenant", "resourceGroup: rg.", "vnetName: -vnet", "securityGroupName: nsg/1"),
			[]string{`azure.subscriptionId: Invalid value: "my-subscription": must be a GUID`,
				`azure.tenantId: Invalid value: "contoso tenant"`,
				`azure.resourceGroup: Invalid value: "rg."`,
				`azure.vnetName: Invalid value: "-vnet"`,
				`azure.securityGroupName: Invalid value: "nsg/1"`}},
		{"unknown cloud and vmType", with(secretAuth, "cloud: AzureGermanCloud", "vmType: vmas"),
			[]string{`azure.cloud: Unsupported value: "AzureGermanCloud"`, `azure.vmType: Unsupported value: "vmas": supported values: "standard", "vmss"`}},
		{"custom endpoints with a public cloud", with(secretAuth, "cloud: AzurePublicCloud", "resourceManagerEndpoint: https://management.example.com/"),
			[]string{"azure.resourceManagerEndpoint: Forbidden: cloud AzurePublicCloud has its own endpoints"}},
		{"custom cloud without authority, plain http", with(secretAuth, "resourceManagerEndpoint: http://127.0.0.1:8443/"),
			[]string{"azure.activeDirectoryAuthorityHost: Required value", `azure.resourceManagerEndpoint: Invalid value: "http://127.0.0.1:8443/": must be an https URL`}},
		{"load balancer name too long", with(secretAuth, "loadBalancerName: "+strings.Repeat("l", 75)),
			[]string{"azure.loadBalancerName: Too long"}},
		{"timeouts out of range", with(secretAuth, "requestTimeout: 100ms"),
			[]string{`azure.requestTimeout: Invalid value: "100ms"`}},
		{"an upstream key we do not read", with(secretAuth, "cloudProviderBackoff: true"),
			[]string{`azure.cloudProviderBackoff: unknown field "cloudProviderBackoff"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(t, tt.section...)
			if err == nil {
				t.Fatal("no error")
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
			for _, secret := range []string{testSecret, "pfx-pw", "pfx-password"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error shows a secret:\n%v", err)
				}
			}
		})
	}
}

// TestSecretsRedacted: client secrets and certificate passwords never
// appear in the config's printed forms.
func TestSecretsRedacted(t *testing.T) {
	for _, section := range [][]string{secretAuth, with(base, "aadClientId: 5d1e4a47-1111-2222-3333-0123456789ab", "aadClientCertPath: /sp.pfx", "aadClientCertPassword: pfx-password")} {
		cfg, err := parse(t, section...)
		if err != nil {
			t.Fatal(err)
		}
		out, err := cfg.Redacted()
		if err != nil {
			t.Fatal(err)
		}
		for _, printed := range []string{string(out), cfg.String()} {
			if strings.Contains(printed, testSecret) || strings.Contains(printed, "pfx-password") {
				t.Errorf("secret printed:\n%s", printed)
			}
			if !strings.Contains(printed, config.Redacted) {
				t.Errorf("no %s in:\n%s", config.Redacted, printed)
			}
		}
	}
}

func TestProviderIDs(t *testing.T) {
	const sub = "11111111-2222-3333-4444-555555555555"
	parse := vmIDParser(sub)
	for _, tt := range []struct {
		armID, want string
	}{
		{"/subscriptions/" + sub + "/resourceGroups/MC_Prod/providers/Microsoft.Compute/virtualMachines/Node-1",
			"azure:///subscriptions/" + sub + "/resourceGroups/mc_prod/providers/Microsoft.Compute/virtualMachines/Node-1"},
		{"/subscriptions/" + sub + "/resourceGroups/RG/providers/Microsoft.Compute/virtualMachineScaleSets/pool/virtualMachines/7",
			"azure:///subscriptions/" + sub + "/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/pool/virtualMachines/7"},
	} {
		if got := providerID(tt.armID); got != tt.want {
			t.Errorf("providerID(%s) = %s, want %s", tt.armID, got, tt.want)
		}
		key, err := parse(tt.want)
		if err != nil || key != strings.ToLower(tt.armID) {
			t.Errorf("parse(%s) = %q, %v; want the lower-cased ID", tt.want, key, err)
		}
	}
	for _, bad := range []string{
		"aws:///us-east-1a/i-0123",
		"azure:///subscriptions/" + sub + "/resourceGroups/rg/providers/Microsoft.Network/networkInterfaces/nic",
		"azure:///subscriptions/99999999-2222-3333-4444-555555555555/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm",
		"azure:///subscriptions/" + sub + "/resourceGroups//providers/Microsoft.Compute/virtualMachines/vm",
	} {
		if _, err := parse(bad); err == nil {
			t.Errorf("parse(%s) accepted", bad)
		}
	}
}

func TestARMOperationNames(t *testing.T) {
	const p = "/subscriptions/s/resourceGroups/rg/providers/"
	for _, tt := range []struct{ method, path, service, op string }{
		{"GET", p + "Microsoft.Compute/virtualMachines", "compute", "virtualMachines.list"},
		{"GET", "/subscriptions/s/providers/Microsoft.Compute/virtualMachines", "compute", "virtualMachines.list"},
		{"GET", p + "Microsoft.Compute/virtualMachines/node-1", "compute", "virtualMachines.get"},
		{"GET", p + "Microsoft.Compute/virtualMachines/node-1/instanceView", "compute", "virtualMachines.instanceView"},
		{"GET", p + "Microsoft.Compute/virtualMachineScaleSets/ss/virtualMachines/3", "compute", "virtualMachineScaleSets.virtualMachines.get"},
		{"PUT", p + "Microsoft.Network/loadBalancers/kubernetes", "network", "loadBalancers.createOrUpdate"},
		{"DELETE", p + "Microsoft.Network/publicIPAddresses/kubernetes-a1b2", "network", "publicIPAddresses.delete"},
		{"GET", "/subscriptions/s/providers/Microsoft.Network/locations/eastus/operations/0f1e", "network", "operations.get"},
		{"PUT", p + "Microsoft.Network/routeTables/rt/routes/r1", "network", "routeTables.routes.createOrUpdate"},
	} {
		svc, op := armOperation(tt.method, tt.path)
		if svc != tt.service || op != tt.op {
			t.Errorf("%s %s = %s %s, want %s %s", tt.method, tt.path, svc, op, tt.service, tt.op)
		}
	}
}
