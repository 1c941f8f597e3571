package gce

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// Service accounts the token endpoint (oauth2.go) knows, by email, with
// the public halves of their keys, and the access tokens it issued. A
// test makes a key with NewServiceAccountKey and hands its JSON to the
// code under test, as a user hands a key file to a CCM; the key's
// token_uri must be this emulator's TokenPath.
type authState struct {
	mu       sync.Mutex
	accounts map[string][]*rsa.PublicKey
	tokens   map[string]issuedToken
}

// issuedToken is an access token the token endpoint handed out.
type issuedToken struct {
	email  string
	expiry time.Time
}

// TokenPath is where the emulator serves OAuth2 tokens: a service-account
// key's token_uri is the emulator's URL with this path.
const TokenPath = "/token"

// RegisterServiceAccount lets the token endpoint accept assertions that
// email signs with the private half of pub. An account may have several
// keys, as on Google Cloud.
func (e *Emulator) RegisterServiceAccount(email string, pub *rsa.PublicKey) {
	a := &e.auth
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.accounts == nil {
		a.accounts = map[string][]*rsa.PublicKey{}
	}
	a.accounts[email] = append(a.accounts[email], pub)
}

// NewServiceAccountKey makes an RSA key for email, registers it, and
// returns the key file JSON a user downloads from Google Cloud (type
// service_account, private_key in PKCS #8 PEM, client_email, token_uri),
// which golang.org/x/oauth2/google reads. tokenURI is the emulator's URL
// with TokenPath.
func (e *Emulator) NewServiceAccountKey(email, tokenURI string) ([]byte, error) {
	if !strings.Contains(email, "@") {
		return nil, fmt.Errorf("service account email %q: want name@project.iam.gserviceaccount.com", email)
	}
	if !strings.HasSuffix(tokenURI, TokenPath) {
		return nil, fmt.Errorf("token URI %q: want the emulator's URL with %s", tokenURI, TokenPath)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("service account key for %s: %w", email, err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("service account key for %s: %w", email, err)
	}
	id := make([]byte, 20)
	if _, err := rand.Read(id); err != nil {
		return nil, fmt.Errorf("service account key for %s: %w", email, err)
	}
	e.RegisterServiceAccount(email, &key.PublicKey)
	return json.MarshalIndent(map[string]string{
		"type":                        "service_account",
		"project_id":                  e.cfg.Project,
		"private_key_id":              hex.EncodeToString(id),
		"private_key":                 string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email":                email,
		"client_id":                   fmt.Sprint(fnv64(email) >> 1),
		"auth_uri":                    "https://accounts.google.com/o/oauth2/auth",
		"token_uri":                   tokenURI,
		"auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
		"universe_domain":             "googleapis.com",
	}, "", "  ")
}

// ExpireTokens makes every access token issued so far expired, so the
// next call carrying one is answered 401, as when a token outlives its
// hour or its key is revoked.
func (e *Emulator) ExpireTokens() {
	a := &e.auth
	a.mu.Lock()
	defer a.mu.Unlock()
	now := e.cfg.Now()
	for tok, t := range a.tokens {
		t.expiry = now
		a.tokens[tok] = t
	}
}

// accountKeys are the keys registered for email.
func (a *authState) accountKeys(email string) []*rsa.PublicKey {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.accounts[email]
}

// issue records a new access token for email, valid for ttl.
func (a *authState) issue(email string, now time.Time, ttl time.Duration) (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	tok := "ya29.cloudsim." + hex.EncodeToString(b)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.tokens == nil {
		a.tokens = map[string]issuedToken{}
	}
	// Forget long-expired tokens, so a long run does not grow without end.
	for t, it := range a.tokens {
		if now.Sub(it.expiry) > 24*time.Hour {
			delete(a.tokens, t)
		}
	}
	a.tokens[tok] = issuedToken{email: email, expiry: now.Add(ttl)}
	return tok, nil
}

// valid reports whether tok was issued and has not expired at now.
func (a *authState) valid(tok string, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.tokens[tok]
	return ok && now.Before(t.expiry)
}

// serviceAccountsAdmin serves, under /admin/gce/:
//
//	POST /serviceaccounts     {"email": ..., "tokenUri": ...} -> 201 the key JSON (NewServiceAccountKey)
//	POST /tokens/expire       ExpireTokens -> 204
func (e *Emulator) serviceAccountsAdmin(mux *http.ServeMux) {
	mux.HandleFunc("POST /serviceaccounts", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Email    string `json:"email"`
			TokenURI string `json:"tokenUri"`
		}
		if err := cloudsim.ReadJSON(r, &req); err != nil {
			cloudsim.WriteJSONError(w, http.StatusBadRequest, err)
			return
		}
		key, err := e.NewServiceAccountKey(req.Email, req.TokenURI)
		if err != nil {
			cloudsim.WriteJSONError(w, http.StatusBadRequest, errors.Join(err, cloudsim.ErrInvalidRequest))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(key)
	})
	mux.HandleFunc("POST /tokens/expire", func(w http.ResponseWriter, r *http.Request) {
		e.ExpireTokens()
		w.WriteHeader(http.StatusNoContent)
	})
}

// principal is the service account tok was issued to, "" when tok was
// not issued or has expired at now.
func (a *authState) principal(tok string, now time.Time) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.tokens[tok]
	if !ok || !now.Before(t.expiry) {
		return ""
	}
	return t.email
}
