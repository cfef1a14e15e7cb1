# Recipe for ../../build.sh once this directory moves to cluster/tools/traefik (see README.md here).
# Traefik's release build stamps its version, which `traefik version` then says.
version=$(go list -m -f '{{.Version}}' github.com/traefik/traefik/v3) # v3.6.12
ldflags="-X github.com/traefik/traefik/v3/pkg/version.Version=$version" go_build traefik \
  github.com/traefik/traefik/v3/cmd/traefik
outputs=(traefik)
