package gce

import (
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// The filter grammar on one instance, without a server.
func TestFilterGrammar(t *testing.T) {
	inst := &computepb.Instance{
		Name: proto.String("node-1"), Status: proto.String("RUNNING"), Id: proto.Uint64(42),
		Description:  proto.String("a b"),
		Labels:       map[string]string{"pool": "blue", "team": ""},
		CanIpForward: proto.Bool(true),
		Tags:         &computepb.Tags{Items: []string{"web", "k8s-node"}},
		NetworkInterfaces: []*computepb.NetworkInterface{
			{NetworkIP: proto.String("10.0.0.2")}, {NetworkIP: proto.String("10.1.0.2")},
		},
		Scheduling: &computepb.Scheduling{AutomaticRestart: proto.Bool(false)},
	}
	md := inst.ProtoReflect().Descriptor()
	for _, tc := range []struct {
		filter string
		want   bool
	}{
		{`name eq node-1`, true},
		{`name eq node-.*`, true},
		{`name eq node`, false}, // the whole field must match
		{`name eq 'node-(1|2)'`, true},
		{`description eq a b`, true}, // an unquoted literal is the rest
		{`(description eq a b) (name eq node-1)`, true},
		{`(name eq (node-1|x)) (status ne STOPPED)`, true},
		{`name eq "node-\d"`, true},
		{`name ne "node-.*"`, false},
		{`labels.pool eq blu.`, true},
		{`labels.missing eq ""`, true},
		{`name = node-1`, true},
		{`name = "node-2"`, false},
		{`name != "node-2"`, true},
		{`id = 42`, true},
		{`id > 5`, true},
		{`id <= 41`, false},
		{`canIpForward = true`, true},
		{`scheduling.automaticRestart = false`, true},
		{`tags.items = "web"`, true},
		{`tags.items = "db"`, false},
		{`tags.items != "db"`, true},
		{`networkInterfaces.networkIP = "10.1.0.2"`, true},
		{`labels.team:*`, true},
		{`labels.owner:*`, false},
		{`labels.pool:blue`, true},
		{`(name = node-1) (status = RUNNING)`, true},
		{`name = node-1 AND status = STOPPED`, false},
		{`name = x OR status = RUNNING`, true},
		{`(status = STOPPED OR status = RUNNING) AND name = node-1`, true},
		{`NOT name = x`, true},
		{`NOT (name = node-1)`, false},
		// JSON in a description, as the GCE backend's inventory matches it.
		{`description eq '.*b.*'`, true},
		{`description eq '.*"a".*'`, false},
	} {
		f, err := parseFilter(tc.filter)
		if err == nil {
			err = f.check(md)
		}
		if err != nil {
			t.Errorf("%s: %v", tc.filter, err)
			continue
		}
		if got := f.match(inst.ProtoReflect()); got != tc.want {
			t.Errorf("%s: matched %v, want %v", tc.filter, got, tc.want)
		}
	}
	for _, bad := range []string{
		``, `name`, `name eq`, `name ~ x`, `(name = x`, `name = x)`, `name = "x`,
		`(name eq x) OR (name eq y)`, `name eq "x" AND status = RUNNING`, `name eq "a" name eq "b"`,
		`nosuch = x`, `labels = x`, `labels.a.b = x`, `scheduling = x`, `name.x = y`,
		`name = x*`, `name eq "("`,
	} {
		f, err := parseFilter(bad)
		if err == nil {
			err = f.check(md)
		}
		if err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
