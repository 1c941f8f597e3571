package openstack

import (
	"context"
	"fmt"
	"net/http"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
)

// maxPortUpdateAttempts bounds the re-reads after 412s.
const maxPortUpdateAttempts = 5

// updatePort changes a port by read-modify-write without losing anyone
// else's change: edit derives the update from the port as read (false:
// nothing to do), the port's revision_number goes as If-Match, and a 412
// (the port changed meanwhile) re-reads it and edits again. It reports
// whether it wrote.
func updatePort(ctx context.Context, network *gophercloud.ServiceClient, p *ports.Port, edit func(*ports.Port) (ports.UpdateOpts, bool)) (bool, error) {
	for attempt := 1; ; attempt++ {
		opts, ok := edit(p)
		if !ok {
			return false, nil
		}
		rev := p.RevisionNumber
		opts.RevisionNumber = &rev
		_, err := ports.Update(ctx, network, p.ID, opts).Extract()
		if err == nil {
			return true, nil
		}
		if statusOf(err) != http.StatusPreconditionFailed || attempt >= maxPortUpdateAttempts {
			return false, err
		}
		id := p.ID
		if p, err = ports.Get(ctx, network, id).Extract(); err != nil {
			return false, fmt.Errorf("read port %s again after a conflicting change: %w", id, err)
		}
	}
}
