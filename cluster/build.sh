#!/usr/bin/env bash
# Builds the cluster's Go tools from Go modules, once. They are one Go module (tools/go.mod pins
# every version), so the libraries they share compile once for all of them; each tools/<tool>/
# directory is one tool: its tools.go imports the commands (so `go mod tidy` in tools/ keeps their
# dependencies), and its build.sh, if any, is the recipe: sourced here, in that directory, it says
# what to build and does the special steps (without one, every command tools.go imports is built).
# A directory with a go.mod of its own is a module whose files are the tool (the CRDs below).
#   kubernetes              etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl
#                           (the control plane); kubelet, kube-proxy (a real node)
#   kwok                    simulated nodes and pods, and its stock stages (kwok-stages.yaml)
#   helm                    lint and template for the chart tests
#   containerd              containerd, containerd-shim-runc-v2, ctr (a real node's container runtime)
#   coredns                 cluster DNS
#   kube-network-policies   NetworkPolicy enforcement on a real node
#   local-path-provisioner  PersistentVolumes on a node's disk
#   actionlint              checks .github/workflows (npm run check, test/static)
#   gateway-api-crds        no build: the Gateway API CRDs the chart's HTTPRoutes are tested against
#   prometheus-operator-crds  no build: the ServiceMonitor and PrometheusRule CRDs (test/chart)
#   volume-snapshot-crds    no build: the VolumeSnapshot CRDs hand-in snapshots are tested against
#   prometheus              the Prometheus server (scrapes the real node, test/node) and promtool (checks the
#                           chart's alert rules and unit-tests them, checks /metrics pages, test/chart)
#   traefik                 a Gateway API implementation (its Kubernetes Gateway provider) run in the real
#                           node's network namespace in front of the chart's HTTPRoutes (test/node)
# Each tool is cached on its own under $USERLAND_CACHE/go/<tool>-<key> (default cache
# ~/.cache/userland), keyed by a hash of its directory's files, of tools/go.mod and go.sum, and of
# go_build below (the build flags every tool shares), so changing one recipe builds only that tool;
# bumping a version builds them all, mostly from Go's build cache. Then one directory of symlinks to
# the tools' binaries, go/bin-<hash of their keys>, is made or reused, and printed on stdout;
# progress goes to stderr.
#
#   bash cluster/build.sh              every tool but the on-demand ones below
#   bash cluster/build.sh TOOL...      just these tools (on-demand ones included)
#   bash cluster/build.sh --on-demand  just the on-demand ones
#
# On demand: Prometheus and Traefik, a third of a cold build, serve four test files only, so they
# are not in the default set: npm test's set-up builds them after it (scripts/bootstrap.sh test), and
# test/run.ts beside its first files when they are missing (cluster/onDemandTools.ts).
# With USERLAND_SETUP_TIMES set, each tool appends "Go: <tool>	<ms>	built|cached	<start ms>" to
# that file (scripts/bootstrap.sh; the table npm test ends with).
set -euo pipefail
export LC_ALL=C # the same file order, so the same keys, whatever the caller's locale
here=$(cd "$(dirname "$0")" && pwd)
cache=${USERLAND_CACHE:-$HOME/.cache/userland}/go

# Progress: `go build -v` names each package as it compiles; print a line every 100 packages.
progress() {
  local what=$1 n=0
  while IFS= read -r line; do
    n=$((n + 1))
    if ((n % 100 == 0)); then echo "  $what: $n packages compiled ($(($(date +%s) - start))s)" >&2; fi
    case $line in *": "* | "#"*) echo "  $line" >&2 ;; esac
  done
}
# For the recipes: go_build DESCRIPTION [go build flags] PACKAGES... builds into the tool's
# directory ($out). Extra linker flags come in $ldflags, other settings as the environment.
# Every tool is built without cgo, as their own release builds do (Kubernetes, etcd, helm, kwok,
# CoreDNS, the containerd shim): static binaries, and one setting for all, because a package
# compiled with cgo and without are two entries in Go's build cache, and so is every package that
# imports it (net, os/user: nearly all), which would compile the shared libraries twice.
go_build() {
  local what=$1
  shift
  echo "building $what in tools/$tool (the first build takes minutes to half an hour on 2 cores; cached afterwards)" >&2
  CGO_ENABLED=0 go build -v -ldflags="-s -w ${ldflags:-}" -o "$out/" "$@" 2>&1 | progress "$what"
}

on_demand=(prometheus traefik)
if [[ ${1:-} == --on-demand ]]; then set -- "${on_demand[@]}"; fi
generic=$(declare -f progress go_build)
tools=() keys=()
for dir in "$here"/tools/*/; do
  tool=$(basename "$dir")
  if (($# > 0)); then
    [[ " $* " == *" $tool "* ]] || continue
  elif [[ " ${on_demand[*]} " == *" $tool "* ]]; then
    continue
  fi
  tools+=("$tool")
  keys+=("$({
    if [[ ! -f $dir/go.mod ]]; then cat "$here/tools/go.mod" "$here/tools/go.sum"; fi
    for f in "$dir"*; do
      if [[ -f $f ]]; then
        echo "== ${f##*/}"
        cat "$f"
      fi
    done
    echo "$generic"
  } | sha256sum | cut -c1-16)")
done
for name in "$@"; do
  [[ -d $here/tools/$name ]] || { echo "build.sh: no tool named '$name' (cluster/tools/$name)" >&2; exit 2; }
done
now_ms() { echo $(($(date +%s%N) / 1000000)); }
# record PHASE START built|cached: one row of the run's time table (scripts/bootstrap.sh), when one
# is kept, timed from START to now.
record() {
  if [[ -n ${USERLAND_SETUP_TIMES:-} ]]; then
    printf '%s\t%s\t%s\t%s\n' "$1" $(($(now_ms) - $2)) "$3" "$2" >>"$USERLAND_SETUP_TIMES"
  fi
}
key=$(for i in "${!tools[@]}"; do echo "${tools[i]}-${keys[i]}"; done | sha256sum | cut -c1-16)
bin="$cache/bin-$key"
if [[ -f "$bin/.complete" ]]; then
  for tool in "${tools[@]}"; do record "Go: $tool" "$(now_ms)" cached; done
  echo "$bin"
  exit 0
fi

command -v go >/dev/null || { echo "build.sh: Go is required to build the cluster's tools (install Go 1.26.6+)" >&2; exit 1; }
mkdir -p "$cache"
total=$(date +%s)
build_tool() {
  local tool=$1 out="$cache/$1-$2" lock rc began
  if [[ -f "$out/.complete" ]]; then
    record "Go: $tool" "$(now_ms)" cached
    return
  fi
  began=$(now_ms)
  # One build per tool and key at a time: a second caller (another test run, npm start) waits for
  # the first instead of writing the same binaries concurrently, then finds them complete.
  exec {lock}>"$cache/.build-$tool-$2.lock"
  flock "$lock"
  if [[ ! -f "$out/.complete" ]]; then
    rm -rf "$out"
    mkdir -p "$out"
    # The recipe runs in a subshell, so its settings (environment, ldflags) stay with its tool; and
    # with its own errexit: a failing step stops it, but not before this script says which tool.
    set +e
    (
      set -e
      cd "$here/tools/$tool"
      start=$(date +%s)
      outputs=()
      if [[ -f build.sh ]]; then
        source ./build.sh
      else
        # -e: tools.go imports main packages, which go list reports as an error but still lists.
        list=$(go list -e -tags tools -f '{{join .Imports "\n"}}' .)
        mapfile -t packages <<<"$list"
        outputs=("${packages[@]##*/}")
        go_build "$tool" "${packages[@]}"
      fi
      ((${#outputs[@]} > 0)) || { echo "build.sh: tools/$tool/build.sh does not name its outputs" >&2; exit 1; }
      for b in "${outputs[@]}"; do
        [[ -s "$out/$b" ]] || { echo "build.sh: $b was not built" >&2; exit 1; }
      done
      echo "$tool built in $(($(date +%s) - start))s: $out" >&2
    )
    rc=$?
    set -e
    if ((rc != 0)); then echo "build.sh: building $tool failed" >&2; exit "$rc"; fi
    touch "$out/.complete"
    record "Go: $tool" "$began" built
  fi
  exec {lock}>&-
}
for i in "${!tools[@]}"; do build_tool "${tools[i]}" "${keys[i]}"; done

# Every tool's binaries in one directory, as relative symlinks (the cache can move). Made aside and
# renamed into place, so a concurrent caller sees it whole or not at all.
tmp=$(mktemp -d "$cache/.bin-$key.XXXXXX")
chmod 755 "$tmp" # mktemp makes it private
for i in "${!tools[@]}"; do
  for f in "$cache/${tools[i]}-${keys[i]}"/*; do
    name=${f##*/}
    if [[ -e "$tmp/$name" ]]; then echo "build.sh: two tools make $name" >&2; rm -rf "$tmp"; exit 1; fi
    ln -s "../${tools[i]}-${keys[i]}/$name" "$tmp/$name"
  done
done
touch "$tmp/.complete"
mv -T "$tmp" "$bin" 2>/dev/null || rm -rf "$tmp" # lost the race to an identical directory
echo "tools ready in $(($(date +%s) - total))s: $bin" >&2
echo "$bin"
