// Package instancetags is what a backend gives controllers/tagging: tags
// put on and taken off the cloud instances behind Nodes. Only AWS offers
// it (upstream's tagging controller is AWS-only); the controller finds it
// through the assembled cloud's InstancesV2 (see Source).
//
// It is its own package, outside providers/internal, because controllers/
// reads it and Go's internal rule keeps providers/internal to providers/.
package instancetags

import (
	"context"
	"errors"
)

var (
	// ErrInstanceNotFound: the cloud says no instance has this ID (EC2
	// InvalidInstanceID.NotFound). Right after launch this can be the
	// cloud's eventual consistency; for an untag it means there is
	// nothing left to untag.
	ErrInstanceNotFound = errors.New("instance not found")
	// ErrInvalidInstanceID: the cloud refuses the ID's format (EC2
	// InvalidID), as for the made-up IDs of simulated Nodes; no retry
	// can succeed.
	ErrInvalidInstanceID = errors.New("invalid instance ID")
)

// Tagger tags a cloud's instances.
type Tagger interface {
	// InstanceID is the instance a Node's providerID names; false when
	// it names no instance of this cloud (another cloud's scheme, a
	// malformed or empty providerID).
	InstanceID(providerID string) (string, bool)
	// TagInstances sets tags on every instance of ids, adding keys and
	// overwriting values, and reports each instance's outcome: nil, or
	// an error wrapping ErrInstanceNotFound, ErrInvalidInstanceID or
	// what else the cloud said. ids are passed in as few calls as the
	// cloud allows.
	TagInstances(ctx context.Context, ids []string, tags map[string]string) map[string]error
	// UntagInstances removes each tag of tags from every instance of
	// ids where it still has that value, reporting as TagInstances.
	UntagInstances(ctx context.Context, ids []string, tags map[string]string) map[string]error
}

// Source is what the assembled cloud's InstancesV2 offers when some
// configured cloud can tag instances.
type Source interface {
	// InstanceTagger is the tagger of the configured cloud of that name
	// ("aws"); false when that cloud is not configured or cannot tag.
	InstanceTagger(cloud string) (Tagger, bool)
}
