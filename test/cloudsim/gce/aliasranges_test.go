package gce

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// podsRange is an alias range request from the fixture's pod range.
func podsRange(cidr string) AliasIPRange {
	return AliasIPRange{IPCIDRRange: cidr, SubnetworkRangeName: PodRangeName}
}

// nic0 reads an instance's first network interface through the API, as
// a node-ipam controller does.
func (env *testEnv) nic0(t *testing.T, name string) *computepb.NetworkInterface {
	t.Helper()
	info, ok := env.emu.Instance(name)
	if !ok {
		t.Fatalf("no instance %s", name)
	}
	inst, err := env.getInstance(t, info.Zone, name)
	if err != nil {
		t.Fatal(err)
	}
	return inst.GetNetworkInterfaces()[0]
}

// aliasCIDRs are a network interface's alias ranges as "range:cidr".
func aliasCIDRs(nic *computepb.NetworkInterface) []string {
	var out []string
	for _, r := range nic.GetAliasIpRanges() {
		out = append(out, r.GetSubnetworkRangeName()+":"+r.GetIpCidrRange())
	}
	return out
}

// wantAPIRefusal fails unless err is the API's refusal with opCode (an
// operation error code) or reason, as an admin launch reports it.
func wantAPIRefusal(t *testing.T, err error, code string) *apiError {
	t.Helper()
	var aerr *apiError
	if !errors.As(err, &aerr) {
		t.Fatalf("want the API's %s, got %v", code, err)
	}
	if got := cmpOr(aerr.opCode, aerr.Reason); got != code || aerr.Status != http.StatusBadRequest {
		t.Fatalf("want 400 %s, got %d %s (%v)", code, aerr.Status, got, err)
	}
	if !errors.Is(err, cloudsim.ErrInvalidRequest) || !strings.HasPrefix(err.Error(), code+": ") {
		t.Fatalf("admin error %q does not read as the API's", err)
	}
	return aerr
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// nthIPv6Range is the n-th /96 of a /64.
func nthIPv6Range(t *testing.T, cidr64 string, n uint32) netip.Prefix {
	t.Helper()
	b := netip.MustParsePrefix(cidr64).Addr().As16()
	b[8], b[9], b[10], b[11] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	return netip.PrefixFrom(netip.AddrFrom16(b), 96)
}

// The fixture's subnetwork, read through subnetworks.get, has the pod
// range and IPv6, and the admin fixture names them.
func TestFixtureSubnetworkRanges(t *testing.T) {
	env := newTestEnv(t, Config{})
	var fx Fixture
	if code := adminJSON(t, env, "GET", "/admin/gce/fixture", nil, &fx); code != http.StatusOK {
		t.Fatalf("fixture: %d", code)
	}
	if fx.PodRangeName != "pods" || fx.PodCIDR != DefaultPodCIDR {
		t.Errorf("fixture pod range %s %s", fx.PodRangeName, fx.PodCIDR)
	}
	v6 := netip.MustParsePrefix(fx.SubnetworkIPv6CIDR)
	net6 := netip.MustParsePrefix(fx.NetworkIPv6CIDR)
	if v6.Bits() != 64 || net6.Bits() != 48 || !netip.MustParsePrefix("fd20::/20").Contains(net6.Addr()) || !net6.Contains(v6.Addr()) {
		t.Errorf("fixture IPv6 %s in %s", v6, net6)
	}

	s, err := env.subnetworks(t).Get(t.Context(), &computepb.GetSubnetworkRequest{Project: env.project, Region: env.region, Subnetwork: fx.SubnetworkName})
	if err != nil {
		t.Fatal(err)
	}
	sec := s.GetSecondaryIpRanges()
	if len(sec) != 1 || sec[0].GetRangeName() != "pods" || sec[0].GetIpCidrRange() != "10.4.0.0/14" {
		t.Errorf("secondary ranges %v", sec)
	}
	if s.GetStackType() != "IPV4_IPV6" || s.GetIpv6AccessType() != "INTERNAL" || s.GetInternalIpv6Prefix() != fx.SubnetworkIPv6CIDR ||
		s.GetIpCidrRange() != fx.SubnetworkCIDR {
		t.Errorf("subnetwork %v", s)
	}
	n, err := env.networks(t).Get(t.Context(), &computepb.GetNetworkRequest{Project: env.project, Network: fx.NetworkName})
	if err != nil {
		t.Fatal(err)
	}
	if !n.GetEnableUlaInternalIpv6() || n.GetInternalIpv6Range() != fx.NetworkIPv6CIDR {
		t.Errorf("network %v", n)
	}

	// Another pod range; one overlapping the primary range is refused.
	if fx := New(Config{PodCIDR: "100.64.0.0/16"}).Fixture(); fx.PodCIDR != "100.64.0.0/16" {
		t.Errorf("pod CIDR %s", fx.PodCIDR)
	}
	for _, bad := range []string{"10.128.0.0/16", "fd00::/64", "x"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("pod CIDR %s accepted", bad)
				}
			}()
			New(Config{PodCIDR: bad})
		}()
	}
}

// Alias ranges as instances.insert allocates them: netmasks get the
// lowest free aligned block, CIDRs and single addresses are taken as
// asked, from the secondary range named or from the primary range.
func TestAliasRangeAllocation(t *testing.T) {
	env := newTestEnv(t, Config{})
	a := env.launch(t, InstanceSpec{Name: "a", AliasIPRanges: []AliasIPRange{podsRange("/24")}})
	env.launch(t, InstanceSpec{Name: "b", AliasIPRanges: []AliasIPRange{podsRange("/24")}})
	env.launch(t, InstanceSpec{Name: "c", AliasIPRanges: []AliasIPRange{podsRange("10.4.5.0/24")}})
	// 10.4.2.0/23 is the lowest free /23: 10.4.0.0/23 is taken by a and b.
	env.launch(t, InstanceSpec{Name: "d", AliasIPRanges: []AliasIPRange{podsRange("/23"), podsRange("10.4.9.7")}})
	env.launch(t, InstanceSpec{Name: "e", AliasIPRanges: []AliasIPRange{podsRange("/24")}})
	for name, want := range map[string][]string{
		"a": {"pods:10.4.0.0/24"}, "b": {"pods:10.4.1.0/24"}, "c": {"pods:10.4.5.0/24"},
		"d": {"pods:10.4.2.0/23", "pods:10.4.9.7/32"}, "e": {"pods:10.4.4.0/24"},
	} {
		nic := env.nic0(t, name)
		if got := aliasCIDRs(nic); !slices.Equal(got, want) {
			t.Errorf("%s: alias ranges %v, want %v", name, got, want)
		}
		if nic.GetStackType() != "IPV4_ONLY" || nic.Ipv6Address != nil || nic.GetNetworkIP() == "" {
			t.Errorf("%s: nic0 %v", name, nic)
		}
	}
	if a.StackType != StackIPv4Only || !slices.Equal(a.AliasIPRanges, []AliasIPRange{podsRange("10.4.0.0/24")}) || a.IPv6Address != "" {
		t.Errorf("info %+v", a)
	}

	// From the primary range, without a range name: the lowest free /28
	// leaves out the addresses GCE reserves and the instances' own; later
	// instances' addresses are never inside it.
	f := env.launch(t, InstanceSpec{Name: "f", AliasIPRanges: []AliasIPRange{{IPCIDRRange: "/28"}}})
	if !slices.Equal(f.AliasIPRanges, []AliasIPRange{{IPCIDRRange: "10.128.0.16/28"}}) {
		t.Fatalf("primary alias range %v (instances at .2 to .7)", f.AliasIPRanges)
	}
	alias := netip.MustParsePrefix("10.128.0.16/28")
	for i := range 20 {
		info := env.launch(t, InstanceSpec{Name: fmt.Sprintf("g%d", i)})
		if alias.Contains(netip.MustParseAddr(info.InternalIP)) {
			t.Fatalf("instance address %s inside alias range %s", info.InternalIP, alias)
		}
	}
	// Nor does an internal address come out of it.
	op, err := env.insertAddress(t, &computepb.Address{Name: proto.String("in-alias"), AddressType: proto.String("INTERNAL"),
		Subnetwork: proto.String(env.emu.Fixture().SubnetworkURL), Address: proto.String("10.128.0.20")})
	if err != nil {
		t.Fatal(err)
	}
	wantCodeOnly(t, op.Wait(t.Context()), http.StatusBadRequest)
	if code := op.Proto().GetError().GetErrors()[0].GetCode(); code != "IP_IN_USE_BY_ANOTHER_RESOURCE" {
		t.Errorf("error code %s", code)
	}

	// A list filter on the alias range, as a test might look a node up.
	names := listNames(t, env.instances(t), env, a.Zone, `networkInterfaces.aliasIpRanges.ipCidrRange = "10.4.0.0/24"`)
	if !slices.Equal(names, []string{"a"}) {
		t.Errorf("filtered on the alias range: %v", names)
	}
}

// What the API refuses, it refuses at launch too, in its words.
func TestAliasRangeRefused(t *testing.T) {
	env := newTestEnv(t, Config{PodCIDR: "10.4.0.0/23"})
	a := env.launch(t, InstanceSpec{Name: "a", AliasIPRanges: []AliasIPRange{podsRange("/24")}})

	launch := func(ranges ...AliasIPRange) error {
		_, err := env.emu.Launch(InstanceSpec{Name: "x", AliasIPRanges: ranges})
		return err
	}
	// Overlapping another instance's range, or its primary address: the
	// operation error GCE fails an insert with.
	aerr := wantAPIRefusal(t, launch(podsRange("10.4.0.128/25")), "IP_IN_USE_BY_ANOTHER_RESOURCE")
	if aerr.Message != "IP '10.4.0.128/25' is already being used by another resource." || !aerr.async {
		t.Errorf("in use: %+v", aerr)
	}
	wantAPIRefusal(t, launch(AliasIPRange{IPCIDRRange: a.InternalIP}), "IP_IN_USE_BY_ANOTHER_RESOURCE")
	// Two ranges of one request overlapping each other.
	wantAPIRefusal(t, launch(podsRange("10.4.1.0/24"), podsRange("10.4.1.4/30")), "IP_IN_USE_BY_ANOTHER_RESOURCE")
	// Malformed requests: 400 invalid, naming the field.
	for _, tc := range []struct {
		r     AliasIPRange
		field string
	}{
		{AliasIPRange{IPCIDRRange: "/24", SubnetworkRangeName: "services"}, "resource.networkInterfaces[0].aliasIpRanges[0].subnetworkRangeName"},
		{podsRange("10.8.0.0/24"), "resource.networkInterfaces[0].aliasIpRanges[0].ipCidrRange"},
		{podsRange("10.4.1.1/24"), "resource.networkInterfaces[0].aliasIpRanges[0].ipCidrRange"},
		{podsRange("/22"), "resource.networkInterfaces[0].aliasIpRanges[0].ipCidrRange"},
		{podsRange("/33"), "resource.networkInterfaces[0].aliasIpRanges[0].ipCidrRange"},
		{podsRange("fd20::/96"), "resource.networkInterfaces[0].aliasIpRanges[0].ipCidrRange"},
		{podsRange("ten"), "resource.networkInterfaces[0].aliasIpRanges[0].ipCidrRange"},
		{AliasIPRange{IPCIDRRange: "10.128.0.0/28"}, "resource.networkInterfaces[0].aliasIpRanges[0].ipCidrRange"},
	} {
		aerr := wantAPIRefusal(t, launch(tc.r), "invalid")
		if want := fmt.Sprintf("Invalid value for field '%s': ", tc.field); !strings.HasPrefix(aerr.Message, want) {
			t.Errorf("%+v: message %q, want it to start %q", tc.r, aerr.Message, want)
		}
	}
	wantAPIRefusal(t, launch(podsRange("")), "required")

	// A refused launch leaves nothing claimed: 10.4.1.0/24, asked for
	// beside a range in use, is free; the range is then exhausted.
	wantAPIRefusal(t, launch(podsRange("10.4.1.0/24"), podsRange("10.4.0.0/24")), "IP_IN_USE_BY_ANOTHER_RESOURCE")
	if _, ok := env.emu.Instance("x"); ok {
		t.Fatal("refused instance launched")
	}
	env.launch(t, InstanceSpec{Name: "b", AliasIPRanges: []AliasIPRange{podsRange("10.4.1.0/24")}})
	aerr = wantAPIRefusal(t, launch(podsRange("/24")), "IP_SPACE_EXHAUSTED_WITH_DETAILS")
	if !strings.Contains(aerr.Message, "is exhausted") || !strings.Contains(aerr.Message, "10.4.0.0/23") {
		t.Errorf("exhausted: %s", aerr.Message)
	}

	// Over HTTP the admin API answers 400 with the API's words.
	var body struct {
		Error string `json:"error"`
	}
	code := adminJSON(t, env, "POST", "/admin/gce/instances",
		strings.NewReader(`{"name":"y","aliasIpRanges":[{"ipCidrRange":"10.4.0.0/24","subnetworkRangeName":"pods"}]}`), &body)
	if code != http.StatusBadRequest || !strings.Contains(body.Error, "IP_IN_USE_BY_ANOTHER_RESOURCE") {
		t.Errorf("admin launch: %d %+v", code, body)
	}
}

// Ranges are kept while an instance is stopped and released when it is
// deleted, by the admin API or the API.
func TestAliasRangeRelease(t *testing.T) {
	env := newTestEnv(t, Config{})
	first := env.launch(t, InstanceSpec{Name: "a", Zone: "a", StackType: StackDual, AliasIPRanges: []AliasIPRange{podsRange("/24")}})
	taken := func() error {
		_, err := env.emu.Launch(InstanceSpec{Name: "probe", AliasIPRanges: []AliasIPRange{podsRange("10.4.0.0/24")}})
		if err == nil {
			_ = env.emu.Terminate("probe")
		}
		return err
	}
	if err := env.emu.Stop("a"); err != nil {
		t.Fatal(err)
	}
	if got := aliasCIDRs(env.nic0(t, "a")); !slices.Equal(got, []string{"pods:10.4.0.0/24"}) {
		t.Errorf("stopped instance's ranges %v", got)
	}
	wantAPIRefusal(t, taken(), "IP_IN_USE_BY_ANOTHER_RESOURCE")
	if err := env.emu.Start("a"); err != nil {
		t.Fatal(err)
	}
	if info, _ := env.emu.Instance("a"); !slices.Equal(info.AliasIPRanges, first.AliasIPRanges) || info.IPv6Range != first.IPv6Range {
		t.Errorf("restarted %+v, launched %+v", info, first)
	}
	if err := env.emu.Terminate("a"); err != nil {
		t.Fatal(err)
	}
	if err := taken(); err != nil {
		t.Errorf("range of a terminated instance: %v", err)
	}
	// Its /96 is the lowest free one again.
	again := env.launch(t, InstanceSpec{Name: "b", StackType: StackDual})
	if again.IPv6Range != first.IPv6Range {
		t.Errorf("IPv6 range %s after %s was released", again.IPv6Range, first.IPv6Range)
	}

	// instances.delete releases them when its operation is DONE.
	env.launch(t, InstanceSpec{Name: "c", Zone: "a", AliasIPRanges: []AliasIPRange{podsRange("10.4.0.0/24")}})
	op, err := env.instances(t).Delete(t.Context(), &computepb.DeleteInstanceRequest{Project: env.project, Zone: "us-central1-a", Instance: "c"})
	if err != nil || op.Wait(t.Context()) != nil {
		t.Fatal(err)
	}
	if err := taken(); err != nil {
		t.Errorf("range of a deleted instance: %v", err)
	}
}

// Dual-stack and IPv6-only interfaces get a /96 of the subnetwork's /64:
// ipv6Address is its first address, what CloudAllocator masks to /112.
func TestInstanceIPv6(t *testing.T) {
	env := newTestEnv(t, Config{})
	fx := env.emu.Fixture()
	a := env.launch(t, InstanceSpec{Name: "a", StackType: StackDual, AliasIPRanges: []AliasIPRange{podsRange("/24")}})
	b := env.launch(t, InstanceSpec{Name: "b", StackType: StackDual})
	for i, info := range []InstanceInfo{a, b} {
		want := nthIPv6Range(t, fx.SubnetworkIPv6CIDR, uint32(i))
		nic := env.nic0(t, info.Name)
		if nic.GetStackType() != "IPV4_IPV6" || nic.GetIpv6AccessType() != "INTERNAL" || nic.GetInternalIpv6PrefixLength() != 96 ||
			nic.GetIpv6Address() != want.Addr().String() || nic.GetNetworkIP() == "" || nic.GetNetworkIP() != info.InternalIP {
			t.Errorf("%s: nic0 %v, want IPv6 %s", info.Name, nic, want)
		}
		if info.StackType != StackDual || info.IPv6Address != want.Addr().String() || info.IPv6Range != want.String() {
			t.Errorf("%s: info %+v", info.Name, info)
		}
		pod := netip.PrefixFrom(netip.MustParseAddr(nic.GetIpv6Address()), 112).Masked()
		if !want.Contains(pod.Addr()) {
			t.Errorf("%s: the /112 %s is not the instance's", info.Name, pod)
		}
	}
	if got := aliasCIDRs(env.nic0(t, "a")); !slices.Equal(got, []string{"pods:10.4.0.0/24"}) {
		t.Errorf("dual-stack alias ranges %v", got)
	}

	// A /96 asked for: free, aligned and inside the /64.
	fifth := nthIPv6Range(t, fx.SubnetworkIPv6CIDR, 5)
	if c := env.launch(t, InstanceSpec{Name: "c", StackType: StackDual, IPv6Address: fifth.Addr().String()}); c.IPv6Range != fifth.String() {
		t.Errorf("asked for %s, got %s", fifth, c.IPv6Range)
	}
	if d := env.launch(t, InstanceSpec{Name: "d", StackType: StackDual}); d.IPv6Range != nthIPv6Range(t, fx.SubnetworkIPv6CIDR, 2).String() {
		t.Errorf("next free /96: %s", d.IPv6Range)
	}
	_, err := env.emu.Launch(InstanceSpec{Name: "x", StackType: StackDual, IPv6Address: fifth.Addr().String()})
	wantAPIRefusal(t, err, "IP_IN_USE_BY_ANOTHER_RESOURCE")
	_, err = env.emu.Launch(InstanceSpec{Name: "x", StackType: StackDual, IPv6Address: fifth.Addr().Next().String()})
	wantAPIRefusal(t, err, "invalid")
	_, err = env.emu.Launch(InstanceSpec{Name: "x", StackType: StackDual, IPv6Address: "fd99::"})
	wantAPIRefusal(t, err, "invalid")

	// IPv6-only: no IPv4 address at all.
	v6 := env.launch(t, InstanceSpec{Name: "v6", StackType: StackIPv6Only})
	nic := env.nic0(t, "v6")
	if nic.NetworkIP != nil || nic.GetStackType() != "IPV6_ONLY" || nic.GetIpv6Address() == "" || v6.InternalIP != "" || v6.IPv6Address != nic.GetIpv6Address() {
		t.Errorf("IPv6-only nic0 %v, info %+v", nic, v6)
	}
	if n, _ := env.emu.GetInstance("v6"); n.PrivateIP != v6.IPv6Address || !slices.Equal(n.PodRanges, []string{v6.IPv6Range}) {
		t.Errorf("IPv6-only neutral %+v", n)
	}
	for _, spec := range []InstanceSpec{
		{Name: "x", StackType: StackIPv6Only, ExternalIP: true},
		{Name: "x", StackType: StackIPv6Only, AliasIPRanges: []AliasIPRange{podsRange("/24")}},
	} {
		_, err := env.emu.Launch(spec)
		wantAPIRefusal(t, err, "invalid")
	}
	for _, spec := range []InstanceSpec{
		{Name: "x", IPv6Address: fifth.Addr().String()},
		{Name: "x", StackType: "IPV6"},
	} {
		if _, err := env.emu.Launch(spec); !errors.Is(err, cloudsim.ErrInvalidRequest) {
			t.Errorf("%+v: %v", spec, err)
		}
	}
	if _, ok := env.emu.Instance("x"); ok {
		t.Error("a refused launch left an instance")
	}
}

// cloudsim.InstanceSpec.PodRanges round trip: IPv4 entries become alias
// ranges from "pods", an IPv6 one nic0's /96, and InstanceInfo.PodRanges
// reports them in that order.
func TestNeutralPodRanges(t *testing.T) {
	env := newTestEnv(t, Config{})
	fx := env.emu.Fixture()
	var insts cloudsim.Instances = env.emu
	n0, err := insts.LaunchInstance(cloudsim.InstanceSpec{Name: "n0", PodRanges: []string{"/24", "/96"}})
	if err != nil {
		t.Fatal(err)
	}
	first96 := nthIPv6Range(t, fx.SubnetworkIPv6CIDR, 0).String()
	if want := []string{"10.4.0.0/24", first96}; !slices.Equal(n0.PodRanges, want) {
		t.Errorf("pod ranges %v, want %v", n0.PodRanges, want)
	}
	if got, _ := insts.GetInstance("n0"); !slices.Equal(got.PodRanges, n0.PodRanges) || got.PrivateIP == "" {
		t.Errorf("get %+v", got)
	}
	if nic := env.nic0(t, "n0"); nic.GetStackType() != "IPV4_IPV6" || !slices.Equal(aliasCIDRs(nic), []string{"pods:10.4.0.0/24"}) {
		t.Errorf("nic0 %v", nic)
	}

	third96 := nthIPv6Range(t, fx.SubnetworkIPv6CIDR, 3).String()
	for _, tc := range []struct {
		ask, want []string
	}{
		{[]string{"10.4.8.0/24"}, []string{"10.4.8.0/24"}},
		{[]string{"::/96"}, []string{nthIPv6Range(t, fx.SubnetworkIPv6CIDR, 1).String()}},
		{[]string{third96, "/25"}, []string{"10.4.1.0/25", third96}},
		{nil, nil},
	} {
		name := fmt.Sprintf("n%d", len(insts.ListInstances()))
		info, err := insts.LaunchInstance(cloudsim.InstanceSpec{Name: name, PodRanges: tc.ask})
		if err != nil {
			t.Fatalf("%v: %v", tc.ask, err)
		}
		if !slices.Equal(info.PodRanges, tc.want) {
			t.Errorf("%v: pod ranges %v, want %v", tc.ask, info.PodRanges, tc.want)
		}
	}
	for _, bad := range [][]string{{"/64"}, {"/96", "::/96"}, {"fd20::/80"}, {"pods"}, {"10.9.0.0/24"}} {
		if _, err := insts.LaunchInstance(cloudsim.InstanceSpec{Name: "bad", PodRanges: bad}); !errors.Is(err, cloudsim.ErrInvalidRequest) {
			t.Errorf("%v: %v", bad, err)
		}
	}

	// Over the neutral admin API.
	var info cloudsim.InstanceInfo
	code := adminJSON(t, env, "POST", "/admin/instances", strings.NewReader(`{"name":"h","podRanges":["/24","/96"]}`), &info)
	if code != http.StatusCreated || len(info.PodRanges) != 2 || info.PodRanges[0] != "10.4.2.0/24" ||
		!netip.MustParsePrefix(fx.SubnetworkIPv6CIDR).Contains(netip.MustParsePrefix(info.PodRanges[1]).Addr()) {
		t.Errorf("admin launch: %d %+v", code, info)
	}
	var list []cloudsim.InstanceInfo
	if adminJSON(t, env, "GET", "/admin/instances", nil, &list); !slices.Equal(list[len(list)-1].PodRanges, info.PodRanges) {
		t.Errorf("listed %+v", list[len(list)-1])
	}
}

// instances.updateNetworkInterface changes alias ranges, guarded by the
// interface's fingerprint.
func TestUpdateNetworkInterface(t *testing.T) {
	env := newTestEnv(t, Config{})
	env.launch(t, InstanceSpec{Name: "a", Zone: "a", AliasIPRanges: []AliasIPRange{podsRange("/24")}})
	env.launch(t, InstanceSpec{Name: "other", Zone: "a", AliasIPRanges: []AliasIPRange{podsRange("/24")}})
	ic := env.instances(t)
	update := func(nic *computepb.NetworkInterface) (*computepb.Operation, error) {
		op, err := ic.UpdateNetworkInterface(t.Context(), &computepb.UpdateNetworkInterfaceInstanceRequest{
			Project: env.project, Zone: "us-central1-a", Instance: "a", NetworkInterface: "nic0", NetworkInterfaceResource: nic})
		if err != nil {
			return nil, err
		}
		err = op.Wait(t.Context())
		return op.Proto(), err
	}

	// Read, add a range, write back: the range held is kept.
	nic := env.nic0(t, "a")
	before := nic.GetFingerprint()
	nic.AliasIpRanges = append(nic.AliasIpRanges, &computepb.AliasIpRange{IpCidrRange: proto.String("/24"), SubnetworkRangeName: proto.String("pods")})
	op, err := update(nic)
	if err != nil {
		t.Fatal(err)
	}
	if op.GetOperationType() != "updateNetworkInterface" || op.GetTargetLink() != LinkBase+"projects/test-project/zones/us-central1-a/instances/a" {
		t.Errorf("operation %v", op)
	}
	nic = env.nic0(t, "a")
	if got := aliasCIDRs(nic); !slices.Equal(got, []string{"pods:10.4.0.0/24", "pods:10.4.2.0/24"}) || nic.GetFingerprint() == before {
		t.Errorf("after the update: %v, fingerprint %s (was %s)", got, nic.GetFingerprint(), before)
	}
	if n := env.srv.CallCount("compute:Instances.UpdateNetworkInterface"); n != 1 {
		t.Errorf("%d calls", n)
	}

	// A stale fingerprint is 412, none 400.
	stale := proto.Clone(nic).(*computepb.NetworkInterface)
	stale.Fingerprint = proto.String(before)
	_, err = update(stale)
	wantCode(t, err, http.StatusPreconditionFailed, "conditionNotMet")
	stale.Fingerprint = nil
	_, err = update(stale)
	wantCode(t, err, http.StatusBadRequest, "required")
	// Malformed: refused at once.
	bad := &computepb.NetworkInterface{Fingerprint: nic.Fingerprint, AliasIpRanges: []*computepb.AliasIpRange{
		{IpCidrRange: proto.String("/24"), SubnetworkRangeName: proto.String("services")}}}
	_, err = update(bad)
	wantCode(t, err, http.StatusBadRequest, "invalid")
	if !strings.Contains(err.Error(), "resource.aliasIpRanges[0].subnetworkRangeName") {
		t.Errorf("message %v", err)
	}
	// Another instance's range: the operation fails and nothing changes.
	taken := &computepb.NetworkInterface{Fingerprint: nic.Fingerprint, AliasIpRanges: []*computepb.AliasIpRange{
		{IpCidrRange: proto.String("10.4.1.0/24"), SubnetworkRangeName: proto.String("pods")}}}
	op, err = update(taken)
	wantCodeOnly(t, err, http.StatusBadRequest)
	if code := op.GetError().GetErrors()[0].GetCode(); code != "IP_IN_USE_BY_ANOTHER_RESOURCE" {
		t.Errorf("error code %s", code)
	}
	if got := aliasCIDRs(env.nic0(t, "a")); len(got) != 2 {
		t.Errorf("after a failed update: %v", got)
	}
	// Migrating the interface is not emulated.
	moved := &computepb.NetworkInterface{Fingerprint: nic.Fingerprint, NetworkIP: proto.String("10.128.0.99")}
	_, err = update(moved)
	wantCode(t, err, http.StatusNotImplemented, "notImplemented")
	_, err = ic.UpdateNetworkInterface(t.Context(), &computepb.UpdateNetworkInterfaceInstanceRequest{Project: env.project, Zone: "us-central1-a",
		Instance: "a", NetworkInterface: "nic1", NetworkInterfaceResource: nic})
	wantCode(t, err, http.StatusBadRequest, "invalid")

	// Dropping a range releases it when the operation is DONE.
	env.emu.SetOperationDelay(300 * time.Millisecond)
	keep := &computepb.NetworkInterface{Fingerprint: nic.Fingerprint, AliasIpRanges: nic.AliasIpRanges[1:]}
	pending, err := ic.UpdateNetworkInterface(t.Context(), &computepb.UpdateNetworkInterfaceInstanceRequest{Project: env.project,
		Zone: "us-central1-a", Instance: "a", NetworkInterface: "nic0", NetworkInterfaceResource: keep})
	if err != nil {
		t.Fatal(err)
	}
	_, err = update(keep)
	wantCode(t, err, http.StatusBadRequest, "resourceNotReady")
	if err := env.emu.SetAliasRanges("a", nil); !errors.Is(err, cloudsim.ErrInstanceState) {
		t.Errorf("admin change during an update: %v", err)
	}
	if got := aliasCIDRs(env.nic0(t, "a")); len(got) != 2 {
		t.Errorf("before the operation is DONE: %v", got)
	}
	if err := pending.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	env.emu.SetOperationDelay(0)
	if got := aliasCIDRs(env.nic0(t, "a")); !slices.Equal(got, []string{"pods:10.4.2.0/24"}) {
		t.Errorf("after dropping a range: %v", got)
	}
	if _, err := env.emu.Launch(InstanceSpec{Name: "b", AliasIPRanges: []AliasIPRange{podsRange("10.4.0.0/24")}}); err != nil {
		t.Errorf("dropped range still held: %v", err)
	}

	// The admin way, in Go and over HTTP.
	if err := env.emu.SetAliasRanges("a", []AliasIPRange{podsRange("10.4.2.0/24"), {IPCIDRRange: "/30"}}); err != nil {
		t.Fatal(err)
	}
	info, _ := env.emu.Instance("a")
	if len(info.AliasIPRanges) != 2 || info.AliasIPRanges[0] != podsRange("10.4.2.0/24") || info.AliasIPRanges[1].SubnetworkRangeName != "" {
		t.Errorf("admin set %+v", info.AliasIPRanges)
	}
	var got InstanceInfo
	code := adminJSON(t, env, "POST", "/admin/gce/instances/a/aliasIpRanges",
		strings.NewReader(`{"aliasIpRanges":[{"ipCidrRange":"/24","subnetworkRangeName":"pods"}]}`), &got)
	if code != http.StatusOK || !slices.Equal(got.AliasIPRanges, []AliasIPRange{podsRange("10.4.3.0/24")}) {
		t.Errorf("admin HTTP: %d %+v", code, got)
	}
	var refused struct {
		Error string `json:"error"`
	}
	code = adminJSON(t, env, "POST", "/admin/gce/instances/a/aliasIpRanges",
		strings.NewReader(`{"aliasIpRanges":[{"ipCidrRange":"10.4.0.0/24","subnetworkRangeName":"pods"}]}`), &refused)
	if code != http.StatusBadRequest || !strings.Contains(refused.Error, "IP_IN_USE_BY_ANOTHER_RESOURCE") {
		t.Errorf("admin HTTP refusal: %d %+v", code, refused)
	}
	// The fingerprint a client read before the admin change is stale now.
	_, err = update(&computepb.NetworkInterface{Fingerprint: nic.Fingerprint})
	wantCode(t, err, http.StatusPreconditionFailed, "conditionNotMet")
}

// lowestFree steps over what is taken to the next aligned block, in IPv4
// and IPv6 alike.
func TestLowestFree(t *testing.T) {
	spans := func(cidrs ...string) []span {
		var out []span
		for _, c := range cidrs {
			out = append(out, prefixSpan(netip.MustParsePrefix(c)))
		}
		return out
	}
	for _, tc := range []struct {
		space string
		taken []span
		bits  int
		want  string
	}{
		{"10.4.0.0/14", nil, 24, "10.4.0.0/24"},
		{"10.4.0.0/14", spans("10.4.0.0/24", "10.4.2.0/24"), 24, "10.4.1.0/24"},
		{"10.4.0.0/14", spans("10.4.0.0/24", "10.4.2.0/24"), 23, "10.4.4.0/23"},
		// A single address taken past an aligned start.
		{"10.128.0.0/20", spans("10.128.0.0/31", "10.128.0.17/32"), 28, "10.128.0.32/28"},
		{"10.4.0.0/23", spans("10.4.1.0/24", "10.4.0.0/24"), 24, ""},
		{"10.4.0.0/23", nil, 22, ""},
		{"fd20:1::/64", spans("fd20:1::/96", "fd20:1::1:0:0/96", "fd20:1::3:0:0/96"), 96, "fd20:1::2:0:0/96"},
		{"fd20:1::/64", spans("fd20:1::/65"), 96, "fd20:1:0:0:8000::/96"},
		{"fd20:1::/64", spans("fd20:1::/64"), 96, ""},
		{"ffff:ffff:ffff:ffff::/64", spans("ffff:ffff:ffff:ffff::/64"), 96, ""},
	} {
		got, ok := lowestFree(netip.MustParsePrefix(tc.space), tc.taken, tc.bits)
		if tc.want == "" && ok || tc.want != "" && (!ok || got != netip.MustParsePrefix(tc.want)) {
			t.Errorf("/%d in %s: %v %v, want %q", tc.bits, tc.space, got, ok, tc.want)
		}
	}
}
