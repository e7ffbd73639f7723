// Package httpapi serves the queueing service (package server) over HTTP:
// JSON bodies (package api), the routes of openapi.json, bearer-token auth
// from docs/auth-file.md's auth file, request size limits, and event streams as
// JSON lines. It uses the standard library only; Prometheus metrics are
// added by the flotilla command, outside the core module.
//
// Status codes: 200/201/204 success; 400 bad input, the body naming every
// problem by field and value; 401 no known token; 403 a token without the
// right; 404 no such queue or job; 409 a queue that exists or still has
// jobs; 413 a body over the limit; 503 storage unavailable (the backend
// down or restarting, backend.ErrUnavailable; a write of unknown outcome;
// a closed or fenced backend), with Retry-After: 1, or an event stream
// past its bounds (below), with Retry-After: 5; 500 otherwise.
// A refused request changes nothing.
//
// Event streams (GET …/events, following with watch=true or not) are
// bounded: Options.MaxStreams at once in total and
// Options.MaxStreamsPerPrincipal per principal (defaults 512 and 64); and
// each event must reach the connection within Options.StreamWriteTimeout
// (default 30 s) of the handler's clock, or the stream ends, so a client
// that stops reading holds neither its page of events nor its slot for
// longer. Handler.Streams counts the streams served. /healthz and /readyz
// share nothing with streams.
//
// GET /v1/jobs with explain=true adds each job's long form (api.JobExplain,
// from server.Detail) to its status, under the same right as the status
// (watch on the job's queue); explain is a boolean (strconv.ParseBool),
// anything else a 400 naming it.
//
// Health (/healthz, /readyz) and the OpenAPI document need no token.
// Handler.Authenticated guards what a program serves beside the API: the
// flotilla command's /metrics needs a known token (any principal) when auth
// is on.
package httpapi
