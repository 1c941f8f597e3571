package aws

import (
	"errors"
	"slices"
	"strings"
	"testing"

	decl "github.com/multicloud-ccm/multicloud-ccm/providers/permissions"
	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

// TestPermissionsDeclared: the declaration is well-formed, and every
// optional feature is one a setting turns on.
func TestPermissionsDeclared(t *testing.T) {
	d := Permissions()
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	on := PermissionFeatures(&Section{RouteTables: RouteTableSelection{Discover: true}, NodeIPAM: NodeIPAMConfig{AssignIPv6Prefix: true}, AssumeRole: AssumeRole{RoleARN: "arn:aws:iam::1:role/r"}}, true)
	for _, f := range d.Features {
		if !f.Optional && !slices.Contains(on, f.Name) {
			t.Errorf("feature %s is always on but no config turns it on", f.Name)
		}
	}
}

// TestDeniedNamesPermissionAndFeature: a call the cloud refuses for want
// of a permission is an error naming the IAM action and the features that
// need it, and never "the instance is gone".
func TestDeniedNamesPermissionAndFeature(t *testing.T) {
	env := newTestEnv(t, nil)
	id := env.launch(t, cloudsimaws.LaunchSpec{Count: 1})[0]
	all, _ := Permissions().Grants()
	allowed := slices.DeleteFunc(decl.Permissions(all), func(p string) bool { return p == "ec2:DescribeInstances" })
	env.srv.SetPolicy("AKIDTEST", allowed)
	node := env.nodeByProviderID(t, id)
	exists, err := env.in.InstanceExists(t.Context(), node)
	if err == nil || exists {
		t.Fatalf("InstanceExists without ec2:DescribeInstances = %v, %v; want an error", exists, err)
	}
	var denied *decl.DeniedError
	if !errors.As(err, &denied) || denied.Permission != "ec2:DescribeInstances" || !strings.Contains(denied.Features, "nodes") {
		t.Fatalf("error %v; want a DeniedError naming ec2:DescribeInstances and the nodes feature", err)
	}
	if !strings.Contains(err.Error(), "ec2:DescribeInstances") || !strings.Contains(err.Error(), "nodes") {
		t.Errorf("message does not say what to grant: %v", err)
	}
}

// TestZoneIDLabelDegrades: without ec2:DescribeAvailabilityZones a Node
// is initialized without the zone-ID label instead of never.
func TestZoneIDLabelDegrades(t *testing.T) {
	env := newTestEnv(t, nil)
	id := env.launch(t, cloudsimaws.LaunchSpec{Count: 1})[0]
	all, _ := Permissions().Grants()
	env.srv.SetPolicy("AKIDTEST", slices.DeleteFunc(decl.Permissions(all), func(p string) bool { return p == "ec2:DescribeAvailabilityZones" }))
	md, err := env.in.InstanceMetadata(t.Context(), env.nodeByProviderID(t, id))
	if err != nil {
		t.Fatalf("metadata without the zone-ID permission: %v", err)
	}
	if md.Zone == "" || md.AdditionalLabels["topology.k8s.aws/zone-id"] != "" {
		t.Errorf("metadata %+v; want the zone and no zone-ID label", md)
	}
}
