// Package controlplane starts a real etcd and kube-apiserver for tests and
// the sandbox. The binaries are built from the Go module proxy at the
// versions pinned in tools/*/go.mod (see build.sh) and cached under bin/.
// controller-runtime's envtest drives the processes: it provisions serving
// certificates, an admin user (client certificate, system:masters), the
// service-account signing keys TokenRequest needs, and enforces RBAC.
package controlplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// ControlPlane is a running etcd + kube-apiserver pair.
type ControlPlane struct {
	env *envtest.Environment
	// Admin is a rest.Config for a cluster-admin (system:masters) user.
	Admin *rest.Config
	// AdminClient is a clientset for Admin.
	AdminClient kubernetes.Interface
	// Dir holds files this control plane wrote (kubeconfigs); removed on Stop.
	Dir string
}

var setLoggerOnce sync.Once

// Options tune Start. The zero value is fine for tests.
type Options struct {
	// Output receives the processes' logs; nil discards them.
	Output io.Writer
	// ExtraAPIServerArgs are set on kube-apiserver (name -> value).
	ExtraAPIServerArgs map[string]string
}

// RepoRoot finds the repository root from the working directory, so tests in
// any package and the sandbox agree on where bin/ is.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
			bytes.Contains(data, []byte("module github.com/multicloud-ccm/multicloud-ccm\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repository root (go.mod of github.com/multicloud-ccm/multicloud-ccm) not found above the working directory")
		}
		dir = parent
	}
}

// EnsureBinaries returns the paths of kube-apiserver and etcd, building them
// with build.sh when missing. A cold build takes minutes; build.sh prints
// progress to w.
func EnsureBinaries(w io.Writer) (apiserver, etcd string, err error) {
	paths, err := RunBuildScript("test/controlplane/build.sh", 2, w)
	if err != nil {
		return "", "", err
	}
	return paths[0], paths[1], nil
}

// RunBuildScript runs a build script of the repository (its path relative
// to the root) that builds tools into bin/ when missing, prints progress
// to w and the paths of the n binaries on stdout, and returns those paths.
func RunBuildScript(script string, n int, w io.Writer) ([]string, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("bash", filepath.Join(root, script))
	cmd.Dir = root
	if w == nil {
		w = io.Discard
	}
	cmd.Stderr = w
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("build (%s): %w", script, err)
	}
	paths := strings.Fields(string(out))
	if len(paths) != n {
		return nil, fmt.Errorf("%s printed %q, want %d paths", script, out, n)
	}
	return paths, nil
}

// Start builds (if needed) and starts etcd and kube-apiserver on free
// loopback ports, waits until the default namespace exists, and returns a
// handle whose Stop ends both processes.
func Start(opts Options) (*ControlPlane, error) {
	// envtest logs through controller-runtime's logger, which otherwise
	// prints a stack trace complaining that it was never set.
	setLoggerOnce.Do(func() { ctrllog.SetLogger(klog.Background()) })
	apiserverPath, etcdPath, err := EnsureBinaries(os.Stderr)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "mccm-controlplane-")
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	env.ControlPlane.Etcd = &envtest.Etcd{Path: etcdPath, Out: opts.Output, Err: opts.Output}
	api := &envtest.APIServer{Path: apiserverPath, Out: opts.Output, Err: opts.Output}
	args := api.Configure()
	args.Set("bind-address", "127.0.0.1")
	// Node is what a real cluster runs beside RBAC; the CCM's permissions
	// come from RBAC alone either way.
	args.Set("authorization-mode", "Node,RBAC")
	// envtest's default /24 holds 254 Services; the benchmarks create
	// a thousand.
	args.Set("service-cluster-ip-range", "10.96.0.0/16")
	for k, v := range opts.ExtraAPIServerArgs {
		args.Set(k, v)
	}
	env.ControlPlane.APIServer = api
	if opts.Output != nil {
		env.AttachControlPlaneOutput = true
	}

	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start etcd + kube-apiserver: %w", err)
	}
	// envtest stops the processes in Stop, but a test binary that is killed
	// or times out never gets there; a detached watchdog ends them when
	// this process is gone.
	watchOrphans(env.ControlPlane.APIServer.CertDir, env.ControlPlane.Etcd.DataDir)

	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		_ = env.Stop()
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return &ControlPlane{env: env, Admin: cfg, AdminClient: client, Dir: dir}, nil
}

// Stop ends kube-apiserver and etcd and removes their data. It is safe to
// call more than once.
func (cp *ControlPlane) Stop() error {
	if cp == nil || cp.env == nil {
		return nil
	}
	err := cp.env.Stop()
	cp.env = nil
	_ = os.RemoveAll(cp.Dir)
	return err
}

// ServiceAccountConfig returns a rest.Config that authenticates as the
// ServiceAccount namespace/name with a bound token from the TokenRequest
// API, creating the ServiceAccount if it does not exist. It carries no
// client certificate, so RBAC bindings alone decide what it may do.
func (cp *ControlPlane) ServiceAccountConfig(ctx context.Context, namespace, name string, ttl time.Duration) (*rest.Config, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if _, err := cp.AdminClient.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create serviceaccount %s/%s: %w", namespace, name, err)
	}
	seconds := int64(ttl / time.Second)
	tr, err := cp.AdminClient.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token request for %s/%s: %w", namespace, name, err)
	}
	return &rest.Config{
		Host:            cp.Admin.Host,
		BearerToken:     tr.Status.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: cp.Admin.CAData},
	}, nil
}

// WriteKubeconfig writes cfg as a kubeconfig file (for a subprocess or a
// person's kubectl) and returns its path. name is the file's base name in
// cp.Dir unless it is an absolute path.
func (cp *ControlPlane) WriteKubeconfig(cfg *rest.Config, name string) (string, error) {
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(cp.Dir, name)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["user"] = &clientcmdapi.AuthInfo{
		Token:                 cfg.BearerToken,
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
	}
	kc.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "user"}
	kc.CurrentContext = "local"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return "", fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return path, nil
}
