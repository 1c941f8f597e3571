package aws

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
	v1 "k8s.io/api/core/v1"
	"k8s.io/cloud-provider/api"
	"k8s.io/utils/clock"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/nodes"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

var errCrash = errors.New("simulated crash")

// crashingAt returns a controller, with empty caches like a restarted one,
// whose process "dies" just before its k-th mutating call: that call and
// every later one fail without reaching the cloud.
func (e *lbEnv) crashingAt(k int32) *loadBalancers {
	var n atomic.Int32
	crash := func(stack *middleware.Stack) error {
		return stack.Serialize.Add(middleware.SerializeMiddlewareFunc("crash", func(ctx context.Context, in middleware.SerializeInput, next middleware.SerializeHandler) (middleware.SerializeOutput, middleware.Metadata, error) {
			if !strings.HasPrefix(awsmiddleware.GetOperationName(ctx), "Describe") && n.Add(1) >= k {
				return middleware.SerializeOutput{}, middleware.Metadata{}, errCrash
			}
			return next.HandleSerialize(ctx, in)
		}), middleware.Before)
	}
	return e.restarted(testClients(e.t, e.ctx, e.lb.cfg, crash))
}

// restarted is a new controller on api, sharing nothing in memory with e.lb.
func (e *lbEnv) restarted(api *clients) *loadBalancers {
	l := newLoadBalancers(api, e.lb.cfg, lbTestCluster, newInstances(api, e.lb.cfg, lbTestCluster, nodes.New(instanceIDFromProviderID), clock.RealClock{}), clock.RealClock{})
	return l
}

// shape summarises everything the Service owns, for comparing runs.
func (e *lbEnv) shape(svc *v1.Service) string {
	tagged := e.tagged(svc)
	var parts []string
	for _, kind := range []string{cloudsimaws.KindLoadBalancer, cloudsimaws.KindTargetGroup, cloudsimaws.KindListener, cloudsimaws.KindSecurityGroup} {
		var names []string
		for _, r := range tagged[kind] {
			names = append(names, r.Name)
		}
		slices.Sort(names)
		parts = append(parts, fmt.Sprintf("%s=%v", kind, names))
	}
	if len(tagged[cloudsimaws.KindLoadBalancer]) == 1 {
		v := e.view(svc)
		for name, ts := range v.targets {
			parts = append(parts, fmt.Sprintf("%s->%v", strings.TrimPrefix(name, targetGroupPrefix(lbTestCluster, svc)), ts))
		}
		parts = append(parts, fmt.Sprintf("ingress=%v", v.sgIngress()))
		for g, rules := range e.nodeRules(aws.ToString(v.sg.GroupId)) {
			parts = append(parts, fmt.Sprintf("%s<-%v", g, rules))
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, "\n")
}

// TestCrashAnywhereConverges crashes create, port change and delete before
// each of their mutating calls in turn, then re-runs the operation in a
// restarted controller: the result must be what an uninterrupted run
// gives, with no duplicate and nothing leaked.
func TestCrashAnywhereConverges(t *testing.T) {
	svc1 := func() *v1.Service {
		return lbService(nil, tcpPort(80, 30080), tcpPort(53, 30053), udpPort(53, 30053))
	}
	svc2 := func() *v1.Service {
		s := lbService(nil, tcpPort(443, 30443), tcpPort(53, 30053))
		s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
		s.Spec.HealthCheckNodePort = 32000
		return s
	}
	for _, ph := range crashPhases(svc1, svc2) {
		t.Run(ph.name, func(t *testing.T) {
			crashAtEachPoint(t, ph, func() *lbEnv { return newLBEnv(t) }, func(e *lbEnv) string { return e.shape(svc1()) }, nil)
		})
	}
}

// crashPhase is one step of a Service's life that a crash may interrupt.
type crashPhase struct {
	name  string
	setup func(e *lbEnv, nodes []*v1.Node) // brings the env to the phase's start
	run   func(l *loadBalancers, e *lbEnv, nodes []*v1.Node) error
	// svc is the Service deleted at the end of every run.
	svc func() *v1.Service
}

// crashPhases are create (svc1), a change to svc2, and delete.
func crashPhases(svc1, svc2 func() *v1.Service) []crashPhase {
	ensure := func(mk func() *v1.Service) func(l *loadBalancers, e *lbEnv, nodes []*v1.Node) error {
		return func(l *loadBalancers, e *lbEnv, nodes []*v1.Node) error {
			_, err := l.EnsureLoadBalancer(e.ctx, "kubernetes", mk(), nodes)
			return err
		}
	}
	return []crashPhase{
		{name: "create", setup: func(*lbEnv, []*v1.Node) {}, run: ensure(svc1), svc: svc1},
		{name: "ports change", setup: func(e *lbEnv, nodes []*v1.Node) { e.ensure(svc1(), nodes) }, run: ensure(svc2), svc: svc1},
		{name: "delete", setup: func(e *lbEnv, nodes []*v1.Node) { e.ensure(svc1(), nodes) }, run: func(l *loadBalancers, e *lbEnv, _ []*v1.Node) error {
			return l.EnsureLoadBalancerDeleted(e.ctx, "kubernetes", svc1())
		}, svc: svc1},
	}
}

// crashAtEachPoint runs ph uninterrupted in an env of newEnv's for the
// reference shape and the number of crash points (checkRef checks the
// reference, when given), then, for each mutating call, in a fresh env:
// crashed before that call, run again by a restarted controller, it must
// end in the reference shape, and deleting must leave nothing behind.
func crashAtEachPoint(t *testing.T, ph crashPhase, newEnv func() *lbEnv, shape func(*lbEnv) string, checkRef func(want string)) {
	t.Helper()
	ref := newEnv()
	nodes := ref.nodes(2)
	ph.setup(ref, nodes)
	ref.srv.ResetCalls()
	if err := ph.run(ref.restarted(ref.api), ref, nodes); err != nil {
		t.Fatal(err)
	}
	points := ref.srv.CallCount(cloudsim.MutatingOps)
	want := shape(ref)
	if points == 0 {
		t.Fatal("no mutating calls to crash at")
	}
	if checkRef != nil {
		checkRef(want)
	}
	for k := int32(1); k <= int32(points); k++ {
		e := newEnv()
		nodes := e.nodes(2)
		before := e.srv.Resources()
		ph.setup(e, nodes)
		if err := ph.run(e.crashingAt(k), e, nodes); !errors.Is(err, errCrash) {
			t.Fatalf("crash at mutating call %d: got %v", k, err)
		}
		if err := ph.run(e.restarted(e.api), e, nodes); err != nil {
			t.Fatalf("re-run after crash at mutating call %d: %v", k, err)
		}
		if got := shape(e); got != want {
			t.Errorf("after crash at mutating call %d:\n%s\nwant\n%s", k, got, want)
		}
		// Whatever happened, deleting leaves nothing behind.
		if err := e.lb.EnsureLoadBalancerDeleted(e.ctx, "kubernetes", ph.svc()); err != nil {
			t.Fatal(err)
		}
		if added, _ := cloudsim.DiffResources(before, e.srv.Resources()); len(added) != 0 {
			t.Errorf("crash at mutating call %d leaked %v", k, added)
		}
	}
	t.Logf("%s: converged after a crash at each of %d mutating calls", ph.name, points)
}

// TestFailedCreateListenerThenRetry is the service controller's own retry
// after a cloud error, with the emulator failing the call.
func TestFailedCreateListenerThenRetry(t *testing.T) {
	e := newLBEnv(t)
	nodes := e.nodes(2)
	svc := lbService(nil, tcpPort(80, 30080), tcpPort(443, 30443))
	if err := e.srv.SetFault(cloudsim.FaultSpec{Op: "elbv2:CreateListener", FailNext: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.lb.EnsureLoadBalancer(e.ctx, "kubernetes", svc, nodes); err == nil {
		t.Fatal("EnsureLoadBalancer succeeded despite the injected failure")
	}
	st := e.ensure(svc, nodes)
	v := e.view(svc)
	if st.Ingress[0].Hostname != aws.ToString(v.lb.DNSName) || len(v.listeners) != 2 {
		t.Errorf("status %v, listeners %v", st, v.listeners)
	}
	tagged := e.tagged(svc)
	if len(tagged[cloudsimaws.KindLoadBalancer]) != 1 || len(tagged[cloudsimaws.KindTargetGroup]) != 2 || len(tagged[cloudsimaws.KindSecurityGroup]) != 1 {
		t.Errorf("duplicates: %v", tagged)
	}
	for name, ts := range v.targets {
		if len(ts) != 2 {
			t.Errorf("%s targets %v", name, ts)
		}
	}
	e.srv.ResetCalls()
	e.ensure(svc, nodes)
	if m := e.mutations(); len(m) != 0 {
		t.Errorf("converged state still changes: %v", m)
	}
}

// TestDeleteWaitsForSecurityGroupRelease: while AWS still holds the
// security group, delete asks the service controller to come back later
// (an api.RetryError, without sleeping in its worker), and the retry
// finishes the job.
func TestDeleteWaitsForSecurityGroupRelease(t *testing.T) {
	e := newLBEnv(t)
	nodes := e.nodes(1)
	svc := lbService(nil)
	e.ensure(svc, nodes)
	sgID := aws.ToString(e.view(svc).sg.GroupId)
	// Something still uses the group, as the deleted NLB's interfaces do
	// for a while in AWS.
	blocker := e.nodes(1, e.fx.NodeSecurityGroupID, sgID)
	e.srv.ResetCalls()
	start := time.Now()
	err := e.lb.EnsureLoadBalancerDeleted(e.ctx, "kubernetes", svc)
	var retry *api.RetryError
	if !errors.As(err, &retry) || retry.RetryAfter() != sgReleaseRetry || !strings.Contains(err.Error(), sgID) {
		t.Fatalf("delete with the group in use: %v, want a RetryError after %s naming %s", err, sgReleaseRetry, sgID)
	}
	if n := e.srv.CallCount("ec2:DeleteSecurityGroup"); n != 1 {
		t.Errorf("%d DeleteSecurityGroup attempts, want 1: no waiting in the worker", n)
	}
	t.Logf("delete returned after %s", time.Since(start))
	if _, exists, err := e.lb.GetLoadBalancer(e.ctx, "kubernetes", svc); !exists || err != nil {
		t.Errorf("GetLoadBalancer must report the leftover group so cleanup is retried: %v %v", exists, err)
	}
	if err := e.emu.Terminate(nodeIDs(blocker)...); err != nil {
		t.Fatal(err)
	}
	if err := e.lb.EnsureLoadBalancerDeleted(e.ctx, "kubernetes", svc); err != nil {
		t.Fatal(err)
	}
	if tagged := e.tagged(svc); len(tagged) != 0 {
		t.Errorf("left behind: %v", tagged)
	}
	if !reflect.DeepEqual(e.nodeRules(sgID), map[string][]string{}) {
		t.Errorf("node rules left: %v", e.nodeRules(sgID))
	}
}
