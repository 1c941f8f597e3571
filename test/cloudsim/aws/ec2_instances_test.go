package aws_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

func filter(name string, values ...string) ec2types.Filter {
	return ec2types.Filter{Name: aws.String(name), Values: values}
}

func describeInstances(t *testing.T, e *env, in *ec2.DescribeInstancesInput) []ec2types.Instance {
	t.Helper()
	out, err := e.ec2.DescribeInstances(ctx(), in)
	if err != nil {
		t.Fatal(err)
	}
	var insts []ec2types.Instance
	for _, r := range out.Reservations {
		insts = append(insts, r.Instances...)
	}
	return insts
}

func instanceIDs(insts []ec2types.Instance) []string {
	return idsOf(insts, func(i ec2types.Instance) *string { return i.InstanceId })
}

// idsOf lists the IDs id reads from items, in order.
func idsOf[T any](items []T, id func(T) *string) []string {
	var ids []string
	for _, it := range items {
		ids = append(ids, aws.ToString(id(it)))
	}
	return ids
}

func TestDescribeInstancesFields(t *testing.T) {
	e := newEnv(t)
	ids := launch(t, e, cloudsimaws.LaunchSpec{Zone: region + "b", InstanceType: "c5.xlarge", PublicIP: true,
		Tags: map[string]string{"Name": "node-0", e.fx.ClusterTagKey: "owned"}})

	insts := describeInstances(t, e, &ec2.DescribeInstancesInput{InstanceIds: ids})
	if len(insts) != 1 {
		t.Fatalf("got %d instances", len(insts))
	}
	i := insts[0]
	info, _ := e.emu.Instance(ids[0])
	checks := map[string][2]string{
		"id":          {aws.ToString(i.InstanceId), ids[0]},
		"type":        {string(i.InstanceType), "c5.xlarge"},
		"zone":        {aws.ToString(i.Placement.AvailabilityZone), region + "b"},
		"state":       {string(i.State.Name), "running"},
		"code":        {fmt.Sprint(aws.ToInt32(i.State.Code)), "16"},
		"vpc":         {aws.ToString(i.VpcId), e.fx.VPCID},
		"subnet":      {aws.ToString(i.SubnetId), e.fx.PublicSubnets[region+"b"]},
		"private ip":  {aws.ToString(i.PrivateIpAddress), info.PrivateIP},
		"private dns": {aws.ToString(i.PrivateDnsName), "ip-" + strings.ReplaceAll(info.PrivateIP, ".", "-") + ".eu-west-1.compute.internal"},
		"public ip":   {aws.ToString(i.PublicIpAddress), info.PublicIP},
		"public dns":  {aws.ToString(i.PublicDnsName), "ec2-" + strings.ReplaceAll(info.PublicIP, ".", "-") + ".eu-west-1.compute.amazonaws.com"},
		"sg":          {aws.ToString(i.SecurityGroups[0].GroupId), e.fx.NodeSecurityGroupID},
		"sg name":     {aws.ToString(i.SecurityGroups[0].GroupName), "test-node"},
		"eni subnet":  {aws.ToString(i.NetworkInterfaces[0].SubnetId), e.fx.PublicSubnets[region+"b"]},
		"eni pub ip":  {aws.ToString(i.NetworkInterfaces[0].Association.PublicIp), info.PublicIP},
		"srcdst":      {fmt.Sprint(aws.ToBool(i.SourceDestCheck)), "true"},
	}
	for name, c := range checks {
		if c[0] != c[1] || c[0] == "" {
			t.Errorf("%s = %q, want %q", name, c[0], c[1])
		}
	}
	if !strings.HasPrefix(info.PrivateIP, "10.0.") {
		t.Errorf("private IP %s outside the VPC", info.PrivateIP)
	}
	tags := map[string]string{}
	for _, tg := range i.Tags {
		tags[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
	}
	if tags["Name"] != "node-0" || tags["kubernetes.io/cluster/test"] != "owned" {
		t.Errorf("tags %v", tags)
	}
	if i.LaunchTime == nil || i.LaunchTime.IsZero() {
		t.Error("no launch time")
	}
}

func TestDescribeInstancesFilters(t *testing.T) {
	e := newEnv(t)
	a := launch(t, e, cloudsimaws.LaunchSpec{Count: 2, Zone: region + "a", Tags: map[string]string{"role": "worker", "pool": "x"}})
	b := launch(t, e, cloudsimaws.LaunchSpec{Zone: region + "b", Tags: map[string]string{"role": "master"}})
	c := launch(t, e, cloudsimaws.LaunchSpec{Zone: region + "c"})
	if err := e.emu.Stop(c...); err != nil {
		t.Fatal(err)
	}
	infoA, _ := e.emu.Instance(a[0])
	all := slices.Concat(a, b, c)

	for _, tc := range []struct {
		name    string
		filters []ec2types.Filter
		want    []string
	}{
		{"none", nil, all},
		{"instance-id", []ec2types.Filter{filter("instance-id", a[1], c[0])}, []string{a[1], c[0]}},
		{"private-dns-name", []ec2types.Filter{filter("private-dns-name", infoA.PrivateDNSName)}, a[:1]},
		{"vpc-id", []ec2types.Filter{filter("vpc-id", e.fx.VPCID)}, all},
		{"vpc-id other", []ec2types.Filter{filter("vpc-id", "vpc-00000000000000999")}, nil},
		{"state", []ec2types.Filter{filter("instance-state-name", "stopped")}, c},
		{"state or", []ec2types.Filter{filter("instance-state-name", "stopped", "running")}, all},
		{"tag", []ec2types.Filter{filter("tag:role", "worker")}, a},
		{"tag wildcard", []ec2types.Filter{filter("tag:role", "*er")}, slices.Concat(a, b)},
		{"tag-key", []ec2types.Filter{filter("tag-key", "pool")}, a},
		{"az", []ec2types.Filter{filter("availability-zone", region+"b")}, b},
		{"and", []ec2types.Filter{filter("tag-key", "role"), filter("availability-zone", region+"a")}, a},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := instanceIDs(describeInstances(t, e, &ec2.DescribeInstancesInput{Filters: tc.filters}))
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}

	_, err := e.ec2.DescribeInstances(ctx(), &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("no-such-filter", "x")}})
	wantCode(t, err, "InvalidParameterValue")
}

func TestDescribeInstancesErrors(t *testing.T) {
	e := newEnv(t)
	ids := launch(t, e, cloudsimaws.LaunchSpec{})
	for _, tc := range []struct {
		in   *ec2.DescribeInstancesInput
		code string
	}{
		{&ec2.DescribeInstancesInput{InstanceIds: []string{"i-0123456789abcdef0"}}, "InvalidInstanceID.NotFound"},
		{&ec2.DescribeInstancesInput{InstanceIds: []string{"i-12345678"}}, "InvalidInstanceID.NotFound"},
		{&ec2.DescribeInstancesInput{InstanceIds: []string{ids[0], "i-0123456789abcdef0"}}, "InvalidInstanceID.NotFound"},
		{&ec2.DescribeInstancesInput{InstanceIds: []string{"i-xyz"}}, "InvalidInstanceID.Malformed"},
		{&ec2.DescribeInstancesInput{InstanceIds: []string{"node-1"}}, "InvalidInstanceID.Malformed"},
		{&ec2.DescribeInstancesInput{InstanceIds: ids, MaxResults: aws.Int32(5)}, "InvalidParameterCombination"},
		{&ec2.DescribeInstancesInput{MaxResults: aws.Int32(4)}, "InvalidParameterValue"},
		{&ec2.DescribeInstancesInput{MaxResults: aws.Int32(1001)}, "InvalidParameterValue"},
		{&ec2.DescribeInstancesInput{NextToken: aws.String("garbage!")}, "InvalidParameterValue"},
	} {
		_, err := e.ec2.DescribeInstances(ctx(), tc.in)
		wantCode(t, err, tc.code)
	}
}

func TestDescribeInstancesPaginationAndReservations(t *testing.T) {
	e := newEnv(t)
	var want []string
	for range 4 { // four reservations of three
		want = append(want, launch(t, e, cloudsimaws.LaunchSpec{Count: 3})...)
	}
	var got []string
	pages := 0
	p := ec2.NewDescribeInstancesPaginator(e.ec2, &ec2.DescribeInstancesInput{MaxResults: aws.Int32(5)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx())
		if err != nil {
			t.Fatal(err)
		}
		pages++
		n := 0
		for _, r := range out.Reservations {
			if aws.ToString(r.ReservationId) == "" || aws.ToString(r.OwnerId) != "123456789012" {
				t.Errorf("reservation %+v", r)
			}
			for _, i := range r.Instances {
				got = append(got, aws.ToString(i.InstanceId))
				n++
			}
		}
		if n > 5 {
			t.Errorf("page of %d > MaxResults", n)
		}
	}
	if pages != 3 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%d pages, got %v, want %v", pages, got, want)
	}

	// Without MaxResults everything comes at once, grouped by reservation.
	out := must[*ec2.DescribeInstancesOutput](t)(e.ec2.DescribeInstances(ctx(), &ec2.DescribeInstancesInput{}))
	if len(out.Reservations) != 4 || len(out.Reservations[0].Instances) != 3 || out.NextToken != nil {
		t.Fatalf("reservations: %d, next %v", len(out.Reservations), out.NextToken)
	}
}

func TestInstanceLifecycle(t *testing.T) {
	e := newEnv(t)
	ids := launch(t, e, cloudsimaws.LaunchSpec{PublicIP: true})
	state := func() ec2types.Instance {
		t.Helper()
		return describeInstances(t, e, &ec2.DescribeInstancesInput{InstanceIds: ids})[0]
	}
	firstIP := aws.ToString(state().PublicIpAddress)

	ok(t, e.emu.Stop(ids...))
	if i := state(); i.State.Name != "stopped" || aws.ToInt32(i.State.Code) != 80 || i.PublicIpAddress != nil || i.PrivateIpAddress == nil {
		t.Fatalf("stopped: %s public %v private %v", i.State.Name, i.PublicIpAddress, i.PrivateIpAddress)
	}
	ok(t, e.emu.Start(ids...))
	if i := state(); i.State.Name != "running" || aws.ToString(i.PublicIpAddress) == firstIP || i.PublicIpAddress == nil {
		t.Fatalf("restarted: %s public %v (was %s)", i.State.Name, i.PublicIpAddress, firstIP)
	}
	for _, st := range []string{"pending", "stopping", "shutting-down"} {
		ok(t, e.emu.SetInstanceState(ids[0], st))
		if got := string(state().State.Name); got != st {
			t.Fatalf("state %s, want %s", got, st)
		}
	}

	// Terminated instances stay visible, without addresses, until removed.
	ok(t, e.emu.Terminate(ids...))
	i := state()
	if i.State.Name != "terminated" || aws.ToInt32(i.State.Code) != 48 || aws.ToString(i.PrivateDnsName) != "" || i.PrivateIpAddress != nil {
		t.Fatalf("terminated: %+v", i.State)
	}
	if got := describeInstances(t, e, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("instance-state-name", "terminated")}}); len(got) != 1 {
		t.Fatalf("terminated filter: %d", len(got))
	}
	if err := e.emu.Start(ids...); err == nil {
		t.Fatal("started a terminated instance")
	}
	ok(t, e.emu.Remove(ids...))
	_, err := e.ec2.DescribeInstances(ctx(), &ec2.DescribeInstancesInput{InstanceIds: ids})
	wantCode(t, err, "InvalidInstanceID.NotFound")
}

func TestLaunchValidation(t *testing.T) {
	e := newEnv(t)
	for _, spec := range []cloudsimaws.LaunchSpec{
		{Zone: "mars-1a"},
		{SubnetID: "subnet-nope"},
		{SecurityGroupIDs: []string{"sg-nope"}},
		{State: "terminated"},
		{Count: -1},
	} {
		if _, err := e.emu.Launch(spec); err == nil {
			t.Errorf("%+v: want error", spec)
		}
	}
	// Round robin over zones when no zone is given; private subnets by default.
	ids := launch(t, e, cloudsimaws.LaunchSpec{Count: 3})
	for n, id := range ids {
		info, _ := e.emu.Instance(id)
		zone := e.emu.Zones()[n]
		if info.Zone != zone || info.SubnetID != e.fx.PrivateSubnets[zone] || info.PublicIP != "" {
			t.Errorf("instance %d: %+v", n, info)
		}
	}
}

func TestModifyInstanceAttributeSourceDestCheck(t *testing.T) {
	e := newEnv(t)
	ids := launch(t, e, cloudsimaws.LaunchSpec{})
	if _, err := e.ec2.ModifyInstanceAttribute(t.Context(), &ec2.ModifyInstanceAttributeInput{
		InstanceId: aws.String(ids[0]), SourceDestCheck: &ec2types.AttributeBooleanValue{Value: aws.Bool(false)},
	}); err != nil {
		t.Fatal(err)
	}
	i := describeInstances(t, e, &ec2.DescribeInstancesInput{InstanceIds: ids})[0]
	if aws.ToBool(i.SourceDestCheck) || aws.ToBool(i.NetworkInterfaces[0].SourceDestCheck) {
		t.Errorf("source/dest check still on after disabling it")
	}
	_, err := e.ec2.ModifyInstanceAttribute(t.Context(), &ec2.ModifyInstanceAttributeInput{
		InstanceId: aws.String("i-0123456789abcdef0"), SourceDestCheck: &ec2types.AttributeBooleanValue{Value: aws.Bool(false)},
	})
	wantCode(t, err, "InvalidInstanceID.NotFound")
}
