package azure

import (
	"crypto"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1" //nolint:gosec // x5t is a SHA-1 thumbprint by definition (RFC 7515)
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Azure AD (Entra ID), as azidentity and MSAL use it for a custom cloud
// whose ActiveDirectoryAuthorityHost is the emulator's base URL:
//
//	GET  /{tenant}/v2.0/.well-known/openid-configuration   OIDC metadata (authority resolution)
//	GET  /common/discovery/instance                          instance discovery
//	POST /{tenant}/oauth2/v2.0/token                         client credentials: secret, certificate or federated assertion
//	POST /{tenant}/oauth2/token                              the same on the v1 endpoint (resource= instead of scope=)
//	GET  /msi/token                                          App Service managed identity (IDENTITY_ENDPOINT)
//
// Access tokens are JWT-shaped but opaque to clients (neither MSAL nor
// azidentity parses them); ARM accepts exactly the ones issued here that
// have not expired.

// adfsTenant is the tenant of an AD FS authority (Azure Stack Hub's
// identity system): configure the emulator's TenantID as "adfs".
const adfsTenant = "adfs"

// Azure AD operation names.
const (
	opAADToken             = "aad:Token"
	opAADOpenIDConfig      = "aad:OpenIDConfiguration"
	opAADInstanceDiscovery = "aad:InstanceDiscovery"
	opAADManagedIdentity   = "aad:ManagedIdentityToken"
)

// ManagedIdentityPath is where the App Service managed identity endpoint
// is mounted: set IDENTITY_ENDPOINT to the server's URL plus this path and
// IDENTITY_HEADER to ManagedIdentityHeader().
const ManagedIdentityPath = "/msi/token"

// SystemAssignedClientID is the client ID of the system-assigned managed
// identity, the one the managed identity endpoint answers for when the
// request names none.
const SystemAssignedClientID = "5d1e4a47-0000-0000-0000-00000000005a"

// managedIdentityHeader is the fixed X-IDENTITY-HEADER secret.
const managedIdentityHeader = "cloudsim-managed-identity-header" //nolint:gosec // a test value

const (
	clientAssertionJWT     = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
	appServiceMIAPIVersion = "2019-08-01"
)

// aadState is what Azure AD knows besides the configured service
// principal: more secrets, certificates, federated credentials and
// managed identities (e.mu guards it; maps are made on first use).
type aadState struct {
	secrets   map[string]string
	certs     map[string][]*x509.Certificate
	federated map[string][]string
	managed   map[string]bool
	key       []byte
}

func (e *Emulator) aadInit() {
	a := &e.aad
	if a.secrets == nil {
		a.secrets = map[string]string{strings.ToLower(e.cfg.ClientID): e.cfg.ClientSecret}
		a.certs = map[string][]*x509.Certificate{}
		a.federated = map[string][]string{}
		a.managed = map[string]bool{}
		a.key = make([]byte, 32)
		_, _ = rand.Read(a.key)
	}
}

// ManagedIdentityHeader is the secret the managed identity endpoint
// expects in X-IDENTITY-HEADER (the value of IDENTITY_HEADER).
func (e *Emulator) ManagedIdentityHeader() string { return managedIdentityHeader }

// RegisterClientSecret adds an application with a client secret (the
// configured ClientID and ClientSecret are always registered).
func (e *Emulator) RegisterClientSecret(clientID, secret string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.aadInit()
	e.aad.secrets[strings.ToLower(clientID)] = secret
}

// RegisterClientCertificate adds a certificate credential to the
// application clientID: assertions signed with its key and naming it by
// thumbprint (x5t or x5t#S256) authenticate the application.
func (e *Emulator) RegisterClientCertificate(clientID string, cert *x509.Certificate) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.aadInit()
	id := strings.ToLower(clientID)
	e.aad.certs[id] = append(e.aad.certs[id], cert)
}

// RegisterFederatedToken adds a federated identity credential to the
// application clientID: an assertion equal to token (a Kubernetes
// service-account token, as workload identity reads it from
// AZURE_FEDERATED_TOKEN_FILE) authenticates the application.
func (e *Emulator) RegisterFederatedToken(clientID, token string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.aadInit()
	id := strings.ToLower(clientID)
	e.aad.federated[id] = append(e.aad.federated[id], token)
}

// RegisterManagedIdentity adds a user-assigned managed identity the
// managed identity endpoint issues tokens for (client_id=clientID).
func (e *Emulator) RegisterManagedIdentity(clientID string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.aadInit()
	e.aad.managed[strings.ToLower(clientID)] = true
}

// IssueToken issues an ARM access token for the configured service
// principal directly, for tests that use a static credential.
func (e *Emulator) IssueToken() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	tok, _ := e.issueToken(e.cfg.ClientID, "https://management.azure.com/")
	return tok
}

// ExpireTokens makes every access token issued so far expired, so the
// next ARM call with one answers 401 ExpiredAuthenticationToken.
func (e *Emulator) ExpireTokens() {
	e.mu.Lock()
	defer e.mu.Unlock()
	past := e.cfg.Now().Add(-time.Second)
	for tok, exp := range e.tokens {
		if exp.After(past) {
			e.tokens[tok] = past
		}
	}
}

// issueToken makes an access token for clientID and audience (e.mu held).
func (e *Emulator) issueToken(clientID, audience string) (string, time.Time) {
	e.aadInit()
	now := e.cfg.Now()
	exp := now.Add(e.cfg.TokenLifetime)
	if len(e.tokens) > 4096 {
		for tok, t := range e.tokens {
			if now.Sub(t) > time.Hour {
				delete(e.tokens, tok)
			}
		}
	}
	jti := make([]byte, 16)
	_, _ = rand.Read(jti)
	tid := e.cfg.TenantID
	claims := map[string]any{
		"aud": audience, "iss": "https://sts.windows.net/" + tid + "/", "tid": tid,
		"appid": clientID, "oid": guidOf("oid:" + strings.ToLower(clientID)), "sub": guidOf("oid:" + strings.ToLower(clientID)),
		"iat": now.Unix(), "nbf": now.Unix(), "exp": exp.Unix(), "idtyp": "app", "ver": "1.0",
		"uti": base64.RawURLEncoding.EncodeToString(jti),
	}
	tok := signHS256(e.aad.key, map[string]any{"typ": "JWT", "alg": "HS256", "kid": "cloudsim"}, claims)
	e.tokens[tok] = exp
	return tok, exp
}

func signHS256(key []byte, header, claims map[string]any) string {
	h, _ := json.Marshal(header)
	c, _ := json.Marshal(claims)
	msg := base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(msg))
	return msg + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// guidOf derives a stable GUID from s.
func guidOf(s string) string {
	h := sha256.Sum256([]byte(s))
	x := hex.EncodeToString(h[:16])
	return x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
}

// randomGUID is a random GUID, for trace and correlation IDs.
func randomGUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	x := hex.EncodeToString(b)
	return x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
}

// authenticate checks an ARM request's bearer token (e.mu held): nil, or
// ARM's 401 (AuthenticationFailed, InvalidAuthenticationToken,
// ExpiredAuthenticationToken).
func (e *Emulator) authenticate(r *http.Request, now time.Time) *armError {
	h := r.Header.Get("Authorization")
	if h == "" {
		return &armError{Status: http.StatusUnauthorized, Code: "AuthenticationFailed", Message: "Authentication failed. The 'Authorization' header is missing."}
	}
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return &armError{Status: http.StatusUnauthorized, Code: "AuthenticationFailed", Message: "Authentication failed. The 'Authorization' header is provided in an invalid format."}
	}
	exp, ok := e.tokens[strings.TrimSpace(tok)]
	if !ok {
		return &armError{Status: http.StatusUnauthorized, Code: "InvalidAuthenticationToken", Message: "The access token is invalid."}
	}
	if !now.Before(exp) {
		const netTime = "1/2/2006 3:04:05 PM"
		return &armError{Status: http.StatusUnauthorized, Code: "ExpiredAuthenticationToken",
			Message: fmt.Sprintf("The access token expiry UTC time '%s' is earlier than current UTC time '%s'.", exp.UTC().Format(netTime), now.UTC().Format(netTime))}
	}
	return nil
}

// aadOperation names Azure AD requests; ok is false for anything else
// (ARM paths start with /subscriptions/).
func aadOperation(r *http.Request) (op string, ok bool) {
	path := strings.Trim(r.URL.Path, "/")
	if strings.EqualFold(path, strings.Trim(ManagedIdentityPath, "/")) {
		return opAADManagedIdentity, true
	}
	segs := strings.Split(path, "/")
	if len(segs) < 2 || strings.EqualFold(segs[0], "subscriptions") || strings.EqualFold(segs[0], "admin") {
		return "", false
	}
	rest := strings.ToLower(strings.Join(segs[1:], "/"))
	switch {
	case strings.EqualFold(segs[0], "common") && rest == "discovery/instance":
		return opAADInstanceDiscovery, true
	case rest == "v2.0/.well-known/openid-configuration" || rest == ".well-known/openid-configuration":
		return opAADOpenIDConfig, true
	case rest == "oauth2/v2.0/token" || rest == "oauth2/token":
		return opAADToken, true
	}
	return "", false
}

// serveAAD answers an Azure AD request.
func (e *Emulator) serveAAD(w http.ResponseWriter, r *http.Request, op string) {
	switch op {
	case opAADOpenIDConfig:
		e.serveOpenIDConfig(w, r)
	case opAADInstanceDiscovery:
		e.serveInstanceDiscovery(w, r)
	case opAADToken:
		e.serveToken(w, r)
	case opAADManagedIdentity:
		e.serveManagedIdentity(w, r)
	default:
		writeAADError(w, http.StatusNotFound, "invalid_request", 900561, "The endpoint is not supported.")
	}
}

// writeAADError writes Azure AD's OAuth error body.
func writeAADError(w http.ResponseWriter, status int, code string, aadsts int, desc string) {
	trace, corr := randomGUID(), randomGUID()
	ts := time.Now().UTC().Format("2006-01-02 15:04:05Z")
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("x-ms-request-id", trace)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"error":             code,
		"error_description": fmt.Sprintf("AADSTS%d: %s Trace ID: %s Correlation ID: %s Timestamp: %s", aadsts, desc, trace, corr, ts),
		"error_codes":       []int{aadsts},
		"timestamp":         ts,
		"trace_id":          trace,
		"correlation_id":    corr,
		"error_uri":         "https://login.microsoftonline.com/error?code=" + strconv.Itoa(aadsts),
	})
}

func writeAADJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store, no-cache")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(v)
}

func aadBaseURL(r *http.Request) string {
	if r.TLS == nil {
		return "http://" + r.Host
	}
	return "https://" + r.Host
}

func tenantNotFound(tenant string) string {
	return fmt.Sprintf("Tenant '%s' not found. Check to make sure you have the correct tenant ID and are signing into the correct cloud. Check with your subscription administrator, this may happen if there are no active subscriptions for the tenant.", tenant)
}

func (e *Emulator) serveOpenIDConfig(w http.ResponseWriter, r *http.Request) {
	tenant := strings.Split(strings.Trim(r.URL.Path, "/"), "/")[0]
	if !strings.EqualFold(tenant, e.cfg.TenantID) {
		writeAADError(w, http.StatusBadRequest, "invalid_tenant", 90002, tenantNotFound(tenant))
		return
	}
	base, tid := aadBaseURL(r), e.cfg.TenantID
	v1 := !strings.Contains(r.URL.Path, "/v2.0/")
	oauth, issuer := base+"/"+tid+"/oauth2/v2.0/", base+"/"+tid+"/v2.0"
	switch {
	case strings.EqualFold(tid, adfsTenant):
		// AD FS: one authority, its own issuer.
		oauth, issuer = base+"/adfs/oauth2/", base+"/adfs"
	case v1:
		oauth, issuer = base+"/"+tid+"/oauth2/", "https://sts.windows.net/"+tid+"/"
	}
	writeAADJSON(w, map[string]any{
		"token_endpoint":                        oauth + "token",
		"token_endpoint_auth_methods_supported": []string{"client_secret_post", "private_key_jwt", "client_secret_basic"},
		"jwks_uri":                              base + "/" + tid + "/discovery/v2.0/keys",
		"response_modes_supported":              []string{"query", "fragment", "form_post"},
		"subject_types_supported":               []string{"pairwise"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"response_types_supported":              []string{"code", "id_token", "code id_token", "id_token token"},
		"scopes_supported":                      []string{"openid", "profile", "email", "offline_access"},
		"issuer":                                issuer,
		"request_uri_parameter_supported":       false,
		"userinfo_endpoint":                     "https://graph.microsoft.com/oidc/userinfo",
		"authorization_endpoint":                oauth + "authorize",
		"device_authorization_endpoint":         oauth + "devicecode",
		"http_logout_supported":                 true,
		"frontchannel_logout_supported":         true,
		"end_session_endpoint":                  oauth + "logout",
		"claims_supported":                      []string{"sub", "iss", "cloud_instance_name", "cloud_instance_host_name", "cloud_graph_host_name", "msgraph_host", "aud", "exp", "iat", "auth_time", "acr", "nonce", "preferred_username", "name", "tid", "ver", "at_hash", "c_hash", "email"},
		"kerberos_endpoint":                     base + "/" + tid + "/kerberos",
		"tenant_region_scope":                   "NA",
		"cloud_instance_name":                   r.Host,
		"cloud_graph_host_name":                 "graph.windows.net",
		"msgraph_host":                          "graph.microsoft.com",
		"rbac_url":                              "https://pas.windows.net",
	})
}

func (e *Emulator) serveInstanceDiscovery(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	tenant := "common"
	if ae := q.Get("authorization_endpoint"); ae != "" {
		u, err := url.Parse(ae)
		if err != nil || u.Host == "" {
			writeAADError(w, http.StatusBadRequest, "invalid_instance", 50049, "Unknown or invalid instance.")
			return
		}
		if !strings.EqualFold(u.Host, r.Host) {
			writeAADError(w, http.StatusBadRequest, "invalid_instance", 50049, "Unknown or invalid instance.")
			return
		}
		if segs := strings.Split(strings.Trim(u.Path, "/"), "/"); segs[0] != "" {
			tenant = segs[0]
		}
	}
	writeAADJSON(w, map[string]any{
		"tenant_discovery_endpoint": aadBaseURL(r) + "/" + tenant + "/v2.0/.well-known/openid-configuration",
		"api-version":               "1.1",
		"metadata": []map[string]any{{
			"preferred_network": r.Host, "preferred_cache": r.Host, "aliases": []string{r.Host},
		}},
	})
}

// serveToken is the token endpoint's client credentials grant.
func (e *Emulator) serveToken(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeAADError(w, http.StatusBadRequest, "invalid_request", 900561, fmt.Sprintf("The endpoint only accepts POST, OPTIONS requests. Received a %s request.", r.Method))
		return
	}
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	tenant, v1 := segs[0], !strings.Contains(r.URL.Path, "/v2.0/")
	if err := r.ParseForm(); err != nil {
		writeAADError(w, http.StatusBadRequest, "invalid_request", 900144, "The request body must contain the following parameter: 'grant_type'.")
		return
	}
	f := r.PostForm
	if !strings.EqualFold(tenant, e.cfg.TenantID) {
		writeAADError(w, http.StatusBadRequest, "invalid_request", 90002, tenantNotFound(tenant))
		return
	}
	grant := f.Get("grant_type")
	switch grant {
	case "":
		writeAADError(w, http.StatusBadRequest, "invalid_request", 900144, "The request body must contain the following parameter: 'grant_type'.")
		return
	case "client_credentials":
	default:
		writeAADError(w, http.StatusBadRequest, "unsupported_grant_type", 70003, fmt.Sprintf("The app requested an unsupported grant type '%s'.", grant))
		return
	}
	clientID := f.Get("client_id")
	if clientID == "" {
		writeAADError(w, http.StatusBadRequest, "invalid_request", 900144, "The request body must contain the following parameter: 'client_id'.")
		return
	}
	var audience string
	// AD FS (tenant "adfs", Azure Stack Hub's identity system) serves
	// its v1-shaped token endpoint with either form: MSAL sends scope=.
	adfsScope := v1 && strings.EqualFold(tenant, adfsTenant) && f.Get("resource") == "" && f.Get("scope") != ""
	if v1 && !adfsScope {
		audience = f.Get("resource")
		if audience == "" {
			writeAADError(w, http.StatusBadRequest, "invalid_request", 900144, "The request body must contain the following parameter: 'resource'.")
			return
		}
	} else {
		scope := f.Get("scope")
		if scope == "" {
			writeAADError(w, http.StatusBadRequest, "invalid_request", 900144, "The request body must contain the following parameter: 'scope'.")
			return
		}
		// MSAL adds the OpenID Connect scopes to every request; AAD
		// ignores them for client credentials.
		var scopes []string
		for _, s := range strings.Fields(scope) {
			switch s {
			case "openid", "offline_access", "profile", "email":
			default:
				scopes = append(scopes, s)
			}
		}
		if len(scopes) != 1 || !strings.HasSuffix(scopes[0], "/.default") || scopes[0] == "/.default" {
			writeAADError(w, http.StatusBadRequest, "invalid_scope", 70011, fmt.Sprintf("The provided request must include a 'scope' input parameter. The provided value for the input parameter 'scope' is not valid. The scope %s is not valid. Client credential flows must have a scope value with /.default suffixed to the resource identifier (application ID URI).", scope))
			return
		}
		audience = strings.TrimSuffix(scopes[0], "/.default")
		if strings.HasSuffix(audience, "/") {
			// "https://management.azure.com//.default" asks for the
			// audience with its trailing slash.
			audience = strings.TrimSuffix(audience, "/") + "/"
		}
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	e.aadInit()
	id := strings.ToLower(clientID)
	secret, hasSecret := e.aad.secrets[id]
	if !hasSecret && len(e.aad.certs[id]) == 0 && len(e.aad.federated[id]) == 0 {
		writeAADError(w, http.StatusBadRequest, "unauthorized_client", 700016, fmt.Sprintf("Application with identifier '%s' was not found in the directory '%s'. This can happen if the application has not been installed by the administrator of the tenant or consented to by any user in the tenant. You may have sent your authentication request to the wrong tenant.", clientID, e.cfg.TenantID))
		return
	}
	switch {
	case f.Has("client_secret"):
		if !hasSecret || !hmac.Equal([]byte(f.Get("client_secret")), []byte(secret)) {
			writeAADError(w, http.StatusUnauthorized, "invalid_client", 7000215, fmt.Sprintf("Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app '%s'.", clientID))
			return
		}
	case f.Has("client_assertion"):
		if at := f.Get("client_assertion_type"); at != clientAssertionJWT {
			writeAADError(w, http.StatusBadRequest, "invalid_request", 50027, fmt.Sprintf("Invalid client_assertion_type '%s'; expected '%s'.", at, clientAssertionJWT))
			return
		}
		if aerr := e.checkAssertion(r, tenant, id, f.Get("client_assertion")); aerr != nil {
			writeAADError(w, aerr.status, aerr.code, aerr.aadsts, aerr.desc)
			return
		}
	default:
		writeAADError(w, http.StatusUnauthorized, "invalid_client", 7000218, "The request body must contain the following parameter: 'client_assertion' or 'client_secret'.")
		return
	}
	tok, exp := e.issueToken(clientID, audience)
	secs := int(e.cfg.TokenLifetime / time.Second)
	if secs >= 60 {
		secs-- // AAD answers 3599 for an hour
	}
	secs = max(secs, 1)
	out := map[string]any{"token_type": "Bearer", "expires_in": secs, "ext_expires_in": secs, "access_token": tok}
	if v1 {
		now := e.cfg.Now()
		out["expires_on"] = strconv.FormatInt(exp.Unix(), 10)
		out["not_before"] = strconv.FormatInt(now.Unix(), 10)
		out["resource"] = audience
		out["expires_in"], out["ext_expires_in"] = strconv.Itoa(secs), strconv.Itoa(secs)
	}
	writeAADJSON(w, out)
}

type aadErr struct {
	status int
	code   string
	aadsts int
	desc   string
}

// checkAssertion verifies a client assertion (e.mu held): a JWT naming a
// registered certificate by thumbprint and signed with its key, or a
// federated token registered for the client.
func (e *Emulator) checkAssertion(r *http.Request, tenant, clientID, assertion string) *aadErr {
	invalid := func(aadsts int, desc string) *aadErr {
		return &aadErr{status: http.StatusUnauthorized, code: "invalid_client", aadsts: aadsts, desc: desc}
	}
	parts := strings.Split(assertion, ".")
	var header, claims map[string]any
	if len(parts) == 3 {
		header, claims = decodeJWTPart(parts[0]), decodeJWTPart(parts[1])
	}
	now := e.cfg.Now()
	thumbS256, _ := header["x5t#S256"].(string)
	thumb1, _ := header["x5t"].(string)
	if header == nil || claims == nil || (thumbS256 == "" && thumb1 == "") {
		// Not a certificate assertion: a federated credential.
		if slices.Contains(e.aad.federated[clientID], assertion) {
			if exp, ok := claims["exp"].(float64); ok && now.Unix() > int64(exp) {
				return invalid(700024, "Client assertion is not within its valid time range.")
			}
			return nil
		}
		iss, _ := claims["iss"].(string)
		sub, _ := claims["sub"].(string)
		aud := fmt.Sprint(claims["aud"])
		if claims == nil {
			return invalid(50027, "JWT token is invalid or malformed.")
		}
		return &aadErr{status: http.StatusBadRequest, code: "invalid_request", aadsts: 70021,
			desc: fmt.Sprintf("No matching federated identity record found for presented assertion. Assertion Issuer: '%s'. Assertion Subject: '%s'. Assertion Audience: '%s'.", iss, sub, aud)}
	}
	var cert *x509.Certificate
	for _, c := range e.aad.certs[clientID] {
		s256, s1 := sha256.Sum256(c.Raw), sha1.Sum(c.Raw) //nolint:gosec // x5t
		if (thumbS256 != "" && thumbprintIs(thumbS256, s256[:])) || (thumb1 != "" && thumbprintIs(thumb1, s1[:])) {
			cert = c
			break
		}
	}
	if cert == nil {
		shown := thumbS256
		if shown == "" {
			shown = thumb1
		}
		return invalid(700027, fmt.Sprintf("The certificate with identifier used to sign the client assertion is not registered on application. [Reason - The key was not found., Thumbprint of key used by client: '%s'.]", shown))
	}
	pub, ok := cert.PublicKey.(*rsa.PublicKey)
	if !ok {
		return invalid(700027, "Client assertion failed signature validation: the certificate's key is not an RSA key.")
	}
	sig, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[2], "="))
	if err != nil {
		return invalid(50027, "JWT token is invalid or malformed.")
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	switch header["alg"] {
	case "PS256":
		err = rsa.VerifyPSS(pub, crypto.SHA256, digest[:], sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthAuto})
	case "RS256":
		err = rsa.VerifyPKCS1v15(pub, crypto.SHA256, digest[:], sig)
	default:
		return invalid(5002738, fmt.Sprintf("The JWT signing algorithm '%v' is not supported.", header["alg"]))
	}
	if err != nil {
		return invalid(7000274, "Key was found, but use of the key to verify the signature failed.")
	}
	if iss, _ := claims["iss"].(string); !strings.EqualFold(iss, clientID) {
		return invalid(700021, "Client assertion application identifier doesn't match 'client_id' parameter.")
	}
	if sub, _ := claims["sub"].(string); !strings.EqualFold(sub, clientID) {
		return invalid(700021, "Client assertion application identifier doesn't match 'client_id' parameter.")
	}
	exp, _ := claims["exp"].(float64)
	nbf, hasNBF := claims["nbf"].(float64)
	if exp == 0 || now.Unix() > int64(exp)+300 || (hasNBF && now.Unix()+300 < int64(nbf)) {
		return invalid(700024, "Client assertion is not within its valid time range.")
	}
	aud, _ := claims["aud"].(string)
	base, tid := strings.ToLower(aadBaseURL(r)), strings.ToLower(tenant)
	switch strings.TrimSuffix(strings.ToLower(aud), "/") {
	case base + "/" + tid + "/oauth2/v2.0/token", base + "/" + tid + "/oauth2/token", base + "/" + tid + "/v2.0":
	default:
		return invalid(700212, fmt.Sprintf("The client assertion's audience '%s' is not the token endpoint of tenant '%s'.", aud, tenant))
	}
	return nil
}

func decodeJWTPart(s string) map[string]any {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}

// thumbprintIs compares a thumbprint header (base64url per RFC 7515;
// MSAL writes standard base64) with a digest.
func thumbprintIs(header string, digest []byte) bool {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(header); err == nil {
			return hmac.Equal(b, digest)
		}
	}
	return strings.EqualFold(header, hex.EncodeToString(digest))
}

// serveManagedIdentity is App Service's managed identity endpoint, API
// version 2019-08-01.
func (e *Emulator) serveManagedIdentity(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, msg string) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"statusCode": status, "message": msg, "correlationId": randomGUID()})
	}
	if r.Method != http.MethodGet {
		fail(http.StatusMethodNotAllowed, "The requested resource does not support http method '"+r.Method+"'.")
		return
	}
	if r.Header.Get("X-IDENTITY-HEADER") != managedIdentityHeader {
		fail(http.StatusUnauthorized, "The X-IDENTITY-HEADER header is missing or does not match IDENTITY_HEADER.")
		return
	}
	q := r.URL.Query()
	if v := q.Get("api-version"); v != appServiceMIAPIVersion {
		fail(http.StatusBadRequest, fmt.Sprintf("The api-version '%s' is not supported; use %s.", v, appServiceMIAPIVersion))
		return
	}
	resource := q.Get("resource")
	if resource == "" {
		fail(http.StatusBadRequest, "The resource parameter is required.")
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.aadInit()
	clientID := SystemAssignedClientID
	switch {
	case q.Get("object_id") != "" || q.Get("mi_res_id") != "" || q.Get("principal_id") != "":
		fail(http.StatusBadRequest, "Unable to load the proper Managed Identity.")
		return
	case q.Get("client_id") != "":
		if !e.aad.managed[strings.ToLower(q.Get("client_id"))] {
			fail(http.StatusBadRequest, "Unable to load the proper Managed Identity.")
			return
		}
		clientID = q.Get("client_id")
	}
	tok, exp := e.issueToken(clientID, resource)
	writeAADJSON(w, map[string]any{
		"access_token": tok,
		"expires_on":   strconv.FormatInt(exp.Unix(), 10),
		"resource":     resource,
		"token_type":   "Bearer",
		"client_id":    clientID,
	})
}

// parseCertificatePEM reads the first certificate of a PEM bundle.
func parseCertificatePEM(s string) (*x509.Certificate, error) {
	rest := []byte(s)
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return nil, errors.New("certificatePem holds no PEM CERTIFICATE block")
		}
		if b.Type == "CERTIFICATE" {
			return x509.ParseCertificate(b.Bytes)
		}
	}
}
