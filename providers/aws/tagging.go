package aws

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/multicloud-ccm/multicloud-ccm/providers/instancetags"
)

// Instance tags for controllers/tagging, upstream's opt-in tagging
// controller (k8s.io/cloud-provider-aws v1.37.0
// pkg/controllers/tagging/tagging_controller.go). Upstream calls
// CreateTags/DeleteTags once per instance (pkg/providers/v1/tags.go:351,391)
// or, with --tagging-controller-enable-batching, merges the calls of
// concurrent workers that carry the same tags into one call of up to 50
// instances, falling back to one call per instance when the merged call
// fails (pkg/providers/v1/create_tags_batch.go:39-104). Here the
// controller hands over every instance that is due at once and each batch
// of up to 50 is one call: CreateTags and DeleteTags are all or nothing
// across their resources and set or remove the same tags on each, so the
// instances end as one call each would leave them.

const (
	// maxTagResources is the instances per CreateTags/DeleteTags call:
	// EC2 takes up to 1000 but asks for smaller batches; upstream's
	// batcher sends at most 50 (create_tags_batch.go:44).
	maxTagResources = 50
	// tagFallbackWorkers bounds the per-instance calls that find which
	// instance of a refused batch is at fault.
	tagFallbackWorkers = 10

	// errCodeInvalidID is EC2's answer to CreateTags/DeleteTags naming an
	// ID of no valid format (upstream aws.go:1098 skips such Nodes).
	errCodeInvalidID = "InvalidID"
)

var _ instancetags.Tagger = (*instances)(nil)

// InstanceID implements instancetags.Tagger with the providerID forms
// the rest of the backend accepts.
func (in *instances) InstanceID(providerID string) (string, bool) {
	id, err := instanceIDFromProviderID(providerID)
	return id, err == nil
}

// TagInstances implements instancetags.Tagger: EC2 CreateTags, every tag
// with its value (an empty value is the empty string, as upstream's
// buildAwsTags sends it, tags.go:441).
func (in *instances) TagInstances(ctx context.Context, ids []string, tags map[string]string) map[string]error {
	t := ec2TagList(tags)
	return perInstance(ctx, "tag", ids, func(ctx context.Context, batch []string) error {
		_, err := in.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: batch, Tags: t})
		return err
	})
}

// UntagInstances implements instancetags.Tagger: EC2 DeleteTags with
// each key and value, so a tag whose value someone changed since is kept,
// as upstream's UntagResource does (tags.go:391).
func (in *instances) UntagInstances(ctx context.Context, ids []string, tags map[string]string) map[string]error {
	t := ec2TagList(tags)
	return perInstance(ctx, "untag", ids, func(ctx context.Context, batch []string) error {
		_, err := in.ec2.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: batch, Tags: t})
		return err
	})
}

// ec2TagList is tags in key order, so that equal maps make equal requests.
func ec2TagList(tags map[string]string) []ec2types.Tag {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]ec2types.Tag, len(keys))
	for i, k := range keys {
		out[i] = ec2types.Tag{Key: aws.String(k), Value: aws.String(tags[k])}
	}
	return out
}

// perInstance calls call for ids in batches of maxTagResources and
// returns each instance's outcome. A batch refused because of one of its
// instances (EC2 names no instance in the code) is retried one instance
// at a time to find which; any other failure (throttling, 5xx, auth) is
// every instance's outcome, with no extra calls.
func perInstance(ctx context.Context, verb string, ids []string, call func(context.Context, []string) error) map[string]error {
	out := make(map[string]error, len(ids))
	for batch := range slices.Chunk(slices.Compact(slices.Sorted(slices.Values(ids))), maxTagResources) {
		err := call(ctx, batch)
		if err == nil || len(batch) == 1 || !instanceFault(err) {
			for _, id := range batch {
				out[id] = tagError(verb, id, err)
			}
			continue
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		sem := make(chan struct{}, tagFallbackWorkers)
		for _, id := range batch {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				err := tagError(verb, id, call(ctx, []string{id}))
				mu.Lock()
				out[id] = err
				mu.Unlock()
			})
		}
		wg.Wait()
	}
	return out
}

// instanceFault says err is about one of the request's instances rather
// than the request.
func instanceFault(err error) bool {
	switch ec2ErrorCode(err) {
	case errCodeInstanceNotFound, errCodeInvalidID, "InvalidInstanceID.Malformed", "TagLimitExceeded":
		return true
	}
	return false
}

// tagError is err for one instance, wrapping the instancetags sentinel
// its code means.
func tagError(verb, id string, err error) error {
	switch {
	case err == nil:
		return nil
	case isAPIError(err, errCodeInstanceNotFound):
		return fmt.Errorf("%s instance %s: %w: %w", verb, id, instancetags.ErrInstanceNotFound, err)
	case isAPIError(err, errCodeInvalidID), isAPIError(err, "InvalidInstanceID.Malformed"):
		return fmt.Errorf("%s instance %s: %w: %w", verb, id, instancetags.ErrInvalidInstanceID, err)
	}
	return fmt.Errorf("%s instance %s: %w", verb, id, err)
}
