package controlplane

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// watchOrphans starts a detached shell that waits for this process to exit
// and then kills (SIGKILL: a kube-apiserver whose etcd is gone can sit in
// graceful shutdown for minutes; these are throwaway test processes) every process whose command line mentions one of marks
// (the apiserver's cert dir, etcd's data dir: unique per control plane).
// After a clean Stop it finds nothing and simply exits.
func watchOrphans(marks ...string) {
	var pids []string
	for _, pid := range processesMentioning(marks) {
		pids = append(pids, strconv.Itoa(pid))
	}
	if len(pids) == 0 {
		return
	}
	// Re-check each command line before killing: after a clean Stop the
	// PIDs may have been reused by unrelated processes.
	var greps []string
	for _, m := range marks {
		if m != "" {
			greps = append(greps, "-e "+shellQuote(m))
		}
	}
	script := fmt.Sprintf("while kill -0 %d 2>/dev/null; do sleep 1; done; "+
		"for p in %s; do grep -qaF %s /proc/$p/cmdline 2>/dev/null && kill -9 $p; done; exit 0",
		os.Getpid(), strings.Join(pids, " "), strings.Join(greps, " "))
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err == nil {
		// Reap it if we outlive it; never wait for it otherwise.
		go func() { _ = cmd.Wait() }()
	}
}

// processesMentioning scans /proc for command lines containing any mark.
func processesMentioning(marks []string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || strings.HasPrefix(string(cmdline), "sh\x00-c\x00") {
			// Not ours, or a watchdog itself (its script names the marks).
			continue
		}
		for _, m := range marks {
			if m != "" && strings.Contains(string(cmdline), m) {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
