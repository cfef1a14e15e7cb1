# Recipe for ../../build.sh, which sources it in this directory (see go_build there).
# kube-network-policies v1.1.1 requires a pseudo-version of github.com/vishvananda/netlink that the
# checksum database here does not serve (404), so go cannot verify it there; ../go.sum, made once
# with this setting, holds its hash, which go checks instead (`go mod tidy` in ../ needs it too).
export GONOSUMDB=github.com/vishvananda/netlink

# This machine's kernel is built without CONFIG_NFT_QUEUE, so the nftables "queue" statement that
# hands packets to the enforcer fails ("netlink receive: no such file or directory") and no policy
# is ever enforced. The kernel does have xtables' NFQUEUE target (CONFIG_NETFILTER_XT_TARGET_NFQUEUE)
# and nft_compat, which nftables rules can use. The kernel also lacks CONFIG_NETFILTER_NETLINK_GLUE_CT,
# so the conntrack label the enforcer attaches to its "accept" verdict is silently dropped, and the
# rule that lets established connections through only when they carry that label drops every reply
# of an allowed connection. The build patches a copy of the module (nothing in the module cache
# changes): the two places that build the queue statement use the xtables target
# (xt_nfqueue.go.txt), and established/related connections pass without the label, as in
# conntrack-based firewalls generally; a policy change then applies to new connections only, so
# the enforcer runs with --strict-mode=false. It builds against the copy through a replace in a
# copy of the tools' go.mod. The releases that used iptables instead (v0.1.0) are not served here.
# See docs/decisions/0005-real-node.md.
# `go mod download` (unlike `go list -m`) fetches the module on a machine that has not got it yet.
module_dir=$(go mod download -json sigs.k8s.io/kube-network-policies | jq -r .Dir)
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
patched=$work/kube-network-policies
cp -r "$module_dir" "$patched"
chmod -R u+w "$patched"
perl -0pi -e 's/queue := &expr\.Queue\{Num: uint16\(c\.config\.QueueID\)\}\n\tif c\.config\.FailOpen \{\n\t\tqueue\.Flag = expr\.QueueFlagBypass\n\t\}/queue := nfqueueTarget(uint16(c.config.QueueID), c.config.FailOpen)/g' \
  "$patched/pkg/dataplane/controller.go"
perl -0pi -e 's/\t+&expr\.Ct\{Register: 0x1, Key: expr\.CtKeyLABELS\},\n\t+&expr\.Bitwise\{[^\n]*generateLabelMask\(c\.config\.CTLabelAccept\)[^\n]*\n\t+&expr\.Cmp\{Op: expr\.CmpOpNeq, Register: 0x1, Data: make\(\[\]byte, 16\)\},\n//g' \
  "$patched/pkg/dataplane/controller.go"
queues=$(grep -c 'queue := nfqueueTarget(' "$patched/pkg/dataplane/controller.go" || true)
labels=$(grep -c 'Key: expr.CtKeyLABELS' "$patched/pkg/dataplane/controller.go" || true)
if [[ $queues != 2 || $labels != 1 ]]; then
  echo "kube-network-policies: the patch no longer fits (queue statements replaced: $queues of 2; label matches left: $labels, expected 1); a new version? update this recipe" >&2
  exit 1
fi
cp xt_nfqueue.go.txt "$patched/pkg/dataplane/xt_nfqueue.go"
cp ../go.mod ../go.sum "$work/"
go mod edit -modfile="$work/go.mod" -replace "sigs.k8s.io/kube-network-policies=$patched"
go_build kube-network-policies -modfile="$work/go.mod" \
  sigs.k8s.io/kube-network-policies/cmd/kube-network-policies/standard
# The main package is named after its directory (standard, as opposed to the npa-* variants).
mv "$out/standard" "$out/kube-network-policies"
outputs=(kube-network-policies)
