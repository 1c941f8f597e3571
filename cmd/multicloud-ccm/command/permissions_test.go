package command

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/multicloud-ccm/multicloud-ccm/providers"
)

// TestPermissionsCommand: the policy printed is the declared permissions
// of exactly the features the config turns on (routes only with a route
// table selected, orphan deletion only with orphans: delete), --features
// adds one, and an unknown feature names the known ones.
func TestPermissionsCommand(t *testing.T) {
	base := "apiVersion: multicloud-ccm.io/v1alpha1\nkind: CloudConfig\nprovider: aws\nclusterID: prod\n"
	actions := func(out string) []string {
		t.Helper()
		var doc struct {
			Statement []struct {
				Action []string `json:"Action"`
			} `json:"Statement"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("not an IAM policy: %v\n%s", err, out)
		}
		var all []string
		for _, s := range doc.Statement {
			all = append(all, s.Action...)
		}
		return all
	}
	plain := writeConfig(t, base+"aws:\n  region: eu-west-1\n")
	out, stderr, err := run(t, providers.Default, "permissions", plain)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	got := actions(out)
	for _, want := range []string{"ec2:DescribeInstances", "elasticloadbalancing:CreateLoadBalancer"} {
		if !slices.Contains(got, want) {
			t.Errorf("policy lacks %s: %v", want, got)
		}
	}
	for _, not := range []string{"ec2:CreateRoute", "ec2:DeleteTags", "ec2:AssignIpv6Addresses", "sts:AssumeRole"} {
		if slices.Contains(got, not) {
			t.Errorf("a config without that feature is granted %s", not)
		}
	}
	routes := writeConfig(t, base+"orphans: delete\naws:\n  region: eu-west-1\n  routeTables: {discover: true}\n  nodeIPAM: {assignIPv6Prefix: true}\n")
	out, _, err = run(t, providers.Default, "permissions", "--features", "tagging", routes)
	if err != nil {
		t.Fatal(err)
	}
	got = actions(out)
	for _, want := range []string{"ec2:CreateRoute", "ec2:DeleteTags", "ec2:AssignIpv6Addresses"} {
		if !slices.Contains(got, want) {
			t.Errorf("policy with routes, tagging and prefix assignment lacks %s", want)
		}
	}
	if _, _, err := run(t, providers.Default, "permissions", "--features", "volumes", plain); err == nil || !strings.Contains(err.Error(), "nodes") {
		t.Errorf("an unknown feature: %v, want an error listing the features", err)
	}
}
