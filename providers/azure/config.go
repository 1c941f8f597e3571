// Package azure is the Azure backend: virtual machines and scale-set
// instances, the cluster's Standard Load Balancer with public IPs and
// network security group rules, and pod-CIDR routes in a route table,
// through the azure-sdk-for-go track-2 modules (azcore, azidentity,
// armcompute, armnetwork). docs/guides/azure.md describes the behaviour.
package azure

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/clientopts"
)

// Section is the `azure:` section of the cloud-config. Field names are
// the upstream Azure CCM's azure.json keys (tenantId, subscriptionId,
// aadClientId, ...; docs/guides/azure.md), so an azure.json ports key by key.
type Section struct {
	// Cloud is the Azure cloud: AzurePublicCloud (default),
	// AzureChinaCloud or AzureUSGovernmentCloud. For Azure Stack Hub (or
	// any other cloud) leave it empty, or set AzureStackCloud, and give
	// resourceManagerEndpoint and activeDirectoryAuthorityHost.
	Cloud string `yaml:"cloud"`
	// ActiveDirectoryAuthorityHost is the Azure AD (Entra ID) authority of
	// a custom cloud, e.g. https://login.microsoftonline.com/.
	ActiveDirectoryAuthorityHost string `yaml:"activeDirectoryAuthorityHost"`
	// ResourceManagerEndpoint is the Azure Resource Manager URL of a
	// custom cloud, e.g. https://management.local.azurestack.external/.
	ResourceManagerEndpoint string `yaml:"resourceManagerEndpoint"`
	// ResourceManagerAudience is the token audience of a custom cloud's
	// Resource Manager (default: resourceManagerEndpoint).
	ResourceManagerAudience string `yaml:"resourceManagerAudience"`
	// CAFile is a PEM bundle to trust for Azure AD and Resource Manager
	// instead of the system roots (Azure Stack Hub with a private CA).
	CAFile string `yaml:"caFile"`

	// TenantID is the Azure AD tenant of the credentials (required).
	TenantID string `yaml:"tenantId"`
	// SubscriptionID is the subscription the cluster runs in (required).
	SubscriptionID string `yaml:"subscriptionId"`
	// ResourceGroup holds the cluster's VMs (required); it is the default
	// for every other resource group below.
	ResourceGroup string `yaml:"resourceGroup"`
	// Location is the cluster's region, e.g. westeurope (required).
	Location string `yaml:"location"`

	// VnetName is the virtual network the nodes are in (required): load
	// balancer backend pools list node IPs of this network.
	VnetName string `yaml:"vnetName"`
	// VnetResourceGroup holds vnetName (default resourceGroup).
	VnetResourceGroup string `yaml:"vnetResourceGroup"`
	// SubnetName is the nodes' subnet (required), where internal load
	// balancers get their addresses unless a Service names another.
	SubnetName string `yaml:"subnetName"`
	// SecurityGroupName is the network security group that gets a rule
	// for each load-balanced port. Empty: no rules are managed.
	SecurityGroupName string `yaml:"securityGroupName"`
	// SecurityGroupResourceGroup holds securityGroupName (default
	// resourceGroup).
	SecurityGroupResourceGroup string `yaml:"securityGroupResourceGroup"`
	// RouteTableName is the route table that gets the pod-CIDR routes.
	// Routes are supported only when it is set.
	RouteTableName string `yaml:"routeTableName"`
	// RouteTableResourceGroup holds routeTableName (default
	// resourceGroup).
	RouteTableResourceGroup string `yaml:"routeTableResourceGroup"`
	// LoadBalancerName names the cluster's Standard Load Balancer, and
	// "<loadBalancerName>-internal" the internal one (default: the
	// clusterID).
	LoadBalancerName string `yaml:"loadBalancerName"`
	// LoadBalancerResourceGroup holds the load balancers and their public
	// IPs (default resourceGroup).
	LoadBalancerResourceGroup string `yaml:"loadBalancerResourceGroup"`
	// VMType is vmss (virtual machines, availability sets, flexible and
	// uniform scale sets; the default, as upstream's,
	// cloud-provider-azure pkg/provider/azure.go:284-287) or standard
	// (no uniform scale sets, and a few Nodes looked up by a GET each).
	VMType string `yaml:"vmType"`
	// ExcludeMasterFromStandardLB keeps control-plane Nodes (labelled
	// node-role.kubernetes.io/control-plane or
	// node-role.kubernetes.io/master, or kubernetes.io/role=master) out
	// of the backend pool, as upstream (pkg/provider/azure.go:604-608,
	// azure_standard.go:142-157). Default (unset): true.
	ExcludeMasterFromStandardLB *bool `yaml:"excludeMasterFromStandardLB"`
	// LoadBalancerBackendPoolConfigurationType is how nodes are in the
	// backend pool: nodeIP (the default here: the pool lists the nodes'
	// addresses, one load balancer write for any node change and no
	// write to VMs) or nodeIPConfiguration (upstream's default,
	// cloud-provider-azure pkg/provider/azure.go:310-320: each node's
	// NIC, or scale set instance, names the pool; keeps a pool the
	// upstream CCM made working as it is). Case does not matter, as
	// upstream's.
	LoadBalancerBackendPoolConfigurationType string `yaml:"loadBalancerBackendPoolConfigurationType"`
	// Tags ("k1=v1,k2=v2") go on the load balancers, the public IPs the
	// manager makes, and the security group and route table it writes, as
	// upstream's (pkg/provider/azure_utils.go:65-183).
	Tags string `yaml:"tags"`
	// TagsMap is more tags; it wins over tags for a key both name.
	TagsMap map[string]string `yaml:"tagsMap"`
	// SystemTags ("k1,k2"): when set, a tag on those resources that is
	// neither configured nor starts with one of these keys is removed on
	// the next write (the manager's own keys stay); unset, no tag is ever
	// removed.
	SystemTags string `yaml:"systemTags"`

	// AADClientID is the service principal's application (client) ID,
	// with aadClientSecret or aadClientCertPath; for workload identity, the
	// identity's client ID unless AZURE_CLIENT_ID is set.
	AADClientID string `yaml:"aadClientId"`
	// AADClientSecret is the service principal's client secret.
	AADClientSecret string `yaml:"aadClientSecret" secret:"true"`
	// AADClientCertPath is a PEM or PKCS#12 file holding the service
	// principal's certificate and private key.
	AADClientCertPath string `yaml:"aadClientCertPath"`
	// AADClientCertPassword decrypts aadClientCertPath.
	AADClientCertPassword string `yaml:"aadClientCertPassword" secret:"true"`
	// UseManagedIdentityExtension authenticates as the VM's managed
	// identity: system-assigned, or userAssignedIdentityID.
	UseManagedIdentityExtension bool `yaml:"useManagedIdentityExtension"`
	// UserAssignedIdentityID is a user-assigned identity's client ID (or
	// its resource ID, /subscriptions/...).
	UserAssignedIdentityID string `yaml:"userAssignedIdentityID"`
	// UseFederatedWorkloadIdentityExtension authenticates with Azure AD
	// workload identity: the service account token in
	// aadFederatedTokenFile is exchanged for an Azure AD token. The
	// environment the workload identity webhook injects
	// (AZURE_CLIENT_ID, AZURE_TENANT_ID, AZURE_FEDERATED_TOKEN_FILE) wins
	// over the fields here.
	UseFederatedWorkloadIdentityExtension bool `yaml:"useFederatedWorkloadIdentityExtension"`
	// AADFederatedTokenFile is the projected service account token
	// (default /var/run/secrets/azure/tokens/azure-identity-token, where
	// the webhook mounts it).
	AADFederatedTokenFile string `yaml:"aadFederatedTokenFile"`

	// Options are the options every backend shares: requestTimeout,
	// maxAttempts and instanceCacheTTL.
	clientopts.Options `yaml:",inline"`
}

// Values of the section.
const (
	CloudPublic       = "AzurePublicCloud"
	CloudChina        = "AzureChinaCloud"
	CloudUSGovernment = "AzureUSGovernmentCloud"
	// CloudStack is upstream's name for a custom cloud (Azure Stack Hub);
	// here it needs the custom endpoints.
	CloudStack = "AzureStackCloud"

	VMTypeStandard = "standard"
	VMTypeVMSS     = "vmss"

	PoolNodeIP              = "nodeIP"
	PoolNodeIPConfiguration = "nodeIPConfiguration"

	// DefaultFederatedTokenFile is where the workload identity webhook
	// mounts the service account token.
	DefaultFederatedTokenFile = "/var/run/secrets/azure/tokens/azure-identity-token" //nolint:gosec // a path
)

// custom says the section names its own endpoints instead of a public
// Azure cloud.
func (s *Section) custom() bool {
	return s.ActiveDirectoryAuthorityHost != "" || s.ResourceManagerEndpoint != "" || s.ResourceManagerAudience != "" || s.Cloud == CloudStack
}

// SetDefaults implements config.Section. loadBalancerName defaults to the
// clusterID, which the section does not know; see lbName.
func (s *Section) SetDefaults() {
	s.Options.SetDefaults()
	if s.Cloud == "" && !s.custom() {
		s.Cloud = CloudPublic
	}
	if s.ResourceManagerAudience == "" {
		s.ResourceManagerAudience = s.ResourceManagerEndpoint
	}
	if s.VMType == "" {
		s.VMType = VMTypeVMSS
	}
	switch {
	case s.LoadBalancerBackendPoolConfigurationType == "":
		s.LoadBalancerBackendPoolConfigurationType = PoolNodeIP
	case strings.EqualFold(s.LoadBalancerBackendPoolConfigurationType, PoolNodeIP):
		s.LoadBalancerBackendPoolConfigurationType = PoolNodeIP
	case strings.EqualFold(s.LoadBalancerBackendPoolConfigurationType, PoolNodeIPConfiguration):
		s.LoadBalancerBackendPoolConfigurationType = PoolNodeIPConfiguration
	}
	// Upstream writes locations either way ("West Europe", "westeurope");
	// ARM answers with the short form.
	s.Location = strings.ToLower(strings.ReplaceAll(s.Location, " ", ""))
	for _, rg := range []*string{&s.VnetResourceGroup, &s.SecurityGroupResourceGroup, &s.RouteTableResourceGroup, &s.LoadBalancerResourceGroup} {
		if *rg == "" {
			*rg = s.ResourceGroup
		}
	}
	if s.UseFederatedWorkloadIdentityExtension && s.AADFederatedTokenFile == "" {
		s.AADFederatedTokenFile = DefaultFederatedTokenFile
	}
}

// RoutesEnabled reports whether routes are configured.
func (s *Section) RoutesEnabled() bool { return s.RouteTableName != "" }

var (
	guidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	// tenantRE is what azidentity accepts as a tenant: a GUID or a
	// domain name such as contoso.onmicrosoft.com.
	tenantRE = regexp.MustCompile(`^[0-9A-Za-z.-]+$`)
	// resourceGroupRE is ARM's rule: 1-90 letters, digits, underscores,
	// hyphens, periods and parentheses, not ending in a period.
	resourceGroupRE = regexp.MustCompile(`^[-\w._()]{0,89}[-\w_()]$`)
	// nameRE is the rule of network resource names (vnets, subnets,
	// NSGs, route tables, load balancers): 1-80 characters, starting with
	// a letter or digit, ending with one or an underscore.
	nameRE     = regexp.MustCompile(`^[A-Za-z0-9]([-\w.]{0,78}[\w])?$`)
	locationRE = regexp.MustCompile(`^[a-z0-9]+$`)
)

// credentialMethods names the ways the section authenticates.
func (s *Section) credentialMethods() []string {
	var m []string
	if s.AADClientSecret != "" {
		m = append(m, "aadClientSecret")
	}
	if s.AADClientCertPath != "" || s.AADClientCertPassword != "" {
		m = append(m, "aadClientCertPath")
	}
	if s.UseManagedIdentityExtension {
		m = append(m, "useManagedIdentityExtension")
	}
	if s.UseFederatedWorkloadIdentityExtension {
		m = append(m, "useFederatedWorkloadIdentityExtension")
	}
	return m
}

// Validate implements config.Section. It reports every problem at once.
func (s *Section) Validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, s.validateCloud(path)...)
	errs = append(errs, s.validateCredentials(path)...)
	switch {
	case s.TenantID == "":
		errs = append(errs, field.Required(path.Child("tenantId"), "the Azure AD tenant ID of the credentials, e.g. 72f988bf-86f1-41af-91ab-2d7cd011db47"))
	case !tenantRE.MatchString(s.TenantID):
		errs = append(errs, field.Invalid(path.Child("tenantId"), s.TenantID, "must be a tenant ID (a GUID) or a domain such as contoso.onmicrosoft.com"))
	}
	switch {
	case s.SubscriptionID == "":
		errs = append(errs, field.Required(path.Child("subscriptionId"), "the subscription the cluster runs in (a GUID)"))
	case !guidRE.MatchString(s.SubscriptionID):
		errs = append(errs, field.Invalid(path.Child("subscriptionId"), s.SubscriptionID, "must be a GUID such as 00000000-0000-0000-0000-000000000000"))
	}
	switch {
	case s.Location == "":
		errs = append(errs, field.Required(path.Child("location"), "the cluster's region, e.g. westeurope"))
	case !locationRE.MatchString(s.Location):
		errs = append(errs, field.Invalid(path.Child("location"), s.Location, "must be a region name such as westeurope"))
	}
	for _, rg := range []struct{ key, value string }{
		{"resourceGroup", s.ResourceGroup},
		{"vnetResourceGroup", s.VnetResourceGroup},
		{"securityGroupResourceGroup", s.SecurityGroupResourceGroup},
		{"routeTableResourceGroup", s.RouteTableResourceGroup},
		{"loadBalancerResourceGroup", s.LoadBalancerResourceGroup},
	} {
		switch {
		case rg.value == "" && rg.key == "resourceGroup":
			errs = append(errs, field.Required(path.Child(rg.key), "the resource group of the cluster's VMs"))
		case rg.value != "" && !resourceGroupRE.MatchString(rg.value):
			errs = append(errs, field.Invalid(path.Child(rg.key), rg.value, "must be a resource group name: 1-90 letters, digits, '_', '-', '.', '(' or ')', not ending in '.'"))
		}
	}
	for _, n := range []struct {
		key, value string
		required   string
	}{
		{"vnetName", s.VnetName, "the nodes' virtual network: load balancer backend pools list node IPs in it"},
		{"subnetName", s.SubnetName, "the nodes' subnet, where internal load balancers get their addresses"},
		{"securityGroupName", s.SecurityGroupName, ""},
		{"routeTableName", s.RouteTableName, ""},
		{"loadBalancerName", s.LoadBalancerName, ""},
	} {
		switch {
		case n.value == "" && n.required != "":
			errs = append(errs, field.Required(path.Child(n.key), n.required))
		case n.value != "" && !nameRE.MatchString(n.value):
			errs = append(errs, field.Invalid(path.Child(n.key), n.value, "must be 1-80 letters, digits, '_', '-' or '.', starting with a letter or digit"))
		}
	}
	if s.LoadBalancerName != "" && len(s.LoadBalancerName) > 80-len("-internal") {
		errs = append(errs, field.TooLong(path.Child("loadBalancerName"), s.LoadBalancerName, 80-len("-internal")))
	}
	switch s.VMType {
	case VMTypeStandard, VMTypeVMSS:
	default:
		errs = append(errs, field.NotSupported(path.Child("vmType"), s.VMType, []string{VMTypeStandard, VMTypeVMSS}))
	}
	switch s.LoadBalancerBackendPoolConfigurationType {
	case PoolNodeIP, PoolNodeIPConfiguration:
	default:
		errs = append(errs, field.NotSupported(path.Child("loadBalancerBackendPoolConfigurationType"), s.LoadBalancerBackendPoolConfigurationType, []string{PoolNodeIP, PoolNodeIPConfiguration}))
	}
	errs = append(errs, validateTags(s, path)...)
	errs = append(errs, s.Options.Validate(path)...)
	return errs
}

func (s *Section) validateCloud(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch s.Cloud {
	case CloudPublic, CloudChina, CloudUSGovernment:
		for _, f := range []struct{ key, value string }{
			{"activeDirectoryAuthorityHost", s.ActiveDirectoryAuthorityHost},
			{"resourceManagerEndpoint", s.ResourceManagerEndpoint},
		} {
			if f.value != "" {
				errs = append(errs, field.Forbidden(path.Child(f.key), fmt.Sprintf("cloud %s has its own endpoints; leave cloud empty (or AzureStackCloud) to use custom ones", s.Cloud)))
			}
		}
	case "", CloudStack:
		if s.ActiveDirectoryAuthorityHost == "" {
			errs = append(errs, field.Required(path.Child("activeDirectoryAuthorityHost"), "a custom cloud needs its Azure AD authority, e.g. https://login.microsoftonline.com/"))
		}
		if s.ResourceManagerEndpoint == "" {
			errs = append(errs, field.Required(path.Child("resourceManagerEndpoint"), "a custom cloud needs its Resource Manager URL, e.g. https://management.local.azurestack.external/"))
		}
	default:
		errs = append(errs, field.NotSupported(path.Child("cloud"), s.Cloud, []string{CloudPublic, CloudChina, CloudUSGovernment, CloudStack}))
	}
	for _, f := range []struct{ key, value string }{
		{"activeDirectoryAuthorityHost", s.ActiveDirectoryAuthorityHost},
		{"resourceManagerEndpoint", s.ResourceManagerEndpoint},
		{"resourceManagerAudience", s.ResourceManagerAudience},
	} {
		if f.value == "" {
			continue
		}
		// azcore sends bearer tokens only over https.
		if u, err := url.Parse(f.value); err != nil || u.Scheme != "https" || u.Host == "" {
			errs = append(errs, field.Invalid(path.Child(f.key), f.value, "must be an https URL (Azure SDKs send tokens only over https)"))
		}
	}
	return errs
}

func (s *Section) validateCredentials(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	methods := s.credentialMethods()
	switch {
	case len(methods) == 0:
		errs = append(errs, field.Required(path, "credentials: aadClientId with aadClientSecret, aadClientId with aadClientCertPath, useManagedIdentityExtension, or useFederatedWorkloadIdentityExtension"))
	case len(methods) > 1:
		errs = append(errs, field.Forbidden(path, strings.Join(methods, " and ")+": set exactly one way to authenticate"))
	}
	if len(methods) != 1 {
		return errs
	}
	switch methods[0] {
	case "aadClientSecret":
		if s.AADClientID == "" {
			errs = append(errs, field.Required(path.Child("aadClientId"), "the service principal's application (client) ID that aadClientSecret belongs to"))
		}
	case "aadClientCertPath":
		if s.AADClientID == "" {
			errs = append(errs, field.Required(path.Child("aadClientId"), "the service principal's application (client) ID that the certificate belongs to"))
		}
		if s.AADClientCertPath == "" {
			errs = append(errs, field.Required(path.Child("aadClientCertPath"), "the PEM or PKCS#12 file aadClientCertPassword decrypts"))
		}
	case "useManagedIdentityExtension":
		if s.AADClientID != "" {
			errs = append(errs, field.Forbidden(path.Child("aadClientId"), "a managed identity is named by userAssignedIdentityID, not aadClientId"))
		}
	case "useFederatedWorkloadIdentityExtension":
		if s.UserAssignedIdentityID != "" {
			errs = append(errs, field.Forbidden(path.Child("userAssignedIdentityID"), "workload identity uses aadClientId (or AZURE_CLIENT_ID)"))
		}
	}
	if s.UserAssignedIdentityID != "" && !s.UseManagedIdentityExtension && !s.UseFederatedWorkloadIdentityExtension {
		errs = append(errs, field.Forbidden(path.Child("userAssignedIdentityID"), "only with useManagedIdentityExtension"))
	}
	if s.AADClientID != "" && !guidRE.MatchString(s.AADClientID) {
		errs = append(errs, field.Invalid(path.Child("aadClientId"), s.AADClientID, "must be an application (client) ID, a GUID"))
	}
	return errs
}

// lbName is the cluster's load balancer name: loadBalancerName, default
// the clusterID.
func (s *Section) lbName(clusterID string) string {
	if s.LoadBalancerName != "" {
		return s.LoadBalancerName
	}
	return clusterID
}

// nicPools says nodes join the backend pool through their NICs.
func (s *Section) nicPools() bool {
	return s.LoadBalancerBackendPoolConfigurationType == PoolNodeIPConfiguration
}
