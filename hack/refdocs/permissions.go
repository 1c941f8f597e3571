package main

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/multicloud-ccm/multicloud-ccm/providers"
)

// permissionsDir is where the policy documents are written, under the
// module root: deploy/permissions/<file>.
const permissionsDir = "deploy/permissions"

// policyFile names a cloud's policy document by its format.
func policyFile(cloud string) string {
	switch cloud {
	case "aws":
		return "aws-iam-policy.json"
	case "azure":
		return "azure-role.json"
	case "gce":
		return "gce-role.yaml"
	case "openstack":
		return "openstack-policy.yaml"
	}
	return cloud + "-policy.txt"
}

// renderPermissions documents the backend's declared permissions: a table
// per feature and the whole policy document, which is also written to
// deploy/permissions (renderPolicies). Backends that declare none yet say
// so.
func renderPermissions(b *bytes.Buffer, name string, backend providers.Backend) error {
	b.WriteString("## Permissions\n\n")
	if backend.Permissions == nil {
		b.WriteString("This backend declares no permissions yet.\n\n")
		return nil
	}
	d := backend.Permissions()
	if err := d.Validate(); err != nil {
		return err
	}
	fmt.Fprintf(b, "Generated from the backend's declaration (`providers/%s/permissions.go`). The\n", name)
	b.WriteString("conformance suite runs the emulator under exactly these, denying every other\n")
	b.WriteString("call as the cloud does, so the list cannot lag the code. `multicloud-ccm\n")
	b.WriteString("permissions CLOUD-CONFIG` prints the policy for the features a config turns\n")
	fmt.Fprintf(b, "on; the policy for all of them is [`%s/%s`](../../%s/%s).\n\n", permissionsDir, policyFile(name), permissionsDir, policyFile(name))
	b.WriteString("| Feature | When | Permission | Scope | Why |\n|---|---|---|---|---|\n")
	for _, f := range d.Features {
		when := "always"
		if f.Optional {
			when = "optional"
		}
		for i, g := range f.Grants {
			feature, doc := "", ""
			if i == 0 {
				feature, doc = code(f.Name), when
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", feature, doc, code(g.Permission), cell(g.Scope), cell(g.Why))
		}
	}
	b.WriteString("\n")
	for _, f := range d.Features {
		fmt.Fprintf(b, "- %s: %s", code(f.Name), strings.TrimSpace(f.Doc))
		if f.Degrades != "" {
			fmt.Fprintf(b, " Without it: %s", f.Degrades)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	return nil
}

// renderPolicies are the policy documents of every backend that declares
// permissions and renders a policy, all features on, by file name.
func renderPolicies(reg *providers.Registry) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, name := range reg.Compiled() {
		backend, _ := reg.Lookup(name)
		if backend.Permissions == nil || backend.Policy == nil {
			continue
		}
		grants, err := backend.Permissions().Grants()
		if err != nil {
			return nil, err
		}
		doc, err := backend.Policy(grants)
		if err != nil {
			return nil, fmt.Errorf("%s policy: %w", name, err)
		}
		out[policyFile(name)] = doc
	}
	return out, nil
}
