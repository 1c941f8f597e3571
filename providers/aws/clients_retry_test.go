package aws

import (
	"testing"

	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// TestThrottledAndFailedCallsAreRetried: the SDK retries throttling and 5xx
// with backoff, and every retry resends the full request body (the body
// copy in ownRequestBodies must not break the SDK's rewind).
func TestThrottledAndFailedCallsAreRetried(t *testing.T) {
	for _, f := range []cloudsim.FaultSpec{
		{Op: "ec2:DescribeInstances", ThrottleNext: 2},
		{Op: "ec2:DescribeInstances", FailNext: 2},
	} {
		env := newTestEnv(t, func(s *Section) { s.MaxAttempts = 3 })
		ids := env.launch(t, cloudsimaws.LaunchSpec{Count: 1})
		if err := env.srv.SetFault(f); err != nil {
			t.Fatal(err)
		}
		md, err := env.in.InstanceMetadata(t.Context(), env.nodeByProviderID(t, ids[0]))
		if err != nil {
			t.Fatalf("%+v: InstanceMetadata after retries: %v", f, err)
		}
		if md.ProviderID == "" {
			t.Fatalf("%+v: no providerID", f)
		}
		if got := env.describes(); got != 3 {
			t.Errorf("%+v: DescribeInstances calls = %d, want 3 (2 refused + 1 served)", f, got)
		}
	}
}
