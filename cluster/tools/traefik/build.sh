# Recipe for ../../build.sh, which sources it in this directory (see go_build there).
# Traefik's ACME support (lego) imports every DNS provider lego has, each with its cloud's SDK
# (Alibaba, Tencent, SoftLayer, Sakura, Oracle, Huawei, AWS Route 53 and Lightsail, ...): about
# half of what Traefik alone compiles. The tests run Traefik as the Gateway API implementation
# in front of the chart's HTTPRoutes and never ask for a certificate, so it is built against a copy
# of lego (nothing in the module cache changes) whose one provider table is replaced by a function
# that knows none (no_dns_providers.go.txt), through a replace in a copy of its go.mod.
# A configuration naming a DNS provider fails with "unrecognized DNS provider", as lego's own does.
# `go mod download` (unlike `go list -m`) fetches the module on a machine that has not got it yet.
lego_dir=$(go mod download -json github.com/go-acme/lego/v4 | jq -r .Dir)
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
patched=$work/lego
cp -r "$lego_dir" "$patched"
chmod -R u+w "$patched"
table=$patched/providers/dns/zz_gen_dns_providers.go
grep -q '^func NewDNSChallengeProviderByName(name string) (challenge.Provider, error)' "$table" ||
  { echo "traefik: lego's provider table changed (providers/dns/zz_gen_dns_providers.go); update this recipe" >&2; exit 1; }
if [[ $(find "$patched/providers/dns" -maxdepth 1 -name '*.go' ! -name '*_test.go' | wc -l) != 1 ]]; then
  echo "traefik: lego's providers/dns holds more than its provider table now; update this recipe" >&2
  exit 1
fi
cp no_dns_providers.go.txt "$table"
cp go.mod go.sum "$work/"
go mod edit -modfile="$work/go.mod" -replace "github.com/go-acme/lego/v4=$patched"
# Traefik's release build stamps its version, which `traefik version` then says.
version=$(go list -m -f '{{.Version}}' github.com/traefik/traefik/v3) # v3.6.12
ldflags="-X github.com/traefik/traefik/v3/pkg/version.Version=$version" go_build traefik \
  -modfile="$work/go.mod" github.com/traefik/traefik/v3/cmd/traefik
outputs=(traefik)
