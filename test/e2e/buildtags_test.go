package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestProviderlessBuild: a binary built with only the providerless tag has
// no backend, says so, and refuses a cloud-config for any provider with the
// "not compiled in" error that tells how to rebuild.
func TestProviderlessBuild(t *testing.T) {
	bin := filepath.Join(env.tmp, "multicloud-ccm-providerless")
	if err := goBuild(bin, "providerless"); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "providers: none\n") {
		t.Fatalf("version: %v\n%s", err, out)
	}
	cfg := writeFile(t, "aws-for-providerless.yaml",
		"apiVersion: multicloud-ccm.io/v1alpha1\nkind: CloudConfig\nprovider: aws\nclusterID: c1\naws:\n  region: eu-west-1\n")
	out, err = exec.Command(bin, "validate-config", cfg).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("validate-config exit = %v, want 1\n%s", err, out)
	}
	for _, want := range []string{`provider: "aws" is not compiled into this binary (compiled in: none)`, "make build PROVIDERS=aws"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
