# Recipe for ../../build.sh, which sources it in this directory (see go_build there).
# As its release build (scripts/build) does: without cgo (it runs in a container image), with its
# version stamped (else it reports 0.0.1).
version=$(go list -m -f '{{.Version}}' github.com/rancher/local-path-provisioner)
ldflags="-X main.VERSION=$version" go_build local-path-provisioner github.com/rancher/local-path-provisioner
outputs=(local-path-provisioner)
