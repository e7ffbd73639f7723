// Package metrics is `flotilla serve`'s Prometheus metrics: cycle
// durations and errors, leases, preemptions, lease expiries, deadline
// failures, refused submissions, HTTP requests by route and status, the
// over-committed nodes of the last cycle, whether this process leads, and
// per queue its jobs and shares, read from the service at each scrape.
// The names follow Kueue's with the flotilla_ prefix.
//
// It lives in the command's module because Prometheus's client is not one
// of the core module's dependencies.
package metrics
