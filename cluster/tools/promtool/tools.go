//go:build tools

// Package tools lists the promtool command so that `go mod tidy` keeps its dependencies.
package tools

import _ "github.com/prometheus/prometheus/cmd/promtool"
