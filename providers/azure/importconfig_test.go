package azure

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"

	"github.com/multicloud-ccm/multicloud-ccm/config"
	"github.com/multicloud-ccm/multicloud-ccm/providers"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/clientopts"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/importcfg"
)

// fullSampleKeys says, for every upstream azure.json key, what importing
// testdata/import/full.json (which sets every one of them) does with it:
// the Section field it lands in, and whether it is reported. A key with
// neither is one whose value there is what this backend always does.
var fullSampleKeys = map[string]struct {
	field string
	noted bool
}{
	// ARMClientConfig
	"cloud":                        {"Cloud", false}, // its endpoints: see resourceManagerEndpoint
	"userAgent":                    {"", true},
	"resourceManagerEndpoint":      {"ResourceManagerEndpoint", true},
	"tenantId":                     {"TenantID", false},
	"networkResourceTenantID":      {"", true},
	"cloudProviderBackoff":         {"", true},
	"cloudProviderBackoffRetries":  {"MaxAttempts", true},
	"cloudProviderBackoffDuration": {"", true},
	"disableAzureStackCloud":       {"", true},
	"enableMinimumRetryAfter":      {"", true},
	// AzureAuthConfig: the sample sets every credential; upstream would
	// use workload identity, so the others are reported as dropped.
	"aadClientId":                           {"AADClientID", false},
	"aadClientSecret":                       {"", true},
	"aadClientCertPath":                     {"", true},
	"aadClientCertPassword":                 {"", true},
	"useManagedIdentityExtension":           {"", true},
	"userAssignedIdentityID":                {"", true},
	"aadFederatedTokenFile":                 {"AADFederatedTokenFile", false},
	"useFederatedWorkloadIdentityExtension": {"UseFederatedWorkloadIdentityExtension", false},
	"auxiliaryTokenProvider":                {"", true},
	"aadMSIDataPlaneIdentityPath":           {"", true},
	// rate limits
	"cloudProviderRateLimit":            {"", true},
	"cloudProviderRateLimitQPS":         {"", true},
	"cloudProviderRateLimitBucket":      {"", true},
	"cloudProviderRateLimitQPSWrite":    {"", true},
	"cloudProviderRateLimitBucketWrite": {"", true},
	"Entries":                           {"", true},
	// caches: vmCacheTTLInSeconds (60) is the shortest instance TTL and
	// lands unchanged; the other two are folded into it.
	"disableAPICallCache":                        {"", true},
	"nonVmssUniformNodesCacheTTLInSeconds":       {"", true},
	"vmssCacheTTLInSeconds":                      {"", true},
	"vmssVirtualMachinesCacheTTLInSeconds":       {"InstanceCacheTTL", true},
	"listVmssVirtualMachinesWithoutInstanceView": {"", true},
	"vmssFlexCacheTTLInSeconds":                  {"", true},
	"vmssFlexVMCacheTTLInSeconds":                {"InstanceCacheTTL", true},
	"vmCacheTTLInSeconds":                        {"InstanceCacheTTL", false},
	"loadBalancerCacheTTLInSeconds":              {"", true},
	"nsgCacheTTLInSeconds":                       {"", true},
	"routeTableCacheTTLInSeconds":                {"", true},
	"plsCacheTTLInSeconds":                       {"", true},
	"availabilitySetsCacheTTLInSeconds":          {"", true},
	"publicIPCacheTTLInSeconds":                  {"", true},
	"routeUpdateWaitingInSeconds":                {"", true},
	// AzureClientConfig
	"subscriptionId":                {"SubscriptionID", false},
	"identitySystem":                {"", true},
	"networkResourceSubscriptionID": {"", true},
	// Config
	"cloudConfigType":            {"", true},
	"resourceGroup":              {"ResourceGroup", false},
	"location":                   {"Location", false},
	"extendedLocationName":       {"", true},
	"extendedLocationType":       {"", true},
	"vnetName":                   {"VnetName", false},
	"vnetResourceGroup":          {"VnetResourceGroup", false},
	"subnetName":                 {"SubnetName", false},
	"securityGroupName":          {"SecurityGroupName", false},
	"securityGroupResourceGroup": {"SecurityGroupResourceGroup", false},
	"routeTableName":             {"RouteTableName", false},
	"routeTableResourceGroup":    {"RouteTableResourceGroup", false},
	"primaryAvailabilitySetName": {"", true},
	"vmType":                     {"VMType", true},
	"primaryScaleSetName":        {"", true},
	"tags":                       {"Tags", false},
	"tagsMap":                    {"TagsMap", false},
	"systemTags":                 {"SystemTags", false},
	"loadBalancerSku":            {"", true},
	"loadBalancerName":           {"LoadBalancerName", false},
	"loadBalancerResourceGroup":  {"LoadBalancerResourceGroup", false},
	"preConfiguredBackendPoolLoadBalancerTypes":       {"", true},
	"disableAvailabilitySetNodes":                     {"", true},
	"enableVmssFlexNodes":                             {"", false}, // flexible scale sets are always served
	"useInstanceMetadata":                             {"", true},
	"cloudProviderBackoffExponent":                    {"", true},
	"cloudProviderBackoffJitter":                      {"", true},
	"excludeMasterFromStandardLB":                     {"ExcludeMasterFromStandardLB", false},
	"disableOutboundSNAT":                             {"", true},
	"maximumLoadBalancerRuleCount":                    {"", true},
	"loadBalancerBackendPoolConfigurationType":        {"", true},
	"putVMSSVMBatchSize":                              {"", true},
	"privateLinkServiceResourceGroup":                 {"", true},
	"enableMigrateToIPBasedBackendPoolAPI":            {"", true},
	"enableIPTagMutationForExistingPublicIP":          {"", true},
	"multipleStandardLoadBalancerConfigurations":      {"", true},
	"routeUpdateIntervalInSeconds":                    {"", true},
	"loadBalancerBackendPoolUpdateIntervalInSeconds":  {"", true},
	"clusterServiceLoadBalancerHealthProbeMode":       {"", true},
	"clusterServiceSharedLoadBalancerHealthProbePort": {"", true},
	"clusterServiceSharedLoadBalancerHealthProbePath": {"", true},
	"serviceGatewayEnabled":                           {"", true},
	"nodeInstanceNotFoundGracePeriodInSeconds":        {"", true},
	// documented keys the upstream code no longer reads
	"cloudProviderBackoffMode":              {"", true},
	"availabilitySetNodesCacheTTLInSeconds": {"", true},
	"routeRateLimit":                        {"", true},
	"subnetsRateLimit":                      {"", true},
	"interfaceRateLimit":                    {"", true},
	"routeTableRateLimit":                   {"", true},
	"loadBalancerRateLimit":                 {"", true},
	"publicIPAddressRateLimit":              {"", true},
	"securityGroupRateLimit":                {"", true},
	"virtualMachineRateLimit":               {"", true},
	"storageAccountRateLimit":               {"", true},
	"diskRateLimit":                         {"", true},
	"snapshotRateLimit":                     {"", true},
	"virtualMachineScaleSetRateLimit":       {"", true},
	"virtualMachineSizesRateLimit":          {"", true},
	"availabilitySetRateLimit":              {"", true},
	"attachDetachDiskRateLimit":             {"", true},
	"containerServiceRateLimit":             {"", true},
	"deploymentRateLimit":                   {"", true},
	"privateDNSRateLimit":                   {"", true},
	"privateDNSZoneGroupRateLimit":          {"", true},
	"privateEndpointRateLimit":              {"", true},
	"privateLinkServiceRateLimit":           {"", true},
	"virtualNetworkRateLimit":               {"", true},
}

// Secret values in the samples; no Note may carry them.
var sampleSecrets = []string{
	"FULL-SAMPLE-CLIENT-SECRET-VALUE",
	"FULL-SAMPLE-CERT-PASSWORD-VALUE",
	"TYPICAL-SAMPLE-CLIENT-SECRET-VALUE",
	"network-token",
}

func importSample(t *testing.T, name string) *importcfg.Result {
	t.Helper()
	t.Setenv(environmentFileVar, "")
	data, err := os.ReadFile(filepath.Join("testdata", "import", name))
	if err != nil {
		t.Fatal(err)
	}
	res, err := ImportConfig(data, importcfg.Options{ClusterName: importcfg.DefaultClusterName})
	if err != nil {
		t.Fatalf("ImportConfig(%s): %v", name, err)
	}
	return res
}

func noteKeys(notes []importcfg.Note) []string {
	keys := make([]string, 0, len(notes))
	for _, n := range notes {
		keys = append(keys, n.Key)
	}
	slices.Sort(keys)
	return keys
}

func TestImportConfigFullSampleCoversEveryUpstreamKey(t *testing.T) {
	if got, want := slices.Sorted(maps.Keys(fullSampleKeys)), slices.Sorted(slices.Values(upstreamKeys())); !slices.Equal(got, want) {
		t.Fatalf("fullSampleKeys does not list exactly upstreamConfig's keys:\n got %v\nwant %v", got, want)
	}
	data, err := os.ReadFile(filepath.Join("testdata", "import", "full.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	if got, want := slices.Sorted(maps.Keys(raw)), slices.Sorted(slices.Values(upstreamKeys())); !slices.Equal(got, want) {
		t.Fatalf("full.json does not set exactly the upstream keys:\n got %v\nwant %v", got, want)
	}

	res := importSample(t, "full.json")
	want := &Section{
		Cloud:                       CloudStack,
		ResourceManagerEndpoint:     "https://management.local.azurestack.external/",
		TenantID:                    "00000001-0000-4000-8000-000000000001",
		SubscriptionID:              "00000006-0000-4000-8000-000000000006",
		ResourceGroup:               "prod-nodes",
		Location:                    "westeurope",
		VnetName:                    "prod-vnet",
		VnetResourceGroup:           "prod-network",
		SubnetName:                  "nodes",
		SecurityGroupName:           "prod-nodes-nsg",
		SecurityGroupResourceGroup:  "prod-network",
		RouteTableName:              "prod-routes",
		RouteTableResourceGroup:     "prod-network",
		LoadBalancerName:            "prod-lb",
		LoadBalancerResourceGroup:   "prod-lb",
		VMType:                      VMTypeStandard,
		ExcludeMasterFromStandardLB: to.Ptr(false),
		// podIP is not supported: the NIC-based pool, with a note.
		LoadBalancerBackendPoolConfigurationType: PoolNodeIPConfiguration,
		Tags:                                     "team=infra,env=prod",
		TagsMap:                                  map[string]string{"cost-center": "42"},
		SystemTags:                               "team",
		AADClientID:                              "00000003-0000-4000-8000-000000000003",
		UseFederatedWorkloadIdentityExtension:    true,
		AADFederatedTokenFile:                    "/var/run/secrets/azure/tokens/azure-identity-token",
		Options:                                  clientopts.Options{MaxAttempts: 7, InstanceCacheTTL: time.Minute},
	}
	if !reflect.DeepEqual(res.Section, want) {
		t.Errorf("section =\n%+v\nwant\n%+v", res.Section, want)
	}

	noted := map[string]bool{}
	for _, n := range res.Notes {
		noted[n.Key] = true
		if n.Upstream == "" || n.Instead == "" {
			t.Errorf("note %q says nothing: %+v", n.Key, n)
		}
		if _, ok := fullSampleKeys[n.Key]; !ok {
			t.Errorf("note for %q, which is no upstream key", n.Key)
		}
	}
	wantV := reflect.ValueOf(want).Elem()
	for key, o := range fullSampleKeys {
		if o.noted != noted[key] {
			t.Errorf("%s: reported = %v, want %v", key, noted[key], o.noted)
		}
		if o.field != "" && wantV.FieldByName(o.field).IsZero() {
			t.Errorf("%s: lands in %s, which the expected section leaves empty", key, o.field)
		}
	}
}

func TestImportConfigTypicalSamples(t *testing.T) {
	for _, tc := range []struct {
		file  string
		want  *Section
		notes []string
	}{
		{
			file: "typical.json",
			want: &Section{
				Cloud:                      CloudPublic,
				TenantID:                   "72f988bf-86f1-41af-91ab-2d7cd011db47",
				SubscriptionID:             "0b1c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e",
				AADClientID:                "5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d",
				AADClientSecret:            "TYPICAL-SAMPLE-CLIENT-SECRET-VALUE",
				ResourceGroup:              "prod-weu-1",
				SecurityGroupName:          "prod-weu-1-node-nsg",
				SecurityGroupResourceGroup: "prod-weu-1",
				Location:                   "westeurope",
				VMType:                     VMTypeVMSS,
				VnetName:                   "prod-weu-1-vnet",
				VnetResourceGroup:          "prod-weu-1",
				SubnetName:                 "node-subnet",
				RouteTableName:             "prod-weu-1-node-routetable",
				// Upstream's default pool, carried.
				LoadBalancerBackendPoolConfigurationType: PoolNodeIPConfiguration,
			},
			// The defaults that differ from upstream's are reported even
			// though the file does not name them.
			notes: []string{"maximumLoadBalancerRuleCount", "useInstanceMetadata"},
		},
		{
			file: "managed-identity.yaml",
			want: &Section{
				Cloud:                                    CloudPublic,
				TenantID:                                 "72f988bf-86f1-41af-91ab-2d7cd011db47",
				SubscriptionID:                           "0b1c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e",
				ResourceGroup:                            "MC_prod_aks_westeurope",
				Location:                                 "westeurope",
				VMType:                                   VMTypeVMSS,
				SubnetName:                               "aks-subnet",
				SecurityGroupName:                        "aks-agentpool-12345678-nsg",
				VnetName:                                 "aks-vnet-12345678",
				RouteTableName:                           "aks-agentpool-12345678-routetable",
				UseManagedIdentityExtension:              true,
				UserAssignedIdentityID:                   "9c8b7a6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d",
				Options:                                  clientopts.Options{MaxAttempts: 7},
				LoadBalancerBackendPoolConfigurationType: PoolNodeIPConfiguration,
			},
			notes: []string{
				"aadClientId", "aadClientSecret", // AKS's "msi" placeholders
				"cloudProviderBackoff", "cloudProviderBackoffDuration", "cloudProviderBackoffMode", "cloudProviderBackoffRetries",
				"cloudProviderRateLimit", "cloudProviderRateLimitBucket", "cloudProviderRateLimitBucketWrite",
				"cloudProviderRateLimitQPS", "cloudProviderRateLimitQPSWrite",
				"maximumLoadBalancerRuleCount",
				"providerKeyName", "providerKeyVersion", "providerVaultName", // not upstream keys
				"useInstanceMetadata",
			},
		},
		{
			file: "unknown-key.json",
			want: &Section{
				TenantID:                                 "72f988bf-86f1-41af-91ab-2d7cd011db47", // "tenantID", as upstream's docs spell it
				SubscriptionID:                           "0b1c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e",
				UseManagedIdentityExtension:              true,
				ResourceGroup:                            "prod-weu-1",
				Location:                                 "westeurope",
				VMType:                                   VMTypeStandard,
				VnetName:                                 "prod-weu-1-vnet",
				SubnetName:                               "node-subnet",
				ExcludeMasterFromStandardLB:              to.Ptr(false),
				LoadBalancerBackendPoolConfigurationType: PoolNodeIP,
			},
			notes: []string{"securityGroupNmae"},
		},
	} {
		t.Run(tc.file, func(t *testing.T) {
			res := importSample(t, tc.file)
			if !reflect.DeepEqual(res.Section, tc.want) {
				t.Errorf("section =\n%+v\nwant\n%+v", res.Section, tc.want)
			}
			if got := noteKeys(res.Notes); !slices.Equal(got, tc.notes) {
				t.Errorf("notes for %v, want %v\n%v", got, tc.notes, res.Notes)
			}
			if res.ClusterID != "" {
				t.Errorf("ClusterID = %q: azure.json does not name the cluster", res.ClusterID)
			}

			reg := providers.NewRegistry()
			reg.MustRegister(Backend())
			out, err := config.Render(ProviderName, importcfg.DefaultClusterName, res.Section)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := config.Parse(out, reg); err != nil {
				t.Errorf("rendered import does not validate: %v\n%s", err, out)
			}
		})
	}
}

func TestImportConfigUnknownKeyNote(t *testing.T) {
	res := importSample(t, "unknown-key.json")
	if len(res.Notes) != 1 || !strings.Contains(res.Notes[0].Upstream, "not a key of the upstream Azure CCM") {
		t.Fatalf("notes = %v, want one saying securityGroupNmae is no upstream key", res.Notes)
	}
}

func TestImportConfigNotesCarryNoSecret(t *testing.T) {
	for _, file := range []string{"full.json", "typical.json", "managed-identity.yaml", "unknown-key.json"} {
		for _, n := range importSample(t, file).Notes {
			for _, secret := range sampleSecrets {
				if strings.Contains(n.String(), secret) {
					t.Errorf("%s: note %q carries a secret value", file, n.Key)
				}
			}
		}
	}
}

// importCaseBase is a complete file that imports without a Note; each
// case changes a few keys.
var importCaseBase = map[string]any{
	"tenantId":                    "72f988bf-86f1-41af-91ab-2d7cd011db47",
	"subscriptionId":              "0b1c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e",
	"aadClientId":                 "5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d",
	"aadClientSecret":             "CASE-SECRET",
	"resourceGroup":               "prod",
	"location":                    "westeurope",
	"vnetName":                    "prod-vnet",
	"subnetName":                  "nodes",
	"vmType":                      "vmss",
	"excludeMasterFromStandardLB": false,
	"loadBalancerBackendPoolConfigurationType": "nodeIP",
}

func importCaseWant() Section {
	return Section{
		TenantID:        "72f988bf-86f1-41af-91ab-2d7cd011db47",
		SubscriptionID:  "0b1c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e",
		AADClientID:     "5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d",
		AADClientSecret: "CASE-SECRET",
		ResourceGroup:   "prod",
		Location:        "westeurope",
		VnetName:        "prod-vnet",
		SubnetName:      "nodes",
		VMType:          VMTypeVMSS,
		// The cases' base keeps control-plane Nodes in the pool, and asks
		// for a pool of node addresses.
		ExcludeMasterFromStandardLB:              to.Ptr(false),
		LoadBalancerBackendPoolConfigurationType: PoolNodeIP,
	}
}

func TestImportConfigCases(t *testing.T) {
	noSecret := map[string]any{"aadClientId": nil, "aadClientSecret": nil}
	with := func(extra ...map[string]any) map[string]any {
		m := map[string]any{}
		for _, e := range extra {
			maps.Copy(m, e)
		}
		return m
	}
	for _, tc := range []struct {
		name  string
		set   map[string]any // nil values delete the key
		want  func(s *Section)
		notes []string
		// instead, if set, is in the Instead of the first Note.
		instead string
	}{
		{name: "base"},
		{
			name: "vmType absent is upstream's vmss, as here",
			set:  map[string]any{"vmType": nil},
		},
		{
			name: "vmType Standard",
			set:  map[string]any{"vmType": "Standard"},
			want: func(s *Section) { s.VMType = VMTypeStandard },
		},
		{
			name:  "vmType vmssflex",
			set:   map[string]any{"vmType": "vmssflex"},
			want:  func(s *Section) { s.VMType = VMTypeStandard },
			notes: []string{"vmType"},
		},
		{
			name: "cloud names compare case-insensitively",
			set:  map[string]any{"cloud": "azurechinacloud"},
			want: func(s *Section) { s.Cloud = CloudChina },
		},
		{
			name: "cloud AzureUSGovernment",
			set:  map[string]any{"cloud": "AzureUSGovernment"},
			want: func(s *Section) { s.Cloud = CloudUSGovernment },
		},
		{
			name:    "an unknown cloud was the public one",
			set:     map[string]any{"cloud": "AzureGermanCloud"},
			want:    func(s *Section) { s.Cloud = CloudPublic },
			notes:   []string{"cloud"},
			instead: "AzurePublicCloud",
		},
		{
			name:  "resourceManagerEndpoint makes a custom cloud",
			set:   map[string]any{"cloud": "AzurePublicCloud", "resourceManagerEndpoint": "https://management.example.test/"},
			want:  func(s *Section) { s.ResourceManagerEndpoint = "https://management.example.test/" },
			notes: []string{"cloud", "resourceManagerEndpoint"},
		},
		{
			name: "managed identity drops AKS's placeholders",
			set: map[string]any{"aadClientId": "msi", "aadClientSecret": "msi", "useManagedIdentityExtension": true,
				"userAssignedIdentityID": "9c8b7a6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d"},
			want: func(s *Section) {
				s.AADClientID, s.AADClientSecret = "", ""
				s.UseManagedIdentityExtension, s.UserAssignedIdentityID = true, "9c8b7a6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d"
			},
			notes: []string{"aadClientId", "aadClientSecret"},
		},
		{
			name:  "client secret comes before the certificate",
			set:   map[string]any{"aadClientCertPath": "/etc/sp.pem", "aadClientCertPassword": "CASE-PASSWORD"},
			notes: []string{"aadClientCertPassword", "aadClientCertPath"},
		},
		{
			name: "certificate",
			set: with(noSecret, map[string]any{"aadClientId": "5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d",
				"aadClientCertPath": "/etc/sp.pem", "aadClientCertPassword": "CASE-PASSWORD", "userAssignedIdentityID": "x"}),
			want: func(s *Section) {
				s.AADClientSecret, s.AADClientCertPath, s.AADClientCertPassword = "", "/etc/sp.pem", "CASE-PASSWORD"
			},
			notes: []string{"userAssignedIdentityID"},
		},
		{
			name:  "no credential",
			set:   noSecret,
			want:  func(s *Section) { s.AADClientID, s.AADClientSecret = "", "" },
			notes: []string{"useFederatedWorkloadIdentityExtension"},
		},
		{
			name:  "msi-dataplane credentials",
			set:   with(noSecret, map[string]any{"aadMSIDataPlaneIdentityPath": "/etc/msi.json"}),
			want:  func(s *Section) { s.AADClientID, s.AADClientSecret = "", "" },
			notes: []string{"aadMSIDataPlaneIdentityPath"},
		},
		{
			name:  "retries need cloudProviderBackoff",
			set:   map[string]any{"cloudProviderBackoffRetries": 6},
			notes: []string{"cloudProviderBackoffRetries"},
		},
		{
			name:    "retries are capped at 20 attempts",
			set:     map[string]any{"cloudProviderBackoff": true, "cloudProviderBackoffRetries": 30},
			want:    func(s *Section) { s.MaxAttempts = 20 },
			notes:   []string{"cloudProviderBackoff", "cloudProviderBackoffRetries"},
			instead: "always on",
		},
		{
			name: "one instance TTL lands unchanged",
			set:  map[string]any{"vmssVirtualMachinesCacheTTLInSeconds": 300},
			want: func(s *Section) { s.InstanceCacheTTL = 5 * time.Minute },
		},
		{
			name:    "an instance TTL over 10 minutes is capped",
			set:     map[string]any{"vmssVirtualMachinesCacheTTLInSeconds": 900},
			want:    func(s *Section) { s.InstanceCacheTTL = 10 * time.Minute },
			notes:   []string{"vmssVirtualMachinesCacheTTLInSeconds"},
			instead: "at most 10m",
		},
		{
			name: "the same network subscription and tenant are no change",
			set: map[string]any{"networkResourceSubscriptionID": "0B1C2D3E-4F5A-6B7C-8D9E-0F1A2B3C4D5E",
				"networkResourceTenantID": "72f988bf-86f1-41af-91ab-2d7cd011db47"},
		},
		{
			name: "loadBalancerResourceGroup equal to resourceGroup",
			set:  map[string]any{"loadBalancerResourceGroup": "PROD"},
			want: func(s *Section) { s.LoadBalancerResourceGroup = "PROD" },
		},
		{
			name: "zero values ask for upstream's defaults",
			set: map[string]any{"tags": "", "tagsMap": map[string]string{}, "useInstanceMetadata": false, "putVMSSVMBatchSize": 0,
				"disableOutboundSNAT": false, "loadBalancerSku": "standard", "enableVmssFlexNodes": true,
				"clusterServiceLoadBalancerHealthProbeMode": "servicenodeport", "multipleStandardLoadBalancerConfigurations": []any{}},
		},
		{
			name:  "Service Gateway SKU",
			set:   map[string]any{"loadBalancerSku": "service"},
			notes: []string{"loadBalancerSku"},
		},
		{
			name:  "a note names the key as the file spells it",
			set:   map[string]any{"cloudProviderRatelimit": true},
			notes: []string{"cloudProviderRatelimit"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(environmentFileVar, "")
			in := maps.Clone(importCaseBase)
			for k, v := range tc.set {
				if v == nil {
					delete(in, k)
				} else {
					in[k] = v
				}
			}
			data, err := json.Marshal(in)
			if err != nil {
				t.Fatal(err)
			}
			res, err := ImportConfig(data, importcfg.Options{})
			if err != nil {
				t.Fatal(err)
			}
			want := importCaseWant()
			if tc.want != nil {
				tc.want(&want)
			}
			if !reflect.DeepEqual(res.Section, &want) {
				t.Errorf("section =\n%+v\nwant\n%+v", res.Section, &want)
			}
			if got := noteKeys(res.Notes); !slices.Equal(got, slices.Sorted(slices.Values(tc.notes))) {
				t.Errorf("notes for %v, want %v\n%v", got, tc.notes, res.Notes)
			}
			if tc.instead != "" && (len(res.Notes) == 0 || !strings.Contains(res.Notes[0].Instead, tc.instead)) {
				t.Errorf("first note %v does not say %q", res.Notes, tc.instead)
			}
			for _, n := range res.Notes {
				if strings.Contains(n.String(), "CASE-SECRET") || strings.Contains(n.String(), "CASE-PASSWORD") {
					t.Errorf("note %q carries a secret value", n.Key)
				}
			}
		})
	}
}

func TestImportConfigErrorsNameTheLine(t *testing.T) {
	readSample := func(name string) string {
		data, err := os.ReadFile(filepath.Join("testdata", "import", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	for _, tc := range []struct {
		name    string
		in      string
		want    []string
		notWant string
	}{
		{name: "JSON missing comma", in: readSample("syntax-error.json"), want: []string{"line 4"}},
		{name: "YAML bad indentation", in: readSample("syntax-error.yaml"), want: []string{"line 3"}},
		{
			name: "JSON wrong type",
			in:   "{\n  \"tenantId\": \"t\",\n  \"vmCacheTTLInSeconds\": \"60\"\n}\n",
			want: []string{"line 3", "vmCacheTTLInSeconds", "whole number"},
		},
		{
			name:    "a secret of the wrong type is not quoted",
			in:      "{\n  \"tenantId\": \"t\",\n  \"aadClientSecret\": 987654321\n}\n",
			want:    []string{"line 3", "aadClientSecret", "a number"},
			notWant: "987654321",
		},
		{
			name: "YAML wrong type",
			in:   "tenantId: t\nvmType: vmss\ncloudProviderBackoff: maybe\n",
			want: []string{"line 3", "cloudProviderBackoff", "true or false"},
		},
		{name: "control character", in: "a: 1\nb: 2\nc: \"\x01\"\nd: 4\n", want: []string{"line 3", "control characters"}},
		{name: "byte order mark, then JSON", in: "\ufeff{\n  \"tenantId\": \"t\"\n  \"location\": \"westeurope\"\n}\n", want: []string{"line 3"}},
		{name: "not an object", in: "[1, 2]\n", want: []string{"line 1", "object"}},
		{name: "empty", in: "\n\n", want: []string{"empty"}},
		{name: "null", in: "null\n", want: []string{"no keys"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ImportConfig([]byte(tc.in), importcfg.Options{})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if tc.notWant != "" && strings.Contains(err.Error(), tc.notWant) {
				t.Errorf("error %q quotes the value", err)
			}
		})
	}
}
