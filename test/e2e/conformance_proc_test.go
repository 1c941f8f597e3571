package e2e

import (
	"os"
	"strconv"
)

// envSeed reads CONFORMANCE_SEED, so a failed crash run can be replayed.
func envSeed() int64 {
	v, _ := strconv.ParseInt(os.Getenv("CONFORMANCE_SEED"), 10, 64)
	return v
}
