# A small Debian image for tests on a real node: busybox (httpd, nc, wget), curl, nc (OpenBSD),
# ip/ss, ps/top, CA certificates and getent (libc-bin).
packages=(busybox curl netcat-openbsd iproute2 procps ca-certificates libc-bin)
cmd=(sleep infinity)
