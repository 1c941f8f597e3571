package controlplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// ReadManifests decodes every YAML document in the given files (or in the
// *.yaml files of the given directories, kustomization.yaml excepted) into
// unstructured objects, in file order.
func ReadManifests(paths ...string) ([]*unstructured.Unstructured, error) {
	var files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		matches, err := filepath.Glob(filepath.Join(p, "*.yaml"))
		if err != nil {
			return nil, err
		}
		sort.Strings(matches)
		for _, m := range matches {
			if filepath.Base(m) != "kustomization.yaml" {
				files = append(files, m)
			}
		}
	}
	var objs []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var m map[string]any
			if err := dec.Decode(&m); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if len(m) == 0 {
				continue
			}
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
	return objs, nil
}

// Apply server-side-applies objs as cfg's user, with strict field
// validation: an unknown or duplicated field, an apiserver warning, or a
// namespace on the wrong scope is an error, so a typo in a manifest cannot
// pass. With dryRun the server validates and admits every object but
// stores nothing.
func Apply(ctx context.Context, cfg *rest.Config, objs []*unstructured.Unstructured, dryRun bool) error {
	cfg = rest.CopyConfig(cfg)
	warn := &Warnings{}
	cfg.WarningHandler = warn
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	opts := metav1.PatchOptions{FieldManager: "multicloud-ccm-tests", Force: ptrTrue(), FieldValidation: metav1.FieldValidationStrict}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	var errs []string
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		what := fmt.Sprintf("%s %s/%s", gvk.Kind, obj.GetNamespace(), obj.GetName())
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", what, err))
			continue
		}
		namespaced := mapping.Scope.Name() == meta.RESTScopeNameNamespace
		if namespaced != (obj.GetNamespace() != "") {
			errs = append(errs, fmt.Sprintf("%s: namespaced=%v but metadata.namespace=%q", what, namespaced, obj.GetNamespace()))
			continue
		}
		data, err := obj.MarshalJSON()
		if err != nil {
			return err
		}
		var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
		if namespaced {
			ri = dyn.Resource(mapping.Resource).Namespace(obj.GetNamespace())
		}
		if _, err := ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, data, opts); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", what, err))
		}
		if w := warn.Take(); len(w) > 0 {
			errs = append(errs, fmt.Sprintf("%s: apiserver warnings: %s", what, strings.Join(w, "; ")))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("apply: %s", strings.Join(errs, "; "))
	}
	return nil
}

// Warnings collects the apiserver's warning headers (a rest.Config's
// WarningHandler).
type Warnings struct {
	mu   sync.Mutex
	msgs []string
}

// HandleWarningHeader records one warning.
func (w *Warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, text)
}

// Take returns the warnings recorded since the last Take.
func (w *Warnings) Take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

func ptrTrue() *bool { b := true; return &b }

// CCMKubeconfig applies deploy/'s RBAC (ServiceAccount, roles, bindings;
// not the Deployment or Secret) and writes a kubeconfig for the
// kube-system/cloud-controller-manager ServiceAccount, so a test runs the
// CCM with exactly the permissions a real cluster would give it.
func (cp *ControlPlane) CCMKubeconfig(ctx context.Context, ttl time.Duration) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	objs, err := ReadManifests(filepath.Join(root, "deploy"))
	if err != nil {
		return "", err
	}
	var rbac []*unstructured.Unstructured
	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			rbac = append(rbac, o)
		}
	}
	if err := Apply(ctx, cp.Admin, rbac, false); err != nil {
		return "", err
	}
	cfg, err := cp.ServiceAccountConfig(ctx, "kube-system", "cloud-controller-manager", ttl)
	if err != nil {
		return "", err
	}
	return cp.WriteKubeconfig(cfg, "ccm.kubeconfig")
}
