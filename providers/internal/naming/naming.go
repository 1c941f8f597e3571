// Package naming makes the deterministic names of the cloud resources a
// backend creates for a Service: a fixed prefix, short readable parts for
// people reading the cloud console, and a hash of the cluster ID and the
// Service's namespace and name that makes the name unique. Everything is
// found again by these names after a crash or restart, so they must come
// out the same on every run.
//
// Every format here is persisted in the clouds (resource names, tags):
// it MUST NOT change, or every existing resource is orphaned.
package naming

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// ServiceKey is "<namespace>/<name>", the Service's identity in tags and
// messages. MUST NOT change: it is stored in resource tags.
func ServiceKey(svc *v1.Service) string { return svc.Namespace + "/" + svc.Name }

// ServiceHash identifies a Service within a cluster: the first n hex
// characters of sha256(clusterID NUL namespace NUL name). The UID is left
// out on purpose: a Service deleted and re-created under the same name must
// find (and, after a crash, clean up) what its predecessor's run left
// behind. MUST NOT change.
func ServiceHash(clusterID string, svc *v1.Service, n int) string {
	sum := sha256.Sum256([]byte(clusterID + "\x00" + svc.Namespace + "\x00" + svc.Name))
	h := hex.EncodeToString(sum[:])
	if n > len(h) {
		n = len(h)
	}
	return h[:n]
}

// Alnum keeps the lowercase letters and digits of s, up to n of them, so a
// readable part never brings a separator, an upper-case letter or a
// character a cloud refuses into a name.
func Alnum(s string, n int) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if b.Len() >= n {
			break
		}
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Scheme is one cloud's rule for a Service's resource names:
//
//	<Prefix>-<namespace[:ReadableLen]>-<name[:ReadableLen]>-<hash[:HashLen]>
//
// with "-" as the separator, readable parts reduced to [a-z0-9] (empty ones
// left out) and shortened further if needed to stay within MaxLen. The
// result starts with Prefix (choose one that starts with a letter where
// the cloud demands it) and ends with the hash, so it never ends in "-".
type Scheme struct {
	Prefix      string
	ReadableLen int
	HashLen     int
	// MaxLen is the cloud's limit on the whole name; 0 means none.
	MaxLen int
}

// Name is the Service's name under the scheme. MUST NOT change for a
// given scheme: existing resources are found by it.
func (s Scheme) Name(clusterID string, svc *v1.Service) string {
	readable := s.ReadableLen
	if s.MaxLen > 0 {
		// Prefix, two readable parts, the hash and three separators.
		if budget := (s.MaxLen - len(s.Prefix) - s.HashLen - 3) / 2; budget < readable {
			readable = max(budget, 0)
		}
	}
	parts := []string{s.Prefix}
	for _, p := range []string{Alnum(svc.Namespace, readable), Alnum(svc.Name, readable)} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	parts = append(parts, ServiceHash(clusterID, svc, s.HashLen))
	return strings.Join(parts, "-")
}

// HashPrefix is "<Prefix>-<hash>-": a prefix every name derived from the
// Service's hash shares (AWS target groups "k8s-<hash>-80-tcp"), so all of
// a Service's resources of a kind are found by one prefix. MUST NOT change.
func (s Scheme) HashPrefix(clusterID string, svc *v1.Service) string {
	return s.Prefix + "-" + ServiceHash(clusterID, svc, s.HashLen) + "-"
}
