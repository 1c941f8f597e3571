package bench

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/multicloud-ccm/multicloud-ccm/test/ccmproc"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

// The self-healing windows: settle after a (re)start, so the service
// controller's first syncs of every Service are over before counting;
// measure long enough for a dozen listings at the short period.
const (
	healSettle      = 90 * time.Second
	healSteady      = 2 * time.Minute
	healWindow      = 3 * time.Minute
	healShortPeriod = 15 * time.Second
	// The product's defaults (controllers.NewOptions).
	defaultRepairPeriod = 5 * time.Minute
	defaultScanPeriod   = 30 * time.Minute
)

// BenchmarkSelfHealing: 200 LoadBalancer Services in steady state. The
// cloud calls one drift check or orphan scan costs (both listing every
// 15 s for three minutes, less the steady state's own calls measured with
// both off), and from that the calls per minute they cost at the default
// periods. Then, at the default period, the time from a load balancer
// deleted out of band to its repair.
func BenchmarkSelfHealing(b *testing.B) {
	singleCloud(b)
	for i := 0; i < b.N; i++ {
		off := []string{"--load-balancer-repair-period=0", "--orphan-scan-period=0"}
		w := newWorld(b, buildBinary(b), off...)
		base := slices.Clone(w.ccmOpts.Args[:len(w.ccmOpts.Args)-len(off)])
		const nodes, services = 20, 200
		names := w.launch(b, nodes)
		w.register(b, names)
		w.waitInitialized(b, nodes, 5*time.Minute)
		w.createServices(b, services)
		w.waitAddresses(b, services, 30*time.Minute)
		scenario := fmt.Sprintf("%d LB Services, %d nodes, steady (%s)", services, nodes, w.setLBLatency(b))

		// The steady state's own calls: both controllers off.
		time.Sleep(healSettle)
		calls := w.srv.CallCount("*")
		time.Sleep(healSteady)
		steady := float64(w.srv.CallCount("*")-calls) / healSteady.Minutes()
		record(b, scenario, "calls/min with drift checks and orphan scans off", fmt.Sprintf("%.1f", steady), "")

		// Both listing every 15 s.
		short := healShortPeriod.String()
		w.restart(b, append(slices.Clone(base), "--load-balancer-repair-period="+short, "--orphan-scan-period="+short))
		time.Sleep(healSettle)
		checks, scans := w.metricSum(b, "multicloud_ccm_lb_drift_checks_total"), w.metricSum(b, "multicloud_ccm_orphan_scans_total")
		w.srv.ResetCalls()
		time.Sleep(healWindow)
		byOp := w.srv.Calls()
		checks = w.metricSum(b, "multicloud_ccm_lb_drift_checks_total") - checks
		scans = w.metricSum(b, "multicloud_ccm_orphan_scans_total") - scans
		total := 0
		for _, n := range byOp {
			total += n
		}
		listings := checks + scans
		if listings == 0 {
			b.Fatalf("no drift check or orphan scan in %v at a %v period", healWindow, healShortPeriod)
		}
		perListing := max(0, float64(total)-steady*healWindow.Minutes()) / float64(listings)
		record(b, scenario, "cloud calls per listing (a drift check or an orphan scan)",
			fmt.Sprintf("%.1f (%d drift checks and %d orphan scans in %v: %s)", perListing, checks, scans, healWindow, callsByOp(byOp, func(string) bool { return true })), "")
		perMin := perListing * (time.Minute.Seconds()/defaultRepairPeriod.Seconds() + time.Minute.Seconds()/defaultScanPeriod.Seconds())
		record(b, scenario, "calls/min on drift checks and orphan scans at the default periods (5m, 30m)", fmt.Sprintf("%.2f", perMin), "< 10")

		// The default periods: a whole load balancer deleted out of band.
		w.restart(b, base)
		time.Sleep(healSettle)
		dm, ok := w.cloud.(conformance.DriftMaker)
		if !ok {
			b.Fatalf("the %s adapter cannot change a load balancer out of band (conformance.DriftMaker)", w.cloudName)
		}
		key := types.NamespacedName{Namespace: "default", Name: "svc-0007"}
		old := w.cloud.LoadBalancers(key)
		if len(old) != 1 {
			b.Fatalf("%s has %d load balancers before the deletion, want 1", key, len(old))
		}
		if err := dm.DeleteLoadBalancer(key); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		w.waitFor(b, 2*defaultRepairPeriod, func(ctx context.Context) (bool, string) {
			lbs := w.cloud.LoadBalancers(key)
			if len(lbs) != 1 || len(lbs[0].Backends) != nodes {
				return false, fmt.Sprintf("%+v", lbs)
			}
			svc, err := w.client.CoreV1().Services(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return len(svc.Status.LoadBalancer.Ingress) > 0, fmt.Sprint(svc.Status.LoadBalancer.Ingress)
		})
		record(b, scenario, fmt.Sprintf("time from a load balancer deleted out of band (%v after the manager started) to repaired, default period", healSettle),
			time.Since(start).Round(time.Second).String(), "within one period (5m, jittered by a tenth) and the ensure")
	}
}

// restart stops the manager and starts it again with args.
func (w *world) restart(b *testing.B, args []string) {
	b.Helper()
	w.ccm.Stop()
	w.ccmOpts.Args = args
	w.startCCM(b)
}

// metricSum adds up the manager's samples of a counter or gauge, read
// from /metrics as the manager's ServiceAccount.
func (w *world) metricSum(b *testing.B, name string) int {
	b.Helper()
	token, err := ccmproc.BearerToken(w.ccmOpts.Kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	var body string
	w.waitFor(b, time.Minute, func(ctx context.Context) (bool, string) {
		code, got, err := ccmproc.GetSecure(ctx, w.ccm.Port, "/metrics", token)
		if err != nil {
			return false, err.Error()
		}
		body = got
		return code == 200, fmt.Sprint("status ", code)
	})
	sum := 0
	for _, l := range strings.Split(body, "\n") {
		if !strings.HasPrefix(l, name+"{") && !strings.HasPrefix(l, name+" ") {
			continue
		}
		f := strings.Fields(l)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum += int(v)
		}
	}
	return sum
}
