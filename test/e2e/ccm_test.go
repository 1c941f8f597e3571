package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/multicloud-ccm/multicloud-ccm/test/ccmproc"
)

// ccmProcess is one running multicloud-ccm with its output captured.
type ccmProcess struct {
	*ccmproc.Process
	name string
	log  *ccmproc.Output
	// cluster is the control plane it runs against.
	cluster *cluster
}

// writeFile writes content to a new file in the suite's temp dir.
func writeFile(t testing.TB, name, content string) string {
	t.Helper()
	path := filepath.Join(env.tmp, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// exited and stop keep the tests' short spellings.
func (p *ccmProcess) exited() bool { return p.Exited() }
func (p *ccmProcess) stop()        { p.Stop() }

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// healthz asks the secure port; the CCM serves a self-signed certificate.
func (p *ccmProcess) healthz() (int, string, error) { return p.get("/healthz", false) }

// get fetches a path from the secure port, as the cluster admin (client
// certificate, authenticated through delegated authentication) or
// anonymously.
func (p *ccmProcess) get(path string, asAdmin bool) (int, string, error) {
	tlsCfg := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // self-signed test server
	if asAdmin {
		cert, err := tls.X509KeyPair(p.cluster.cp.Admin.CertData, p.cluster.cp.Admin.KeyData)
		if err != nil {
			return 0, "", err
		}
		tlsCfg.Certificates = []tls.Certificate{cert}
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d%s", p.Port, path))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String(), nil
}

// leaseHolder returns the holder of the CCM's leader-election Lease.
func leaseHolder(ctx context.Context) (string, error) {
	l, err := env.admin.CoordinationV1().Leases("kube-system").Get(ctx, "cloud-controller-manager", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if l.Spec.HolderIdentity == nil {
		return "", nil
	}
	return *l.Spec.HolderIdentity, nil
}

// poll waits for cond, failing the test with what was last seen.
func poll(t testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) (bool, string, error)) {
	t.Helper()
	if last, err := waitFor(timeout, cond); err != nil {
		t.Fatalf("timed out after %v waiting for %s; last seen: %s", timeout, what, last)
	}
}

// waitFor polls cond every 250 ms until it holds or timeout passes, and
// returns what it last saw (or the last error cond returned).
func waitFor(timeout time.Duration, cond func(ctx context.Context) (bool, string, error)) (last string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		ok, seen, err := cond(ctx)
		last = seen
		if err != nil {
			last = err.Error()
		}
		return ok, nil
	})
	return last, err
}

// acquired reports whether the process logged winning the leader election.
func (p *ccmProcess) acquired() bool {
	return strings.Contains(strings.ToLower(p.log.String()), "successfully acquired lease")
}
