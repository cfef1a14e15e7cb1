//go:build tools

// Package tools lists the Prometheus server and promtool commands so that `go mod tidy` keeps their dependencies.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
