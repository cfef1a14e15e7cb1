//go:build tools

// Package tools lists the helm command so that `go mod tidy` keeps its dependencies.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
