package nodeinstance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/nodes"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/snapshot"
)

// vm is a stand-in instance; the backends' own tests cover the resolver
// against their emulators.
type vm struct {
	id, name string
	stopped  bool
}

// cloud is an in-memory cloud: what it holds, and an error its direct
// lookups fail with (throttling).
type cloud struct {
	vms       map[string]*vm
	lookupErr error
}

func (c *cloud) resolver(clk *clocktesting.FakeClock) *Resolver[*vm] {
	keyOf := func(pid string) (string, error) {
		id, ok := strings.CutPrefix(pid, "test://")
		if !ok {
			return "", fmt.Errorf("providerID %q is not test://", pid)
		}
		return id, nil
	}
	r := &Resolver[*vm]{
		Nodes: nodes.New(keyOf), KeyOf: keyOf,
		Key:      func(v *vm) string { return v.id },
		Shutdown: func(v *vm) bool { return v.stopped },
		CheckName: func(_ context.Context, name string, _ *vm) error {
			if name == "shared" {
				return errors.New("two VMs are named shared")
			}
			return nil
		},
		Noun: "VM", Scope: "in the test",
	}
	r.Snap = snapshot.New(snapshot.Source[*vm]{
		List: func(context.Context) ([]*vm, error) {
			var out []*vm
			for _, v := range c.vms {
				out = append(out, v)
			}
			return out, nil
		},
		LookupIDs: func(_ context.Context, ids []string) (map[string]*vm, error) {
			if c.lookupErr != nil {
				return nil, c.lookupErr
			}
			out := map[string]*vm{}
			for _, id := range ids {
				if v, ok := c.vms[id]; ok {
					out[id] = v
				}
			}
			return out, nil
		},
		ID:    func(v *vm) string { return v.id },
		Names: func(v *vm) []string { return []string{v.name} },
	}, snapshot.Options{Provider: "test", Clock: clk})
	return r
}

func node(name, pid string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{ProviderID: pid}}
}

// TestResolver: a Node maps to its instance by providerID or name; an
// unknown name is InstanceNotFound, not "gone"; a name CheckName refuses
// is an error; only the cloud's "not found" makes InstanceExists false,
// and a failing lookup is an error.
func TestResolver(t *testing.T) {
	ctx := t.Context()
	c := &cloud{vms: map[string]*vm{
		"1": {id: "1", name: "a"}, "2": {id: "2", name: "b", stopped: true}, "3": {id: "3", name: "shared"},
	}}
	clk := clocktesting.NewFakeClock(time.Now())
	r := c.resolver(clk)
	if key, err := r.KeyForNode(ctx, node("renamed", "test://2")); err != nil || key != "2" {
		t.Errorf("by providerID: %q, %v", key, err)
	}
	if key, err := r.KeyForNode(ctx, node("a", "")); err != nil || key != "1" {
		t.Errorf("by name: %q, %v", key, err)
	}
	if key, ok := r.CachedKeyForName("a"); !ok || key != "1" {
		t.Errorf("cached by name: %q, %v", key, ok)
	}
	_, err := r.KeyForNode(ctx, node("nobody", ""))
	if !errors.Is(err, cloudprovider.InstanceNotFound) || !strings.Contains(err.Error(), `no VM in the test is named "nobody"`) {
		t.Errorf("unknown name: %v", err)
	}
	if _, err := r.KeyForNode(ctx, node("shared", "")); err == nil || !strings.Contains(err.Error(), "two VMs") {
		t.Errorf("refused name: %v", err)
	}
	if _, err := r.KeyForNode(ctx, node("x", "aws:///i-1")); err == nil {
		t.Error("a foreign providerID was accepted")
	}
	if v, err := r.Lookup(ctx, node("b", "")); err != nil || v.id != "2" {
		t.Errorf("Lookup: %v, %v", v, err)
	}

	if ok, err := r.InstanceExists(ctx, node("a", "test://1")); err != nil || !ok {
		t.Errorf("exists: %v, %v", ok, err)
	}
	if down, err := r.InstanceShutdown(ctx, node("b", "test://2")); err != nil || !down {
		t.Errorf("shutdown: %v, %v", down, err)
	}
	// A lifecycle answer is reused for a few seconds; the next period
	// asks again.
	clk.Step(time.Minute)
	delete(c.vms, "1")
	c.lookupErr = errors.New("429 throttled")
	if ok, err := r.InstanceExists(ctx, node("a", "test://1")); err == nil {
		t.Errorf("a failing lookup answered exists=%v without an error", ok)
	}
	c.lookupErr = nil
	clk.Step(time.Minute)
	if ok, err := r.InstanceExists(ctx, node("a", "test://1")); err != nil || ok {
		t.Errorf("gone: exists %v, %v", ok, err)
	}
	if down, err := r.InstanceShutdown(ctx, node("a", "test://1")); err != nil || down {
		t.Errorf("gone: shutdown %v, %v", down, err)
	}
}

// TestResolverHooks: a name KeyFromName maps needs no instance of that
// name, in memory as in a lookup; NameKind words the unknown-name error;
// GoneDetails sees what the cloud answered for a gone instance.
func TestResolverHooks(t *testing.T) {
	ctx := t.Context()
	c := &cloud{vms: map[string]*vm{"1": {id: "1", name: "a"}}}
	r := c.resolver(clocktesting.NewFakeClock(time.Now()))
	r.KeyFromName = func(name string) string {
		id, _ := strings.CutPrefix(name, "vm-")
		if id == name {
			return ""
		}
		return id
	}
	var gone []*vm
	r.GoneDetails = func(v *vm) []any { gone = append(gone, v); return []any{"listed", v != nil} }
	r.Scope, r.NameKind = "", "host name"

	if key, err := r.KeyForNode(ctx, node("vm-9", "")); err != nil || key != "9" {
		t.Errorf("name that is a key: %q, %v", key, err)
	}
	if key, ok := r.CachedKeyForName("vm-9"); !ok || key != "9" {
		t.Errorf("cached name that is a key: %q, %v", key, ok)
	}
	if key, err := r.KeyForNode(ctx, node("a", "")); err != nil || key != "1" {
		t.Errorf("other names are still looked up: %q, %v", key, err)
	}
	_, err := r.KeyForNode(ctx, node("nobody", ""))
	if !errors.Is(err, cloudprovider.InstanceNotFound) || !strings.Contains(err.Error(), `no VM has host name "nobody"`) {
		t.Errorf("unknown name: %v", err)
	}
	if ok, err := r.InstanceExists(ctx, node("vm-9", "")); err != nil || ok {
		t.Errorf("unknown key: exists %v, %v", ok, err)
	}
	if len(gone) != 1 || gone[0] != nil {
		t.Errorf("GoneDetails got %v, want one call with the zero instance", gone)
	}
	if ok, err := r.InstanceExists(ctx, node("vm-1", "")); err != nil || !ok || len(gone) != 1 {
		t.Errorf("existing instance: exists %v, %v; GoneDetails calls %d", ok, err, len(gone))
	}
}
