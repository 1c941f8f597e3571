//go:build upstreamcheck

package upstreamcheck

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
	confazure "github.com/multicloud-ccm/multicloud-ccm/test/conformance/azure"
)

// The upstream Azure CCM's Service annotation, spelled out: a Service
// written for upstream carries this exact string.
const azureAnnInternal = "service.beta.kubernetes.io/azure-load-balancer-internal"

// azureUpstream runs sigs.k8s.io/cloud-provider-azure's
// cmd/cloud-controller-manager (the version pinned in tools/azure/go.mod)
// against test/cloudsim/azure, pointed at it as at a disconnected Azure
// Stack Hub: AD FS (tenant "adfs": any other tenant makes MSAL look up
// the public cloud's login host), the endpoints from the file
// AZURE_ENVIRONMENT_FILEPATH names, the emulator's CA in SSL_CERT_FILE.
type azureUpstream struct{}

func (azureUpstream) adapter() conformance.Adapter {
	return confazure.Adapter{Options: confazure.Options{TenantID: "adfs"}}
}

// shapes are the kinds of load balancer upstream makes that our tables
// (docs/reference/azure.md) serve: a frontend on the cluster's public
// Standard load balancer (upstream's default) or on its internal one,
// with the variants that change what upstream writes (source ranges: the
// security rules' sources; ETP Local: the probe on the health check
// NodePort).
func (azureUpstream) shapes() []shape {
	local := func(s *corev1.Service) {
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	}
	src := func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"203.0.113.0/24"} }
	internal := map[string]string{azureAnnInternal: "true"}
	return []shape{
		{name: "public"},
		{name: "public-src", mutate: src},
		{name: "public-local", mutate: local},
		{name: "internal", annotations: internal},
		{name: "internal-src", annotations: internal, mutate: src},
	}
}

// duplicateKinds: the emulator lists a load balancer's parts as kinds of
// their own (test/cloudsim/azure resources.go).
func (azureUpstream) duplicateKinds() []string {
	return []string{
		"Microsoft.Network/loadBalancers", "Microsoft.Network/loadBalancers/frontendIPConfigurations",
		"Microsoft.Network/loadBalancers/backendAddressPools", "Microsoft.Network/publicIPAddresses",
	}
}

// prepare writes upstream's azure.json as an Azure Stack Hub cluster has
// it (vmType standard: the emulator's VMs are standalone; upstream's
// default pool type, nodeIPConfiguration), and the environment file.
func (azureUpstream) prepare(t *testing.T, c conformance.Cloud, dir string) upstreamSetup {
	t.Helper()
	cloud := c.(*confazure.Cloud)
	fx := cloud.Fixture()
	url := c.Server().URL() + "/"
	writeJSON(t, filepath.Join(dir, "environment.json"), map[string]any{
		"name": "AzureStackCloud", "managementPortalURL": url,
		"resourceManagerEndpoint": url, "activeDirectoryEndpoint": url,
		"tokenAudience": url, "serviceManagementEndpoint": url,
		"resourceManagerVMDNSSuffix": "cloudapp.local", "storageEndpointSuffix": "local",
	})
	conf := filepath.Join(dir, "azure.json")
	writeJSON(t, conf, map[string]any{
		"cloud": "AzureStackCloud", "tenantId": fx.TenantID, "identitySystem": "adfs",
		"subscriptionId": fx.SubscriptionID, "aadClientId": fx.ClientID, "aadClientSecret": fx.ClientSecret,
		"resourceGroup": fx.ResourceGroup, "location": fx.Location,
		"vnetName": fx.VNetName, "subnetName": fx.SubnetName, "securityGroupName": fx.SecurityGroupName,
		"loadBalancerSku": "standard", "vmType": "standard", "useInstanceMetadata": false,
	})
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, cloud.Emulator().CAPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	agent := buildUpstream(t, "azure", "node-manager")
	return upstreamSetup{
		configFile: conf,
		// Upstream's install: the CCM without its cloud-node controller
		// (its in-manager copy has no workers: the Azure CCM sets no
		// --concurrent-node-syncs), the cloud-node-manager on every Node
		// (helm/cloud-provider-azure templates/cloud-provider-azure.yaml).
		args: []string{"--cloud-provider=azure", "--cluster-name=" + clusterID, "--controllers=cloud-node-lifecycle,service"},
		nodeAgent: func(node, kubeconfig string) []string {
			// ARM mode (no IMDS here): upstream reads the Node's zone by
			// the host name (pkg/provider/azure_zones.go GetZone), so the
			// agent runs in a UTS namespace named after its Node, as in
			// the DaemonSet's pod on that Node.
			return append(unshareUTS(), "sh", "-c", `hostname "$0" && exec "$@"`, node,
				agent, "--node-name="+node, "--kubeconfig="+kubeconfig, "--cloud-config="+conf,
				"--use-instance-metadata=false", "--node-status-update-frequency=10s", "--v=2")
		},
		widerRBAC: true,
		knownErrors: []knownError{{
			line: regexp.MustCompile(`azure_privatelinkservice.go:\d+\] "getPrivateLinkService failed"|azure_loadbalancer.go:\d+\] "failed to clean up PrivateLinkService for frontEnd"`),
			why: "deleting an internal frontend, upstream looks for its Private Link Service with the " +
				"api-version its azclient names for Azure Stack (privatelinkserviceclient AzureStackCloudAPIVersion 2019-03-01), " +
				"which ARM does not serve for privateLinkServices (400 NoRegisteredProviderFound); it goes on and deletes the frontend, " +
				"whoever made it",
		}},
		env:        []string{"AZURE_ENVIRONMENT_FILEPATH=" + filepath.Join(dir, "environment.json"), "SSL_CERT_FILE=" + ca},
		secrets:    []string{fx.ClientSecret},
		importArgs: []string{"--cluster-name=" + clusterID},
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// unshareUTS is the command prefix for a new UTS namespace: root makes
// one directly, anyone else through a user namespace (where the kernel
// allows unprivileged ones).
func unshareUTS() []string {
	if os.Geteuid() == 0 {
		return []string{"unshare", "--uts"}
	}
	return []string{"unshare", "--user", "--map-root-user", "--uts"}
}
