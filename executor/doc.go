// Package executor is the fake cluster of `flotilla executor` (README, "Run it as a service"):
// it registers a cluster's nodes with the service, takes leases, "runs"
// each job for its runtime, reports it running and then succeeded (or
// failed with its exit code), renews its leases by reporting, and stops
// the jobs the service cancels or preempts. It lets the whole system run
// on one machine without Kubernetes, and the simulator drive the real
// service under a virtual clock.
//
// Time comes from the Clock passed in; Step makes one report and starts
// no goroutine; Run loops on the real clock in the caller's goroutine
// (Every, whose Loop takes a Timer that tests move). A report may run
// until shortly before the oldest lease it renews would expire, not just
// a renew period, so that a slow but live service still renews leases. The
// service is reached through the Reporter interface: *client.Client over
// HTTP, or Local in the same process.
package executor
