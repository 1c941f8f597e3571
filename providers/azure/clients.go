package azure

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v6"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
	"k8s.io/klog/v2"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/cloudmetrics"
)

// clients are the ARM clients of one credential. azcore does the retries
// (429 and 5xx, honouring Retry-After), the long-running-operation polling
// and the per-attempt timeout; the backend adds the metrics
// (clients_metrics.go) as a per-attempt policy and, per call, the naming
// of the permission a denial lacks (clients_denied.go).
type clients struct {
	subscription string
	vms          *armcompute.VirtualMachinesClient
	scaleSets    *armcompute.VirtualMachineScaleSetsClient
	scaleSetVMs  *armcompute.VirtualMachineScaleSetVMsClient
	// availabilitySets is read for node pools' mask tags (podcidrs.go).
	availabilitySets *armcompute.AvailabilitySetsClient
	nics             *armnetwork.InterfacesClient
	publicIPs        *armnetwork.PublicIPAddressesClient
	lbs              *armnetwork.LoadBalancersClient
	nsgs             *armnetwork.SecurityGroupsClient
	routeTables      *armnetwork.RouteTablesClient
	routes           *armnetwork.RoutesClient
	subnets          *armnetwork.SubnetsClient
}

// clientSetup is what newClients derives from the section: the cloud's
// endpoints and the HTTP client every call (Azure AD's included) uses.
type clientSetup struct {
	cloud     cloud.Configuration
	transport *http.Client
	retry     policy.RetryOptions
	// metrics receives every attempt; nil means the manager's /metrics.
	metrics *cloudmetrics.Recorder
}

func newClientSetup(s *Section, rec *cloudmetrics.Recorder) (*clientSetup, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if s.CAFile != "" {
		pem, err := os.ReadFile(s.CAFile)
		if err != nil {
			return nil, fmt.Errorf("azure.caFile: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("azure.caFile: %s holds no PEM certificate", s.CAFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	if rec == nil {
		rec = cloudmetrics.Default()
	}
	return &clientSetup{
		cloud:     cloudConfiguration(s),
		transport: &http.Client{Transport: tr},
		retry: policy.RetryOptions{
			// azcore counts retries, the section attempts.
			MaxRetries:    int32(max(s.MaxAttempts-1, 0)),
			TryTimeout:    s.RequestTimeout,
			RetryDelay:    500 * time.Millisecond,
			MaxRetryDelay: 30 * time.Second,
		},
		metrics: rec,
	}, nil
}

// cloudConfiguration maps the section's cloud to azcore's endpoints.
func cloudConfiguration(s *Section) cloud.Configuration {
	switch s.Cloud {
	case CloudChina:
		return cloud.AzureChina
	case CloudUSGovernment:
		return cloud.AzureGovernment
	case CloudPublic:
		return cloud.AzurePublic
	}
	return cloud.Configuration{
		ActiveDirectoryAuthorityHost: s.ActiveDirectoryAuthorityHost,
		Services: map[cloud.ServiceName]cloud.ServiceConfiguration{
			cloud.ResourceManager: {Endpoint: s.ResourceManagerEndpoint, Audience: s.ResourceManagerAudience},
		},
	}
}

// clientOptions are the azcore options of the clients of service
// ("aad", "arm").
func (c *clientSetup) clientOptions(service string) azcore.ClientOptions {
	o := azcore.ClientOptions{
		Cloud:            c.cloud,
		Transport:        c.transport,
		Retry:            c.retry,
		Telemetry:        policy.TelemetryOptions{ApplicationID: "multicloud-ccm"},
		PerRetryPolicies: []policy.Policy{&metricsPolicy{service: service, rec: c.metrics}},
	}
	if service == "arm" {
		// ARM's RBAC denials name the action (clients_denied.go); Azure
		// AD's token endpoint is under no RBAC.
		o.PerCallPolicies = []policy.Policy{&deniedPolicy{rec: c.metrics}}
	}
	return o
}

// credential builds the section's one credential. Secrets go to
// azidentity and nowhere else; its errors name the method, never the
// secret.
func (c *clientSetup) credential(s *Section) (azcore.TokenCredential, error) {
	co := c.clientOptions("aad")
	// Custom clouds (Azure Stack Hub, the emulator) have no instance
	// discovery endpoint; their authority is trusted as configured.
	disco := s.Cloud == "" || s.Cloud == CloudStack
	switch {
	case s.AADClientSecret != "":
		cred, err := azidentity.NewClientSecretCredential(s.TenantID, s.AADClientID, s.AADClientSecret,
			&azidentity.ClientSecretCredentialOptions{ClientOptions: co, DisableInstanceDiscovery: disco})
		if err != nil {
			return nil, fmt.Errorf("azure client secret credential: %w", err)
		}
		return cred, nil
	case s.AADClientCertPath != "":
		data, err := os.ReadFile(s.AADClientCertPath)
		if err != nil {
			return nil, fmt.Errorf("azure.aadClientCertPath: %w", err)
		}
		var pw []byte
		if s.AADClientCertPassword != "" {
			pw = []byte(s.AADClientCertPassword)
		}
		certs, key, err := azidentity.ParseCertificates(data, pw)
		if err != nil {
			return nil, fmt.Errorf("azure.aadClientCertPath %s: %w", s.AADClientCertPath, redactCertError(err))
		}
		cred, err := azidentity.NewClientCertificateCredential(s.TenantID, s.AADClientID, certs, key,
			&azidentity.ClientCertificateCredentialOptions{ClientOptions: co, DisableInstanceDiscovery: disco, SendCertificateChain: true})
		if err != nil {
			return nil, fmt.Errorf("azure client certificate credential: %w", err)
		}
		return cred, nil
	case s.UseManagedIdentityExtension:
		o := &azidentity.ManagedIdentityCredentialOptions{ClientOptions: co}
		switch id := s.UserAssignedIdentityID; {
		case strings.HasPrefix(strings.ToLower(id), "/subscriptions/"):
			o.ID = azidentity.ResourceID(id)
		case id != "":
			o.ID = azidentity.ClientID(id)
		}
		cred, err := azidentity.NewManagedIdentityCredential(o)
		if err != nil {
			return nil, fmt.Errorf("azure managed identity credential: %w", err)
		}
		return cred, nil
	case s.UseFederatedWorkloadIdentityExtension:
		// The workload identity webhook's environment wins: it is what
		// the identity the pod runs as was bound to.
		o := &azidentity.WorkloadIdentityCredentialOptions{
			ClientOptions: co, DisableInstanceDiscovery: disco,
			ClientID:      firstSet(os.Getenv("AZURE_CLIENT_ID"), s.AADClientID),
			TenantID:      firstSet(os.Getenv("AZURE_TENANT_ID"), s.TenantID),
			TokenFilePath: firstSet(os.Getenv("AZURE_FEDERATED_TOKEN_FILE"), s.AADFederatedTokenFile),
		}
		if o.ClientID == "" {
			return nil, errors.New("azure workload identity: no client ID: set azure.aadClientId or AZURE_CLIENT_ID")
		}
		cred, err := azidentity.NewWorkloadIdentityCredential(o)
		if err != nil {
			return nil, fmt.Errorf("azure workload identity credential: %w", err)
		}
		return cred, nil
	}
	return nil, errors.New("azure: no credentials configured")
}

// redactCertError keeps a certificate parsing error from quoting the
// password (azidentity's errors do not, but a wrapped PKCS#12 error
// might some day).
func redactCertError(err error) error {
	return errors.New(strings.TrimSpace(strings.SplitN(err.Error(), "\n", 2)[0]))
}

func firstSet(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// newClients builds the ARM clients and gets a first token, so wrong
// credentials stop the manager at start with the reason instead of
// failing every later sync. It makes no other call. Azure AD answering
// that it is busy or failing (429, 408, 5xx, after azcore's retries)
// says nothing of the credentials, and stopping on it would leave a
// restarted manager down for as long as Azure AD throttles: the manager
// then starts, and the clients get the token at their first call, which
// fails and is retried by its controller as any throttled call is.
func newClients(ctx context.Context, s *Section, setup *clientSetup) (*clients, error) {
	cred, err := setup.credential(s)
	if err != nil {
		return nil, err
	}
	audience := setup.cloud.Services[cloud.ResourceManager].Audience
	tctx, cancel := context.WithTimeout(ctx, 2*s.RequestTimeout)
	defer cancel()
	if _, err := cred.GetToken(tctx, policy.TokenRequestOptions{Scopes: []string{audience + "/.default"}, EnableCAE: true}); err != nil {
		err = fmt.Errorf("get an Azure AD token for %s (tenant %s): %w", audience, s.TenantID, err)
		if !transientTokenError(err) {
			return nil, err
		}
		klog.FromContext(ctx).Error(err, "Azure AD is busy or failing; starting without a first token, which the first call to ARM gets")
	}
	return newClientsWith(s.SubscriptionID, cred, setup)
}

// transientTokenError says Azure AD answered a token request with a
// status that is no verdict on the credentials: throttled (429), timed
// out (408) or failing (5xx). A wrong secret, certificate or client ID
// is a 400 or 401, and no answer at all (a wrong authority host, no
// route to it) stays an error too.
func transientTokenError(err error) bool {
	var afe *azidentity.AuthenticationFailedError
	if !errors.As(err, &afe) || afe.RawResponse == nil {
		return false
	}
	code := afe.RawResponse.StatusCode
	return code == http.StatusTooManyRequests || code == http.StatusRequestTimeout || code >= 500
}

// newClientsWith builds the ARM clients on cred.
func newClientsWith(subscription string, cred azcore.TokenCredential, setup *clientSetup) (*clients, error) {
	opts := &arm.ClientOptions{
		ClientOptions: setup.clientOptions("arm"),
		// The manager must not register resource providers in the
		// subscription: a missing one is the operator's call.
		DisableRPRegistration: true,
	}
	cf, err := armcompute.NewClientFactory(subscription, cred, opts)
	if err != nil {
		return nil, fmt.Errorf("azure compute clients: %w", err)
	}
	nf, err := armnetwork.NewClientFactory(subscription, cred, opts)
	if err != nil {
		return nil, fmt.Errorf("azure network clients: %w", err)
	}
	return &clients{
		subscription:     subscription,
		vms:              cf.NewVirtualMachinesClient(),
		scaleSets:        cf.NewVirtualMachineScaleSetsClient(),
		scaleSetVMs:      cf.NewVirtualMachineScaleSetVMsClient(),
		availabilitySets: cf.NewAvailabilitySetsClient(),
		nics:             nf.NewInterfacesClient(),
		publicIPs:        nf.NewPublicIPAddressesClient(),
		lbs:              nf.NewLoadBalancersClient(),
		nsgs:             nf.NewSecurityGroupsClient(),
		routeTables:      nf.NewRouteTablesClient(),
		routes:           nf.NewRoutesClient(),
		subnets:          nf.NewSubnetsClient(),
	}, nil
}
