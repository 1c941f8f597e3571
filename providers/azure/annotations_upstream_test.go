package azure

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/upstreamann"
)

func TestUpstreamAnnotationsTableIsComplete(t *testing.T) {
	table := upstreamAnnotations()
	if err := table.Validate(); err != nil {
		t.Fatal(err)
	}
	refRE := regexp.MustCompile(`^kubernetes-sigs/cloud-provider-azure(@[0-9a-f]+)? \S+:\d+$`)
	for _, a := range table.Annotations {
		if !refRE.MatchString(a.Ref) {
			t.Errorf("%s: Ref %q is not \"<repo> <path>:<line>\"", a.Key, a.Ref)
		}
	}
	if table.Elsewhere != nil {
		t.Error("Elsewhere is set, but this backend hands no Service to another controller")
	}
}

// ourAnnotations are the values of this package's svcopts.Annotation
// constants, read from its source so a new one cannot be missed.
func ourAnnotations(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			sel, ok := vs.Type.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Annotation" {
				return true
			}
			for i, id := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok {
					t.Fatalf("%s: constant %s is not a string literal", name, id.Name)
				}
				v, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				out[id.Name] = v
			}
			return true
		})
	}
	if len(out) == 0 {
		t.Fatal("found no svcopts.Annotation constant")
	}
	return out
}

func TestUpstreamAnnotationsSupportedAreOurs(t *testing.T) {
	table := upstreamAnnotations()
	ours := map[string]bool{
		// read by svcopts.SourceRanges, like spec.loadBalancerSourceRanges
		v1.AnnotationLoadBalancerSourceRangesKey: true,
	}
	for name, key := range ourAnnotations(t) {
		ours[key] = true
		a := table.Lookup(key)
		if a == nil {
			continue // a key of ours alone
		}
		if a.Support != upstreamann.Supported || a.ByValue != nil {
			t.Errorf("%s (%s) is read here with upstream's meaning, but the table says %s", name, key, a.Support)
		}
	}
	for _, a := range table.Annotations {
		if a.Support == upstreamann.Supported && a.ByValue == nil && !ours[a.Key] {
			t.Errorf("%s is Supported, but no annotation constant of this backend reads it", a.Key)
		}
	}
}

func TestUpstreamAnnotationsCheck(t *testing.T) {
	table := upstreamAnnotations()
	for _, tc := range []struct {
		name             string
		annotations      map[string]string
		ignored, refused []string
	}{
		{
			name:        "supported",
			annotations: map[string]string{"service.beta.kubernetes.io/azure-load-balancer-internal": "true", "service.beta.kubernetes.io/azure-pip-name": "web"},
		},
		{
			name:        "not an upstream annotation",
			annotations: map[string]string{"example.com/owner": "web"},
		},
		{
			name:        "public IP tags are served",
			annotations: map[string]string{"service.beta.kubernetes.io/azure-pip-tags": "team=web"},
		},
		{
			name:        "pinned IPv4 and IPv6 addresses are served, an IPv6 prefix refused",
			annotations: map[string]string{"service.beta.kubernetes.io/azure-load-balancer-ipv4": "20.1.2.3", "service.beta.kubernetes.io/azure-load-balancer-ipv6": "2001:db8::1", "service.beta.kubernetes.io/azure-pip-prefix-id-ipv6": "/subscriptions/x/resourceGroups/y/providers/Microsoft.Network/publicIPPrefixes/p6"},
			refused:     []string{"service.beta.kubernetes.io/azure-pip-prefix-id-ipv6"},
		},
		{
			name:        "a Private Link Service is refused",
			annotations: map[string]string{"service.beta.kubernetes.io/azure-pls-create": "True", "service.beta.kubernetes.io/azure-pls-name": "web-pls"},
			ignored:     []string{"service.beta.kubernetes.io/azure-pls-name"},
			refused:     []string{"service.beta.kubernetes.io/azure-pls-create"},
		},
		{
			name:        "no Private Link Service asked for",
			annotations: map[string]string{"service.beta.kubernetes.io/azure-pls-create": "false"},
		},
		{
			name:        "floating IP off is what happens anyway",
			annotations: map[string]string{"service.beta.kubernetes.io/azure-disable-load-balancer-floating-ip": "true"},
		},
		{
			name:        "floating IP on or off is served",
			annotations: map[string]string{"service.beta.kubernetes.io/azure-disable-load-balancer-floating-ip": "false"},
		},
		{
			name: "probe values we use anyway",
			annotations: map[string]string{
				"service.beta.kubernetes.io/azure-load-balancer-health-probe-protocol":     "Tcp",
				"service.beta.kubernetes.io/azure-load-balancer-health-probe-interval":     "5",
				"service.beta.kubernetes.io/azure-load-balancer-health-probe-num-of-probe": "2",
				"service.beta.kubernetes.io/port_443_health-probe_protocol":                "tcp",
			},
		},
		{
			name: "probe settings are served",
			annotations: map[string]string{
				"service.beta.kubernetes.io/azure-load-balancer-health-probe-protocol": "Https",
				"service.beta.kubernetes.io/port_80_health-probe_interval":             "10",
				"service.beta.kubernetes.io/port_80_health-probe_request-path":         "/healthz",
			},
		},
		{
			name: "ports kept off the load balancer or its probes are served",
			annotations: map[string]string{
				"service.beta.kubernetes.io/port_10256_no_lb_rule":  "true",
				"service.beta.kubernetes.io/port_443_no_probe_rule": "true",
				"service.beta.kubernetes.io/port_80_no_lb_rule":     "false",
			},
		},
		{
			name:        "a cross-region load balancer's extra addresses are refused",
			annotations: map[string]string{"service.beta.kubernetes.io/azure-additional-public-ips": "20.1.2.3", "service.beta.kubernetes.io/azure-deny-all-except-load-balancer-source-ranges": "true"},
			refused:     []string{"service.beta.kubernetes.io/azure-additional-public-ips"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", Annotations: tc.annotations}}
			ignored, refused := table.Check(svc)
			if got := findingKeys(ignored); strings.Join(got, ",") != strings.Join(tc.ignored, ",") {
				t.Errorf("ignored = %v, want %v", got, tc.ignored)
			}
			if got := findingKeys(refused); strings.Join(got, ",") != strings.Join(tc.refused, ",") {
				t.Errorf("refused = %v, want %v", got, tc.refused)
			}
			for _, f := range append(ignored, refused...) {
				if msg := f.Message(table.Upstream); !strings.Contains(msg, f.Annotation.Note) || !strings.Contains(msg, "the upstream Azure CCM") {
					t.Errorf("message %q does not carry the note", msg)
				}
			}
		})
	}
}

func findingKeys(fs []upstreamann.Finding) []string {
	var keys []string
	for _, f := range fs {
		keys = append(keys, f.Key)
	}
	return keys
}
