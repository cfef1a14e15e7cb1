# Recipe for ../../build.sh, which sources it in this directory (see go_build there).
go_build kwok sigs.k8s.io/kwok/cmd/kwok
# kwok's stock stages (from the same module): nodes become Ready and keep a heartbeat Lease,
# pods are scheduled, become Ready, complete and are deleted like on a real kubelet.
kwok_dir=$(go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
for stage in node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease \
  pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
  echo "---"
  cat "$kwok_dir/kustomize/stage/$stage.yaml"
done >"$out/kwok-stages.yaml"
outputs=(kwok kwok-stages.yaml)
