// Package backendtest is the conformance suite of package backend: every
// rule of the backend interfaces' contract as one check, run against any
// implementation with one call.
//
//	func TestConformance(t *testing.T) {
//		backendtest.Run(t, func(t *testing.T) backend.Backend {
//			return memory.New(backendtest.Schema())
//		})
//	}
//
// Run runs each rule as a subtest named after it, on a fresh backend from
// newBackend (which must be opened over a schema with the resources of
// Schema, and be empty); the suite closes it at the end of the subtest.
// The rules cover queue CRUD and its errors, a queue deleted and created
// again, Commit's atomicity (one bad event or duplicate in a batch of many
// stores nothing), gap-free sequence numbers per job set, concurrent
// writers, paging, replay equal to the stored states, LiveJobs, client-id
// uniqueness, fencing, refused transitions, cancelled contexts, executors,
// usage and Close. Optional interfaces are checked where the backend has
// them: backend.ClientIDLookup, backend.JobLookup (every id answered
// at its place, missing and duplicated ids, a batch of 10,000), and
// backend.Fenced (a view's queue, executor and usage writes below the
// highest fence refused with ErrFenced and changing nothing; at or above
// it applied, raising the fence).
//
// RunLeases is the suite of the optional backend.Leases: one leader at a
// time, renewal, expiry after the ttl on the backend's clock (which the
// caller moves forward), tokens that grow on every takeover and stay
// above every applied fence, Resign, concurrent Leads, and a deposed
// leader's writes refused with ErrFenced once its successor has written.
//
// Model is the oracle of backend.Jobs: the contract read naively, with
// maps. CheckHistory runs a history of writes and reads (Steps, which a
// test generates at random) against a backend and a Model and returns the
// first disagreement; backend/memory and backend/postgres run the same
// gopter property with it.
//
// Run takes any T with the methods of *testing.T it uses (TB), so a test of
// the suite itself can run it with a recorder that counts failures instead
// of failing; this package's tests do that with deliberately broken
// backends, each of which must fail the rule it breaks. The rule of
// concurrent writers starts goroutines and calls T's Errorf from them, so a
// recorder must be safe for concurrent use. Run imports no testing
// package, so importing backendtest adds nothing to a program.
package backendtest
