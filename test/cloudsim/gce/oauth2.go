package gce

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The OAuth2 token endpoint of Google's JWT bearer flow, what
// golang.org/x/oauth2/google does with a service-account key: POST
// TokenPath with grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer
// and assertion, a JWT signed RS256 with the account's key. The assertion
// is checked as Google checks it: well-formed, signed by a key registered
// for its iss (serviceaccounts.go), aud this endpoint, a scope, and at
// most an hour between iat and exp with now inside. The answer is
// {"access_token", "expires_in": 3599, "token_type": "Bearer"}; an
// access token lives an hour (auth.go checks it on API calls). Refusals
// are OAuth2 JSON errors ({"error", "error_description"}) in Google's
// words. The call is counted as "oauth2:Token".

// tokenOp is the operation name of token requests.
const tokenOp = "oauth2:Token"

// jwtBearer is the grant type of a service account's assertion.
const jwtBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"

// accessTokenTTL is how long an access token lives, as Google's do.
const accessTokenTTL = time.Hour

// maxAssertionLife is the longest exp - iat Google accepts.
const maxAssertionLife = time.Hour

// assertionSkew is how far iat may be ahead of the emulator's clock.
const assertionSkew = 5 * time.Minute

// oauthError is an OAuth2 error answer.
type oauthError struct {
	Status      int    `json:"-"`
	Code        string `json:"error"`
	Description string `json:"error_description"`
}

func writeOAuthError(w http.ResponseWriter, e *oauthError) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(e)
}

func invalidGrant(description string) *oauthError {
	return &oauthError{Status: http.StatusBadRequest, Code: "invalid_grant", Description: description}
}

// errBadJWTTime is Google's answer to an assertion outside its lifetime.
var errBadJWTTime = invalidGrant("Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.")

// serveToken answers a token request.
func (e *Emulator) serveToken(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeOAuthError(w, &oauthError{Status: http.StatusMethodNotAllowed, Code: "invalid_request", Description: "Use POST."})
		return
	}
	if err := r.ParseForm(); err != nil {
		writeOAuthError(w, &oauthError{Status: http.StatusBadRequest, Code: "invalid_request", Description: err.Error()})
		return
	}
	if gt := r.PostForm.Get("grant_type"); gt != jwtBearer {
		writeOAuthError(w, &oauthError{Status: http.StatusBadRequest, Code: "unsupported_grant_type", Description: "Invalid grant_type: " + gt})
		return
	}
	email, oerr := e.checkAssertion(r.PostForm.Get("assertion"), r.Host)
	if oerr != nil {
		writeOAuthError(w, oerr)
		return
	}
	tok, err := e.auth.issue(email, e.cfg.Now(), accessTokenTTL)
	if err != nil {
		writeOAuthError(w, &oauthError{Status: http.StatusInternalServerError, Code: "internal_failure", Description: err.Error()})
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache, no-store, max-age=0, must-revalidate")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"access_token": tok,
		// Google answers a second short of the hour.
		"expires_in": int(accessTokenTTL/time.Second) - 1,
		"token_type": "Bearer",
	})
}

// jwtClaims are the claims of a service account's assertion.
type jwtClaims struct {
	Iss   string `json:"iss"`
	Scope string `json:"scope"`
	Aud   string `json:"aud"`
	Exp   int64  `json:"exp"`
	Iat   int64  `json:"iat"`
}

// checkAssertion verifies a JWT assertion that arrived at host and
// returns the service account it names.
func (e *Emulator) checkAssertion(assertion, host string) (string, *oauthError) {
	parts := strings.Split(assertion, ".")
	if len(parts) != 3 {
		return "", invalidGrant("Invalid JWT: the assertion is not three base64url parts.")
	}
	var header struct {
		Alg string `json:"alg"`
		Typ string `json:"typ"`
	}
	var claims jwtClaims
	if !decodeJWTPart(parts[0], &header) || !decodeJWTPart(parts[1], &claims) {
		return "", invalidGrant("Invalid JWT: the header or the claims are not base64url JSON.")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return "", invalidGrant("Invalid JWT Signature.")
	}
	if header.Alg != "RS256" {
		return "", invalidGrant("Invalid JWT: alg must be RS256.")
	}
	keys := e.auth.accountKeys(claims.Iss)
	if len(keys) == 0 {
		return "", invalidGrant("Invalid grant: account not found")
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	signed := false
	for _, k := range keys {
		if rsa.VerifyPKCS1v15(k, crypto.SHA256, digest[:], sig) == nil {
			signed = true
			break
		}
	}
	if !signed {
		return "", invalidGrant("Invalid JWT Signature.")
	}
	if aud, err := url.Parse(claims.Aud); err != nil || aud.Path != TokenPath || aud.Host != host {
		return "", invalidGrant("Invalid JWT: aud must be this token endpoint, " + host + TokenPath + ".")
	}
	now := e.cfg.Now()
	iat, exp := time.Unix(claims.Iat, 0), time.Unix(claims.Exp, 0)
	if exp.Sub(iat) > maxAssertionLife || !exp.After(now) || iat.After(now.Add(assertionSkew)) {
		return "", errBadJWTTime
	}
	if strings.TrimSpace(claims.Scope) == "" {
		return "", &oauthError{Status: http.StatusBadRequest, Code: "invalid_scope", Description: "Invalid OAuth scope or ID token audience provided."}
	}
	return claims.Iss, nil
}

// decodeJWTPart decodes one base64url JSON part of a JWT into v.
func decodeJWTPart(part string, v any) bool {
	b, err := base64.RawURLEncoding.DecodeString(part)
	return err == nil && json.Unmarshal(b, v) == nil
}
