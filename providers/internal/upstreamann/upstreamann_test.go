package upstreamann

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var testTable = &Table{
	Upstream: "the upstream Example CCM",
	Annotations: []Annotation{
		{Key: "example.com/internal", Support: Supported, Upstream: "internal scheme", Ref: "x.go:1"},
		{Key: "example.com/idle-timeout", Support: Ignored, Upstream: "idle timeout", Note: "the timeout is the cloud's default of 350 s", Ref: "x.go:2"},
		{Key: "example.com/ssl-cert", Support: Refused, Upstream: "TLS listeners", Note: "TLS is not terminated here", Ref: "x.go:3"},
		{Key: "example.com/backend-protocol", Support: Refused, Upstream: "backend protocol", Note: "backends speak TCP only", Ref: "x.go:4",
			ByValue: func(v string) Support {
				if v == "tcp" {
					return Supported
				}
				return Refused
			}},
		{Key: "example.com/port_" + PortPlaceholder + "_probe", Support: Ignored, Upstream: "per-port probe", Note: "probes are TCP", Ref: "x.go:5"},
	},
}

func svc(ann map[string]string) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u1", Annotations: ann}}
}

func keys(fs []Finding) string {
	var ks []string
	for _, f := range fs {
		ks = append(ks, f.Key)
	}
	return strings.Join(ks, ",")
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		ann              map[string]string
		ignored, refused string
	}{
		{ann: nil},
		{ann: map[string]string{"example.com/internal": "true", "other.io/x": "1"}},
		{ann: map[string]string{"example.com/idle-timeout": "60"}, ignored: "example.com/idle-timeout"},
		{ann: map[string]string{"example.com/ssl-cert": "arn", "example.com/idle-timeout": "60"}, ignored: "example.com/idle-timeout", refused: "example.com/ssl-cert"},
		{ann: map[string]string{"example.com/backend-protocol": "tcp"}},
		{ann: map[string]string{"example.com/backend-protocol": "http"}, refused: "example.com/backend-protocol"},
		{ann: map[string]string{"example.com/port_443_probe": "x", "example.com/port_x_probe": "y"}, ignored: "example.com/port_443_probe"},
	} {
		ig, rf := testTable.Check(svc(tc.ann))
		if keys(ig) != tc.ignored || keys(rf) != tc.refused {
			t.Errorf("Check(%v) = ignored %q refused %q; want %q %q", tc.ann, keys(ig), keys(rf), tc.ignored, tc.refused)
		}
	}
	elsewhere := *testTable
	elsewhere.Elsewhere = func(*v1.Service) bool { return true }
	if ig, rf := elsewhere.Check(svc(map[string]string{"example.com/ssl-cert": "arn"})); ig != nil || rf != nil {
		t.Errorf("a Service handled elsewhere was judged: %v %v", ig, rf)
	}
}

func TestValidate(t *testing.T) {
	if err := testTable.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := &Table{Annotations: []Annotation{
		{Key: "a", Support: Ignored, Upstream: "u", Ref: "r"},
		{Key: "a", Upstream: "u", Ref: "r"},
		{Key: "b", Ref: "r"},
	}}
	err := bad.Validate()
	for _, want := range []string{"a: ignored or refused without a note", "a: listed twice", "b: no upstream meaning", "does not name its upstream"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to say %q", err, want)
		}
	}
}
