package aws

import (
	"fmt"
	"sync"
	"testing"
)

// TestConcurrentCreatesShareSubnetDiscovery: Services created together
// (the service controller runs 10 workers) cost one DescribeSubnets.
func TestConcurrentCreatesShareSubnetDiscovery(t *testing.T) {
	e := newLBEnv(t)
	nodes := e.nodes(2)
	e.srv.ResetCalls()
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			svc := lbService(nil)
			svc.Name = fmt.Sprintf("web-%d", i)
			if _, err := e.lb.EnsureLoadBalancer(e.ctx, "kubernetes", svc, nodes); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := e.srv.CallCount("ec2:DescribeSubnets"); n != 1 {
		t.Errorf("DescribeSubnets calls = %d, want 1", n)
	}
}
