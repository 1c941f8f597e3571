package config_test

import (
	"errors"
	"testing"

	"github.com/multicloud-ccm/multicloud-ccm/config"
)

// FuzzParse feeds arbitrary bytes to Parse. Parse must never panic or hang,
// a nil error must come with a usable config, and any error must be
// Problems whose every item says something. More seeds are in
// testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Add([]byte(awsDoc("  region: us-east-1", "  subnets: [{id: subnet-1}]")))
	f.Add([]byte(header + "aws: &a {<<: *a}\n"))
	f.Add([]byte(header + "gce: {project: p}\n---\n"))
	f.Add([]byte("provider: testcloud\ntestcloud: {zone: !!binary aGk=, apiKey: ~}\n"))
	f.Add([]byte("\xef\xbb\xbf{provider: aws, aws: {maxRetries: -0x80000000, useFIPS: !!bool true}}"))

	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := config.Parse(data, testSections{})
		if err == nil {
			if cfg == nil || cfg.Section == nil {
				t.Fatalf("Parse returned no error but config %v", cfg)
			}
			if _, err := cfg.Redacted(); err != nil {
				t.Fatalf("Redacted of a parsed config: %v", err)
			}
			return
		}
		if cfg != nil {
			t.Errorf("Parse returned a config along with an error")
		}
		var problems config.Problems
		if !errors.As(err, &problems) {
			t.Fatalf("error is %T, want config.Problems: %v", err, err)
		}
		if len(problems) == 0 {
			t.Fatal("Parse returned an empty Problems")
		}
		for i, p := range problems {
			if p.Path == "" && p.Detail == "" {
				t.Errorf("problem %d is empty", i)
			}
			if p.Line < 0 {
				t.Errorf("problem %d has line %d", i, p.Line)
			}
			if i > 0 && problems[i-1].Line > p.Line {
				t.Errorf("problems are not sorted by line: %q", err)
			}
		}
	})
}
