package sandbox

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/multicloud-ccm/multicloud-ccm/test/controlplane"
)

// metricsAccess sets up what an operator's scraper needs to read the
// manager's /metrics: a ServiceAccount allowed to GET the /metrics
// non-resource URL (the manager authorizes callers through the cluster,
// delegated as deploy/rbac-auth-delegation.yaml allows), and a kubeconfig
// holding its bearer token. It returns the kubeconfig's path.
func metricsAccess(ctx context.Context, cp *controlplane.ControlPlane, path string) (string, error) {
	rbac := cp.AdminClient.RbacV1()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "multicloud-ccm:" + metricsReader},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}
	if _, err := rbac.ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("create clusterrole %s: %w", role.Name, err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "kube-system", Name: metricsReader}},
	}
	if _, err := rbac.ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("create clusterrolebinding %s: %w", binding.Name, err)
	}
	cfg, err := cp.ServiceAccountConfig(ctx, "kube-system", metricsReader, 24*time.Hour)
	if err != nil {
		return "", err
	}
	return cp.WriteKubeconfig(cfg, path)
}

// reportMetrics prints the manager's secure port and a curl line that
// scrapes /metrics with the kubeconfig's bearer token, after trying that
// very request, so the line printed is known to work. With byProvider
// (a hybrid cluster) it also prints the cloud API attempts the scrape
// counted for each cloud, from the series' provider label.
func reportMetrics(out io.Writer, port int, kubeconfig string, byProvider bool) error {
	kc, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return err
	}
	var token string
	for _, u := range kc.AuthInfos {
		token = u.Token
	}
	url := fmt.Sprintf("https://127.0.0.1:%d/metrics", port)
	// RBAC changes reach the manager's delegated authorizer within its
	// cache lifetime (10 s); retry that long before calling it broken.
	var status, samples int
	var attempts map[string]float64
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, samples, attempts, err = scrape(url, token)
		if err == nil && status == http.StatusOK || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	if err != nil {
		return fmt.Errorf("scrape %s: %w", url, err)
	}
	if status != http.StatusOK {
		return fmt.Errorf("scrape %s: HTTP %d", url, status)
	}
	fmt.Fprintf(out, "\nMetrics\n  secure port: %d (/healthz, /metrics, /configz; self-signed certificate)\n", port)
	fmt.Fprintf(out, "  /metrics answered HTTP %d with %d samples to ServiceAccount kube-system/%s\n", status, samples, metricsReader)
	if byProvider {
		var per []string
		for _, p := range slices.Sorted(maps.Keys(attempts)) {
			per = append(per, fmt.Sprintf("%s %.0f", p, attempts[p]))
		}
		fmt.Fprintf(out, "  cloud API attempts by provider (%s): %s\n", requestsSeries, strings.Join(per, ", "))
	}
	fmt.Fprintf(out, "  scrape it: curl -sk -H \"Authorization: Bearer $(awk '/token:/{print $2}' %s)\" %s\n", kubeconfig, url)
	return nil
}

// requestsSeries counts the manager's cloud API attempts; its provider
// label names the cloud (docs/guides/monitoring.md).
const requestsSeries = "multicloud_ccm_cloud_api_requests_total"

// scrape GETs /metrics and counts its samples, and sums requestsSeries by
// provider.
func scrape(url, token string) (status, samples int, attempts map[string]float64, err error) {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the manager's self-signed serving certificate
	}}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, nil, err
	}
	defer resp.Body.Close()
	attempts = map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		samples++
		if p, v, ok := providerSample(line, requestsSeries); ok {
			attempts[p] += v
		}
	}
	return resp.StatusCode, samples, attempts, sc.Err()
}

// providerSample is the provider label and value of a sample line of
// series, as `series{...,provider="aws",...} 12`.
func providerSample(line, series string) (provider string, value float64, ok bool) {
	rest, found := strings.CutPrefix(line, series+"{")
	if !found {
		return "", 0, false
	}
	labels, val, found := strings.Cut(rest, "} ")
	if !found {
		return "", 0, false
	}
	// The label itself, not one whose name ends in "provider".
	_, after, found := strings.Cut(","+labels, `,provider="`)
	if !found {
		return "", 0, false
	}
	provider, _, _ = strings.Cut(after, `"`)
	v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
	if err != nil {
		return "", 0, false
	}
	return provider, v, true
}
