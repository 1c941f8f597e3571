package gce

import (
	"fmt"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// Regional health checks, what an INTERNAL backend service probes its
// instances with: insert, get, list, delete, patch and update. type is
// required, TCP or HTTP, and only the matching tcpHealthCheck or
// httpHealthCheck may be set; it is made with GCE's defaults when left
// out (port 80, proxyHeader NONE, requestPath "/", portSpecification
// from whether port or portName is set). The timing defaults and limits
// are those of every health check (checkProbeTiming). A patch that
// changes type drops the old type's settings, since a merge patch cannot
// clear them. One a backend service uses cannot be deleted.

func registerRegionHealthChecks(t *kindTable) {
	t.add(&kind{
		Resource: "RegionHealthChecks", Collection: "healthChecks", Scope: scopeRegional, Kind: "compute#healthCheck",
		Singular: "health_check",
		New:      func() proto.Message { return &computepb.HealthCheck{} },
		NewList:  func() proto.Message { return &computepb.HealthCheckList{} },
		Verbs:    verbsCRUD | verbPatch | verbUpdate,
		Prepare:  prepareRegionHealthCheck,
	})
}

func prepareRegionHealthCheck(e *Emulator, c *change) *apiError {
	hc := c.Msg.(*computepb.HealthCheck)
	if aerr := checkProbeTiming(hc); aerr != nil {
		return aerr
	}
	typ := hc.GetType()
	if old, ok := c.Old.(*computepb.HealthCheck); ok && c.Type == "patch" && old.GetType() != typ {
		switch typ {
		case "TCP":
			hc.HttpHealthCheck = nil
		case "HTTP":
			hc.TcpHealthCheck = nil
		}
	}
	others := hc.GrpcHealthCheck != nil || hc.GrpcTlsHealthCheck != nil || hc.Http2HealthCheck != nil ||
		hc.HttpsHealthCheck != nil || hc.SslHealthCheck != nil
	switch typ {
	case "":
		return errRequired("resource.type")
	case "TCP":
		if others || hc.HttpHealthCheck != nil {
			return errInvalid("resource.type", typ, "Only tcpHealthCheck may be set on a TCP health check.")
		}
		if hc.TcpHealthCheck == nil {
			hc.TcpHealthCheck = &computepb.TCPHealthCheck{}
		}
		t := hc.TcpHealthCheck
		return probeTarget("resource.tcpHealthCheck", &t.Port, &t.PortName, &t.PortSpecification, &t.ProxyHeader)
	case "HTTP":
		if others || hc.TcpHealthCheck != nil {
			return errInvalid("resource.type", typ, "Only httpHealthCheck may be set on an HTTP health check.")
		}
		if hc.HttpHealthCheck == nil {
			hc.HttpHealthCheck = &computepb.HTTPHealthCheck{}
		}
		h := hc.HttpHealthCheck
		if h.RequestPath == nil {
			h.RequestPath = proto.String("/")
		}
		if p := h.GetRequestPath(); !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "# ") {
			return errInvalid("resource.httpHealthCheck.requestPath", p, "Must be a path starting with /.")
		}
		return probeTarget("resource.httpHealthCheck", &h.Port, &h.PortName, &h.PortSpecification, &h.ProxyHeader)
	default:
		return errInvalid("resource.type", typ, "cloudsim emulates TCP and HTTP health checks only.")
	}
}

// probeTarget defaults and checks where a health check probes, the same
// fields in every protocol's settings.
func probeTarget(field string, port **int32, portName, spec, proxy **string) *apiError {
	switch s := *spec; {
	case s == nil && *port == nil && *portName == nil:
		*port, *spec = proto.Int32(80), proto.String("USE_FIXED_PORT")
	case s == nil && *port != nil:
		*spec = proto.String("USE_FIXED_PORT")
	case s == nil:
		*spec = proto.String("USE_NAMED_PORT")
	}
	switch s := **spec; s {
	case "USE_FIXED_PORT":
		if *port == nil {
			return errRequired(field + ".port")
		}
	case "USE_NAMED_PORT":
		if *portName == nil {
			return errRequired(field + ".portName")
		}
	case "USE_SERVING_PORT":
		if *port != nil {
			return errInvalid(field+".port", fmt.Sprint(**port), "A health check on the serving port takes no port.")
		}
	default:
		return errInvalid(field+".portSpecification", s, "Must be USE_FIXED_PORT, USE_NAMED_PORT or USE_SERVING_PORT.")
	}
	if p := *port; p != nil && (*p < 1 || *p > 65535) {
		return errInvalid(field+".port", fmt.Sprint(*p), "Must be between 1 and 65535.")
	}
	if *portName != nil && !nameRE.MatchString(**portName) {
		return errInvalid(field+".portName", **portName, "Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'")
	}
	switch {
	case *proxy == nil:
		*proxy = proto.String("NONE")
	case **proxy != "NONE" && **proxy != "PROXY_V1":
		return errInvalid(field+".proxyHeader", **proxy, "Must be NONE or PROXY_V1.")
	}
	return nil
}
