package azure

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/multicloud-ccm/multicloud-ccm/config"
	"github.com/multicloud-ccm/multicloud-ccm/providers"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/importcfg"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/import/*.golden from the importer's output")

// importStack imports testdata/import/<file> with opts, AZURE_ENVIRONMENT_FILEPATH
// set to envVar ("" unsets it in effect).
func importStack(t *testing.T, file, envVar string, opts importcfg.Options) (*importcfg.Result, error) {
	t.Helper()
	t.Setenv(environmentFileVar, envVar)
	data, err := os.ReadFile(filepath.Join("testdata", "import", file))
	if err != nil {
		t.Fatal(err)
	}
	opts.ClusterName = importcfg.DefaultClusterName
	return ImportConfig(data, opts)
}

// renderImport is what `import-config` prints for res: the cloud-config,
// then the notes (as YAML comments, so the golden file stays YAML). It
// must validate.
func renderImport(t *testing.T, res *importcfg.Result) string {
	t.Helper()
	out, err := config.Render(ProviderName, importcfg.DefaultClusterName, res.Section)
	if err != nil {
		t.Fatal(err)
	}
	reg := providers.NewRegistry()
	reg.MustRegister(Backend())
	if _, err := config.Parse(out, reg); err != nil {
		t.Errorf("rendered import does not validate: %v\n%s", err, out)
	}
	var b strings.Builder
	b.Write(out)
	for _, n := range res.Notes {
		fmt.Fprintf(&b, "# %s\n", n)
	}
	return b.String()
}

// TestImportConfigAzureStackEnvironment: an azure.json with cloud
// AzureStackCloud, given the Azure Stack Hub environment file upstream
// read from AZURE_ENVIRONMENT_FILEPATH (by --environment-file, or by the
// variable when the flag is absent), imports to a cloud-config that
// validates, with the file's resourceManagerEndpoint, tokenAudience and
// activeDirectoryEndpoint (golden: testdata/import/azurestack.golden).
func TestImportConfigAzureStackEnvironment(t *testing.T) {
	envFile := filepath.Join("testdata", "import", "azurestack-environment.json")
	res, err := importStack(t, "azurestack.json", "", importcfg.Options{EnvironmentFile: envFile})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Section.(*Section)
	if s.Cloud != CloudStack || s.ResourceManagerEndpoint != "https://management.local.azurestack.external/" ||
		s.ActiveDirectoryAuthorityHost != "https://adfs.local.azurestack.external/adfs/" ||
		s.ResourceManagerAudience != "https://management.adfs.azurestack.local/5ab6a4c7-0000-4000-8000-00000000a5b3" {
		t.Errorf("endpoints not carried over: %+v", s)
	}
	got := renderImport(t, res)
	golden := filepath.Join("testdata", "import", "azurestack.golden")
	if *updateGolden {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("import differs from %s (go test -run %s -update rewrites it):\n%s", golden, t.Name(), got)
	}
	if strings.Contains(got[strings.Index(got, "\n# "):], "STACK-SAMPLE-CLIENT-SECRET-VALUE") {
		t.Error("a note carries the client secret")
	}

	// Without the flag, the file AZURE_ENVIRONMENT_FILEPATH names: the
	// same section; the note says where the endpoints came from.
	byVar, err := importStack(t, "azurestack.json", envFile, importcfg.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(byVar.Section, res.Section) {
		t.Errorf("from %s: section\n%+v\nwant\n%+v", environmentFileVar, byVar.Section, res.Section)
	}
	if !slices.ContainsFunc(byVar.Notes, func(n importcfg.Note) bool {
		return n.Key == "cloud" && strings.Contains(n.Instead, "(from "+environmentFileVar+")")
	}) {
		t.Errorf("no note says the endpoints came from %s: %v", environmentFileVar, byVar.Notes)
	}
	// The flag wins over the variable.
	if _, err := importStack(t, "azurestack.json", filepath.Join(t.TempDir(), "nope.json"), importcfg.Options{EnvironmentFile: envFile}); err != nil {
		t.Errorf("the flag's file, with the variable naming another: %v", err)
	}
}

// TestImportConfigAzureStackWithout: without an environment file the
// import of AzureStackCloud keeps the cloud, fails validation on the
// missing endpoints, and its note names the flag to add.
func TestImportConfigAzureStackWithout(t *testing.T) {
	res, err := importStack(t, "azurestack.json", "", importcfg.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(res.Notes, func(n importcfg.Note) bool {
		return n.Key == "cloud" && strings.Contains(n.Instead, "--environment-file")
	}) {
		t.Errorf("no note names --environment-file: %v", res.Notes)
	}
	out, err := config.Render(ProviderName, importcfg.DefaultClusterName, res.Section)
	if err != nil {
		t.Fatal(err)
	}
	reg := providers.NewRegistry()
	reg.MustRegister(Backend())
	_, err = config.Parse(out, reg)
	if err == nil || !strings.Contains(err.Error(), "azure.resourceManagerEndpoint") || !strings.Contains(err.Error(), "azure.activeDirectoryAuthorityHost") {
		t.Errorf("validation of an AzureStackCloud without endpoints: %v", err)
	}
}

// TestImportConfigAzureStackOwnEndpoint: azure.json's own
// resourceManagerEndpoint gave way upstream to the environment file's,
// read after it (pkg/azclient/cloud.go:144-148): the file's is carried
// over, and a note says so when they differ.
func TestImportConfigAzureStackOwnEndpoint(t *testing.T) {
	envFile := filepath.Join("testdata", "import", "azurestack-environment.json")
	for _, tc := range []struct {
		own   string
		noted bool
	}{
		{"https://management.local.azurestack.external", false},
		{"https://management.other.azurestack.external/", true},
	} {
		t.Setenv(environmentFileVar, "")
		data, err := os.ReadFile(filepath.Join("testdata", "import", "azurestack.json"))
		if err != nil {
			t.Fatal(err)
		}
		data = []byte(strings.Replace(string(data), `"cloud": "AzureStackCloud",`, `"cloud": "AzureStackCloud", "resourceManagerEndpoint": "`+tc.own+`",`, 1))
		res, err := ImportConfig(data, importcfg.Options{EnvironmentFile: envFile})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Section.(*Section).ResourceManagerEndpoint; got != "https://management.local.azurestack.external/" {
			t.Errorf("own %s: resourceManagerEndpoint %s, want the environment file's", tc.own, got)
		}
		if noted := slices.Contains(noteKeys(res.Notes), "resourceManagerEndpoint"); noted != tc.noted {
			t.Errorf("own %s: resourceManagerEndpoint noted %v, want %v: %v", tc.own, noted, tc.noted, res.Notes)
		}
	}
}

// TestImportConfigEnvironmentFileErrors: a missing or malformed
// environment file is an error naming the file and the key or line; the
// flag with a cloud upstream reads no environment file for is refused,
// the variable then ignored with a note, as upstream ignored it.
func TestImportConfigEnvironmentFileErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const full = `"resourceManagerEndpoint": "https://management.local.azurestack.external/", "activeDirectoryEndpoint": "https://login.microsoftonline.com/", "tokenAudience": "https://management.contoso.onmicrosoft.com/1"`
	for _, tc := range []struct {
		name, file string
		want       []string
	}{
		{"missing", filepath.Join(dir, "nope.json"), []string{"nope.json (--environment-file)", "no such file"}},
		{"empty", write("empty.json", "\n"), []string{"empty.json", "the file is empty", `"resourceManagerEndpoint"`}},
		{"syntax error", write("syntax.json", "{\n  \"name\": \"AzureStackCloud\",\n  \"tokenAudience\" \"x\"\n}\n"), []string{"syntax.json", "line 3", "as JSON"}},
		{"YAML", write("env.yaml", "name: AzureStackCloud\n"), []string{"env.yaml", "line 1", "as JSON"}},
		{"wrong type", write("type.json", "{\n  \"name\": \"AzureStackCloud\",\n  \"tokenAudience\": 5\n}\n"), []string{"type.json", "line 3", "tokenAudience is a number", "reads a string"}},
		{"not an object", write("list.json", `["AzureStackCloud"]`), []string{"list.json", "the document is an array"}},
		{"no tokenAudience", write("noaud.json", `{"resourceManagerEndpoint": "https://management.local.azurestack.external/", "activeDirectoryEndpoint": "https://login.microsoftonline.com/"}`),
			[]string{"noaud.json", "tokenAudience is missing"}},
		{"no resourceManagerEndpoint", write("norm.json", `{"activeDirectoryEndpoint": "https://login.microsoftonline.com/", "tokenAudience": "https://management.contoso.onmicrosoft.com/1"}`),
			[]string{"norm.json", "resourceManagerEndpoint is missing"}},
		{"no activeDirectoryEndpoint", write("noad.json", `{"resourceManagerEndpoint": "https://management.local.azurestack.external/", "tokenAudience": "https://management.contoso.onmicrosoft.com/1"}`),
			[]string{"noad.json", "activeDirectoryEndpoint is missing"}},
		{"null", write("null.json", "null"), []string{"null.json", "resourceManagerEndpoint is missing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := importStack(t, "azurestack.json", "", importcfg.Options{EnvironmentFile: tc.file})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	t.Run("from the variable", func(t *testing.T) {
		_, err := importStack(t, "azurestack.json", filepath.Join(dir, "gone.json"), importcfg.Options{})
		if err == nil || !strings.Contains(err.Error(), "gone.json (from "+environmentFileVar+")") {
			t.Errorf("error %v does not name the file and the variable", err)
		}
	})
	// Keys compare case-insensitively and unknown keys are skipped, as
	// upstream's json.Unmarshal does.
	t.Run("key spelling", func(t *testing.T) {
		p := write("case.json", `{"ResourceManagerEndpoint": "https://management.local.azurestack.external/", "activedirectoryendpoint": "https://login.microsoftonline.com/", "TOKENAUDIENCE": "https://management.contoso.onmicrosoft.com/1", "somethingNew": {"a": 1}}`)
		res, err := importStack(t, "azurestack.json", "", importcfg.Options{EnvironmentFile: p})
		if err != nil {
			t.Fatal(err)
		}
		if s := res.Section.(*Section); s.ActiveDirectoryAuthorityHost != "https://login.microsoftonline.com/" || s.ResourceManagerAudience != "https://management.contoso.onmicrosoft.com/1" {
			t.Errorf("section %+v", s)
		}
	})

	good := write("good.json", "{"+full+"}")
	typical, err := os.ReadFile(filepath.Join("testdata", "import", "typical.json"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(environmentFileVar, "")
	_, err = ImportConfig(typical, importcfg.Options{EnvironmentFile: good})
	if err == nil || !strings.Contains(err.Error(), "--environment-file") || !strings.Contains(err.Error(), `"AzurePublicCloud"`) || !strings.Contains(err.Error(), "AzureStackCloud") {
		t.Errorf("--environment-file with cloud AzurePublicCloud: %v; want it refused, naming both clouds", err)
	}
	t.Setenv(environmentFileVar, good)
	res, err := ImportConfig(typical, importcfg.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Section.(*Section); s.Cloud != CloudPublic || s.ResourceManagerEndpoint != "" {
		t.Errorf("%s with cloud AzurePublicCloud changed the section: %+v", environmentFileVar, s)
	}
	if !slices.Contains(noteKeys(res.Notes), environmentFileVar) {
		t.Errorf("%s ignored without a note: %v", environmentFileVar, res.Notes)
	}
}
