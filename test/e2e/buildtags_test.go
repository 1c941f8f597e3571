package e2e

import (
	"debug/elf"
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

// TestSlimAWSBuild: `make build PROVIDERS=aws` keeps only AWS. Its module
// list has no other cloud's SDK, it links only the EC2 operations the
// backend calls (providers/aws/clients_calls.go says why that matters),
// and a cloud-config for another cloud is refused with the rebuild hint.
func TestSlimAWSBuild(t *testing.T) {
	bin := filepath.Join(env.tmp, "multicloud-ccm-aws")
	cmd := exec.Command("make", "build", "PROVIDERS=aws", "BIN="+bin)
	cmd.Dir = env.root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make build PROVIDERS=aws: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "providers: aws\n") {
		t.Fatalf("version: %v\n%s", err, out)
	}
	mods, err := exec.Command("go", "version", "-m", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m: %v\n%s", err, mods)
	}
	if !strings.Contains(string(mods), "github.com/aws/aws-sdk-go-v2/service/ec2") {
		t.Errorf("slim AWS build lacks the EC2 SDK:\n%s", mods)
	}
	for _, foreign := range []string{"github.com/Azure/", "cloud.google.com/", "google.golang.org/api", "github.com/gophercloud/"} {
		if strings.Contains(string(mods), foreign) {
			t.Errorf("slim AWS build contains %s", foreign)
		}
	}
	if n := linkedMethods(t, bin, "github.com/aws/aws-sdk-go-v2/service/ec2.(*Client)."); n > 100 {
		t.Errorf("binary links %d methods of *ec2.Client, want the few the backend calls: is a *ec2.Client stored in an interface again?", n)
	}
	cfg := writeFile(t, "gce-for-aws-build.yaml",
		"apiVersion: multicloud-ccm.io/v1alpha1\nkind: CloudConfig\nprovider: gce\nclusterID: c1\n")
	out, err = exec.Command(bin, "validate-config", cfg).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("validate-config exit = %v, want 1\n%s", err, out)
	}
	if want := `provider: "gce" is not compiled into this binary (compiled in: aws)`; !strings.Contains(string(out), want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
}

// linkedMethods counts the functions in bin's symbol table named with prefix.
func linkedMethods(t *testing.T, bin, prefix string) int {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && strings.HasPrefix(s.Name, prefix) {
			n++
		}
	}
	return n
}

// TestSlimOpenStackBuild: `make build PROVIDERS=openstack` keeps only
// OpenStack: gophercloud and no AWS, Azure or Google module, and a
// cloud-config for another cloud is refused with the rebuild hint.
func TestSlimOpenStackBuild(t *testing.T) {
	bin := filepath.Join(env.tmp, "multicloud-ccm-openstack")
	cmd := exec.Command("make", "build", "PROVIDERS=openstack", "BIN="+bin)
	cmd.Dir = env.root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make build PROVIDERS=openstack: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "providers: openstack\n") {
		t.Fatalf("version: %v\n%s", err, out)
	}
	mods, err := exec.Command("go", "version", "-m", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m: %v\n%s", err, mods)
	}
	if !strings.Contains(string(mods), "github.com/gophercloud/gophercloud/v2") {
		t.Errorf("slim OpenStack build lacks gophercloud:\n%s", mods)
	}
	for _, foreign := range []string{"github.com/aws/", "github.com/Azure/", "cloud.google.com/", "google.golang.org/api"} {
		if strings.Contains(string(mods), foreign) {
			t.Errorf("slim OpenStack build contains %s", foreign)
		}
	}
	cfg := writeFile(t, "aws-for-openstack-build.yaml",
		"apiVersion: multicloud-ccm.io/v1alpha1\nkind: CloudConfig\nprovider: aws\nclusterID: c1\n")
	out, err = exec.Command(bin, "validate-config", cfg).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("validate-config exit = %v, want 1\n%s", err, out)
	}
	if want := `provider: "aws" is not compiled into this binary (compiled in: openstack)`; !strings.Contains(string(out), want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
}

// TestSlimHybridBuild: `make build PROVIDERS=openstack,aws` makes a
// binary with just those two clouds' SDKs, and a hybrid cloud-config
// naming a cloud it lacks is refused with the list it has.
func TestSlimHybridBuild(t *testing.T) {
	bin := filepath.Join(env.tmp, "multicloud-ccm-openstack-aws")
	cmd := exec.Command("make", "build", "PROVIDERS=openstack,aws", "BIN="+bin)
	cmd.Dir = env.root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make build PROVIDERS=openstack,aws: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "providers: aws,openstack\n") {
		t.Fatalf("version: %v\n%s", err, out)
	}
	mods, err := exec.Command("go", "version", "-m", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m: %v\n%s", err, mods)
	}
	for _, want := range []string{"github.com/gophercloud/gophercloud/v2", "github.com/aws/aws-sdk-go-v2"} {
		if !strings.Contains(string(mods), want) {
			t.Errorf("the openstack,aws build lacks %s", want)
		}
	}
	for _, foreign := range []string{"github.com/Azure/", "cloud.google.com/", "google.golang.org/api"} {
		if strings.Contains(string(mods), foreign) {
			t.Errorf("the openstack,aws build contains %s", foreign)
		}
	}
	cfg := writeFile(t, "openstack-gce-for-openstack-aws-build.yaml",
		"apiVersion: multicloud-ccm.io/v1alpha1\nkind: CloudConfig\nproviders: [openstack, gce]\nclusterID: c1\n")
	out, err = exec.Command(bin, "validate-config", cfg).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("validate-config exit = %v, want 1\n%s", err, out)
	}
	if want := `providers[1]: "gce" is not compiled into this binary (compiled in: aws,openstack); rebuild with make build PROVIDERS=openstack,gce`; !strings.Contains(string(out), want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
}

// TestSlimAzureBuild: `make build PROVIDERS=azure` keeps only Azure: the
// azure-sdk-for-go modules and no AWS, Google or gophercloud module, and a
// cloud-config for another cloud is refused with the rebuild hint.
func TestSlimAzureBuild(t *testing.T) {
	bin := filepath.Join(env.tmp, "multicloud-ccm-azure")
	cmd := exec.Command("make", "build", "PROVIDERS=azure", "BIN="+bin)
	cmd.Dir = env.root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make build PROVIDERS=azure: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "providers: azure\n") {
		t.Fatalf("version: %v\n%s", err, out)
	}
	mods, err := exec.Command("go", "version", "-m", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m: %v\n%s", err, mods)
	}
	for _, want := range []string{"github.com/Azure/azure-sdk-for-go/sdk/azcore", "github.com/Azure/azure-sdk-for-go/sdk/azidentity", "armcompute/v6", "armnetwork/v6"} {
		if !strings.Contains(string(mods), want) {
			t.Errorf("slim Azure build lacks %s:\n%s", want, mods)
		}
	}
	for _, foreign := range []string{"github.com/aws/", "cloud.google.com/", "google.golang.org/api", "github.com/gophercloud/"} {
		if strings.Contains(string(mods), foreign) {
			t.Errorf("slim Azure build contains %s", foreign)
		}
	}
	cfg := writeFile(t, "openstack-for-azure-build.yaml",
		"apiVersion: multicloud-ccm.io/v1alpha1\nkind: CloudConfig\nprovider: openstack\nclusterID: c1\n")
	out, err = exec.Command(bin, "validate-config", cfg).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("validate-config exit = %v, want 1\n%s", err, out)
	}
	if want := `provider: "openstack" is not compiled into this binary (compiled in: azure)`; !strings.Contains(string(out), want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
}

// TestSlimGCEBuild: `make build PROVIDERS=gce` keeps only GCE: the Compute
// clients (cloud.google.com/go/compute and google.golang.org/api) and no
// AWS, Azure or gophercloud module, and a cloud-config for another cloud
// is refused with the rebuild hint.
func TestSlimGCEBuild(t *testing.T) {
	bin := filepath.Join(env.tmp, "multicloud-ccm-gce")
	cmd := exec.Command("make", "build", "PROVIDERS=gce", "BIN="+bin)
	cmd.Dir = env.root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make build PROVIDERS=gce: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "providers: gce\n") {
		t.Fatalf("version: %v\n%s", err, out)
	}
	mods, err := exec.Command("go", "version", "-m", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m: %v\n%s", err, mods)
	}
	for _, want := range []string{"cloud.google.com/go/compute", "google.golang.org/api", "golang.org/x/oauth2"} {
		if !strings.Contains(string(mods), want) {
			t.Errorf("slim GCE build lacks %s:\n%s", want, mods)
		}
	}
	for _, foreign := range []string{"github.com/aws/", "github.com/Azure/", "github.com/gophercloud/"} {
		if strings.Contains(string(mods), foreign) {
			t.Errorf("slim GCE build contains %s", foreign)
		}
	}
	cfg := writeFile(t, "azure-for-gce-build.yaml",
		"apiVersion: multicloud-ccm.io/v1alpha1\nkind: CloudConfig\nprovider: azure\nclusterID: c1\n")
	out, err = exec.Command(bin, "validate-config", cfg).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("validate-config exit = %v, want 1\n%s", err, out)
	}
	if want := `provider: "azure" is not compiled into this binary (compiled in: gce)`; !strings.Contains(string(out), want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
}

// TestFullBuildLinksEachSDKOnce: `make build` (every backend) links one
// major version of each cloud SDK: two majors of one SDK (aws-sdk-go and
// -v2, gophercloud and /v2, armnetwork v5 and v6) would double the binary's
// share of it and split its retries and metrics.
func TestFullBuildLinksEachSDKOnce(t *testing.T) {
	bin := filepath.Join(env.tmp, "multicloud-ccm-all")
	cmd := exec.Command("make", "build", "BIN="+bin)
	cmd.Dir = env.root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "providers: aws,azure,gce,openstack\n") {
		t.Fatalf("version: %v\n%s", err, out)
	}
	mods, err := exec.Command("go", "version", "-m", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m: %v\n%s", err, mods)
	}
	majors := map[string][]string{}
	for _, line := range strings.Split(string(mods), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "dep" {
			continue
		}
		base := f[1]
		if i := strings.LastIndex(base, "/v"); i > 0 && strings.Trim(base[i+2:], "0123456789") == "" {
			base = base[:i]
		}
		base = strings.TrimSuffix(base, "-v2")
		majors[base] = append(majors[base], f[1])
	}
	for _, sdk := range []string{"github.com/aws/aws-sdk-go", "github.com/Azure/azure-sdk-for-go/sdk/azcore",
		"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute", "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork",
		"github.com/gophercloud/gophercloud", "cloud.google.com/go/compute", "google.golang.org/api"} {
		if got := majors[sdk]; len(got) != 1 {
			t.Errorf("%s linked as %v, want one module", sdk, got)
		}
	}
}
