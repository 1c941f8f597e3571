package gce

import (
	"net/http"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/iterator"
	"google.golang.org/protobuf/proto"
)

func (env *testEnv) regionHealthChecks(t *testing.T) *compute.RegionHealthChecksClient {
	return client(t, env, compute.NewRegionHealthChecksRESTClient)
}

func (env *testEnv) insertRegionHC(t *testing.T, hc *computepb.HealthCheck) (*compute.Operation, error) {
	t.Helper()
	return env.regionHealthChecks(t).Insert(t.Context(), &computepb.InsertRegionHealthCheckRequest{Project: env.project, Region: env.region, HealthCheckResource: hc})
}

func (env *testEnv) getRegionHC(t *testing.T, name string) *computepb.HealthCheck {
	t.Helper()
	hc, err := env.regionHealthChecks(t).Get(t.Context(), &computepb.GetRegionHealthCheckRequest{Project: env.project, Region: env.region, HealthCheck: name})
	if err != nil {
		t.Fatal(err)
	}
	return hc
}

func TestRegionHealthCheckLifecycle(t *testing.T) {
	env := newTestEnv(t, Config{})
	hcc := env.regionHealthChecks(t)
	// What upstream's CCM makes for an internal load balancer.
	op, err := env.insertRegionHC(t, &computepb.HealthCheck{Name: proto.String("k8s-1234-node"), Type: proto.String("HTTP"),
		CheckIntervalSec: proto.Int32(8), TimeoutSec: proto.Int32(1), HealthyThreshold: proto.Int32(1), UnhealthyThreshold: proto.Int32(3),
		HttpHealthCheck: &computepb.HTTPHealthCheck{Port: proto.Int32(10256), RequestPath: proto.String("/healthz")}})
	wait(t, op, err)
	hc := env.getRegionHC(t, "k8s-1234-node")
	h := hc.GetHttpHealthCheck()
	if hc.GetKind() != "compute#healthCheck" || hc.GetRegion() != LinkBase+"projects/test-project/regions/us-central1" ||
		hc.GetSelfLink() != LinkBase+"projects/test-project/regions/us-central1/healthChecks/k8s-1234-node" ||
		hc.GetCheckIntervalSec() != 8 || hc.GetTimeoutSec() != 1 || h.GetPort() != 10256 || h.GetRequestPath() != "/healthz" ||
		h.GetPortSpecification() != "USE_FIXED_PORT" || h.GetProxyHeader() != "NONE" || hc.TcpHealthCheck != nil {
		t.Errorf("health check %v", hc)
	}
	if got, ok := env.emu.RegionHealthCheck("k8s-1234-node"); !ok || !proto.Equal(got, hc) || len(env.emu.RegionHealthChecks()) != 1 {
		t.Errorf("admin read %v", got)
	}
	if op.Proto().GetRegion() == "" {
		t.Errorf("operation is not regional: %v", op.Proto())
	}

	// A TCP check with GCE's defaults.
	op, err = env.insertRegionHC(t, &computepb.HealthCheck{Name: proto.String("tcp"), Type: proto.String("TCP")})
	wait(t, op, err)
	hc = env.getRegionHC(t, "tcp")
	if hc.GetTcpHealthCheck().GetPort() != 80 || hc.GetCheckIntervalSec() != 5 || hc.GetTimeoutSec() != 5 ||
		hc.GetHealthyThreshold() != 2 || hc.GetUnhealthyThreshold() != 2 || hc.HttpHealthCheck != nil {
		t.Errorf("defaults %v", hc)
	}

	// Patch to HTTP drops the TCP settings; update replaces everything.
	op, err = hcc.Patch(t.Context(), &computepb.PatchRegionHealthCheckRequest{Project: env.project, Region: env.region, HealthCheck: "tcp",
		HealthCheckResource: &computepb.HealthCheck{Type: proto.String("HTTP"), HttpHealthCheck: &computepb.HTTPHealthCheck{Port: proto.Int32(8080)}}})
	wait(t, op, err)
	hc = env.getRegionHC(t, "tcp")
	if hc.GetType() != "HTTP" || hc.TcpHealthCheck != nil || hc.GetHttpHealthCheck().GetPort() != 8080 || hc.GetHttpHealthCheck().GetRequestPath() != "/" {
		t.Errorf("patched %v", hc)
	}
	op, err = hcc.Update(t.Context(), &computepb.UpdateRegionHealthCheckRequest{Project: env.project, Region: env.region, HealthCheck: "k8s-1234-node",
		HealthCheckResource: &computepb.HealthCheck{Name: proto.String("k8s-1234-node"), Type: proto.String("TCP"),
			TcpHealthCheck: &computepb.TCPHealthCheck{Port: proto.Int32(10256)}}})
	wait(t, op, err)
	hc = env.getRegionHC(t, "k8s-1234-node")
	if hc.GetType() != "TCP" || hc.HttpHealthCheck != nil || hc.GetCheckIntervalSec() != 5 || hc.GetTcpHealthCheck().GetPort() != 10256 {
		t.Errorf("updated %v", hc)
	}

	it := hcc.List(t.Context(), &computepb.ListRegionHealthChecksRequest{Project: env.project, Region: env.region, Filter: proto.String(`type = "HTTP"`)})
	if got, err := it.Next(); err != nil || got.GetName() != "tcp" {
		t.Fatalf("filtered list: %v %v", got, err)
	}
	if _, err := it.Next(); err != iterator.Done {
		t.Errorf("second item: %v", err)
	}
	op, err = hcc.Delete(t.Context(), &computepb.DeleteRegionHealthCheckRequest{Project: env.project, Region: env.region, HealthCheck: "tcp"})
	wait(t, op, err)
	_, err = hcc.Get(t.Context(), &computepb.GetRegionHealthCheckRequest{Project: env.project, Region: env.region, HealthCheck: "tcp"})
	wantCode(t, err, http.StatusNotFound, "notFound")
	if n := env.srv.CallCount("compute:RegionHealthChecks.Get"); n != 5 {
		t.Errorf("%d gets counted", n)
	}
}

func TestRegionHealthCheckValidation(t *testing.T) {
	env := newTestEnv(t, Config{})
	for _, tc := range []struct {
		name   string
		hc     *computepb.HealthCheck
		status int
		reason string
	}{
		{"no type", &computepb.HealthCheck{Name: proto.String("h")}, http.StatusBadRequest, "required"},
		{"HTTPS", &computepb.HealthCheck{Name: proto.String("h"), Type: proto.String("HTTPS")}, http.StatusBadRequest, "invalid"},
		{"type mismatch", &computepb.HealthCheck{Name: proto.String("h"), Type: proto.String("TCP"),
			HttpHealthCheck: &computepb.HTTPHealthCheck{Port: proto.Int32(80)}}, http.StatusBadRequest, "invalid"},
		{"port out of range", &computepb.HealthCheck{Name: proto.String("h"), Type: proto.String("TCP"),
			TcpHealthCheck: &computepb.TCPHealthCheck{Port: proto.Int32(0)}}, http.StatusBadRequest, "invalid"},
		{"named port without name", &computepb.HealthCheck{Name: proto.String("h"), Type: proto.String("TCP"),
			TcpHealthCheck: &computepb.TCPHealthCheck{PortSpecification: proto.String("USE_NAMED_PORT")}}, http.StatusBadRequest, "required"},
		{"serving port with a port", &computepb.HealthCheck{Name: proto.String("h"), Type: proto.String("TCP"),
			TcpHealthCheck: &computepb.TCPHealthCheck{PortSpecification: proto.String("USE_SERVING_PORT"), Port: proto.Int32(80)}}, http.StatusBadRequest, "invalid"},
		{"relative path", &computepb.HealthCheck{Name: proto.String("h"), Type: proto.String("HTTP"),
			HttpHealthCheck: &computepb.HTTPHealthCheck{RequestPath: proto.String("healthz")}}, http.StatusBadRequest, "invalid"},
		{"bad proxy header", &computepb.HealthCheck{Name: proto.String("h"), Type: proto.String("TCP"),
			TcpHealthCheck: &computepb.TCPHealthCheck{ProxyHeader: proto.String("PROXY_V2")}}, http.StatusBadRequest, "invalid"},
		{"timeout over interval", &computepb.HealthCheck{Name: proto.String("h"), Type: proto.String("TCP"),
			CheckIntervalSec: proto.Int32(2), TimeoutSec: proto.Int32(3)}, http.StatusBadRequest, "invalid"},
	} {
		_, err := env.insertRegionHC(t, tc.hc)
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		if code, reason := apiCode(t, err); code != tc.status || reason != tc.reason {
			t.Errorf("%s: %d %s (%v), want %d %s", tc.name, code, reason, err, tc.status, tc.reason)
		}
	}
	if n := len(env.srv.Resources()); n != 4 {
		t.Errorf("%d resources after refused inserts", n)
	}
}
