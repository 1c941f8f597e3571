package aws

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// update runs UpdateLoadBalancer on l, failing the test on error.
func (e *lbEnv) update(l *loadBalancers, svc *v1.Service, nodes []*v1.Node) {
	e.t.Helper()
	if err := l.UpdateLoadBalancer(e.ctx, "kubernetes", svc, nodes); err != nil {
		e.t.Fatalf("UpdateLoadBalancer: %v", err)
	}
}

// warm loads the nodes' instances into l's instance cache, so call counts
// show only what the load balancer code itself costs.
func (e *lbEnv) warm(l *loadBalancers, nodes []*v1.Node) {
	e.t.Helper()
	if _, err := l.in.byIDs(e.ctx, nodeIDs(nodes)); err != nil {
		e.t.Fatal(err)
	}
}

// calls is every call since the last reset, by operation.
func (e *lbEnv) calls() map[string]int {
	out := map[string]int{}
	for op, n := range e.srv.Calls() {
		if n > 0 {
			out[op] = n
		}
	}
	return out
}

// checkTargets asserts that every target group of svc's NLB has exactly
// nodes registered, on the NodePort of its listener.
func (e *lbEnv) checkTargets(svc *v1.Service, nodes []*v1.Node) {
	e.t.Helper()
	v := e.view(svc)
	if len(v.tgs) != len(svc.Spec.Ports) {
		e.t.Errorf("%d target groups, want %d", len(v.tgs), len(svc.Spec.Ports))
	}
	for _, tg := range v.tgs {
		want := targetsOf(nodeIDs(nodes), aws.ToInt32(tg.Port))
		if got := v.targets[aws.ToString(tg.TargetGroupName)]; !reflect.DeepEqual(got, want) {
			e.t.Errorf("%s targets %v, want %v", aws.ToString(tg.TargetGroupName), got, want)
		}
	}
}

// fakeClock puts all of l's caches and records on one fake clock.
func fakeClock(l *loadBalancers) *clocktesting.FakeClock {
	c := clocktesting.NewFakeClock(time.Now())
	l.setClock(c)
	return c
}

func TestUpdateWithRecordCostsOnlyTargetCalls(t *testing.T) {
	e := newLBEnv(t)
	nodes := e.nodes(3)
	svc := lbService(nil, tcpPort(80, 30080))
	e.ensure(svc, nodes)
	if n := e.lb.records.Len(); n != 1 {
		t.Fatalf("%d records after ensure, want 1", n)
	}

	// One node joins.
	added := append(slices.Clone(nodes), e.nodes(1)...)
	e.warm(e.lb, added)
	e.srv.ResetCalls()
	e.update(e.lb, svc, added)
	t.Logf("node added (update with record): %s", e.callSummary())
	if got, want := e.calls(), map[string]int{"elbv2:RegisterTargets": 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
	e.checkTargets(svc, added)

	// One node leaves.
	e.srv.ResetCalls()
	e.update(e.lb, svc, added[1:])
	if got, want := e.calls(), map[string]int{"elbv2:DeregisterTargets": 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("node removed: calls %v, want %v", got, want)
	}
	e.checkTargets(svc, added[1:])

	// The same node set again costs nothing.
	e.srv.ResetCalls()
	e.update(e.lb, svc, added[1:])
	if got := e.calls(); len(got) != 0 {
		t.Errorf("unchanged nodes: calls %v", got)
	}

	// Two ports, a node swapped: one Register and one Deregister each.
	svc2 := lbService(nil, tcpPort(80, 31080), tcpPort(443, 31443))
	svc2.Name = "two-ports"
	e.ensure(svc2, nodes)
	swapped := append(slices.Clone(nodes[1:]), e.nodes(1)...)
	e.warm(e.lb, swapped)
	e.srv.ResetCalls()
	e.update(e.lb, svc2, swapped)
	if got, want := e.calls(), map[string]int{"elbv2:RegisterTargets": 2, "elbv2:DeregisterTargets": 2}; !reflect.DeepEqual(got, want) {
		t.Errorf("node swapped, two ports: calls %v, want %v", got, want)
	}
	e.checkTargets(svc2, swapped)

	// Without a record (a restarted controller) the same change reads the
	// load balancer, its tags, target groups and targets first.
	fresh := e.restarted(e.api)
	back := append(slices.Clone(swapped), nodes[0])
	e.warm(fresh, back)
	e.srv.ResetCalls()
	e.update(fresh, svc2, back)
	t.Logf("node added, two ports (update without record): %s", e.callSummary())
	for _, op := range []string{"elbv2:DescribeLoadBalancers", "elbv2:DescribeTags", "elbv2:DescribeTargetGroups"} {
		if e.srv.CallCount(op) != 1 {
			t.Errorf("without a record: %d %s, want 1", e.srv.CallCount(op), op)
		}
	}
	if n := e.srv.CallCount("elbv2:DescribeTargetHealth"); n != 2 {
		t.Errorf("without a record: %d DescribeTargetHealth, want 2", n)
	}
	e.checkTargets(svc2, back)
}

func TestUpdateFallsBackWhenTargetGroupIsGone(t *testing.T) {
	e := newLBEnv(t)
	nodes := e.nodes(2)
	svc := lbService(nil, tcpPort(80, 30080))
	e.ensure(svc, nodes)
	deleteBehindOurBack := func(t *testing.T) {
		t.Helper()
		v := e.view(svc)
		li, ok := v.listeners[80]
		if !ok {
			t.Fatal("no listener on port 80 to delete")
		}
		if _, err := e.api.elbv2.DeleteListener(e.ctx, &elbv2.DeleteListenerInput{ListenerArn: li.ListenerArn}); err != nil {
			t.Fatal(err)
		}
		for arn := range v.tgs {
			if _, err := e.api.elbv2.DeleteTargetGroup(e.ctx, &elbv2.DeleteTargetGroupInput{TargetGroupArn: aws.String(arn)}); err != nil {
				t.Fatal(err)
			}
		}
	}

	t.Run("replaced by another replica", func(t *testing.T) {
		// Someone deletes the listener and target group; another
		// controller (an old leader) re-creates them under a new ARN.
		deleteBehindOurBack(t)
		if _, err := e.restarted(e.api).EnsureLoadBalancer(e.ctx, "kubernetes", svc, nodes); err != nil {
			t.Fatal(err)
		}
		more := append(slices.Clone(nodes), e.nodes(1)...)
		e.warm(e.lb, more)
		e.srv.ResetCalls()
		e.update(e.lb, svc, more)
		t.Logf("stale record, fallback: %s", e.callSummary())
		// The recorded target group's RegisterTargets fails, then the full
		// path reads and registers with the new one, in the same call.
		if n := e.srv.CallCount("elbv2:RegisterTargets"); n != 2 {
			t.Errorf("%d RegisterTargets, want 2 (the stale one and the repair)", n)
		}
		if n := e.srv.CallCount("elbv2:DescribeLoadBalancers"); n != 1 {
			t.Errorf("%d DescribeLoadBalancers, want 1 (the full path)", n)
		}
		e.checkTargets(svc, more)
		nodes = more

		// The full path left a record of the new target group.
		less := nodes[1:]
		e.srv.ResetCalls()
		e.update(e.lb, svc, less)
		if got, want := e.calls(), map[string]int{"elbv2:DeregisterTargets": 1}; !reflect.DeepEqual(got, want) {
			t.Errorf("after the fallback: calls %v, want %v", got, want)
		}
		e.checkTargets(svc, less)
		nodes = less
	})

	t.Run("gone for good", func(t *testing.T) {
		// Only EnsureLoadBalancer re-creates target groups. Update falls
		// back, finds the target group missing, and keeps no record.
		deleteBehindOurBack(t)
		more := append(slices.Clone(nodes), e.nodes(1)...)
		e.warm(e.lb, more)
		e.srv.ResetCalls()
		e.update(e.lb, svc, more)
		if n := e.srv.CallCount("elbv2:DescribeLoadBalancers"); n != 1 {
			t.Errorf("%d DescribeLoadBalancers, want 1 (the full path)", n)
		}
		if n := e.lb.records.Len(); n != 0 {
			t.Errorf("%d records kept for an incomplete load balancer", n)
		}
		e.ensure(svc, more)
		e.checkTargets(svc, more)
		e.srv.ResetCalls()
		e.update(e.lb, svc, more[1:])
		if got, want := e.calls(), map[string]int{"elbv2:DeregisterTargets": 1}; !reflect.DeepEqual(got, want) {
			t.Errorf("after the repair: calls %v, want %v", got, want)
		}
		e.checkTargets(svc, more[1:])
	})
}

func TestUpdateWithExpiredRecordReadsEverything(t *testing.T) {
	e := newLBEnv(t)
	clk := fakeClock(e.lb)
	nodes := e.nodes(3)
	svc := lbService(nil, tcpPort(80, 30080))
	e.ensure(svc, nodes)
	e.warm(e.lb, nodes)

	// Drift: a target deregistered by hand.
	tgARN := ""
	for arn := range e.view(svc).tgs {
		tgARN = arn
	}
	ids := nodeIDs(nodes)
	if _, err := e.api.elbv2.DeregisterTargets(e.ctx, &elbv2.DeregisterTargetsInput{TargetGroupArn: aws.String(tgARN),
		Targets: []elbv2types.TargetDescription{{Id: aws.String(ids[0]), Port: aws.Int32(30080)}}}); err != nil {
		t.Fatal(err)
	}

	// Within the record's age an update trusts it.
	clk.SetTime(clk.Now().Add(lbRecordTTL - time.Minute))
	e.srv.ResetCalls()
	e.update(e.lb, svc, nodes)
	if got := e.calls(); len(got) != 0 {
		t.Errorf("fresh record, unchanged nodes: calls %v", got)
	}

	// Past it, the update reads everything and repairs the drift.
	clk.SetTime(clk.Now().Add(2 * time.Minute))
	e.srv.ResetCalls()
	e.update(e.lb, svc, nodes)
	t.Logf("expired record: %s", e.callSummary())
	for _, op := range []string{"elbv2:DescribeLoadBalancers", "elbv2:DescribeTargetGroups", "elbv2:DescribeTargetHealth"} {
		if e.srv.CallCount(op) != 1 {
			t.Errorf("expired record: %d %s, want 1", e.srv.CallCount(op), op)
		}
	}
	if got, want := e.mutations(), map[string]int{"elbv2:RegisterTargets": 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("expired record: mutations %v, want %v", got, want)
	}
	e.checkTargets(svc, nodes)

	// The full read left a fresh record.
	e.srv.ResetCalls()
	e.update(e.lb, svc, nodes[1:])
	if got, want := e.calls(), map[string]int{"elbv2:DeregisterTargets": 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("renewed record: calls %v, want %v", got, want)
	}

	// Updates that use a record don't make it younger: churn can't keep
	// the full path away past the record's age.
	clk.SetTime(clk.Now().Add(lbRecordTTL - time.Minute))
	e.update(e.lb, svc, nodes)
	clk.SetTime(clk.Now().Add(2 * time.Minute))
	e.srv.ResetCalls()
	e.update(e.lb, svc, nodes)
	if n := e.srv.CallCount("elbv2:DescribeLoadBalancers"); n != 1 {
		t.Errorf("record kept young by updates: %d DescribeLoadBalancers, want 1", n)
	}
	e.checkTargets(svc, nodes)
}

func TestUpdateAfterRestart(t *testing.T) {
	e := newLBEnv(t)
	nodes := e.nodes(3)
	svc := lbService(nil, tcpPort(80, 30080), udpPort(53, 30053))
	e.ensure(svc, nodes)

	// A node was swapped while the controller was down.
	l := e.restarted(e.api)
	next := append(slices.Clone(nodes[1:]), e.nodes(1)...)
	e.srv.ResetCalls()
	e.update(l, svc, next)
	t.Logf("after restart: %s", e.callSummary())
	if n := e.srv.CallCount("elbv2:DescribeLoadBalancers"); n != 1 {
		t.Errorf("%d DescribeLoadBalancers, want 1 (the full path)", n)
	}
	if got, want := e.mutations(), map[string]int{"elbv2:RegisterTargets": 2, "elbv2:DeregisterTargets": 2}; !reflect.DeepEqual(got, want) {
		t.Errorf("mutations %v, want %v", got, want)
	}
	e.checkTargets(svc, next)

	// From then on the restarted controller has its record.
	more := append(slices.Clone(next), e.nodes(1)...)
	e.warm(l, more)
	e.srv.ResetCalls()
	e.update(l, svc, more)
	if got, want := e.calls(), map[string]int{"elbv2:RegisterTargets": 2}; !reflect.DeepEqual(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
	e.checkTargets(svc, more)
}

func TestUpdateRecordDroppedOnError(t *testing.T) {
	e := newLBEnv(t)
	nodes := e.nodes(2)
	svc := lbService(nil, tcpPort(80, 30080))
	e.ensure(svc, nodes)
	more := append(slices.Clone(nodes), e.nodes(1)...)
	e.warm(e.lb, more)

	// Any other error goes back to the controller, and the record with it:
	// the call may have done its work after all.
	if err := e.srv.SetFault(cloudsim.FaultSpec{Op: "elbv2:RegisterTargets", FailNext: 1}); err != nil {
		t.Fatal(err)
	}
	e.srv.ResetCalls()
	if err := e.lb.UpdateLoadBalancer(e.ctx, "kubernetes", svc, more); err == nil {
		t.Fatal("UpdateLoadBalancer succeeded despite the injected failure")
	}
	if got, want := e.calls(), map[string]int{"elbv2:RegisterTargets": 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("failed update: calls %v, want %v (no fallback)", got, want)
	}
	if n := e.lb.records.Len(); n != 0 {
		t.Errorf("%d records kept after a failure", n)
	}
	// The controller's retry reads everything.
	e.srv.ResetCalls()
	e.update(e.lb, svc, more)
	if n := e.srv.CallCount("elbv2:DescribeLoadBalancers"); n != 1 {
		t.Errorf("retry: %d DescribeLoadBalancers, want 1", n)
	}
	e.checkTargets(svc, more)

	// A Service whose ports changed before EnsureLoadBalancer ran doesn't
	// match its record: the full path, as before records.
	changed := svc.DeepCopy()
	changed.Spec.Ports = []v1.ServicePort{tcpPort(80, 31080)}
	e.srv.ResetCalls()
	e.update(e.lb, changed, more)
	if n := e.srv.CallCount("elbv2:DescribeLoadBalancers"); n != 1 {
		t.Errorf("changed NodePort: %d DescribeLoadBalancers, want 1", n)
	}

	// Deleting drops the record.
	e.ensure(svc, more)
	if err := e.lb.EnsureLoadBalancerDeleted(e.ctx, "kubernetes", svc); err != nil {
		t.Fatal(err)
	}
	if n := e.lb.records.Len(); n != 0 {
		t.Errorf("%d records after delete", n)
	}
	if err := e.lb.UpdateLoadBalancer(e.ctx, "kubernetes", svc, more); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("update after delete: %v, want not found", err)
	}
}

// TestUpdateConcurrentServices runs the service controller's node sync:
// many Services updated at once by several workers, each with its record.
func TestUpdateConcurrentServices(t *testing.T) {
	e := newLBEnv(t)
	nodes := e.nodes(3)
	var svcs []*v1.Service
	for i := range 12 {
		svc := lbService(nil, tcpPort(80, int32(30000+i)))
		svc.Name = fmt.Sprintf("svc-%d", i)
		e.ensure(svc, nodes)
		svcs = append(svcs, svc)
	}
	more := append(slices.Clone(nodes), e.nodes(1)...)
	e.warm(e.lb, more)
	e.srv.ResetCalls()
	var wg sync.WaitGroup
	errs := make(chan error, len(svcs))
	work := make(chan *v1.Service)
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for svc := range work {
				if err := e.lb.UpdateLoadBalancer(e.ctx, "kubernetes", svc, more); err != nil {
					errs <- err
				}
			}
		}()
	}
	for _, svc := range svcs {
		work <- svc
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got, want := e.calls(), map[string]int{"elbv2:RegisterTargets": len(svcs)}; !reflect.DeepEqual(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
	for _, svc := range svcs {
		e.checkTargets(svc, more)
	}
}

// Records of Services targeting the same instances share one copy of the
// set, and the set round-trips, stray ports included.
func TestTargetSetsAreSharedAndExact(t *testing.T) {
	m := map[target]bool{{"i-2", 30080}: true, {"i-1", 30080}: true, {"i-9", 31000}: true}
	a := newTargetSet(30080, m)
	if got := a.targets(); !reflect.DeepEqual(got, m) {
		t.Fatalf("round trip = %v, want %v", got, m)
	}
	b := newTargetSet(30443, map[target]bool{{"i-1", 30443}: true, {"i-2", 30443}: true})
	if a.ids != b.ids {
		t.Error("equal instance sets on different node ports are stored twice")
	}
	if empty := newTargetSet(1, nil); len(empty.targets()) != 0 {
		t.Errorf("empty set expands to %v", empty.targets())
	}
}
