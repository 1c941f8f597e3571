package importcfg

import (
	"strings"
	"testing"
)

type testINI struct {
	Global struct {
		Region string `gcfg:"region"`
		Debug  bool   `gcfg:"debug"`
	}
	Override map[string]*struct {
		URL string `gcfg:"url"`
	}
}

func TestReadINI(t *testing.T) {
	var cfg testINI
	unknown, err := ReadINI([]byte("\ufeff; comment\n[Global]\nregion = r1\nregoin = r2\n[Override \"ec2\"]\nurl = u\nsigning = s\n[Metrics]\nport = 1\n"), &cfg)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Global.Region != "r1" || cfg.Override["ec2"].URL != "u" {
		t.Errorf("read %+v", cfg)
	}
	var got []string
	for _, k := range unknown {
		got = append(got, k.String())
	}
	if want := `[Global] regoin|[Metrics]|[Override "ec2"] signing`; strings.Join(got, "|") != want {
		t.Errorf("unknown keys %q, want %q", strings.Join(got, "|"), want)
	}
}

func TestReadINIErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"[Global]\nregion = r1\n[Override\n", "line 3, column"},
		{"[Global]\nregion = r1\n\ndebug = maybe\n", "line 4: "},
		{"[Global]\nregion = a \\\n b\ndebug = maybe\nregion = c\n", "line 4: "},
	} {
		var cfg testINI
		_, err := ReadINI([]byte(tc.file), &cfg)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("ReadINI(%q) = %v, want an error starting %q", tc.file, err, tc.want)
		}
	}
}
