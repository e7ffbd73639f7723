// Command tools pins the kube-apiserver, kube-controller-manager and etcd
// that the Kubernetes adapter's integration tests run against. It is never
// run itself: scripts/kube builds the three from this module's
// dependencies
//
//	go build k8s.io/kubernetes/cmd/kube-apiserver
//	go build k8s.io/kubernetes/cmd/kube-controller-manager
//	go build go.etcd.io/etcd/server/v3
//
// so that they come from the Go module proxy alone, at the versions go.sum
// fixes. It is a module of its own, outside go.work, so that neither the
// core module nor the adapter's module depends on Kubernetes' server code.
package main

import (
	_ "go.etcd.io/etcd/server/v3/etcdmain"
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {}
