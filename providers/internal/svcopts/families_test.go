package svcopts

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestFamilies(t *testing.T) {
	for _, c := range []struct {
		in   []v1.IPFamily
		want []v1.IPFamily
	}{
		{nil, []v1.IPFamily{v1.IPv4Protocol}},
		{[]v1.IPFamily{v1.IPv6Protocol}, []v1.IPFamily{v1.IPv6Protocol}},
		{[]v1.IPFamily{v1.IPv6Protocol, v1.IPv4Protocol}, []v1.IPFamily{v1.IPv6Protocol, v1.IPv4Protocol}},
		{[]v1.IPFamily{"", v1.IPv4Protocol}, []v1.IPFamily{v1.IPv4Protocol}},
	} {
		svc := &v1.Service{Spec: v1.ServiceSpec{IPFamilies: c.in}}
		if got := Families(svc); !slices.Equal(got, c.want) {
			t.Errorf("Families(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	svc := &v1.Service{Spec: v1.ServiceSpec{IPFamilies: []v1.IPFamily{v1.IPv6Protocol}}}
	if HasFamily(svc, v1.IPv4Protocol) || !HasFamily(svc, v1.IPv6Protocol) {
		t.Error("HasFamily of an IPv6-only Service")
	}
}

func TestSourceRangesGiven(t *testing.T) {
	if SourceRangesGiven(&v1.Service{}) {
		t.Error("no ranges: given")
	}
	if !SourceRangesGiven(&v1.Service{Spec: v1.ServiceSpec{LoadBalancerSourceRanges: []string{"10.0.0.0/8"}}}) {
		t.Error("spec ranges: not given")
	}
	ann := &v1.Service{}
	ann.Annotations = map[string]string{v1.AnnotationLoadBalancerSourceRangesKey: " "}
	if SourceRangesGiven(ann) {
		t.Error("blank annotation: given (the helper reads it as the default)")
	}
	ann.Annotations[v1.AnnotationLoadBalancerSourceRangesKey] = "::/0"
	if !SourceRangesGiven(ann) {
		t.Error("annotation ranges: not given")
	}
	if got := AllClients(v1.IPv4Protocol, v1.IPv6Protocol); len(got) != 2 || got[0].String() != "0.0.0.0/0" || got[1].String() != "::/0" {
		t.Errorf("AllClients = %v", got)
	}
}
