// Package nodesfile reads the nodes file of `flotilla executor`: the
// nodes array of a scenario file (docs/scenarios.md), or a whole scenario
// file's {"nodes": [...]}, node templates expanded by count and validated
// as a scenario's nodes are, every problem named by field and value
// (Parse). The nodes come out in the executor protocol's form (api.Node),
// as the fake executor reports them.
package nodesfile
