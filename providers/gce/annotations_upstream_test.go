package gce

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/svcopts"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/upstreamann"
)

// TestUpstreamAnnotationsTable: the table is complete, and every
// annotation of ours that is an upstream key is served with its meaning.
func TestUpstreamAnnotationsTable(t *testing.T) {
	tab := upstreamAnnotations()
	if err := tab.Validate(); err != nil {
		t.Fatal(err)
	}
	if Backend().UpstreamAnnotations == nil || Backend().ImportConfig == nil {
		t.Error("Backend() does not register the table and the importer")
	}
	for _, ours := range []svcopts.Annotation{
		annotationLBType, annotationLBTypeLegacy, annotationILBSubnet,
		annotationILBGlobalAccess, annotationNetworkTier, annotationRBS,
	} {
		a := tab.Lookup(string(ours))
		if a == nil {
			t.Errorf("%s: ours reads it as upstream does, but the table lacks it", ours)
			continue
		}
		if a.Support != upstreamann.Supported {
			t.Errorf("%s: %v, want supported", ours, a.Support)
		}
		if !strings.HasPrefix(a.Ref, upstreamRepo+" providers/gce/") {
			t.Errorf("%s: ref %q", ours, a.Ref)
		}
	}
}

// TestUpstreamAnnotationsCheck: what the gate says for a Service.
func TestUpstreamAnnotationsCheck(t *testing.T) {
	tab := upstreamAnnotations()
	for _, tt := range []struct {
		name             string
		ann              map[string]string
		ignored, refused []string
	}{
		{"served as upstream", map[string]string{
			string(annotationLBType): "Internal", string(annotationILBGlobalAccess): "true",
			string(annotationNetworkTier): "Standard", v1.AnnotationLoadBalancerSourceRangesKey: "10.0.0.0/8",
			"example.com/unrelated": "x",
		}, nil, nil},
		{"legacy type, external by value", map[string]string{string(annotationLBTypeLegacy): "External"}, nil, nil},
		{"backend share true is ignored", map[string]string{"alpha.cloud.google.com/load-balancer-backend-share": "true"},
			[]string{"alpha.cloud.google.com/load-balancer-backend-share"}, nil},
		{"backend share false is upstream's default", map[string]string{"cloud.google.com/load-balancer-backend-share": "false"}, nil, nil},
		{"type upstream would read as external", map[string]string{string(annotationLBType): "INTERNAL"},
			nil, []string{string(annotationLBType)}},
		{"global access upstream would not grant", map[string]string{string(annotationILBGlobalAccess): "True"},
			nil, []string{string(annotationILBGlobalAccess)}},
		{"global access false", map[string]string{string(annotationILBGlobalAccess): "false"}, nil, nil},
		{"left to GKE's controller: its annotations are not ours to judge", map[string]string{
			string(annotationRBS): "enabled", "alpha.cloud.google.com/load-balancer-backend-share": "true",
			string(annotationLBType): "INTERNAL",
		}, nil, nil},
		{"l4-rbs not enabled: served here", map[string]string{
			string(annotationRBS): "disabled", "cloud.google.com/load-balancer-backend-share": "true",
		}, []string{"cloud.google.com/load-balancer-backend-share"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ignored, refused := tab.Check(svcWith(tt.ann))
			if got := findingKeys(ignored); strings.Join(got, ",") != strings.Join(tt.ignored, ",") {
				t.Errorf("ignored %q, want %q", got, tt.ignored)
			}
			if got := findingKeys(refused); strings.Join(got, ",") != strings.Join(tt.refused, ",") {
				t.Errorf("refused %q, want %q", got, tt.refused)
			}
			for _, f := range append(ignored, refused...) {
				if msg := f.Message(tab.Upstream); !strings.Contains(msg, f.Key) || !strings.Contains(msg, f.Annotation.Note) {
					t.Errorf("message %q", msg)
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
