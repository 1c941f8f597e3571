package gce

import (
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// Zones and regions (read-only, from Config), and networks and
// subnetworks (read-only, the fixture's). Their kinds give them get,
// list and, for subnetworks, aggregatedList.

func registerGeography(t *kindTable) {
	t.add(&kind{
		Resource: "Zones", Collection: "zones", Scope: scopeProject, Kind: "compute#zone",
		New:     func() proto.Message { return &computepb.Zone{} },
		NewList: func() proto.Message { return &computepb.ZoneList{} },
		Verbs:   verbsRead,
	})
	t.add(&kind{
		Resource: "Regions", Collection: "regions", Scope: scopeProject, Kind: "compute#region",
		New:     func() proto.Message { return &computepb.Region{} },
		NewList: func() proto.Message { return &computepb.RegionList{} },
		Verbs:   verbsRead,
	})
}

func registerNetworks(t *kindTable) {
	t.add(&kind{
		Resource: "Networks", Collection: "networks", Scope: scopeGlobal, Kind: "compute#network", Singular: "network",
		New:     func() proto.Message { return &computepb.Network{} },
		NewList: func() proto.Message { return &computepb.NetworkList{} },
		Verbs:   verbsRead,
	})
	t.add(&kind{
		Resource: "Subnetworks", Collection: "subnetworks", Scope: scopeRegional, Kind: "compute#subnetwork", Singular: "subnetwork",
		New:           func() proto.Message { return &computepb.Subnetwork{} },
		NewList:       func() proto.Message { return &computepb.SubnetworkList{} },
		NewAggregated: func() proto.Message { return &computepb.SubnetworkAggregatedList{} },
		Verbs:         verbsRead,
		Refs: func(e *Emulator, o *object) []ref {
			return e.refTo(o.msg.(*computepb.Subnetwork).GetNetwork(), true)
		},
	})
}

// create stores a resource made by the emulator itself (the fixture, an
// admin launch): stamped like an inserted one and visible at once.
func (e *Emulator) create(k *kind, loc, name string, m proto.Message) *object {
	o := &object{kind: k, location: loc, name: name, path: e.objectPath(k, loc, name), msg: m}
	e.stamp(o, m, e.newID(), e.timestamp(e.cfg.Now()))
	k.store.Put(o)
	e.generation++
	return o
}

// cpuPlatforms are what every emulated zone offers.
var cpuPlatforms = []string{"Intel Broadwell", "Intel Cascade Lake", "Intel Ice Lake", "AMD Milan", "AMD Rome"}

// buildGeography creates the region and its zones.
func (e *Emulator) buildGeography() {
	zk, rk := e.kinds.get(scopeProject, "zones"), e.kinds.get(scopeProject, "regions")
	regionLink := link(e.regionPath(e.cfg.Region))
	var zoneLinks []string
	for _, z := range e.cfg.Zones {
		e.create(zk, "", z, &computepb.Zone{
			Description:           proto.String(z),
			Region:                proto.String(regionLink),
			Status:                proto.String("UP"),
			AvailableCpuPlatforms: cpuPlatforms,
			SupportsPzs:           proto.Bool(false),
		})
		zoneLinks = append(zoneLinks, link(e.zonePath(z)))
	}
	e.create(rk, "", e.cfg.Region, &computepb.Region{
		Description: proto.String(e.cfg.Region),
		Status:      proto.String("UP"),
		Zones:       zoneLinks,
		SupportsPzs: proto.Bool(false),
	})
}
