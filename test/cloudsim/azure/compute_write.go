package azure

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Compute's writes, as far as a cloud-controller-manager makes them: the
// upstream Azure CCM ("nodeIPConfiguration" backend pools) puts a
// Uniform scale set's nodes into a load balancer's pool by adding the
// pool to the scale set's model (VirtualMachineScaleSets_CreateOrUpdate
// with a body of location and network profile only, or _Update) and to
// each instance's network configuration
// (VirtualMachineScaleSetVMs_Update, If-Match the instance's ETag);
// VirtualMachineScaleSets_UpdateInstances applies the model to
// instances instead.
//
// Compute merges a PUT or PATCH into the stored resource (mergeJSON):
// what the body leaves out keeps its stored value, which is why the
// upstream CCM's network-profile-only PUT does not wipe the rest of the
// scale set. Writable here are a scale set's tags, virtualMachineProfile
// and upgradePolicy, and an instance's networkProfileConfiguration;
// other properties keep their stored values, and a change of sku
// (capacity) is refused as not emulated (the admin API scales).
//
// ETags are Compute's: a quoted counter ("1") that moves only when the
// resource changes. A scale set's model and its instances' models are
// apart: with upgrade policy Manual (the admin's scale sets) a model
// change leaves each instance as it was, latestModelApplied false, until
// the instance is updated or upgraded; with Automatic or Rolling the
// instances take the model at once (Rolling's batches are not emulated).
// A model is held in two parts: the network configurations, compared
// with the instance's networkProfileConfiguration, and a counter
// (_modelSeq) for the rest of virtualMachineProfile.
//
// Of an instance's network configuration only backend pool memberships
// reach its network interface (the primary configuration's IP
// configurations, matched by name); other changes are stored and shown
// but not applied.

// errNotEmulated is the answer to a request the emulator knowingly does
// not serve.
func errNotEmulated(what string) *armError {
	return &armError{Status: http.StatusNotImplemented, Code: "NotImplemented", Message: "cloudsim: " + what + " is not emulated."}
}

// computePreconditionFailed words Compute's 412. The If-Match form is as
// Compute answers (recorded in kubernetes-sigs/cloud-provider-azure
// pkg/azclient/virtualmachinescalesetclient/testdata); the
// If-None-Match form is worded here.
func computePreconditionFailed(header, sent, have string) *armError {
	msg := fmt.Sprintf("Etag provided in %s header %q does not match etag %s of resource.", header, strings.Trim(sent, `"`), have)
	switch {
	case header == "if-none-match":
		msg = fmt.Sprintf("Etag provided in if-none-match header %q matches etag %s of resource.", sent, have)
	case have == "":
		msg = fmt.Sprintf("Etag provided in if-match header %q does not match: the resource does not exist.", strings.Trim(sent, `"`))
	}
	return &armError{Status: http.StatusPreconditionFailed, Code: "PreconditionFailed", Message: msg}
}

// ---- scale sets ----

// updateScaleSet serves VirtualMachineScaleSets_CreateOrUpdate (PUT) and
// _Update (PATCH) of an existing scale set.
func updateScaleSet(e *Emulator, c *putCall) (bool, *armError) {
	ss := c.Old
	if ss == nil {
		if c.Method == http.MethodPatch {
			return false, errResourceNotFound(e.kindOf(computeNS, typeVMSS), c.Path)
		}
		return false, errNotEmulated("creating a scale set through ARM (the admin API's CreateScaleSet makes them)")
	}
	if sku, ok := c.Body["sku"].(map[string]any); ok {
		for _, key := range []string{"name", "capacity"} {
			if v, ok := sku[key]; ok && v != nil && !strings.EqualFold(fmt.Sprint(v), fmt.Sprint(jsonValue(ss.body, "sku", key))) {
				return false, errNotEmulated("changing a scale set's sku " + key + " (the admin API's ScaleOut and DeleteScaleSetInstance scale)")
			}
		}
	}
	props, _ := c.Body["properties"].(map[string]any)
	if mode, ok := props["orchestrationMode"].(string); ok && !strings.EqualFold(mode, jsonStr(ss.props(), "orchestrationMode")) {
		// Compute's code; the wording is not verified.
		return false, &armError{Status: http.StatusBadRequest, Code: "PropertyChangeNotAllowed", Message: "Changing property 'orchestrationMode' is not allowed."}
	}

	next := copyBody(ss.body)
	if tags, ok := c.Body["tags"]; ok {
		if tags == nil {
			delete(next, "tags")
		} else {
			next["tags"] = deepCopy(tags)
		}
	}
	nprops := propsOf(next)
	for _, key := range []string{"virtualMachineProfile", "upgradePolicy"} {
		if v, ok := props[key]; ok {
			if v == nil {
				delete(nprops, key)
			} else {
				nprops[key] = mergeJSON(nprops[key], v)
			}
		}
	}
	// Compute checks the whole model on every write, so a scale set that
	// references a pool since deleted cannot be updated until the
	// reference goes.
	const netPath = "properties.virtualMachineProfile.networkProfile.networkInterfaceConfigurations"
	if aerr := e.checkNetworkConfigs(ss.id, ss.id, netPath, modelNetConfigs(next)); aerr != nil {
		return false, aerr
	}
	auto := !isFlexible(ss) && slices.Contains([]string{"automatic", "rolling"}, strings.ToLower(jsonStr(nprops, "upgradePolicy", "mode")))
	var plans [][]nicPoolChange
	var insts []*object
	if auto {
		insts = e.scaleSetInstances(ss)
		for _, vm := range insts {
			plan, aerr := e.planInstanceNetwork(vm, modelNetConfigs(next), vm.id, netPath)
			if aerr != nil {
				return false, aerr
			}
			plans = append(plans, plan)
		}
	}

	before := bodyState(ss.body)
	profileChanged := canonJSON(profileWithoutNetwork(ss.body)) != canonJSON(profileWithoutNetwork(next))
	ss.body = next
	if profileChanged {
		next["_modelSeq"] = jsonInt(next["_modelSeq"]) + 1
	}
	if !isFlexible(ss) {
		if auto {
			for i, vm := range insts {
				e.applyModel(ss, vm, plans[i])
			}
		} else {
			for _, vm := range e.scaleSetInstances(ss) {
				e.refreshModelApplied(ss, vm)
			}
		}
	}
	return bodyState(ss.body) != before, nil
}

// serveUpdateInstances serves VirtualMachineScaleSets_UpdateInstances
// (POST .../manualupgrade {"instanceIds": [...]}): the instances take the
// scale set's current model, all of them or, when one cannot, none.
func serveUpdateInstances(e *Emulator, w http.ResponseWriter, r *http.Request, ss *object) {
	var req struct {
		InstanceIDs []string `json:"instanceIds"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeARMError(w, errInvalidContent(err))
		return
	}
	if isFlexible(ss) {
		writeARMError(w, errNotEmulated("UpdateInstances on a Flexible scale set"))
		return
	}
	if len(req.InstanceIDs) == 0 {
		// Compute's code and its wording of a missing parameter; not
		// verified for this operation.
		writeARMError(w, &armError{Status: http.StatusBadRequest, Code: "InvalidParameter", Message: "Required parameter 'instanceIds' is missing (null)."})
		return
	}
	model := modelNetConfigs(ss.body)
	vmKind := e.kindOf(computeNS, typeVMSSVM)
	var vms []*object
	var plans [][]nicPoolChange
	for _, id := range req.InstanceIDs {
		vm := e.lookup(resourceID(e.cfg.SubscriptionID, ss.rg, vmKind, []string{ss.name(), id}))
		if vm == nil {
			// Compute's code; the wording is recalled, not verified.
			writeARMError(w, &armError{Status: http.StatusBadRequest, Code: "InvalidParameter",
				Message: fmt.Sprintf("The provided instanceId %s is not an active Virtual Machine Scale Set VM instanceId.", id)})
			return
		}
		if slices.Contains(vms, vm) {
			continue
		}
		plan, aerr := e.planInstanceNetwork(vm, model, vm.id, "properties.virtualMachineProfile.networkProfile.networkInterfaceConfigurations")
		if aerr != nil {
			writeARMError(w, aerr)
			return
		}
		vms = append(vms, vm)
		plans = append(plans, plan)
	}
	for i, vm := range vms {
		e.applyModel(ss, vm, plans[i])
	}
	op := e.startOp(ss, http.MethodPost, r)
	if !op.done {
		op.also = vms
		for _, vm := range vms {
			vm.pending = op
			vm.props()["provisioningState"] = "Updating"
		}
	}
	e.accepted(w, r, op)
}

// applyModel gives an instance its scale set's current model (e.mu
// held): the network configurations, their pools on its network
// interface (plan, checked), and the rest of the model's counter.
func (e *Emulator) applyModel(ss, vm *object, plan []nicPoolChange) {
	before := bodyState(vm.body)
	propsOf(vm.body)["networkProfileConfiguration"] = map[string]any{"networkInterfaceConfigurations": deepCopy(modelNetConfigs(ss.body))}
	vm.body["_modelSeq"] = jsonInt(ss.body["_modelSeq"])
	e.commitNICPools(plan)
	e.refreshModelApplied(ss, vm)
	if bodyState(vm.body) != before {
		e.renewETag(vm)
	}
}

// ---- scale set instances ----

// updateScaleSetVM serves VirtualMachineScaleSetVMs_Update (PUT) of a
// Uniform scale set's instance: its networkProfileConfiguration, whose
// pools its network interface then has.
func updateScaleSetVM(e *Emulator, c *putCall) (bool, *armError) {
	if c.Method != http.MethodPut {
		return false, &armError{Status: http.StatusMethodNotAllowed, Code: "MethodNotAllowed", Message: "The requested resource does not support http method '" + c.Method + "'."}
	}
	vm := c.Old
	if vm == nil {
		return false, scaleSetVMNotFound(e, c.Path)
	}
	ss := e.lookup(parentOf(vm.id))
	if ss == nil {
		return false, scaleSetVMNotFound(e, c.Path)
	}
	next := copyBody(vm.body)
	props, _ := c.Body["properties"].(map[string]any)
	if npc, ok := props["networkProfileConfiguration"]; ok && npc != nil {
		nprops := propsOf(next)
		nprops["networkProfileConfiguration"] = mergeJSON(nprops["networkProfileConfiguration"], npc)
	}
	const netPath = "properties.networkProfileConfiguration.networkInterfaceConfigurations"
	configs := vmNetConfigs(next)
	if aerr := e.checkNetworkConfigs(vm.id, vm.id, netPath, configs); aerr != nil {
		return false, aerr
	}
	plan, aerr := e.planInstanceNetwork(vm, configs, vm.id, netPath)
	if aerr != nil {
		return false, aerr
	}
	before := bodyState(vm.body)
	vm.body = next
	e.commitNICPools(plan)
	e.refreshModelApplied(ss, vm)
	return bodyState(vm.body) != before, nil
}

// refreshModelApplied sets an instance's latestModelApplied: whether its
// model is still its scale set's. It is worked out by comparing the two,
// so an instance update that makes the instance's network configuration
// the model's brings it back to true; that Compute does the same is
// inferred, not verified.
func (e *Emulator) refreshModelApplied(ss, vm *object) {
	applied := jsonInt(vm.body["_modelSeq"]) == jsonInt(ss.body["_modelSeq"]) &&
		canonJSON(vmNetConfigs(vm.body)) == canonJSON(modelNetConfigs(ss.body))
	vm.props()["latestModelApplied"] = applied
}

// ---- network configurations ----

// modelNetConfigs are a scale set body's model network configurations.
func modelNetConfigs(body map[string]any) []any {
	v, _ := jsonValue(body, "properties", "virtualMachineProfile", "networkProfile", "networkInterfaceConfigurations").([]any)
	return v
}

// vmNetConfigs are an instance body's network configurations.
func vmNetConfigs(body map[string]any) []any {
	v, _ := jsonValue(body, "properties", "networkProfileConfiguration", "networkInterfaceConfigurations").([]any)
	return v
}

// profileWithoutNetwork is a scale set's virtualMachineProfile but for
// its network profile: the part of the model _modelSeq counts.
func profileWithoutNetwork(body map[string]any) map[string]any {
	p, _ := jsonValue(body, "properties", "virtualMachineProfile").(map[string]any)
	out := map[string]any{}
	for k, v := range p {
		if k != "networkProfile" {
			out[k] = v
		}
	}
	return out
}

// checkNetworkConfigs checks the subnets and pool references of network
// configurations (at path in the request) that referrer writes.
func (e *Emulator) checkNetworkConfigs(referrer, self, path string, configs []any) *armError {
	joined := map[string]poolMember{}
	for i, nc := range configs {
		ips, _ := jsonValue(asMap(nc), "properties", "ipConfigurations").([]any)
		for j, ipc := range ips {
			ip, _ := asMap(ipc)["properties"].(map[string]any)
			version := versionOf(ip)
			sub := refID(ip, "subnet")
			if sub != "" {
				s := e.lookupKind(sub, "virtualNetworks/subnets")
				if s == nil {
					return errInvalidReference(sub, referrer)
				}
				if version == ipv6 && !hasFamily(s.body, true) {
					return errNoIPv6Prefix("IP configuration "+jsonStr(asMap(ipc), "name"), s.id)
				}
				sub = s.id
			}
			join := poolJoin{referrer: referrer, subnet: sub, self: self, ipConfig: jsonStr(asMap(ipc), "name"), version: version, joined: joined,
				path: fmt.Sprintf("%s[%d].properties.ipConfigurations[%d].properties.loadBalancerBackendAddressPools", path, i, j)}
			if _, aerr := e.checkPools(join, refIDs(ip["loadBalancerBackendAddressPools"])); aerr != nil {
				return aerr
			}
		}
	}
	return nil
}

// nicPoolChange is the pools one IP configuration of an instance's
// network interface is to have.
type nicPoolChange struct {
	nic   *object
	ipc   map[string]any
	pools []string
}

// planInstanceNetwork works out, and checks, the pools an instance's
// network interface gets from network configurations: the primary
// configuration's IP configurations, each onto the interface's IP
// configuration of the same name (the primary one onto the primary).
func (e *Emulator) planInstanceNetwork(vm *object, configs []any, referrer, path string) ([]nicPoolChange, *armError) {
	nicID, _ := vm.body["_nic"].(string)
	nic := e.lookup(nicID)
	ci := primaryIndex(configs)
	if nic == nil || ci < 0 {
		return nil, nil
	}
	nc := asMap(configs[ci])
	nicIPCs, _ := nic.props()["ipConfigurations"].([]any)
	ips, _ := jsonValue(nc, "properties", "ipConfigurations").([]any)
	primary := primaryIndex(ips)
	joined := map[string]poolMember{}
	var plan []nicPoolChange
	for j, ipc := range ips {
		m := asMap(ipc)
		target := namedItem(nicIPCs, jsonStr(m, "name"))
		if target == nil && j == primary {
			target = primaryItem(nicIPCs)
		}
		if target == nil {
			continue
		}
		ip, _ := m["properties"].(map[string]any)
		join := poolJoin{referrer: referrer, subnet: jsonStr(target, "properties", "subnet", "id"), self: vm.id,
			ipConfig: jsonStr(target, "name"), version: versionOf(propsOf(target)), joined: joined,
			path: fmt.Sprintf("%s[%d].properties.ipConfigurations[%d].properties.loadBalancerBackendAddressPools", path, ci, j)}
		pools, aerr := e.checkPools(join, refIDs(ip["loadBalancerBackendAddressPools"]))
		if aerr != nil {
			return nil, aerr
		}
		plan = append(plan, nicPoolChange{nic: nic, ipc: target, pools: pools})
	}
	return plan, nil
}

// commitNICPools writes planned pools onto network interfaces, which get
// a new ETag if that changed them.
func (e *Emulator) commitNICPools(plan []nicPoolChange) {
	changed := map[*object]bool{}
	for _, ch := range plan {
		props := propsOf(ch.ipc)
		if sameIDs(refIDs(props["loadBalancerBackendAddressPools"]), ch.pools) {
			continue
		}
		props["loadBalancerBackendAddressPools"] = subResources(ch.pools)
		changed[ch.nic] = true
	}
	for nic := range changed {
		e.renewETag(nic)
		ipcs, _ := nic.props()["ipConfigurations"].([]any)
		for _, ipc := range ipcs {
			asMap(ipc)["etag"] = nic.body["etag"]
		}
	}
}

// primaryIndex is the index of the primary one of network or IP
// configurations: the only one, or the one marked primary, as Compute
// and the upstream CCM pick them; -1 if none is.
func primaryIndex(items []any) int {
	if len(items) == 1 {
		return 0
	}
	for i, it := range items {
		if p, _ := jsonValue(asMap(it), "properties", "primary").(bool); p {
			return i
		}
	}
	return -1
}

// primaryItem is the primary one of network or IP configurations, nil if
// none is.
func primaryItem(items []any) map[string]any {
	if i := primaryIndex(items); i >= 0 {
		return asMap(items[i])
	}
	return nil
}

// namedItem is the item of a list of named objects with name (any case).
func namedItem(items []any, name string) map[string]any {
	for _, it := range items {
		if m := asMap(it); name != "" && strings.EqualFold(jsonStr(m, "name"), name) {
			return m
		}
	}
	return nil
}

// ---- JSON ----

// mergeJSON merges src into dst as Compute applies a PUT or PATCH body
// to a stored resource: objects merge key by key (null deletes a key),
// a list of named objects merges item by item by name (the result has
// src's items in src's order, so an item left out is removed), other
// values and lists replace. dst is not changed.
func mergeJSON(dst, src any) any {
	switch s := src.(type) {
	case map[string]any:
		out := map[string]any{}
		if d, ok := dst.(map[string]any); ok {
			out = copyBody(d)
		}
		for k, v := range s {
			if v == nil {
				delete(out, k)
				continue
			}
			out[k] = mergeJSON(out[k], v)
		}
		return out
	case []any:
		d, _ := dst.([]any)
		out := make([]any, 0, len(s))
		for _, x := range s {
			m, ok := x.(map[string]any)
			if old := namedItem(d, jsonStr(m, "name")); ok && old != nil {
				out = append(out, mergeJSON(old, m))
				continue
			}
			out = append(out, deepCopy(x))
		}
		return out
	}
	return src
}

// canonJSON is a JSON value in a form that compares as Compute compares
// models: IDs in any case, empty lists and nulls as absent.
func canonJSON(v any) string {
	var canon func(v any, key string) any
	canon = func(v any, key string) any {
		switch t := v.(type) {
		case map[string]any:
			out := map[string]any{}
			for k, x := range t {
				if x == nil {
					continue
				}
				if l, ok := x.([]any); ok && len(l) == 0 {
					continue
				}
				c := canon(x, k)
				if m, ok := c.(map[string]any); ok && len(m) == 0 {
					continue
				}
				out[k] = c
			}
			return out
		case []any:
			out := make([]any, len(t))
			for i, x := range t {
				out[i] = canon(x, "")
			}
			return out
		case string:
			if key == "id" {
				return strings.ToLower(t)
			}
		}
		return v
	}
	b, _ := json.Marshal(canon(v, ""))
	return string(b)
}

// computeState is what a write can change of a compute body, to tell
// whether it did (the ETag moves only then): the body as shown, but for
// its ETag and provisioningState.
func bodyState(body map[string]any) string {
	b := publicBody(body, false)
	delete(b, "etag")
	delete(propsOf(b), "provisioningState")
	return canonJSON(b)
}

// jsonValue reads the value at a path of keys.
func jsonValue(m map[string]any, keys ...string) any {
	var v any = m
	for _, k := range keys {
		mm, _ := v.(map[string]any)
		v = mm[k]
	}
	return v
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// refIDs reads the ids of a list of {"id": ...} references.
func refIDs(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, r := range list {
		out = append(out, idOfRef(r))
	}
	return out
}

// sameIDs says two lists hold the same IDs, in any case and order.
func sameIDs(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	norm := func(l []string) []string {
		out := make([]string, len(l))
		for i, s := range l {
			out[i] = strings.ToLower(s)
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(norm(a), norm(b))
}

// instanceIDValid says an instance ID is a number, as Compute requires.
func instanceIDValid(id string) bool {
	_, err := strconv.ParseUint(id, 10, 32)
	return err == nil
}
