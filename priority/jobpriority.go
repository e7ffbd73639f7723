package priority

import (
	"math"
	"strconv"
	"time"

	flotilla "github.com/flotilla-sched/flotilla"
)

// Urgency bounds and default (flux-core's job urgency range).
const (
	MinUrgency     = 0
	MaxUrgency     = 31
	DefaultUrgency = 16
)

// MaxJobPriority is the largest integer job priority, 2^32 − 1.
const MaxJobPriority = math.MaxUint32

// Weights are the integer factor weights of the multi-factor priority. Each
// must be ≥ 0.
type Weights struct {
	FairShare int64 `json:"fairshare"`
	Queue     int64 `json:"queue"`
	Bank      int64 `json:"bank"`
	Urgency   int64 `json:"urgency"`
}

// DefaultWeights returns flux-accounting's defaults: fair-share 100000,
// queue 10000, bank 0, urgency 1000.
func DefaultWeights() Weights {
	return Weights{FairShare: 100000, Queue: 10000, Bank: 0, Urgency: 1000}
}

// Validate reports the first negative weight.
func (w Weights) Validate() error {
	for _, f := range []struct {
		name string
		v    int64
	}{{"fairshare", w.FairShare}, {"queue", w.Queue}, {"bank", w.Bank}, {"urgency", w.Urgency}} {
		if f.v < 0 {
			return flotilla.Errorf("weights."+f.name, strconv.FormatInt(f.v, 10), flotilla.ErrNegative, "")
		}
	}
	return nil
}

// Factors are a job's inputs to the multi-factor priority.
type Factors struct {
	// FairShare is the association's fair-share in [0, 1] (0.5 when new).
	FairShare float64
	// Queue is the job's queue priority value.
	Queue int64
	// Bank is the job's bank priority value.
	Bank float64
	// Urgency is the user's urgency, 0–31, DefaultUrgency when not given.
	Urgency int
}

// Term is one factor of a computed priority: its value, the weight in force
// when it was computed and their product. For urgency, Factor is the raw
// urgency and Product is (Factor − 16) × Weight.
type Term struct {
	Factor  float64
	Weight  int64
	Product float64
}

// UrgencyOverride says whether a job's urgency set its priority outright
// instead of through the weighted sum, as flux-core's hold and expedite
// urgencies do.
type UrgencyOverride uint8

const (
	// NotOverridden: the priority is the weighted sum of the terms.
	NotOverridden UrgencyOverride = iota
	// Held: urgency MinUrgency (0) holds the job; its priority is 0.
	Held
	// Expedited: urgency MaxUrgency (31) expedites the job; its priority is
	// MaxJobPriority.
	Expedited
)

// String returns "", "hold" or "expedite" (the names flux-core's tools
// give urgency 0 and 31).
func (o UrgencyOverride) String() string {
	switch o {
	case Held:
		return "hold"
	case Expedited:
		return "expedite"
	}
	return ""
}

// Calculation is a priority together with every term that made it.
type Calculation struct {
	FairShare Term
	Queue     Term
	Bank      Term
	Urgency   Term
	// Override is Held or Expedited when the urgency set Priority outright;
	// the terms are computed all the same, so a breakdown still shows what
	// the job's factors were.
	Override UrgencyOverride
	// Priority is 0 when Held, MaxJobPriority when Expedited, and otherwise
	// the sum of the products, rounded half away from zero and clamped to
	// [0, MaxJobPriority]; NaN gives 0.
	Priority uint32
	// QueuePriority is the queue factor exactly as given: Queue.Factor is
	// the same value as a float64, which cannot hold every int64.
	QueuePriority int64
}

// Calculate evaluates flux-accounting's multi-factor priority. Urgency is
// looked at first: urgency MinUrgency (0) means the job is held and its
// priority is 0, urgency MaxUrgency (31) means it is expedited and its
// priority is MaxJobPriority (2^32 − 1), whatever the other factors. Every
// other urgency goes into the weighted sum
//
//	P = F_fairshare·W_fairshare + F_queue·W_queue + F_bank·W_bank + (F_urgency − 16)·W_urgency
//
// (seeds/flux-accounting-job-priorities.rst). The terms are filled in for
// held and expedited jobs too, and Override says which rule gave the
// priority. Calculate checks nothing: any factor and weight values give a
// result in [0, 2^32 − 1] (only exactly 0 and 31 are special; urgencies
// outside 0–31 are plain values of the formula). The rounding (half away
// from zero) follows flux-accounting's mf_priority plugin, which rounds the
// double sum before clamping.
func Calculate(f Factors, w Weights) Calculation {
	c := Calculation{
		FairShare: Term{Factor: f.FairShare, Weight: w.FairShare, Product: f.FairShare * float64(w.FairShare)},
		Queue:     Term{Factor: float64(f.Queue), Weight: w.Queue, Product: float64(f.Queue) * float64(w.Queue)},
		Bank:      Term{Factor: f.Bank, Weight: w.Bank, Product: f.Bank * float64(w.Bank)},
		Urgency:   Term{Factor: float64(f.Urgency), Weight: w.Urgency, Product: float64(f.Urgency-DefaultUrgency) * float64(w.Urgency)},
	}
	c.QueuePriority = f.Queue
	switch f.Urgency {
	case MinUrgency:
		c.Override, c.Priority = Held, 0
	case MaxUrgency:
		c.Override, c.Priority = Expedited, MaxJobPriority
	default:
		sum := c.FairShare.Product + c.Queue.Product + c.Bank.Product + c.Urgency.Product
		c.Priority = clampPriority(sum)
	}
	return c
}

func clampPriority(sum float64) uint32 {
	switch {
	case math.IsNaN(sum) || sum <= 0:
		return 0
	case sum >= MaxJobPriority:
		return MaxJobPriority
	}
	return uint32(math.Round(sum))
}

// JobPriority maps a multi-factor priority (higher runs first) onto
// flotilla.Job.Priority (lower runs first, Armada's convention):
// MaxJobPriority − p. It is a strict order-reversing bijection of
// [0, 2^32 − 1], so jobs keep the order their multi-factor priorities give.
// The scheduler still orders a queue by evicted-first and priority-class
// priority before Job.Priority, and by submit time and ID after it, so
// setting Job.Priority this way changes only the order among jobs of one
// class — every rule of the order inside a queue (queue.Less) holds.
func JobPriority(p uint32) uint32 { return MaxJobPriority - p }

// JobRef names a job for BankTree.Prioritize.
type JobRef struct {
	// ID is required and keys the stored breakdown.
	ID string
	// User is required.
	User string
	// Bank is the association's bank; empty means the user's default bank
	// (the bank of the user's first association, as in flux-accounting).
	Bank string
	// Queue selects the queue priority; empty or unlisted queues count 0.
	Queue string
}

// Breakdown is a job's priority as computed at one moment: the resolved
// association, every term with the weight then in force, and the result. It
// is a value: later weight or tree changes never alter it.
type Breakdown struct {
	JobID string
	User  string
	Bank  string
	Queue string
	// ComputedAt is the time given to the computation.
	ComputedAt time.Time
	// Calculation holds every term and the resulting priority.
	Calculation Calculation
}
