// Package nodeinstance finds a Node's instance in a backend's instance
// snapshot and answers the node-lifecycle controller's two questions
// (does it exist, is it shut down) from it: the part of
// cloudprovider.InstancesV2 that every snapshot-backed backend shares,
// so the rule that only the cloud's own "not found" means gone is
// written once. A backend embeds a *Resolver and writes InstanceMetadata
// and what its instances look like.
package nodeinstance

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"
	"k8s.io/klog/v2"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/nodes"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/snapshot"
)

// Resolver maps Nodes to instances of type T held in Snap.
type Resolver[T any] struct {
	Snap  *snapshot.Snapshot[T]
	Nodes *nodes.Lister
	// KeyOf parses a providerID into a snapshot key, refusing one that is
	// not this backend's (another cloud, region or subscription).
	KeyOf func(providerID string) (string, error)
	// Key is an instance's snapshot key.
	Key func(T) string
	// SnapshotName maps a Node name to the name the snapshot indexes
	// (Azure lower-cases computer names); nil uses the Node name.
	SnapshotName func(nodeName string) string
	// KeyFromName, if set, is the key a Node name gives by itself, ""
	// for most names: AWS Node names that are an instance ID or a
	// resource-name hostname need no lookup. It is asked before the
	// snapshot's names.
	KeyFromName func(nodeName string) string
	// CheckName, if set, may refuse the instance found for a Node name:
	// where names need not be unique, a Node must not take another
	// instance's identity.
	CheckName func(ctx context.Context, nodeName string, found T) error
	// Shutdown says the instance is stopped or suspended (or on its way).
	Shutdown func(T) bool
	// GoneDetails, if set, adds key/value pairs to the log of an instance
	// found gone, from what the cloud last answered for it (the zero T
	// for "not found"): AWS says whether EC2 still lists it as
	// terminated.
	GoneDetails func(T) []any
	// Noun names an instance in messages ("VM", "server", "instance"),
	// Scope where names are looked for ("in resource group rg"), and
	// NameKind what the snapshot's names are ("private DNS name"; ""
	// for the instances' own names).
	Noun, Scope, NameKind string
}

func (r *Resolver[T]) snapshotName(name string) string {
	if r.SnapshotName != nil {
		return r.SnapshotName(name)
	}
	return name
}

// CachedKeyForName maps a Node name to its instance's key from memory
// only, for the lifecycle checks' batch (nodes.Lister.NotReadyInstanceIDs):
// it must never cost a call.
func (r *Resolver[T]) CachedKeyForName(name string) (string, bool) {
	if key := r.keyFromName(name); key != "" {
		return key, true
	}
	if i, ok := r.Snap.CachedByName(r.snapshotName(name)); ok {
		return r.Key(i), true
	}
	return "", false
}

// keyFromName is KeyFromName's answer, "" without one.
func (r *Resolver[T]) keyFromName(name string) string {
	if r.KeyFromName != nil {
		return r.KeyFromName(name)
	}
	return ""
}

// KeyForNode is the key of the Node's instance: from its providerID, else
// from the providerID the Node informer knows for its name (routes get
// only a name), else the key the name gives by itself (KeyFromName), else
// the instance with the Node's name. A name no instance has is an error
// wrapping cloudprovider.InstanceNotFound, never proof that an instance
// is gone.
func (r *Resolver[T]) KeyForNode(ctx context.Context, node *v1.Node) (string, error) {
	if node.Spec.ProviderID != "" {
		return r.KeyOf(node.Spec.ProviderID)
	}
	if key, ok := r.Nodes.InstanceID(node.Name); ok {
		return key, nil
	}
	if key := r.keyFromName(node.Name); key != "" {
		return key, nil
	}
	i, found, err := r.Snap.ByName(ctx, r.snapshotName(node.Name))
	if err != nil {
		return "", err
	}
	if !found {
		scope := ""
		if r.Scope != "" {
			scope = " " + r.Scope
		}
		if r.NameKind != "" {
			return "", fmt.Errorf("no %s%s has %s %q: %w", r.Noun, scope, r.NameKind, node.Name, cloudprovider.InstanceNotFound)
		}
		return "", fmt.Errorf("no %s%s is named %q: %w", r.Noun, scope, node.Name, cloudprovider.InstanceNotFound)
	}
	if r.CheckName != nil {
		if err := r.CheckName(ctx, node.Name, i); err != nil {
			return "", err
		}
	}
	return r.Key(i), nil
}

// Lookup is the Node's instance from the snapshot; one the cloud does not
// have is an error wrapping cloudprovider.InstanceNotFound.
func (r *Resolver[T]) Lookup(ctx context.Context, node *v1.Node) (T, error) {
	var zero T
	key, err := r.KeyForNode(ctx, node)
	if err != nil {
		return zero, err
	}
	i, found, err := r.Snap.Lookup(ctx, key)
	if err != nil {
		return zero, err
	}
	if !found {
		return zero, fmt.Errorf("%s %s of node %s: %w", r.Noun, key, node.Name, cloudprovider.InstanceNotFound)
	}
	return i, nil
}

// InstanceExists reports false only when the cloud answered "not found"
// for the instance (the snapshot's Recent). Throttling, 5xx, timeouts
// and authentication failures are errors: a wrong false deletes the
// Node.
func (r *Resolver[T]) InstanceExists(ctx context.Context, node *v1.Node) (bool, error) {
	key, i, exists, err := r.recent(ctx, node)
	if err != nil {
		return false, err
	}
	if !exists {
		kv := []any{"node", klog.KObj(node), "instance", key}
		if r.GoneDetails != nil {
			kv = append(kv, r.GoneDetails(i)...)
		}
		klog.FromContext(ctx).Info("Instance is gone", kv...)
	}
	return exists, nil
}

// InstanceShutdown reports a stopped or suspended instance, from the same
// recent lookup as InstanceExists.
func (r *Resolver[T]) InstanceShutdown(ctx context.Context, node *v1.Node) (bool, error) {
	_, i, exists, err := r.recent(ctx, node)
	if err != nil || !exists {
		return false, err
	}
	return r.Shutdown(i), nil
}

// recent is the Node's instance as the cloud described it a few seconds
// ago at most, for the lifecycle checks.
func (r *Resolver[T]) recent(ctx context.Context, node *v1.Node) (key string, i T, exists bool, err error) {
	if key, err = r.KeyForNode(ctx, node); err != nil {
		return "", i, false, err
	}
	if i, exists, err = r.Snap.Recent(ctx, key); err != nil {
		return key, i, false, fmt.Errorf("look up %s %s of node %s: %w", r.Noun, key, node.Name, err)
	}
	return key, i, exists, nil
}

// NotOursMetadata is the InstanceMetadata answer for a Node this manager
// must leave as it is (a Node of no configured cloud, a Node its cloud
// marks as managed elsewhere): the answer the cloud-node controller does
// nothing with. An error would be retried with backoff for as long as the
// Node exists, logged at every retry. For a Node still tainted
// uninitialized, nil makes the controller skip it without retrying and
// keep the taint (k8s.io/cloud-provider v0.37.2
// controllers/node/node_controller.go:436-443, "Skip sync node ... nil
// metadata"). An initialized Node's periodic address update dereferences
// what it gets (:266-296, :370), so it gets empty metadata: no addresses,
// which that update leaves as they are (:371-374).
func NotOursMetadata(node *v1.Node) *cloudprovider.InstanceMetadata {
	for _, t := range node.Spec.Taints {
		if t.Key == cloudproviderapi.TaintExternalCloudProvider {
			return nil
		}
	}
	return &cloudprovider.InstanceMetadata{}
}
