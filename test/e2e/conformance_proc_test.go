package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// sigkill kills a manager this test process started with SIGKILL, the way
// a node failure or the OOM killer ends it: no shutdown hooks run.
// ccmproc.Process only offers a graceful Stop and does not expose its pid,
// so the child is found in /proc by parent pid and its unique secure port.
func sigkill(p *ccmProcess) error {
	pid, err := childWithArg(fmt.Sprintf("--secure-port=%d", p.Port))
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill %d: %w", pid, err)
	}
	select {
	case <-p.Done():
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("process %d still running 10s after SIGKILL", pid)
	}
}

// childWithArg finds the direct child of this process whose command line
// has arg.
func childWithArg(arg string) (int, error) {
	self := os.Getpid()
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return 0, err
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue
		}
		// stat is "pid (comm) state ppid ..."; comm may hold spaces.
		rest := stat[bytes.LastIndexByte(stat, ')')+1:]
		fields := strings.Fields(string(rest))
		if len(fields) < 2 || fields[1] != strconv.Itoa(self) {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil {
			continue
		}
		for _, a := range bytes.Split(cmdline, []byte{0}) {
			if string(a) == arg {
				return pid, nil
			}
		}
	}
	return 0, fmt.Errorf("no child process of %d has %s", self, arg)
}

// envSeed reads CONFORMANCE_SEED, so a failed crash run can be replayed.
func envSeed() int64 {
	v, _ := strconv.ParseInt(os.Getenv("CONFORMANCE_SEED"), 10, 64)
	return v
}
