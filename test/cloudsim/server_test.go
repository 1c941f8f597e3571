package cloudsim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

func startToy(t *testing.T) *cloudsim.Server {
	t.Helper()
	srv, err := cloudsim.Start(newToy())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// call sends one toy request and returns the HTTP status.
func call(t *testing.T, ctx context.Context, srv *cloudsim.Server, op, key, value string) (int, error) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"op": op, "key": key, "value": value})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL()+"/", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

func mustCall(t *testing.T, srv *cloudsim.Server, op, key, value string) int {
	t.Helper()
	status, err := call(t, context.Background(), srv, op, key, value)
	if err != nil {
		t.Fatal(err)
	}
	return status
}

func statuses(t *testing.T, srv *cloudsim.Server, op string, n int) []int {
	t.Helper()
	var out []int
	for i := 0; i < n; i++ {
		out = append(out, mustCall(t, srv, op, "k", "v"))
	}
	return out
}

func adminDo(t *testing.T, srv *cloudsim.Server, method, path, body string, out any) int {
	t.Helper()
	status, err := cloudsim.AdminCall(t.Context(), srv.URL(), method, path, body, out)
	if err != nil {
		t.Fatal(err)
	}
	return status
}

func TestServeAndCount(t *testing.T) {
	srv := startToy(t)
	if got := mustCall(t, srv, "put", "a", "1"); got != 200 {
		t.Fatalf("put: %d", got)
	}
	if got := mustCall(t, srv, "get", "a", ""); got != 200 {
		t.Fatalf("get: %d", got)
	}
	if got := mustCall(t, srv, "get", "missing", ""); got != 404 {
		t.Fatalf("get missing: %d", got)
	}
	want := map[string]int{"toy:put": 1, "toy:get": 2}
	if got := srv.Calls(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Calls() = %v, want %v", got, want)
	}
	for target, want := range map[string]int{"toy:get": 2, "*": 3, "mutating": 1, "read": 2, "toy:*": 3, "nope": 0} {
		if got := srv.CallCount(target); got != want {
			t.Errorf("CallCount(%q) = %d, want %d", target, got, want)
		}
	}
	srv.ResetCalls()
	if got := srv.CallCount("*"); got != 0 {
		t.Fatalf("after reset: %d", got)
	}
}

func TestUnparseableRequestIsNotCounted(t *testing.T) {
	srv := startToy(t)
	resp, err := http.Post(srv.URL()+"/", "application/json", strings.NewReader("not json"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if n := srv.CallCount("*"); n != 0 {
		t.Fatalf("counted %d calls", n)
	}
}

func TestFailNextAndFailEvery(t *testing.T) {
	srv := startToy(t)
	if err := srv.SetFault(cloudsim.FaultSpec{Op: "toy:put", FailNext: 2}); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(statuses(t, srv, "put", 3)); got != "[500 500 200]" {
		t.Fatalf("FailNext: %s", got)
	}
	if left := srv.Faults()[0].FailNext; left != 0 {
		t.Fatalf("FailNext left: %d", left)
	}
	// Other operations are untouched.
	if got := mustCall(t, srv, "get", "k", ""); got != 200 {
		t.Fatalf("get: %d", got)
	}

	if err := srv.SetFault(cloudsim.FaultSpec{Op: "*", FailEvery: 3}); err != nil {
		t.Fatal(err)
	}
	srv.ClearFault("toy:put")
	if got := fmt.Sprint(statuses(t, srv, "get", 6)); got != "[200 200 500 200 200 500]" {
		t.Fatalf("FailEvery: %s", got)
	}
	srv.ClearFaults()
	if len(srv.Faults()) != 0 {
		t.Fatal("faults not cleared")
	}
}

func TestErrorRateIsReproducible(t *testing.T) {
	run := func() string {
		srv := startToy(t)
		if err := srv.SetFault(cloudsim.FaultSpec{Op: "read", ErrorRate: 0.5, Seed: 42}); err != nil {
			t.Fatal(err)
		}
		mustCall(t, srv, "put", "k", "v")
		return fmt.Sprint(statuses(t, srv, "get", 20))
	}
	a, b := run(), run()
	if a != b {
		t.Fatalf("same seed, different outcomes:\n%s\n%s", a, b)
	}
	if !strings.Contains(a, "500") || !strings.Contains(a, "200") {
		t.Fatalf("error rate 0.5 gave %s", a)
	}
}

func TestThrottling(t *testing.T) {
	srv := startToy(t)
	if err := srv.SetFault(cloudsim.FaultSpec{Op: "mutating", ThrottleNext: 1}); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(statuses(t, srv, "put", 2)); got != "[429 200]" {
		t.Fatalf("ThrottleNext: %s", got)
	}

	// A bucket of 3 refilling at 1/s: a burst of 5 gets 3 through.
	if err := srv.SetFault(cloudsim.FaultSpec{Op: "toy:get", RatePerSecond: 1, Burst: 3}); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(statuses(t, srv, "get", 5)); got != "[200 200 200 429 429]" {
		t.Fatalf("rate limit: %s", got)
	}
	// Throttled calls are counted: that is how retries show up.
	if n := srv.CallCount("toy:get"); n != 5 {
		t.Fatalf("counted %d gets", n)
	}
}

func TestLatencyAddsUpAcrossGroups(t *testing.T) {
	srv := startToy(t)
	for _, spec := range []cloudsim.FaultSpec{
		{Op: "*", Latency: 30 * time.Millisecond},
		{Op: "mutating", Latency: 60 * time.Millisecond},
	} {
		if err := srv.SetFault(spec); err != nil {
			t.Fatal(err)
		}
	}
	timed := func(op string) time.Duration {
		start := time.Now()
		mustCall(t, srv, op, "k", "v")
		return time.Since(start)
	}
	if d := timed("get"); d < 30*time.Millisecond || d >= 90*time.Millisecond {
		t.Errorf("read took %v, want 30ms..90ms", d)
	}
	if d := timed("put"); d < 90*time.Millisecond {
		t.Errorf("mutating call took %v, want >= 90ms", d)
	}
}

func TestHangUntilClientGivesUp(t *testing.T) {
	srv := startToy(t)
	if err := srv.SetFault(cloudsim.FaultSpec{Op: "toy:get", HangNext: 1}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := call(t, ctx, srv, "get", "k", "")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want deadline exceeded, got %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("hung for %v", d)
	}
	// HangNext is used up: the next call is answered.
	if got := mustCall(t, srv, "get", "k", ""); got != 404 {
		t.Fatalf("after hang: %d", got)
	}
}

func TestCloseReleasesHungCalls(t *testing.T) {
	srv, err := cloudsim.Start(newToy())
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.SetFault(cloudsim.FaultSpec{Op: "*", Hang: true}); err != nil {
		t.Fatal(err)
	}
	result := make(chan int, 1)
	go func() {
		status, _ := call(t, context.Background(), srv, "get", "k", "")
		result <- status
	}()
	for srv.CallCount("*") == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	closed := make(chan struct{})
	go func() { _ = srv.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(3 * time.Second):
		t.Fatal("Close blocked on a hung call")
	}
	if got := <-result; got != 500 {
		t.Fatalf("hung call answered %d, want the cloud's 5xx", got)
	}
}

func TestAdminHTTP(t *testing.T) {
	srv := startToy(t)

	var health map[string]string
	if adminDo(t, srv, "GET", "/admin/health", "", &health) != 200 || health["cloud"] != "toy" {
		t.Fatalf("health: %v", health)
	}

	// Cloud-specific admin is mounted under /admin/<name>/.
	var seeded map[string]int
	if st := adminDo(t, srv, "POST", "/admin/toy/seed", `{"a":"1","b":"2"}`, &seeded); st != 200 || seeded["seeded"] != 2 {
		t.Fatalf("seed: %d %v", st, seeded)
	}
	var rs []cloudsim.Resource
	adminDo(t, srv, "GET", "/admin/resources", "", &rs)
	if len(rs) != 2 || rs[0].ID != "a" || rs[1].ID != "b" || rs[0].Kind != "key" {
		t.Fatalf("resources: %+v", rs)
	}
	adminDo(t, srv, "GET", "/admin/resources?kind=nothing", "", &rs)
	if len(rs) != 0 {
		t.Fatalf("kind filter: %+v", rs)
	}

	var faults []cloudsim.FaultSpec
	st := adminDo(t, srv, "POST", "/admin/faults",
		`[{"op":"toy:get","failNext":1},{"op":"mutating","latency":"20ms","ratePerSecond":100}]`, &faults)
	if st != 200 || len(faults) != 2 {
		t.Fatalf("post faults: %d %+v", st, faults)
	}
	// Listed sorted by op: "mutating" < "toy:get".
	if faults[0].Latency != 20*time.Millisecond || faults[0].Burst != 100 {
		t.Fatalf("spec round trip: %+v", faults[0])
	}
	if got := mustCall(t, srv, "get", "a", ""); got != 500 {
		t.Fatalf("fault from admin API not applied: %d", got)
	}
	if st := adminDo(t, srv, "POST", "/admin/faults", `{"op":"x","errorRate":2}`, nil); st != 400 {
		t.Fatalf("invalid spec accepted: %d", st)
	}
	adminDo(t, srv, "DELETE", "/admin/faults?op=toy:get", "", nil)
	adminDo(t, srv, "GET", "/admin/faults", "", &faults)
	if len(faults) != 1 || faults[0].Op != "mutating" {
		t.Fatalf("after delete one: %+v", faults)
	}
	adminDo(t, srv, "DELETE", "/admin/faults", "", nil)
	adminDo(t, srv, "GET", "/admin/faults", "", &faults)
	if len(faults) != 0 {
		t.Fatalf("after delete all: %+v", faults)
	}

	var calls map[string]int
	adminDo(t, srv, "GET", "/admin/calls", "", &calls)
	if calls["toy:get"] != 1 || len(calls) != 1 {
		t.Fatalf("calls: %v", calls)
	}
	if st := adminDo(t, srv, "POST", "/admin/calls/reset", "", nil); st != http.StatusNoContent {
		t.Fatalf("reset: %d", st)
	}
	calls = nil
	adminDo(t, srv, "GET", "/admin/calls", "", &calls)
	if len(calls) != 0 {
		t.Fatalf("calls after reset: %v", calls)
	}
	// Admin requests are never counted as API calls.
	if srv.CallCount("*") != 0 {
		t.Fatal("admin calls were counted")
	}
}

func TestDiffResources(t *testing.T) {
	before := []cloudsim.Resource{{Kind: "lb", ID: "1"}, {Kind: "lb", ID: "2"}}
	after := []cloudsim.Resource{{Kind: "lb", ID: "2"}, {Kind: "sg", ID: "1"}}
	added, removed := cloudsim.DiffResources(before, after)
	if len(added) != 1 || added[0].Kind != "sg" || len(removed) != 1 || removed[0].ID != "1" {
		t.Fatalf("added %v removed %v", added, removed)
	}
}

func TestFaultSpecValidation(t *testing.T) {
	for _, bad := range []cloudsim.FaultSpec{
		{},
		{Op: "*", ErrorRate: 1.5},
		{Op: "*", Latency: -1},
		{Op: "*", FailNext: -1},
		{Op: "*", RatePerSecond: -1},
	} {
		if bad.Validate() == nil {
			t.Errorf("%+v: want error", bad)
		}
	}
}

func TestConcurrentCallsWithFaults(t *testing.T) {
	srv := startToy(t)
	_ = srv.SetFault(cloudsim.FaultSpec{Op: "*", ErrorRate: 0.2, RatePerSecond: 1000, Latency: time.Millisecond})
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				key := fmt.Sprintf("k%d-%d", g, i)
				if _, err := call(t, context.Background(), srv, "put", key, "v"); err != nil {
					t.Error(err)
				}
				_, _ = call(t, context.Background(), srv, "get", key, "")
				_ = srv.Calls()
				_ = srv.Resources()
			}
		}(g)
	}
	wg.Wait()
	if n := srv.CallCount("*"); n != 8*20*2 {
		t.Fatalf("counted %d calls", n)
	}
}
