package submit

import (
	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/internal/strictjson"
	"github.com/flotilla-sched/flotilla/textform"
)

// The types in this file mirror docs/submit-file.md's submit file field for field:
// their JSON names are a public interface. Durations are Go duration
// strings ("30s", "1h"); an absent one (or JSON null, or "") means the
// rule's default.

// Request is one submit file: jobs for one queue and job set.
type Request struct {
	// Queue and JobSet are required; the service checks that the queue
	// exists.
	Queue  string `json:"queue"`
	JobSet string `json:"jobSet"`
	// Jobs are job templates; at least one is required.
	Jobs []JobTemplate `json:"jobs"`
	// Principal is who submits: set by the caller from its
	// authentication (never read from a submit file). The jobs are
	// charged to it (flux associations, Config.Flux); empty means no
	// principal.
	Principal string `json:"-"`
}

// JobTemplate describes one job, or Count identical jobs: a docs/scenarios.md job
// template without id and queue, plus the service's fields.
type JobTemplate struct {
	// Count, when present, expands the template into Count jobs (0 = none)
	// whose client ids are <ClientID>-0 … <ClientID>-(Count-1); absent
	// means one job with client id ClientID as written.
	Count *int `json:"count,omitempty"`
	// PriorityClass names a configured class; empty means the service's
	// default class.
	PriorityClass string `json:"priorityClass,omitempty"`
	// Priority orders jobs within a queue and class: LOWER runs first.
	Priority uint32 `json:"priority,omitempty"`
	// Requests maps resource name to Kubernetes quantity; required and
	// non-empty, every name in the service's resource schema.
	Requests     flotilla.Quantities `json:"requests"`
	NodeSelector map[string]string   `json:"nodeSelector,omitempty"`
	Tolerations  []Toleration        `json:"tolerations,omitempty"`
	Gang         *GangSpec           `json:"gang,omitempty"`
	// TerminationGracePeriod: absent or "0s" means 1s; otherwise at least
	// 1s and at most Rules.MaxTerminationGracePeriod.
	TerminationGracePeriod string `json:"terminationGracePeriod,omitempty"`
	// ActiveDeadline bounds the job's run time; absent means the default
	// (Rules.DefaultActiveDeadline, or DefaultGPUActiveDeadline when
	// the job requests a GPU). When given it must be positive.
	ActiveDeadline string `json:"activeDeadline,omitempty"`
	// ClientID makes the submission idempotent (unique per queue); empty
	// means none.
	ClientID string `json:"clientId,omitempty"`
	// Runtime (≥ 0) and ExitCode (0 … 255) tell the fake executor how the
	// job "runs".
	Runtime  string `json:"runtime,omitempty"`
	ExitCode int    `json:"exitCode,omitempty"`
	// Pools names the pools whose clusters may run the jobs (docs/submit-file.md:
	// `pools: ["a100", "h100"]`); absent accepts every pool. Each a pool
	// name (CheckPool), none twice, at least one when present.
	Pools []string `json:"pools,omitempty"`
}

// Toleration lets a job onto tainted nodes, with Kubernetes rules: Operator
// is "Equal" (default) or "Exists"; an empty Key requires Exists; Exists
// requires an empty Value; an empty Effect matches every effect.
type Toleration = textform.Toleration

// GangSpec makes a template's jobs members of a gang. All members come in
// one request, agreeing on Cardinality (≥ 1, the number of members in the
// request), NodeUniformityLabel and Topology; they may differ in class and
// priority.
type GangSpec struct {
	ID                  string `json:"id"`
	Cardinality         int    `json:"cardinality"`
	NodeUniformityLabel string `json:"nodeUniformityLabel,omitempty"`
	// Topology places the gang in one domain of a level of a topology the
	// service is configured with (scheduler.Config.Topologies); every
	// member agrees on it; not with NodeUniformityLabel.
	Topology *GangTopologySpec `json:"topology,omitempty"`
}

// GangTopologySpec is a gang's topology request (flotilla.GangTopology):
// Name (empty: "default", else the first configured) and the level label
// keys it requires or prefers, at least one.
type GangTopologySpec struct {
	Name      string `json:"name,omitempty"`
	Required  string `json:"required,omitempty"`
	Preferred string `json:"preferred,omitempty"`
}

// topology is the spec's flotilla.GangTopology (the zero value for nil).
func (g *GangTopologySpec) topology() flotilla.GangTopology {
	if g == nil {
		return flotilla.GangTopology{}
	}
	return flotilla.GangTopology{Name: g.Name, Required: g.Required, Preferred: g.Preferred}
}

// Parse decodes a submit file strictly: unknown keys (with a
// did-you-mean), repeated keys, values of the wrong JSON type or out of
// range are all reported at once, each a *flotilla.FieldError at the file's
// JSON path (jobs[2].count). On any problem it returns nil and the
// problems. It checks the form only; the submission rules are
// Rules.Jobs's, and Rules.ParseJobs does both, reporting
// every problem of the file together.
func Parse(data []byte) (*Request, error) {
	req := new(Request)
	if err := strictjson.Decode(data, req); err != nil {
		return nil, err
	}
	return req, nil
}
