package command

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/cloud-provider/fake"

	"github.com/multicloud-ccm/multicloud-ccm/config"
	"github.com/multicloud-ccm/multicloud-ccm/providers"
	"github.com/multicloud-ccm/multicloud-ccm/providers/compose"
)

// testSection is a backend section with a default, a required field and a
// secret, enough to exercise the command's handling of the cloud-config.
type testSection struct {
	Region   string `yaml:"region"`
	Zone     string `yaml:"zone"`
	Port     int    `yaml:"port"`
	Password string `yaml:"password" secret:"true"`
}

func (s *testSection) SetDefaults() {
	if s.Zone == "" {
		s.Zone = s.Region + "-a"
	}
}

func (s *testSection) Validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Region == "" {
		errs = append(errs, field.Required(path.Child("region"), ""))
	}
	if s.Port < 0 {
		errs = append(errs, field.Invalid(path.Child("port"), s.Port, "must not be negative"))
	}
	return errs
}

func testRegistry(names ...string) *providers.Registry {
	r := providers.NewRegistry()
	for _, n := range names {
		r.MustRegister(providers.Backend{
			Name:       n,
			NewSection: func() config.Section { return &testSection{} },
			New: func(context.Context, *config.CloudConfig) (compose.Parts, error) {
				return compose.Parts{Instances: &fake.Cloud{}}, nil
			},
		})
	}
	return r
}

func run(t *testing.T, r *providers.Registry, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := New(r, "v0.0.0-test", make(chan struct{}))
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err = cmd.Execute()
	return out.String(), errOut.String(), err
}

func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cloud-config.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const header = "apiVersion: multicloud-ccm.io/v1alpha1\nkind: CloudConfig\n"

func TestValidateConfigReportsEachProblem(t *testing.T) {
	r := testRegistry("aws", "testcloud")
	tests := []struct {
		name   string
		config string
		want   []string
	}{
		{"unknown key", header + "provider: aws\nclusterID: c1\naws:\n  region: r1\n  regoin: r1\n",
			[]string{`aws.regoin: unknown field "regoin" (line 7)`}},
		{"unknown top-level key", header + "provider: aws\nclusterID: c1\ncolour: blue\naws:\n  region: r1\n",
			[]string{`colour: unknown field "colour" (line 5)`}},
		{"wrong type", header + "provider: aws\nclusterID: c1\naws:\n  region: r1\n  port: eighty\n",
			[]string{`aws.port: must be an integer, got a string (line 7)`}},
		{"second provider section", header + "provider: aws\nclusterID: c1\naws:\n  region: r1\ntestcloud:\n  region: r1\n",
			[]string{`testcloud: section for provider "testcloud" but provider is "aws"`}},
		{"section for another provider", header + "provider: aws\nclusterID: c1\ntestcloud:\n  region: r1\n",
			[]string{`testcloud: section for provider "testcloud" but provider is "aws"`, `aws.region: Required value`}},
		{"missing provider", header + "clusterID: c1\n",
			[]string{`provider: Required value`}},
		{"unknown provider", header + "provider: digitalocean\nclusterID: c1\n",
			[]string{`provider: Unsupported value: "digitalocean"`}},
		{"provider not compiled in", header + "provider: gce\nclusterID: c1\n",
			[]string{`provider: "gce" is not compiled into this binary (compiled in: aws,testcloud)`, "make build PROVIDERS=gce"}},
		{"invalid value, all problems at once", header + "provider: aws\nclusterID: Not_Valid\naws:\n  port: -1\n",
			[]string{`clusterID: Invalid value: "Not_Valid"`, `aws.region: Required value`, `aws.port: Invalid value: -1: must not be negative (line 6)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, err := run(t, r, "validate-config", writeConfig(t, tt.config))
			if !errors.Is(err, ErrReported) {
				t.Fatalf("err = %v, want ErrReported (exit 1)", err)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want nothing on failure", stdout)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			// One line per problem, each "<path>: <problem>".
			for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
				if !strings.Contains(line, ": ") {
					t.Errorf("line %q is not '<field.path>: <problem>'", line)
				}
			}
		})
	}
}

func TestValidateConfigPrintsEffectiveConfigRedacted(t *testing.T) {
	r := testRegistry("aws")
	path := writeConfig(t, header+"provider: aws\nclusterID: c1\naws:\n  region: r1\n  password: hunter2-secret\n")
	stdout, stderr, err := run(t, r, "validate-config", path)
	if err != nil {
		t.Fatalf("err = %v, stderr = %s", err, stderr)
	}
	for _, want := range []string{"provider: aws", "clusterID: c1", "zone: r1-a", "password: <redacted>"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout+stderr, "hunter2") {
		t.Fatalf("secret printed:\n%s", stdout)
	}
}

func TestValidateConfigNeverTouchesTheCloud(t *testing.T) {
	r := providers.NewRegistry()
	r.MustRegister(providers.Backend{
		Name:       "aws",
		NewSection: func() config.Section { return &testSection{} },
		New: func(context.Context, *config.CloudConfig) (compose.Parts, error) {
			t.Fatal("validate-config built the cloud")
			return compose.Parts{}, nil
		},
	})
	if _, stderr, err := run(t, r, "validate-config", writeConfig(t, header+"provider: aws\nclusterID: c1\naws: {region: r1}\n")); err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
}

func TestVersion(t *testing.T) {
	for _, tt := range []struct {
		reg  *providers.Registry
		want string
	}{
		{testRegistry(), "providers: none\n"},
		{testRegistry("gce", "aws"), "providers: aws,gce\n"},
	} {
		stdout, _, err := run(t, tt.reg, "version")
		if err != nil || !strings.HasSuffix(stdout, tt.want) || !strings.HasPrefix(stdout, "multicloud-ccm ") {
			t.Errorf("version = %q, %v; want suffix %q", stdout, err, tt.want)
		}
	}
}

func TestRunNeedsCloudConfig(t *testing.T) {
	_, _, err := run(t, testRegistry("aws"))
	if err == nil || !strings.Contains(err.Error(), "--cloud-config is required") {
		t.Fatalf("err = %v", err)
	}
}

func TestRunRejectsMismatchedCloudProvider(t *testing.T) {
	path := writeConfig(t, header+"provider: aws\nclusterID: c1\naws: {region: r1}\n")
	_, _, err := run(t, testRegistry("aws", "testcloud"), "--cloud-config="+path, "--cloud-provider=testcloud")
	if err == nil || !strings.Contains(err.Error(), `--cloud-provider="testcloud" does not match provider "aws"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestRunPrintsEveryProblemOfABrokenConfig(t *testing.T) {
	path := writeConfig(t, header+"provider: aws\nclusterID: c1\naws:\n  port: x\n  bogus: 1\n")
	_, stderr, err := run(t, testRegistry("aws"), "--cloud-config="+path)
	if !errors.Is(err, ErrReported) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"invalid cloud-config", `aws.bogus: unknown field "bogus" (line 7)`, "aws.port: must be an integer"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}
