#!/usr/bin/env bash
# Builds the container images a real node runs, locally: no registry is reachable, so each image is
# an OCI image-layout tar archive (index.json at its root) for `ctr -n k8s.io images import`, run by
# kubelet with imagePullPolicy: Never.
#
#   bash cluster/images/build.sh [name ...]      # no names: every cluster/images/*/recipe.sh
#
# Prints one JSON line on stdout, e.g.
#   {"pause":{"ref":"userland.local/pause:0123456789abcdef","archive":"/root/.cache/userland/images/pause-0123456789abcdef.tar"}}
# Progress goes to stderr. Each image is one layer: a Debian bookworm root filesystem from
# mmdebstrap (when the recipe names Debian packages) or an empty one ("scratch"), plus the recipe's
# files and build step, packed with umoci.
#
# Cache: ${USERLAND_CACHE:-~/.cache/userland}/images/<name>-<key>.tar, where key is a short sha256
# of the recipe directory, this script and the input files the recipe names. The key is also the
# tag, so a changed recipe or input gives a new reference; an unchanged one is not rebuilt.
# Two callers building the same image wait for each other (flock); archives are written atomically.
#
# A recipe is cluster/images/<name>/recipe.sh, a bash file sourced by this script (run as root). It
# sets any of these variables (all optional) and may define a build function:
#   packages=(curl ...)     Debian bookworm packages; none means an empty root filesystem
#   variant=essential       mmdebstrap variant (essential: Essential:yes packages + the list,
#                           no apt; minbase: adds apt, for images that install more later)
#   mmdebstrap_args=(...)   extra mmdebstrap options, e.g. --customize-hook='chroot "$1" ...'
#   inputs=("VAR  what it is and how to get it" ...)
#                           environment variables that must name a file or directory built
#                           elsewhere; their contents are part of the key
#   files=("SRC:/dest" ...) copied into the image; SRC is an input's variable name or a path
#                           relative to the recipe directory (modes are kept, owner is root)
#   build() { ...; }        runs after packages and files, in a scratch directory, with $rootfs
#                           (the image's root), $recipe (its directory) and the inputs set
#   entrypoint=(...) cmd=(...) user=uid:gid workdir=/dir env=(K=V ...) ports=(53/udp ...)
#   labels=(k=v ...)        the image config; PATH defaults to the usual Debian one
# Anything a build step reads that is not in the recipe directory or an input (a pinned module, a
# Debian package) should be pinned by a version written in the recipe, so that the key follows it.
set -euo pipefail
shopt -s inherit_errexit
umask 022
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
cache=${USERLAND_CACHE:-$HOME/.cache/userland}/images
registry=userland.local
suite=bookworm
sources=(
  "deb http://deb.debian.org/debian $suite main"
  "deb http://deb.debian.org/debian $suite-updates main"
  "deb http://deb.debian.org/debian-security $suite-security main"
)
# Fixed timestamps (file mtimes, config and history "created") make rebuilds of the same recipe
# reproducible-ish; the Debian mirror moving on is what still changes the bytes.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-1767225600} # 2026-01-01T00:00:00Z
created=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
default_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

die() { echo "images/build.sh: $*" >&2; exit 1; }

# Sources a recipe into this (sub)shell, after resetting every recipe variable.
load_recipe() {
  name=$1
  recipe=$here/$name
  [[ -f $recipe/recipe.sh ]] || die "no image named '$name' (expected $recipe/recipe.sh)"
  packages=() variant=essential mmdebstrap_args=() inputs=() files=()
  entrypoint=() cmd=() user="" workdir="" env=() ports=() labels=()
  unset -f build
  # shellcheck disable=SC1091
  source "$recipe/recipe.sh"
}

# Checks the loaded recipe's inputs; prints what is missing, one line each.
missing_inputs() {
  local entry var what
  for entry in "${inputs[@]}"; do
    var=${entry%% *}
    what=$(echo "${entry#"$var"}" | sed "s/^ *//")
    if [[ -z ${!var:-} ]]; then
      echo "  $var=<path> for $name: $what"
    elif [[ ! -e ${!var} ]]; then
      echo "  $var for $name: ${!var} does not exist ($what)"
    fi
  done
}

image_key() {
  local entry var
  {
    echo "recipe"
    hash_tree "$recipe"
    echo "driver"
    sha256sum <"$here/build.sh"
    sha256sum <"$here/lib.sh"
    for entry in "${inputs[@]}"; do
      var=${entry%% *}
      echo "input $var"
      hash_tree "${!var}"
    done
  } | sha256sum | cut -c1-16
}

# build_recipe NAME OUT KEY: loads the recipe and builds it into the archive OUT; a build step's
# output is progress, not the JSON.
build_recipe() {
  load_recipe "$1"
  (build_image "$2" "$3") >&2
}

# Builds the loaded recipe into the archive $1. Runs in a subshell (its own traps and variables).
build_image() {
  local out=$1 key=$2 entry src dest
  work=$(mktemp -d "$cache/.work-$name-XXXXXX")
  # --one-file-system: never follow a mount a failed build step may have left inside the rootfs.
  trap 'rm -rf --one-file-system "$work"' EXIT
  rootfs=$work/rootfs

  if ((${#packages[@]})); then
    command -v mmdebstrap >/dev/null ||
      die "$name: Debian packages need mmdebstrap (apt-get install mmdebstrap)"
    local include
    include=$(IFS=,; echo "${packages[*]}")
    # merged-usr: the debootstrap-style /bin -> usr/bin links and usr-is-merged, instead of the
    # usrmerge package (and the perl it drags in). The dpkg path filters keep documentation,
    # manuals and translations out, also for packages installed later in the image.
    mmdebstrap --mode=root --variant="$variant" --format=directory \
      --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
      --include="$include" \
      --dpkgopt='path-exclude=/usr/share/doc/*' \
      --dpkgopt='path-include=/usr/share/doc/*/copyright' \
      --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
      --dpkgopt='path-exclude=/usr/share/locale/*' \
      --dpkgopt='path-include=/usr/share/locale/locale.alias' \
      --dpkgopt='path-exclude=/usr/share/lintian/*' --dpkgopt='path-exclude=/usr/share/linda/*' \
      --customize-hook='rm -f "$1"/etc/resolv.conf "$1"/etc/hostname' \
      "${mmdebstrap_args[@]}" \
      "$suite" "$rootfs" "${sources[@]}" >&2
    # The runtime provides /dev, resolv.conf, hostname and hosts; drop caches and logs (mmdebstrap
    # already removed apt's lists and archives).
    find "$rootfs/dev" "$rootfs/var/log" "$rootfs/run" "$rootfs/tmp" "$rootfs/var/tmp" \
      -mindepth 1 -maxdepth 1 -exec rm -rf --one-file-system {} +
    rm -rf "$rootfs"/var/cache/apt/* "$rootfs"/var/cache/ldconfig/aux-cache \
      "$rootfs"/var/cache/debconf/*-old "$rootfs"/var/lib/dpkg/*-old
  else
    mkdir "$rootfs"
  fi

  for entry in "${files[@]}"; do
    src=${entry%%:*} dest=${entry#*:}
    [[ $dest == /* && $src != "$entry" ]] ||
      die "$name: files entry '$entry' is not SRC:/absolute/dest"
    if [[ " ${inputs[*]%% *} " == *" $src "* ]]; then src=${!src}; else src=$recipe/$src; fi
    mkdir -p "$rootfs$(dirname "$dest")"
    # -H: an input named through a symlink (cluster/build.sh's bin directory is one) is copied as
    # the file it points to; the key already hashes that file's contents.
    cp -R -H --no-preserve=ownership -- "$src" "$rootfs$dest"
  done

  if declare -F build >/dev/null; then
    (cd "$work"; build)
  fi

  # One layer, from a sorted file list with clamped mtimes, numeric owners and file capabilities.
  (cd "$rootfs" && find . -mindepth 1 -printf '%P\0' | LC_ALL=C sort -z |
    tar --create --file="$work/layer.tar" --null --no-recursion \
      --format=posix --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
      --mtime="@$SOURCE_DATE_EPOCH" --clamp-mtime --numeric-owner \
      --xattrs --xattrs-include=security.capability --files-from=-)

  local image=$work/oci:$key args=()
  umoci init --layout "$work/oci"
  umoci new --image "$image"
  umoci raw add-layer --image "$image" --history.created="$created" \
    --history.created_by="cluster/images/build.sh $name" "$work/layer.tar"
  args=(--created="$created" --author=userland --no-history --config.env="PATH=$default_path")
  for entry in "${entrypoint[@]}"; do args+=(--config.entrypoint="$entry"); done
  for entry in "${cmd[@]}"; do args+=(--config.cmd="$entry"); done
  for entry in "${env[@]}"; do args+=(--config.env="$entry"); done
  for entry in "${ports[@]}"; do args+=(--config.exposedports="$entry"); done
  for entry in "${labels[@]}"; do args+=(--config.label="$entry"); done
  [[ -z $user ]] || args+=(--config.user="$user")
  [[ -z $workdir ]] || args+=(--config.workingdir="$workdir")
  umoci config --image "$image" "${args[@]}"
  umoci gc --layout "$work/oci"
  archive_layout "$work/oci" "$registry/$name:$key" "$out"
}

for tool in umoci jq tar flock; do
  command -v "$tool" >/dev/null || die "needs $tool (apt-get install umoci jq)"
done
[[ $(id -u) -eq 0 ]] || die "must run as root (mmdebstrap --mode=root, file ownership in layers)"

names=("$@")
if ((${#names[@]} == 0)); then
  for f in "$here"/*/recipe.sh; do names+=("$(basename "$(dirname "$f")")"); done
fi

# Check every input first, so a missing one fails before minutes of building the others.
missing=""
declare -A keys
for n in "${names[@]}"; do
  [[ $n =~ ^[a-z0-9][a-z0-9._-]*$ ]] || die "bad image name '$n'"
  m=$(load_recipe "$n"; missing_inputs)
  if [[ -n $m ]]; then missing+="$m"$'\n'; continue; fi
  keys[$n]=$(load_recipe "$n"; image_key)
done
[[ -z $missing ]] || die "missing inputs; set these environment variables:"$'\n'"${missing%$'\n'}"

mkdir -p "$cache"
json="{}"
for n in "${names[@]}"; do
  key=${keys[$n]}
  out=$cache/$n-$key.tar
  build_once "$n" "$out" "$registry/$n:$key" build_recipe "$n" "$out" "$key"
  json=$(jq -c --arg name "$n" --arg ref "$registry/$n:$key" --arg archive "$out" \
    ". + {(\$name): {ref: \$ref, archive: \$archive}}" <<<"$json")
done
echo "$json"
