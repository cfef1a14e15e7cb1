//go:build tools

// Package tools lists the kube-network-policies command so that `go mod tidy` keeps its dependencies.
package tools

import _ "sigs.k8s.io/kube-network-policies/cmd/kube-network-policies/standard"
