package openstack

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/upstreamann"
)

func TestUpstreamAnnotationsTable(t *testing.T) {
	b := Backend()
	if b.UpstreamAnnotations == nil || b.ImportConfig == nil {
		t.Fatal("Backend() does not register the upstream annotation table and the importer")
	}
	table := upstreamAnnotations()
	if err := table.Validate(); err != nil {
		t.Fatal(err)
	}
	// The OpenStack backend serves every LoadBalancer Service itself.
	if table.Elsewhere != nil {
		t.Error("Elsewhere is set, but no Service is handed to another controller")
	}
	for _, a := range table.Annotations {
		if !strings.HasPrefix(a.Ref, upstreamRef) {
			t.Errorf("%s: Ref %q is not in the upstream annotation file", a.Key, a.Ref)
		}
	}

	// Every annotation of ours is an upstream key (we have no
	// OpenStack-only ones), read with its upstream meaning: Supported.
	ours := svcoptsAnnotations(t)
	if len(ours) < 8 {
		t.Fatalf("found only %d svcopts.Annotation constants: %q", len(ours), ours)
	}
	for _, key := range ours {
		a := table.Lookup(key)
		switch {
		case a == nil:
			t.Errorf("%s: read by this backend but missing from the table", key)
		case a.Support != upstreamann.Supported || a.ByValue != nil:
			t.Errorf("%s: read by this backend with the upstream meaning, but listed as %v", key, a.Support)
		}
	}
}

// svcoptsAnnotations reads the values of the package's svcopts.Annotation
// constants from its source, so a new one cannot be missed here.
func svcoptsAnnotations(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				sel, ok := vs.Type.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "Annotation" || sel.X.(*ast.Ident).Name != "svcopts" {
					continue
				}
				for _, v := range vs.Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok {
						t.Fatalf("%s: svcopts.Annotation constant is not a string literal", fset.Position(v.Pos()))
					}
					key, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					keys = append(keys, key)
				}
			}
		}
	}
	return keys
}

func TestUpstreamAnnotationsCheck(t *testing.T) {
	table := upstreamAnnotations()
	svc := func(ann map[string]string) *v1.Service {
		return &v1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Annotations: ann},
			Spec:       v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer},
		}
	}
	for _, tt := range []struct {
		name                  string
		ann                   map[string]string
		wantIgnored, wantRefd []string
	}{
		{name: "no annotations"},
		{
			name: "ours are supported",
			ann: map[string]string{
				"service.beta.kubernetes.io/openstack-internal-load-balancer": "true",
				"loadbalancer.openstack.org/keep-floatingip":                  "true",
				"loadbalancer.openstack.org/enable-health-monitor":            "false",
			},
		},
		{
			// Served since issue 20: the backend checks their values.
			name: "timeouts, flavor, monitor settings and hostname are supported",
			ann: map[string]string{
				"loadbalancer.openstack.org/timeout-client-data": "600000", "loadbalancer.openstack.org/flavor-id": "f1",
				"loadbalancer.openstack.org/availability-zone": "az1", "loadbalancer.openstack.org/connection-limit": "100",
				"loadbalancer.openstack.org/health-monitor-max-retries-down": "5", "loadbalancer.openstack.org/hostname": "lb.example.com",
			},
		},
		{
			name:     "TLS termination is refused",
			ann:      map[string]string{"loadbalancer.openstack.org/default-tls-container-ref": "https://barbican.example.com/v1/containers/0f1e2d3c"},
			wantRefd: []string{"loadbalancer.openstack.org/default-tls-container-ref"},
		},
		{
			name: "an empty TLS reference is TLS off, as here",
			ann:  map[string]string{"loadbalancer.openstack.org/default-tls-container-ref": ""},
		},
		{
			name: "proxy protocol and X-Forwarded-For are supported, whatever the value",
			ann:  map[string]string{"loadbalancer.openstack.org/proxy-protocol": "v2", "loadbalancer.openstack.org/x-forwarded-for": "true"},
		},
		{
			// What the upstream CCM leaves on every Service it
			// provisioned: no refusal after the switch.
			name:        "upstream's own write-backs",
			ann:         map[string]string{"loadbalancer.openstack.org/load-balancer-id": "0d9b3c4e-1f2a-4b5c-8d6e-7f8091a2b3c4", "loadbalancer.openstack.org/load-balancer-address": "203.0.113.7"},
			wantIgnored: nil, // load-balancer-id is read by the backend; load-balancer-address only written
		},
		{
			name:        "class and TLS container are refused, port, network and node selector supported, unknown keys left alone",
			ann:         map[string]string{"loadbalancer.openstack.org/class": "dmz", "loadbalancer.openstack.org/default-tls-container-ref": "https://barbican/v1/containers/c1", "loadbalancer.openstack.org/port-id": "p1", "loadbalancer.openstack.org/network-id": "n1", "loadbalancer.openstack.org/node-selector": "env=prod", "example.com/other": "x"},
			wantIgnored: nil,
			wantRefd:    []string{"loadbalancer.openstack.org/class", "loadbalancer.openstack.org/default-tls-container-ref"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ignored, refused := table.Check(svc(tt.ann))
			keys := func(fs []upstreamann.Finding) []string {
				var out []string
				for _, f := range fs {
					out = append(out, f.Key)
				}
				return out
			}
			if got := keys(ignored); !slices.Equal(got, tt.wantIgnored) {
				t.Errorf("ignored %q, want %q", got, tt.wantIgnored)
			}
			if got := keys(refused); !slices.Equal(got, tt.wantRefd) {
				t.Errorf("refused %q, want %q", got, tt.wantRefd)
			}
			for _, f := range append(ignored, refused...) {
				if msg := f.Message(table.Upstream); !strings.Contains(msg, f.Annotation.Note) {
					t.Errorf("message %q lacks the note", msg)
				}
			}
		})
	}
}
