# CoreDNS, the cluster DNS: the binary built from cluster/tools/coredns, alone at /coredns.
inputs=("COREDNS_BIN  the CoreDNS binary (a static Go build of cluster/tools/coredns)")
files=(COREDNS_BIN:/coredns)
entrypoint=(/coredns)
ports=(53/udp 53/tcp)
