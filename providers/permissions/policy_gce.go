package permissions

import (
	"bytes"
	"fmt"
	"strings"
)

// GCEPolicy is a Google Cloud IAM custom role including the grants'
// permissions, in the YAML `gcloud iam roles create ROLE_ID
// --project=PROJECT_ID --file=FILE` reads: title, description, stage and
// includedPermissions (IAM "Create and manage custom roles", the role's
// YAML file). The title (at most 100 characters) and description (at
// most 256) are short and fixed; how to create and grant the role is in
// comments, which gcloud ignores.
//
// A role has no per-permission scope: a grant with a Scope (checked in
// the Shared VPC host project rather than the cluster's) is a permission
// of the role like any other, and a comment says where the role must be
// granted for it.
func GCEPolicy(grants []Grant) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("# The multicloud-ccm cloud-controller-manager's custom role. Create it with\n")
	b.WriteString("#   gcloud iam roles create multicloudCcm --project=PROJECT_ID --file=THIS_FILE\n")
	b.WriteString("# and grant it to the manager's service account on the cluster's project (projectID).\n")
	scopes, byScope := byScope(grants)
	for _, s := range scopes {
		fmt.Fprintf(&b, "# Checked on %s, so grant the role there too: %s.\n", gceComment(s), strings.Join(byScope[s], ", "))
	}
	b.WriteString("title: multicloud-ccm\n")
	b.WriteString("description: Least-privilege role of the multicloud-ccm cloud-controller-manager, generated from its declared permissions.\n")
	b.WriteString("stage: GA\n")
	perms := Permissions(grants)
	if len(perms) == 0 {
		b.WriteString("includedPermissions: []\n")
		return b.Bytes(), nil
	}
	b.WriteString("includedPermissions:\n")
	for _, p := range perms {
		if p == "" || strings.ContainsAny(p, " :#'\"\n\t") {
			return nil, fmt.Errorf("%q is not an IAM permission name", p)
		}
		fmt.Fprintf(&b, "- %s\n", p)
	}
	return b.Bytes(), nil
}

// gceComment keeps a scope on its comment line.
func gceComment(s string) string { return strings.Join(strings.Fields(s), " ") }
