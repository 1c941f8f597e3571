package aws

import (
	"sync"
	"testing"

	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

func TestZZStressRefresh(t *testing.T) {
	env := newTestEnv(t, nil)
	env.launch(t, cloudsimaws.LaunchSpec{Count: 50})
	for i := 0; i < 300; i++ {
		env.expire()
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if err := env.in.cache.fresh(t.Context()); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
}
