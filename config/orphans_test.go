package config_test

import (
	"strings"
	"testing"

	"github.com/multicloud-ccm/multicloud-ccm/config"
)

// TestOrphans: orphans: is report (also when absent) or delete, in a
// config for one cloud and a hybrid one alike; anything else is an error
// with its path and line.
func TestOrphans(t *testing.T) {
	single := lines("apiVersion: multicloud-ccm.io/v1alpha1", "kind: CloudConfig", "provider: aws", "clusterID: prod-1", "aws:", "  region: eu-west-1")
	for _, tt := range []struct {
		doc    string
		delete bool
	}{
		{single, false},
		{single + "orphans: report\n", false},
		{single + "orphans: delete\n", true},
		{hybridHead + lines("providers: [gce, aws]", "orphans: delete", "aws: {region: eu-west-1}", "gce: {project: p1}"), true},
	} {
		cfg, err := config.Parse([]byte(tt.doc), testSections{})
		if err != nil {
			t.Fatalf("%s: %v", tt.doc, err)
		}
		if cfg.DeleteOrphans() != tt.delete {
			t.Errorf("%s: DeleteOrphans %v", tt.doc, cfg.DeleteOrphans())
		}
		for _, c := range cfg.Clouds() {
			if c.DeleteOrphans() != tt.delete {
				t.Errorf("%s: cloud %s DeleteOrphans %v", tt.doc, c.Provider, c.DeleteOrphans())
			}
		}
	}
	cfg, _ := config.Parse([]byte(single+"orphans: delete\n"), testSections{})
	if out, err := cfg.Redacted(); err != nil || !strings.Contains(string(out), "orphans: delete\n") {
		t.Errorf("redacted: %s %v", out, err)
	}
	_, err := config.Parse([]byte(single+"orphans: purge\n"), testSections{})
	if err == nil || !strings.Contains(err.Error(), `orphans: Unsupported value: "purge": supported values: "report", "delete" (line 7)`) {
		t.Errorf("orphans: purge: %v", err)
	}
}
