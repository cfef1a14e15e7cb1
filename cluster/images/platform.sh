#!/usr/bin/env bash
# Builds the platform's own image from the repository's Dockerfile, for real, with buildah, into an
# OCI image-layout archive like the ones cluster/images/build.sh makes (same cache, same JSON line,
# same annotations), so `ctr -n k8s.io images import --base-name userland.local/platform <archive>`
# gives userland.local/platform:<key>.
#
#   bash cluster/images/platform.sh
#
# Prints one JSON line on stdout:
#   {"platform":{"ref":"userland.local/platform:<key>","archive":"/root/.cache/userland/images/platform-<key>.tar"}}
# Progress goes to stderr. Runs as root. Needs buildah and runc (Debian's), jq, tar, flock, and what
# build.sh needs for the base image (mmdebstrap, umoci), plus the npm registry for `npm ci`.
#
# The Dockerfile is the only recipe: nothing here repeats its steps. Its base, node:24-bookworm-slim,
# cannot be pulled (no container registry is reachable), so build.sh's node24 image stands in for it:
# built from NODE_BIN (default: node_modules/node/bin/node, the npm package `node` the project
# installs), loaded into a buildah storage of this build's own and tagged with the exact name the
# Dockerfile's FROM resolves to; the build then runs with --pull=never, so nothing else is looked up.
#
# The context buildah sees is a copy of the files the .dockerignore leaves in (cluster/images/context.ts
# lists them by Docker's rules; buildah applies the .dockerignore again), plus the Dockerfile and the
# .dockerignore. The key (the tag) is a short sha256 of those files (names, link targets, executable
# bits, contents), the base image's key, this script and context.ts: a change to the Dockerfile,
# .dockerignore, package.json, package-lock.json or any file copied from api, lib, operator, services
# or scripts gives a new tag; tests and other files do not. Production dependencies come from the lock
# file (`npm ci`); what the registry serves for it is not part of the key.
#
# Cache: ${USERLAND_CACHE:-~/.cache/userland}/images/platform-<key>.tar, as build.sh. Two callers
# building the same image wait for each other (flock); archives are written atomically.
#
# buildah settings, and why:
#   storage   a graph root and run root of this build's own, under the cache's work directory, with
#             a storage.conf of its own (CONTAINERS_STORAGE_CONF), removed when the build ends: no
#             state outlives a build, nothing is shared with /var/lib/containers, and a system
#             storage.conf cannot change it. Driver overlay (kernel overlayfs on the cache's file
#             system, as root): copy-free layers; vfs would copy the ~220 MB base for every step.
#             USERLAND_BUILDAH_DRIVER=vfs overrides it where overlay mounts are not allowed.
#   isolation oci (runc, Debian's, with cgroupfs on this cgroup v1, systemd-less machine): each RUN
#             in its own mount, PID, IPC and UTS namespaces. USERLAND_BUILDAH_ISOLATION=chroot
#             overrides it where runc cannot run.
#   network   host for RUN: `npm ci` needs the npm registry, which this machine reaches from its own
#             network namespace (buildah's private one would need CNI set up for a route out).
#   --timestamp SOURCE_DATE_EPOCH (as build.sh): fixed created times and file mtimes in the new layer.
set -euo pipefail
shopt -s inherit_errexit
umask 022
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
repo=$(cd "$here/../.." && pwd)
cache=${USERLAND_CACHE:-$HOME/.cache/userland}/images
registry=userland.local
name=platform
# What the Dockerfile's FROM says, and the name buildah resolves that short name to.
base_from=node:24-bookworm-slim
base_name=docker.io/library/node:24-bookworm-slim
driver=${USERLAND_BUILDAH_DRIVER:-overlay}
isolation=${USERLAND_BUILDAH_ISOLATION:-oci}
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-1767225600} # 2026-01-01T00:00:00Z, as build.sh
export NODE_BIN=${NODE_BIN:-$repo/node_modules/node/bin/node}

die() { echo "images/platform.sh: $*" >&2; exit 1; }

for tool in buildah jq tar flock sha256sum; do
  command -v "$tool" >/dev/null || die "needs $tool (apt-get install buildah runc jq)"
done
[[ $(id -u) -eq 0 ]] || die "must run as root (buildah storage, the base image's build)"
[[ -x $NODE_BIN ]] ||
  die "no Node binary at $NODE_BIN: run npm ci (the npm package node), or set NODE_BIN to a Node 24 binary"
[[ -f $repo/Dockerfile && -f $repo/.dockerignore ]] || die "no Dockerfile and .dockerignore in $repo"
for other in .containerignore Dockerfile.dockerignore; do
  [[ ! -e $repo/$other ]] || die "$repo/$other exists: only .dockerignore is read here (context.ts)"
done
# Every stage must start from the image node24 stands in for.
froms=$(awk 'toupper($1) == "FROM" { print $2 }' "$repo/Dockerfile" | sort -u)
[[ $froms == "$base_from" ]] ||
  die "the Dockerfile builds FROM '$(echo "$froms" | paste -sd' ')'; only $base_from is available (cluster/images/node24)"

# The base image (build.sh prints its JSON on stdout, progress on stderr).
base_json=$(bash "$here/build.sh" node24) || die "building the base image node24 failed"
base_archive=$(jq -r .node24.archive <<<"$base_json")
base_key=$(jq -r '.node24.ref | sub(".*:"; "")' <<<"$base_json")

mkdir -p "$cache"
# The context: a snapshot of exactly the files the .dockerignore leaves in, hashed for the key.
context=$(mktemp -d "$cache/.context-$name-XXXXXX")
trap 'rm -rf --one-file-system "$context" "$context.list"' EXIT
"$NODE_BIN" "$here/context.ts" "$repo" >"$context.list" ||
  die "listing the build context failed (cluster/images/context.ts)"
tar --create --directory="$repo" --null --no-recursion --files-from="$context.list" |
  tar --extract --directory="$context" --no-same-owner
rm "$context.list"
cp "$repo/Dockerfile" "$repo/.dockerignore" "$context/"
[[ -f $context/package-lock.json ]] || die "package-lock.json is not in the build context"
key=$(
  {
    echo "script"
    sha256sum <"$here/platform.sh"
    sha256sum <"$here/lib.sh"
    sha256sum <"$here/context.ts"
    echo "base $base_key"
    echo "context"
    hash_tree "$context"
  } | sha256sum | cut -c1-16
)
ref=$registry/$name:$key
out=$cache/$name-$key.tar

# Every buildah call names this build's own storage explicitly, so none can touch another one.
b() { buildah --root "$storage/root" --runroot "$storage/run" --storage-driver "$driver" "$@"; }

# Removes this build's containers and images, unmounts whatever is still mounted below its work
# directory (nothing, after a build that ended normally), and removes the directory.
cleanup() {
  [[ -n ${work:-} && $work == "$cache/.work-$name-"* && -d $work ]] || return 0
  b rm --all >/dev/null 2>&1 || true
  b rmi --all --force >/dev/null 2>&1 || true
  awk -v dir="$work/" 'index($5, dir) == 1 { print $5 }' /proc/self/mountinfo | LC_ALL=C sort -r |
    while read -r mountpoint; do umount "$mountpoint" || umount -l "$mountpoint" || true; done
  rm -rf --one-file-system "$work"
  rm -f "$out.tmp"
}

# Builds the image into $out. Runs in a subshell: its variables (work, storage) stay global there so
# that the EXIT trap still sees them once this function has returned.
build() {
  work=$(mktemp -d "$cache/.work-$name-XXXXXX")
  storage=$work/storage
  trap cleanup EXIT

  cat >"$work/storage.conf" <<EOF
[storage]
driver = "$driver"
graphroot = "$storage/root"
runroot = "$storage/run"
EOF
  # Accept any image (only local archives are read); no registry is consulted (--pull=never).
  echo '{"default":[{"type":"insecureAcceptAnything"}]}' >"$work/policy.json"
  # A system storage.conf's other settings (additional stores, mount programs) do not apply.
  export CONTAINERS_STORAGE_CONF=$work/storage.conf
  # Where buildah unpacks the base archive and stages layers (else /var/tmp).
  mkdir "$work/tmp"
  export TMPDIR=$work/tmp

  echo "$name: loading the base image $base_name from $base_archive" >&2
  local id
  id=$(b pull --quiet --signature-policy "$work/policy.json" "oci-archive:$base_archive") ||
    die "buildah pull of $base_archive failed (storage driver $driver)"
  b tag "$id" "$base_name"

  # The npm registry may be reached through a TLS-intercepting proxy whose CA only this machine
  # trusts (as here: the host has it in /etc/ssl/certs and tells its Node with NODE_EXTRA_CA_CERTS).
  # The image's Node, the official build, trusts only its bundled roots, and a RUN step gets no
  # variables from the host but the proxy ones. So RUN steps get, as read-only mounts that are in
  # no layer, a CA file (Node's bundled roots, the host's system bundle, NODE_EXTRA_CA_CERTS if set)
  # and a global npmrc (/usr/local/etc/npmrc, which the base image does not have) naming it as npm's
  # cafile: npm in the build trusts what the host trusts, and the image is unchanged.
  local cas=()
  [[ ! -r /etc/ssl/certs/ca-certificates.crt ]] || cas+=(/etc/ssl/certs/ca-certificates.crt)
  if [[ -n ${NODE_EXTRA_CA_CERTS:-} ]]; then
    [[ -r $NODE_EXTRA_CA_CERTS ]] || die "NODE_EXTRA_CA_CERTS=$NODE_EXTRA_CA_CERTS cannot be read"
    cas+=("$NODE_EXTRA_CA_CERTS")
  fi
  {
    "$NODE_BIN" -e 'process.stdout.write(require("node:tls").rootCertificates.join("\n") + "\n")'
    if ((${#cas[@]})); then cat "${cas[@]}"; fi
  } >"$work/ca.pem"
  echo "cafile=/run/userland-build-ca.pem" >"$work/npmrc"
  echo "$name: npm in RUN steps trusts Node's roots${cas[*]:+ and ${cas[*]}}" >&2

  echo "$name: buildah build (storage driver $driver, isolation $isolation, network host)" >&2
  b build --pull=never --signature-policy "$work/policy.json" \
    --isolation "$isolation" --network host --layers=false --timestamp "$SOURCE_DATE_EPOCH" \
    --volume "$work/ca.pem:/run/userland-build-ca.pem:ro" --volume "$work/npmrc:/usr/local/etc/npmrc:ro" \
    --format oci --file "$context/Dockerfile" --tag "$ref" "$context" >&2 ||
    die "buildah build of $repo/Dockerfile failed (see above)"

  b push --quiet --signature-policy "$work/policy.json" "$ref" "oci:$work/oci:$key" >&2 ||
    die "buildah push to an OCI layout failed"
  # push names the manifest by its tag (org.opencontainers.image.ref.name), as archive_layout expects.
  [[ $(jq -r '.manifests[0].annotations["org.opencontainers.image.ref.name"]' "$work/oci/index.json") == "$key" ]] ||
    die "the pushed layout does not name its manifest $key"
  archive_layout "$work/oci" "$ref" "$out"
}

# In a subshell: build's EXIT trap cleans up its work directory.
build_in_subshell() { (build); }
build_once "$name" "$out" "$ref from $repo/Dockerfile" build_in_subshell
jq -cn --arg name "$name" --arg ref "$ref" --arg archive "$out" '{($name): {ref: $ref, archive: $archive}}'
