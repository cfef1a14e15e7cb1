#!/usr/bin/env bash
# Builds the test control plane from Go modules, once: etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl (tools/kubernetes), kwok (tools/kwok) and helm (tools/helm, for the chart
# tests). The versions are the go.mod files
# there; the binaries are cached under $USERLAND_CACHE (default ~/.cache/userland), keyed by a hash of
# those go.mod/go.sum files and of this script (its build flags), so a version bump rebuilds and
# everything else reuses.
# Prints the bin directory on stdout; progress goes to stderr.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${USERLAND_CACHE:-$HOME/.cache/userland}
key=$(cat "$here"/tools/*/go.mod "$here"/tools/*/go.sum "$here/build.sh" | sha256sum | cut -c1-16)
bin="$cache/control-plane-$key/bin"
if [[ -f "$bin/.complete" ]]; then echo "$bin"; exit 0; fi
# One build per key at a time: a second caller (another test run, npm start) waits for the first
# instead of writing the same binaries concurrently, then finds them complete.
mkdir -p "$cache"
exec 9>"$cache/.build-$key.lock"
flock 9
if [[ -f "$bin/.complete" ]]; then echo "$bin"; exit 0; fi

command -v go >/dev/null || { echo "build.sh: Go is required to build the test control plane (install Go 1.26+)" >&2; exit 1; }
mkdir -p "$bin"
start=$(date +%s)
# Progress: `go build -v` names each package as it compiles; print a line every 100 packages.
progress() {
  local what=$1 n=0
  while IFS= read -r line; do
    n=$((n + 1))
    if ((n % 100 == 0)); then echo "  $what: $n packages compiled ($(($(date +%s) - start))s)" >&2; fi
    case $line in *": "* | "#"*) echo "  $line" >&2 ;; esac
  done
}
build() {
  local dir=$1 what=$2; shift 2
  echo "building $what in $dir (first run takes 10-30 minutes on 2 cores; cached afterwards)" >&2
  (cd "$here/tools/$dir" && go build -v -ldflags="-s -w ${ldflags:-}" -o "$bin/" "$@" 2>&1) | progress "$what"
  return "${PIPESTATUS[0]}"
}
build kubernetes "kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl go.etcd.io/etcd/server/v3
# The etcd module's main package is named after its directory.
mv "$bin/server" "$bin/etcd"
build kwok kwok sigs.k8s.io/kwok/cmd/kwok
# helm's release build (its Makefile) stamps its version and the Kubernetes version of its client
# libraries; without them `helm version` is vague and `helm template`/`lint` assume Kubernetes 1.20.
helm_version=$(cd "$here/tools/helm" && go list -m -f '{{.Version}}' helm.sh/helm/v3)
client_go=$(cd "$here/tools/helm" && go list -m -f '{{.Version}}' k8s.io/client-go) # v0.37.0 → Kubernetes 1.37
k8s_minor=$(echo "$client_go" | cut -d. -f2)
ldflags="-X helm.sh/helm/v3/internal/version.version=$helm_version"
for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
  ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$k8s_minor"
done
ldflags=$ldflags build helm helm helm.sh/helm/v3/cmd/helm
# kwok's stock stages (from the same module): nodes become Ready and keep a heartbeat Lease,
# pods are scheduled, become Ready, complete and are deleted like on a real kubelet.
kwok_dir=$(cd "$here/tools/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
for stage in node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease \
  pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
  echo "---"
  cat "$kwok_dir/kustomize/stage/$stage.yaml"
done >"$bin/kwok-stages.yaml"
for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok helm kwok-stages.yaml; do
  [[ -s "$bin/$b" ]] || { echo "build.sh: $b was not built" >&2; exit 1; }
done
touch "$bin/.complete"
echo "control plane built in $(($(date +%s) - start))s: $bin" >&2
echo "$bin"
