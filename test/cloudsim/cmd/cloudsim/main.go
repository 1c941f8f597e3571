// Command cloudsim runs a cloud emulator as a standalone process, for
// tests that run the CCM binary out of process:
//
//	go run ./test/cloudsim/cmd/cloudsim -cloud aws -listen 127.0.0.1:0 -seed-instances 3 -zones a,b,c
//
// It prints the base URL on the first line of stdout (so scripts can read
// it), logs to stderr, and serves until SIGINT or SIGTERM. The admin API
// is under <url>/admin/.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
	cloudsimazure "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/azure"
	cloudsimgce "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/gce"
	cloudsimopenstack "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

// options are the flags every cloud understands.
type options struct {
	region        string
	zones         []string
	clusterID     string
	seedInstances int
	lbDelay       time.Duration
}

// clouds maps -cloud names to constructors; each cloud registers here.
var clouds = map[string]func(options) (cloudsim.Cloud, error){
	"aws":       newAWS,
	"azure":     newAzure,
	"gce":       newGCE,
	"openstack": newOpenStack,
}

func newAWS(o options) (cloudsim.Cloud, error) {
	emu := cloudsimaws.NewDefault(cloudsimaws.Config{
		Region: o.region, Zones: o.zones, ClusterID: o.clusterID, LoadBalancerProvisioningDelay: o.lbDelay,
	})
	for i := range o.seedInstances {
		_, err := emu.Launch(cloudsimaws.LaunchSpec{Tags: map[string]string{
			"Name":              fmt.Sprintf("node-%d", i),
			emu.ClusterTagKey(): "owned",
		}})
		if err != nil {
			return nil, fmt.Errorf("seeding instance %d: %w", i, err)
		}
	}
	f := emu.Fixture()
	log.Printf("aws %s: vpc %s, node security group %s, route table %s, %d instances",
		emu.Region(), f.VPCID, f.NodeSecurityGroupID, f.RouteTableID, len(emu.Instances()))
	return emu, nil
}

// newOpenStack serves Keystone, Nova, Neutron and Octavia under one URL;
// the credentials to use are in the fixture (GET <url>/admin/openstack/fixture).
func newOpenStack(o options) (cloudsim.Cloud, error) {
	emu := cloudsimopenstack.NewDefault(cloudsimopenstack.Config{
		Region: o.region, Zones: o.zones, ClusterID: o.clusterID,
		Octavia: cloudsimopenstack.OctaviaConfig{ProvisioningDelay: o.lbDelay},
	})
	if o.seedInstances > 0 {
		if _, err := emu.Launch(cloudsimopenstack.LaunchSpec{Count: o.seedInstances, Name: "node"}); err != nil {
			return nil, fmt.Errorf("seeding servers: %w", err)
		}
	}
	f := emu.Fixture()
	log.Printf("openstack %s: network %s, floating network %s, router %s, %d servers",
		emu.Region(), f.NetworkID, f.ExternalNetworkID, f.RouterID, len(emu.Servers()))
	return emu, nil
}

// newAzure serves AAD and ARM over TLS under one URL; the CA to trust and
// the credentials are in the fixture (GET <url>/admin/azure/fixture and
// <url>/admin/azure/ca.pem). Zones are the location's zone numbers.
func newAzure(o options) (cloudsim.Cloud, error) {
	emu := cloudsimazure.New(cloudsimazure.Config{
		Location: o.region, Zones: o.zones, ClusterID: o.clusterID, OperationDelay: o.lbDelay,
	})
	for i := range o.seedInstances {
		if _, err := emu.LaunchVM(cloudsimazure.VMSpec{Name: fmt.Sprintf("node-%d", i)}); err != nil {
			return nil, fmt.Errorf("seeding VM %d: %w", i, err)
		}
	}
	f := emu.Fixture()
	log.Printf("azure %s: resource group %s, vnet %s, subnet %s, security group %s, %d VMs",
		f.Location, f.ResourceGroup, f.VNetName, f.SubnetName, f.SecurityGroupName, len(emu.VMs()))
	return emu, nil
}

// newGCE serves the Compute Engine API under <url>/compute/v1/ over plain
// HTTP (clients use option.WithEndpoint(url) and no authentication); the
// project, network and subnetwork are in the fixture (GET
// <url>/admin/gce/fixture). Zones are names or suffixes of the region's;
// operations take -lb-provisioning-delay.
func newGCE(o options) (cloudsim.Cloud, error) {
	emu := cloudsimgce.New(cloudsimgce.Config{
		Region: o.region, Zones: o.zones, ClusterID: o.clusterID, OperationDelay: o.lbDelay,
	})
	for i := range o.seedInstances {
		if _, err := emu.Launch(cloudsimgce.InstanceSpec{Name: fmt.Sprintf("node-%d", i)}); err != nil {
			return nil, fmt.Errorf("seeding instance %d: %w", i, err)
		}
	}
	f := emu.Fixture()
	log.Printf("gce %s/%s: network %s, subnetwork %s (%s), %d instances",
		f.Project, f.Region, f.NetworkName, f.SubnetworkName, f.SubnetworkCIDR, len(emu.Instances()))
	return emu, nil
}

func main() {
	log.SetFlags(log.LstdFlags | log.Lmsgprefix)
	log.SetPrefix("cloudsim: ")
	var (
		o      options
		name   = flag.String("cloud", "aws", "cloud to emulate: "+strings.Join(cloudNames(), ", "))
		listen = flag.String("listen", "127.0.0.1:0", "address to listen on; port 0 picks a free one")
		zones  = flag.String("zones", "", "comma-separated zone names or suffixes (default: the cloud's)")
	)
	flag.StringVar(&o.region, "region", "", "region (default: the cloud's)")
	flag.StringVar(&o.clusterID, "cluster-id", "kubernetes", "cluster ID for the fixtures' cluster tags")
	flag.IntVar(&o.seedInstances, "seed-instances", 0, "instances to launch at start, spread over the zones")
	flag.DurationVar(&o.lbDelay, "lb-provisioning-delay", 0, "how long new load balancers stay provisioning")
	flag.Parse()
	if *zones != "" {
		o.zones = strings.Split(*zones, ",")
	}

	newCloud, ok := clouds[*name]
	if !ok {
		log.Fatalf("unknown cloud %q; have %s", *name, strings.Join(cloudNames(), ", "))
	}
	cloud, err := newCloud(o)
	if err != nil {
		log.Fatal(err)
	}
	srv, err := cloudsim.StartAt(cloud, *listen)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(srv.URL())
	log.Printf("serving %s at %s", cloud.Name(), srv.URL())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	log.Printf("shutting down")
	if err := srv.Close(); err != nil {
		log.Printf("close: %v", err)
	}
}

func cloudNames() []string {
	names := make([]string, 0, len(clouds))
	for n := range clouds {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
