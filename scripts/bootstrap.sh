#!/usr/bin/env bash
# Installs everything the platform and its tests need on a fresh machine, and nothing twice:
#   - npm packages (npm ci when node_modules is missing or older than package-lock.json),
#   - Debian packages: openssl (test certificates), chromium (browser tests), and what the real node
#     needs (cluster/node): runc, the CNI plugins, nftables, conntrack, iproute2, socat, tini, curl,
#     and for its images (cluster/images) mmdebstrap, umoci, jq, gcc, libc6-dev and buildah, and
#     nginx (forward-auth in front of an app as services/auth/README.md sets it up,
#     test/security/forwardAuth.test.ts; the proxy benchmark's anchor, bench/nginx.ts),
#   - the Go-built control plane and node (cluster/build.sh, cached after the first build).
# `npm start` and `npm test` call it first, so a fresh clone needs no other step. `bootstrap.sh
# imports` (npm run imports:draw) also installs graphviz, whose dot lays out docs/imports.svg.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  echo "bootstrap: installing npm packages (npm ci)" >&2
  npm ci --no-audit --no-fund >&2
fi

debian_packages=(openssl chromium
  runc containernetworking-plugins nftables conntrack iproute2 socat tini curl
  mmdebstrap umoci jq gcc libc6-dev buildah nginx-light)
[[ ${1:-} == imports ]] && debian_packages+=(graphviz)
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
fi

bash cluster/build.sh >/dev/null
