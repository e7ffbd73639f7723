// Package flotilla is the vocabulary shared by every Flotilla package: resource
// schemas and dense resource vectors, Kubernetes-style quantities, jobs, nodes,
// queues, priority classes, taints and tolerations, and the typed validation
// errors that name the offending field and value.
//
// The package holds data and small methods only. Deciding where jobs run is the
// job of the scheduler package, which composes queue, fairness and binpack.
//
// Resources are dense vectors of int64 milli-units laid out by a ResourceSchema:
// index i of every vector in one scheduling cycle means the same resource. A
// quantity of "1" cpu is 1000, "4Gi" memory is 4·2^30·1000. Keeping whole
// milli-units makes every comparison exact; the price is that one vector entry
// holds at most about 9.2·10^15 base units (8 PiB of memory), which validation
// enforces.
//
// A queue's weight is 1/PriorityFactor; Queue.Validate keeps it finite by
// accepting only factors of 0 (meaning 1) or at least MinPriorityFactor.
package flotilla
