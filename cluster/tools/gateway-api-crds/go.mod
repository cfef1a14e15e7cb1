// The Gateway API CRDs (standard channel: Gateway, HTTPRoute, ...) the chart's HTTPRoutes are
// checked against in the tests; nothing is built. No tools.go: only the module's files are used, so
// nothing imports it (and `go mod tidy` must not be run here: it would drop the requirement).
module userland.dev/cluster/tools/gateway-api-crds

go 1.26.0

require sigs.k8s.io/gateway-api v1.6.3
