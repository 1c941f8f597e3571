package gce

import (
	"fmt"
	"slices"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// Global health checks, what upstream's CCM probes an internal load
// balancer's nodes with (a regional backend service may use a global or
// a regional one): insert, get, list, delete, patch and update. type is
// required, and the API reference allows only the settings of its
// protocol; they are made with GCE's defaults when left out: port 80 for
// TCP and HTTP, 443 for SSL, HTTPS and HTTP2, none for GRPC and
// GRPC_WITH_TLS, whose port is required unless a port specification says
// otherwise; portSpecification from whether port or portName is set;
// proxyHeader NONE and requestPath "/" where the protocol has them. The
// timing defaults and limits are those of every health check
// (checkProbeTiming). A patch that changes type drops the old type's
// settings, since a merge patch cannot clear them. One a backend service
// uses cannot be deleted (resourceInUseByAnotherResource).
// aggregatedList, which lists global and regional health checks
// together, is not emulated.

func registerHealthChecks(t *kindTable) {
	t.add(&kind{
		Resource: "HealthChecks", Collection: "healthChecks", Scope: scopeGlobal, Kind: "compute#healthCheck",
		Singular: "health_check",
		New:      func() proto.Message { return &computepb.HealthCheck{} },
		NewList:  func() proto.Message { return &computepb.HealthCheckList{} },
		Verbs:    verbsCRUD | verbPatch | verbUpdate,
		Prepare:  prepareHealthCheck(allHealthCheckTypes...),
	})
}

// healthCheckProtocol is one health check type: the field of its
// settings and GCE's default port, 0 for none.
type healthCheckProtocol struct {
	typ, field string
	port       int32
}

var healthCheckProtocols = []healthCheckProtocol{
	{"TCP", "tcpHealthCheck", 80},
	{"SSL", "sslHealthCheck", 443},
	{"HTTP", "httpHealthCheck", 80},
	{"HTTPS", "httpsHealthCheck", 443},
	{"HTTP2", "http2HealthCheck", 443},
	{"GRPC", "grpcHealthCheck", 0},
	{"GRPC_WITH_TLS", "grpcTlsHealthCheck", 0},
}

// allHealthCheckTypes are the types of healthCheckProtocols.
var allHealthCheckTypes = func() []string {
	var out []string
	for _, p := range healthCheckProtocols {
		out = append(out, p.typ)
	}
	return out
}()

func healthCheckProtocolOf(typ string) (healthCheckProtocol, bool) {
	i := slices.IndexFunc(healthCheckProtocols, func(p healthCheckProtocol) bool { return p.typ == typ })
	if i < 0 {
		return healthCheckProtocol{}, false
	}
	return healthCheckProtocols[i], true
}

// prepareHealthCheck validates and completes a health check, global or
// regional, of one of types.
func prepareHealthCheck(types ...string) func(e *Emulator, c *change) *apiError {
	return func(e *Emulator, c *change) *apiError {
		hc := c.Msg.(*computepb.HealthCheck)
		if aerr := checkProbeTiming(hc); aerr != nil {
			return aerr
		}
		typ := hc.GetType()
		p, known := healthCheckProtocolOf(typ)
		switch {
		case typ == "":
			return errRequired("resource.type")
		case !known:
			return errInvalid("resource.type", typ, "Must be one of "+strings.Join(allHealthCheckTypes, ", ")+".")
		case !slices.Contains(types, typ):
			return errInvalid("resource.type", typ, "cloudsim emulates "+strings.Join(types, " and ")+" health checks only.")
		}
		m := hc.ProtoReflect()
		if old, ok := c.Old.(*computepb.HealthCheck); ok && c.Type == "patch" && old.GetType() != typ {
			if op, ok := healthCheckProtocolOf(old.GetType()); ok && op.field != p.field {
				m.Clear(fieldOf(hc, op.field))
			}
		}
		for _, other := range healthCheckProtocols {
			if other.field != p.field && hasField(hc, other.field) {
				return errInvalid("resource.type", typ, fmt.Sprintf("Health checks of type %s take %s only, not %s.", typ, p.field, other.field))
			}
		}
		// Mutable makes the settings when they were left out.
		s := m.Mutable(fieldOf(hc, p.field)).Message().Interface()
		field := "resource." + p.field
		if aerr := probeTarget(field, s, p.port); aerr != nil {
			return aerr
		}
		if fieldOf(s, "requestPath") != nil {
			if !hasField(s, "requestPath") {
				setString(s, "requestPath", "/")
			}
			if rp := getString(s, "requestPath"); !strings.HasPrefix(rp, "/") || strings.ContainsAny(rp, "# ") {
				return errInvalid(field+".requestPath", rp, "Must be a path starting with /.")
			}
		}
		if n := getString(s, "grpcServiceName"); strings.ContainsFunc(n, func(r rune) bool { return r > 0x7f }) {
			return errInvalid(field+".grpcServiceName", n, "The gRPC service name can only be ASCII.")
		}
		return nil
	}
}

// probeTarget defaults and checks where a health check probes, the same
// fields in every protocol's settings s; those a protocol lacks (gRPC's
// proxyHeader, GRPC_WITH_TLS's portName) are left alone. def is the
// protocol's default port, 0 when the port is required.
func probeTarget(field string, s proto.Message, def int32) *apiError {
	hasPort, hasName := hasField(s, "port"), hasField(s, "portName")
	if !hasField(s, "portSpecification") {
		spec := "USE_NAMED_PORT"
		if hasPort || !hasName {
			spec = "USE_FIXED_PORT"
		}
		if !hasPort && !hasName && def != 0 {
			setInt32(s, "port", def)
			hasPort = true
		}
		setString(s, "portSpecification", spec)
	}
	switch spec := getString(s, "portSpecification"); {
	case spec == "USE_FIXED_PORT":
		if !hasPort {
			return errRequired(field + ".port")
		}
	case spec == "USE_NAMED_PORT" && fieldOf(s, "portName") == nil:
		return errInvalid(field+".portSpecification", spec, "This health check type has no named port.")
	case spec == "USE_NAMED_PORT":
		if !hasName {
			return errRequired(field + ".portName")
		}
	case spec == "USE_SERVING_PORT":
		if hasPort {
			return errInvalid(field+".port", fmt.Sprint(getInt32(s, "port")), "A health check on the serving port takes no port.")
		}
	default:
		return errInvalid(field+".portSpecification", spec, "Must be USE_FIXED_PORT, USE_NAMED_PORT or USE_SERVING_PORT.")
	}
	if p := getInt32(s, "port"); hasPort && (p < 1 || p > 65535) {
		return errInvalid(field+".port", fmt.Sprint(p), "Must be between 1 and 65535.")
	}
	if n := getString(s, "portName"); hasName && !nameRE.MatchString(n) {
		return errInvalid(field+".portName", n, "Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'")
	}
	if fieldOf(s, "proxyHeader") != nil {
		switch h := getString(s, "proxyHeader"); {
		case !hasField(s, "proxyHeader"):
			setString(s, "proxyHeader", "NONE")
		case h != "NONE" && h != "PROXY_V1":
			return errInvalid(field+".proxyHeader", h, "Must be NONE or PROXY_V1.")
		}
	}
	return nil
}
