package openstack_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"

	cloudsimopenstack "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

func TestPasswordAuthAndCatalog(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	p := e.provider(t)
	res, okType := p.GetAuthResult().(tokens.CreateResult)
	if !okType {
		t.Fatalf("auth result %T", p.GetAuthResult())
	}
	tok, err := res.ExtractToken()
	ok(t, err)
	if tok.ID == "" || p.Token() != tok.ID || time.Until(tok.ExpiresAt) < 50*time.Minute {
		t.Errorf("token %q expires %v", tok.ID, tok.ExpiresAt)
	}
	proj, err := res.ExtractProject()
	ok(t, err)
	if proj.ID != e.fx.ProjectID || proj.Name != "k8s" || proj.Domain.ID != "default" {
		t.Errorf("project %+v", proj)
	}
	u, err := res.ExtractUser()
	ok(t, err)
	if u.ID != e.fx.UserID || u.Name != "ccm" || u.Domain.Name != "Default" {
		t.Errorf("user %+v", u)
	}
	roles, err := res.ExtractRoles()
	ok(t, err)
	if len(roles) != 2 || roles[0].Name != "member" || roles[1].Name != "reader" {
		t.Errorf("roles %+v", roles)
	}
	var raw struct {
		Token struct {
			Methods  []string `json:"methods"`
			IssuedAt string   `json:"issued_at"`
		} `json:"token"`
	}
	ok(t, res.ExtractInto(&raw.Token))
	if !slices.Equal(raw.Token.Methods, []string{"password"}) || !strings.HasSuffix(raw.Token.IssuedAt, "Z") {
		t.Errorf("methods %v issued_at %q", raw.Token.Methods, raw.Token.IssuedAt)
	}

	cat, err := res.ExtractServiceCatalog()
	ok(t, err)
	want := map[string]string{
		"identity": "/identity", "compute": "/compute/v2.1", "network": "/network", "load-balancer": "/load-balancer",
	}
	for _, entry := range cat.Entries {
		path, known := want[entry.Type]
		if !known {
			t.Errorf("unexpected catalog entry %q", entry.Type)
			continue
		}
		delete(want, entry.Type)
		var ifaces []string
		for _, ep := range entry.Endpoints {
			ifaces = append(ifaces, ep.Interface)
			if ep.URL != e.srv.URL()+path || ep.Region != "RegionOne" || ep.RegionID != "RegionOne" || ep.ID == "" {
				t.Errorf("%s endpoint %+v", entry.Type, ep)
			}
		}
		if slices.Sort(ifaces); !slices.Equal(ifaces, []string{"admin", "internal", "public"}) {
			t.Errorf("%s interfaces %v", entry.Type, ifaces)
		}
	}
	if len(want) > 0 {
		t.Errorf("catalog lacks %v", want)
	}

	// gophercloud finds every service's endpoint for each interface.
	for _, avail := range []gophercloud.Availability{gophercloud.AvailabilityPublic, gophercloud.AvailabilityInternal, gophercloud.AvailabilityAdmin} {
		c, err := openstack.NewComputeV2(p, gophercloud.EndpointOpts{Region: "RegionOne", Availability: avail})
		ok(t, err)
		if c.Endpoint != e.srv.URL()+"/compute/v2.1/" {
			t.Errorf("compute endpoint %q", c.Endpoint)
		}
	}
	if _, err := openstack.NewComputeV2(p, gophercloud.EndpointOpts{Region: "RegionTwo"}); err == nil {
		t.Error("found a compute endpoint in RegionTwo")
	}
}

func TestPasswordAuthVariants(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	base := e.passwordOpts()
	for name, opts := range map[string]gophercloud.AuthOptions{
		"user by ID, project by ID": {
			IdentityEndpoint: base.IdentityEndpoint, UserID: e.fx.UserID, Password: e.fx.Password,
			Scope: &gophercloud.AuthScope{ProjectID: e.fx.ProjectID},
		},
		"user domain by ID, project domain by name": {
			IdentityEndpoint: base.IdentityEndpoint, Username: e.fx.Username, DomainID: e.fx.DomainID, Password: e.fx.Password,
			Scope: &gophercloud.AuthScope{ProjectName: e.fx.ProjectName, DomainName: e.fx.DomainName},
		},
		"no scope: the user's default project": {
			IdentityEndpoint: base.IdentityEndpoint, Username: e.fx.Username, DomainName: e.fx.DomainName, Password: e.fx.Password,
		},
		"versionless endpoint: discovery picks v3": {
			IdentityEndpoint: e.srv.URL() + "/identity/", Username: e.fx.Username, DomainName: e.fx.DomainName, Password: e.fx.Password,
			Scope: &gophercloud.AuthScope{ProjectID: e.fx.ProjectID},
		},
	} {
		t.Run(name, func(t *testing.T) {
			p, err := openstack.AuthenticatedClient(t.Context(), opts)
			ok(t, err)
			proj, err := p.GetAuthResult().(tokens.CreateResult).ExtractProject()
			ok(t, err)
			if proj == nil || proj.ID != e.fx.ProjectID {
				t.Fatalf("project %+v", proj)
			}
			_, err = servers.List(computeFor(t, p, ""), nil).AllPages(t.Context())
			ok(t, err)
		})
	}
	if n := e.srv.CallCount("keystone:GetVersions"); n != 1 {
		t.Errorf("%d version discoveries, want 1 (for the versionless endpoint)", n)
	}
}

func TestApplicationCredentialAuth(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	endpoint := e.fx.IdentityEndpoint(e.srv.URL())
	for name, opts := range map[string]gophercloud.AuthOptions{
		"by ID": {IdentityEndpoint: endpoint, ApplicationCredentialID: e.fx.AppCredID, ApplicationCredentialSecret: e.fx.AppCredSecret},
		"by name and user name": {
			IdentityEndpoint: endpoint, ApplicationCredentialName: e.fx.AppCredName, ApplicationCredentialSecret: e.fx.AppCredSecret,
			Username: e.fx.Username, DomainName: e.fx.DomainName,
		},
		"by name and user ID": {
			IdentityEndpoint: endpoint, ApplicationCredentialName: e.fx.AppCredName, ApplicationCredentialSecret: e.fx.AppCredSecret,
			UserID: e.fx.UserID,
		},
	} {
		t.Run(name, func(t *testing.T) {
			p, err := openstack.AuthenticatedClient(t.Context(), opts)
			ok(t, err)
			res := p.GetAuthResult().(tokens.CreateResult)
			var tok struct {
				Methods []string `json:"methods"`
				AppCred struct {
					ID   string `json:"id"`
					Name string `json:"name"`
				} `json:"application_credential"`
				Project struct {
					ID string `json:"id"`
				} `json:"project"`
			}
			ok(t, res.ExtractInto(&tok))
			if !slices.Equal(tok.Methods, []string{"application_credential"}) || tok.AppCred.ID != e.fx.AppCredID ||
				tok.AppCred.Name != e.fx.AppCredName || tok.Project.ID != e.fx.ProjectID {
				t.Fatalf("token %+v", tok)
			}
			_, err = servers.List(computeFor(t, p, ""), nil).AllPages(t.Context())
			ok(t, err)
		})
	}
}

// Wrong credentials are 401s with Keystone's error body, which
// gophercloud classifies by status, and no secret shows anywhere.
func TestAuthFailures(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	endpoint := e.fx.IdentityEndpoint(e.srv.URL())
	const wrong = "not-the-password-7f3a"
	cases := []struct {
		name   string
		opts   gophercloud.AuthOptions
		status int
	}{
		{"wrong password", gophercloud.AuthOptions{IdentityEndpoint: endpoint, Username: e.fx.Username, DomainName: "Default", Password: wrong}, 401},
		{"unknown user", gophercloud.AuthOptions{IdentityEndpoint: endpoint, Username: "nobody", DomainName: "Default", Password: e.fx.Password}, 401},
		{"unknown domain", gophercloud.AuthOptions{IdentityEndpoint: endpoint, Username: e.fx.Username, DomainName: "Elsewhere", Password: e.fx.Password}, 401},
		{"unknown project", gophercloud.AuthOptions{
			IdentityEndpoint: endpoint, Username: e.fx.Username, DomainName: "Default", Password: e.fx.Password,
			Scope: &gophercloud.AuthScope{ProjectName: "nope", DomainID: "default"},
		}, 401},
		{"domain scope without a domain role", gophercloud.AuthOptions{
			IdentityEndpoint: endpoint, Username: e.fx.Username, DomainName: "Default", Password: e.fx.Password,
			Scope: &gophercloud.AuthScope{DomainID: "default"},
		}, 401},
		{"wrong application credential secret", gophercloud.AuthOptions{
			IdentityEndpoint: endpoint, ApplicationCredentialID: e.fx.AppCredID, ApplicationCredentialSecret: wrong,
		}, 401},
		{"unknown application credential ID", gophercloud.AuthOptions{
			IdentityEndpoint: endpoint, ApplicationCredentialID: "0123456789abcdef0123456789abcdef", ApplicationCredentialSecret: wrong,
		}, 404},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := openstack.AuthenticatedClient(t.Context(), tc.opts)
			if !gophercloud.ResponseCodeIs(err, tc.status) {
				t.Fatalf("want %d, got %v", tc.status, err)
			}
			ce := codeError(t, err)
			key, fault := faultBody(t, ce.Body)
			if key != "error" || fault["code"] != float64(tc.status) || fault["title"] != http.StatusText(tc.status) || fault["message"] == "" {
				t.Errorf("body %s", ce.Body)
			}
			if tc.status == 401 {
				if fault["message"] != "The request you have made requires authentication." {
					t.Errorf("message %q", fault["message"])
				}
				if h := ce.ResponseHeader.Get("WWW-Authenticate"); h != `Keystone uri="`+endpoint+`"` {
					t.Errorf("WWW-Authenticate %q", h)
				}
			}
			for _, secret := range []string{wrong, e.fx.Password, e.fx.AppCredSecret} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error shows a secret: %v", err)
				}
			}
		})
	}

	// Application credentials carry their own scope and refuse another.
	w := e.do(t, "POST", "/identity/v3/auth/tokens", `{"auth": {"identity": {"methods": ["application_credential"],
		"application_credential": {"id": "`+e.fx.AppCredID+`", "secret": "`+e.fx.AppCredSecret+`"}},
		"scope": {"project": {"id": "`+e.fx.ProjectID+`"}}}}`)
	if w.status != 401 || !strings.Contains(w.raw, "Application credentials cannot request a scope.") {
		t.Errorf("scoped application credential: %d %s", w.status, w.raw)
	}
	w = e.do(t, "POST", "/identity/v3/auth/tokens", `{"auth": {"identity": {"methods": ["totp"], "totp": {}}}}`)
	if methods := w.body["error"].(map[string]any)["identity"].(map[string]any)["methods"]; fmt.Sprint(methods) != "[password token application_credential]" {
		t.Errorf("unsupported method: %s", w.raw)
	}
	// Malformed requests are 400s; unsupported methods 401s.
	for body, status := range map[string]int{
		`{"auth": {}}`: 400,
		`{"auth": {"identity": {"methods": []}}}`:                   400,
		`{"auth": {"identity": {"methods": ["password"]}}}`:         400,
		`{"auth": {"identity": {"methods": ["totp"], "totp": {}}}}`: 401,
		`not json`: 400,
	} {
		if w := e.do(t, "POST", "/identity/v3/auth/tokens", body); w.status != status || w.body["error"] == nil {
			t.Errorf("%s: %d %s, want %d", body, w.status, w.raw, status)
		}
	}
	for _, r := range e.srv.Resources() {
		b, _ := json.Marshal(r)
		for _, secret := range []string{e.fx.Password, e.fx.AppCredSecret} {
			if strings.Contains(string(b), secret) {
				t.Errorf("resource %s shows a secret", b)
			}
		}
	}
}

func TestTokenValidateAndRevoke(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	p := e.provider(t)
	id, err := openstack.NewIdentityV3(p, gophercloud.EndpointOpts{})
	ok(t, err)
	other := e.token(t)

	valid, err := tokens.Validate(t.Context(), id, other)
	ok(t, err)
	got := tokens.Get(t.Context(), id, other)
	user, err := got.ExtractUser()
	ok(t, err)
	if !valid || user.ID != e.fx.UserID || got.Header.Get("X-Subject-Token") != other {
		t.Fatalf("validate: %v, user %+v", valid, user)
	}
	ok(t, tokens.Revoke(t.Context(), id, other).Err)
	if valid, err := tokens.Validate(t.Context(), id, other); err != nil || valid {
		t.Fatalf("revoked token: valid %v, %v", valid, err)
	}
	w := e.do(t, "GET", "/identity/v3/auth/tokens", "", "X-Auth-Token", p.Token(), "X-Subject-Token", other)
	if w.status != 404 || strings.Contains(w.raw, other) {
		t.Errorf("revoked subject: %d %s", w.status, w.raw)
	}
	// A revoked token is refused by Nova as keystonemiddleware refuses
	// it, with Keystone's body and where to authenticate.
	w = e.do(t, "GET", "/compute/v2.1/servers", "", "X-Auth-Token", other)
	if w.status != 401 || w.header.Get("WWW-Authenticate") != `Keystone uri="`+e.srv.URL()+`/identity"` ||
		w.body["error"].(map[string]any)["title"] != "Unauthorized" {
		t.Errorf("revoked token at Nova: %d %v %s", w.status, w.header, w.raw)
	}
	if w := e.do(t, "GET", "/compute/v2.1/servers", ""); w.status != 401 {
		t.Errorf("no token: %d", w.status)
	}

	// A token from a token keeps the user, expiry and methods.
	w = e.do(t, "POST", "/identity/v3/auth/tokens", `{"auth": {"identity": {"methods": ["token"], "token": {"id": "`+p.Token()+`"}},
		"scope": {"project": {"id": "`+e.fx.ProjectID+`"}}}}`)
	if w.status != 201 || w.header.Get("X-Subject-Token") == "" {
		t.Fatalf("token method: %d %s", w.status, w.raw)
	}
	tok := w.body["token"].(map[string]any)
	if m := tok["methods"].([]any); len(m) != 2 || m[0] != "password" || m[1] != "token" {
		t.Errorf("methods %v", m)
	}
	orig, _ := p.GetAuthResult().(tokens.CreateResult).ExtractToken()
	if exp, _ := time.Parse(time.RFC3339Nano, tok["expires_at"].(string)); !exp.Equal(orig.ExpiresAt) {
		t.Errorf("rescoped token expires %v, original %v", exp, orig.ExpiresAt)
	}
}

// With a short token lifetime, a call after expiry is a 401 that
// gophercloud answers by authenticating again and retrying.
func TestTokenExpiryReauthenticates(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{TokenLifetime: time.Second})
	e.launch(t, cloudsimopenstack.LaunchSpec{Count: 2})
	c := e.compute(t, "2.47")
	first := c.Token()
	tok, err := c.GetAuthResult().(tokens.CreateResult).ExtractToken()
	ok(t, err)
	if d := time.Until(tok.ExpiresAt); d > time.Second || d < 0 {
		t.Fatalf("token expires in %v", d)
	}
	_, err = servers.List(c, nil).AllPages(t.Context())
	ok(t, err)
	auths, lists := e.srv.CallCount("keystone:CreateToken"), e.srv.CallCount("nova:ListServersDetail")
	time.Sleep(time.Until(tok.ExpiresAt) + 50*time.Millisecond)
	pages, err := servers.List(c, nil).AllPages(t.Context())
	ok(t, err)
	list, err := servers.ExtractServers(pages)
	ok(t, err)
	if len(list) != 2 || c.Token() == first {
		t.Fatalf("%d servers, token renewed: %v", len(list), c.Token() != first)
	}
	if n := e.srv.CallCount("keystone:CreateToken") - auths; n != 1 {
		t.Errorf("%d token requests after expiry, want 1", n)
	}
	if n := e.srv.CallCount("nova:ListServersDetail") - lists; n != 2 {
		t.Errorf("%d list calls after expiry, want 2 (401, retried)", n)
	}

	// Concurrent callers share one re-authentication.
	e.emu.ExpireTokens()
	auths = e.srv.CallCount("keystone:CreateToken")
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			_, err := servers.List(c, nil).AllPages(t.Context())
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := e.srv.CallCount("keystone:CreateToken") - auths; n != 1 {
		t.Errorf("%d token requests after concurrent expiry, want 1", n)
	}
}

// Without AllowReauth the expired token's 401 reaches the caller. The
// clock is the emulator's, so no sleeping.
func TestTokenExpiryWithoutReauth(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	e := newEnv(t, cloudsimopenstack.Config{TokenLifetime: time.Hour, Now: clock})
	opts := e.passwordOpts()
	opts.AllowReauth = false
	p, err := openstack.AuthenticatedClient(t.Context(), opts)
	ok(t, err)
	tok, _ := p.GetAuthResult().(tokens.CreateResult).ExtractToken()
	if !tok.ExpiresAt.Equal(now.Add(time.Hour)) {
		t.Errorf("expires %v", tok.ExpiresAt)
	}
	c := computeFor(t, p, "")
	_, err = servers.List(c, nil).AllPages(t.Context())
	ok(t, err)
	mu.Lock()
	now = now.Add(time.Hour) // expiry is exclusive
	mu.Unlock()
	_, err = servers.List(c, nil).AllPages(t.Context())
	if !gophercloud.ResponseCodeIs(err, http.StatusUnauthorized) {
		t.Fatalf("want 401, got %v", err)
	}
	if ce := codeError(t, err); !strings.HasPrefix(ce.ResponseHeader.Get("WWW-Authenticate"), "Keystone uri=") {
		t.Errorf("headers %v", ce.ResponseHeader)
	}
}

func TestKeystoneVersionDiscovery(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	w := e.do(t, "GET", "/identity/", "")
	if w.status != http.StatusMultipleChoices || w.header.Get("Location") != e.srv.URL()+"/identity/v3/" {
		t.Fatalf("GET /identity/: %d %v", w.status, w.header)
	}
	values := w.body["versions"].(map[string]any)["values"].([]any)
	v := values[0].(map[string]any)
	if len(values) != 1 || v["id"] != "v3.14" || v["status"] != "stable" {
		t.Errorf("versions %v", values)
	}
	w = e.do(t, "GET", "/identity/v3", "")
	if w.status != 200 || w.body["version"].(map[string]any)["id"] != "v3.14" {
		t.Errorf("GET /identity/v3: %d %s", w.status, w.raw)
	}
	if w := e.do(t, "GET", "/identity/v3/nothing-here", ""); w.status != 404 || w.body["error"] == nil {
		t.Errorf("unknown path: %d %s", w.status, w.raw)
	}
	if w := e.do(t, "PUT", "/identity/v3/auth/tokens", "{}"); w.status != 405 {
		t.Errorf("PUT tokens: %d %s", w.status, w.raw)
	}
	// Paths under no service are not API calls: the framework's 400.
	resp, err := http.Get(e.srv.URL() + "/elsewhere")
	ok(t, err)
	resp.Body.Close()
	if resp.StatusCode != 400 || e.srv.CallCount("*") != 4 {
		t.Errorf("outside every service: %d, %d calls counted", resp.StatusCode, e.srv.CallCount("*"))
	}
}
