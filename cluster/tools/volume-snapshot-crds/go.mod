// The VolumeSnapshot CRDs (snapshot.storage.k8s.io/v1, from the CSI external-snapshotter's client
// module) that hand-in snapshots are tested against; nothing is built. No tools.go: only the
// module's files are used, so nothing imports it (and `go mod tidy` must not be run here: it would
// drop the requirement).
module userland.dev/cluster/tools/volume-snapshot-crds

go 1.26.0

require github.com/kubernetes-csi/external-snapshotter/client/v8 v8.7.0
