// Package submit holds docs/submit-file.md's submit file and its submission rules:
// a pure function from a file's bytes to the jobs the service stores, for
// the service (package server) and for callers that check submissions
// without one.
//
//   - Parse decodes a submit file (Request, JobTemplate) strictly, every
//     problem named by its JSON path;
//   - Rules.Jobs applies the submission rules (grace period, default
//     deadlines by CPU or GPU, count expansion of client ids, gangs whole
//     in one request, classes, resources, tolerations) and expands a
//     request into the []backend.JobSpec to store, or rejects it whole
//     with every problem named;
//   - Rules.ParseJobs does both, reporting the file's type errors
//     together with the rules' problems.
//
// Whether the queue exists, whether a client id or gang id was used by an
// earlier request, is the service's to check. Bad input is rejected whole,
// every problem a *flotilla.FieldError naming the field and value, usable
// with errors.Is against the sentinels of package flotilla; nothing here
// panics, reads the clock (the caller passes the submit time) or draws ids
// from anything but the IDSource it is given.
package submit
