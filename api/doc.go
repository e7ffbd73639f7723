// Package api holds the JSON bodies of the service's HTTP API and of the
// executor protocol, shared by the handler (package httpapi), the Go
// client (package client) and executors (package executor, the Kubernetes
// executor). It imports nothing of the service: no server, scheduler or
// backend, nor an algorithm package, so a client or an executor links
// only the wire types (deps_test.go checks it). The conversions to and
// from the service's types are package httpapi's.
package api
