# Recipe for ../../build.sh, which sources it in this directory (see go_build there).
# The control plane and a real node's kubelet and kube-proxy, in one `go build` so the packages
# they share compile once.
# Kubernetes' release build (hack/lib/version.sh) stamps its version; without it every component
# reports v0.0.0-master (`kubelet --version`, a node's kubeletVersion, the API server's /version).
k8s_version=$(go list -m -f '{{.Version}}' k8s.io/kubernetes) # v1.37.2
k8s_minor=$(echo "$k8s_version" | cut -d. -f2)
ldflags=
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$k8s_minor"
  ldflags+=" -X $pkg.gitTreeState=clean"
done
ldflags=$ldflags go_build "kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd, kubelet, kube-proxy" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl go.etcd.io/etcd/server/v3 \
  k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy
# The etcd module's main package is named after its directory.
mv "$out/server" "$out/etcd"
outputs=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy)
