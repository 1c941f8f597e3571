package azure

import (
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
)

// TestBeforeNextMakesThe412: a write BeforeNext lands between a client's
// read and its If-Match write makes that write 412, once; Answers counts
// it, and the hook's own write (the same operation) is served as usual.
func TestBeforeNextMakesThe412(t *testing.T) {
	env := newTestEnv(t, Config{})
	f := env.emu.Fixture()
	pip := env.nwPublicIP(t, f.ResourceGroup, "pip", "")
	lb := env.nwPutLB(t, f.ResourceGroup, "lb", nwLB(f, nwLBID(f, "lb"), *pip.ID, "10.240.0.4"))
	lbs := env.network.NewLoadBalancersClient()
	const op = "network:LoadBalancers_CreateOrUpdate"
	ran := 0
	env.emu.BeforeNext(op, func() {
		ran++
		theirs, err := lbs.Get(nwCtx(t), f.ResourceGroup, "lb", nil)
		if err != nil {
			t.Error(err)
			return
		}
		theirs.Tags = map[string]*string{"owner": to.Ptr("operator")}
		// The hook runs on the server's goroutine: t.Error, not t.Fatal.
		p, err := lbs.BeginCreateOrUpdate(nwCtx(t), f.ResourceGroup, "lb", theirs.LoadBalancer, nil)
		if err == nil {
			_, err = p.PollUntilDone(nwCtx(t), nwPoll)
		}
		if err != nil {
			t.Error(err)
		}
	})
	lb.Properties.BackendAddressPools[0].Properties.LoadBalancerBackendAddresses = nil
	ifMatch := policy.WithHTTPHeader(nwCtx(t), http.Header{"If-Match": {deref(lb.Etag)}})
	_, err := lbs.BeginCreateOrUpdate(ifMatch, f.ResourceGroup, "lb", lb, nil)
	nwWantErr(t, err, http.StatusPreconditionFailed, "PreconditionFailed")
	if ran != 1 {
		t.Fatalf("the hook ran %d times, want 1", ran)
	}
	if n := env.emu.Answers(op, http.StatusPreconditionFailed); n != 1 {
		t.Errorf("%d 412 answers counted, want 1", n)
	}
	if n := env.emu.Answers(op, http.StatusOK) + env.emu.Answers(op, http.StatusCreated); n != 2 {
		t.Errorf("%d successful writes counted, want 2 (the load balancer's creation and the hook's)", n)
	}
	// Spent: the next write with the fresh ETag goes through.
	cur, err := lbs.Get(nwCtx(t), f.ResourceGroup, "lb", nil)
	if err != nil {
		t.Fatal(err)
	}
	if deref(cur.Tags["owner"]) != "operator" {
		t.Fatalf("the hook's write is not there: tags %v", cur.Tags)
	}
	ifMatch = policy.WithHTTPHeader(nwCtx(t), http.Header{"If-Match": {deref(cur.Etag)}})
	p, err := lbs.BeginCreateOrUpdate(ifMatch, f.ResourceGroup, "lb", cur.LoadBalancer, nil)
	nwDone(t, p, err)
	if ran != 1 || env.emu.Answers(op, http.StatusPreconditionFailed) != 1 {
		t.Errorf("after the hook was spent: ran %d, 412s %d", ran, env.emu.Answers(op, http.StatusPreconditionFailed))
	}
}
