package hack

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckLargeFiles runs the lint step against throwaway repositories:
// a large tracked file fails it, the same file under testdata/ or
// untracked does not.
func TestCheckLargeFiles(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	script, err := filepath.Abs("check-large-files.sh")
	if err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 2<<20+1)
	for _, tc := range []struct {
		name    string
		path    string
		track   bool
		wantErr bool
	}{
		{"tracked binary at the root", "multicloud-ccm", true, true},
		{"tracked under testdata", "config/testdata/big.bin", true, false},
		{"untracked", "bin/kube-apiserver", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			git(t, dir, "init", "-q")
			if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(tc.path)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, tc.path), big, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "small.go"), []byte("package x\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			git(t, dir, "add", "small.go")
			if tc.track {
				git(t, dir, "add", tc.path)
			}
			out, err := exec.Command("bash", script, dir).CombinedOutput()
			if gotErr := err != nil; gotErr != tc.wantErr {
				t.Fatalf("failed=%v, want %v; output: %s", gotErr, tc.wantErr, out)
			}
			if tc.wantErr && !strings.Contains(string(out), tc.path) {
				t.Errorf("output does not name %s: %s", tc.path, out)
			}
		})
	}
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
}
