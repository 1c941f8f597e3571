package azure

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// upstreamConfig is the upstream Azure CCM's azure.json: one field for
// every JSON key of its Config and of the structs Config embeds, flattened,
// with upstream's types so that a value upstream could not decode fails
// here too. Read at kubernetes-sigs/cloud-provider-azure
// 7b31c76ce2ff602cc2dfec988744d8d0534b448c; docs at 05aea598c.
//
// Keys whose value this importer never looks at (nested objects) are
// json.RawMessage: only their presence matters for the report.
type upstreamConfig struct {
	// upstream: pkg/azclient/arm_conf.go:31-55 (ARMClientConfig).
	Cloud                   string `json:"cloud"`
	UserAgent               string `json:"userAgent"`
	ResourceManagerEndpoint string `json:"resourceManagerEndpoint"`
	TenantID                string `json:"tenantId"`
	NetworkResourceTenantID string `json:"networkResourceTenantID"`
	CloudProviderBackoff    bool   `json:"cloudProviderBackoff"`
	// upstream: pkg/provider/config/azure_auth.go:39-41 declares these two
	// again (as int) one level up, and encoding/json takes the shallower.
	CloudProviderBackoffRetries  int  `json:"cloudProviderBackoffRetries"`
	CloudProviderBackoffDuration int  `json:"cloudProviderBackoffDuration"`
	DisableAzureStackCloud       bool `json:"disableAzureStackCloud"`
	EnableMinimumRetryAfter      bool `json:"enableMinimumRetryAfter"`

	// upstream: pkg/azclient/auth_conf.go:27-52 (AzureAuthConfig).
	AADClientID                           string          `json:"aadClientId"`
	AADClientSecret                       string          `json:"aadClientSecret"`
	AADClientCertPath                     string          `json:"aadClientCertPath"`
	AADClientCertPassword                 string          `json:"aadClientCertPassword"`
	UseManagedIdentityExtension           bool            `json:"useManagedIdentityExtension"`
	UserAssignedIdentityID                string          `json:"userAssignedIdentityID"`
	AADFederatedTokenFile                 string          `json:"aadFederatedTokenFile"`
	UseFederatedWorkloadIdentityExtension bool            `json:"useFederatedWorkloadIdentityExtension"`
	AuxiliaryTokenProvider                json.RawMessage `json:"auxiliaryTokenProvider"`
	AADMSIDataPlaneIdentityPath           string          `json:"aadMSIDataPlaneIdentityPath"`

	// upstream: pkg/azclient/policy/ratelimit/ratelimit.go:29-40 (Config)
	// and :82-88 (CloudProviderRateLimitConfig, whose Entries field has no
	// JSON name of its own, so encoding/json reads it as "Entries").
	CloudProviderRateLimit            bool            `json:"cloudProviderRateLimit"`
	CloudProviderRateLimitQPS         float32         `json:"cloudProviderRateLimitQPS"`
	CloudProviderRateLimitBucket      int             `json:"cloudProviderRateLimitBucket"`
	CloudProviderRateLimitQPSWrite    float32         `json:"cloudProviderRateLimitQPSWrite"`
	CloudProviderRateLimitBucketWrite int             `json:"cloudProviderRateLimitBucketWrite"`
	Entries                           json.RawMessage `json:"Entries"`

	// upstream: pkg/provider/config/azure_cache.go:19-54
	// (CloudProviderCacheConfig).
	DisableAPICallCache                        bool `json:"disableAPICallCache"`
	NonVmssUniformNodesCacheTTLInSeconds       int  `json:"nonVmssUniformNodesCacheTTLInSeconds"`
	VmssCacheTTLInSeconds                      int  `json:"vmssCacheTTLInSeconds"`
	VmssVirtualMachinesCacheTTLInSeconds       int  `json:"vmssVirtualMachinesCacheTTLInSeconds"`
	ListVmssVirtualMachinesWithoutInstanceView bool `json:"listVmssVirtualMachinesWithoutInstanceView"`
	VmssFlexCacheTTLInSeconds                  int  `json:"vmssFlexCacheTTLInSeconds"`
	VmssFlexVMCacheTTLInSeconds                int  `json:"vmssFlexVMCacheTTLInSeconds"`
	VMCacheTTLInSeconds                        int  `json:"vmCacheTTLInSeconds"`
	LoadBalancerCacheTTLInSeconds              int  `json:"loadBalancerCacheTTLInSeconds"`
	NsgCacheTTLInSeconds                       int  `json:"nsgCacheTTLInSeconds"`
	RouteTableCacheTTLInSeconds                int  `json:"routeTableCacheTTLInSeconds"`
	PlsCacheTTLInSeconds                       int  `json:"plsCacheTTLInSeconds"`
	AvailabilitySetsCacheTTLInSeconds          int  `json:"availabilitySetsCacheTTLInSeconds"`
	PublicIPCacheTTLInSeconds                  int  `json:"publicIPCacheTTLInSeconds"`
	RouteUpdateWaitingInSeconds                int  `json:"routeUpdateWaitingInSeconds"`

	// upstream: pkg/provider/config/azure_auth.go:33-51 (AzureClientConfig).
	SubscriptionID                string `json:"subscriptionId"`
	IdentitySystem                string `json:"identitySystem"`
	NetworkResourceSubscriptionID string `json:"networkResourceSubscriptionID"`

	// upstream: pkg/provider/config/azure.go:33-186 (Config).
	CloudConfigType                                 string            `json:"cloudConfigType"`
	ResourceGroup                                   string            `json:"resourceGroup"`
	Location                                        string            `json:"location"`
	ExtendedLocationName                            string            `json:"extendedLocationName"`
	ExtendedLocationType                            string            `json:"extendedLocationType"`
	VnetName                                        string            `json:"vnetName"`
	VnetResourceGroup                               string            `json:"vnetResourceGroup"`
	SubnetName                                      string            `json:"subnetName"`
	SecurityGroupName                               string            `json:"securityGroupName"`
	SecurityGroupResourceGroup                      string            `json:"securityGroupResourceGroup"`
	RouteTableName                                  string            `json:"routeTableName"`
	RouteTableResourceGroup                         string            `json:"routeTableResourceGroup"`
	PrimaryAvailabilitySetName                      string            `json:"primaryAvailabilitySetName"`
	VMType                                          string            `json:"vmType"`
	PrimaryScaleSetName                             string            `json:"primaryScaleSetName"`
	Tags                                            string            `json:"tags"`
	TagsMap                                         map[string]string `json:"tagsMap"`
	SystemTags                                      string            `json:"systemTags"`
	LoadBalancerSKU                                 string            `json:"loadBalancerSku"`
	LoadBalancerName                                string            `json:"loadBalancerName"`
	LoadBalancerResourceGroup                       string            `json:"loadBalancerResourceGroup"`
	PreConfiguredBackendPoolLoadBalancerTypes       string            `json:"preConfiguredBackendPoolLoadBalancerTypes"`
	DisableAvailabilitySetNodes                     bool              `json:"disableAvailabilitySetNodes"`
	EnableVmssFlexNodes                             bool              `json:"enableVmssFlexNodes"`
	UseInstanceMetadata                             bool              `json:"useInstanceMetadata"`
	CloudProviderBackoffExponent                    float64           `json:"cloudProviderBackoffExponent"`
	CloudProviderBackoffJitter                      float64           `json:"cloudProviderBackoffJitter"`
	ExcludeMasterFromStandardLB                     *bool             `json:"excludeMasterFromStandardLB"`
	DisableOutboundSNAT                             *bool             `json:"disableOutboundSNAT"`
	MaximumLoadBalancerRuleCount                    int               `json:"maximumLoadBalancerRuleCount"`
	LoadBalancerBackendPoolConfigurationType        string            `json:"loadBalancerBackendPoolConfigurationType"`
	PutVMSSVMBatchSize                              int               `json:"putVMSSVMBatchSize"`
	PrivateLinkServiceResourceGroup                 string            `json:"privateLinkServiceResourceGroup"`
	EnableMigrateToIPBasedBackendPoolAPI            bool              `json:"enableMigrateToIPBasedBackendPoolAPI"`
	EnableIPTagMutationForExistingPublicIP          bool              `json:"enableIPTagMutationForExistingPublicIP"`
	MultipleStandardLoadBalancerConfigurations      json.RawMessage   `json:"multipleStandardLoadBalancerConfigurations"`
	RouteUpdateIntervalInSeconds                    int               `json:"routeUpdateIntervalInSeconds"`
	LoadBalancerBackendPoolUpdateIntervalInSeconds  int               `json:"loadBalancerBackendPoolUpdateIntervalInSeconds"`
	ClusterServiceLoadBalancerHealthProbeMode       string            `json:"clusterServiceLoadBalancerHealthProbeMode"`
	ClusterServiceSharedLoadBalancerHealthProbePort int32             `json:"clusterServiceSharedLoadBalancerHealthProbePort"`
	ClusterServiceSharedLoadBalancerHealthProbePath string            `json:"clusterServiceSharedLoadBalancerHealthProbePath"`
	ServiceGatewayEnabled                           bool              `json:"serviceGatewayEnabled"`
	NodeInstanceNotFoundGracePeriodInSeconds        int               `json:"nodeInstanceNotFoundGracePeriodInSeconds"`

	// Keys upstream's documentation still lists
	// (site/content/en/install/configs.md at 05aea598c: the key table and
	// "per client rate limiting") that the code above no longer reads.
	// Files written for older releases carry them, so they are reported as
	// upstream keys rather than as typos.
	CloudProviderBackoffMode              string          `json:"cloudProviderBackoffMode"`
	AvailabilitySetNodesCacheTTLInSeconds int             `json:"availabilitySetNodesCacheTTLInSeconds"`
	RouteRateLimit                        json.RawMessage `json:"routeRateLimit"`
	SubnetsRateLimit                      json.RawMessage `json:"subnetsRateLimit"`
	InterfaceRateLimit                    json.RawMessage `json:"interfaceRateLimit"`
	RouteTableRateLimit                   json.RawMessage `json:"routeTableRateLimit"`
	LoadBalancerRateLimit                 json.RawMessage `json:"loadBalancerRateLimit"`
	PublicIPAddressRateLimit              json.RawMessage `json:"publicIPAddressRateLimit"`
	SecurityGroupRateLimit                json.RawMessage `json:"securityGroupRateLimit"`
	VirtualMachineRateLimit               json.RawMessage `json:"virtualMachineRateLimit"`
	StorageAccountRateLimit               json.RawMessage `json:"storageAccountRateLimit"`
	DiskRateLimit                         json.RawMessage `json:"diskRateLimit"`
	SnapshotRateLimit                     json.RawMessage `json:"snapshotRateLimit"`
	VirtualMachineScaleSetRateLimit       json.RawMessage `json:"virtualMachineScaleSetRateLimit"`
	VirtualMachineSizesRateLimit          json.RawMessage `json:"virtualMachineSizesRateLimit"`
	AvailabilitySetRateLimit              json.RawMessage `json:"availabilitySetRateLimit"`
	AttachDetachDiskRateLimit             json.RawMessage `json:"attachDetachDiskRateLimit"`
	ContainerServiceRateLimit             json.RawMessage `json:"containerServiceRateLimit"`
	DeploymentRateLimit                   json.RawMessage `json:"deploymentRateLimit"`
	PrivateDNSRateLimit                   json.RawMessage `json:"privateDNSRateLimit"`
	PrivateDNSZoneGroupRateLimit          json.RawMessage `json:"privateDNSZoneGroupRateLimit"`
	PrivateEndpointRateLimit              json.RawMessage `json:"privateEndpointRateLimit"`
	PrivateLinkServiceRateLimit           json.RawMessage `json:"privateLinkServiceRateLimit"`
	VirtualNetworkRateLimit               json.RawMessage `json:"virtualNetworkRateLimit"`
}

// upstreamFields are upstreamConfig's JSON keys in declaration order,
// which is the order of the import report, and each key's Go type.
var upstreamFields = sync.OnceValues(func() ([]string, map[string]reflect.Type) {
	t := reflect.TypeFor[upstreamConfig]()
	keys := make([]string, 0, t.NumField())
	types := make(map[string]reflect.Type, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		keys = append(keys, name)
		types[name] = f.Type
	}
	return keys, types
})

// upstreamKeys are upstreamConfig's JSON keys in declaration order.
func upstreamKeys() []string {
	keys, _ := upstreamFields()
	return keys
}

// canonicalKey is the upstream key a file's key decodes into, or "" for
// none. encoding/json matches keys case-insensitively, so upstream read
// "tenantID" (its own docs' spelling) as tenantId; so does this importer.
func canonicalKey(key string) string {
	for _, k := range upstreamKeys() {
		if k == key {
			return k
		}
	}
	for _, k := range upstreamKeys() {
		if strings.EqualFold(k, key) {
			return k
		}
	}
	return ""
}

// rateLimitKeys are the keys of the client-side rate limiter, which has
// no equivalent here.
var rateLimitKeys = []string{
	"cloudProviderRateLimit", "cloudProviderRateLimitQPS", "cloudProviderRateLimitBucket",
	"cloudProviderRateLimitQPSWrite", "cloudProviderRateLimitBucketWrite", "Entries",
	"routeRateLimit", "subnetsRateLimit", "interfaceRateLimit", "routeTableRateLimit",
	"loadBalancerRateLimit", "publicIPAddressRateLimit", "securityGroupRateLimit",
	"virtualMachineRateLimit", "storageAccountRateLimit", "diskRateLimit", "snapshotRateLimit",
	"virtualMachineScaleSetRateLimit", "virtualMachineSizesRateLimit", "availabilitySetRateLimit",
	"attachDetachDiskRateLimit", "containerServiceRateLimit", "deploymentRateLimit",
	"privateDNSRateLimit", "privateDNSZoneGroupRateLimit", "privateEndpointRateLimit",
	"privateLinkServiceRateLimit", "virtualNetworkRateLimit",
}

// unsupportedKeys say, for every upstream key that has no equivalent here
// whatever its value, what it did upstream and what to do instead. Each
// is reported when the file sets it to anything but its zero value (a
// zero value asks for upstream's default, which is what happens here).
// Keys whose meaning depends on their value are decided in
// importconfig.go.
var unsupportedKeys = func() map[string][2]string {
	const (
		noRateLimit = "no client-side limit: ARM's 429 answers are retried after their Retry-After (up to maxAttempts), and every Node is served from one listing per instanceCacheTTL instead of a call per Node"
		noSetCache  = "no setting: scale set and availability set membership comes with the instance listing, at most instanceCacheTTL old"
		noLBCache   = "no setting: the load balancer, security group and route table are kept at most 30 s and every write carries their ETag, so a stale copy is re-read, never written back"
		noPLS       = "not supported: no Private Link Service is made (annotation azure-pls-create is refused)"
		noBackoff   = "no setting: azcore waits 0.5 s before the first retry, doubling up to 30 s, unless ARM's Retry-After says otherwise"
	)
	m := map[string][2]string{
		"userAgent":                    {"set the User-Agent of ARM calls", "not configurable: calls carry the Azure SDK's User-Agent with multicloud-ccm"},
		"disableAzureStackCloud":       {"with cloud AzureStackCloud, used custom endpoints without Azure Stack Hub's restrictions", "nothing to set: a custom cloud is just its endpoints (resourceManagerEndpoint, activeDirectoryAuthorityHost, resourceManagerAudience)"},
		"enableMinimumRetryAfter":      {"raised ARM's Retry-After to at least the retry delay", noBackoff},
		"auxiliaryTokenProvider":       {"with a managed identity, took a token for network resources in another tenant from Key Vault", "not supported: every resource must be reachable with the one credential, in tenantId"},
		"cloudProviderBackoffExponent": {"set the growth factor of the CCM's own retry loops (with cloudProviderBackoff)", noBackoff},
		"cloudProviderBackoffJitter":   {"set the jitter of the CCM's own retry loops (with cloudProviderBackoff)", noBackoff},
		"cloudProviderBackoffMode":     {"chose the backoff implementation (documented, no longer read by the upstream CCM)", noBackoff},

		"disableAPICallCache":                        {"turned off the caches of ARM answers", "no setting: instances are at most instanceCacheTTL old, and the load balancer, security group and route table are kept at most 30 s and written with their ETag"},
		"nonVmssUniformNodesCacheTTLInSeconds":       {"set how long the list of Nodes that are not uniform scale set instances was cached", noSetCache},
		"vmssCacheTTLInSeconds":                      {"set how long scale sets were cached", noSetCache},
		"vmssFlexCacheTTLInSeconds":                  {"set how long flexible scale sets were cached", noSetCache},
		"availabilitySetsCacheTTLInSeconds":          {"set how long availability sets were cached", noSetCache},
		"availabilitySetNodesCacheTTLInSeconds":      {"set how long availability set membership was cached (documented, no longer read by the upstream CCM)", noSetCache},
		"listVmssVirtualMachinesWithoutInstanceView": {"listed scale set instances without their instance view", "no setting: instance views come with the listing, since the power state says whether a Node is shut down"},
		"loadBalancerCacheTTLInSeconds":              {"set how long load balancers were cached", noLBCache},
		"nsgCacheTTLInSeconds":                       {"set how long network security groups were cached", noLBCache},
		"routeTableCacheTTLInSeconds":                {"set how long route tables were cached", noLBCache},
		"publicIPCacheTTLInSeconds":                  {"set how long public IPs were cached", "no setting: a Service's public IP is read when the Service is synced"},
		"plsCacheTTLInSeconds":                       {"set how long private link services were cached", noPLS},
		"routeUpdateWaitingInSeconds":                {"waited this long after a route table write before reporting routes created", "no setting: a route is reported created once ARM's write has completed"},

		"identitySystem":                                  {"named Azure Stack Hub's identity system (adfs), which the CCM no longer reads", "no setting: the authority is activeDirectoryAuthorityHost, and tenantId is used as given"},
		"cloudConfigType":                                 {"chose where the config came from: the file, Secret kube-system/azure-cloud-provider, or both merged (the default)", "one cloud-config file is read; if the upstream CCM also read that Secret, import its cloud-config key too and merge the two"},
		"extendedLocationName":                            {"put public IPs and load balancers in an Azure Edge Zone", "not supported: public IPs and load balancers are made in location"},
		"extendedLocationType":                            {"put public IPs and load balancers in an Azure Edge Zone", "not supported: public IPs and load balancers are made in location"},
		"primaryAvailabilitySetName":                      {"put only that availability set's VMs in the load balancer's backend pool", "no per-set pools: every Node joins the pool; keep Nodes out with the node.kubernetes.io/exclude-from-external-load-balancers label"},
		"primaryScaleSetName":                             {"put only that scale set's instances in the load balancer's backend pool", "no per-set pools: every Node joins the pool; keep Nodes out with the node.kubernetes.io/exclude-from-external-load-balancers label"},
		"preConfiguredBackendPoolLoadBalancerTypes":       {"left the backend pools of pre-configured load balancers to someone else", "not supported: the manager always manages its own backend pool (named after the clusterID) on the load balancers it uses"},
		"disableAvailabilitySetNodes":                     {"with vmType vmss, left standalone and availability set VMs out", "no setting: with vmType vmss the manager serves VMs and scale set instances alike, which changes nothing where there are no such VMs"},
		"useInstanceMetadata":                             {"read the local VM's details from the instance metadata service", "not needed: every Node is served from ARM"},
		"maximumLoadBalancerRuleCount":                    {"capped the rules per load balancer, spilling Services to more load balancers", "no setting: every Service is on the one load balancer, up to Azure's own limit of rules"},
		"putVMSSVMBatchSize":                              {"sent that many scale set instance updates at once when joining NICs to backend pools", "not needed: the pool lists node IPs, so no VM or scale set is written"},
		"privateLinkServiceResourceGroup":                 {"held the private link services it made", noPLS},
		"enableMigrateToIPBasedBackendPoolAPI":            {"migrated NIC-based backend pools to IP-based ones without downtime", "not supported: the pool stays of the kind loadBalancerBackendPoolConfigurationType says; to move a NIC-based pool to nodeIP, migrate it with the upstream CCM before switching"},
		"enableIPTagMutationForExistingPublicIP":          {"changed IP tags of existing public IPs in place", "not supported: no IP tags are set (annotation azure-pip-ip-tags is ignored)"},
		"multipleStandardLoadBalancerConfigurations":      {"spread Services over several Standard load balancers by selectors", "not supported: every Service is a frontend on the one load balancer, loadBalancerName (default the clusterID)"},
		"routeUpdateIntervalInSeconds":                    {"batched route table changes for that long", "no setting: route changes that arrive together are written in one route table update"},
		"loadBalancerBackendPoolUpdateIntervalInSeconds":  {"batched backend pool updates of multiple load balancers for that long", "no setting: the one backend pool is written once for all Services on each change of the Node set"},
		"clusterServiceSharedLoadBalancerHealthProbePort": {"was the port of the shared health probe (clusterServiceLoadBalancerHealthProbeMode shared)", "no shared probe: Cluster Services are probed with TCP on each port's NodePort"},
		"clusterServiceSharedLoadBalancerHealthProbePath": {"was the path of the shared health probe (clusterServiceLoadBalancerHealthProbeMode shared)", "no shared probe: Cluster Services are probed with TCP on each port's NodePort"},
		"serviceGatewayEnabled":                           {"sent Service traffic to pod IPs through an Azure Service Gateway", "not supported: traffic goes to the Nodes' NodePorts through the cluster's Standard load balancer"},
		"nodeInstanceNotFoundGracePeriodInSeconds":        {"kept a new Node whose VM ARM did not know yet for that long", "no grace period: a Node is deleted only when ARM answers 404 for its VM"},
	}
	for _, k := range rateLimitKeys {
		m[k] = [2]string{"limited the rate of ARM calls on the client (a token bucket per client)", noRateLimit}
	}
	return m
}()
