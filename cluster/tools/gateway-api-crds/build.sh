# Recipe for ../../build.sh, which sources it in this directory (see go_build there).
# No build: the standard channel's CRDs as the module ships them (one 3 MB module download).
go mod download sigs.k8s.io/gateway-api
dir=$(go list -m -f '{{.Dir}}' sigs.k8s.io/gateway-api)
outputs=()
# grpcroutes and backendtlspolicies too: Traefik's Gateway provider (tools/traefik) watches them
# (v1) with the others and waits for every watch to sync before it routes anything.
for kind in gatewayclasses gateways httproutes referencegrants grpcroutes backendtlspolicies; do
  cp "$dir/config/crd/standard/gateway.networking.k8s.io_$kind.yaml" "$out/"
  outputs+=("gateway.networking.k8s.io_$kind.yaml")
done
chmod 644 "$out"/*.yaml # the module cache is read-only; the copies need not be
