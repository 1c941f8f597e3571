package openstack

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"
)

// Flavors and availability zones: /v2/lbaas/flavors (Octavia 2.6) and
// /v2/lbaas/availabilityzones (2.14), read-only for a project member
// (octavia/api/v2/controllers/flavors.py, availability_zones.py); their
// profiles, and every write, are the operator's (403), so the emulator
// takes them from OctaviaConfig. A load balancer names them at creation
// only: LoadBalancerPUT has neither attribute.

// OctaviaFlavor is a flavor with its flavor profile.
type OctaviaFlavor struct {
	// ID is the flavor's UUID, default a new one.
	ID          string
	Name        string
	Description string
	// Provider is the flavor profile's provider_name, default "amphora";
	// a load balancer of this flavor gets this provider.
	Provider string
	// Metadata is the flavor profile's flavor_data, e.g.
	// {"loadbalancer_topology": "ACTIVE_STANDBY"}.
	Metadata map[string]string
	// Disabled is enabled false: the flavor is listed, but a load
	// balancer cannot use it.
	Disabled bool
}

// OctaviaAvailabilityZone is an availability zone with its profile.
type OctaviaAvailabilityZone struct {
	Name        string
	Description string
	// Provider is the profile's provider_name, default "amphora".
	Provider string
	// ComputeZone is the profile's compute_zone, a Nova zone of
	// Config.Zones; empty for a profile without metadata.
	ComputeZone string
	// Disabled is enabled false.
	Disabled bool
}

type octaviaFlavor struct {
	OctaviaFlavor
	profileID string
}

type octaviaZone struct {
	OctaviaAvailabilityZone
	profileID string
}

// initOctaviaCatalog stores the configured flavors and availability
// zones; a broken one panics, as New does on any broken fixture.
func (e *Emulator) initOctaviaCatalog() {
	e.octavia.flavors = map[string]*octaviaFlavor{}
	for _, f := range e.cfg.Octavia.Flavors {
		if f.ID == "" {
			f.ID = e.ids.uuid()
		}
		id, ok := ovNormalizeUUID(f.ID)
		if !ok || f.Name == "" {
			panic(fmt.Sprintf("cloudsim/openstack: Octavia flavor %q %q needs a name and a UUID", f.Name, f.ID))
		}
		f.ID = id
		if f.Provider == "" {
			f.Provider = "amphora"
		}
		f.Metadata = maps.Clone(f.Metadata)
		e.octavia.flavors[id] = &octaviaFlavor{OctaviaFlavor: f, profileID: e.ids.uuid()}
		e.octavia.flavorOrder = append(e.octavia.flavorOrder, id)
	}
	e.octavia.zones = map[string]*octaviaZone{}
	for _, z := range e.cfg.Octavia.AvailabilityZones {
		if z.Name == "" || e.octavia.zones[z.Name] != nil {
			panic(fmt.Sprintf("cloudsim/openstack: Octavia availability zone %q needs a unique name", z.Name))
		}
		if z.ComputeZone != "" && !slices.Contains(e.cfg.Zones, z.ComputeZone) {
			// The amphora driver checks it against Nova when the
			// profile is made.
			panic(fmt.Sprintf("cloudsim/openstack: Octavia availability zone %q: compute_zone %q is not a Nova zone of %v", z.Name, z.ComputeZone, e.cfg.Zones))
		}
		if z.Provider == "" {
			z.Provider = "amphora"
		}
		e.octavia.zones[z.Name] = &octaviaZone{OctaviaAvailabilityZone: z, profileID: e.ids.uuid()}
		e.octavia.zoneOrder = append(e.octavia.zoneOrder, z.Name)
	}
}

func (z *octaviaZone) metadata() map[string]string {
	if z.ComputeZone == "" {
		return nil
	}
	return map[string]string{"compute_zone": z.ComputeZone}
}

// lbPlacement is what a load balancer create's flavor and availability
// zone decide.
type lbPlacement struct {
	provider string
	flavor   *octaviaFlavor
	zone     *octaviaZone
}

// resolvePlacement is load_balancer.py's post() between the VIP checks
// and the quota: _validate_flavor, _validate_availability_zone, then
// _get_provider (the flavor's provider, which a requested provider must
// match) and the driver lookup.
func (e *Emulator) resolvePlacement(o ovObj) (lbPlacement, *apiError) {
	var pl lbPlacement
	if o.has("flavor_id") {
		f := e.octavia.flavors[o.str("flavor_id")]
		if f == nil {
			return pl, errOctaviaValidation("Invalid flavor_id.")
		}
		if f.Disabled {
			return pl, errOctaviaDisabledOption("flavor", f.ID)
		}
		pl.flavor = f
	}
	if o.has("availability_zone") {
		z := e.octavia.zones[o.str("availability_zone")]
		if z == nil {
			return pl, errOctaviaValidation("Invalid availability zone.")
		}
		if z.Disabled {
			return pl, errOctaviaDisabledOption("availability_zone", z.Name)
		}
		pl.zone = z
	}
	requested := o.strp("provider")
	if pl.flavor != nil {
		if requested != nil && *requested != pl.flavor.Provider {
			return pl, octaviaErr(http.StatusBadRequest, "Flavor '%s' is not compatible with provider '%s'", pl.flavor.ID, *requested)
		}
		requested = &pl.flavor.Provider
	}
	provider, err := e.providerFor(requested)
	if err != nil {
		return pl, err
	}
	pl.provider = provider
	return pl, nil
}

// checkPlacementWithDriver is _apply_flavor_to_lb_dict and
// _validate_and_return_az_dict: a flavor or zone with metadata is handed
// to the driver's validate_flavor or validate_availability_zone, which
// the OVN driver does not implement (octavia-lib's NotImplementedError).
// The amphora driver's schema and Nova checks ran when the profiles were
// made.
func checkPlacementWithDriver(pl lbPlacement) *apiError {
	if !isOVN(pl.provider) {
		return nil
	}
	if pl.flavor != nil && len(pl.flavor.Metadata) > 0 {
		return errOctaviaNotImplemented(pl.provider, "This provider does not support validating flavors.")
	}
	if pl.zone != nil && len(pl.zone.metadata()) > 0 {
		return errOctaviaNotImplemented(pl.provider, "This provider does not support validating availability zones.")
	}
	return nil
}

// topology is the load balancer topology the flavor sets, else
// [controller_worker] loadbalancer_topology's default.
func (pl lbPlacement) topology() string {
	if pl.flavor != nil {
		if t := pl.flavor.Metadata["loadbalancer_topology"]; t != "" {
			return t
		}
	}
	return "SINGLE"
}

// errOctaviaDisabledOption is DisabledOption.
func errOctaviaDisabledOption(option, value string) *apiError {
	return octaviaErr(http.StatusBadRequest, "The selected %s is not allowed in this deployment: %s", option, value)
}

// errOctaviaNotImplemented is ProviderNotImplementedError, what a
// driver's NotImplementedError becomes.
func errOctaviaNotImplemented(provider, msg string) *apiError {
	return octaviaErr(http.StatusNotImplemented, "Provider '%s' does not support a requested action: %s", provider, msg)
}

// octaviaForbidden answers what only an operator may do: the profiles,
// and creating, changing or deleting flavors and availability zones.
func octaviaForbidden(*Emulator, *octaviaCall) (int, any, *apiError) {
	return 0, nil, errOctaviaPolicy()
}

// --- handlers ---

func (e *Emulator) flavorView(f *octaviaFlavor) map[string]any {
	return map[string]any{
		"id": f.ID, "name": f.Name, "description": f.Description, "enabled": !f.Disabled,
		"flavor_profile_id": f.profileID,
	}
}

func (e *Emulator) zoneView(z *octaviaZone) map[string]any {
	return map[string]any{
		"name": z.Name, "description": z.Description, "enabled": !z.Disabled,
		"availability_zone_profile_id": z.profileID,
	}
}

func (e *Emulator) getLBFlavor(c *octaviaCall) (int, any, *apiError) {
	id, _ := ovNormalizeUUID(c.ids[0])
	f := e.octavia.flavors[id]
	if f == nil {
		return 0, nil, errOctaviaNotFound("Flavor", c.ids[0])
	}
	return http.StatusOK, map[string]any{"flavor": ovFields(c, e.flavorView(f))}, nil
}

// listLBFlavors lists every flavor: flavors belong to no project.
func (e *Emulator) listLBFlavors(c *octaviaCall) (int, any, *apiError) {
	items := make([]*octaviaFlavor, 0, len(e.octavia.flavorOrder))
	for _, id := range e.octavia.flavorOrder {
		items = append(items, e.octavia.flavors[id])
	}
	return octaviaList(e, c, ovListSpec[*octaviaFlavor]{
		collection: "flavors",
		columns: map[string]func(*octaviaFlavor) any{
			"id":                func(f *octaviaFlavor) any { return f.ID },
			"name":              func(f *octaviaFlavor) any { return f.Name },
			"description":       func(f *octaviaFlavor) any { return f.Description },
			"enabled":           func(f *octaviaFlavor) any { return !f.Disabled },
			"flavor_profile_id": func(f *octaviaFlavor) any { return f.profileID },
			// The table has no created_at; the order is then the id.
			"created_at": func(*octaviaFlavor) any { return time.Time{} },
		},
		project: func(*octaviaFlavor) string { return c.tok.projectID },
		id:      func(f *octaviaFlavor) string { return f.ID },
		marker: func(id string) (*octaviaFlavor, bool) {
			f, ok := e.octavia.flavors[id]
			return f, ok
		},
		render: e.flavorView,
	}, items)
}

func (e *Emulator) getAvailabilityZone(c *octaviaCall) (int, any, *apiError) {
	z := e.octavia.zones[c.ids[0]]
	if z == nil {
		return 0, nil, errOctaviaNotFound("Availability Zone", c.ids[0])
	}
	return http.StatusOK, map[string]any{"availability_zone": ovFields(c, e.zoneView(z))}, nil
}

func (e *Emulator) listAvailabilityZones(c *octaviaCall) (int, any, *apiError) {
	items := make([]*octaviaZone, 0, len(e.octavia.zoneOrder))
	for _, name := range e.octavia.zoneOrder {
		items = append(items, e.octavia.zones[name])
	}
	return octaviaList(e, c, ovListSpec[*octaviaZone]{
		collection: "availability_zones",
		columns: map[string]func(*octaviaZone) any{
			"name":                         func(z *octaviaZone) any { return z.Name },
			"description":                  func(z *octaviaZone) any { return z.Description },
			"enabled":                      func(z *octaviaZone) any { return !z.Disabled },
			"availability_zone_profile_id": func(z *octaviaZone) any { return z.profileID },
			"id":                           func(z *octaviaZone) any { return z.Name },
			"created_at":                   func(*octaviaZone) any { return time.Time{} },
		},
		project: func(*octaviaZone) string { return c.tok.projectID },
		id:      func(z *octaviaZone) string { return z.Name },
		marker: func(name string) (*octaviaZone, bool) {
			z, ok := e.octavia.zones[name]
			return z, ok
		},
		render: e.zoneView,
	}, items)
}
