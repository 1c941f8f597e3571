package permissions

import (
	"strings"
	"testing"
)

// TestGCEPolicy: a custom role as `gcloud iam roles create --file` reads
// it, permissions sorted and once, the scoped grants' permissions in the
// role and where else to grant it in a comment.
func TestGCEPolicy(t *testing.T) {
	got, err := GCEPolicy([]Grant{
		{Permission: "compute.targetPools.create", Why: "c"},
		{Permission: "compute.instances.list", Why: "l"},
		{Permission: "compute.firewalls.create", Scope: "the network's project", Why: "fw"},
		{Permission: "compute.networks.updatePolicy", Scope: "the network's project", Why: "fw"},
		{Permission: "compute.instances.list", Why: "again"},
	})
	if err != nil {
		t.Fatal(err)
	}
	const want = `# The multicloud-ccm cloud-controller-manager's custom role. Create it with
#   gcloud iam roles create multicloudCcm --project=PROJECT_ID --file=THIS_FILE
# and grant it to the manager's service account on the cluster's project (projectID).
# Checked on the network's project, so grant the role there too: compute.firewalls.create, compute.networks.updatePolicy.
title: multicloud-ccm
description: Least-privilege role of the multicloud-ccm cloud-controller-manager, generated from its declared permissions.
stage: GA
includedPermissions:
- compute.firewalls.create
- compute.instances.list
- compute.networks.updatePolicy
- compute.targetPools.create
`
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// IAM's limits: a title of at most 100 characters, a description of
	// at most 256.
	for _, line := range strings.Split(string(got), "\n") {
		if v, ok := strings.CutPrefix(line, "title: "); ok && len(v) > 100 {
			t.Errorf("title of %d characters", len(v))
		}
		if v, ok := strings.CutPrefix(line, "description: "); ok && len(v) > 256 {
			t.Errorf("description of %d characters", len(v))
		}
	}
	if _, err := GCEPolicy([]Grant{{Permission: "compute.x: y", Why: "w"}}); err == nil {
		t.Error("a permission that would break the YAML was accepted")
	}
}
