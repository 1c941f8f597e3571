package azure

import (
	"fmt"
	"strings"
)

// ProviderName is the backend's name in the cloud-config and the scheme of
// its providerIDs.
const ProviderName = "azure"

// vmRef is a parsed VM resource ID: a standalone (or availability set, or
// flexible scale set) VM, or an instance of a uniform scale set.
type vmRef struct {
	sub, rg string
	// name is the VM's name; for a scale set instance, empty.
	name string
	// scaleSet and instanceID name a uniform scale set instance.
	scaleSet, instanceID string
}

// key is the snapshot key of the VM: its resource ID lower-cased, since
// ARM compares every part of an ID case-insensitively.
func (r vmRef) key() string { return strings.ToLower(r.id()) }

// id is the resource ID.
func (r vmRef) id() string {
	base := "/subscriptions/" + r.sub + "/resourceGroups/" + r.rg + "/providers/Microsoft.Compute/"
	if r.scaleSet != "" {
		return base + "virtualMachineScaleSets/" + r.scaleSet + "/virtualMachines/" + r.instanceID
	}
	return base + "virtualMachines/" + r.name
}

// parseVMID parses a VM or scale set instance resource ID.
func parseVMID(id string) (vmRef, error) {
	segs := strings.Split(strings.TrimPrefix(id, "/"), "/")
	bad := fmt.Errorf("%q is not a virtual machine resource ID (want /subscriptions/<sub>/resourceGroups/<rg>/providers/Microsoft.Compute/virtualMachines/<name> or .../virtualMachineScaleSets/<set>/virtualMachines/<instance>)", id)
	if len(segs) < 8 || !strings.EqualFold(segs[0], "subscriptions") || !strings.EqualFold(segs[2], "resourceGroups") ||
		!strings.EqualFold(segs[4], "providers") || !strings.EqualFold(segs[5], "Microsoft.Compute") {
		return vmRef{}, bad
	}
	for _, s := range segs {
		if s == "" {
			return vmRef{}, bad
		}
	}
	r := vmRef{sub: segs[1], rg: segs[3]}
	switch {
	case len(segs) == 8 && strings.EqualFold(segs[6], "virtualMachines"):
		r.name = segs[7]
	case len(segs) == 10 && strings.EqualFold(segs[6], "virtualMachineScaleSets") && strings.EqualFold(segs[8], "virtualMachines"):
		r.scaleSet, r.instanceID = segs[7], segs[9]
	default:
		return vmRef{}, bad
	}
	return r, nil
}

// providerID formats the providerID the upstream Azure CCM writes: azure://
// and the VM's resource ID with its resource group lower-cased ("for
// historical reasons", as upstream and Cluster API Provider Azure both
// say), which existing Nodes, Cluster API and the autoscaler depend on.
// MUST NOT change.
func providerID(armID string) string {
	r, err := parseVMID(armID)
	if err != nil {
		return "azure://" + armID
	}
	segs := strings.Split(armID, "/")
	// "", "subscriptions", sub, "resourceGroups", rg, ...
	segs[4] = strings.ToLower(r.rg)
	return "azure://" + strings.Join(segs, "/")
}

// vmIDParser returns the providerID parser of a cluster in subscription:
// azure:///subscriptions/... (the ID after "azure://"), for VMs of our
// subscription only; the key is the lower-cased resource ID.
func vmIDParser(subscription string) func(pid string) (string, error) {
	return func(pid string) (string, error) {
		r, err := parseProviderID(pid, subscription)
		if err != nil {
			return "", err
		}
		return r.key(), nil
	}
}

func parseProviderID(pid, subscription string) (vmRef, error) {
	rest, ok := strings.CutPrefix(pid, "azure://")
	if !ok {
		return vmRef{}, fmt.Errorf("providerID %q is not an Azure providerID (want azure:///subscriptions/...)", pid)
	}
	r, err := parseVMID(rest)
	if err != nil {
		return vmRef{}, fmt.Errorf("providerID %q: %w", pid, err)
	}
	if !strings.EqualFold(r.sub, subscription) {
		return vmRef{}, fmt.Errorf("providerID %q names subscription %s; this manager serves %s", pid, r.sub, subscription)
	}
	return r, nil
}
