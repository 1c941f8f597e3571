package aws

import (
	"slices"
	"strconv"
)

// Classic ELB attributes: cross-zone load balancing, the idle timeout,
// connection draining, access logs and the desync mitigation mode.

type clbAttributes struct {
	crossZone         bool
	idleTimeout       int
	drainingEnabled   bool
	drainingTimeout   int
	accessLogEnabled  bool
	accessLogBucket   string
	accessLogPrefix   string
	accessLogInterval int
	desyncMode        string
}

// desyncModeKey is the one AdditionalAttributes key Classic ELB supports.
const desyncModeKey = "elb.http.desyncmitigationmode"

// defaultCLBAttributes are a new load balancer's: cross-zone load
// balancing is off for load balancers created through the API (the
// console turns it on), connections idle out after 60 s, draining is off
// with a 300 s timeout, access logs are off.
func defaultCLBAttributes() clbAttributes {
	return clbAttributes{idleTimeout: 60, drainingTimeout: 300, accessLogInterval: 60, desyncMode: "defensive"}
}

type xmlEnabled struct {
	Enabled bool `xml:"Enabled"`
}

type xmlAccessLog struct {
	Enabled        bool   `xml:"Enabled"`
	S3BucketName   string `xml:"S3BucketName,omitempty"`
	EmitInterval   int    `xml:"EmitInterval,omitempty"`
	S3BucketPrefix string `xml:"S3BucketPrefix,omitempty"`
}

type xmlConnectionDraining struct {
	Enabled bool `xml:"Enabled"`
	Timeout int  `xml:"Timeout"`
}

type xmlConnectionSettings struct {
	IdleTimeout int `xml:"IdleTimeout"`
}

type xmlCLBAttributes struct {
	CrossZoneLoadBalancing *xmlEnabled            `xml:"CrossZoneLoadBalancing,omitempty"`
	AccessLog              *xmlAccessLog          `xml:"AccessLog,omitempty"`
	ConnectionDraining     *xmlConnectionDraining `xml:"ConnectionDraining,omitempty"`
	ConnectionSettings     *xmlConnectionSettings `xml:"ConnectionSettings,omitempty"`
	// A pointer, so that a response without the section leaves out the
	// element: encoding/xml writes the wrapper of an empty "a>b" list.
	AdditionalAttributes *xmlAdditionalAttributes `xml:"AdditionalAttributes,omitempty"`
}

type xmlAdditionalAttributes struct {
	Members []xmlAttribute `xml:"member"`
}

// clbAttributeSections name the parts of LoadBalancerAttributes.
const (
	sectionCrossZone  = "CrossZoneLoadBalancing"
	sectionAccessLog  = "AccessLog"
	sectionDraining   = "ConnectionDraining"
	sectionSettings   = "ConnectionSettings"
	sectionAdditional = "AdditionalAttributes"
)

var allAttributeSections = []string{sectionCrossZone, sectionAccessLog, sectionDraining, sectionSettings, sectionAdditional}

// xml renders the given sections of a.
func (a clbAttributes) xml(sections []string) xmlCLBAttributes {
	var x xmlCLBAttributes
	for _, s := range sections {
		switch s {
		case sectionCrossZone:
			x.CrossZoneLoadBalancing = &xmlEnabled{Enabled: a.crossZone}
		case sectionAccessLog:
			x.AccessLog = &xmlAccessLog{Enabled: a.accessLogEnabled}
			if a.accessLogEnabled {
				x.AccessLog.S3BucketName, x.AccessLog.EmitInterval, x.AccessLog.S3BucketPrefix = a.accessLogBucket, a.accessLogInterval, a.accessLogPrefix
			}
		case sectionDraining:
			x.ConnectionDraining = &xmlConnectionDraining{Enabled: a.drainingEnabled, Timeout: a.drainingTimeout}
		case sectionSettings:
			x.ConnectionSettings = &xmlConnectionSettings{IdleTimeout: a.idleTimeout}
		case sectionAdditional:
			x.AdditionalAttributes = &xmlAdditionalAttributes{Members: []xmlAttribute{{Key: desyncModeKey, Value: a.desyncMode}}}
		}
	}
	return x
}

type clbAttributesResponse struct {
	LoadBalancerName       string           `xml:"LoadBalancerName,omitempty"`
	LoadBalancerAttributes xmlCLBAttributes `xml:"LoadBalancerAttributes"`
}

func (e *Emulator) clbDescribeAttributes(p params) (any, error) {
	lb, err := e.clbParam(p)
	if err != nil {
		return nil, err
	}
	return clbAttributesResponse{LoadBalancerAttributes: lb.attributes.xml(allAttributeSections)}, nil
}

func parseBool(p params, key, member string) (bool, error) {
	switch v := p.get(key); v {
	case "true":
		return true, nil
	case "false":
		return false, nil
	case "":
		return false, clbRequired(member)
	default:
		return false, validation("1 validation error detected: Value '%s' at '%s' failed to satisfy constraint: Member must be true or false", v, member)
	}
}

// clbModifyAttributes applies the sections sent, all or none, and answers
// with those sections as they now are.
func (e *Emulator) clbModifyAttributes(p params) (any, error) {
	lb, err := e.clbParam(p)
	if err != nil {
		return nil, err
	}
	const prefix = "LoadBalancerAttributes."
	var sent []string
	for _, s := range allAttributeSections {
		if p.has(prefix + s) {
			sent = append(sent, s)
		}
	}
	if len(sent) == 0 {
		return nil, clbRequired("loadBalancerAttributes")
	}
	a := lb.attributes
	if slices.Contains(sent, sectionCrossZone) {
		if a.crossZone, err = parseBool(p, prefix+"CrossZoneLoadBalancing.Enabled", "loadBalancerAttributes.crossZoneLoadBalancing.enabled"); err != nil {
			return nil, err
		}
	}
	if slices.Contains(sent, sectionSettings) {
		// The API reference says 3600; the service and the Classic Load
		// Balancer guide allow 4000.
		n, ok, err := intRange(p, prefix+"ConnectionSettings.IdleTimeout", "loadBalancerAttributes.connectionSettings.idleTimeout", 1, 4000)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, clbRequired("loadBalancerAttributes.connectionSettings.idleTimeout")
		}
		a.idleTimeout = n
	}
	if slices.Contains(sent, sectionDraining) {
		if a.drainingEnabled, err = parseBool(p, prefix+"ConnectionDraining.Enabled", "loadBalancerAttributes.connectionDraining.enabled"); err != nil {
			return nil, err
		}
		n, ok, err := intRange(p, prefix+"ConnectionDraining.Timeout", "loadBalancerAttributes.connectionDraining.timeout", 1, 3600)
		if err != nil {
			return nil, err
		}
		if ok {
			a.drainingTimeout = n
		}
	}
	if slices.Contains(sent, sectionAccessLog) {
		if a.accessLogEnabled, err = parseBool(p, prefix+"AccessLog.Enabled", "loadBalancerAttributes.accessLog.enabled"); err != nil {
			return nil, err
		}
		if v := p.get(prefix + "AccessLog.EmitInterval"); v != "" {
			if v != "5" && v != "60" {
				return nil, validation("Access log EmitInterval must be 5 or 60 minutes, not '%s'", v)
			}
			a.accessLogInterval, _ = strconv.Atoi(v)
		}
		a.accessLogBucket = orDefault(p.get(prefix+"AccessLog.S3BucketName"), a.accessLogBucket)
		a.accessLogPrefix = orDefault(p.get(prefix+"AccessLog.S3BucketPrefix"), a.accessLogPrefix)
		if a.accessLogEnabled && a.accessLogBucket == "" {
			return nil, clbInvalidConfig("An S3BucketName is required to enable access logs")
		}
	}
	if slices.Contains(sent, sectionAdditional) {
		for _, kv := range p.structs(prefix + "AdditionalAttributes.member") {
			k, v := kv.get("Key"), kv.get("Value")
			if k != desyncModeKey {
				return nil, apiErr("LoadBalancerAttributeNotFound", "The specified load balancer attribute does not exist: '%s'", k)
			}
			if v != "monitor" && v != "defensive" && v != "strictest" {
				return nil, clbInvalidConfig("%s must be monitor, defensive or strictest, not '%s'", desyncModeKey, v)
			}
			a.desyncMode = v
		}
	}
	lb.attributes = a
	return clbAttributesResponse{LoadBalancerName: lb.name, LoadBalancerAttributes: a.xml(sent)}, nil
}
