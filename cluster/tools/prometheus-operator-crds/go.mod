// The prometheus-operator CRDs (ServiceMonitor, PrometheusRule) the chart's monitoring objects are
// checked against in the tests; nothing is built. No tools.go: only the module's files are used, so
// nothing imports it (and `go mod tidy` must not be run here: it would drop the requirement).
module userland.dev/cluster/tools/prometheus-operator-crds

go 1.26.0

require github.com/prometheus-operator/prometheus-operator v0.85.0
