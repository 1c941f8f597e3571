// Command demo runs the sandbox: `make demo` (until Ctrl-C) or
// `make demo ONCE=1` (print the report and exit), for the cloud named by
// -cloud or $CLOUD (`make demo CLOUD=aws`), or a hybrid cluster of the
// clouds listed (`make demo CLOUD=openstack,aws`).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/multicloud-ccm/multicloud-ccm/test/sandbox"
)

func main() {
	once := flag.Bool("once", false, "exit after printing the report")
	nodes := flag.Int("nodes", 3, "how many instances and Nodes to create in each cloud")
	cloud := flag.String("cloud", os.Getenv("CLOUD"), "which emulated cloud (a conformance adapter), or a comma-separated list for a hybrid cluster (the first the default load-balancer cloud); default aws, or $CLOUD")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := sandbox.Run(ctx, sandbox.Options{Once: *once, Nodes: *nodes, Cloud: *cloud}); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(1)
	}
}
