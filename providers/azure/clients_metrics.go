package azure

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/cloudmetrics"
)

// metricsPolicy records every HTTP attempt (azcore runs per-retry
// policies once per attempt, below its retry policy) under the shared
// metric names, and ARM's x-ms-ratelimit-remaining-* headers as gauges.
type metricsPolicy struct {
	// service is "aad" for token requests, "arm" for Resource Manager
	// (whose service label is then the resource provider: compute,
	// network).
	service string
	rec     *cloudmetrics.Recorder
}

func (p *metricsPolicy) Do(req *policy.Request) (*http.Response, error) {
	r := req.Raw()
	service, op := "aad", "token"
	if p.service != "aad" {
		service, op = armOperation(r.Method, r.URL.Path)
	}
	start := time.Now()
	resp, err := req.Next()
	status := 0
	if resp != nil {
		status = resp.StatusCode
	}
	p.rec.Observe(ProviderName, service, op, cloudmetrics.Code(status, err), time.Since(start), status == http.StatusTooManyRequests)
	if resp != nil {
		p.recordRemaining(service, resp.Header)
	}
	return resp, err
}

// resourceBudgetRE matches the budget names of the resource providers'
// x-ms-ratelimit-remaining-resource header
// ("Microsoft.Compute/HighCostGet3Min;139,Microsoft.Compute/HighCostGet30Min;699").
var resourceBudgetRE = regexp.MustCompile(`^Microsoft\.[A-Za-z]+/[A-Za-z0-9]+$`)

// recordRemaining sets a gauge per budget the response reports. Label
// values come from header names of a fixed form, never from IDs.
func (p *metricsPolicy) recordRemaining(service string, h http.Header) {
	for name, vals := range h {
		limit, ok := strings.CutPrefix(strings.ToLower(name), "x-ms-ratelimit-remaining-")
		if !ok || len(vals) == 0 {
			continue
		}
		if limit == "resource" {
			for _, part := range strings.Split(vals[0], ",") {
				budget, v, ok := strings.Cut(strings.TrimSpace(part), ";")
				n, err := strconv.ParseFloat(v, 64)
				if ok && err == nil && resourceBudgetRE.MatchString(budget) {
					p.rec.RateLimitRemaining(ProviderName, service, budget, n)
				}
			}
			continue
		}
		if !strings.HasPrefix(limit, "subscription-") && !strings.HasPrefix(limit, "tenant-") || len(limit) > 40 {
			continue
		}
		if n, err := strconv.ParseFloat(vals[0], 64); err == nil {
			p.rec.RateLimitRemaining(ProviderName, service, limit, n)
		}
	}
}

// armOperation names an ARM request by resource type and operation, never
// by a resource's name: GET .../virtualMachines is (compute,
// "virtualMachines.list"), PUT .../loadBalancers/lb is (network,
// "loadBalancers.createOrUpdate"), GET .../virtualMachines/vm/instanceView
// is "virtualMachines.instanceView", a poll of .../locations/x/operations/id
// is "operations.get".
func armOperation(method, path string) (service, op string) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	i := 0
	for i < len(segs) && !strings.EqualFold(segs[i], "providers") {
		i++
	}
	if i+1 >= len(segs) {
		return "arm", "other"
	}
	switch strings.ToLower(segs[i+1]) {
	case "microsoft.compute":
		service = "compute"
	case "microsoft.network":
		service = "network"
	default:
		service = "arm"
	}
	rest := segs[i+2:]
	var types []string
	for j := 0; j < len(rest); j += 2 {
		types = append(types, rest[j])
	}
	if len(types) >= 2 && strings.EqualFold(types[0], "locations") {
		// An async operation's status or result.
		return service, lowerFirst(types[len(types)-1]) + ".get"
	}
	item := len(rest)%2 == 0
	name := strings.Join(types, ".")
	switch {
	case item && (method == http.MethodGet || method == http.MethodHead):
		return service, name + ".get"
	case item && method == http.MethodPut:
		return service, name + ".createOrUpdate"
	case item && method == http.MethodDelete:
		return service, name + ".delete"
	case item && method == http.MethodPatch:
		return service, name + ".update"
	case !item && method == http.MethodGet && len(types) > 0 && isAction(types[len(types)-1]):
		return service, name
	case !item && method == http.MethodGet:
		return service, name + ".list"
	case !item && method == http.MethodPost:
		return service, name
	}
	return service, name + "." + strings.ToLower(method)
}

// isAction says a trailing path word is an action on an item rather than
// a collection.
func isAction(word string) bool {
	switch strings.ToLower(word) {
	case "instanceview", "effectivenetworksecuritygroups", "effectiveroutetable":
		return true
	}
	return false
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}
