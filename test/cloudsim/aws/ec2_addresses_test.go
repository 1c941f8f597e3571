package aws_test

import (
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

func allocate(t *testing.T, e *env, tags map[string]string) (allocationID, publicIP string) {
	t.Helper()
	in := &ec2.AllocateAddressInput{Domain: ec2types.DomainTypeVpc}
	if len(tags) > 0 {
		spec := ec2types.TagSpecification{ResourceType: ec2types.ResourceTypeElasticIp}
		for k, v := range tags {
			spec.Tags = append(spec.Tags, ec2types.Tag{Key: aws.String(k), Value: aws.String(v)})
		}
		in.TagSpecifications = []ec2types.TagSpecification{spec}
	}
	out := must[*ec2.AllocateAddressOutput](t)(e.ec2.AllocateAddress(ctx(), in))
	return aws.ToString(out.AllocationId), aws.ToString(out.PublicIp)
}

func describeAddresses(t *testing.T, e *env, in *ec2.DescribeAddressesInput) []ec2types.Address {
	t.Helper()
	return must[*ec2.DescribeAddressesOutput](t)(e.ec2.DescribeAddresses(ctx(), in)).Addresses
}

func allocationIDs(as []ec2types.Address) []string {
	return idsOf(as, func(a ec2types.Address) *string { return a.AllocationId })
}

var (
	allocationIDRE = regexp.MustCompile(`^eipalloc-[0-9a-f]{17}$`)
	eipPool        = []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24"), netip.MustParsePrefix("198.51.100.0/24")}
)

func inPool(ip string) bool {
	a, err := netip.ParseAddr(ip)
	return err == nil && slices.ContainsFunc(eipPool, func(p netip.Prefix) bool { return p.Contains(a) })
}

func TestAllocateAndDescribeAddresses(t *testing.T) {
	e := newEnv(t)
	before := e.srv.Resources()

	web, webIP := allocate(t, e, map[string]string{"svc": "web", "team": "net"})
	bare, bareIP := allocate(t, e, nil)
	viaAdmin, adminIP, err := e.emu.AllocateAddress(map[string]string{"svc": "db"})
	ok(t, err)
	for _, id := range []string{web, bare, viaAdmin} {
		if !allocationIDRE.MatchString(id) {
			t.Fatalf("allocation ID %q", id)
		}
	}
	ips := []string{webIP, bareIP, adminIP}
	for _, ip := range ips {
		if !inPool(ip) {
			t.Fatalf("public IP %q outside the documentation pools", ip)
		}
	}
	if webIP == bareIP || bareIP == adminIP || webIP == adminIP {
		t.Fatalf("addresses handed out twice: %v", ips)
	}
	if n := e.srv.CallCount("ec2:AllocateAddress"); n != 2 {
		t.Fatalf("ec2:AllocateAddress counted %d times", n)
	}

	all := describeAddresses(t, e, &ec2.DescribeAddressesInput{})
	if got := allocationIDs(all); !slices.Equal(got, []string{web, bare, viaAdmin}) {
		t.Fatalf("all addresses %v", got)
	}
	a := all[0]
	if aws.ToString(a.PublicIp) != webIP || a.Domain != ec2types.DomainTypeVpc || a.AssociationId != nil || a.NetworkInterfaceId != nil ||
		a.PrivateIpAddress != nil || aws.ToString(a.PublicIpv4Pool) != "amazon" || aws.ToString(a.NetworkBorderGroup) != region || len(a.Tags) != 2 {
		t.Fatalf("address %+v", a)
	}

	for _, c := range []struct {
		name string
		in   *ec2.DescribeAddressesInput
		want []string
	}{
		{"ids", &ec2.DescribeAddressesInput{AllocationIds: []string{viaAdmin, web}}, []string{web, viaAdmin}},
		{"public ips", &ec2.DescribeAddressesInput{PublicIps: []string{bareIP}}, []string{bare}},
		{"ids and ips", &ec2.DescribeAddressesInput{AllocationIds: []string{web, bare}, PublicIps: []string{bareIP}}, []string{bare}},
		{"allocation-id", &ec2.DescribeAddressesInput{Filters: []ec2types.Filter{filter("allocation-id", viaAdmin)}}, []string{viaAdmin}},
		{"public-ip", &ec2.DescribeAddressesInput{Filters: []ec2types.Filter{filter("public-ip", webIP, adminIP)}}, []string{web, viaAdmin}},
		{"public-ip wildcard", &ec2.DescribeAddressesInput{Filters: []ec2types.Filter{filter("public-ip", "203.0.113.*", "198.51.100.*")}}, []string{web, bare, viaAdmin}},
		{"tag", &ec2.DescribeAddressesInput{Filters: []ec2types.Filter{filter("tag:svc", "web", "db")}}, []string{web, viaAdmin}},
		{"tag-key", &ec2.DescribeAddressesInput{Filters: []ec2types.Filter{filter("tag-key", "team")}}, []string{web}},
		{"domain", &ec2.DescribeAddressesInput{Filters: []ec2types.Filter{filter("domain", "vpc")}}, []string{web, bare, viaAdmin}},
		{"standard domain", &ec2.DescribeAddressesInput{Filters: []ec2types.Filter{filter("domain", "standard")}}, nil},
		{"unassociated", &ec2.DescribeAddressesInput{Filters: []ec2types.Filter{filter("association-id", "*")}}, nil},
		{"anded", &ec2.DescribeAddressesInput{Filters: []ec2types.Filter{filter("tag:svc", "web", "db"), filter("public-ip", adminIP)}}, []string{viaAdmin}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := allocationIDs(describeAddresses(t, e, c.in)); !slices.Equal(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}

	for _, c := range []struct {
		in   *ec2.DescribeAddressesInput
		code string
		msg  string
	}{
		{&ec2.DescribeAddressesInput{AllocationIds: []string{web, "eipalloc-0000000000000dead"}}, "InvalidAllocationID.NotFound", "'eipalloc-0000000000000dead'"},
		{&ec2.DescribeAddressesInput{AllocationIds: []string{"nonsense"}}, "InvalidAllocationID.NotFound", "nonsense"},
		{&ec2.DescribeAddressesInput{PublicIps: []string{"192.0.2.1"}}, "InvalidAddress.NotFound", "192.0.2.1"},
		{&ec2.DescribeAddressesInput{Filters: []ec2types.Filter{filter("allocation", web)}}, "InvalidParameterValue", "allocation"},
	} {
		_, err := e.ec2.DescribeAddresses(ctx(), c.in)
		wantCode(t, err, c.code)
		if !strings.Contains(err.Error(), c.msg) {
			t.Errorf("error %v does not name %s", err, c.msg)
		}
	}

	// Tags through the generic tag actions.
	_, err = e.ec2.CreateTags(ctx(), &ec2.CreateTagsInput{Resources: []string{bare}, Tags: []ec2types.Tag{{Key: aws.String("svc"), Value: aws.String("cache")}}})
	ok(t, err)
	if got := allocationIDs(describeAddresses(t, e, &ec2.DescribeAddressesInput{Filters: []ec2types.Filter{filter("tag:svc", "cache")}})); !slices.Equal(got, []string{bare}) {
		t.Fatalf("tagged address: %v", got)
	}
	_, err = e.ec2.DeleteTags(ctx(), &ec2.DeleteTagsInput{Resources: []string{web}, Tags: []ec2types.Tag{{Key: aws.String("team")}}})
	ok(t, err)
	if got := describeAddresses(t, e, &ec2.DescribeAddressesInput{AllocationIds: []string{web}}); len(got[0].Tags) != 1 {
		t.Fatalf("tags after DeleteTags: %+v", got[0].Tags)
	}
	_, err = e.ec2.CreateTags(ctx(), &ec2.CreateTagsInput{Resources: []string{"eipalloc-0000000000000dead"}, Tags: []ec2types.Tag{{Key: aws.String("k"), Value: aws.String("v")}}})
	wantCode(t, err, "InvalidAllocationID.NotFound")

	// The inventory lists addresses with their tags.
	added, removed := cloudsim.DiffResources(before, e.srv.Resources())
	if len(added) != 3 || len(removed) != 0 {
		t.Fatalf("added %+v removed %+v", added, removed)
	}
	for _, r := range added {
		if r.Kind != cloudsimaws.KindElasticIP || !slices.Contains(ips, r.Name) {
			t.Errorf("resource %+v", r)
		}
		if r.ID == viaAdmin && r.Tags["svc"] != "db" {
			t.Errorf("admin address tags %+v", r.Tags)
		}
	}

	// Release: errors first, then each address, and the inventory is back.
	_, err = e.ec2.ReleaseAddress(ctx(), &ec2.ReleaseAddressInput{})
	wantCode(t, err, "MissingParameter")
	_, err = e.ec2.ReleaseAddress(ctx(), &ec2.ReleaseAddressInput{PublicIp: aws.String(webIP)})
	wantCode(t, err, "InvalidParameterValue")
	_, err = e.ec2.ReleaseAddress(ctx(), &ec2.ReleaseAddressInput{AllocationId: aws.String("eipalloc-0000000000000dead")})
	wantCode(t, err, "InvalidAllocationID.NotFound")
	for _, id := range []string{web, bare} {
		must[*ec2.ReleaseAddressOutput](t)(e.ec2.ReleaseAddress(ctx(), &ec2.ReleaseAddressInput{AllocationId: aws.String(id)}))
	}
	_, err = e.ec2.ReleaseAddress(ctx(), &ec2.ReleaseAddressInput{AllocationId: aws.String(web)})
	wantCode(t, err, "InvalidAllocationID.NotFound")
	_, err = e.ec2.DescribeAddresses(ctx(), &ec2.DescribeAddressesInput{PublicIps: []string{webIP}})
	wantCode(t, err, "InvalidAddress.NotFound")
	ok(t, e.emu.ReleaseAddress(viaAdmin))
	if err := e.emu.ReleaseAddress(viaAdmin); err == nil || !strings.Contains(err.Error(), "InvalidAllocationID.NotFound") {
		t.Fatalf("second admin release: %v", err)
	}
	if added, removed := cloudsim.DiffResources(before, e.srv.Resources()); len(added)+len(removed) != 0 {
		t.Fatalf("after release: added %+v removed %+v", added, removed)
	}
	if n := e.srv.CallCount("ec2:ReleaseAddress"); n != 6 {
		t.Errorf("ec2:ReleaseAddress counted %d times", n)
	}
}

func TestAllocateAddressValidation(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		in   *ec2.AllocateAddressInput
		code string
	}{
		{&ec2.AllocateAddressInput{Domain: ec2types.DomainTypeStandard}, "InvalidParameterValue"},
		{&ec2.AllocateAddressInput{TagSpecifications: []ec2types.TagSpecification{{
			ResourceType: ec2types.ResourceTypeInstance, Tags: []ec2types.Tag{{Key: aws.String("k"), Value: aws.String("v")}},
		}}}, "InvalidParameterValue"},
		{&ec2.AllocateAddressInput{TagSpecifications: []ec2types.TagSpecification{{
			ResourceType: ec2types.ResourceTypeElasticIp, Tags: []ec2types.Tag{{Key: aws.String("aws:reserved"), Value: aws.String("v")}},
		}}}, "InvalidParameterValue"},
		{&ec2.AllocateAddressInput{PublicIpv4Pool: aws.String("ipv4pool-ec2-0123456789abcdef0")}, "InvalidPublicIpv4PoolID.NotFound"},
		{&ec2.AllocateAddressInput{Address: aws.String("192.0.2.10")}, "InvalidAddress.NotFound"},
	} {
		_, err := e.ec2.AllocateAddress(ctx(), c.in)
		wantCode(t, err, c.code)
	}
	if len(e.emu.Addresses()) != 0 {
		t.Fatalf("failed allocations left %+v", e.emu.Addresses())
	}

	// Without Domain the address is still a VPC address; Address recovers
	// a released one while nobody else holds it.
	out := must[*ec2.AllocateAddressOutput](t)(e.ec2.AllocateAddress(ctx(), &ec2.AllocateAddressInput{}))
	if out.Domain != ec2types.DomainTypeVpc || aws.ToString(out.PublicIpv4Pool) != "amazon" || aws.ToString(out.NetworkBorderGroup) != region {
		t.Fatalf("allocated %+v", out)
	}
	ip := aws.ToString(out.PublicIp)
	_, err := e.ec2.AllocateAddress(ctx(), &ec2.AllocateAddressInput{Address: aws.String(ip)})
	wantCode(t, err, "InvalidAddress.NotFound")
	must[*ec2.ReleaseAddressOutput](t)(e.ec2.ReleaseAddress(ctx(), &ec2.ReleaseAddressInput{AllocationId: out.AllocationId}))
	again := must[*ec2.AllocateAddressOutput](t)(e.ec2.AllocateAddress(ctx(), &ec2.AllocateAddressInput{Address: aws.String(ip)}))
	if aws.ToString(again.PublicIp) != ip || aws.ToString(again.AllocationId) == aws.ToString(out.AllocationId) {
		t.Fatalf("recovered %+v", again)
	}
	if _, _, err := e.emu.AllocateAddress(map[string]string{"aws:x": "y"}); err == nil {
		t.Fatal("admin allocation accepted an aws: tag")
	}
}

// The pool holds 508 addresses; a released address is not handed out
// again until the pool has come round.
func TestAddressPoolExhaustion(t *testing.T) {
	e := newEnv(t)
	first, firstIP := allocate(t, e, nil)
	ok(t, e.emu.ReleaseAddress(first))
	seen := map[string]bool{}
	for range 508 {
		_, ip, err := e.emu.AllocateAddress(nil)
		ok(t, err)
		if seen[ip] {
			t.Fatalf("%s handed out twice", ip)
		}
		seen[ip] = true
		if len(seen) == 1 && ip == firstIP {
			t.Fatalf("released address %s reused at once", ip)
		}
	}
	_, err := e.ec2.AllocateAddress(ctx(), &ec2.AllocateAddressInput{})
	wantCode(t, err, "AddressLimitExceeded")
	if len(describeAddresses(t, e, &ec2.DescribeAddressesInput{})) != 508 {
		t.Fatal("not every address is listed")
	}
}

func TestAdminHTTPAddresses(t *testing.T) {
	e := newEnv(t)
	var created struct {
		AllocationID string `json:"allocationId"`
		PublicIP     string `json:"publicIp"`
	}
	if st := admin(t, e, "POST", "/admin/aws/addresses", `{"tags": {"Name": "ingress"}}`, &created); st != 200 || !allocationIDRE.MatchString(created.AllocationID) || !inPool(created.PublicIP) {
		t.Fatalf("allocate: %d %+v", st, created)
	}
	var listed []cloudsimaws.AddressInfo
	admin(t, e, "GET", "/admin/aws/addresses", "", &listed)
	if len(listed) != 1 || listed[0].AllocationID != created.AllocationID || listed[0].PublicIP != created.PublicIP ||
		listed[0].Tags["Name"] != "ingress" || listed[0].LoadBalancerARN != "" {
		t.Fatalf("listed %+v", listed)
	}
	var rs []cloudsim.Resource
	admin(t, e, "GET", "/admin/resources?kind=elastic-ip", "", &rs)
	if len(rs) != 1 || rs[0].ID != created.AllocationID || rs[0].Tags["Name"] != "ingress" {
		t.Fatalf("resources %+v", rs)
	}
	if st := admin(t, e, "POST", "/admin/aws/addresses/release", `{"allocationId": "`+created.AllocationID+`"}`, nil); st != 200 {
		t.Fatalf("release: %d", st)
	}
	if st := admin(t, e, "POST", "/admin/aws/addresses/release", `{"allocationId": "`+created.AllocationID+`"}`, nil); st != 400 {
		t.Fatalf("second release: %d", st)
	}
	admin(t, e, "GET", "/admin/aws/addresses", "", &listed)
	if len(listed) != 0 {
		t.Fatalf("after release %+v", listed)
	}
}
