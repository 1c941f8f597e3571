package aws

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"k8s.io/apimachinery/pkg/util/wait"

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

// fixedBackoff backs off an hour: a retry that ends sooner was woken.
type fixedBackoff struct{}

func (fixedBackoff) BackoffDelay(int, error) (time.Duration, error) { return time.Hour, nil }

// TestRetryWakesWhenTheServiceAnswersAgain: a call that has seen only
// failures from EC2 since it began sleeps in its backoff until EC2
// answers any call, then retries at once; a throttled call backs off in
// full however many calls are answered meanwhile.
func TestRetryWakesWhenTheServiceAnswersAgain(t *testing.T) {
	saved := newBackoff
	newBackoff = func() retry.BackoffDelayer { return fixedBackoff{} }
	t.Cleanup(func() { newBackoff = saved })

	for _, tc := range []struct {
		name  string
		fault cloudsim.FaultSpec
		wakes bool
	}{
		{"5xx", cloudsim.FaultSpec{Op: "ec2:DescribeInstances", FailNext: 1}, true},
		{"throttled", cloudsim.FaultSpec{Op: "ec2:DescribeInstances", ThrottleNext: 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newTestEnv(t, func(s *Section) { s.MaxAttempts = 3 })
			cfg, err := sdkConfig(t.Context(), env.sec)
			if err != nil {
				t.Fatal(err)
			}
			client := ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = aws.String(env.sec.Endpoints.EC2) })
			answers := client.Options().Retryer.(*wakingRetryer).answers
			if err := env.srv.SetFault(tc.fault); err != nil {
				t.Fatal(err)
			}

			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{})
				done <- err
			}()
			// Wait until the call sleeps in its backoff: a 5xx call has
			// asked to be woken; a throttled one has made its attempt.
			if err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
				if tc.wakes {
					answers.mu.Lock()
					defer answers.mu.Unlock()
					a := answers.svc["EC2"]
					return a != nil && a.next != nil, nil
				}
				return env.describes() == 1, nil
			}); err != nil {
				t.Fatalf("the call never failed its first attempt: %v", err)
			}

			// Another call is answered.
			if _, err := client.DescribeAvailabilityZones(t.Context(), &ec2.DescribeAvailabilityZonesInput{}); err != nil {
				t.Fatal(err)
			}
			if tc.wakes {
				select {
				case err := <-done:
					if err != nil {
						t.Fatalf("woken call: %v", err)
					}
				case <-time.After(30 * time.Second):
					t.Fatal("the call still sleeps in its backoff after EC2 answered")
				}
				if got := env.describes(); got != 2 {
					t.Errorf("DescribeInstances attempts = %d, want 2 (1 failed + 1 served)", got)
				}
				return
			}
			select {
			case err := <-done:
				t.Fatalf("a throttled call was woken by another call's answer (err %v)", err)
			case <-time.After(300 * time.Millisecond):
			}
			cancel()
			err = <-done
			if !errors.As(err, new(*aws.RequestCanceledError)) {
				t.Fatalf("canceled in its backoff: err = %v, want a RequestCanceledError", err)
			}
			if got := env.describes(); got != 1 {
				t.Errorf("DescribeInstances attempts = %d, want 1", got)
			}
		})
	}
}

// TestRetryAfterOthersWereAnsweredBacksOffInFull: a call whose service
// answered other calls since it began sees a flaky API, not an outage,
// and is not woken early.
func TestRetryAfterOthersWereAnsweredBacksOffInFull(t *testing.T) {
	s := newServiceAnswers()
	since := s.generation("EC2")
	if s.nextAnswer("EC2", since) == nil {
		t.Fatal("no answer since the call began: want a wake channel")
	}
	s.answered("EC2")
	if s.nextAnswer("EC2", since) != nil {
		t.Fatal("EC2 answered since the call began: want a full backoff (nil channel)")
	}
	if s.nextAnswer("Elastic Load Balancing v2", s.generation("Elastic Load Balancing v2")) == nil {
		t.Fatal("services are apart: ELB has not answered")
	}
}
