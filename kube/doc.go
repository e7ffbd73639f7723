// Package kube is Flotilla's reference adapter for Kubernetes, on
// client-go. It is a module of its own so that the core module never
// imports client-go.
package kube
