package ccmproc

import (
	"os"
	"testing"
	"time"
)

// TestCPUTime reads this very process's CPU time, after it has used some.
func TestCPUTime(t *testing.T) {
	start := time.Now()
	x := 0
	for time.Since(start) < 200*time.Millisecond {
		x++
	}
	got, err := CPUTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if got <= 0 || x == 0 {
		t.Errorf("CPU time %v after a busy loop", got)
	}
}
