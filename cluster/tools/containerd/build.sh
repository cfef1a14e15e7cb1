# Recipe for ../../build.sh, which sources it in this directory (see go_build there).
# As containerd's Makefile builds them for Linux: urfave_cli_no_docs leaves out the man-page
# generator; no_btrfs leaves out the btrfs snapshotter, which needs cgo and the libbtrfs headers (the
# node uses overlayfs). The version is stamped like the release's.
version=$(go list -m -f '{{.Version}}' github.com/containerd/containerd/v2)
tags="urfave_cli_no_docs no_btrfs"
ldflags="-X github.com/containerd/containerd/v2/version.Version=$version"
ldflags=$ldflags go_build "containerd, ctr" -tags "$tags" \
  github.com/containerd/containerd/v2/cmd/containerd github.com/containerd/containerd/v2/cmd/ctr
# The shim, also as the Makefile builds it: without gRPC (it speaks ttrpc only; smaller, with one
# shim process per pod). Like every tool here it is built without cgo (../../build.sh), which the
# Makefile does for the shim only: containerd and ctr then resolve names with Go's resolver and
# lose nothing the node uses (btrfs, the one cgo snapshotter, is left out anyway).
ldflags=$ldflags go_build containerd-shim-runc-v2 -tags "$tags no_grpc" \
  github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2
outputs=(containerd ctr containerd-shim-runc-v2)
