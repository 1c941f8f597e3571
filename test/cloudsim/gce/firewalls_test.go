package gce

import (
	"net/http"
	"slices"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/iterator"
	"google.golang.org/protobuf/proto"
)

func (env *testEnv) firewalls(t *testing.T) *compute.FirewallsClient {
	return client(t, env, compute.NewFirewallsRESTClient)
}

func TestFirewallLifecycle(t *testing.T) {
	env := newTestEnv(t, Config{})
	fx := env.emu.Fixture()
	fc := env.firewalls(t)
	fw := &computepb.Firewall{
		Name: proto.String("k8s-fw-a1"), Description: proto.String(`{"kubernetes.io/service-name":"default/web"}`),
		Network:    proto.String(fx.NetworkURL),
		Allowed:    []*computepb.Allowed{{IPProtocol: proto.String("tcp"), Ports: []string{"80", "30000-32767"}}},
		TargetTags: []string{"k8s-node"},
	}
	op, err := fc.Insert(t.Context(), &computepb.InsertFirewallRequest{Project: env.project, FirewallResource: fw})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	got, err := fc.Get(t.Context(), &computepb.GetFirewallRequest{Project: env.project, Firewall: "k8s-fw-a1"})
	if err != nil {
		t.Fatal(err)
	}
	if got.GetDirection() != "INGRESS" || got.GetPriority() != 1000 || !slices.Equal(got.GetSourceRanges(), []string{"0.0.0.0/0"}) ||
		got.GetDisabled() || got.GetNetwork() != fx.NetworkURL || got.GetKind() != "compute#firewall" ||
		got.GetSelfLink() != LinkBase+"projects/test-project/global/firewalls/k8s-fw-a1" || got.GetAllowed()[0].GetPorts()[1] != "30000-32767" {
		t.Errorf("firewall %v", got)
	}
	_, err = fc.Insert(t.Context(), &computepb.InsertFirewallRequest{Project: env.project, FirewallResource: fw})
	wantCode(t, err, http.StatusConflict, "alreadyExists")

	// Patch replaces the fields sent and keeps the rest.
	op, err = fc.Patch(t.Context(), &computepb.PatchFirewallRequest{Project: env.project, Firewall: "k8s-fw-a1",
		FirewallResource: &computepb.Firewall{SourceRanges: []string{"10.0.0.0/8", "192.168.1.1"}}})
	if err != nil || op.Wait(t.Context()) != nil {
		t.Fatal(err)
	}
	got, _ = fc.Get(t.Context(), &computepb.GetFirewallRequest{Project: env.project, Firewall: "k8s-fw-a1"})
	if !slices.Equal(got.GetSourceRanges(), []string{"10.0.0.0/8", "192.168.1.1"}) || got.GetDescription() != fw.GetDescription() ||
		!slices.Equal(got.GetTargetTags(), []string{"k8s-node"}) {
		t.Errorf("patched %v", got)
	}
	if op.Proto().GetOperationType() != "patch" {
		t.Errorf("operation %v", op.Proto())
	}

	// Update replaces the whole rule.
	op, err = fc.Update(t.Context(), &computepb.UpdateFirewallRequest{Project: env.project, Firewall: "k8s-fw-a1",
		FirewallResource: &computepb.Firewall{Name: proto.String("k8s-fw-a1"), Network: proto.String("global/networks/" + fx.NetworkName),
			Allowed: []*computepb.Allowed{{IPProtocol: proto.String("udp"), Ports: []string{"53"}}}}})
	if err != nil || op.Wait(t.Context()) != nil {
		t.Fatal(err)
	}
	got, _ = fc.Get(t.Context(), &computepb.GetFirewallRequest{Project: env.project, Firewall: "k8s-fw-a1"})
	if got.GetDescription() != "" || len(got.GetTargetTags()) != 0 || got.GetAllowed()[0].GetIPProtocol() != "udp" ||
		!slices.Equal(got.GetSourceRanges(), []string{"0.0.0.0/0"}) || got.GetCreationTimestamp() == "" {
		t.Errorf("updated %v", got)
	}

	if r, ok := env.emu.Firewall("k8s-fw-a1"); !ok || r.GetAllowed()[0].GetIPProtocol() != "udp" || len(env.emu.Firewalls()) != 1 {
		t.Errorf("admin read %v", r)
	}
	if calls := env.srv.CallCount("compute:Firewalls.Get"); calls != 3 {
		t.Errorf("%d gets counted", calls)
	}

	// List with a filter, then delete.
	it := fc.List(t.Context(), &computepb.ListFirewallsRequest{Project: env.project, Filter: proto.String(`name eq "k8s-fw-.*"`)})
	if f, err := it.Next(); err != nil || f.GetName() != "k8s-fw-a1" {
		t.Fatal(f, err)
	}
	if _, err := it.Next(); err != iterator.Done {
		t.Fatalf("second firewall: %v", err)
	}
	op, err = fc.Delete(t.Context(), &computepb.DeleteFirewallRequest{Project: env.project, Firewall: "k8s-fw-a1"})
	if err != nil || op.Wait(t.Context()) != nil {
		t.Fatal(err)
	}
	_, err = fc.Get(t.Context(), &computepb.GetFirewallRequest{Project: env.project, Firewall: "k8s-fw-a1"})
	wantCode(t, err, http.StatusNotFound, "notFound")
	_, err = fc.Delete(t.Context(), &computepb.DeleteFirewallRequest{Project: env.project, Firewall: "k8s-fw-a1"})
	wantCode(t, err, http.StatusNotFound, "notFound")
}

func TestFirewallValidation(t *testing.T) {
	env := newTestEnv(t, Config{})
	fx := env.emu.Fixture()
	fc := env.firewalls(t)
	tcp80 := []*computepb.Allowed{{IPProtocol: proto.String("tcp"), Ports: []string{"80"}}}
	for _, tc := range []struct {
		name   string
		fw     *computepb.Firewall
		status int
		reason string
	}{
		{"default network missing", &computepb.Firewall{Name: proto.String("f"), Allowed: tcp80}, http.StatusNotFound, "notFound"},
		{"bad name", &computepb.Firewall{Name: proto.String("F_1"), Network: proto.String(fx.NetworkURL), Allowed: tcp80}, http.StatusBadRequest, "invalid"},
		{"no name", &computepb.Firewall{Network: proto.String(fx.NetworkURL), Allowed: tcp80}, http.StatusBadRequest, "required"},
		{"neither allowed nor denied", &computepb.Firewall{Name: proto.String("f"), Network: proto.String(fx.NetworkURL)}, http.StatusBadRequest, "invalid"},
		{"ports on icmp", &computepb.Firewall{Name: proto.String("f"), Network: proto.String(fx.NetworkURL),
			Allowed: []*computepb.Allowed{{IPProtocol: proto.String("icmp"), Ports: []string{"1"}}}}, http.StatusBadRequest, "invalid"},
		{"bad port range", &computepb.Firewall{Name: proto.String("f"), Network: proto.String(fx.NetworkURL),
			Allowed: []*computepb.Allowed{{IPProtocol: proto.String("tcp"), Ports: []string{"90-80"}}}}, http.StatusBadRequest, "invalid"},
		{"no protocol", &computepb.Firewall{Name: proto.String("f"), Network: proto.String(fx.NetworkURL),
			Allowed: []*computepb.Allowed{{Ports: []string{"80"}}}}, http.StatusBadRequest, "required"},
		{"bad source range", &computepb.Firewall{Name: proto.String("f"), Network: proto.String(fx.NetworkURL), Allowed: tcp80,
			SourceRanges: []string{"10.0.0.0/33"}}, http.StatusBadRequest, "invalid"},
		{"bad direction", &computepb.Firewall{Name: proto.String("f"), Network: proto.String(fx.NetworkURL), Allowed: tcp80,
			Direction: proto.String("SIDEWAYS")}, http.StatusBadRequest, "invalid"},
	} {
		_, err := fc.Insert(t.Context(), &computepb.InsertFirewallRequest{Project: env.project, FirewallResource: tc.fw})
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		if code, reason := apiCode(t, err); code != tc.status || reason != tc.reason {
			t.Errorf("%s: %d %s (%v), want %d %s", tc.name, code, reason, err, tc.status, tc.reason)
		}
	}
	// Nothing was made by the refused calls.
	if n := len(env.srv.Resources()); n != 4 {
		t.Errorf("%d resources after refused inserts", n)
	}
	// The network is in use by a firewall: the error a backend must
	// recognise (here only reachable for resources the API can delete).
	if users := env.emu.usersOf(fx.NetworkURL); len(users) != 3 {
		t.Errorf("network users %v", users)
	}
}

// usersOf lists who references a link (test helper).
func (e *Emulator) usersOf(l string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	p, _ := e.refPath(l)
	return e.users(p, true)
}

// TestFirewallListByDescription: a regular expression on the JSON in
// descriptions (single-quoted, double quotes inside), as the manager's
// inventory lists the cluster's parts, in pages of one; a rule deleted
// between pages neither repeats nor skips the others.
func TestFirewallListByDescription(t *testing.T) {
	env := newTestEnv(t, Config{})
	fx := env.emu.Fixture()
	fc := env.firewalls(t)
	for _, r := range []struct{ name, desc string }{
		{"k8s-fw-a1", `{"kubernetes.io/service-name":"default/web","kubernetes.io/cluster-id":"prod"}`},
		{"k8s-fw-a2", `{"kubernetes.io/service-name":"default/web","kubernetes.io/cluster-id":"prod-2"}`},
		{"k8s-fw-a3", `{"kubernetes.io/service-name":"default/api"}`},
		{"k8s-fw-a4", `{"kubernetes.io/service-name":"default/db","kubernetes.io/cluster-id":"prod"}`},
		{"k8s-prod-node-http-hc", `{"kubernetes.io/cluster-id":"prod"}`},
		{"by-hand", ""},
	} {
		op, err := fc.Insert(t.Context(), &computepb.InsertFirewallRequest{Project: env.project, FirewallResource: &computepb.Firewall{
			Name: proto.String(r.name), Description: proto.String(r.desc), Network: proto.String(fx.NetworkURL),
			Allowed: []*computepb.Allowed{{IPProtocol: proto.String("tcp"), Ports: []string{"80"}}},
		}})
		if err != nil || op.Wait(t.Context()) != nil {
			t.Fatal(r.name, err)
		}
	}
	filter := `description eq '.*"kubernetes\.io/(cluster-id":"(prod)"|service-name":"k8s-prod-node").*'`
	it := fc.List(t.Context(), &computepb.ListFirewallsRequest{Project: env.project, Filter: proto.String(filter), MaxResults: proto.Uint32(1)})
	var got []string
	for {
		f, err := it.Next()
		if err == iterator.Done {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, f.GetName())
		if len(got) == 1 {
			op, err := fc.Delete(t.Context(), &computepb.DeleteFirewallRequest{Project: env.project, Firewall: "k8s-fw-a1"})
			if err != nil || op.Wait(t.Context()) != nil {
				t.Fatal(err)
			}
		}
	}
	if want := []string{"k8s-fw-a1", "k8s-fw-a4", "k8s-prod-node-http-hc"}; !slices.Equal(got, want) {
		t.Errorf("listed %v, want %v", got, want)
	}
	if n := env.srv.CallCount("compute:Firewalls.List"); n != 3 {
		t.Errorf("%d list calls for 3 pages of one", n)
	}
}
