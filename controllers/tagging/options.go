package tagging

import (
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/pflag"
)

// ResourceInstance is the one resource upstream tags: the EC2 instance
// behind each Node (pkg/controllers/options/resources.go:18-24).
const ResourceInstance = "instance"

// Options are upstream's flags, with upstream's names, types and
// meaning (pkg/controllers/options/tagging_controller.go:21-44), so an
// upstream command line runs unchanged.
type Options struct {
	// Tags go on every Node's instance (--tags).
	Tags map[string]string
	// Resources are what to tag (--resources); only "instance".
	Resources []string
	// RateLimit and BurstLimit, both positive, rate-limit the queue
	// (--tagging-controller-rate-limit, --tagging-controller-burst-limit).
	RateLimit  float64
	BurstLimit int
	// Workers process the queue (--tagging-controller-concurrent-node-syncs).
	Workers int
	// Batching is --tagging-controller-enable-batching, accepted for
	// upstream command lines. Calls are always batched here: every
	// instance due at once goes in one CreateTags or DeleteTags call of up
	// to 50 (providers/aws/tagging.go says why that ends the same).
	Batching bool
}

// NewOptions returns the defaults: upstream's, except that --resources
// defaults to "instance", the only valid value (upstream has no default
// and refuses to start without it, tagging_controller.go:52-54).
func NewOptions() *Options {
	return &Options{Resources: []string{ResourceInstance}, Workers: 1}
}

// AddFlags adds upstream's flags to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringToStringVar(&o.Tags, "tags", o.Tags,
		"Tags the "+ControllerName+" controller puts on the EC2 instance of every Node, as key=value,... (required with it). "+
			"The controller is AWS-only and off unless named in --controllers (e.g. --controllers=*,"+ControllerName+"), as upstream's; "+
			"each tagged Node is labelled "+LabelKey+"=<checksum of the tags>, and the tags are removed when the Node is deleted.")
	fs.StringArrayVar(&o.Resources, "resources", o.Resources,
		"Resources the "+ControllerName+" controller tags; the only one is "+ResourceInstance+". Repeat the flag for several.")
	fs.Float64Var(&o.RateLimit, "tagging-controller-rate-limit", o.RateLimit,
		"Steady rate (per second) at which the "+ControllerName+" controller takes Nodes from its queue; 0 (default) or --tagging-controller-burst-limit 0 turns rate limiting off.")
	fs.IntVar(&o.BurstLimit, "tagging-controller-burst-limit", o.BurstLimit,
		"Burst at which the "+ControllerName+" controller takes Nodes from its queue; 0 (default) turns rate limiting off.")
	fs.IntVar(&o.Workers, "tagging-controller-concurrent-node-syncs", o.Workers,
		"Workers of the "+ControllerName+" controller; each tags up to 50 instances per cloud call.")
	fs.BoolVar(&o.Batching, "tagging-controller-enable-batching", o.Batching,
		"Accepted for upstream command lines: the "+ControllerName+" controller always tags the instances of Nodes due at once in one call (up to 50).")
}

// Validate reports every problem of the options at once, as upstream
// checks them (tagging_controller.go:47-77).
func (o *Options) Validate() error {
	var errs []error
	if len(o.Tags) == 0 {
		errs = append(errs, errors.New("--tags must not be empty: give key=value,..."))
	}
	if len(o.Resources) == 0 {
		errs = append(errs, fmt.Errorf("--resources must not be empty: want %q", ResourceInstance))
	}
	for _, r := range o.Resources {
		if r != ResourceInstance {
			errs = append(errs, fmt.Errorf("--resources %q is not supported: want %q", r, ResourceInstance))
		}
	}
	if o.RateLimit < 0 {
		errs = append(errs, fmt.Errorf("--tagging-controller-rate-limit %v must not be negative", o.RateLimit))
	}
	if o.BurstLimit < 0 {
		errs = append(errs, fmt.Errorf("--tagging-controller-burst-limit %d must not be negative", o.BurstLimit))
	}
	if o.Workers <= 0 {
		errs = append(errs, fmt.Errorf("--tagging-controller-concurrent-node-syncs %d must be positive", o.Workers))
	}
	return errors.Join(errs...)
}

// rateLimited says the queue is rate-limited (upstream tagging_controller.go:129).
func (o *Options) rateLimited() bool { return o.RateLimit > 0 && o.BurstLimit > 0 }

// hasResource says r is to be tagged.
func (o *Options) hasResource(r string) bool { return slices.Contains(o.Resources, r) }
