//go:build tools

// Package tools lists the coredns command so that `go mod tidy` keeps its dependencies.
package tools

import _ "github.com/coredns/coredns"
