package azure

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v6"
)

// clientOptions are azidentity's options for the emulator as a custom
// cloud.
func (env *testEnv) clientOptions() azcore.ClientOptions {
	return azcore.ClientOptions{Cloud: env.opts.Cloud, Transport: env.emu.TestHTTPClient(),
		Retry: policy.RetryOptions{MaxRetries: -1}}
}

// armScope is the scope a credential is asked for by ARM clients.
func (env *testEnv) armScope() []string { return []string{env.srv.URL() + "/.default"} }

// listAllWith lists the subscription's VMs with cred: an ARM call that
// needs a token the emulator accepts.
func (env *testEnv) listAllWith(cred azcore.TokenCredential) error {
	c, err := armcompute.NewVirtualMachinesClient(env.emu.Config().SubscriptionID, cred, env.opts)
	if err != nil {
		return err
	}
	_, err = c.NewListAllPager(nil).NextPage(context.Background())
	return err
}

func wantAuthError(t *testing.T, err error, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("got a token, want an error")
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error does not mention %q: %v", f, err)
		}
	}
}

func TestClientSecretCredential(t *testing.T) {
	env := newTestEnv(t, Config{})
	cfg := env.emu.Config()
	opts := &azidentity.ClientSecretCredentialOptions{ClientOptions: env.clientOptions(), DisableInstanceDiscovery: true}
	cred, err := azidentity.NewClientSecretCredential(cfg.TenantID, cfg.ClientID, cfg.ClientSecret, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.listAllWith(cred); err != nil {
		t.Fatal(err)
	}
	if n := env.srv.CallCount("aad:OpenIDConfiguration"); n != 1 {
		t.Errorf("OpenID configuration read %d times, want 1", n)
	}
	if n := env.srv.CallCount("aad:Token"); n != 1 {
		t.Errorf("token endpoint called %d times, want 1", n)
	}

	bad, _ := azidentity.NewClientSecretCredential(cfg.TenantID, cfg.ClientID, "wrong", opts)
	_, err = bad.GetToken(context.Background(), policy.TokenRequestOptions{Scopes: env.armScope()})
	wantAuthError(t, err, "AADSTS7000215", "invalid_client", "RESPONSE 401")

	unknown, _ := azidentity.NewClientSecretCredential(cfg.TenantID, "11111111-2222-3333-4444-555555555555", "x", opts)
	_, err = unknown.GetToken(context.Background(), policy.TokenRequestOptions{Scopes: env.armScope()})
	wantAuthError(t, err, "AADSTS700016", "unauthorized_client")

	otherTenant, _ := azidentity.NewClientSecretCredential("99999999-0000-0000-0000-000000000000", cfg.ClientID, cfg.ClientSecret, opts)
	_, err = otherTenant.GetToken(context.Background(), policy.TokenRequestOptions{Scopes: env.armScope()})
	wantAuthError(t, err, "AADSTS90002")

	// A second app registered by the admin API.
	env.emu.RegisterClientSecret("22222222-0000-0000-0000-000000000002", "second-secret")
	second, _ := azidentity.NewClientSecretCredential(cfg.TenantID, "22222222-0000-0000-0000-000000000002", "second-secret", opts)
	if err := env.listAllWith(second); err != nil {
		t.Fatal(err)
	}
}

// selfSigned makes an RSA key and a self-signed certificate for it.
func selfSigned(t *testing.T, cn string) (*x509.Certificate, *rsa.PrivateKey) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// signPS256 makes a certificate client assertion as MSAL does: PS256,
// the certificate named by its SHA-256 thumbprint.
func signPS256(t *testing.T, cert *x509.Certificate, key *rsa.PrivateKey, claims map[string]any) string {
	t.Helper()
	thumb := sha256.Sum256(cert.Raw)
	h, _ := json.Marshal(map[string]any{"alg": "PS256", "typ": "JWT", "x5t#S256": base64.StdEncoding.EncodeToString(thumb[:])})
	c, _ := json.Marshal(claims)
	msg := base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c)
	digest := sha256.Sum256([]byte(msg))
	sig, err := rsa.SignPSS(rand.Reader, key, crypto.SHA256, digest[:], &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
	if err != nil {
		t.Fatal(err)
	}
	return msg + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func TestClientCertificateCredential(t *testing.T) {
	env := newTestEnv(t, Config{})
	tenant := env.emu.Config().TenantID
	const app = "33333333-0000-0000-0000-000000000003"
	cert, key := selfSigned(t, "cloudsim-app")
	env.emu.RegisterClientCertificate(app, cert)
	opts := &azidentity.ClientCertificateCredentialOptions{ClientOptions: env.clientOptions(), DisableInstanceDiscovery: true}

	cred, err := azidentity.NewClientCertificateCredential(tenant, app, []*x509.Certificate{cert}, key, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.listAllWith(cred); err != nil {
		t.Fatal(err)
	}

	// The same with x5c sent (subject name/issuer authentication).
	opts.SendCertificateChain = true
	chain, _ := azidentity.NewClientCertificateCredential(tenant, app, []*x509.Certificate{cert}, key, opts)
	if err := env.listAllWith(chain); err != nil {
		t.Fatal(err)
	}

	// A certificate the app does not have.
	other, otherKey := selfSigned(t, "stranger")
	stranger, _ := azidentity.NewClientCertificateCredential(tenant, app, []*x509.Certificate{other}, otherKey, opts)
	_, err = stranger.GetToken(context.Background(), policy.TokenRequestOptions{Scopes: env.armScope()})
	wantAuthError(t, err, "AADSTS700027")

	// Assertions made by hand: the registered certificate named but
	// another key signing, an expired one, one for another audience.
	aud := env.srv.URL() + "/" + tenant + "/oauth2/v2.0/token"
	now := time.Now().Unix()
	for _, c := range []struct {
		key    *rsa.PrivateKey
		claims map[string]any
		want   string
	}{
		{otherKey, map[string]any{"aud": aud, "iss": app, "sub": app, "exp": now + 600, "nbf": now}, "AADSTS7000274"},
		{key, map[string]any{"aud": aud, "iss": app, "sub": app, "exp": now - 3600, "nbf": now - 4000}, "AADSTS700024"},
		{key, map[string]any{"aud": "https://elsewhere/token", "iss": app, "sub": app, "exp": now + 600, "nbf": now}, "AADSTS700212"},
		{key, map[string]any{"aud": aud, "iss": "someone-else", "sub": app, "exp": now + 600, "nbf": now}, "AADSTS700021"},
	} {
		assertion := signPS256(t, cert, c.key, c.claims)
		hand, _ := azidentity.NewClientAssertionCredential(tenant, app, func(context.Context) (string, error) { return assertion, nil },
			&azidentity.ClientAssertionCredentialOptions{ClientOptions: env.clientOptions(), DisableInstanceDiscovery: true})
		_, err = hand.GetToken(context.Background(), policy.TokenRequestOptions{Scopes: env.armScope()})
		wantAuthError(t, err, c.want)
	}
	good := signPS256(t, cert, key, map[string]any{"aud": aud, "iss": app, "sub": app, "exp": now + 600, "nbf": now})
	hand, _ := azidentity.NewClientAssertionCredential(tenant, app, func(context.Context) (string, error) { return good, nil },
		&azidentity.ClientAssertionCredentialOptions{ClientOptions: env.clientOptions(), DisableInstanceDiscovery: true})
	if _, err := hand.GetToken(context.Background(), policy.TokenRequestOptions{Scopes: env.armScope()}); err != nil {
		t.Fatal(err)
	}

	// Over HTTP: a certificate registered as PEM.
	const app2 = "33333333-0000-0000-0000-000000000004"
	certPEM := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}))
	if status := env.admin(t, http.MethodPost, "/identity/certificates", map[string]string{"clientId": app2, "certificatePem": certPEM}, nil); status != http.StatusOK {
		t.Fatalf("register certificate: %d", status)
	}
	cred2, _ := azidentity.NewClientCertificateCredential(tenant, app2, []*x509.Certificate{cert}, key, opts)
	if _, err := cred2.GetToken(context.Background(), policy.TokenRequestOptions{Scopes: env.armScope()}); err != nil {
		t.Fatal(err)
	}
}

func TestWorkloadIdentityCredential(t *testing.T) {
	env := newTestEnv(t, Config{})
	tenant := env.emu.Config().TenantID
	const app = "44444444-0000-0000-0000-000000000004"
	// A Kubernetes service account token as the kubelet projects it.
	saToken := "eyJhbGciOiJSUzI1NiIsImtpZCI6ImNsb3Vkc2ltIn0." +
		"eyJhdWQiOlsiYXBpOi8vQXp1cmVBRFRva2VuRXhjaGFuZ2UiXSwiaXNzIjoiaHR0cHM6Ly9vaWRjLmV4YW1wbGUiLCJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6a3ViZS1zeXN0ZW06Y2xvdWQtY29udHJvbGxlci1tYW5hZ2VyIn0." +
		"c2lnbmF0dXJl"
	env.emu.RegisterFederatedToken(app, saToken)
	file := filepath.Join(t.TempDir(), "azure-identity-token")
	if err := os.WriteFile(file, []byte(saToken), 0o600); err != nil {
		t.Fatal(err)
	}
	cred, err := azidentity.NewWorkloadIdentityCredential(&azidentity.WorkloadIdentityCredentialOptions{
		ClientOptions: env.clientOptions(), DisableInstanceDiscovery: true,
		ClientID: app, TenantID: tenant, TokenFilePath: file,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.listAllWith(cred); err != nil {
		t.Fatal(err)
	}

	// ClientAssertionCredential with a token the app does not trust.
	stranger, err := azidentity.NewClientAssertionCredential(tenant, app, func(context.Context) (string, error) {
		return "eyJhbGciOiJub25lIn0.eyJpc3MiOiJodHRwczovL290aGVyIiwic3ViIjoibWUiLCJhdWQiOiJ4In0.", nil
	}, &azidentity.ClientAssertionCredentialOptions{ClientOptions: env.clientOptions(), DisableInstanceDiscovery: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = stranger.GetToken(context.Background(), policy.TokenRequestOptions{Scopes: env.armScope()})
	wantAuthError(t, err, "AADSTS70021", "https://other")

	// ClientAssertionCredential with the registered token.
	assert, _ := azidentity.NewClientAssertionCredential(tenant, app, func(context.Context) (string, error) { return saToken, nil },
		&azidentity.ClientAssertionCredentialOptions{ClientOptions: env.clientOptions(), DisableInstanceDiscovery: true})
	if err := env.listAllWith(assert); err != nil {
		t.Fatal(err)
	}
}

func TestManagedIdentityCredential(t *testing.T) {
	env := newTestEnv(t, Config{})
	t.Setenv("IDENTITY_ENDPOINT", env.srv.URL()+ManagedIdentityPath)
	t.Setenv("IDENTITY_HEADER", env.emu.ManagedIdentityHeader())
	system, err := azidentity.NewManagedIdentityCredential(&azidentity.ManagedIdentityCredentialOptions{ClientOptions: env.clientOptions()})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.listAllWith(system); err != nil {
		t.Fatal(err)
	}
	if n := env.srv.CallCount("aad:ManagedIdentityToken"); n != 1 {
		t.Errorf("managed identity endpoint called %d times, want 1", n)
	}

	const uami = "55555555-0000-0000-0000-000000000005"
	env.emu.RegisterManagedIdentity(uami)
	user, _ := azidentity.NewManagedIdentityCredential(&azidentity.ManagedIdentityCredentialOptions{ClientOptions: env.clientOptions(), ID: azidentity.ClientID(uami)})
	if err := env.listAllWith(user); err != nil {
		t.Fatal(err)
	}
	unknown, _ := azidentity.NewManagedIdentityCredential(&azidentity.ManagedIdentityCredentialOptions{ClientOptions: env.clientOptions(), ID: azidentity.ClientID("66666666-0000-0000-0000-000000000006")})
	_, err = unknown.GetToken(context.Background(), policy.TokenRequestOptions{Scopes: env.armScope()})
	wantAuthError(t, err, "Unable to load the proper Managed Identity")

	// The wrong secret header.
	t.Setenv("IDENTITY_HEADER", "wrong")
	wrong, _ := azidentity.NewManagedIdentityCredential(&azidentity.ManagedIdentityCredentialOptions{ClientOptions: env.clientOptions(), ID: azidentity.ClientID(uami + "0")})
	_, err = wrong.GetToken(context.Background(), policy.TokenRequestOptions{Scopes: env.armScope()})
	wantAuthError(t, err, "401")
}

func TestARMAuthentication(t *testing.T) {
	env := newTestEnv(t, Config{})
	path := "/subscriptions/" + env.emu.Config().SubscriptionID + "/providers/Microsoft.Compute/virtualMachines"
	q := url.Values{"api-version": {"2024-11-01"}}

	status, body := env.raw(t, http.MethodGet, path, q, "")
	if status != http.StatusUnauthorized || errorCode(body) != "AuthenticationFailed" {
		t.Errorf("no token: %d %v", status, body)
	}

	err := env.listAllWith(staticToken{token: "garbage"})
	wantARMError(t, err, http.StatusUnauthorized, "InvalidAuthenticationToken")

	if err := env.listAllWith(env.cred); err != nil {
		t.Fatal(err)
	}
	env.emu.ExpireTokens()
	err = env.listAllWith(env.cred)
	re := wantARMError(t, err, http.StatusUnauthorized, "ExpiredAuthenticationToken")
	if !strings.Contains(re.Error(), "is earlier than current UTC time") {
		t.Errorf("expired token message: %v", re)
	}
}

// TestTokenLifetime checks that a token expires after
// Config.TokenLifetime on the emulator's clock.
func TestTokenLifetime(t *testing.T) {
	now := time.Now()
	clock := func() time.Time { return now }
	env := newTestEnv(t, Config{TokenLifetime: time.Minute, Now: func() time.Time { return clock() }})
	if err := env.listAllWith(env.cred); err != nil {
		t.Fatal(err)
	}
	clock = func() time.Time { return now.Add(2 * time.Minute) }
	wantARMError(t, env.listAllWith(env.cred), http.StatusUnauthorized, "ExpiredAuthenticationToken")
}

func TestAADEndpoints(t *testing.T) {
	env := newTestEnv(t, Config{})
	tenant := env.emu.Config().TenantID

	status, doc := env.raw(t, http.MethodGet, "/"+tenant+"/v2.0/.well-known/openid-configuration", nil, "")
	if status != http.StatusOK || doc["token_endpoint"] != env.srv.URL()+"/"+tenant+"/oauth2/v2.0/token" ||
		doc["issuer"] != env.srv.URL()+"/"+tenant+"/v2.0" || doc["authorization_endpoint"] == nil {
		t.Errorf("OpenID configuration: %d %v", status, doc)
	}
	status, doc = env.raw(t, http.MethodGet, "/nobody/v2.0/.well-known/openid-configuration", nil, "")
	if status != http.StatusBadRequest || doc["error"] != "invalid_tenant" || !strings.HasPrefix(doc["error_description"].(string), "AADSTS90002:") {
		t.Errorf("unknown tenant: %d %v", status, doc)
	}

	q := url.Values{"api-version": {"1.1"}, "authorization_endpoint": {env.srv.URL() + "/" + tenant + "/oauth2/v2.0/authorize"}}
	status, doc = env.raw(t, http.MethodGet, "/common/discovery/instance", q, "")
	if status != http.StatusOK || doc["tenant_discovery_endpoint"] != env.srv.URL()+"/"+tenant+"/v2.0/.well-known/openid-configuration" {
		t.Errorf("instance discovery: %d %v", status, doc)
	}

	post := func(form url.Values) (int, map[string]any) {
		t.Helper()
		resp, err := env.emu.TestHTTPClient().PostForm(env.srv.URL()+"/"+tenant+"/oauth2/v2.0/token", form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = jsonDecode(resp.Body, &out)
		return resp.StatusCode, out
	}
	cfg := env.emu.Config()
	good := url.Values{"grant_type": {"client_credentials"}, "client_id": {cfg.ClientID}, "client_secret": {cfg.ClientSecret},
		"scope": {"https://management.azure.com//.default"}}
	status, tok := post(good)
	if status != http.StatusOK || tok["token_type"] != "Bearer" || tok["expires_in"] != float64(3599) || tok["access_token"] == "" {
		t.Fatalf("token: %d %v", status, tok)
	}
	if err := env.listAllWith(staticToken{token: tok["access_token"].(string)}); err != nil {
		t.Fatal(err)
	}

	bad := url.Values{}
	for k, v := range good {
		bad[k] = v
	}
	bad.Set("scope", "https://management.azure.com/user_impersonation")
	status, doc = post(bad)
	if status != http.StatusBadRequest || doc["error"] != "invalid_scope" || doc["error_codes"].([]any)[0] != float64(70011) {
		t.Errorf("bad scope: %d %v", status, doc)
	}
	bad.Set("scope", good.Get("scope"))
	bad.Set("grant_type", "password")
	if status, doc = post(bad); status != http.StatusBadRequest || doc["error"] != "unsupported_grant_type" {
		t.Errorf("bad grant: %d %v", status, doc)
	}
	for _, k := range []string{"timestamp", "trace_id", "correlation_id"} {
		if doc[k] == nil {
			t.Errorf("error body lacks %s: %v", k, doc)
		}
	}
}

// AD FS (tenantId "adfs", what Azure Stack Hub uses): MSAL reads
// /adfs/.well-known/openid-configuration and sends its scope= form to
// /adfs/oauth2/token, which AD FS accepts; the v1 resource= form still
// works.
func TestADFSClientSecret(t *testing.T) {
	env := newTestEnv(t, Config{TenantID: "adfs"})
	cfg := env.emu.Config()
	opts := &azidentity.ClientSecretCredentialOptions{ClientOptions: env.clientOptions(), DisableInstanceDiscovery: true}
	cred, err := azidentity.NewClientSecretCredential("adfs", cfg.ClientID, cfg.ClientSecret, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.listAllWith(cred); err != nil {
		t.Fatalf("ARM call with an AD FS token: %v", err)
	}
}
