package azure

import (
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
)

// GET /subscriptions/{id}/providers/{namespace} (Resource Management,
// Providers - Get): a resource provider's registration and the resource
// types it serves, with their api-versions, locations and, for virtual
// machines, the zones of the location (zoneMappings), which clients such
// as the upstream Azure CCM read at start.

// resourcesAPIVersions are Microsoft.Resources api-versions the
// providers API is called with.
var resourcesAPIVersions = []string{"2025-04-01", "2025-03-01", "2024-11-01", "2024-07-01", "2024-03-01", "2022-09-01", "2021-04-01", "2020-06-01", "2019-05-01"}

type providerResourceType struct {
	ResourceType string        `json:"resourceType"`
	Locations    []string      `json:"locations"`
	APIVersions  []string      `json:"apiVersions"`
	ZoneMappings []zoneMapping `json:"zoneMappings,omitempty"`
}

type zoneMapping struct {
	Location string   `json:"location"`
	Zones    []string `json:"zones"`
}

type providerBody struct {
	ID                 string                 `json:"id"`
	Namespace          string                 `json:"namespace"`
	RegistrationState  string                 `json:"registrationState"`
	RegistrationPolicy string                 `json:"registrationPolicy"`
	ResourceTypes      []providerResourceType `json:"resourceTypes"`
}

func (e *Emulator) serveProvider(w http.ResponseWriter, r *http.Request, p armPath) {
	if r.Method != http.MethodGet {
		writeARMError(w, &armError{Status: http.StatusMethodNotAllowed, Code: "MethodNotAllowed", Message: fmt.Sprintf("The requested method %s is not allowed on a resource provider.", r.Method)})
		return
	}
	if v := r.URL.Query().Get("api-version"); !slices.Contains(resourcesAPIVersions, v) {
		writeARMError(w, &armError{Status: http.StatusBadRequest, Code: "InvalidApiVersionParameter",
			Message: fmt.Sprintf("The api-version '%s' is invalid. The supported versions are '%s'.", v, strings.Join(resourcesAPIVersions, ","))})
		return
	}
	var types []providerResourceType
	ns := ""
	for _, k := range e.kinds.byKey {
		if !strings.EqualFold(k.ns, p.NS) {
			continue
		}
		ns = k.ns
		rt := providerResourceType{ResourceType: k.typ, Locations: []string{e.cfg.Location}, APIVersions: slices.Clone(k.apiVersions)}
		if strings.EqualFold(k.typ, "virtualMachines") || strings.EqualFold(k.typ, "virtualMachineScaleSets") {
			rt.ZoneMappings = []zoneMapping{{Location: e.cfg.Location, Zones: slices.Clone(e.cfg.Zones)}}
		}
		types = append(types, rt)
	}
	if ns == "" {
		writeARMError(w, &armError{Status: http.StatusNotFound, Code: "InvalidResourceNamespace", Message: fmt.Sprintf("The resource namespace '%s' is invalid.", p.NS)})
		return
	}
	sort.Slice(types, func(i, j int) bool { return types[i].ResourceType < types[j].ResourceType })
	writeARMJSON(w, http.StatusOK, providerBody{
		ID: "/subscriptions/" + e.cfg.SubscriptionID + "/providers/" + ns, Namespace: ns,
		RegistrationState: "Registered", RegistrationPolicy: "RegistrationRequired", ResourceTypes: types,
	})
}
