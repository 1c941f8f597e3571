package openstack

import (
	"context"
	"fmt"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
)

func TestErrorClassification(t *testing.T) {
	code := func(status int) error {
		return fmt.Errorf("get server: %w", gophercloud.ErrUnexpectedResponseCode{Actual: status})
	}
	for _, tt := range []struct {
		err                           error
		notFound, conflict, throttled bool
	}{
		{code(404), true, false, false},
		{code(409), false, true, false},
		{code(429), false, false, true},
		{code(413), false, false, true},
		{code(500), false, false, false},
		{code(401), false, false, false},
		{context.DeadlineExceeded, false, false, false},
		{nil, false, false, false},
	} {
		if isNotFound(tt.err) != tt.notFound || isConflict(tt.err) != tt.conflict || isThrottled(tt.err) != tt.throttled {
			t.Errorf("%v: notFound %v conflict %v throttled %v", tt.err, isNotFound(tt.err), isConflict(tt.err), isThrottled(tt.err))
		}
	}
}
