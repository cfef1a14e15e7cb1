# Recipe for ../../build.sh, which sources it in this directory (see go_build there).
# No build: the CRDs as the module ships them (one 4 MB module download, no dependencies).
go mod download github.com/prometheus-operator/prometheus-operator
dir=$(go list -m -f '{{.Dir}}' github.com/prometheus-operator/prometheus-operator)
outputs=()
for kind in servicemonitors prometheusrules; do
  cp "$dir/example/prometheus-operator-crd/monitoring.coreos.com_$kind.yaml" "$out/"
  outputs+=("monitoring.coreos.com_$kind.yaml")
done
chmod 644 "$out"/*.yaml # the module cache is read-only; the copies need not be
