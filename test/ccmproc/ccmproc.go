// Package ccmproc builds and runs the multicloud-ccm binary as a
// subprocess, the way deploy/ runs it in a cluster, for the e2e tests, the
// sandbox and the benchmarks, and describes Nodes as the kubelet registers
// them and as the CCM leaves them.
package ccmproc

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/multicloud-ccm/multicloud-ccm/test/controlplane"
)

// Build compiles ./cmd/multicloud-ccm into out with the given build tags
// ("" for the default build with every backend).
func Build(out, tags string, stdout io.Writer) error {
	root, err := controlplane.RepoRoot()
	if err != nil {
		return err
	}
	args := []string{"build", "-o", out}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	args = append(args, "./cmd/multicloud-ccm")
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, stdout, stdout
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %v: %w", args, err)
	}
	return nil
}

// Options describe one CCM process.
type Options struct {
	Binary      string
	CloudConfig string
	// Kubeconfig is used for the API and for delegated authentication and
	// authorization, as one ServiceAccount does in a cluster.
	Kubeconfig string
	// LeaderElect runs leader election on the default Lease.
	LeaderElect bool
	// Args are appended (and so override earlier flags).
	Args []string
	// Output receives stdout and stderr; nil discards them.
	Output io.Writer
	// Env are extra environment variables (KEY=value) on top of this
	// process's, e.g. the GOMEMLIMIT a container's memory limit implies.
	Env []string
	// Argv, when set, is run as it is instead of Binary with the CCM's
	// flags: a process that runs beside a CCM (the upstream Azure
	// cloud-node-manager) and takes none of them. Only Env and Output
	// apply then.
	Argv []string
}

// Process is a running CCM.
type Process struct {
	// Port is the secure port (/healthz, /metrics, /configz).
	Port int
	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	err  error
}

// Start runs the binary on a free loopback secure port. The process gets
// SIGKILL if the caller dies, so it never outlives a killed test.
func Start(o Options) (*Process, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := []string{
		"--cloud-config=" + o.CloudConfig,
		"--kubeconfig=" + o.Kubeconfig,
		"--authentication-kubeconfig=" + o.Kubeconfig,
		"--authorization-kubeconfig=" + o.Kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--leader-elect=" + strconv.FormatBool(o.LeaderElect),
		"--use-service-account-credentials=false",
		"--v=2",
	}
	cmd := exec.Command(o.Binary, append(args, o.Args...)...)
	if len(o.Argv) > 0 {
		cmd = exec.Command(o.Argv[0], o.Argv[1:]...)
	}
	if len(o.Env) > 0 {
		cmd.Env = append(os.Environ(), o.Env...)
	}
	if o.Output != nil {
		cmd.Stdout, cmd.Stderr = o.Output, o.Output
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{Port: port, cmd: cmd, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err is the exit error once the process has exited.
func (p *Process) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Stop sends SIGTERM and, if the process lingers, SIGKILL.
func (p *Process) Stop() {
	if p.Exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, errors.New("listener has no TCP address")
	}
	return addr.Port, nil
}

// Pid is the process ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// PeakRSS is the most resident memory the process has used so far
// (VmHWM), in bytes, read from /proc while it runs.
func (p *Process) PeakRSS() (int64, error) {
	return PeakRSS(p.Pid())
}

// PeakRSS reads VmHWM of a running process from /proc, in bytes.
func PeakRSS(pid int) (int64, error) { return procStatus(pid, "VmHWM") }

// FileRSS reads RssFile of a running process, in bytes: the resident pages
// of mapped files, mostly the executable's own code and data, which the
// kernel can drop and re-read at any time.
func FileRSS(pid int) (int64, error) { return procStatus(pid, "RssFile") }

// CPUTime is the user plus system CPU time a running process has used,
// from /proc/<pid>/stat (in clock ticks of 1/100 s, USER_HZ on Linux).
func CPUTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; the fields after it
	// start at the state (field 3), so utime (14) and stime (15) are
	// the 12th and 13th.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("parse /proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse /proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * (time.Second / 100), nil
}

// procStatus reads a kB field of /proc/<pid>/status, in bytes.
func procStatus(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse %s %q: %w", field, line, err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("no %s in /proc status", field)
}

// Kill ends the process with SIGKILL, the way a node failure or the OOM
// killer does (no shutdown hooks run), and waits for it to exit.
func (p *Process) Kill() error {
	if p.Exited() {
		return nil
	}
	if err := p.cmd.Process.Kill(); err != nil {
		return fmt.Errorf("kill %d: %w", p.Pid(), err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("process %d still running 10s after SIGKILL", p.Pid())
	}
}
