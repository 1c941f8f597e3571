package gce

import (
	"net/http"
	"time"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// The admin API over HTTP, under /admin/gce/ (the Go methods are in
// admin_*.go and operations.go):
//
//	GET  /fixture                        Fixture
//	POST /operations/delay               {"delay": "2s"}: SetOperationDelay
//	POST /operations/failures            OperationFailure: FailOperations
//
// and the routes of instancesAdmin, networksAdmin and serviceAccountsAdmin.
func (e *Emulator) adminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /fixture", func(w http.ResponseWriter, r *http.Request) {
		cloudsim.WriteJSON(w, http.StatusOK, e.Fixture())
	})
	mux.HandleFunc("POST /operations/delay", cloudsim.AdminHandler(func(req struct {
		Delay string `json:"delay"`
	}) (any, error) {
		d, err := time.ParseDuration(req.Delay)
		if err != nil {
			return nil, err
		}
		e.SetOperationDelay(d)
		return map[string]string{"delay": d.String()}, nil
	}, nil))
	mux.HandleFunc("POST /operations/failures", cloudsim.AdminHandler(func(f OperationFailure) (any, error) {
		if err := e.FailOperations(f); err != nil {
			return nil, err
		}
		return f, nil
	}, nil))
	e.instancesAdmin(mux)
	e.networksAdmin(mux)
	e.serviceAccountsAdmin(mux)
	return mux
}
