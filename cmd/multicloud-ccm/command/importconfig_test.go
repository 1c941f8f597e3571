package command

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/multicloud-ccm/multicloud-ccm/providers"
	// providers.Default with every backend, as the binary has it.
	_ "github.com/multicloud-ccm/multicloud-ccm/providers/builtin"
)

// TestImportConfigEveryCloud runs `import-config` on a typical upstream
// config file of each cloud (the backends' own tests cover every key) and
// checks the acceptance of the switching issue: the output passes
// `validate-config`, carries the secret into the cloud-config, never
// prints it on stderr, and names the cluster as asked.
func TestImportConfigEveryCloud(t *testing.T) {
	for _, tc := range []struct {
		cloud, file string
		args        []string
		clusterID   string
		secret      string // a secret of the file, carried to stdout only
		notes       []string
	}{
		{cloud: "aws", file: "../../../providers/aws/testdata/import/typical.conf", clusterID: "shop-prod",
			notes: []string{"[Global] Zone", "(default load balancer type)"}},
		{cloud: "azure", file: "../../../providers/azure/testdata/import/typical.json", args: []string{"--cluster-name", "aks-weu"}, clusterID: "aks-weu",
			secret: "TYPICAL-SAMPLE-CLIENT-SECRET-VALUE", notes: []string{"maximumLoadBalancerRuleCount"}},
		{cloud: "gce", file: "../../../providers/gce/testdata/import/typical.conf", clusterID: providers.DefaultClusterName},
		{cloud: "openstack", file: "../../../providers/openstack/testdata/import/password.conf", clusterID: providers.DefaultClusterName,
			secret: "pw-s3cr3t-value"},
	} {
		t.Run(tc.cloud, func(t *testing.T) {
			args := append([]string{"import-config", "--from", tc.cloud}, tc.args...)
			stdout, stderr, err := run(t, providers.Default, append(args, tc.file)...)
			if err != nil {
				t.Fatalf("import-config: %v\nstderr:\n%s", err, stderr)
			}
			if !strings.Contains(stdout, "provider: "+tc.cloud+"\nclusterID: "+tc.clusterID+"\n") {
				t.Errorf("output does not name provider %s and clusterID %s:\n%s", tc.cloud, tc.clusterID, stdout)
			}
			if tc.secret != "" && (!strings.Contains(stdout, tc.secret) || strings.Contains(stderr, tc.secret)) {
				t.Errorf("the secret must be in the cloud-config and never on stderr")
			}
			for _, n := range tc.notes {
				if !strings.Contains(stderr, n) {
					t.Errorf("stderr does not report %q:\n%s", n, stderr)
				}
			}
			path := filepath.Join(t.TempDir(), "cloud-config.yaml")
			if err := os.WriteFile(path, []byte(stdout), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, vErr, err := run(t, providers.Default, "validate-config", path); err != nil {
				t.Errorf("validate-config on the import: %v\n%s\n%s", err, vErr, stdout)
			}
		})
	}
}

func TestImportConfigErrors(t *testing.T) {
	dir := t.TempDir()
	broken := filepath.Join(dir, "cloud.conf")
	if err := os.WriteFile(broken, []byte("[Global]\nauth-url = https://k:5000/v3\n[LoadBalancer\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	incomplete := filepath.Join(dir, "gce.conf")
	if err := os.WriteFile(incomplete, []byte("[global]\nnetwork-name = n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"no --from", []string{"import-config", broken}, []string{"--from is required"}},
		{"unknown cloud", []string{"import-config", "--from", "vsphere", broken}, []string{`--from "vsphere"`}},
		{"missing file", []string{"import-config", "--from", "openstack", filepath.Join(dir, "nope")}, []string{"reading upstream config"}},
		{"syntax error names the line", []string{"import-config", "--from", "openstack", broken}, []string{"line 3"}},
		{"incomplete import reports what to set", []string{"import-config", "--from", "gce", incomplete}, []string{"does not validate yet", "gce.projectID"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, err := run(t, providers.Default, tc.args...)
			if err == nil {
				t.Fatal("no error")
			}
			msg := stderr + err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q, stderr %q: want %q", err, stderr, w)
				}
			}
		})
	}
	_, _, err := run(t, testRegistry("aws"), "import-config", "--from", "gce", incomplete)
	if err == nil || !strings.Contains(err.Error(), "not compiled into this binary") {
		t.Errorf("a backend left out of the build: %v", err)
	}
	if _, _, err := run(t, providers.Default, "import-config", "--from", "gce", incomplete); !errors.Is(err, ErrReported) {
		t.Errorf("an import that does not validate should exit 1 after reporting: %v", err)
	}
}

// TestImportConfigAzureStack: an azure.json with cloud AzureStackCloud
// imports, with the environment file upstream read from
// AZURE_ENVIRONMENT_FILEPATH given by --environment-file (or by that
// variable), to a cloud-config that validates; without either it exits 1
// and names the flag to add. The flag is refused for other clouds.
func TestImportConfigAzureStack(t *testing.T) {
	const (
		stack   = "../../../providers/azure/testdata/import/azurestack.json"
		envFile = "../../../providers/azure/testdata/import/azurestack-environment.json"
	)
	t.Setenv("AZURE_ENVIRONMENT_FILEPATH", "")
	stdout, stderr, err := run(t, providers.Default, "import-config", "--from", "azure", "--environment-file", envFile, stack)
	if err != nil {
		t.Fatalf("import-config --environment-file: %v\nstderr:\n%s", err, stderr)
	}
	for _, w := range []string{"cloud: AzureStackCloud\n", "resourceManagerEndpoint: https://management.local.azurestack.external/\n",
		"activeDirectoryAuthorityHost: https://adfs.local.azurestack.external/adfs/\n"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("output lacks %q:\n%s", w, stdout)
		}
	}
	if strings.Contains(stderr, "STACK-SAMPLE-CLIENT-SECRET-VALUE") {
		t.Error("the secret is on stderr")
	}

	t.Setenv("AZURE_ENVIRONMENT_FILEPATH", envFile)
	byVar, stderr, err := run(t, providers.Default, "import-config", "--from", "azure", stack)
	if err != nil || byVar != stdout {
		t.Errorf("with AZURE_ENVIRONMENT_FILEPATH instead of the flag: %v\n%s\nstderr:\n%s", err, byVar, stderr)
	}

	t.Setenv("AZURE_ENVIRONMENT_FILEPATH", "")
	_, stderr, err = run(t, providers.Default, "import-config", "--from", "azure", stack)
	if !errors.Is(err, ErrReported) || !strings.Contains(stderr, "--environment-file") || !strings.Contains(stderr, "azure.resourceManagerEndpoint") {
		t.Errorf("AzureStackCloud without endpoints: %v; want exit 1 naming --environment-file and the missing fields:\n%s", err, stderr)
	}

	_, _, err = run(t, providers.Default, "import-config", "--from", "gce", "--environment-file", envFile, "../../../providers/gce/testdata/import/typical.conf")
	if err == nil || !strings.Contains(err.Error(), "--environment-file is read only with --from azure") {
		t.Errorf("--environment-file with --from gce: %v", err)
	}
	_, _, err = run(t, providers.Default, "import-config", "--from", "azure", "--environment-file", "nope.json", stack)
	if err == nil || !strings.Contains(err.Error(), "nope.json (--environment-file)") {
		t.Errorf("a missing environment file: %v; want its name and the flag", err)
	}
}
