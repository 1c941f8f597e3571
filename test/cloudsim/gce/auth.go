package gce

import (
	"encoding/json"
	"net/http"
	"strings"
)

// Authentication of API calls. A call without an Authorization header is
// served, so tests and tools may use option.WithoutAuthentication. A call
// with one must carry "Bearer <token>" where the token is one the token
// endpoint (oauth2.go) issued and that has not expired; otherwise it is
// answered as Compute Engine answers bad credentials: 401 with reason
// authError, status UNAUTHENTICATED and a WWW-Authenticate challenge, which
// a backend must treat as an error, never as "not found".

// bearerOK reports whether r's credentials, if it has any, are valid.
func (e *Emulator) bearerOK(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	if h == "" {
		return true
	}
	scheme, tok, ok := strings.Cut(h, " ")
	return ok && strings.EqualFold(scheme, "Bearer") && e.auth.valid(strings.TrimSpace(tok), e.cfg.Now())
}

// writeAuthError answers a call with bad credentials, in Google's words.
func writeAuthError(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.Header().Set("WWW-Authenticate", `Bearer realm="https://accounts.google.com/", error="invalid_token"`)
	w.WriteHeader(http.StatusUnauthorized)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"code": http.StatusUnauthorized,
		"message": "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie " +
			"or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.",
		"errors": []map[string]string{{
			"message": "Invalid Credentials", "domain": "global", "reason": "authError",
			"location": "Authorization", "locationType": "header",
		}},
		"status": "UNAUTHENTICATED",
	}})
}
