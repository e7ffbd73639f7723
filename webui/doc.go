// Package webui is the web UI of `flotilla serve` (the README's "Web
// UI"): a page of plain HTML, CSS and a little JavaScript, embedded in the
// binary, that reads the service's JSON API (the paged reads of
// httpapi's /v1/overview, /v1/cycles, /v1/queues/{queue}/jobsets,
// /v1/queues/{queue}/jobsets/{jobSet}/jobs and /v1/clusters/{cluster}/nodes,
// job status with its explanation, and a job set's event stream). It
// needs no network beyond the service: no font, script or style is
// fetched from elsewhere.
//
// Handler serves the page at /ui/ and every deep link under it
// (/ui/queues/NAME, /ui/jobsets/QUEUE/SET, /ui/jobs/ID, /ui/clusters,
// /ui/cycles) with the same document; the script reads the path. With
// `serve -auth` the page asks for a token, keeps it in the tab's
// sessionStorage only, and sends it as a bearer token; a call the token
// may not make shows the service's refusal instead of data.
package webui
