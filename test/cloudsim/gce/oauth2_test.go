package gce

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	"google.golang.org/api/option"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

const testSA = "ccm@test-project.iam.gserviceaccount.com"

// A service-account key whose token_uri is the emulator's works as it
// does on Google Cloud: the client fetches one token, reuses it, and
// calls with a token that expired are 401 authError.
func TestServiceAccountKey(t *testing.T) {
	env := newTestEnv(t, Config{})
	ctx := t.Context()
	key, err := env.emu.NewServiceAccountKey(testSA, env.srv.URL()+TokenPath)
	if err != nil {
		t.Fatal(err)
	}
	//nolint:staticcheck // the key is ours, a service account key, as the backend's is.
	creds, err := google.CredentialsFromJSON(ctx, key, "https://www.googleapis.com/auth/compute")
	if err != nil {
		t.Fatal(err)
	}
	zc, err := compute.NewZonesRESTClient(ctx, option.WithEndpoint(env.srv.URL()), option.WithHTTPClient(oauth2.NewClient(ctx, creds.TokenSource)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = zc.Close() })
	for range 2 {
		if _, err := zc.Get(ctx, &computepb.GetZoneRequest{Project: env.project, Zone: env.zone}); err != nil {
			t.Fatal(err)
		}
	}
	if n := env.srv.CallCount(tokenOp); n != 1 {
		t.Errorf("%d token requests for two calls", n)
	}
	tok, err := creds.TokenSource.Token()
	if err != nil || !strings.HasPrefix(tok.AccessToken, "ya29.") || tok.TokenType != "Bearer" || time.Until(tok.Expiry) < 50*time.Minute {
		t.Errorf("token %+v %v", tok, err)
	}

	// The client still holds the token; the emulator says it expired.
	env.emu.ExpireTokens()
	_, err = zc.Get(ctx, &computepb.GetZoneRequest{Project: env.project, Zone: env.zone})
	wantCode(t, err, http.StatusUnauthorized, "authError")

	// A token the emulator never issued, and a header that is not Bearer.
	for _, h := range []string{"Bearer ya29.forged", "Basic dXNlcjpwYXNz"} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, env.srv.URL()+"/compute/v1/projects/test-project/zones/"+env.zone, nil)
		req.Header.Set("Authorization", h)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Error struct {
				Status string `json:"status"`
				Errors []struct {
					Reason, Location string
				} `json:"errors"`
			} `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || body.Error.Status != "UNAUTHENTICATED" || body.Error.Errors[0].Reason != "authError" ||
			body.Error.Errors[0].Location != "Authorization" || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "invalid_token") {
			t.Errorf("%s: %d %+v %v", h, resp.StatusCode, body, resp.Header)
		}
	}
	// Without credentials calls are still served.
	if _, err := env.zones(t).Get(ctx, &computepb.GetZoneRequest{Project: env.project, Zone: env.zone}); err != nil {
		t.Errorf("call without credentials: %v", err)
	}

	// A token endpoint that fails is the client's error, not a 401 later.
	env.setFault(t, cloudsim.FaultSpec{Op: tokenOp, FailNext: 1})
	//nolint:staticcheck // as above.
	fresh, err := google.CredentialsFromJSON(ctx, key, "https://www.googleapis.com/auth/compute")
	if err != nil {
		t.Fatal(err)
	}
	_, err = fresh.TokenSource.Token()
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.Response.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("token with the endpoint failing: %v", err)
	}
}

// signJWT makes an assertion as golang.org/x/oauth2/jwt does, with the
// header and claims given.
func signJWT(t *testing.T, key *rsa.PrivateKey, header, claims map[string]any) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	signing := enc(header) + "." + enc(claims)
	digest := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	return signing + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func TestTokenEndpoint(t *testing.T) {
	env := newTestEnv(t, Config{})
	tokenURI := env.srv.URL() + TokenPath
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	env.emu.RegisterServiceAccount(testSA, &key.PublicKey)
	now := time.Now()
	rs256 := map[string]any{"alg": "RS256", "typ": "JWT"}
	claims := func(change func(map[string]any)) map[string]any {
		c := map[string]any{"iss": testSA, "scope": "https://www.googleapis.com/auth/compute", "aud": tokenURI,
			"iat": now.Add(-10 * time.Second).Unix(), "exp": now.Add(50 * time.Minute).Unix()}
		if change != nil {
			change(c)
		}
		return c
	}
	post := func(form url.Values) (int, map[string]any) {
		resp, err := http.PostForm(tokenURI, form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	grant := func(assertion string) url.Values {
		return url.Values{"grant_type": {jwtBearer}, "assertion": {assertion}}
	}

	status, out := post(grant(signJWT(t, key, rs256, claims(nil))))
	if status != http.StatusOK || out["token_type"] != "Bearer" || out["expires_in"] != float64(3599) || !strings.HasPrefix(out["access_token"].(string), "ya29.") {
		t.Fatalf("token answer %d %v", status, out)
	}

	for _, tc := range []struct {
		name   string
		form   url.Values
		status int
		code   string
	}{
		{"password grant", url.Values{"grant_type": {"password"}}, http.StatusBadRequest, "unsupported_grant_type"},
		{"not a JWT", grant("abc"), http.StatusBadRequest, "invalid_grant"},
		{"unknown account", grant(signJWT(t, key, rs256, claims(func(c map[string]any) { c["iss"] = "x@test-project.iam.gserviceaccount.com" }))), http.StatusBadRequest, "invalid_grant"},
		{"another key", grant(signJWT(t, other, rs256, claims(nil))), http.StatusBadRequest, "invalid_grant"},
		{"HS256", grant(signJWT(t, key, map[string]any{"alg": "HS256"}, claims(nil))), http.StatusBadRequest, "invalid_grant"},
		{"Google's audience", grant(signJWT(t, key, rs256, claims(func(c map[string]any) { c["aud"] = "https://oauth2.googleapis.com/token" }))), http.StatusBadRequest, "invalid_grant"},
		{"expired", grant(signJWT(t, key, rs256, claims(func(c map[string]any) {
			c["iat"], c["exp"] = now.Add(-2*time.Hour).Unix(), now.Add(-time.Hour).Unix()
		}))), http.StatusBadRequest, "invalid_grant"},
		{"too long", grant(signJWT(t, key, rs256, claims(func(c map[string]any) { c["exp"] = now.Add(3 * time.Hour).Unix() }))), http.StatusBadRequest, "invalid_grant"},
		{"no scope", grant(signJWT(t, key, rs256, claims(func(c map[string]any) { delete(c, "scope") }))), http.StatusBadRequest, "invalid_scope"},
	} {
		status, out := post(tc.form)
		if status != tc.status || out["error"] != tc.code || out["error_description"] == "" {
			t.Errorf("%s: %d %v, want %d %s", tc.name, status, out, tc.status, tc.code)
		}
	}
	resp, err := http.Get(tokenURI)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET %s: %d", TokenPath, resp.StatusCode)
	}
	if n := env.srv.CallCount(tokenOp); n != 11 {
		t.Errorf("%d token calls counted", n)
	}

	// The admin API makes keys for another process (the sandbox's CCM).
	var keyJSON map[string]string
	if code := adminJSON(t, env, http.MethodPost, "/admin/gce/serviceaccounts",
		strings.NewReader(`{"email":"sandbox@test-project.iam.gserviceaccount.com","tokenUri":"`+tokenURI+`"}`), &keyJSON); code != http.StatusCreated ||
		keyJSON["type"] != "service_account" || keyJSON["token_uri"] != tokenURI || !strings.Contains(keyJSON["private_key"], "BEGIN PRIVATE KEY") {
		t.Errorf("admin key %d %v", code, keyJSON)
	}
	if _, err := env.emu.NewServiceAccountKey("nobody", tokenURI); err == nil {
		t.Error("a key for an email without @ was made")
	}
}
