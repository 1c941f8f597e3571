package gce

import (
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/iterator"
	"google.golang.org/protobuf/proto"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

func TestZonesAndRegions(t *testing.T) {
	env := newTestEnv(t, Config{})
	zc := env.zones(t)
	z, err := zc.Get(t.Context(), &computepb.GetZoneRequest{Project: env.project, Zone: "us-central1-b"})
	if err != nil {
		t.Fatal(err)
	}
	if z.GetName() != "us-central1-b" || z.GetStatus() != "UP" || z.GetKind() != "compute#zone" || z.GetId() == 0 ||
		z.GetRegion() != LinkBase+"projects/test-project/regions/us-central1" ||
		z.GetSelfLink() != LinkBase+"projects/test-project/zones/us-central1-b" || z.GetCreationTimestamp() == "" {
		t.Errorf("zone %v", z)
	}
	_, err = zc.Get(t.Context(), &computepb.GetZoneRequest{Project: env.project, Zone: "europe-west1-b"})
	wantCode(t, err, http.StatusNotFound, "notFound")

	r, err := env.regions(t).Get(t.Context(), &computepb.GetRegionRequest{Project: env.project, Region: env.region})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.GetZones()) != 3 || r.GetZones()[2] != LinkBase+"projects/test-project/zones/us-central1-c" {
		t.Errorf("region zones %v", r.GetZones())
	}
	// Another project is not there.
	_, err = zc.Get(t.Context(), &computepb.GetZoneRequest{Project: "other", Zone: "us-central1-b"})
	wantCode(t, err, http.StatusNotFound, "notFound")
}

// The client's iterator follows nextPageToken through pages of
// Config.PageSize, and honours its own page size as maxResults.
func TestListPaging(t *testing.T) {
	env := newTestEnv(t, Config{PageSize: 2, Zones: []string{"a", "b", "c", "d", "f"}})
	zc := env.zones(t)
	var names []string
	it := zc.List(t.Context(), &computepb.ListZonesRequest{Project: env.project})
	for {
		z, err := it.Next()
		if err == iterator.Done {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, lastSegment(z.GetSelfLink()))
	}
	if want := []string{"us-central1-a", "us-central1-b", "us-central1-c", "us-central1-d", "us-central1-f"}; !slices.Equal(names, want) {
		t.Fatalf("zones %v, want %v", names, want)
	}
	if n := env.srv.CallCount("compute:Zones.List"); n != 3 {
		t.Errorf("%d list calls for 5 zones in pages of 2, want 3", n)
	}

	// maxResults asks for pages of 4, more than the default.
	env.srv.ResetCalls()
	resp, err := zc.List(t.Context(), &computepb.ListZonesRequest{Project: env.project, MaxResults: proto.Uint32(4)}).Next()
	if err != nil || resp.GetName() != "us-central1-a" {
		t.Fatal(resp, err)
	}
	it = zc.List(t.Context(), &computepb.ListZonesRequest{Project: env.project, MaxResults: proto.Uint32(4)})
	if _, err := it.Next(); err != nil {
		t.Fatal(err)
	}
	if got := len(it.Response.(*computepb.ZoneList).GetItems()); got != 4 || it.Response.(*computepb.ZoneList).GetNextPageToken() == "" {
		t.Errorf("page of %d with maxResults 4", got)
	}

	// GCE allows at most 500.
	_, err = zc.List(t.Context(), &computepb.ListZonesRequest{Project: env.project, MaxResults: proto.Uint32(501)}).Next()
	wantCode(t, err, http.StatusBadRequest, "invalid")
	// A token from nowhere is refused.
	_, err = zc.List(t.Context(), &computepb.ListZonesRequest{Project: env.project, PageToken: proto.String("bogus")}).Next()
	wantCode(t, err, http.StatusBadRequest, "invalid")
}

func TestListFilter(t *testing.T) {
	env := newTestEnv(t, Config{})
	zc := env.zones(t)
	for _, tc := range []struct {
		filter string
		want   []string // zone suffixes; nil: refused with 400 invalid
	}{
		{`name eq ".*-b"`, []string{"b"}},
		{`name eq us-central1-(a|c)`, []string{"a", "c"}},
		{`name ne '.*-a'`, []string{"b", "c"}},
		{`(name eq ".*-[ab]") (name ne ".*-a")`, []string{"b"}},
		{`name = "us-central1-c"`, []string{"c"}},
		{`name != us-central1-c`, []string{"a", "b"}},
		{`(name = "us-central1-a") OR (name = "us-central1-c")`, []string{"a", "c"}},
		{`(name = "us-central1-a") AND (status = UP)`, []string{"a"}},
		{`(name = "us-central1-a") OR (name = "us-central1-b") AND (status = "DOWN")`, []string{}},
		{`NOT (name = "us-central1-a")`, []string{"b", "c"}},
		{`name > "us-central1-a"`, []string{"b", "c"}},
		{`availableCpuPlatforms = "AMD Rome"`, []string{"a", "b", "c"}},
		{`supportsPzs = false`, []string{"a", "b", "c"}},
		{`description:*`, []string{"a", "b", "c"}},
		{`name eqq "x"`, nil},
		{`(name eq "a") OR (name eq "b")`, nil},
		{`(name eq "a") (name = "b")`, nil},
		{`nosuchfield = "x"`, nil},
		{`name = "us-*"`, nil},
		{`(name = "a"`, nil},
	} {
		var got []string
		it := zc.List(t.Context(), &computepb.ListZonesRequest{Project: env.project, Filter: proto.String(tc.filter)})
		var err error
		for {
			var z *computepb.Zone
			z, err = it.Next()
			if err != nil {
				break
			}
			got = append(got, strings.TrimPrefix(z.GetName(), "us-central1-"))
		}
		if tc.want == nil {
			if err == iterator.Done {
				t.Errorf("filter %s: accepted, listed %v", tc.filter, got)
				continue
			}
			wantCode(t, err, http.StatusBadRequest, "invalid")
			continue
		}
		if err != iterator.Done {
			t.Errorf("filter %s: %v", tc.filter, err)
			continue
		}
		if !slices.Equal(got, tc.want) && (len(got) != 0 || len(tc.want) != 0) {
			t.Errorf("filter %s: got %v, want %v", tc.filter, got, tc.want)
		}
	}
}

func TestNetworksAndFixture(t *testing.T) {
	env := newTestEnv(t, Config{ClusterID: "c1"})
	var fx Fixture
	if code := adminJSON(t, env, "GET", "/admin/gce/fixture", nil, &fx); code != http.StatusOK {
		t.Fatalf("fixture: %d", code)
	}
	if !reflect.DeepEqual(fx, env.emu.Fixture()) {
		t.Errorf("admin fixture %+v", fx)
	}
	if fx.NetworkName != "c1-net" || fx.SubnetworkName != "c1-subnet" || fx.SubnetworkCIDR != "10.128.0.0/20" ||
		fx.NetworkURL != LinkBase+"projects/test-project/global/networks/c1-net" || fx.GatewayIP != "10.128.0.1" {
		t.Errorf("fixture %+v", fx)
	}
	n, err := env.networks(t).Get(t.Context(), &computepb.GetNetworkRequest{Project: env.project, Network: "c1-net"})
	if err != nil {
		t.Fatal(err)
	}
	if n.GetSelfLink() != fx.NetworkURL || n.GetAutoCreateSubnetworks() || len(n.GetSubnetworks()) != 1 || n.GetSubnetworks()[0] != fx.SubnetworkURL {
		t.Errorf("network %v", n)
	}
	sc := env.subnetworks(t)
	s, err := sc.Get(t.Context(), &computepb.GetSubnetworkRequest{Project: env.project, Region: env.region, Subnetwork: "c1-subnet"})
	if err != nil {
		t.Fatal(err)
	}
	if s.GetIpCidrRange() != "10.128.0.0/20" || s.GetNetwork() != fx.NetworkURL || s.GetGatewayAddress() != "10.128.0.1" ||
		s.GetRegion() != LinkBase+"projects/test-project/regions/us-central1" {
		t.Errorf("subnetwork %v", s)
	}
	_, err = sc.Get(t.Context(), &computepb.GetSubnetworkRequest{Project: env.project, Region: "europe-west1", Subnetwork: "c1-subnet"})
	wantCode(t, err, http.StatusBadRequest, "invalid")

	it := sc.AggregatedList(t.Context(), &computepb.AggregatedListSubnetworksRequest{Project: env.project})
	pair, err := it.Next()
	if err != nil {
		t.Fatal(err)
	}
	if pair.Key != "regions/us-central1" || len(pair.Value.GetSubnetworks()) != 1 {
		t.Errorf("aggregated subnetworks %v", pair)
	}
	if _, err := it.Next(); err != iterator.Done {
		t.Errorf("second scope: %v", err)
	}

	// The inventory holds the fixture, not zones or regions.
	var kinds []string
	for _, r := range env.srv.Resources() {
		kinds = append(kinds, r.Kind+" "+r.Name)
	}
	want := []string{"compute#network c1-net", "compute#route " + fx.DefaultRouteName, "compute#route " + fx.SubnetRouteName, "compute#subnetwork c1-subnet"}
	slices.Sort(kinds)
	slices.Sort(want)
	if !slices.Equal(kinds, want) {
		t.Errorf("resources %v, want %v", kinds, want)
	}
}

// A throttled read is GCE's 403 rateLimitExceeded, which the client
// returns without retrying; a 503 backendError on a read is retried.
func TestThrottleAndServerError(t *testing.T) {
	env := newTestEnv(t, Config{})
	zc := env.zones(t)
	get := func() error {
		_, err := zc.Get(t.Context(), &computepb.GetZoneRequest{Project: env.project, Zone: env.zone})
		return err
	}
	env.setFault(t, cloudsim.FaultSpec{Op: "compute:Zones.Get", ThrottleNext: 1})
	err := get()
	wantCode(t, err, http.StatusForbidden, "rateLimitExceeded")
	if !strings.Contains(err.Error(), "Quota exceeded for quota metric 'Read requests'") {
		t.Errorf("message %v", err)
	}
	if n := env.srv.CallCount("compute:Zones.Get"); n != 1 {
		t.Errorf("%d calls: the client retried a 403", n)
	}

	env.srv.ResetCalls()
	env.setFault(t, cloudsim.FaultSpec{Op: "compute:Zones.Get", FailNext: 2})
	if err := get(); err != nil {
		t.Fatalf("503s not ridden out: %v", err)
	}
	if n := env.srv.CallCount("compute:Zones.Get"); n != 3 {
		t.Errorf("%d calls, want 2 failures and a success", n)
	}
	if env.emu.Mutating("compute:Zones.Get") || !env.emu.Mutating("compute:Routes.Insert") ||
		env.emu.Mutating("compute:ZoneOperations.Wait") || env.emu.Mutating("compute:Instances.AggregatedList") {
		t.Error("Mutating misclassifies")
	}
}
