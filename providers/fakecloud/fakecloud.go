// Package fakecloud is the test backend the end-to-end tests (test/e2e)
// run the real binary with. It is built on k8s.io/cloud-provider/fake and
// configured entirely from its cloud-config section, because the binary runs
// as a separate process: the instances it reports come from the section,
// and every load-balancer call is appended to a JSON-lines call log the test
// reads. It is compiled in only with the `e2efake` build tag; release builds
// never contain it.
package fakecloud

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/fake"

	"github.com/multicloud-ccm/multicloud-ccm/config"
	"github.com/multicloud-ccm/multicloud-ccm/providers"
	"github.com/multicloud-ccm/multicloud-ccm/providers/compose"
)

// Name is the cloud-config provider name of this backend.
const Name = "e2e-fake"

// Section is the backend's cloud-config section.
type Section struct {
	// Instances the cloud reports, matched to Nodes by name.
	Instances []Instance `yaml:"instances"`
	// LoadBalancerIP is the ingress IP every load balancer gets.
	LoadBalancerIP string `yaml:"loadBalancerIP"`
	// CallLog is a file the backend appends one JSON line per load-balancer call to.
	CallLog string `yaml:"callLog"`
	// Routes makes the backend support routes (off by default, like every
	// backend without configured route tables).
	Routes bool `yaml:"routes"`
	// APIToken stands in for a real credential so tests can prove that
	// secrets are redacted end to end.
	APIToken string `yaml:"apiToken" secret:"true"`
}

// Instance is one simulated cloud instance.
type Instance struct {
	NodeName     string    `yaml:"nodeName"`
	ProviderID   string    `yaml:"providerID"`
	InstanceType string    `yaml:"instanceType"`
	Zone         string    `yaml:"zone"`
	Region       string    `yaml:"region"`
	Addresses    []Address `yaml:"addresses"`
}

// Address is a node address.
type Address struct {
	Type    string `yaml:"type"`
	Address string `yaml:"address"`
}

// SetDefaults implements config.Section.
func (s *Section) SetDefaults() {
	if s.LoadBalancerIP == "" {
		s.LoadBalancerIP = "203.0.113.10"
	}
}

// Validate implements config.Section.
func (s *Section) Validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if net.ParseIP(s.LoadBalancerIP) == nil {
		errs = append(errs, field.Invalid(path.Child("loadBalancerIP"), s.LoadBalancerIP, "must be an IP address"))
	}
	seen := map[string]bool{}
	for i, in := range s.Instances {
		p := path.Child("instances").Index(i)
		if in.NodeName == "" {
			errs = append(errs, field.Required(p.Child("nodeName"), ""))
		} else if seen[in.NodeName] {
			errs = append(errs, field.Duplicate(p.Child("nodeName"), in.NodeName))
		}
		seen[in.NodeName] = true
		if in.ProviderID == "" {
			errs = append(errs, field.Required(p.Child("providerID"), ""))
		}
		for j, a := range in.Addresses {
			if net.ParseIP(a.Address) == nil && a.Type != string(v1.NodeHostName) && a.Type != string(v1.NodeInternalDNS) && a.Type != string(v1.NodeExternalDNS) {
				errs = append(errs, field.Invalid(p.Child("addresses").Index(j).Child("address"), a.Address, "must be an IP address"))
			}
		}
	}
	return errs
}

// Register adds the backend to r.
func Register(r *providers.Registry) {
	r.MustRegister(providers.Backend{
		Name:       Name,
		NewSection: func() config.Section { return &Section{} },
		New: func(_ context.Context, cfg *config.CloudConfig) (compose.Parts, error) {
			return compose.PartsOf(New(cfg.Section.(*Section)))
		},
	})
}

// Cloud wraps fake.Cloud: instance metadata comes from the section, and the
// load-balancer calls are logged for the test.
type Cloud struct {
	*fake.Cloud
	byName map[string]Instance
	logMu  sync.Mutex
	log    string
	// lbMu guards fake.Cloud's Balancers map, which it writes unlocked.
	lbMu sync.Mutex
}

// New builds the cloud from its section.
func New(s *Section) (*Cloud, error) {
	c := &Cloud{
		Cloud: &fake.Cloud{
			EnableInstancesV2:  true,
			ExistsByProviderID: true,
			ExternalIP:         net.ParseIP(s.LoadBalancerIP),
			Balancers:          map[string]fake.Balancer{},
			RouteMap:           map[string]*fake.Route{},
			DisableRoutes:      !s.Routes,
			Provider:           Name,
		},
		byName: map[string]Instance{},
		log:    s.CallLog,
	}
	for _, in := range s.Instances {
		c.byName[in.NodeName] = in
	}
	c.Cloud.OverrideInstanceMetadata = c.instanceMetadata
	return c, nil
}

// Parts are the fake's parts: the wrapper serves instances and load
// balancers so its overrides are used; routes when the section asks.
func (c *Cloud) Parts() compose.Parts {
	p := compose.Parts{Name: Name, Instances: c, LoadBalancer: c, Initialize: c.Cloud.Initialize}
	if rt, ok := c.Cloud.Routes(); ok {
		p.Routes = rt
	}
	return p
}

// InstancesV2 returns the wrapper so its overrides are used.
func (c *Cloud) InstancesV2() (cloudprovider.InstancesV2, bool) { return c, true }

// Instances is not offered: InstancesV2 is the interface the node
// controllers prefer, and offering both would hide mistakes.
func (c *Cloud) Instances() (cloudprovider.Instances, bool) { return nil, false }

// LoadBalancer returns the wrapper so calls are logged.
func (c *Cloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return c, true }

// HasClusterID is true: the cloud-config always carries clusterID.
func (c *Cloud) HasClusterID() bool { return true }

func (c *Cloud) instanceMetadata(_ context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	in, ok := c.byName[node.Name]
	if !ok {
		return nil, cloudprovider.InstanceNotFound
	}
	md := &cloudprovider.InstanceMetadata{
		ProviderID:   in.ProviderID,
		InstanceType: in.InstanceType,
		Zone:         in.Zone,
		Region:       in.Region,
	}
	for _, a := range in.Addresses {
		md.NodeAddresses = append(md.NodeAddresses, v1.NodeAddress{Type: v1.NodeAddressType(a.Type), Address: a.Address})
	}
	return md, nil
}

// InstanceExists is true for the instances in the section.
func (c *Cloud) InstanceExists(_ context.Context, node *v1.Node) (bool, error) {
	_, ok := c.byName[node.Name]
	return ok, nil
}

// InstanceShutdown is always false: the foundation tests no shutdowns.
func (c *Cloud) InstanceShutdown(context.Context, *v1.Node) (bool, error) { return false, nil }

// Call is one logged load-balancer call.
type Call struct {
	Op      string   `json:"op"`
	Service string   `json:"service"`
	Nodes   []string `json:"nodes,omitempty"`
}

func (c *Cloud) record(op string, svc *v1.Service, nodes []*v1.Node) error {
	if c.log == "" {
		return nil
	}
	call := Call{Op: op, Service: svc.Namespace + "/" + svc.Name}
	for _, n := range nodes {
		call.Nodes = append(call.Nodes, n.Name)
	}
	line, err := json.Marshal(call)
	if err != nil {
		return err
	}
	c.logMu.Lock()
	defer c.logMu.Unlock()
	f, err := os.OpenFile(c.log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("open call log: %w", err)
	}
	defer f.Close()
	_, err = f.Write(append(line, '\n'))
	return err
}

// EnsureLoadBalancer logs and delegates to fake.Cloud.
func (c *Cloud) EnsureLoadBalancer(ctx context.Context, cluster string, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	if err := c.record("EnsureLoadBalancer", svc, nodes); err != nil {
		return nil, err
	}
	c.lbMu.Lock()
	defer c.lbMu.Unlock()
	return c.Cloud.EnsureLoadBalancer(ctx, cluster, svc, nodes)
}

// UpdateLoadBalancer logs and delegates to fake.Cloud.
func (c *Cloud) UpdateLoadBalancer(ctx context.Context, cluster string, svc *v1.Service, nodes []*v1.Node) error {
	if err := c.record("UpdateLoadBalancer", svc, nodes); err != nil {
		return err
	}
	return c.Cloud.UpdateLoadBalancer(ctx, cluster, svc, nodes)
}

// EnsureLoadBalancerDeleted logs and delegates to fake.Cloud.
func (c *Cloud) EnsureLoadBalancerDeleted(ctx context.Context, cluster string, svc *v1.Service) error {
	if err := c.record("EnsureLoadBalancerDeleted", svc, nil); err != nil {
		return err
	}
	c.lbMu.Lock()
	delete(c.Balancers, c.GetLoadBalancerName(ctx, cluster, svc))
	c.lbMu.Unlock()
	return c.Cloud.EnsureLoadBalancerDeleted(ctx, cluster, svc)
}

// GetLoadBalancer reports a balancer as existing once EnsureLoadBalancer
// made it (fake.Cloud answers one global Exists flag for every service,
// which would make the controller skip deletion).
func (c *Cloud) GetLoadBalancer(ctx context.Context, cluster string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	c.lbMu.Lock()
	_, exists := c.Balancers[c.GetLoadBalancerName(ctx, cluster, svc)]
	c.lbMu.Unlock()
	status := &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: c.ExternalIP.String()}}}
	return status, exists, nil
}

// ReadCalls reads a call log (for tests).
func ReadCalls(path string) ([]Call, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var calls []Call
	dec := json.NewDecoder(bytes.NewReader(data))
	for dec.More() {
		var c Call
		if err := dec.Decode(&c); err != nil {
			return nil, err
		}
		calls = append(calls, c)
	}
	return calls, nil
}
