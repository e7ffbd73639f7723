// Package server will hold the queueing service of SERVICE.md (issue 9):
// queues, submission, leasing to many clusters, cancellation and event
// logs over the backend interfaces. For now it holds only its first piece,
// the submission rules as a pure function:
//
//   - ParseSubmit decodes a submit file (SubmitRequest, JobTemplate)
//     strictly, every problem named by its JSON path;
//   - SubmitRules.Jobs applies SERVICE.md's submission rules (grace
//     period, default deadlines by CPU or GPU, count expansion of client
//     ids, gangs whole in one request, classes, resources, tolerations)
//     and expands a request into the []backend.JobSpec to store, or
//     rejects it whole with every problem named;
//   - SubmitRules.ParseJobs does both, reporting the file's type errors
//     together with the rules' problems.
//
// Nothing here reads the clock, draws random numbers or stores anything:
// the caller passes the submit time and the job-id source (the service
// will pass ULID-like ids), and checks what needs the store (the queue
// exists, a client id or gang id was not used by an earlier request).
package server
