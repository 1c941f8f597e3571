package openstack

import (
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/cloudmetrics"
)

// gophercloud's extension point is the HTTP client every service shares,
// so the metrics sit in its transport. One transport per service keeps
// the service label fixed; serviceRouter picks it by the request URL's
// endpoint, known once the catalog is read.

// serviceRouter sends each request through the metrics transport of the
// service whose endpoint the URL is under, naming the operation by the
// path below that endpoint (the same whether Nova is at :8774/v2.1 or at
// /compute/v2.1). Requests under no endpoint (Keystone's, before and
// while the catalog is read) count as identity, named below the auth URL.
type serviceRouter struct {
	next     http.RoundTripper
	rec      *cloudmetrics.Recorder
	identity http.RoundTripper

	mu     sync.RWMutex
	routes []serviceRoute
}

type serviceRoute struct {
	prefix string
	rt     http.RoundTripper
}

// newServiceRouter wraps next; rec nil means the manager's /metrics.
func newServiceRouter(next http.RoundTripper, authURL string, rec *cloudmetrics.Recorder) *serviceRouter {
	if rec == nil {
		rec = cloudmetrics.Default()
	}
	s := &serviceRouter{next: next, rec: rec}
	s.identity = s.transport("identity", pathOf(authURL))
	return s
}

// transport records every attempt for service, naming operations by the
// path below base, and returns a policy denial as the error naming the
// rule (clients_denied.go).
func (s *serviceRouter) transport(service, base string) http.RoundTripper {
	base = strings.TrimSuffix(base, "/")
	metered := cloudmetrics.NewTransport(s.next, cloudmetrics.TransportOptions{
		Provider: ProviderName,
		Service:  service,
		Operation: func(r *http.Request) string {
			return operationName(r.Method, strings.TrimPrefix(r.URL.Path, base))
		},
		// Nova and older services throttle with 413 and a Retry-After.
		Throttled: func(r *http.Response) bool {
			return r.StatusCode == http.StatusRequestEntityTooLarge && r.Header.Get("Retry-After") != ""
		},
		Recorder: s.rec,
	})
	return &deniedTransport{next: metered, service: service, base: base, rec: s.rec}
}

// route counts requests under endpoint as service. Longer endpoints win,
// for clouds that nest one service's path under another's.
func (s *serviceRouter) route(endpoint, service string) {
	prefix := strings.TrimSuffix(endpoint, "/")
	rt := s.transport(service, pathOf(prefix))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.routes = append(s.routes, serviceRoute{prefix: prefix, rt: rt})
	for i := len(s.routes) - 1; i > 0 && len(s.routes[i].prefix) > len(s.routes[i-1].prefix); i-- {
		s.routes[i], s.routes[i-1] = s.routes[i-1], s.routes[i]
	}
}

func (s *serviceRouter) RoundTrip(r *http.Request) (*http.Response, error) {
	u := r.URL.Scheme + "://" + r.URL.Host + r.URL.Path
	s.mu.RLock()
	rt := s.identity
	for _, route := range s.routes {
		if u == route.prefix || strings.HasPrefix(u, route.prefix+"/") {
			rt = route.rt
			break
		}
	}
	s.mu.RUnlock()
	return rt.RoundTrip(r)
}

// pathOf is the path of a URL, "" if it has none or does not parse.
func pathOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Path
}

// operationName names a request from its method and path alone, with
// every ID replaced, so the label takes few values: GET
// /v2.1/servers/detail is "servers.list", DELETE
// /v2/lbaas/loadbalancers/<id> is "loadbalancers.delete", PUT
// /v2/lbaas/pools/<id>/members is "pools.members.replace", POST
// /v2.1/servers/<id>/action is "servers.action".
func operationName(method, path string) string {
	var words []string
	endsWithID := false
	for _, seg := range strings.Split(strings.Trim(path, "/"), "/") {
		switch {
		case seg == "" || seg == "lbaas" || isVersion(seg):
			continue
		case isID(seg):
			endsWithID = true
			continue
		case seg == "detail":
			// GET /servers/detail lists servers with their details.
			endsWithID = false
			continue
		}
		words = append(words, seg)
		endsWithID = false
	}
	if len(words) == 0 {
		return "versions"
	}
	name := strings.Join(words, ".")
	verbs := collectionVerbs
	switch {
	case namedActions[words[len(words)-1]]:
		return name
	case endsWithID:
		verbs = itemVerbs
	}
	if v, ok := verbs[method]; ok {
		return name + "." + v
	}
	return name + "." + strings.ToLower(method)
}

var (
	collectionVerbs = map[string]string{"GET": "list", "HEAD": "list", "POST": "create", "PUT": "replace"}
	itemVerbs       = map[string]string{"GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "update", "DELETE": "delete"}
	// namedActions are path words that name the operation themselves.
	namedActions = map[string]bool{
		"action": true, "add_extraroutes": true, "remove_extraroutes": true,
		"add_router_interface": true, "remove_router_interface": true,
		"status": true, "stats": true, "failover": true,
	}
)

// isVersion matches API version path segments: v2, v2.0, v2.1, v3.
func isVersion(seg string) bool {
	if len(seg) < 2 || seg[0] != 'v' {
		return false
	}
	for _, c := range seg[1:] {
		if (c < '0' || c > '9') && c != '.' {
			return false
		}
	}
	return true
}

// isID says a path segment is an identifier, not an API word: API words
// are short and have no digits; UUIDs, hex IDs and numbers do, and so do
// names used as IDs. Anything long counts as an ID too, to keep the
// label's values few whatever a path holds.
func isID(seg string) bool {
	if len(seg) > 32 {
		return true
	}
	for _, c := range seg {
		if (c < 'a' || c > 'z') && c != '-' && c != '_' {
			return true
		}
	}
	return false
}
