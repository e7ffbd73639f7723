// Package textform holds the text forms users write that the scenario
// format (docs/scenarios.md), the service's submit file and executor protocol
// (docs/http-api.md), the simulator's cluster and workload files and the
// Kubernetes executor share: taints and tolerations, with their JSON
// names, and their conversion to the library's types. Those formats name
// these types (scenario.Taint, submit.Toleration, api.Taint, …) as
// aliases, so one definition fixes the JSON every one of them reads and
// writes.
//
// A conversion judges nothing: flotilla.Node.Validate and
// flotilla.Job.Validate do, at paths the caller renames to its file's.
// The package imports only the library's root package.
package textform
