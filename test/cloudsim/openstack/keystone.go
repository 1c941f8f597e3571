package openstack

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Keystone v3, as much of it as clients need to get and use tokens:
// version discovery, and POST/GET/HEAD/DELETE /v3/auth/tokens with the
// password, application_credential and token methods.

const (
	keystonePrefix = "/identity"
	keystoneOp     = "keystone:"

	opKeystoneVersions    = keystoneOp + "GetVersions"
	opKeystoneVersion     = keystoneOp + "GetVersion"
	opCreateToken         = keystoneOp + "CreateToken"
	opValidateToken       = keystoneOp + "ValidateToken"
	opCheckToken          = keystoneOp + "CheckToken"
	opRevokeToken         = keystoneOp + "RevokeToken"
	opKeystoneUnsupported = keystoneOp + "Unsupported"
)

func init() { registerMutating(opCreateToken, opRevokeToken) }

type domain struct {
	id, name string
}

type project struct {
	id, name, domainID string
}

type user struct {
	id, name, domainID string
	password           string
	// defaultProjectID scopes tokens that ask for no scope.
	defaultProjectID string
	// projects are the projects the user has the member role on.
	projects map[string]bool
}

type appCred struct {
	id, name, secret  string
	userID, projectID string
	expiresAt         *time.Time
}

type token struct {
	id        string
	userID    string
	projectID string // "" for an unscoped token
	appCredID string
	methods   []string
	auditIDs  []string
	issuedAt  time.Time
	expiresAt time.Time
}

// catalog lists the services the token catalog advertises; Neutron and
// Octavia are served by later parts of the emulator at these paths.
var catalog = []struct {
	typ, name, path string
}{
	{"identity", "keystone", keystonePrefix},
	{"compute", "nova", novaPrefix + "/v2.1"},
	{"network", "neutron", "/network"},
	{"load-balancer", "octavia", "/load-balancer"},
}

var interfaces = []string{"public", "internal", "admin"}

type keystoneService struct{ e *Emulator }

func (keystoneService) name() string   { return "keystone" }
func (keystoneService) prefix() string { return keystonePrefix }

func (k keystoneService) route(r *http.Request, rest string) route {
	e := k.e
	notFound := route{op: opKeystoneUnsupported, public: true, serve: func(w http.ResponseWriter, r *http.Request) {
		writeKeystoneError(w, r, keystoneError(http.StatusNotFound, msgNotFound))
	}}
	methodNotAllowed := route{op: opKeystoneUnsupported, public: true, serve: func(w http.ResponseWriter, r *http.Request) {
		writeKeystoneError(w, r, keystoneError(http.StatusMethodNotAllowed, msgMethodNotAllowed))
	}}
	switch rest {
	case "", "/":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			return methodNotAllowed
		}
		return route{op: opKeystoneVersions, public: true, serve: e.keystoneVersions}
	case "/v3", "/v3/":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			return methodNotAllowed
		}
		return route{op: opKeystoneVersion, public: true, serve: e.keystoneVersion}
	case "/v3/auth/tokens":
		switch r.Method {
		case http.MethodPost:
			return route{op: opCreateToken, public: true, serve: e.createToken}
		case http.MethodGet:
			return route{op: opValidateToken, serve: e.validateToken}
		case http.MethodHead:
			return route{op: opCheckToken, serve: e.validateToken}
		case http.MethodDelete:
			return route{op: opRevokeToken, serve: e.revokeToken}
		}
		return methodNotAllowed
	}
	return notFound
}

func (k keystoneService) writeThrottle(w http.ResponseWriter, r *http.Request, rt route) {
	w.Header().Set("Retry-After", strconv.Itoa(k.e.cfg.RetryAfter))
	writeKeystoneError(w, r, keystoneError(http.StatusTooManyRequests, msgRateLimited))
}

// writeUnauthenticated is Keystone's own 401 for a call without a valid
// X-Auth-Token.
func (keystoneService) writeUnauthenticated(w http.ResponseWriter, r *http.Request) {
	writeKeystoneError(w, r, unauthorized())
}

func (keystoneService) writeServerError(w http.ResponseWriter, r *http.Request, rt route) {
	writeKeystoneError(w, r, keystoneError(http.StatusInternalServerError, msgUnexpected))
}

// --- version discovery ---

func keystoneV3Version(base string) map[string]any {
	return map[string]any{
		"id":      "v3.14",
		"status":  "stable",
		"updated": "2020-04-07T00:00:00Z",
		"links":   []any{map[string]any{"rel": "self", "href": base + keystonePrefix + "/v3/"}},
		"media-types": []any{map[string]any{
			"base": "application/json", "type": "application/vnd.openstack.identity-v3+json",
		}},
	}
}

// keystoneVersions answers GET /identity/ as Keystone does: 300 Multiple
// Choices, the one v3 version, and a Location header naming it.
func (e *Emulator) keystoneVersions(w http.ResponseWriter, r *http.Request) {
	base := baseURL(r)
	w.Header().Set("Location", base+keystonePrefix+"/v3/")
	writeJSON(w, http.StatusMultipleChoices, map[string]any{"versions": map[string]any{"values": []any{keystoneV3Version(base)}}})
}

func (e *Emulator) keystoneVersion(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"version": keystoneV3Version(baseURL(r))})
}

// --- POST /v3/auth/tokens ---

type authDomain struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type authUser struct {
	ID       string      `json:"id"`
	Name     string      `json:"name"`
	Password *string     `json:"password"`
	Domain   *authDomain `json:"domain"`
}

type authRequest struct {
	Auth *struct {
		Identity *struct {
			Methods  []string `json:"methods"`
			Password *struct {
				User *authUser `json:"user"`
			} `json:"password"`
			Token *struct {
				ID string `json:"id"`
			} `json:"token"`
			ApplicationCredential *struct {
				ID     string    `json:"id"`
				Name   string    `json:"name"`
				Secret *string   `json:"secret"`
				User   *authUser `json:"user"`
			} `json:"application_credential"`
		} `json:"identity"`
		Scope json.RawMessage `json:"scope"`
	} `json:"auth"`
}

// scopeRequest is auth.scope when it is an object.
type scopeRequest struct {
	Project *struct {
		ID     string      `json:"id"`
		Name   string      `json:"name"`
		Domain *authDomain `json:"domain"`
	} `json:"project"`
	Domain *authDomain     `json:"domain"`
	System json.RawMessage `json:"system"`
	Trust  json.RawMessage `json:"OS-TRUST:trust"`
}

// supportedAuthMethods are the methods the emulated Keystone enables;
// others (totp, oauth1, mapped...) are answered as unsupported.
var supportedAuthMethods = []string{"password", "token", "application_credential"}

func (e *Emulator) createToken(w http.ResponseWriter, r *http.Request) {
	body, err := readJSONBody(r)
	if err != nil {
		writeKeystoneError(w, r, err)
		return
	}
	var req authRequest
	if len(body) > 0 {
		if jerr := json.Unmarshal(body, &req); jerr != nil {
			writeKeystoneError(w, r, keystoneValidationError("valid JSON", "request body"))
			return
		}
	}
	e.mu.Lock()
	tok, aerr := e.issueToken(&req)
	var resp map[string]any
	if aerr == nil {
		resp = e.renderToken(tok, baseURL(r))
	}
	e.mu.Unlock()
	if aerr != nil {
		writeKeystoneError(w, r, aerr)
		return
	}
	w.Header().Set("X-Subject-Token", tok.id)
	w.Header().Set("Vary", "X-Auth-Token")
	writeJSON(w, http.StatusCreated, resp)
}

// readJSONBody enforces Keystone's JSON-only request bodies.
func readJSONBody(r *http.Request) ([]byte, *apiError) {
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(r.Body); err != nil {
		return nil, keystoneValidationError("valid JSON", "request body")
	}
	body := buf.Bytes()
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, nil
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return nil, keystoneValidationError("application/json", "Content-Type header")
		}
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, keystoneValidationError("valid JSON", "request body")
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, keystoneValidationError("valid JSON", "request body")
	}
	return body, nil
}

func unauthorized() *apiError { return keystoneError(http.StatusUnauthorized, msgUnauthorized) }

// authPluginError is a 401 of Keystone's AuthPluginException family,
// whose body also carries an "identity" object.
func authPluginError(message string, identity map[string]any) *apiError {
	e := keystoneError(http.StatusUnauthorized, message)
	e.body.(map[string]any)["error"].(map[string]any)["identity"] = identity
	return e
}

// writeKeystoneError writes a Keystone error; 401s name Keystone in
// WWW-Authenticate, as keystone's error handler does (its base_url,
// which ends in /v3).
func writeKeystoneError(w http.ResponseWriter, r *http.Request, e *apiError) {
	if e.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Keystone uri="`+baseURL(r)+keystonePrefix+`/v3"`)
	}
	writeError(w, e)
}

// issueToken authenticates req and mints a token, in Keystone's order:
// request validation, scope lookup, then each method. Callers hold e.mu.
func (e *Emulator) issueToken(req *authRequest) (*token, *apiError) {
	if req.Auth == nil {
		return nil, keystoneValidationError("auth", "request body")
	}
	id := req.Auth.Identity
	if id == nil {
		return nil, keystoneValidationError("identity", "auth")
	}
	if len(id.Methods) == 0 {
		return nil, keystoneValidationError("methods", "identity")
	}
	present := map[string]bool{
		"password": id.Password != nil, "token": id.Token != nil, "application_credential": id.ApplicationCredential != nil,
	}
	for _, m := range id.Methods {
		if !slices.Contains(supportedAuthMethods, m) {
			return nil, authPluginError(msgUnsupportedAuth, map[string]any{"methods": supportedAuthMethods})
		}
		if !present[m] {
			return nil, keystoneValidationError(m, "identity")
		}
	}
	methods := slices.Compact(slices.Sorted(slices.Values(id.Methods)))

	// Scope.
	var (
		scopeProject  *project
		explicitScope bool
		unscoped      bool
	)
	if s := bytes.TrimSpace(req.Auth.Scope); len(s) > 0 && string(s) != "null" {
		var str string
		if json.Unmarshal(s, &str) == nil {
			if str != "unscoped" {
				return nil, keystoneValidationError("scope", "auth")
			}
			unscoped = true
		} else {
			var sc scopeRequest
			if err := json.Unmarshal(s, &sc); err != nil {
				return nil, keystoneValidationError("scope", "auth")
			}
			if slices.Contains(methods, "application_credential") && (sc.Project != nil || sc.Domain != nil || sc.System != nil || sc.Trust != nil) {
				return nil, authPluginError(
					"Error authenticating with application credential: Application credentials cannot request a scope.", map[string]any{})
			}
			switch {
			case sc.Project != nil:
				p, err := e.lookupScopeProject(sc.Project.ID, sc.Project.Name, sc.Project.Domain)
				if err != nil {
					return nil, err
				}
				scopeProject, explicitScope = p, true
			case sc.Domain != nil, sc.System != nil, sc.Trust != nil:
				// No emulated user holds a role on a domain or the
				// system, and there are no trusts: Keystone refuses.
				return nil, unauthorized()
			}
		}
	}

	// Methods: each must succeed, for one and the same user.
	var (
		userID    string
		appCredID string
		expiresAt time.Time
		auditIDs  = []string{newAuditID()}
	)
	setUser := func(u string) *apiError {
		if userID != "" && userID != u {
			return unauthorized()
		}
		userID = u
		return nil
	}
	for _, m := range methods {
		switch m {
		case "password":
			u, err := e.passwordAuth(id.Password.User)
			if err != nil {
				return nil, err
			}
			if err := setUser(u.id); err != nil {
				return nil, err
			}
		case "application_credential":
			ac, err := e.appCredAuth(id.ApplicationCredential.ID, id.ApplicationCredential.Name, id.ApplicationCredential.Secret, id.ApplicationCredential.User)
			if err != nil {
				return nil, err
			}
			if err := setUser(ac.userID); err != nil {
				return nil, err
			}
			appCredID = ac.id
		case "token":
			if id.Token.ID == "" {
				return nil, keystoneValidationError("id", "token")
			}
			old, ok := e.validToken(id.Token.ID)
			if !ok {
				return nil, errTokenNotFound()
			}
			if old.appCredID != "" && explicitScope {
				return nil, keystoneError(http.StatusForbidden,
					"You are not authorized to perform the requested action: Using an application credential token to create a scoped token is not allowed.")
			}
			if err := setUser(old.userID); err != nil {
				return nil, err
			}
			// A token from a token keeps the original's expiry, methods,
			// audit chain and application credential.
			expiresAt = old.expiresAt
			methods = slices.Compact(slices.Sorted(slices.Values(slices.Concat(methods, old.methods))))
			auditIDs = append(auditIDs, old.auditIDs[len(old.auditIDs)-1])
			if appCredID == "" {
				appCredID = old.appCredID
			}
			if !explicitScope && !unscoped && old.projectID != "" {
				scopeProject, _ = e.projects.Get(old.projectID)
			}
		}
	}
	u, ok := e.users.Get(userID)
	if !ok {
		return nil, unauthorized()
	}

	// The scope: the requested project, the application credential's,
	// or the user's default project, which must all carry a role.
	switch {
	case appCredID != "":
		ac, ok := e.appCreds.Get(appCredID)
		if !ok {
			return nil, unauthorized()
		}
		scopeProject, _ = e.projects.Get(ac.projectID)
		if scopeProject == nil {
			return nil, unauthorized()
		}
	case scopeProject == nil && !unscoped && u.defaultProjectID != "":
		if p, ok := e.projects.Get(u.defaultProjectID); ok && u.projects[p.id] {
			scopeProject = p
		}
	}
	if scopeProject != nil && !u.projects[scopeProject.id] {
		return nil, unauthorized()
	}

	now := e.now()
	if expiresAt.IsZero() {
		expiresAt = now.Add(e.cfg.TokenLifetime)
		if appCredID != "" {
			if ac, _ := e.appCreds.Get(appCredID); ac.expiresAt != nil && ac.expiresAt.Before(expiresAt) {
				expiresAt = *ac.expiresAt
			}
		}
	}
	t := &token{
		id: newTokenID(), userID: u.id, appCredID: appCredID, methods: methods,
		auditIDs: auditIDs, issuedAt: now, expiresAt: expiresAt,
	}
	if scopeProject != nil {
		t.projectID = scopeProject.id
	}
	e.purgeExpiredTokens(now)
	e.tokens[t.id] = t
	return t, nil
}

// lookupDomain finds a domain by ID or name; an unknown one is a 401.
func (e *Emulator) lookupDomain(d *authDomain) (*domain, *apiError) {
	if d == nil || (d.ID == "" && d.Name == "") {
		return nil, keystoneValidationError("id or name", "domain")
	}
	for _, dom := range e.domains.All() {
		if (d.Name != "" && dom.name == d.Name) || (d.Name == "" && dom.id == d.ID) {
			return dom, nil
		}
	}
	return nil, unauthorized()
}

func (e *Emulator) lookupScopeProject(id, name string, d *authDomain) (*project, *apiError) {
	if id == "" && name == "" {
		return nil, keystoneValidationError("id or name", "project")
	}
	if name != "" {
		if d == nil {
			return nil, keystoneValidationError("domain", "project")
		}
		dom, err := e.lookupDomain(d)
		if err != nil {
			return nil, err
		}
		for _, p := range e.projects.All() {
			if p.name == name && p.domainID == dom.id {
				return p, nil
			}
		}
		return nil, unauthorized()
	}
	p, ok := e.projects.Get(id)
	if !ok {
		return nil, unauthorized()
	}
	return p, nil
}

// lookupUser finds the user of a password or application credential
// payload: by ID, or by name within a domain.
func (e *Emulator) lookupUser(au *authUser, target string) (*user, *apiError) {
	if au == nil {
		return nil, keystoneValidationError("user", target)
	}
	if au.ID == "" && au.Name == "" {
		return nil, keystoneValidationError("id or name", "user")
	}
	if au.Name != "" {
		if au.Domain == nil {
			return nil, keystoneValidationError("domain", "user")
		}
		dom, err := e.lookupDomain(au.Domain)
		if err != nil {
			return nil, err
		}
		for _, u := range e.users.All() {
			if u.name == au.Name && u.domainID == dom.id {
				return u, nil
			}
		}
		return nil, unauthorized()
	}
	u, ok := e.users.Get(au.ID)
	if !ok {
		return nil, unauthorized()
	}
	return u, nil
}

func (e *Emulator) passwordAuth(au *authUser) (*user, *apiError) {
	u, err := e.lookupUser(au, "password")
	if err != nil {
		return nil, err
	}
	if au.Password == nil || *au.Password != u.password {
		return nil, unauthorized()
	}
	return u, nil
}

// appCredAuth checks an application credential named by ID, or by name
// and its user. Keystone answers an unknown ID with a 404 naming it, and
// an unknown name with a 500 (it indexes an empty list); the emulator
// does the same.
func (e *Emulator) appCredAuth(id, name string, secret *string, au *authUser) (*appCred, *apiError) {
	var ac *appCred
	switch {
	case id != "":
		var ok bool
		if ac, ok = e.appCreds.Get(id); !ok {
			return nil, keystoneError(http.StatusNotFound, "Could not find Application Credential: "+id+".")
		}
		if _, ok := e.users.Get(ac.userID); !ok {
			return nil, unauthorized()
		}
	case name != "":
		u, err := e.lookupUser(au, "application_credential")
		if err != nil {
			return nil, err
		}
		for _, a := range e.appCreds.All() {
			if a.userID == u.id && a.name == name {
				ac = a
				break
			}
		}
		if ac == nil {
			return nil, keystoneError(http.StatusInternalServerError, msgUnexpected)
		}
	default:
		return nil, keystoneValidationError("id or name", "application credential")
	}
	if secret == nil || *secret != ac.secret {
		return nil, unauthorized()
	}
	if ac.expiresAt != nil && !e.now().Before(*ac.expiresAt) {
		return nil, unauthorized()
	}
	return ac, nil
}

// validToken returns the token if it exists, has not expired, and its
// user (and project, if scoped) still exist. Callers hold e.mu.
func (e *Emulator) validToken(id string) (*token, bool) {
	if id == "" {
		return nil, false
	}
	t, ok := e.tokens[id]
	if !ok || !e.now().Before(t.expiresAt) || !e.users.Has(t.userID) {
		return nil, false
	}
	if t.projectID != "" && !e.projects.Has(t.projectID) {
		return nil, false
	}
	return t, true
}

func (e *Emulator) purgeExpiredTokens(now time.Time) {
	for id, t := range e.tokens {
		if !now.Before(t.expiresAt) {
			delete(e.tokens, id)
		}
	}
}

// keystoneTime is Keystone's timestamp format, microseconds and a Z.
func keystoneTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }

// renderToken is the token body, as keystone.common.render_token renders
// it. Callers hold e.mu.
func (e *Emulator) renderToken(t *token, base string) map[string]any {
	u, _ := e.users.Get(t.userID)
	ud, _ := e.domains.Get(u.domainID)
	tok := map[string]any{
		"methods": t.methods,
		"user": map[string]any{
			"domain":              map[string]any{"id": ud.id, "name": ud.name},
			"id":                  u.id,
			"name":                u.name,
			"password_expires_at": nil,
		},
		"audit_ids":  t.auditIDs,
		"expires_at": keystoneTime(t.expiresAt),
		"issued_at":  keystoneTime(t.issuedAt),
	}
	if t.projectID != "" {
		p, _ := e.projects.Get(t.projectID)
		pd, _ := e.domains.Get(p.domainID)
		tok["project"] = map[string]any{
			"domain": map[string]any{"id": pd.id, "name": pd.name},
			"id":     p.id,
			"name":   p.name,
		}
		tok["is_domain"] = false
		tok["roles"] = []any{
			map[string]any{"id": e.roles["member"], "name": "member"},
			map[string]any{"id": e.roles["reader"], "name": "reader"},
		}
		tok["catalog"] = e.renderCatalog(base)
	}
	if t.appCredID != "" {
		if ac, ok := e.appCreds.Get(t.appCredID); ok {
			tok["application_credential"] = map[string]any{"id": ac.id, "name": ac.name, "restricted": true}
		}
	}
	return map[string]any{"token": tok}
}

// renderCatalog lists every service with a public, an internal and an
// admin endpoint in the configured region.
func (e *Emulator) renderCatalog(base string) []any {
	out := make([]any, 0, len(catalog))
	for i, svc := range catalog {
		var eps []any
		for j, iface := range interfaces {
			eps = append(eps, map[string]any{
				"id":        e.endpointIDs[i*len(interfaces)+j],
				"interface": iface,
				"region":    e.cfg.Region,
				"region_id": e.cfg.Region,
				"url":       base + svc.path,
			})
		}
		out = append(out, map[string]any{
			"endpoints": eps,
			"id":        e.serviceIDs[i],
			"type":      svc.typ,
			"name":      svc.name,
		})
	}
	return out
}

// --- GET/HEAD/DELETE /v3/auth/tokens ---

func (e *Emulator) validateToken(w http.ResponseWriter, r *http.Request) {
	subject := r.Header.Get("X-Subject-Token")
	e.mu.Lock()
	var (
		resp map[string]any
		aerr *apiError
	)
	if subject == "" {
		aerr = keystoneError(http.StatusNotFound, "No token in the request")
	} else if t, ok := e.validToken(subject); !ok {
		aerr = errTokenNotFound()
	} else {
		resp = e.renderToken(t, baseURL(r))
	}
	e.mu.Unlock()
	if aerr != nil {
		writeKeystoneError(w, r, aerr)
		return
	}
	w.Header().Set("X-Subject-Token", subject)
	w.Header().Set("Vary", "X-Auth-Token")
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

func (e *Emulator) revokeToken(w http.ResponseWriter, r *http.Request) {
	subject := r.Header.Get("X-Subject-Token")
	e.mu.Lock()
	_, ok := e.validToken(subject)
	if ok {
		delete(e.tokens, subject)
	}
	e.mu.Unlock()
	if !ok {
		if subject == "" {
			writeKeystoneError(w, r, keystoneError(http.StatusNotFound, "No token in the request"))
		} else {
			writeKeystoneError(w, r, errTokenNotFound())
		}
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
