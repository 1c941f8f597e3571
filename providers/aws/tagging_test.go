package aws

import (
	"errors"
	"maps"
	"testing"

	"github.com/multicloud-ccm/multicloud-ccm/providers/instancetags"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

// TestTagInstancesBatches: one CreateTags and one DeleteTags call for
// three instances; the tags are set, overwritten and removed as EC2 does,
// a tag whose value changed since is kept on untag, and the instances'
// other tags are left alone.
func TestTagInstancesBatches(t *testing.T) {
	env := newTestEnv(t, nil)
	ids := env.launch(t, cloudsimaws.LaunchSpec{Count: 3})
	tags := map[string]string{"team": "a", "cost-center": "42", "empty": ""}

	for id, err := range env.in.TagInstances(t.Context(), ids, tags) {
		if err != nil {
			t.Fatalf("tag %s: %v", id, err)
		}
	}
	if n := env.srv.CallCount("ec2:CreateTags"); n != 1 {
		t.Fatalf("CreateTags calls for 3 instances = %d, want 1", n)
	}
	for _, id := range ids {
		got := env.info(t, id).Tags
		for k, v := range tags {
			if got[k] != v {
				t.Fatalf("instance %s tag %s = %q, want %q (tags %v)", id, k, got[k], v, got)
			}
		}
		if got[env.fx.ClusterTagKey] != "owned" {
			t.Fatalf("instance %s lost its cluster tag: %v", id, got)
		}
	}

	// Someone changed one instance's value since: untag keeps it.
	changed := map[string]string{"team": "b"}
	if errs := env.in.TagInstances(t.Context(), ids[:1], changed); errs[ids[0]] != nil {
		t.Fatal(errs[ids[0]])
	}
	for id, err := range env.in.UntagInstances(t.Context(), ids, tags) {
		if err != nil {
			t.Fatalf("untag %s: %v", id, err)
		}
	}
	if n := env.srv.CallCount("ec2:DeleteTags"); n != 1 {
		t.Fatalf("DeleteTags calls for 3 instances = %d, want 1", n)
	}
	for i, id := range ids {
		want := map[string]string{env.fx.ClusterTagKey: "owned"}
		if i == 0 {
			want["team"] = "b"
		}
		if got := env.info(t, id).Tags; !maps.Equal(got, want) {
			t.Fatalf("instance %s tags after untag = %v, want %v", id, got, want)
		}
	}
}

// TestTagInstancesFindsTheFaultyInstance: EC2 refuses a whole batch for
// one unknown or malformed instance; the others are tagged by one call
// each, and each outcome says which. A failure of the request itself
// (5xx) is every instance's, with no extra calls.
func TestTagInstancesFindsTheFaultyInstance(t *testing.T) {
	env := newTestEnv(t, nil)
	ids := env.launch(t, cloudsimaws.LaunchSpec{Count: 2})
	const gone = "i-0123456789abcdef0"
	tags := map[string]string{"team": "a"}

	errs := env.in.TagInstances(t.Context(), append([]string{gone}, ids...), tags)
	if !errors.Is(errs[gone], instancetags.ErrInstanceNotFound) {
		t.Fatalf("unknown instance: %v, want ErrInstanceNotFound", errs[gone])
	}
	for _, id := range ids {
		if errs[id] != nil || env.info(t, id).Tags["team"] != "a" {
			t.Fatalf("instance %s: %v, tags %v", id, errs[id], env.info(t, id).Tags)
		}
	}
	if n := env.srv.CallCount("ec2:CreateTags"); n != 1+3 {
		t.Fatalf("CreateTags calls = %d, want the batch and one per instance (4)", n)
	}

	// Untagging a gone instance is reported as gone (the controller's done).
	if errs := env.in.UntagInstances(t.Context(), []string{gone}, tags); !errors.Is(errs[gone], instancetags.ErrInstanceNotFound) {
		t.Fatalf("untag unknown instance: %v, want ErrInstanceNotFound", errs[gone])
	}
	// A malformed ID is InvalidID on the tagging actions.
	const bad = "i-kwok0001"
	if errs := env.in.TagInstances(t.Context(), []string{bad}, tags); !errors.Is(errs[bad], instancetags.ErrInvalidInstanceID) {
		t.Fatalf("malformed instance ID: %v, want ErrInvalidInstanceID", errs[bad])
	}

	env.srv.ResetCalls()
	if err := env.srv.SetFault(cloudsim.FaultSpec{Op: "ec2:CreateTags", FailNext: 10}); err != nil {
		t.Fatal(err)
	}
	errs = env.in.TagInstances(t.Context(), ids, tags)
	for _, id := range ids {
		if errs[id] == nil || errors.Is(errs[id], instancetags.ErrInstanceNotFound) {
			t.Fatalf("instance %s under 5xx: %v, want a plain error", id, errs[id])
		}
	}
	// MaxAttempts 2 in the test section: one batch call, retried once by the SDK.
	if n := env.srv.CallCount("ec2:CreateTags"); n != 2 {
		t.Fatalf("CreateTags calls under 5xx = %d, want 2 (one call, one SDK retry)", n)
	}
}

// TestTagInstancesChunks: more than 50 instances take one call per 50.
func TestTagInstancesChunks(t *testing.T) {
	env := newTestEnv(t, nil)
	ids := env.launch(t, cloudsimaws.LaunchSpec{Count: 120})
	for id, err := range env.in.TagInstances(t.Context(), ids, map[string]string{"team": "a"}) {
		if err != nil {
			t.Fatalf("tag %s: %v", id, err)
		}
	}
	if n := env.srv.CallCount("ec2:CreateTags"); n != 3 {
		t.Fatalf("CreateTags calls for 120 instances = %d, want 3", n)
	}
}

func TestInstanceIDOfProviderID(t *testing.T) {
	env := newTestEnv(t, nil)
	for pid, want := range map[string]string{
		"aws:///eu-west-1a/i-0123456789abcdef0": "i-0123456789abcdef0",
		"i-01234567":                            "i-01234567",
		"":                                      "",
		"gce://p/z/n":                           "",
		"aws:///eu-west-1a/fargate-10.0.0.1":    "",
	} {
		got, ok := env.in.InstanceID(pid)
		if got != want || ok != (want != "") {
			t.Errorf("InstanceID(%q) = %q, %v; want %q", pid, got, ok, want)
		}
	}
}
