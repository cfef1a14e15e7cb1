//go:build tools

// Package tools lists the traefik command so that `go mod tidy` keeps its dependencies.
package tools

import _ "github.com/traefik/traefik/v3/cmd/traefik"
