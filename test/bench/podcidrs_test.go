package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/multicloud-ccm/multicloud-ccm/test/ccmproc"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

// BenchmarkPodCIDRs: 1000 Nodes registered at once with the cloud
// allocator on (controllers/nodeipam, the flags the cloud's users run it
// with): the time until all are initialized (as BenchmarkNodes, beside
// it) and until all have their pod CIDRs, and the cloud calls of both.
// The allocator's answers come from the backend's instance snapshot, so
// it should add no read per Node.
func BenchmarkPodCIDRs(b *testing.B) {
	singleCloud(b)
	for i := 0; i < b.N; i++ {
		w := newWorld(b, buildBinary(b))
		pc, ok := w.cloud.(conformance.PodCIDRCloud)
		if !ok {
			b.Skipf("%s has no cloud allocator", w.cloudName)
		}
		w.ccm.Stop()
		w.ccmOpts.Args = append(w.ccmOpts.Args, pc.PodCIDRArgs()...)
		w.startCCM(b)
		if err := w.srv.SetFault(cloudsim.FaultSpec{Op: "*", Latency: readDelay}); err != nil {
			b.Fatal(err)
		}
		zones := w.cloud.Zones()
		var names []string
		for k := range 1000 {
			inst, _, err := pc.LaunchPodCIDRs(conformance.InstanceSpec{Zone: zones[k%len(zones)]}, conformance.PodCIDRsDefault)
			if err != nil {
				b.Fatal(err)
			}
			names = append(names, inst.NodeName)
			w.ids[inst.NodeName] = inst.ID
		}
		w.srv.ResetCalls()
		start := time.Now()
		w.register(b, names)
		var initialized time.Duration
		w.waitFor(b, 10*time.Minute, func(ctx context.Context) (bool, string) {
			list, err := w.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
			if err != nil {
				return false, err.Error()
			}
			inited, cidrs := 0, 0
			for _, n := range list.Items {
				if ccmproc.Initialized(&n) {
					inited++
				}
				if len(n.Spec.PodCIDRs) > 0 {
					cidrs++
				}
			}
			if initialized == 0 && inited >= len(names) {
				initialized = time.Since(start)
			}
			return cidrs >= len(names), fmt.Sprintf("%d/%d initialized, %d/%d with pod CIDRs", inited, len(names), cidrs, len(names))
		})
		elapsed := time.Since(start)
		scenario := "1000 Nodes registered at once with the cloud allocator (50 ms/call)"
		record(b, scenario, "time until all initialized", initialized.Round(100*time.Millisecond).String(), "")
		record(b, scenario, "time until all have pod CIDRs", elapsed.Round(100*time.Millisecond).String(), "<= 30s")
		record(b, scenario, "read calls by operation", callsByOp(w.srv.Calls(), func(op string) bool { return !w.mutating(op) }), "as node initialization alone")
		record(b, scenario, "all cloud read calls", fmt.Sprint(w.reads()), "<= 15")
		record(b, scenario, "write calls by operation", callsByOp(w.srv.Calls(), w.mutating), "none")
		b.ReportMetric(elapsed.Seconds(), "s-podcidrs-1000")
	}
}
