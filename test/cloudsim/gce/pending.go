package gce

import "net/http"

// Kinds still to come; each replaces its stub.
func registerInstances(t *kindTable)                  {}
func registerFirewalls(t *kindTable)                  {}
func registerAddresses(t *kindTable)                  {}
func (e *Emulator) instancesAdmin(mux *http.ServeMux) {}
