# Recipe for ../../build.sh, which sources it in this directory (see go_build there).
# As containerd's Makefile builds them for Linux: urfave_cli_no_docs leaves out the man-page
# generator; no_btrfs leaves out the btrfs snapshotter, whose cgo needs the libbtrfs headers that a
# plain machine lacks (the node uses overlayfs). The version is stamped like the release's.
version=$(go list -m -f '{{.Version}}' github.com/containerd/containerd/v2)
tags="urfave_cli_no_docs no_btrfs"
ldflags="-X github.com/containerd/containerd/v2/version.Version=$version"
ldflags=$ldflags go_build "containerd, ctr" -tags "$tags" \
  github.com/containerd/containerd/v2/cmd/containerd github.com/containerd/containerd/v2/cmd/ctr
# The shim, also as the Makefile builds it: without cgo, so static and independent of the host's
# libc (a shim process outlives containerd upgrades), and without gRPC (it speaks ttrpc only;
# smaller, with one shim process per pod).
CGO_ENABLED=0 ldflags=$ldflags go_build containerd-shim-runc-v2 -tags "$tags no_grpc" \
  github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2
outputs=(containerd ctr containerd-shim-runc-v2)
