package naming

import (
	"regexp"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func svc(ns, name string) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: "uid"}}
}

// awsNLB is the scheme the AWS backend names NLBs with.
var awsNLB = Scheme{Prefix: "k8s", ReadableLen: 8, HashLen: 10, MaxLen: 32}

// The names below exist in clouds: a change here orphans them. These
// values were produced by the naming that shipped first and MUST NOT
// change.
func TestNamesAreStable(t *testing.T) {
	long := strings.Repeat("a", 63)
	for _, tc := range []struct{ cluster, ns, name, want, hashPrefix string }{
		{"prod", "default", "web", "k8s-default-web-0f148d335a", "k8s-0f148d335a-"},
		{"prod", long, long, "k8s-aaaaaaaa-aaaaaaaa-0861ef4384", "k8s-0861ef4384-"},
		{"prod", "-x-", "--", "k8s-x-fe0168764d", "k8s-fe0168764d-"},
		{"internal", "internal", "internal", "k8s-internal-internal-0eda5916e8", "k8s-0eda5916e8-"},
		{strings.Repeat("c", 200), "kube-system", "ingress-nginx-controller", "k8s-kubesyst-ingressn-c971682efc", "k8s-c971682efc-"},
		{"e2e-aws", "Default", "Web-Ä-1", "k8s-default-web1-183128bd54", "k8s-183128bd54-"},
	} {
		s := svc(tc.ns, tc.name)
		if got := awsNLB.Name(tc.cluster, s); got != tc.want {
			t.Errorf("Name(%q, %s/%s) = %q, want %q", tc.cluster, tc.ns, tc.name, got, tc.want)
		}
		if got := awsNLB.HashPrefix(tc.cluster, s); got != tc.hashPrefix {
			t.Errorf("HashPrefix(%q, %s/%s) = %q, want %q", tc.cluster, tc.ns, tc.name, got, tc.hashPrefix)
		}
	}
}

func TestNamesFitTheCloud(t *testing.T) {
	gceLike := regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)
	long := strings.Repeat("x", 253)
	for _, sch := range []Scheme{
		awsNLB,
		{Prefix: "a", ReadableLen: 20, HashLen: 16, MaxLen: 63},
		{Prefix: "kube", ReadableLen: 30, HashLen: 12, MaxLen: 40},
		{Prefix: "k", ReadableLen: 8, HashLen: 8},
	} {
		for _, s := range []*v1.Service{svc("default", "web"), svc(long, long), svc("---", "...")} {
			got := sch.Name("cluster", s)
			if sch.MaxLen > 0 && len(got) > sch.MaxLen {
				t.Errorf("%+v: %q is longer than %d", sch, got, sch.MaxLen)
			}
			if !gceLike.MatchString(got) {
				t.Errorf("%+v: %q has characters or separators a cloud refuses", sch, got)
			}
		}
	}
}

func TestNamesAreDistinctAndIgnoreTheUID(t *testing.T) {
	a := awsNLB.Name("c1", svc("ns", "svc"))
	other := svc("ns", "svc")
	other.UID = "another"
	if awsNLB.Name("c1", other) != a {
		t.Error("the name depends on the UID: a re-created Service would not find its resources")
	}
	// A shared 60-character prefix must not make two Services collide.
	p := strings.Repeat("p", 60)
	seen := map[string]string{}
	for _, s := range []*v1.Service{svc("ns", "svc2"), svc("ns2", "svc"), svc("ns", p+"-one"), svc("ns", p+"-two")} {
		for _, c := range []string{"c1", "c2"} {
			n := awsNLB.Name(c, s)
			if prev, dup := seen[n]; dup {
				t.Errorf("%s and %s/%s in %s collide: %s", prev, s.Namespace, s.Name, c, n)
			}
			seen[n] = c + "/" + ServiceKey(s)
		}
	}
	if _, dup := seen[a]; dup {
		t.Errorf("collision with %s", a)
	}
}

func TestAlnum(t *testing.T) {
	for in, want := range map[string]string{"Web-Ä-1": "web1", "": "", "abcdefghijk": "abcdefgh", "--": ""} {
		if got := Alnum(in, 8); got != want {
			t.Errorf("Alnum(%q, 8) = %q, want %q", in, got, want)
		}
	}
}
