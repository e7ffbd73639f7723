// Package flotilla is the vocabulary shared by every Flotilla package: resource
// schemas and dense resource vectors, Kubernetes-style quantities, jobs, nodes,
// queues, priority classes, taints and tolerations, and the typed validation
// errors that name the offending field and value.
//
// The package holds data and small methods only. Deciding where jobs run is the
// job of the scheduler package, which composes queue, fairness and binpack.
//
// Resources are dense vectors of int64 laid out by a ResourceSchema: index i
// of every vector in one scheduling cycle means the same resource, counted in
// that resource's Unit. By default (Kubernetes' rule: MilliValue for cpu,
// Value for the rest) cpu is counted in milli-units and every other resource
// in whole units: "1" cpu is 1000, "500m" cpu is 500, "4Gi" memory is 4·2^30
// bytes, "1" nvidia.com/gpu is 1. Integers make every comparison and sum
// exact; whole units let one entry hold 9.2·10^18 bytes (8 EiB), so that the
// total of 100,000 nodes of 4 TiB (4.4·10^17 bytes) fits with room to spare,
// while cpu keeps its fractions (9.2·10^15 cores at most). A quantity finer
// than its resource's unit rounds up ("0.5" memory is 1 byte).
// NewResourceSchemaOf chooses other units.
//
// A queue's weight is 1/PriorityFactor; Queue.Validate keeps it finite by
// accepting only factors of 0 (meaning 1) or at least MinPriorityFactor.
package flotilla
