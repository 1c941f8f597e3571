package hybrid

import (
	"context"
	"errors"
	"maps"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/nodeinstance"
)

// instances routes the node controllers' questions to the Node's cloud.
// A Node of no configured cloud exists and is running as far as the
// lifecycle controller can tell, so it is never deleted or tainted shut
// down, and nothing is logged for it at every check (the Node informer
// counts it and says so once: unowned.go); the node controller gets no
// metadata for it (nodeinstance.NotOursMetadata), so it never initializes it.
type instances struct{ h *Composite }

var _ cloudprovider.InstancesV2 = (*instances)(nil)

// InstanceExists implements cloudprovider.InstancesV2.
func (i *instances) InstanceExists(ctx context.Context, node *v1.Node) (bool, error) {
	return i.lifecycle(ctx, node, true, cloudprovider.InstancesV2.InstanceExists)
}

// InstanceShutdown implements cloudprovider.InstancesV2.
func (i *instances) InstanceShutdown(ctx context.Context, node *v1.Node) (bool, error) {
	return i.lifecycle(ctx, node, false, cloudprovider.InstancesV2.InstanceShutdown)
}

// lifecycle asks the Node's cloud one of the lifecycle controller's
// questions; for a Node of no configured cloud the answer is foreign.
func (i *instances) lifecycle(ctx context.Context, node *v1.Node, foreign bool,
	ask func(cloudprovider.InstancesV2, context.Context, *v1.Node) (bool, error)) (bool, error) {
	m, err := i.h.owner(ctx, node)
	if errors.Is(err, errForeign) {
		return foreign, nil
	}
	if err != nil {
		return false, err
	}
	release, err := m.instShare.acquire(ctx)
	if err != nil {
		return false, err
	}
	defer release()
	ok, err := ask(m.instances, ctx, node)
	return ok, i.h.denials.observe(node, err)
}

// InstanceMetadata implements cloudprovider.InstancesV2: the owner's,
// with LabelProvider naming the cloud among the labels the node
// controller sets.
func (i *instances) InstanceMetadata(ctx context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	m, err := i.h.owner(ctx, node)
	if errors.Is(err, errForeign) {
		return nodeinstance.NotOursMetadata(node), nil
	}
	if err != nil {
		return nil, err
	}
	release, err := m.instShare.acquire(ctx)
	if err != nil {
		return nil, err
	}
	md, err := m.instances.InstanceMetadata(ctx, node)
	release()
	if err != nil || md == nil {
		return md, i.h.denials.observe(node, err)
	}
	out := *md
	out.AdditionalLabels = maps.Clone(md.AdditionalLabels)
	if out.AdditionalLabels == nil {
		out.AdditionalLabels = map[string]string{}
	}
	out.AdditionalLabels[LabelProvider] = m.name
	return &out, nil
}
