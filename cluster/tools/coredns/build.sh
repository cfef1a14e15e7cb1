# Recipe for ../../build.sh, which sources it in this directory (see go_build there).
# As coredns's own Makefile builds it: static (no cgo), since it runs in a scratch-like container
# image with no libc; grpcnotrace leaves golang.org/x/net/trace out of gRPC (smaller binary). The
# main package is main.go here, with the plugins the node uses (not CoreDNS's, with all of them).
CGO_ENABLED=0 go_build coredns -tags grpcnotrace .
outputs=(coredns)
