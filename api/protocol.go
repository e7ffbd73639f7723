package api

import (
	"errors"
	"time"

	"github.com/flotilla-sched/flotilla/events"
)

// JobPhase is what an executor says about a job it holds (JobReport.Phase;
// docs/http-api.md's executor protocol).
type JobPhase string

// The phases of an executor's job report.
const (
	// PhasePending: the executor has the lease and has not started the job.
	PhasePending JobPhase = "pending"
	// PhaseRunning: the job runs.
	PhaseRunning JobPhase = "running"
	// PhaseSucceeded: the job ended with exit code 0.
	PhaseSucceeded JobPhase = "succeeded"
	// PhaseFailed: the job ended with a non-zero exit code.
	PhaseFailed JobPhase = "failed"
	// PhaseReturned: the executor gives the lease back (it could not start
	// the job).
	PhaseReturned JobPhase = "returned"
	// PhaseStopped: the executor stopped the job because it was told to
	// kill it.
	PhaseStopped JobPhase = "stopped"
)

// Phases lists every phase a report may give.
var Phases = []JobPhase{PhasePending, PhaseRunning, PhaseSucceeded, PhaseFailed, PhaseReturned, PhaseStopped}

// The failure reasons an executor reports with a failed job
// (JobReport.FailureReason): a queue's retry policy matches them
// (docs/operator-commands.md's onReasons; lease-expired and lease-returned are the
// service's own).
const (
	// FailureOOM: the job's container was killed for using too much
	// memory (Kubernetes' OOMKilled; the fake executor's exit code 137).
	FailureOOM = string(events.ReasonOOM)
	// FailureEvicted: the node evicted the job's pod.
	FailureEvicted = string(events.ReasonEvicted)
	// FailureDeadline: the job ran past its active deadline.
	FailureDeadline = string(events.ReasonDeadline)
)

// ReportedFailureReasons lists the failure reasons a report may give.
var ReportedFailureReasons = []string{FailureOOM, FailureEvicted, FailureDeadline}

// ReportedFailureReason reports whether r is one of ReportedFailureReasons.
func ReportedFailureReason(r string) bool {
	return r == FailureOOM || r == FailureEvicted || r == FailureDeadline
}

// The refusals of a report that an executor acts on. The service refuses a
// report whole, naming each problem's field (ErrorBody.Problems); a
// problem's error text begins with one of these when the job does not
// exist (ErrNotFound), is not the cluster's (ErrNotHeld), or the cluster
// must send its nodes first (ErrUnknownCluster). The service's own
// errors are these (server.ErrNotHeld, server.ErrUnknownCluster) or have
// their text (backend.ErrNotFound; a test in httpapi keeps it equal), so
// an executor tells them apart in process and over HTTP alike, without
// linking the service.
var (
	ErrNotFound       = errors.New("not found")
	ErrNotHeld        = errors.New("names a job the cluster does not hold")
	ErrUnknownCluster = errors.New("names a cluster that has not registered its nodes")
)

// DefaultGPUResource is the resource that counts as a GPU unless the
// service is configured otherwise (submit.DefaultGPUResource): an
// executor reports cpu, memory and it by default.
const DefaultGPUResource = "nvidia.com/gpu"

// DefaultLeaseTimeout is how long a lease lives without a report renewing
// it unless the service is configured otherwise (server.DefaultLeaseTimeout,
// `serve -lease-timeout`): an executor gives a report until shortly before
// that.
const DefaultLeaseTimeout = 30 * time.Second
