package aws

import (
	"testing"
)

// TestCredentialSources: static keys from the cloud-config win; without
// them the SDK's default chain is used (here: the environment), as on a
// node with IRSA or an instance role.
func TestCredentialSources(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAFROMENVIRONMENT0")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")

	for _, tt := range []struct {
		name  string
		creds Credentials
		want  string
	}{
		{"default chain", Credentials{}, "AKIAFROMENVIRONMENT0"},
		{"static", Credentials{AccessKeyID: "AKIASTATICFROMCONFIG", SecretAccessKey: "s"}, "AKIASTATICFROMCONFIG"},
	} {
		s := &Section{Region: "eu-west-1", Credentials: tt.creds}
		s.SetDefaults()
		cfg, err := sdkConfig(t.Context(), s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := cfg.Credentials.Retrieve(t.Context())
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got.AccessKeyID != tt.want {
			t.Errorf("%s: access key %q, want %q", tt.name, got.AccessKeyID, tt.want)
		}
		if cfg.Region != "eu-west-1" {
			t.Errorf("%s: region not applied", tt.name)
		}
	}
}
