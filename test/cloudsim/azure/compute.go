package azure

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Microsoft.Compute as the CCM uses it: virtual machines with their
// instance view, availability sets (compute_availability.go), scale sets
// (Uniform and Flexible) and a Uniform scale set's VMs. Virtual machines are read-only through ARM; scale sets and
// their VMs take the updates that put them into load balancer pools
// (compute_write.go). The admin API (admin.go) makes, scales, powers
// and deletes them.
//
// A scale set VM's network interfaces and public IPs belong to the
// network provider but live under Microsoft.Compute paths, with the
// network provider's old api-version (NetworkInterfaces_ListVirtualMachineScaleSetNetworkInterfaces
// and friends); they are registered here too, as service "network".
//
// Emulator state that ARM does not show is kept in the stored bodies
// under top-level keys starting with "_", which every view strips; a
// VM's instance view is stored in properties.instanceView and shown only
// when asked for ($expand=instanceView, statusOnly=true, or the
// instanceView action).

const computeNS = "Microsoft.Compute"

// Compute resource types.
const (
	typeVM             = "virtualMachines"
	typeVMSS           = "virtualMachineScaleSets"
	typeVMSSVM         = "virtualMachineScaleSets/virtualMachines"
	typeVMSSNICs       = "virtualMachineScaleSets/networkInterfaces"
	typeVMSSVMNIC      = "virtualMachineScaleSets/virtualMachines/networkInterfaces"
	typeVMSSVMIPConfig = "virtualMachineScaleSets/virtualMachines/networkInterfaces/ipConfigurations"
	typeVMSSVMPIP      = "virtualMachineScaleSets/virtualMachines/networkInterfaces/ipConfigurations/publicIPAddresses"
	typeVMSSPIPs       = "virtualMachineScaleSets/publicIPAddresses"
)

var (
	// computeAPIVersions: armcompute v6.4.0 sends 2024-11-01 for virtual
	// machines and scale sets; the two before it are still served, and
	// the Azure Stack Hub profile's (2019-07-01 for scale sets, 2017-12-01
	// for virtual machines: what the upstream Azure CCM sends for
	// AzureStackCloud, pkg/azclient/*/zz_generated_client.go), which ARM
	// also still serves.
	computeAPIVersions = []string{"2025-04-01", "2024-11-01", "2024-07-01", "2024-03-01", "2019-07-01", "2017-12-01"}
	// scaleSetNetworkAPIVersions: armnetwork sends 2018-10-01 for the
	// network resources under Microsoft.Compute paths.
	scaleSetNetworkAPIVersions = []string{"2018-10-01", "2017-03-30"}
)

// Power states, the part after "PowerState/" in the instance view.
const (
	PowerRunning      = "running"
	PowerStopped      = "stopped"
	PowerDeallocated  = "deallocated"
	PowerStarting     = "starting"
	PowerStopping     = "stopping"
	PowerDeallocating = "deallocating"
)

var powerDisplay = map[string]string{
	PowerRunning: "VM running", PowerStopped: "VM stopped", PowerDeallocated: "VM deallocated",
	PowerStarting: "VM starting", PowerStopping: "VM stopping", PowerDeallocating: "VM deallocating",
}

// registerCompute registers the Microsoft.Compute kinds.
func registerCompute(t *kindTable) {
	get := http.MethodGet
	t.add(&kind{
		service: "compute", ns: computeNS, typ: typeVM, group: "VirtualMachines",
		apiVersions: computeAPIVersions, tracked: true, readOnly: true, listAll: true,
		view: viewCompute, list: listVMs,
		actions: map[string]action{"instanceView": {method: get, op: "VirtualMachines_InstanceView", serve: serveInstanceView}},
	})
	// Availability sets take PUT, PATCH and DELETE (compute_availability.go).
	registerAvailabilitySets(t)
	// Scale sets and their VMs carry Compute's ETags and take PUT (and,
	// for scale sets, PATCH) as long-running operations; DELETE stays
	// with the admin API (readOnly).
	t.add(&kind{
		service: "compute", ns: computeNS, typ: typeVMSS, group: "VirtualMachineScaleSets",
		apiVersions: computeAPIVersions, tracked: true, readOnly: true, listAll: true,
		lro: true, etag: true, etagSeq: true, preconditionFailed: computePreconditionFailed,
		view: viewCompute, update: updateScaleSet,
		ops:     map[string]string{"UpdateTags": "VirtualMachineScaleSets_Update"},
		actions: map[string]action{"manualupgrade": {method: http.MethodPost, op: "VirtualMachineScaleSets_UpdateInstances", serve: serveUpdateInstances}},
	})
	t.add(&kind{
		service: "compute", ns: computeNS, typ: typeVMSSVM, group: "VirtualMachineScaleSetVMs",
		apiVersions: computeAPIVersions, readOnly: true,
		lro: true, etag: true, etagSeq: true, preconditionFailed: computePreconditionFailed,
		view: viewCompute, listFilter: filterScaleSetVMs, notFound: scaleSetVMNotFound, update: updateScaleSetVM,
		ops:     map[string]string{"CreateOrUpdate": "VirtualMachineScaleSetVMs_Update"},
		actions: map[string]action{"instanceView": {method: get, op: "VirtualMachineScaleSetVMs_GetInstanceView", serve: serveInstanceView}},
	})
	// The network provider's resources under Microsoft.Compute paths.
	t.add(&kind{
		service: "network", ns: computeNS, typ: typeVMSSNICs, group: "NetworkInterfaces",
		apiVersions: scaleSetNetworkAPIVersions, readOnly: true, list: listScaleSetNICs,
		ops: map[string]string{"List": "NetworkInterfaces_ListVirtualMachineScaleSetNetworkInterfaces"},
	})
	t.add(&kind{
		service: "network", ns: computeNS, typ: typeVMSSVMNIC, group: "NetworkInterfaces",
		apiVersions: scaleSetNetworkAPIVersions, readOnly: true, etag: true,
		list: listScaleSetVMNICs, notFound: scaleSetNetworkNotFound, view: viewCompute,
		ops: map[string]string{
			"Get":  "NetworkInterfaces_GetVirtualMachineScaleSetNetworkInterface",
			"List": "NetworkInterfaces_ListVirtualMachineScaleSetVMNetworkInterfaces",
		},
	})
	t.add(&kind{
		service: "network", ns: computeNS, typ: typeVMSSVMIPConfig, group: "NetworkInterfaces",
		apiVersions: scaleSetNetworkAPIVersions, readOnly: true,
		list: listScaleSetVMIPConfigs, notFound: scaleSetNetworkNotFound,
		ops: map[string]string{
			"Get":  "NetworkInterfaces_GetVirtualMachineScaleSetIPConfiguration",
			"List": "NetworkInterfaces_ListVirtualMachineScaleSetIPConfigurations",
		},
	})
	t.add(&kind{
		service: "network", ns: computeNS, typ: typeVMSSVMPIP, group: "PublicIPAddresses",
		apiVersions: scaleSetNetworkAPIVersions, readOnly: true, etag: true,
		list: listScaleSetVMPublicIPs, notFound: scaleSetNetworkNotFound, view: viewCompute,
		ops: map[string]string{
			"Get":  "PublicIPAddresses_GetVirtualMachineScaleSetPublicIPAddress",
			"List": "PublicIPAddresses_ListVirtualMachineScaleSetVMPublicIPAddresses",
		},
	})
	t.add(&kind{
		service: "network", ns: computeNS, typ: typeVMSSPIPs, group: "PublicIPAddresses",
		apiVersions: scaleSetNetworkAPIVersions, readOnly: true, list: listScaleSetPublicIPs,
		ops: map[string]string{"List": "PublicIPAddresses_ListVirtualMachineScaleSetPublicIPAddresses"},
	})
}

// ---- views ----

// expandsInstanceView says whether a GET or list asks for the instance
// view.
func expandsInstanceView(q url.Values) bool {
	switch strings.ToLower(q.Get("$expand")) {
	case "instanceview", "resiliencyview":
		return true
	}
	return strings.EqualFold(q.Get("statusOnly"), "true")
}

// viewCompute renders a compute object: hidden state stripped, the
// instance view only when asked for.
func viewCompute(_ *Emulator, o *object, q url.Values) (map[string]any, *armError) {
	return publicBody(o.body, expandsInstanceView(q)), nil
}

func publicBody(body map[string]any, withInstanceView bool) map[string]any {
	out := cloneJSON(body)
	for k := range out {
		if strings.HasPrefix(k, "_") {
			delete(out, k)
		}
	}
	if p, ok := out["properties"].(map[string]any); ok && !withInstanceView {
		delete(p, "instanceView")
	}
	return out
}

func serveInstanceView(_ *Emulator, w http.ResponseWriter, _ *http.Request, o *object) {
	iv, _ := o.props()["instanceView"].(map[string]any)
	if iv == nil {
		iv = map[string]any{}
	}
	writeARMJSON(w, http.StatusOK, cloneJSON(iv))
}

// ---- virtual machines ----

// listVMs serves VirtualMachines_List and VirtualMachines_ListAll: the
// scale set $filter, $expand=instanceView (only with a valid $filter)
// and, at subscription scope, statusOnly=true.
func listVMs(e *Emulator, p armPath, q url.Values) ([]map[string]any, *armError) {
	ssID, aerr := parseScaleSetFilter(q.Get("$filter"))
	if aerr != nil {
		return nil, aerr
	}
	if q.Get("$expand") != "" {
		if !strings.EqualFold(q.Get("$expand"), "instanceView") {
			return nil, &armError{Status: http.StatusBadRequest, Code: "InvalidParameter",
				Message: fmt.Sprintf("The value '%s' of parameter '$expand' is not valid. Allowed values are 'instanceView'.", q.Get("$expand"))}
		}
		if ssID == "" {
			return nil, &armError{Status: http.StatusBadRequest, Code: "InvalidParameter",
				Message: "The parameter '$expand' with value 'instanceView' can only be specified together with a valid '$filter' option."}
		}
	}
	withIV := strings.EqualFold(q.Get("$expand"), "instanceView") || (p.RG == "" && strings.EqualFold(q.Get("statusOnly"), "true"))
	var out []map[string]any
	for _, o := range e.objectsOf(e.kindOf(computeNS, typeVM)) {
		if p.RG != "" && !strings.EqualFold(o.rg, p.RG) {
			continue
		}
		if ssID != "" && !strings.EqualFold(idOfRef(o.props()["virtualMachineScaleSet"]), ssID) {
			continue
		}
		out = append(out, publicBody(o.body, withIV))
	}
	return out, nil
}

// parseScaleSetFilter reads "virtualMachineScaleSet/id eq '<id>'" (the
// property quoted or not); "" for no filter.
func parseScaleSetFilter(f string) (string, *armError) {
	f = strings.TrimSpace(f)
	if f == "" {
		return "", nil
	}
	bad := &armError{Status: http.StatusBadRequest, Code: "InvalidParameter",
		Message: fmt.Sprintf("The value '%s' of parameter '$filter' is not valid. Allowed value is \"'virtualMachineScaleSet/id' eq '/subscriptions/{subId}/resourceGroups/{resourceGroupName}/providers/Microsoft.Compute/virtualMachineScaleSets/{vmssName}'\".", f)}
	lhs, rhs, ok := strings.Cut(f, " eq ")
	if !ok {
		return "", bad
	}
	if !strings.EqualFold(strings.Trim(strings.TrimSpace(lhs), "'"), "virtualMachineScaleSet/id") {
		return "", bad
	}
	rhs = strings.TrimSpace(rhs)
	if len(rhs) < 2 || rhs[0] != '\'' || rhs[len(rhs)-1] != '\'' {
		return "", bad
	}
	id := rhs[1 : len(rhs)-1]
	if p, err := parseARMPath(id); err != nil || len(p.Types) != 1 || !strings.EqualFold(p.Types[0], typeVMSS) || len(p.Names) != 1 {
		return "", bad
	}
	return id, nil
}

// idOfRef is the id of a {"id": ...} reference.
func idOfRef(v any) string {
	m, _ := v.(map[string]any)
	s, _ := m["id"].(string)
	return s
}

// ---- scale set VMs ----

// filterScaleSetVMs applies VirtualMachineScaleSetVMs_List's $filter:
// "startswith(instanceView/statuses/code, 'PowerState') eq true" (all
// VMs; it goes with $select to fetch power states) and
// "properties/latestModelApplied eq true|false".
func filterScaleSetVMs(_ *Emulator, o *object, q url.Values) (bool, *armError) {
	f := strings.ToLower(strings.Join(strings.Fields(q.Get("$filter")), " "))
	switch f {
	case "", "startswith(instanceview/statuses/code, 'powerstate') eq true", "startswith(instanceview/statuses/code,'powerstate') eq true":
		return true, nil
	case "properties/latestmodelapplied eq true", "properties/latestmodelapplied eq false":
		applied, _ := o.props()["latestModelApplied"].(bool)
		return applied == strings.HasSuffix(f, "true"), nil
	}
	return false, &armError{Status: http.StatusBadRequest, Code: "InvalidParameter",
		Message: fmt.Sprintf("The value '%s' of parameter '$filter' is not valid. Allowed values are \"startswith(instanceView/statuses/code, 'PowerState') eq true\", 'properties/latestModelApplied eq true' and 'properties/latestModelApplied eq false'.", q.Get("$filter"))}
}

// scaleSetVMNotFound is what Compute answers for a scale set instance
// that does not exist: 400 for an instance ID that is not a number (as
// recorded in kubernetes-sigs/cloud-provider-azure
// pkg/azclient/virtualmachinescalesetvmclient/testdata), else 404.
func scaleSetVMNotFound(_ *Emulator, p armPath) *armError {
	if len(p.Names) > 1 && !instanceIDValid(p.Names[1]) {
		return &armError{Status: http.StatusBadRequest, Code: "InvalidParameter", Message: "Virtual Machine Scale Set VM instanceId must be a number."}
	}
	return &armError{Status: http.StatusNotFound, Code: "NotFound", Message: "The entity was not found in this Azure location."}
}

// ---- the network provider under Microsoft.Compute paths ----

// scaleSetNetworkNotFound is the network provider's 404 for a scale set
// network resource, or its scale set, that does not exist.
func scaleSetNetworkNotFound(e *Emulator, p armPath) *armError {
	if _, aerr := uniformScaleSet(e, p); aerr != nil {
		return aerr
	}
	k, _, _ := e.kinds.resolve(p)
	return errNetworkNotFound(resourceID(p.Sub, p.RG, k, p.Names))
}

func errNetworkNotFound(id string) *armError {
	return &armError{Status: http.StatusNotFound, Code: "NotFound", Message: "Resource " + id + " not found."}
}

func scaleSetIDOf(e *Emulator, p armPath) string {
	return resourceID(p.Sub, p.RG, e.kindOf(computeNS, typeVMSS), p.Names[:1])
}

// uniformScaleSet finds the Uniform scale set a network path names: the
// network provider knows no Flexible one (their VMs have ordinary
// network interfaces).
func uniformScaleSet(e *Emulator, p armPath) (*object, *armError) {
	id := scaleSetIDOf(e, p)
	ss := e.lookup(id)
	if ss == nil || isFlexible(ss) {
		return nil, errNetworkNotFound(id)
	}
	return ss, nil
}

func isFlexible(ss *object) bool {
	mode, _ := ss.props()["orchestrationMode"].(string)
	return strings.EqualFold(mode, "Flexible")
}

// publicUnder lists k's objects whose ID is under prefix (any case).
func (e *Emulator) publicUnder(k *kind, prefix string) []map[string]any {
	prefix = strings.ToLower(prefix) + "/"
	var out []map[string]any
	for _, o := range e.objectsOf(k) {
		if strings.HasPrefix(strings.ToLower(o.id), prefix) {
			out = append(out, publicBody(o.body, false))
		}
	}
	return out
}

// listScaleSetNICs serves NetworkInterfaces_ListVirtualMachineScaleSetNetworkInterfaces.
func listScaleSetNICs(e *Emulator, p armPath, _ url.Values) ([]map[string]any, *armError) {
	ss, aerr := uniformScaleSet(e, p)
	if aerr != nil {
		return nil, aerr
	}
	return e.publicUnder(e.kindOf(computeNS, typeVMSSVMNIC), ss.id), nil
}

// listScaleSetVMNICs serves NetworkInterfaces_ListVirtualMachineScaleSetVMNetworkInterfaces.
func listScaleSetVMNICs(e *Emulator, p armPath, _ url.Values) ([]map[string]any, *armError) {
	if _, aerr := uniformScaleSet(e, p); aerr != nil {
		return nil, aerr
	}
	vm := e.lookup(resourceID(p.Sub, p.RG, e.kindOf(computeNS, typeVMSSVM), p.Names[:2]))
	if vm == nil {
		return nil, errNetworkNotFound(resourceID(p.Sub, p.RG, e.kindOf(computeNS, typeVMSSVM), p.Names[:2]))
	}
	return e.publicUnder(e.kindOf(computeNS, typeVMSSVMNIC), vm.id), nil
}

// scaleSetNIC finds the scale set VM network interface a path names.
func scaleSetNIC(e *Emulator, p armPath) (*object, *armError) {
	if _, aerr := uniformScaleSet(e, p); aerr != nil {
		return nil, aerr
	}
	id := resourceID(p.Sub, p.RG, e.kindOf(computeNS, typeVMSSVMNIC), p.Names[:3])
	nic := e.lookup(id)
	if nic == nil {
		return nil, errNetworkNotFound(id)
	}
	return nic, nil
}

// listScaleSetVMIPConfigs serves NetworkInterfaces_ListVirtualMachineScaleSetIPConfigurations
// from the interface's own ipConfigurations.
func listScaleSetVMIPConfigs(e *Emulator, p armPath, _ url.Values) ([]map[string]any, *armError) {
	nic, aerr := scaleSetNIC(e, p)
	if aerr != nil {
		return nil, aerr
	}
	var out []map[string]any
	cfgs, _ := nic.props()["ipConfigurations"].([]any)
	for _, c := range cfgs {
		if m, ok := c.(map[string]any); ok {
			out = append(out, cloneJSON(m))
		}
	}
	return out, nil
}

// listScaleSetVMPublicIPs serves PublicIPAddresses_ListVirtualMachineScaleSetVMPublicIPAddresses.
func listScaleSetVMPublicIPs(e *Emulator, p armPath, _ url.Values) ([]map[string]any, *armError) {
	nic, aerr := scaleSetNIC(e, p)
	if aerr != nil {
		return nil, aerr
	}
	return e.publicUnder(e.kindOf(computeNS, typeVMSSVMPIP), nic.id+"/ipConfigurations/"+p.Names[3]), nil
}

// listScaleSetPublicIPs serves PublicIPAddresses_ListVirtualMachineScaleSetPublicIPAddresses.
func listScaleSetPublicIPs(e *Emulator, p armPath, _ url.Values) ([]map[string]any, *armError) {
	ss, aerr := uniformScaleSet(e, p)
	if aerr != nil {
		return nil, aerr
	}
	return e.publicUnder(e.kindOf(computeNS, typeVMSSVMPIP), ss.id), nil
}

// ---- bodies ----

// newInstanceView is a running (or other power state) VM's instance view.
func newInstanceView(computerName string, faultDomain, updateDomain int, power string, t time.Time) map[string]any {
	ts := t.UTC().Format(time.RFC3339Nano)
	return map[string]any{
		"computerName":         computerName,
		"osName":               "ubuntu",
		"osVersion":            "22.04",
		"hyperVGeneration":     "V2",
		"platformFaultDomain":  faultDomain,
		"platformUpdateDomain": updateDomain,
		"vmAgent": map[string]any{
			"vmAgentVersion": "2.12.0.2",
			"statuses": []any{map[string]any{
				"code": "ProvisioningState/succeeded", "level": "Info", "displayStatus": "Ready",
				"message": "Guest Agent is running", "time": ts,
			}},
		},
		"statuses": []any{
			map[string]any{"code": "ProvisioningState/succeeded", "level": "Info", "displayStatus": "Provisioning succeeded", "time": ts},
			powerStatus(power),
		},
	}
}

func powerStatus(power string) map[string]any {
	return map[string]any{"code": "PowerState/" + power, "level": "Info", "displayStatus": powerDisplay[power]}
}

// powerOf is a VM's power state from its instance view.
func powerOf(o *object) string {
	iv, _ := o.props()["instanceView"].(map[string]any)
	sts, _ := iv["statuses"].([]any)
	for _, s := range sts {
		m, _ := s.(map[string]any)
		if code, _ := m["code"].(string); strings.HasPrefix(code, "PowerState/") {
			return strings.TrimPrefix(code, "PowerState/")
		}
	}
	return ""
}

// setPower changes a VM's power state in its instance view.
func setPower(o *object, power string) {
	iv, _ := o.props()["instanceView"].(map[string]any)
	if iv == nil {
		return
	}
	sts, _ := iv["statuses"].([]any)
	for i, s := range sts {
		m, _ := s.(map[string]any)
		if code, _ := m["code"].(string); strings.HasPrefix(code, "PowerState/") {
			sts[i] = powerStatus(power)
			return
		}
	}
	iv["statuses"] = append(sts, powerStatus(power))
}

// imageReference and osDisk are the storage profile every VM gets.
func storageProfile(vmName string, seq string) map[string]any {
	return map[string]any{
		"imageReference": map[string]any{
			"publisher": "Canonical", "offer": "0001-com-ubuntu-server-jammy", "sku": "22_04-lts-gen2",
			"version": "latest", "exactVersion": "22.04.202501010",
		},
		"osDisk": map[string]any{
			"osType": "Linux", "name": vmName + "_OsDisk_1_" + seq, "createOption": "FromImage",
			"caching": "ReadWrite", "managedDisk": map[string]any{"storageAccountType": "Premium_LRS"},
			"deleteOption": "Delete", "diskSizeGB": 30,
		},
		"dataDisks": []any{},
	}
}

func linuxOSProfile(computerName string) map[string]any {
	p := map[string]any{
		"adminUsername": "azureuser",
		"linuxConfiguration": map[string]any{
			"disablePasswordAuthentication": true, "provisionVMAgent": true,
			"patchSettings": map[string]any{"patchMode": "ImageDefault", "assessmentMode": "ImageDefault"},
		},
		"secrets": []any{}, "allowExtensionOperations": true, "requireGuestProvisionSignal": true,
	}
	if computerName != "" {
		p["computerName"] = computerName
	}
	return p
}

// withUpperRG writes an ID's resource group name in upper case, as
// Compute does in some references it returns (a scale set VM's network
// interfaces, availability sets): clients must compare IDs ignoring case.
func withUpperRG(id string) string {
	segs := strings.Split(id, "/")
	for i := 0; i+1 < len(segs); i++ {
		if strings.EqualFold(segs[i], "resourceGroups") {
			segs[i+1] = strings.ToUpper(segs[i+1])
			break
		}
	}
	return strings.Join(segs, "/")
}
