# What cluster/images/build.sh and platform.sh share, sourced by both: hashing the files a key
# covers, writing an OCI layout as an importable archive, and building an archive once per key.
# Changing this file changes every image's key.

# Prints, for a file or directory, a listing of types, names, link targets, executable bits and
# content hashes: what a copy of it reproduces (other mode bits follow the umask of a checkout).
hash_tree() {
  if [[ -d $1 ]]; then
    (cd "$1" && find . \( -type f -perm -u+x -printf "x %p\n" \) -o -printf "%y %p %l\n" |
      LC_ALL=C sort && find . -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum)
  else
    if [[ -x $1 ]]; then echo x; fi
    sha256sum <"$1"
  fi
}

# archive_layout LAYOUT REF OUT: writes the OCI layout LAYOUT, whose manifest is named by its tag
# (org.opencontainers.image.ref.name, as umoci and buildah write it), as the tar archive OUT
# (atomically, reproducibly). The index also gets io.containerd.image.name, the full reference, so
# containerd's import gives the archive the same name with or without --base-name, and the platform,
# so that importers pick it without reading the config.
archive_layout() {
  local layout=$1 ref=$2 out=$3 arch
  arch=$(dpkg --print-architecture)
  jq -c --arg ref "$ref" --arg arch "$arch" \
    '.manifests |= map(.annotations["io.containerd.image.name"] = $ref
                       | .platform = {architecture: $arch, os: "linux"})' \
    "$layout/index.json" >"$layout/index.json.tmp"
  mv "$layout/index.json.tmp" "$layout/index.json"
  tar --create --file="$out.tmp" --directory="$layout" --sort=name --format=posix \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
    --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner --mode=go+rX \
    oci-layout index.json blobs
  mv -f "$out.tmp" "$out"
}

# build_once NAME OUT WHAT COMMAND...: runs COMMAND (which writes OUT) unless OUT exists. Two callers
# building the same image wait for each other (flock); the second finds OUT and does not build.
# Progress on stderr.
build_once() {
  local name=$1 out=$2 what=$3
  shift 3
  if [[ -f $out ]]; then
    echo "$name: cached ($out)" >&2
    return 0
  fi
  (
    # shellcheck disable=SC2154 # rc is set in the trap itself
    trap 'rc=$?; ((rc == 0)) || echo "$name: build failed (exit $rc)" >&2' EXIT
    exec 9>"$(dirname "$out")/.$name.lock"
    flock 9
    if [[ -f $out ]]; then echo "$name: cached, built by another caller ($out)" >&2; exit 0; fi
    echo "$name: building $what" >&2
    start=$(date +%s)
    "$@"
    echo "$name: built in $(($(date +%s) - start)) s, $(du -h "$out" | cut -f1) ($out)" >&2
  )
}
