# Recipe for ../../build.sh, which sources it in this directory (see go_build there).
# Static (no cgo), as coredns's own Makefile builds it, since it runs in a scratch-like container
# image with no libc. Not with its grpcnotrace tag (a smaller binary): that would compile gRPC and
# every package above it again for CoreDNS alone, instead of sharing them with the other tools. The
# main package is main.go here, with the plugins the node uses (not CoreDNS's, with all of them).
go_build coredns .
outputs=(coredns)
