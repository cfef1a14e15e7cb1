# Recipe for ../../build.sh, which sources it in this directory (see go_build there).
# Prometheus's Go module is versioned v0.3MM.P for its release 3.MM.P; its release build (promu)
# stamps that release, which `prometheus --version` and `promtool --version` then say. The server is
# built without the builtinassets tag: the tests use its HTTP API, not its web UI. remove_all_sd
# (Prometheus's plugins/ build tags) leaves out every service discovery but file and HTTP, and with
# them the AWS, Azure, GCE, Kubernetes and other clients, about half the build: the tests' scrape
# configuration is static (test/support/nodePrometheus.ts).
module_version=$(go list -m -f '{{.Version}}' github.com/prometheus/prometheus) # v0.316.0
release=$(echo "$module_version" | sed -E 's/^v0\.3([0-9][0-9])\.([0-9]+)$/3.\1.\2/; s/^3\.0([0-9])/3.\1/')
ldflags="-X github.com/prometheus/common/version.Version=$release" go_build "prometheus and promtool" \
  -tags remove_all_sd github.com/prometheus/prometheus/cmd/prometheus github.com/prometheus/prometheus/cmd/promtool
outputs=(prometheus promtool)
