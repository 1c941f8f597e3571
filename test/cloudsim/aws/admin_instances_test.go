package aws_test

import (
	"errors"
	"maps"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// The cloud-neutral instance API, driven over HTTP the way the sandbox
// and benchmarks drive any cloud, and checked against what EC2 reports.
func TestNeutralInstancesOverHTTP(t *testing.T) {
	e := newEnv(t)
	c := cloudsim.NewAdminClient(e.srv.URL())
	info, err := c.LaunchInstance(t.Context(), cloudsim.InstanceSpec{
		Name: "node-a", Zone: region + "b", InstanceType: "c5.large", PublicIP: true,
		Tags: map[string]string{e.fx.ClusterTagKey: "owned"},
	})
	ok(t, err)
	insts := describeInstances(t, e, &ec2.DescribeInstancesInput{InstanceIds: []string{info.ID}})
	if len(insts) != 1 {
		t.Fatalf("EC2 lists %d instances for %s", len(insts), info.ID)
	}
	i := insts[0]
	wantTags := map[string]string{"Name": "node-a", e.fx.ClusterTagKey: "owned"}
	checks := map[string][2]string{
		"name":        {info.Name, "node-a"},
		"zone":        {info.Zone, aws.ToString(i.Placement.AvailabilityZone)},
		"type":        {info.InstanceType, string(i.InstanceType)},
		"state":       {string(info.State), "running"},
		"cloud state": {info.CloudState, string(i.State.Name)},
		"private ip":  {info.PrivateIP, aws.ToString(i.PrivateIpAddress)},
		"public ip":   {info.PublicIP, aws.ToString(i.PublicIpAddress)},
		"hostname":    {info.Hostname, aws.ToString(i.PrivateDnsName)},
	}
	for name, pair := range checks {
		if pair[0] != pair[1] || pair[0] == "" {
			t.Errorf("%s = %q, want %q", name, pair[0], pair[1])
		}
	}
	if !maps.Equal(info.Tags, wantTags) {
		t.Errorf("tags %v, want %v", info.Tags, wantTags)
	}

	steps := []struct {
		do                func() (cloudsim.InstanceInfo, error)
		state, cloudState string
	}{
		{func() (cloudsim.InstanceInfo, error) { return c.StopInstance(t.Context(), info.ID) }, "stopped", "stopped"},
		{func() (cloudsim.InstanceInfo, error) { return c.StartInstance(t.Context(), info.ID) }, "running", "running"},
		{func() (cloudsim.InstanceInfo, error) { return c.TerminateInstance(t.Context(), info.ID) }, "terminated", "terminated"},
	}
	for _, s := range steps {
		got, err := s.do()
		ok(t, err)
		if string(got.State) != s.state || got.CloudState != s.cloudState {
			t.Fatalf("state %s/%s, want %s/%s", got.State, got.CloudState, s.state, s.cloudState)
		}
		again, err := c.GetInstance(t.Context(), info.ID)
		ok(t, err)
		if again.State != got.State {
			t.Fatalf("GET says %s after %s", again.State, got.State)
		}
	}

	// EC2's shutting-down is on the way to terminated, never back.
	second, err := c.LaunchInstance(t.Context(), cloudsim.InstanceSpec{})
	ok(t, err)
	ok(t, e.emu.SetInstanceState(second.ID, "shutting-down"))
	got, err := c.GetInstance(t.Context(), second.ID)
	ok(t, err)
	if got.State != cloudsim.InstanceTerminated || got.CloudState != "shutting-down" || got.PublicIP != "" {
		t.Errorf("shutting-down instance: %+v", got)
	}

	list, err := c.ListInstances(t.Context())
	ok(t, err)
	if len(list) != 2 || list[0].ID != info.ID || list[1].ID != second.ID {
		t.Fatalf("list %+v", list)
	}
}

func TestNeutralInstanceErrors(t *testing.T) {
	e := newEnv(t)
	c := cloudsim.NewAdminClient(e.srv.URL())
	info, err := c.LaunchInstance(t.Context(), cloudsim.InstanceSpec{})
	ok(t, err)
	_, err = c.TerminateInstance(t.Context(), info.ID)
	ok(t, err)

	cases := []struct {
		name string
		call func() error
		want error
	}{
		{"get unknown", func() error { _, err := c.GetInstance(t.Context(), "i-00000000000000bad"); return err }, cloudsim.ErrInstanceNotFound},
		{"stop unknown", func() error { _, err := c.StopInstance(t.Context(), "i-00000000000000bad"); return err }, cloudsim.ErrInstanceNotFound},
		{"start terminated", func() error { _, err := c.StartInstance(t.Context(), info.ID); return err }, cloudsim.ErrInstanceState},
		{"unknown zone", func() error {
			_, err := c.LaunchInstance(t.Context(), cloudsim.InstanceSpec{Zone: "mars-1a"})
			return err
		}, cloudsim.ErrInvalidRequest},
		{"name and Name tag disagree", func() error {
			_, err := c.LaunchInstance(t.Context(), cloudsim.InstanceSpec{Name: "a", Tags: map[string]string{"Name": "b"}})
			return err
		}, cloudsim.ErrInvalidRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}
