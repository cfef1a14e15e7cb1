#!/usr/bin/env bash
# Installs everything the platform and its tests need on a fresh machine, and nothing twice:
#   - npm packages (npm ci when node_modules is missing or older than package-lock.json),
#   - Debian packages: openssl (test certificates), chromium (browser tests), and what the real node
#     needs (cluster/node): runc, the CNI plugins, nftables, conntrack, iproute2, socat, tini, curl,
#     and for its images (cluster/images) mmdebstrap, umoci, jq, gcc, libc6-dev and buildah, and
#     nginx (forward-auth in front of an app as services/auth/README.md sets it up,
#     test/security/forwardAuth.test.ts; the proxy benchmark's anchor, bench/nginx.ts),
#   - the Go-built control plane and node (cluster/build.sh, cached after the first build),
#   - with `bootstrap.sh images` (npm start) or `bootstrap.sh test` (npm test): the real node's container images
#     (cluster/images: the node's own, the IDEs', the platform's from the Dockerfile), built in the
#     background while Go compiles (they wait mostly on Debian's mirror and the npm registry, Go on
#     the CPU), so that no test waits for them later; left out with USERLAND_REAL_NODE=off. With
#     `test`, also the Go tools only tests use (Prometheus, Traefik: cluster/onDemandTools.ts).
# `npm start` and `npm test` call it first, so a fresh clone needs no other step. `bootstrap.sh
# imports` (npm run imports:draw) also installs graphviz, whose dot lays out docs/imports.svg.
#
# Each phase appends "<phase>	<ms>	built|cached	<start ms>" to .userland/setup-times.tsv
# (USERLAND_SETUP_TIMES), which test/run.ts turns into the table npm test ends with.
set -euo pipefail
cd "$(dirname "$0")/.."

mkdir -p .userland
export USERLAND_SETUP_TIMES=${USERLAND_SETUP_TIMES:-$PWD/.userland/setup-times.tsv}
now_ms() { echo $(($(date +%s%N) / 1000000)); }
began=$(now_ms)
echo "# bootstrap started	$began" >"$USERLAND_SETUP_TIMES"
# record PHASE START built|cached: one row, timed from START to now.
record() { printf '%s\t%s\t%s\t%s\n' "$1" $(($(now_ms) - $2)) "$3" "$2" >>"$USERLAND_SETUP_TIMES"; }

start=$(now_ms)
if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  echo "bootstrap: installing npm packages (npm ci)" >&2
  npm ci --no-audit --no-fund >&2
  record "npm packages" "$start" built
else
  record "npm packages" "$start" cached
fi

debian_packages=(openssl chromium
  runc containernetworking-plugins nftables conntrack iproute2 socat tini curl
  mmdebstrap umoci jq gcc libc6-dev buildah nginx-light)
[[ ${1:-} == imports ]] && debian_packages+=(graphviz)
start=$(now_ms)
missing=()
for p in "${debian_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} > 0)); then
  echo "bootstrap: installing Debian packages: ${missing[*]}" >&2
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  record "Debian packages" "$start" built
else
  record "Debian packages" "$start" cached
fi

# Builds the images in the background, their output in .userland/images.log; each "NAME: built in
# N s" or "NAME: cached" line that cluster/images/lib.sh prints becomes a row and is shown. The
# node's CoreDNS image needs the Go-built CoreDNS, so it comes after the Go tools.
images_log=$PWD/.userland/images.log
: >"$images_log"
images_pid=""
image_rows() {
  local line
  while IFS= read -r line; do
    echo "$line" >>"$images_log"
    case $line in
      *": building "* | *": build failed"*) echo "images: $line" >&2 ;;
      *": built in "*)
        echo "images: $line" >&2
        record "image: ${line%%:*}" "$(($(now_ms) - 1000 * $(echo "${line#*built in }" | cut -d' ' -f1)))" built
        ;;
      *": cached"*) record "image: ${line%%:*}" "$(now_ms)" cached ;;
    esac
  done
}
build_images() {
  NODE_BIN=$PWD/node_modules/node/bin/node bash cluster/images/build.sh "$@" 2>&1 >/dev/null | image_rows
}
if [[ ${1:-} == images || ${1:-} == test ]] && [[ ${USERLAND_REAL_NODE:-} != off ]]; then
  (
    # Niced: the Go build is what everything else waits for.
    renice -n 10 -p "$BASHPID" >/dev/null
    # Two lanes: an image build waits mostly on Debian's mirror and the npm registry, so one lane
    # left the CPU idle and ended 7 minutes after the Go tools on a fresh machine (cold3,
    # docs/testing.md). code-server, the longest (node-gyp compiles its native modules), alone; the
    # others one after the other, the platform's last: it is built from the Dockerfile
    # (cluster/images/platform.sh) on node24's image.
    build_images code-server &
    code_server=$!
    build_images jupyter phpmyadmin mariadb node24 tools pause
    bash cluster/images/platform.sh 2>&1 >/dev/null | image_rows
    wait "$code_server"
  ) &
  images_pid=$!
fi

bin=$(bash cluster/build.sh)
# npm test: the on-demand tools too, while the images finish. Built beside the test files instead
# (test/run.ts does that when they are missing), they got a third of a CPU the tests keep busy and
# ended last: a fresh machine's run (cold1, docs/testing.md) went past CI's 90 minutes.
if [[ ${1:-} == test ]]; then bash cluster/build.sh --on-demand >/dev/null; fi

if [[ -n $images_pid ]]; then
  if ! wait "$images_pid" || ! COREDNS_BIN=$bin/coredns build_images coredns; then
    echo "bootstrap: building the container images failed; the end of $images_log:" >&2
    tail -n 30 "$images_log" >&2
    exit 1
  fi
fi
