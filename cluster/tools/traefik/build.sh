# Recipe for ../../build.sh, which sources it in this directory (see go_build there).
# Traefik's release build stamps its version, which `traefik version` then says.
version=$(go list -m -f '{{.Version}}' github.com/traefik/traefik/v3) # v3.6.12
ldflags="-X github.com/traefik/traefik/v3/pkg/version.Version=$version" go_build traefik \
  github.com/traefik/traefik/v3/cmd/traefik
outputs=(traefik)
