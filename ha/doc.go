// Package ha runs the queueing service (server.Server) highly available:
// several processes on one database elect one leader with the backend's
// lease (backend.Leases). The leader runs the service and its cycles; the
// others forward every API request to the leader's advertised address
// (watches stream), answer 503 with Retry-After while no leader is known,
// and answer it themselves when the leader has not sent its response
// headers within the forward timeout (a leader paused, or cut off after it
// accepted the connection). It is what `flotilla serve -db` runs; an
// embedder with its own backend uses it the same way (Example).
//
// A Node is one process. Its elector renews or tries the lease every
// third of the TTL in a goroutine of its own (so that a long cycle or a
// reload never delays a renewal). A lease taken with a new token starts a
// term, and Run makes the process the leader: an empty write with the
// token (raising the backend's fence, so the previous leader can write no
// more), then Config.NewServer with the token as its fence, which
// rebuilds the state from the database. A term ends TTL after the Lead
// call that last renewed it was sent, unless a renewal succeeded since:
// the lease may have ended by then on the database's clock. Times are
// compared on the monotonic clock (Config.Now, time.Now by default), so a
// step of the wall clock neither lengthens nor shortens a term. The
// elector's goroutine and Run's ticker are where a Node waits on real
// time, as server.Server.Run is for a service alone; the service itself
// reads only the clock its Config passes. When a term ends, its context is
// cancelled (Run drops the server, its cycles and its requests, watches
// included) and its writes are refused at once, queue, executor and usage
// writes too; with a backend that implements backend.Fenced the database
// refuses them as well once a successor has written. A term never starts
// again under the token of a term the process ended (the database may
// still count it live: a renewal applied whose answer was lost): the
// process resigns and takes the lease again with a higher token, which
// fences off the ended term's writes still in flight before the new term
// reloads.
//
// Without leases (Config.Leases nil) a Node is the only process: it
// always leads, with fence 0, and Run only runs the cycles.
//
// The package depends on the backend interfaces, server, httpapi and
// net/http only: no database driver.
package ha
