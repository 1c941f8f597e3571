package cloudsim

import (
	"net/http"
	"slices"
	"sort"
	"sync"
)

// Authorizer is what a Cloud may also implement to answer as the cloud
// does when the caller's identity lacks a permission: the permissions a
// call needs, in the cloud's own words, and the cloud's own denial. With
// a policy set (Server.SetPolicy) a call needing a permission outside it
// is denied and never served; without one every call is served, and the
// permissions calls needed are recorded either way (Server.Used), so a
// test can compare what the code calls with what it declares.
type Authorizer interface {
	// Principal is the identity r calls as, as the cloud tells callers
	// apart (AWS: the access key ID of its signature). A policy applies
	// to one principal; the calls of others (a test harness acting as the
	// user) are neither checked nor recorded.
	Principal(r *http.Request) string
	// Permissions are what the call r for op needs: AWS IAM actions
	// ("ec2:DescribeInstances"), Azure RBAC actions
	// ("Microsoft.Network/loadBalancers/write", and the linked
	// resources' "*/join/action"), GCE IAM permissions
	// ("compute.instances.list"), OpenStack policy rules
	// ("os_compute_api:servers:detail"). It may read r.Body: the Server
	// restores it before Serve.
	Permissions(r *http.Request, op string) []string
	// WriteDenied answers r with the cloud's authorization error for
	// missing, the first permission the policy lacks.
	WriteDenied(w http.ResponseWriter, r *http.Request, op, missing string)
}

// authz is the Server's policy and what calls needed.
type authz struct {
	mu sync.Mutex
	// principal is whose calls are checked and recorded; "" every caller's.
	principal string
	// allowed is the policy; nil: none set, everything is allowed.
	allowed map[string]bool
	// used counts the permissions calls needed, by permission.
	used map[string]int
	// denied counts denials, by permission.
	denied map[string]int
}

// SetPolicy makes the Server deny every call of principal ("" for any
// caller) that needs a permission outside allowed, as the cloud would;
// nil lifts the policy. Clouds that do not implement Authorizer serve
// every call.
func (s *Server) SetPolicy(principal string, allowed []string) {
	s.authz.mu.Lock()
	defer s.authz.mu.Unlock()
	s.authz.principal = principal
	if allowed == nil {
		s.authz.allowed = nil
		return
	}
	s.authz.allowed = map[string]bool{}
	for _, p := range allowed {
		s.authz.allowed[p] = true
	}
}

// Used lists the permissions the principal's calls have needed since the Server started
// (or ResetUsed), sorted.
func (s *Server) Used() []string {
	s.authz.mu.Lock()
	defer s.authz.mu.Unlock()
	return sortedKeys(s.authz.used)
}

// Denied lists the permissions calls were denied for, sorted.
func (s *Server) Denied() []string {
	s.authz.mu.Lock()
	defer s.authz.mu.Unlock()
	return sortedKeys(s.authz.denied)
}

// ResetUsed forgets the permissions used and denied so far.
func (s *Server) ResetUsed() {
	s.authz.mu.Lock()
	defer s.authz.mu.Unlock()
	s.authz.used, s.authz.denied = nil, nil
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// authorize records what the call needs and says which permission the
// policy lacks ("" when none is missing or the cloud enforces nothing).
func (s *Server) authorize(r *http.Request, op string) (Authorizer, string) {
	a, ok := s.cloud.(Authorizer)
	if !ok {
		return nil, ""
	}
	s.authz.mu.Lock()
	principal := s.authz.principal
	s.authz.mu.Unlock()
	if principal != "" && a.Principal(r) != principal {
		return a, ""
	}
	need := a.Permissions(r, op)
	s.authz.mu.Lock()
	defer s.authz.mu.Unlock()
	if s.authz.used == nil {
		s.authz.used = map[string]int{}
	}
	missing := ""
	for _, p := range need {
		s.authz.used[p]++
		if missing == "" && s.authz.allowed != nil && !s.authz.allowed[p] {
			missing = p
		}
	}
	if missing != "" {
		if s.authz.denied == nil {
			s.authz.denied = map[string]int{}
		}
		s.authz.denied[missing]++
	}
	return a, missing
}

// Missing lists the permissions of used that allowed lacks, sorted: what
// a declared policy misses of what the code called.
func Missing(used, allowed []string) []string {
	var out []string
	for _, p := range used {
		if !slices.Contains(allowed, p) {
			out = append(out, p)
		}
	}
	return out
}
