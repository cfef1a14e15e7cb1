# The Kubernetes sandbox ("pause") container: Kubernetes' own pause.c, from the k8s.io/kubernetes
# module at the version below, compiled static. The image is that one binary (no Debian rootfs).
# Needs go, gcc and libc6-dev on the building machine.
kubernetes_version=v1.37.2
entrypoint=(/pause)
user=65535:65535

build() {
  local dir
  dir=$(go env GOMODCACHE)/k8s.io/kubernetes@$kubernetes_version
  if [[ ! -f $dir/build/pause/linux/pause.c ]]; then
    dir=$(go mod download -json "k8s.io/kubernetes@$kubernetes_version" | jq -r .Dir)
  fi
  gcc -Os -Wall -Werror -static -DVERSION="$kubernetes_version" \
    -o "$rootfs/pause" "$dir/build/pause/linux/pause.c"
  strip "$rootfs/pause"
}
