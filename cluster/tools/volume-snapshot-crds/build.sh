# Recipe for ../../build.sh, which sources it in this directory (see go_build there).
# No build: the VolumeSnapshot CRDs as the CSI external-snapshotter's client module ships them.
go mod download github.com/kubernetes-csi/external-snapshotter/client/v8
dir=$(go list -m -f '{{.Dir}}' github.com/kubernetes-csi/external-snapshotter/client/v8)
outputs=()
for kind in volumesnapshotclasses volumesnapshotcontents volumesnapshots; do
  cp "$dir/config/crd/snapshot.storage.k8s.io_$kind.yaml" "$out/"
  outputs+=("snapshot.storage.k8s.io_$kind.yaml")
done
chmod 644 "$out"/*.yaml # the module cache is read-only; the copies need not be
