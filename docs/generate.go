// Package docs holds the project's documentation. It has no code: this
// file exists for the directive below, so that `go generate ./...`
// regenerates docs/reference (hack/refdocs: the backends' pages, the
// flags, metrics, Events and cloud-config pages; its freshness test fails
// `make test` when they drift).
package docs

//go:generate go run ../hack/refdocs -out reference
