package aws

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/snapshot"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

func TestInstanceMetadata(t *testing.T) {
	env := newTestEnv(t, nil)
	id := env.launch(t, cloudsimaws.LaunchSpec{Zone: "eu-west-1b", InstanceType: "c5.xlarge", PublicIP: true})[0]
	info := env.info(t, id)

	md, err := env.in.InstanceMetadata(t.Context(), env.nodeByName(t, id))
	if err != nil {
		t.Fatal(err)
	}
	want := &cloudprovider.InstanceMetadata{
		ProviderID:   "aws:///eu-west-1b/" + id,
		InstanceType: "c5.xlarge",
		Zone:         "eu-west-1b",
		Region:       testRegion,
		NodeAddresses: []v1.NodeAddress{
			{Type: v1.NodeInternalIP, Address: info.PrivateIP},
			{Type: v1.NodeExternalIP, Address: info.PublicIP},
			{Type: v1.NodeInternalDNS, Address: info.PrivateDNSName},
			{Type: v1.NodeExternalDNS, Address: info.PublicDNSName},
			{Type: v1.NodeHostName, Address: info.PrivateDNSName},
		},
		AdditionalLabels: map[string]string{"topology.k8s.aws/zone-id": "euw1-az2"},
	}
	if !reflect.DeepEqual(md, want) {
		t.Errorf("InstanceMetadata =\n%+v\nwant\n%+v", md, want)
	}

	// A second Node in another zone needs no second zone lookup.
	other := env.launch(t, cloudsimaws.LaunchSpec{Zone: "eu-west-1c"})[0]
	env.expire()
	md, err = env.in.InstanceMetadata(t.Context(), env.nodeByProviderID(t, other))
	if err != nil {
		t.Fatal(err)
	}
	if md.AdditionalLabels["topology.k8s.aws/zone-id"] != "euw1-az3" || len(md.NodeAddresses) != 3 {
		t.Errorf("private instance metadata = %+v", md)
	}
	if n := env.srv.CallCount("ec2:DescribeAvailabilityZones"); n != 1 {
		t.Errorf("DescribeAvailabilityZones calls = %d, want 1", n)
	}
}

// TestInstanceLookupForms covers every way a Node names its instance.
func TestInstanceLookupForms(t *testing.T) {
	env := newTestEnv(t, nil)
	id := env.launch(t, cloudsimaws.LaunchSpec{Zone: "eu-west-1a"})[0]
	dns := env.info(t, id).PrivateDNSName
	node := func(name, pid string) *v1.Node {
		return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{ProviderID: pid}}
	}
	for _, tt := range []struct {
		desc string
		node *v1.Node
	}{
		{"providerID", node("whatever", "aws:///eu-west-1a/"+id)},
		{"providerID without zone", node("whatever", "aws:////"+id)},
		{"providerID with zone as host", node("whatever", "aws://eu-west-1a/"+id)},
		{"bare instance ID as providerID", node("whatever", id)},
		{"private DNS name", node(dns, "")},
		{"instance ID as name", node(id, "")},
		{"resource-name hostname", node(id+".eu-west-1.compute.internal", "")},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			got, err := env.in.KeyForNode(t.Context(), tt.node)
			if err != nil || got != id {
				t.Fatalf("KeyForNode = %q, %v; want %q", got, err, id)
			}
			md, err := env.in.InstanceMetadata(t.Context(), tt.node)
			if err != nil || md.ProviderID != "aws:///eu-west-1a/"+id {
				t.Errorf("InstanceMetadata = %+v, %v", md, err)
			}
		})
	}

	t.Run("unknown private DNS name is an error, not gone", func(t *testing.T) {
		n := node("ip-10-9-9-9.eu-west-1.compute.internal", "")
		exists, err := env.in.InstanceExists(t.Context(), n)
		if err == nil || !errors.Is(err, cloudprovider.InstanceNotFound) || exists ||
			!strings.Contains(err.Error(), `no instance has private DNS name "ip-10-9-9-9.eu-west-1.compute.internal"`) {
			t.Errorf("InstanceExists = %v, %v; want an InstanceNotFound error naming the private DNS name", exists, err)
		}
		if _, err := env.in.InstanceMetadata(t.Context(), n); !errors.Is(err, cloudprovider.InstanceNotFound) {
			t.Errorf("InstanceMetadata error = %v, want InstanceNotFound", err)
		}
	})
	t.Run("malformed providerID is an error, not gone", func(t *testing.T) {
		exists, err := env.in.InstanceExists(t.Context(), node(dns, "aws:///eu-west-1a/fargate-ip-10-0-0-1"))
		if err == nil || exists {
			t.Errorf("InstanceExists = %v, %v; want an error", exists, err)
		}
	})
}

func TestInstanceExistsAndShutdown(t *testing.T) {
	env := newTestEnv(t, nil)
	ids := env.launch(t, cloudsimaws.LaunchSpec{Count: 5})
	running, stopped, stopping, terminated, removed := ids[0], ids[1], ids[2], ids[3], ids[4]
	nodes := map[string]*v1.Node{}
	for _, id := range ids {
		nodes[id] = env.nodeByProviderID(t, id)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(env.emu.Stop(stopped))
	must(env.emu.SetInstanceState(stopping, "stopping"))
	must(env.emu.Terminate(terminated, removed))
	must(env.emu.Remove(removed))

	for _, tt := range []struct {
		id               string
		exists, shutdown bool
	}{
		{running, true, false},
		{stopped, true, true},
		{stopping, true, true},
		{terminated, false, false},
		{removed, false, false},
	} {
		exists, err := env.in.InstanceExists(t.Context(), nodes[tt.id])
		if err != nil || exists != tt.exists {
			t.Errorf("InstanceExists(%s) = %v, %v; want %v", tt.id, exists, err, tt.exists)
		}
		shutdown, err := env.in.InstanceShutdown(t.Context(), nodes[tt.id])
		if err != nil || shutdown != tt.shutdown {
			t.Errorf("InstanceShutdown(%s) = %v, %v; want %v", tt.id, shutdown, err, tt.shutdown)
		}
	}
	if _, err := env.in.InstanceMetadata(t.Context(), nodes[terminated]); !errors.Is(err, cloudprovider.InstanceNotFound) {
		t.Errorf("InstanceMetadata(terminated) error = %v, want InstanceNotFound", err)
	}
}

// TestInstanceExistsNeverGoneOnErrors: a wrong "gone" deletes the Node, so
// every failure to get EC2's answer must be an error.
func TestInstanceExistsNeverGoneOnErrors(t *testing.T) {
	faults := []struct {
		name  string
		fault func(op string) cloudsim.FaultSpec
	}{
		{"throttled", func(op string) cloudsim.FaultSpec { return cloudsim.FaultSpec{Op: op, ThrottleNext: 1000} }},
		{"5xx", func(op string) cloudsim.FaultSpec { return cloudsim.FaultSpec{Op: op, FailNext: 1000} }},
		{"hang", func(op string) cloudsim.FaultSpec { return cloudsim.FaultSpec{Op: op, Hang: true} }},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			env := newTestEnv(t, func(s *Section) { s.MaxAttempts = 1 })
			ids := env.launch(t, cloudsimaws.LaunchSpec{Count: 2})
			untagged, err := env.emu.Launch(cloudsimaws.LaunchSpec{})
			if err != nil {
				t.Fatal(err)
			}
			if err := env.srv.SetFault(f.fault("ec2:DescribeInstances")); err != nil {
				t.Fatal(err)
			}
			// EC2 cannot be asked.
			exists, err := env.in.InstanceExists(t.Context(), env.nodeByProviderID(t, ids[0]))
			if err == nil || exists {
				t.Errorf("EC2 failing: InstanceExists = %v, %v; want an error", exists, err)
			}
			if shutdown, err := env.in.InstanceShutdown(t.Context(), env.nodeByProviderID(t, ids[0])); err == nil || shutdown {
				t.Errorf("EC2 failing: InstanceShutdown = %v, %v; want an error", shutdown, err)
			}

			// Nodes asking right after a failed lookup get its error
			// without another call, so a struggling API is not piled on
			// by a pass over every NotReady Node.
			before := env.describes()
			exists, err = env.in.InstanceExists(t.Context(), env.nodeByProviderID(t, ids[1]))
			if err == nil || exists || env.describes() != before {
				t.Errorf("right after a failed lookup: InstanceExists = %v, %v with %d calls; want the held error", exists, err, env.describes()-before)
			}

			// EC2 answers again: both instances exist.
			env.srv.ClearFaults()
			env.clock.Step(2 * time.Second)
			for _, id := range ids {
				if exists, err := env.in.InstanceExists(t.Context(), env.nodeByProviderID(t, id)); err != nil || !exists {
					t.Fatalf("InstanceExists(%s) = %v, %v", id, exists, err)
				}
			}

			// One is removed for good, and EC2 fails again. Within a few
			// seconds the last answer stands; after that every answer is
			// an error, for the removed instance too: only EC2's own
			// NotFound may say gone.
			if err := env.emu.Terminate(ids[1]); err != nil {
				t.Fatal(err)
			}
			if err := env.emu.Remove(ids[1]); err != nil {
				t.Fatal(err)
			}
			if err := env.srv.SetFault(f.fault("ec2:DescribeInstances")); err != nil {
				t.Fatal(err)
			}
			if exists, err := env.in.InstanceExists(t.Context(), env.nodeByProviderID(t, ids[0])); err != nil || !exists {
				t.Errorf("within the recent window: InstanceExists = %v, %v; want the last answer", exists, err)
			}
			env.clock.Step(snapshot.DefaultRecentAge + time.Second)
			for _, id := range []string{ids[0], ids[1], untagged[0]} {
				node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: v1.NodeSpec{ProviderID: "aws:////" + id}}
				exists, err = env.in.InstanceExists(t.Context(), node)
				if err == nil || exists {
					t.Errorf("%s while EC2 fails: InstanceExists = %v, %v; want an error", id, exists, err)
				}
			}
		})
	}
}
