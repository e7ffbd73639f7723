// Package siminput reads `flotilla simulate`'s input files into a
// sim.Config: the cluster and workload files in package sim's JSON or as
// Armada's simulator YAML (package armada), the config file of serve's
// form (scenario.ConfigFile) read against the clusters' resources, and
// the seed (Read). Problems are named at their paths in the files as
// written, also those sim.Run finds later (Read's renaming).
package siminput
