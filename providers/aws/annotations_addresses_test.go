package aws

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
)

func TestAddressPins(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ann      map[string]string
		internal bool
		subnets  []string
		wantErr  string
		want     string // "subnet/alloc/ip;..."
	}{
		{name: "none", subnets: []string{"subnet-a"}, want: "subnet-a//"},
		{name: "Elastic IPs paired in order", ann: map[string]string{string(annotationEIPAllocations): "eipalloc-0000000a, eipalloc-0000000b"},
			subnets: []string{"subnet-a", "subnet-b"}, want: "subnet-a/eipalloc-0000000a/;subnet-b/eipalloc-0000000b/"},
		{name: "private addresses on an internal NLB", internal: true, ann: map[string]string{string(annotationPrivateIPv4): "10.0.1.10,10.0.2.10"},
			subnets: []string{"subnet-a", "subnet-b"}, want: "subnet-a//10.0.1.10;subnet-b//10.0.2.10"},
		{name: "count must match the subnets", ann: map[string]string{string(annotationEIPAllocations): "eipalloc-0000000a"},
			subnets: []string{"subnet-a", "subnet-b"}, wantErr: "1 addresses for 2 subnets"},
		{name: "not an allocation ID", ann: map[string]string{string(annotationEIPAllocations): "203.0.113.5"}, wantErr: "not an allocation ID"},
		{name: "Elastic IPs on an internal NLB", internal: true, ann: map[string]string{string(annotationEIPAllocations): "eipalloc-0000000a"}, wantErr: "this Service is internal"},
		{name: "private addresses on an internet-facing NLB", ann: map[string]string{string(annotationPrivateIPv4): "10.0.1.10"}, wantErr: "internet-facing"},
		{name: "not IPv4", internal: true, ann: map[string]string{string(annotationPrivateIPv4): "fd00::1"}, wantErr: "not an IPv4 address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := parseAddressPins(lbService(tc.ann), tc.internal)
			var ms []elbv2types.SubnetMapping
			if err == nil {
				ms, err = p.subnetMappings(tc.subnets)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range ms {
				got = append(got, aws.ToString(m.SubnetId)+"/"+aws.ToString(m.AllocationId)+"/"+aws.ToString(m.PrivateIPv4Address))
			}
			if strings.Join(got, ";") != tc.want {
				t.Errorf("mappings %s, want %s", strings.Join(got, ";"), tc.want)
			}
		})
	}
}
