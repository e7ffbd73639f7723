// Package memory is the default backend: everything in one process's
// memory, nothing durable. It implements backend.Backend and passes
// backend/backendtest's conformance suite.
//
//	b := memory.New(schema)
//	_ = b.CreateQueue(ctx, flotilla.Queue{Name: "A"})
//	stored, err := b.Commit(ctx, &backend.Write{Jobs: specs, Events: submitted})
//	log, err := b.Events(ctx, "A", "s1", 1, 100)
//
// It is built to be small, because the service keeps it beside its own
// state: a stored job is one record of 88 bytes that shares the
// submitted *flotilla.Job (specs are not copied) and, with the jobs stored
// before it that have the same grace period, deadline, runtime, exit code
// and principal (a template's), one runSpec. Records are kept in
// blocks of 1024 that never move, and named by handle (a record's
// position) everywhere else: found by job id and by client id through
// pointer-free hash indexes of handles (internal/idindex), not maps the
// garbage collector scans, and listed by job set as handles. A job set's
// log is a list of 32-byte events, kept in blocks of 1024 so that a
// growing log is never copied whole, that name their job by its index in
// the job set and their cluster and node by interned number; events are
// rebuilt into events.Event on read.
// Commit returns the write's own Events slice, each event given its
// sequence number and stored time, rather than a copy of it.
// Times are kept as Unix nanoseconds (instants from 1678 to 2262; other
// non-zero times are refused as out of range).
//
// One lock guards the backend: Commit holds it exclusively for the time of
// its checks and writes, O(jobs + events) with one index lookup per event;
// reads share it. Commit validates jobs (flotilla.Job.Validate) before it
// takes the lock. LiveJobs reads in chunks and releases the lock between
// them, so its callback may call the backend. The package starts no
// goroutines and reads no clock: its leader lease (backend.Leases) runs on
// the clock a test gives SetLeaseClock. WithFence (backend.Fenced) returns
// a view whose queue, executor and usage writes check and raise the fence
// under the same lock as Commit.
package memory
