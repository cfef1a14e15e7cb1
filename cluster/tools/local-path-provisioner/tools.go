//go:build tools

// Package tools lists the local-path-provisioner command so that `go mod tidy` keeps its dependencies.
package tools

import _ "github.com/rancher/local-path-provisioner"
