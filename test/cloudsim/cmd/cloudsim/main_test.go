package main

import (
	"testing"

	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
	cloudsimazure "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/azure"
	cloudsimgce "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/gce"
	cloudsimopenstack "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

func TestNewAWSSeedsInstances(t *testing.T) {
	cloud, err := clouds["aws"](options{region: "us-east-1", zones: []string{"a", "b"}, clusterID: "c1", seedInstances: 3})
	if err != nil {
		t.Fatal(err)
	}
	emu := cloud.(*cloudsimaws.Emulator)
	insts := emu.Instances()
	if len(insts) != 3 || insts[2].Zone != "us-east-1a" || insts[1].Zone != "us-east-1b" {
		t.Fatalf("instances %+v", insts)
	}
	if insts[0].Tags["kubernetes.io/cluster/c1"] != "owned" || insts[0].Tags["Name"] != "node-0" {
		t.Fatalf("tags %v", insts[0].Tags)
	}
	if got := insts[0].PrivateDNSName; got == "" || got[len(got)-len("ec2.internal"):] != "ec2.internal" {
		t.Fatalf("us-east-1 private DNS name %q", got)
	}
}

func TestNewOpenStackSeedsServers(t *testing.T) {
	cloud, err := clouds["openstack"](options{zones: []string{"az-a", "az-b"}, clusterID: "c1", seedInstances: 3})
	if err != nil {
		t.Fatal(err)
	}
	emu := cloud.(*cloudsimopenstack.Emulator)
	servers := emu.Servers()
	if len(servers) != 3 || servers[0].Name != "node-0" || servers[1].Zone == servers[0].Zone {
		t.Fatalf("servers %+v", servers)
	}
	if f := emu.Fixture(); f.NetworkName != "c1-nodes" || f.RouterID == "" {
		t.Fatalf("fixture %+v", f)
	}
}

func TestNewAzureSeedsVMs(t *testing.T) {
	cloud, err := clouds["azure"](options{clusterID: "c1", seedInstances: 3})
	if err != nil {
		t.Fatal(err)
	}
	emu := cloud.(*cloudsimazure.Emulator)
	vms := emu.VMs()
	if len(vms) != 3 || vms[0].Name != "node-0" || vms[0].PrivateIP == "" {
		t.Fatalf("VMs %+v", vms)
	}
	if f := emu.Fixture(); f.ResourceGroup != "c1-rg" || f.SecurityGroupName != "c1-nsg" {
		t.Fatalf("fixture %+v", f)
	}
}

func TestNewGCESeedsInstances(t *testing.T) {
	cloud, err := clouds["gce"](options{clusterID: "c1", zones: []string{"a", "b"}, seedInstances: 3})
	if err != nil {
		t.Fatal(err)
	}
	emu := cloud.(*cloudsimgce.Emulator)
	insts := emu.Instances()
	if len(insts) != 3 || insts[0].Name != "node-0" || insts[0].Zone != "us-central1-a" || insts[1].Zone != "us-central1-b" || insts[0].InternalIP == "" {
		t.Fatalf("instances %+v", insts)
	}
	if f := emu.Fixture(); f.NetworkName != "c1-net" || f.SubnetworkName != "c1-subnet" {
		t.Fatalf("fixture %+v", f)
	}
}
