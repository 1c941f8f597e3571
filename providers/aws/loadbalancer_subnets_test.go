package aws

import (
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

// TestConcurrentCreatesShareSubnetDiscovery: Services created together
// (the service controller runs 10 workers) cost one DescribeSubnets.
func TestConcurrentCreatesShareSubnetDiscovery(t *testing.T) {
	e := newLBEnv(t)
	nodes := e.nodes(2)
	e.srv.ResetCalls()
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			svc := lbService(nil)
			svc.Name = fmt.Sprintf("web-%d", i)
			if _, err := e.lb.EnsureLoadBalancer(e.ctx, "kubernetes", svc, nodes); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := e.srv.CallCount("ec2:DescribeSubnets"); n != 1 {
		t.Errorf("DescribeSubnets calls = %d, want 1", n)
	}
}

// TestSubnetDiscoveryAsUpstream: a VPC whose subnets carry only the
// cluster tag (no role tags), which the upstream AWS CCM accepts
// (pkg/providers/v1/aws.go:1651-1793), serves internet-facing NLBs from
// its public subnets; a subnet with the public role tag whose route table
// has no internet gateway is never used for them; the user's extra tags
// and upstream's health check defaults come with the new NLB. Discovery
// costs one subnet and one route table listing.
func TestSubnetDiscoveryAsUpstream(t *testing.T) {
	e := newLBEnv(t)
	var all []string
	for _, m := range []map[string]string{e.fx.PublicSubnets, e.fx.PrivateSubnets} {
		for _, id := range m {
			all = append(all, id)
		}
	}
	// The backend's own client has no DeleteTags; the test is the VPC's admin.
	admin := ec2.New(ec2.Options{Region: "eu-west-1", BaseEndpoint: aws.String(e.srv.URL()),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")})
	if _, err := admin.DeleteTags(e.ctx, &ec2.DeleteTagsInput{Resources: all, Tags: []ec2types.Tag{{Key: aws.String(roleELBTagKey)}, {Key: aws.String(roleInternalELBTag)}}}); err != nil {
		t.Fatal(err)
	}
	zone := e.emu.Zones()[0]
	private, err := e.emu.CreateSubnet(cloudsimaws.SubnetSpec{VPCID: e.fx.VPCID, Zone: zone, CIDR: "10.0.255.0/28",
		Tags: map[string]string{roleELBTagKey: "1", clusterTagKey(lbTestCluster): clusterTagOwned}})
	if err != nil {
		t.Fatal(err)
	}
	svc := lbService(map[string]string{string(annotationExtraTags): "team=payments, cost-center = 42"})
	e.srv.ResetCalls()
	e.ensure(svc, e.nodes(1))
	if n, m := e.srv.CallCount("ec2:DescribeSubnets"), e.srv.CallCount("ec2:DescribeRouteTables"); n != 1 || m != 1 {
		t.Errorf("discovery cost %d DescribeSubnets and %d DescribeRouteTables, want 1 and 1", n, m)
	}
	v := e.view(svc)
	var got []string
	for _, az := range v.lb.AvailabilityZones {
		got = append(got, aws.ToString(az.SubnetId))
	}
	if want := lbSortedValues(e.fx.PublicSubnets); !reflect.DeepEqual(lbSorted(got), want) || slices.Contains(got, private) {
		t.Errorf("subnets %v, want the public ones %v (never the role-tagged private %s)", got, want, private)
	}
	for kind, rs := range e.tagged(svc) {
		for _, r := range rs {
			if r.Tags["team"] != "payments" || r.Tags["cost-center"] != "42" {
				t.Errorf("%s %s lacks the additional tags: %v", kind, r.ID, r.Tags)
			}
		}
	}
	for _, tg := range v.tgs {
		if aws.ToInt32(tg.HealthCheckIntervalSeconds) != 30 || aws.ToInt32(tg.HealthCheckTimeoutSeconds) != 10 ||
			aws.ToInt32(tg.HealthyThresholdCount) != 3 || aws.ToInt32(tg.UnhealthyThresholdCount) != 3 {
			t.Errorf("target group %s health check %d/%d/%d/%d, want upstream's 30/10/3/3", aws.ToString(tg.TargetGroupName),
				aws.ToInt32(tg.HealthCheckIntervalSeconds), aws.ToInt32(tg.HealthCheckTimeoutSeconds), aws.ToInt32(tg.HealthyThresholdCount), aws.ToInt32(tg.UnhealthyThresholdCount))
		}
	}

	// Changed annotations are applied: a retuned health check in place,
	// a changed tag on the NLB.
	svc.Annotations[string(annotationExtraTags)] = "team=checkout"
	svc.Annotations[string(annotationHCInterval)] = "15"
	svc.Annotations[string(annotationHCProtocol)] = "HTTP"
	svc.Annotations[string(annotationHCPath)] = "/ready"
	e.ensure(svc, e.nodes(1))
	v = e.view(svc)
	for _, tg := range v.tgs {
		if aws.ToInt32(tg.HealthCheckIntervalSeconds) != 15 || tg.HealthCheckProtocol != "HTTP" || aws.ToString(tg.HealthCheckPath) != "/ready" {
			t.Errorf("target group %s health check not retuned: %+v", aws.ToString(tg.TargetGroupName), tg)
		}
	}
	for _, r := range e.tagged(svc)[cloudsimaws.KindLoadBalancer] {
		if r.Tags["team"] != "checkout" {
			t.Errorf("NLB tag team=%q, want checkout", r.Tags["team"])
		}
	}
}
