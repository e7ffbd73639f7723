// Package armada reads Armada's simulator files (internal/scheduler/simulator
// in Armada) into package sim's input: a WorkloadSpec into a sim.Workload
// (ParseWorkload) and a ClusterSpec into sim.Clusters (ParseClusters).
// README.md's "Armada simulator files" says, field by field, what maps and
// what does not.
//
// The YAML is read the way Armada's loader reads it (keys matched to field
// names without regard to case, durations as Go duration strings,
// quantities as Kubernetes quantities), but strictly: unknown and repeated
// keys, values of the wrong kind and everything the mapping cannot honour
// are reported, all at once, each a *flotilla.FieldError at its YAML path
// (queues[0].jobTemplates[2].runtimeDistribution.minimum). The PathRenamer
// each result carries puts the field paths of sim's own later problems
// (sim.Run's) in the same terms.
package armada
