package gce

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/iterator"
	"google.golang.org/protobuf/proto"

	computev1 "google.golang.org/api/compute/v1"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

func (env *testEnv) healthChecks(t *testing.T) *compute.HealthChecksClient {
	return client(t, env, compute.NewHealthChecksRESTClient)
}

func (env *testEnv) insertHC(t *testing.T, hc *computepb.HealthCheck) (*compute.Operation, error) {
	t.Helper()
	return env.healthChecks(t).Insert(t.Context(), &computepb.InsertHealthCheckRequest{Project: env.project, HealthCheckResource: hc})
}

func (env *testEnv) getHC(t *testing.T, name string) *computepb.HealthCheck {
	t.Helper()
	hc, err := env.healthChecks(t).Get(t.Context(), &computepb.GetHealthCheckRequest{Project: env.project, HealthCheck: name})
	if err != nil {
		t.Fatal(err)
	}
	return hc
}

func TestHealthCheckLifecycle(t *testing.T) {
	env := newTestEnv(t, Config{})
	hcc := env.healthChecks(t)
	// What upstream's CCM makes for an internal load balancer's nodes.
	op, err := env.insertHC(t, &computepb.HealthCheck{Name: proto.String("k8s-1234-node"), Type: proto.String("HTTP"),
		CheckIntervalSec: proto.Int32(8), TimeoutSec: proto.Int32(1), HealthyThreshold: proto.Int32(1), UnhealthyThreshold: proto.Int32(3),
		HttpHealthCheck: &computepb.HTTPHealthCheck{Port: proto.Int32(10256), RequestPath: proto.String("/healthz")}})
	wait(t, op, err)
	if !strings.Contains(op.Proto().GetSelfLink(), "/global/operations/") || op.Proto().GetRegion() != "" ||
		op.Proto().GetTargetLink() != LinkBase+"projects/test-project/global/healthChecks/k8s-1234-node" {
		t.Errorf("operation is not global: %v", op.Proto())
	}
	hc := env.getHC(t, "k8s-1234-node")
	h := hc.GetHttpHealthCheck()
	if hc.GetKind() != "compute#healthCheck" || hc.Region != nil || hc.GetId() == 0 || hc.GetCreationTimestamp() == "" ||
		hc.GetSelfLink() != LinkBase+"projects/test-project/global/healthChecks/k8s-1234-node" ||
		hc.GetCheckIntervalSec() != 8 || hc.GetTimeoutSec() != 1 || hc.GetHealthyThreshold() != 1 || hc.GetUnhealthyThreshold() != 3 ||
		h.GetPort() != 10256 || h.GetRequestPath() != "/healthz" || h.GetPortSpecification() != "USE_FIXED_PORT" || h.GetProxyHeader() != "NONE" ||
		hc.TcpHealthCheck != nil {
		t.Errorf("health check %v", hc)
	}
	if got, ok := env.emu.HealthCheck("k8s-1234-node"); !ok || !proto.Equal(got, hc) || len(env.emu.HealthChecks()) != 1 || len(env.emu.RegionHealthChecks()) != 0 {
		t.Errorf("admin read %v", got)
	}
	_, err = env.insertHC(t, &computepb.HealthCheck{Name: proto.String("k8s-1234-node"), Type: proto.String("TCP")})
	wantCode(t, err, http.StatusConflict, "alreadyExists")
	// The name is the global one's alone: a regional check may share it.
	op, err = env.insertRegionHC(t, &computepb.HealthCheck{Name: proto.String("k8s-1234-node"), Type: proto.String("TCP")})
	wait(t, op, err)
	if !slices.ContainsFunc(env.srv.Resources(), func(r cloudsim.Resource) bool {
		return r.ID == "projects/test-project/global/healthChecks/k8s-1234-node" && r.Kind == "compute#healthCheck"
	}) {
		t.Errorf("not in the inventory: %v", env.srv.Resources())
	}

	// GCE's defaults for every protocol.
	for _, tc := range []struct {
		hc   *computepb.HealthCheck
		port int32
		path string
	}{
		{&computepb.HealthCheck{Name: proto.String("tcp"), Type: proto.String("TCP")}, 80, ""},
		{&computepb.HealthCheck{Name: proto.String("ssl"), Type: proto.String("SSL")}, 443, ""},
		{&computepb.HealthCheck{Name: proto.String("http"), Type: proto.String("HTTP")}, 80, "/"},
		{&computepb.HealthCheck{Name: proto.String("https"), Type: proto.String("HTTPS")}, 443, "/"},
		{&computepb.HealthCheck{Name: proto.String("http2"), Type: proto.String("HTTP2")}, 443, "/"},
		{&computepb.HealthCheck{Name: proto.String("grpc"), Type: proto.String("GRPC"), GrpcHealthCheck: &computepb.GRPCHealthCheck{Port: proto.Int32(50051)}}, 50051, ""},
		{&computepb.HealthCheck{Name: proto.String("grpc-tls"), Type: proto.String("GRPC_WITH_TLS"),
			GrpcTlsHealthCheck: &computepb.GRPCTLSHealthCheck{PortSpecification: proto.String("USE_SERVING_PORT")}}, 0, ""},
	} {
		op, err := env.insertHC(t, tc.hc)
		wait(t, op, err)
		hc := env.getHC(t, tc.hc.GetName())
		var port int32
		var spec, proxy, path string
		switch s := hc.GetType(); s {
		case "TCP":
			port, spec, proxy = hc.GetTcpHealthCheck().GetPort(), hc.GetTcpHealthCheck().GetPortSpecification(), hc.GetTcpHealthCheck().GetProxyHeader()
		case "SSL":
			port, spec, proxy = hc.GetSslHealthCheck().GetPort(), hc.GetSslHealthCheck().GetPortSpecification(), hc.GetSslHealthCheck().GetProxyHeader()
		case "HTTP":
			h := hc.GetHttpHealthCheck()
			port, spec, proxy, path = h.GetPort(), h.GetPortSpecification(), h.GetProxyHeader(), h.GetRequestPath()
		case "HTTPS":
			h := hc.GetHttpsHealthCheck()
			port, spec, proxy, path = h.GetPort(), h.GetPortSpecification(), h.GetProxyHeader(), h.GetRequestPath()
		case "HTTP2":
			h := hc.GetHttp2HealthCheck()
			port, spec, proxy, path = h.GetPort(), h.GetPortSpecification(), h.GetProxyHeader(), h.GetRequestPath()
		case "GRPC":
			port, spec, proxy = hc.GetGrpcHealthCheck().GetPort(), hc.GetGrpcHealthCheck().GetPortSpecification(), "NONE"
		case "GRPC_WITH_TLS":
			port, spec, proxy = hc.GetGrpcTlsHealthCheck().GetPort(), "USE_FIXED_PORT", "NONE"
			if s := hc.GetGrpcTlsHealthCheck().GetPortSpecification(); s != "USE_SERVING_PORT" {
				t.Errorf("%s: port specification %s", hc.GetName(), s)
			}
		}
		if port != tc.port || spec != "USE_FIXED_PORT" || proxy != "NONE" || path != tc.path ||
			hc.GetCheckIntervalSec() != 5 || hc.GetTimeoutSec() != 5 || hc.GetHealthyThreshold() != 2 || hc.GetUnhealthyThreshold() != 2 {
			t.Errorf("%s: defaults %v", hc.GetName(), hc)
		}
	}

	// Patch to TCP drops the HTTP settings; update replaces everything.
	op, err = hcc.Patch(t.Context(), &computepb.PatchHealthCheckRequest{Project: env.project, HealthCheck: "http",
		HealthCheckResource: &computepb.HealthCheck{Type: proto.String("TCP"), TcpHealthCheck: &computepb.TCPHealthCheck{Port: proto.Int32(8080)}}})
	wait(t, op, err)
	if hc := env.getHC(t, "http"); hc.GetType() != "TCP" || hc.HttpHealthCheck != nil || hc.GetTcpHealthCheck().GetPort() != 8080 {
		t.Errorf("patched %v", hc)
	}
	op, err = hcc.Patch(t.Context(), &computepb.PatchHealthCheckRequest{Project: env.project, HealthCheck: "k8s-1234-node",
		HealthCheckResource: &computepb.HealthCheck{Description: proto.String("patched"), HttpHealthCheck: &computepb.HTTPHealthCheck{RequestPath: proto.String("/livez")}}})
	wait(t, op, err)
	if hc := env.getHC(t, "k8s-1234-node"); hc.GetDescription() != "patched" || hc.GetHttpHealthCheck().GetRequestPath() != "/livez" ||
		hc.GetHttpHealthCheck().GetPort() != 10256 || hc.GetCheckIntervalSec() != 8 {
		t.Errorf("patched %v", hc)
	}
	op, err = hcc.Update(t.Context(), &computepb.UpdateHealthCheckRequest{Project: env.project, HealthCheck: "k8s-1234-node",
		HealthCheckResource: &computepb.HealthCheck{Name: proto.String("k8s-1234-node"), Type: proto.String("TCP"),
			TcpHealthCheck: &computepb.TCPHealthCheck{Port: proto.Int32(10256)}}})
	wait(t, op, err)
	if got := env.getHC(t, "k8s-1234-node"); got.GetType() != "TCP" || got.HttpHealthCheck != nil || got.Description != nil ||
		got.GetCheckIntervalSec() != 5 || got.GetTcpHealthCheck().GetPort() != 10256 || got.GetId() != hc.GetId() || got.GetCreationTimestamp() != hc.GetCreationTimestamp() {
		t.Errorf("updated %v", got)
	}
	_, err = hcc.Update(t.Context(), &computepb.UpdateHealthCheckRequest{Project: env.project, HealthCheck: "k8s-1234-node",
		HealthCheckResource: &computepb.HealthCheck{Name: proto.String("other"), Type: proto.String("TCP")}})
	wantCode(t, err, http.StatusBadRequest, "invalid")

	// Filtered and paged lists; global and regional checks are apart.
	it := hcc.List(t.Context(), &computepb.ListHealthChecksRequest{Project: env.project, Filter: proto.String(`type = "TCP"`)})
	var names []string
	for {
		hc, err := it.Next()
		if err == iterator.Done {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hc.GetName())
	}
	if !slices.Equal(names, []string{"k8s-1234-node", "tcp", "http"}) {
		t.Errorf("filtered list %v", names)
	}
	it = hcc.List(t.Context(), &computepb.ListHealthChecksRequest{Project: env.project, MaxResults: proto.Uint32(3)})
	if _, err := it.Next(); err != nil {
		t.Fatal(err)
	}
	if l := it.Response.(*computepb.HealthCheckList); len(l.GetItems()) != 3 || l.GetNextPageToken() == "" || l.GetKind() != "compute#healthCheckList" ||
		l.GetSelfLink() != LinkBase+"projects/test-project/global/healthChecks" {
		t.Errorf("first page %v", l)
	}
	n := 1
	for {
		if _, err := it.Next(); err == iterator.Done {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 8 {
		t.Errorf("%d health checks through the pages, want 8", n)
	}
	// aggregatedList lists global and regional checks together: not emulated.
	_, err = hcc.AggregatedList(t.Context(), &computepb.AggregatedListHealthChecksRequest{Project: env.project}).Next()
	wantCode(t, err, http.StatusNotImplemented, "notImplemented")

	op, err = hcc.Delete(t.Context(), &computepb.DeleteHealthCheckRequest{Project: env.project, HealthCheck: "tcp"})
	wait(t, op, err)
	_, err = hcc.Get(t.Context(), &computepb.GetHealthCheckRequest{Project: env.project, HealthCheck: "tcp"})
	wantCode(t, err, http.StatusNotFound, "notFound")
	_, err = hcc.Delete(t.Context(), &computepb.DeleteHealthCheckRequest{Project: env.project, HealthCheck: "tcp"})
	wantCode(t, err, http.StatusNotFound, "notFound")
	if _, ok := env.emu.RegionHealthCheck("k8s-1234-node"); !ok {
		t.Error("the regional check of the same name went too")
	}
	if n := env.srv.CallCount("compute:HealthChecks.Get"); n != 12 {
		t.Errorf("%d gets counted", n)
	}
}

// Upstream's CCM reaches health checks through
// google.golang.org/api/compute/v1: it makes its nodes' check with no
// description and puts the whole check back when it has drifted.
func TestHealthCheckUpstreamPut(t *testing.T) {
	env := newTestEnv(t, Config{})
	hcs := env.legacyCompute(t).HealthChecks
	ctx := t.Context()
	want := &computev1.HealthCheck{Name: "k8s-1234-node", Type: "HTTP", CheckIntervalSec: 8, TimeoutSec: 1, HealthyThreshold: 1, UnhealthyThreshold: 3,
		HttpHealthCheck: &computev1.HTTPHealthCheck{Port: 10256, RequestPath: "/healthz"}}
	op, err := hcs.Insert(env.project, want).Context(ctx).Do()
	if err != nil || op.Status != "DONE" || op.OperationType != "insert" {
		t.Fatalf("insert %+v %v", op, err)
	}
	hc, err := hcs.Get(env.project, "k8s-1234-node").Context(ctx).Do()
	if err != nil || hc.Description != "" || hc.HttpHealthCheck.Port != 10256 || hc.HttpHealthCheck.RequestPath != "/healthz" || hc.Kind != "compute#healthCheck" {
		t.Fatalf("get %+v %v", hc, err)
	}
	want.HttpHealthCheck.Port, want.CheckIntervalSec = 10257, 10
	op, err = hcs.Update(env.project, "k8s-1234-node", want).Context(ctx).Do()
	if err != nil || op.OperationType != "update" || op.TargetLink != hc.SelfLink {
		t.Fatalf("update %+v %v", op, err)
	}
	got, err := hcs.Get(env.project, "k8s-1234-node").Context(ctx).Do()
	if err != nil || got.HttpHealthCheck.Port != 10257 || got.CheckIntervalSec != 10 || got.TimeoutSec != 1 || got.Description != "" ||
		got.Id != hc.Id || got.SelfLink != hc.SelfLink || got.HttpHealthCheck.PortSpecification != "USE_FIXED_PORT" {
		t.Errorf("updated %+v %v", got, err)
	}
	if n := env.srv.CallCount("compute:HealthChecks.Update"); n != 1 {
		t.Errorf("%d updates counted", n)
	}
}

func TestHealthCheckValidation(t *testing.T) {
	env := newTestEnv(t, Config{})
	for _, tc := range []struct {
		name   string
		hc     *computepb.HealthCheck
		reason string
	}{
		{"no type", &computepb.HealthCheck{Name: proto.String("h")}, "required"},
		{"unknown type", &computepb.HealthCheck{Name: proto.String("h"), Type: proto.String("UDP")}, "invalid"},
		{"type mismatch", &computepb.HealthCheck{Name: proto.String("h"), Type: proto.String("TCP"),
			HttpHealthCheck: &computepb.HTTPHealthCheck{Port: proto.Int32(80)}}, "invalid"},
		{"two protocols", &computepb.HealthCheck{Name: proto.String("h"), Type: proto.String("SSL"),
			SslHealthCheck: &computepb.SSLHealthCheck{}, HttpsHealthCheck: &computepb.HTTPSHealthCheck{}}, "invalid"},
		{"gRPC without port", &computepb.HealthCheck{Name: proto.String("h"), Type: proto.String("GRPC")}, "required"},
		{"gRPC TLS named port", &computepb.HealthCheck{Name: proto.String("h"), Type: proto.String("GRPC_WITH_TLS"),
			GrpcTlsHealthCheck: &computepb.GRPCTLSHealthCheck{PortSpecification: proto.String("USE_NAMED_PORT")}}, "invalid"},
		{"port out of range", &computepb.HealthCheck{Name: proto.String("h"), Type: proto.String("HTTPS"),
			HttpsHealthCheck: &computepb.HTTPSHealthCheck{Port: proto.Int32(65536)}}, "invalid"},
		{"relative path", &computepb.HealthCheck{Name: proto.String("h"), Type: proto.String("HTTP2"),
			Http2HealthCheck: &computepb.HTTP2HealthCheck{RequestPath: proto.String("healthz")}}, "invalid"},
		{"bad proxy header", &computepb.HealthCheck{Name: proto.String("h"), Type: proto.String("SSL"),
			SslHealthCheck: &computepb.SSLHealthCheck{ProxyHeader: proto.String("PROXY_V2")}}, "invalid"},
		{"threshold over 10", &computepb.HealthCheck{Name: proto.String("h"), Type: proto.String("TCP"), HealthyThreshold: proto.Int32(11)}, "invalid"},
		{"timeout over interval", &computepb.HealthCheck{Name: proto.String("h"), Type: proto.String("TCP"),
			CheckIntervalSec: proto.Int32(2), TimeoutSec: proto.Int32(3)}, "invalid"},
		{"bad name", &computepb.HealthCheck{Name: proto.String("H"), Type: proto.String("TCP")}, "invalid"},
	} {
		_, err := env.insertHC(t, tc.hc)
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		if code, reason := apiCode(t, err); code != http.StatusBadRequest || reason != tc.reason {
			t.Errorf("%s: %d %s (%v), want 400 %s", tc.name, code, reason, err, tc.reason)
		}
	}
	_, err := env.insertHC(t, &computepb.HealthCheck{Name: proto.String("h"), Type: proto.String("GRPC")})
	if want := "Required field 'resource.grpcHealthCheck.port' not specified"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("message %v, want %q", err, want)
	}
	// A refused update leaves the check as it was.
	op, err := env.insertHC(t, &computepb.HealthCheck{Name: proto.String("ok"), Type: proto.String("TCP")})
	wait(t, op, err)
	_, err = env.healthChecks(t).Update(t.Context(), &computepb.UpdateHealthCheckRequest{Project: env.project, HealthCheck: "ok",
		HealthCheckResource: &computepb.HealthCheck{Name: proto.String("ok")}})
	wantCode(t, err, http.StatusBadRequest, "required")
	if hc := env.getHC(t, "ok"); hc.GetTcpHealthCheck().GetPort() != 80 {
		t.Errorf("after a refused update %v", hc)
	}
	if n := len(env.srv.Resources()); n != 5 {
		t.Errorf("%d resources after refused inserts", n)
	}
}

// A regional backend service of an internal passthrough load balancer may
// use a global health check, which it then keeps from being deleted.
func TestBackendServiceGlobalHealthCheck(t *testing.T) {
	env := newTestEnv(t, Config{})
	bsc := env.backendServices(t)
	op, err := env.insertHC(t, &computepb.HealthCheck{Name: proto.String("k8s-1234-node"), Type: proto.String("HTTP"),
		HttpHealthCheck: &computepb.HTTPHealthCheck{Port: proto.Int32(10256), RequestPath: proto.String("/healthz")}})
	wait(t, op, err)
	hcLink := LinkBase + "projects/test-project/global/healthChecks/k8s-1234-node"
	op, err = bsc.Insert(t.Context(), &computepb.InsertRegionBackendServiceRequest{Project: env.project, Region: env.region,
		BackendServiceResource: &computepb.BackendService{Name: proto.String("k8s2-abc"), LoadBalancingScheme: proto.String("INTERNAL"),
			HealthChecks: []string{"global/healthChecks/k8s-1234-node"}}})
	wait(t, op, err)
	if got := env.getBS(t, "k8s2-abc").GetHealthChecks(); !slices.Equal(got, []string{hcLink}) {
		t.Errorf("health checks %v", got)
	}

	hcc := env.healthChecks(t)
	_, err = hcc.Delete(t.Context(), &computepb.DeleteHealthCheckRequest{Project: env.project, HealthCheck: "k8s-1234-node"})
	wantCode(t, err, http.StatusBadRequest, "resourceInUseByAnotherResource")
	if want := "The health_check resource 'projects/test-project/global/healthChecks/k8s-1234-node' is already being used by " +
		"'projects/test-project/regions/us-central1/backendServices/k8s2-abc'"; !strings.Contains(err.Error(), want) {
		t.Errorf("in-use message %v, want %q", err, want)
	}

	// Moving the service to a regional check frees the global one; a
	// legacy HTTP health check is not for backend services.
	if _, err := env.legacyCompute(t).HttpHealthChecks.Insert(env.project, &computev1.HttpHealthCheck{Name: "legacy"}).Context(t.Context()).Do(); err != nil {
		t.Fatal(err)
	}
	patch := func(hc string) (*compute.Operation, error) {
		return bsc.Patch(t.Context(), &computepb.PatchRegionBackendServiceRequest{Project: env.project, Region: env.region, BackendService: "k8s2-abc",
			BackendServiceResource: &computepb.BackendService{HealthChecks: []string{hc}}})
	}
	_, err = patch("global/httpHealthChecks/legacy")
	wantCode(t, err, http.StatusBadRequest, "invalid")
	op, err = env.insertRegionHC(t, &computepb.HealthCheck{Name: proto.String("regional"), Type: proto.String("TCP")})
	wait(t, op, err)
	op, err = patch("regions/us-central1/healthChecks/regional")
	wait(t, op, err)
	op, err = hcc.Delete(t.Context(), &computepb.DeleteHealthCheckRequest{Project: env.project, HealthCheck: "k8s-1234-node"})
	wait(t, op, err)
	_, err = env.regionHealthChecks(t).Delete(t.Context(), &computepb.DeleteRegionHealthCheckRequest{Project: env.project, Region: env.region, HealthCheck: "regional"})
	wantCode(t, err, http.StatusBadRequest, "resourceInUseByAnotherResource")
}
