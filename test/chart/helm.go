// Package chart tests the Helm chart deploy/chart/multicloud-ccm with a real
// Helm, built from the Go module proxy at the version pinned in
// tools/helm/go.mod (build.sh, cached in bin/ by version), and a real
// kube-apiserver (test/controlplane): helm lint, helm template for every
// cloud's example values and both workload kinds, a server-side dry-run
// apply of every rendering, Pod Security admission of the pods, and
// equality with deploy/'s RBAC and Deployment.
package chart

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/multicloud-ccm/multicloud-ccm/test/controlplane"
)

// ChartDir is the chart's directory under the repository root.
const ChartDir = "deploy/chart/multicloud-ccm"

var helmRequire = regexp.MustCompile(`(?m)^\s*(?:require\s+)?helm\.sh/helm/v3\s+(v\S+)`)

// HelmPath returns where build.sh puts the pinned helm (bin/helm-<version>)
// and whether it is there, without building it.
func HelmPath() (path string, exists bool, err error) {
	root, err := controlplane.RepoRoot()
	if err != nil {
		return "", false, err
	}
	gomod, err := os.ReadFile(filepath.Join(root, "test", "chart", "tools", "helm", "go.mod"))
	if err != nil {
		return "", false, err
	}
	m := helmRequire.FindSubmatch(gomod)
	if m == nil {
		return "", false, errors.New("test/chart/tools/helm/go.mod requires no helm.sh/helm/v3")
	}
	path = filepath.Join(root, "bin", "helm-"+string(m[1]))
	st, err := os.Stat(path)
	return path, err == nil && st.Mode()&0o111 != 0, nil
}

// EnsureHelm returns the path of the pinned helm, building it with build.sh
// when missing (minutes, once; progress goes to w).
func EnsureHelm(w io.Writer) (string, error) {
	paths, err := controlplane.RunBuildScript("test/chart/build.sh", 1, w)
	if err != nil {
		return "", err
	}
	return paths[0], nil
}

// Helm runs one helm binary with its state (config, cache, data) in a
// directory of its own, so a person's repositories and plugins neither help
// nor break the tests, and no cluster is ever contacted.
type Helm struct {
	Path  string
	Home  string
	Root  string // repository root; relative paths are resolved from here
	Chart string // absolute path of the chart
}

// NewHelm returns a Helm for the binary at path with its state under home.
func NewHelm(path, home string) (*Helm, error) {
	root, err := controlplane.RepoRoot()
	if err != nil {
		return nil, err
	}
	return &Helm{Path: path, Home: home, Root: root, Chart: filepath.Join(root, ChartDir)}, nil
}

// Run runs helm with args from the repository root and returns its stdout;
// a failure's error carries stderr.
func (h *Helm) Run(args ...string) (stdout, stderr []byte, err error) {
	cmd := exec.Command(h.Path, args...)
	cmd.Dir = h.Root
	cmd.Env = append(os.Environ(),
		"HELM_CONFIG_HOME="+filepath.Join(h.Home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(h.Home, "cache"),
		"HELM_DATA_HOME="+filepath.Join(h.Home, "data"),
		"KUBECONFIG="+filepath.Join(h.Home, "no-kubeconfig"),
	)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if err != nil {
		err = fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.Bytes(), errb.Bytes(), err
}

// Template renders the chart as release "multicloud-ccm" in namespace
// with the extra helm template args (-f, --set) and decodes the objects.
func (h *Helm) Template(namespace string, args ...string) ([]*unstructured.Unstructured, error) {
	out, _, err := h.Run(append([]string{"template", "multicloud-ccm", h.Chart, "--namespace", namespace}, args...)...)
	if err != nil {
		return nil, err
	}
	return Decode(out)
}

// Decode splits a multi-document YAML stream into objects, skipping empty
// documents (comments only). A duplicated key is an error: the apiserver
// would see only one of the two values.
func Decode(data []byte) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []*unstructured.Unstructured
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		js, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w\n%s", i, err, doc)
		}
		if s := string(bytes.TrimSpace(js)); s == "null" || s == "" || s == "{}" {
			continue
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(js); err != nil {
			return nil, fmt.Errorf("document %d: %w\n%s", i, err, doc)
		}
		objs = append(objs, obj)
	}
}
