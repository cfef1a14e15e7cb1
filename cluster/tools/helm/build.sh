# Recipe for ../../build.sh, which sources it in this directory (see go_build there).
# helm's release build (its Makefile) stamps its version and the Kubernetes version of its client
# libraries; without them `helm version` is vague and `helm template`/`lint` assume Kubernetes 1.20.
helm_version=$(go list -m -f '{{.Version}}' helm.sh/helm/v3)
client_go=$(go list -m -f '{{.Version}}' k8s.io/client-go) # v0.37.0 → Kubernetes 1.37
k8s_minor=$(echo "$client_go" | cut -d. -f2)
ldflags="-X helm.sh/helm/v3/internal/version.version=$helm_version"
for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
  ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$k8s_minor"
done
ldflags=$ldflags go_build helm helm.sh/helm/v3/cmd/helm
outputs=(helm)
