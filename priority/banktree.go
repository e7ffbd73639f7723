package priority

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"time"

	flotilla "github.com/flotilla-sched/flotilla"
)

// RootBank is the name of the bank at the top of every BankTree.
const RootBank = "root"

// DefaultUsageHalfLife is flux-accounting's default PriorityDecayHalfLife:
// one week.
const DefaultUsageHalfLife = 7 * 24 * time.Hour

// MaxUsage bounds an association's historical usage, so that sums over any
// realistic tree stay finite.
const MaxUsage = 1e300

// NewAssociationFairShare is the fair-share of an association that no
// Recompute has ranked yet (flux-accounting's initial value).
const NewAssociationFairShare = 0.5

type bank struct {
	name     string
	parent   string
	shares   int64
	priority float64
	banks    []string // child banks, in insertion order
	users    []assocKey
}

type assocKey struct{ user, bank string }

type association struct {
	shares    int64
	usage     float64
	fairShare float64
	rank      int
}

// AssociationInfo describes one association (a user under one bank).
type AssociationInfo struct {
	User   string
	Bank   string
	Shares int64
	// Usage is the half-life-decayed historical usage as of the tree's
	// clock, in whatever units the caller accrues (e.g. resource-factor
	// units × seconds).
	Usage float64
	// FairShare is rank / associations from the last Recompute, or 0.5 for
	// an association added since.
	FairShare float64
	// Rank is 1 (most usage for its shares) … N (least); 0 before the first
	// Recompute that saw the association. Tied associations share the
	// higher rank.
	Rank int
}

// BankInfo describes one bank.
type BankInfo struct {
	Name     string
	Parent   string // empty for the root
	Shares   int64
	Priority float64
	// Usage is the sum of the usage of every association below the bank.
	Usage float64
}

// BankTree is flux-accounting's accounting hierarchy with the multi-factor
// job priority on top: a root bank, banks below it (nested to any depth),
// associations (user, bank) as leaves, per-bank and per-queue priority
// values, factor weights, a usage clock with half-life decay, and the stored
// breakdown of every job prioritized and not forgotten.
//
// Mutating methods validate first and change nothing on error. Costs:
// Prioritize O(1); AddUsage and Decay O(associations); Recompute
// O(nodes · log nodes). Not safe for concurrent use.
type BankTree struct {
	halfLife    time.Duration
	now         time.Time
	weights     Weights
	banks       map[string]*bank
	assocs      map[assocKey]*association
	defaultBank map[string]string
	queues      map[string]int64
	jobs        map[string]Breakdown
	jobOrder    []string
}

// NewBankTree returns a tree holding only the root bank, with default
// weights, whose usage clock reads now. halfLife (> 0) is how long it takes
// historical usage to lose half its weight.
func NewBankTree(halfLife time.Duration, now time.Time) (*BankTree, error) {
	if halfLife <= 0 {
		return nil, flotilla.Errorf("usageHalfLife", halfLife.String(), flotilla.ErrOutOfRange, "must be > 0")
	}
	return &BankTree{
		halfLife:    halfLife,
		now:         now,
		weights:     DefaultWeights(),
		banks:       map[string]*bank{RootBank: {name: RootBank, shares: 1}},
		assocs:      map[assocKey]*association{},
		defaultBank: map[string]string{},
		queues:      map[string]int64{},
		jobs:        map[string]Breakdown{},
	}, nil
}

// Now returns the tree's usage clock.
func (t *BankTree) Now() time.Time { return t.now }

// HalfLife returns the usage half-life.
func (t *BankTree) HalfLife() time.Duration { return t.halfLife }

// Weights returns the factor weights in force.
func (t *BankTree) Weights() Weights { return t.weights }

// SetWeights replaces the factor weights. Breakdowns already stored keep the
// weights they were computed with; new ones (and Reprioritize) use these.
func (t *BankTree) SetWeights(w Weights) error {
	if err := w.Validate(); err != nil {
		return err
	}
	t.weights = w
	return nil
}

// AddBank adds a bank under parent (empty means the root). shares must be
// ≥ 0; priority is the bank factor of jobs submitted under it and must be
// finite.
func (t *BankTree) AddBank(name, parent string, shares int64, priority float64) error {
	if parent == "" {
		parent = RootBank
	}
	if name == "" {
		return flotilla.Errorf("bank.name", name, flotilla.ErrRequired, "")
	}
	if _, dup := t.banks[name]; dup {
		return flotilla.Errorf("bank.name", name, flotilla.ErrDuplicate, "")
	}
	p, ok := t.banks[parent]
	if !ok {
		return flotilla.Errorf("bank.parent", parent, flotilla.ErrUnknownName, "no such bank")
	}
	if err := checkShares("bank.shares", shares); err != nil {
		return err
	}
	if err := checkBankPriority("bank.priority", priority); err != nil {
		return err
	}
	t.banks[name] = &bank{name: name, parent: parent, shares: shares, priority: priority}
	p.banks = append(p.banks, name)
	return nil
}

// AddAssociation puts user under bank with the given shares (≥ 0), no usage
// and fair-share 0.5 until the next Recompute. A user's first association
// names its default bank. The bank may be the root.
func (t *BankTree) AddAssociation(user, bankName string, shares int64) error {
	if user == "" {
		return flotilla.Errorf("association.user", user, flotilla.ErrRequired, "")
	}
	b, ok := t.banks[bankName]
	if !ok {
		return flotilla.Errorf("association.bank", bankName, flotilla.ErrUnknownName, "no such bank")
	}
	k := assocKey{user, bankName}
	if _, dup := t.assocs[k]; dup {
		return flotilla.Errorf("association", user+"@"+bankName, flotilla.ErrDuplicate, "")
	}
	if err := checkShares("association.shares", shares); err != nil {
		return err
	}
	t.assocs[k] = &association{shares: shares, fairShare: NewAssociationFairShare}
	b.users = append(b.users, k)
	if _, has := t.defaultBank[user]; !has {
		t.defaultBank[user] = bankName
	}
	return nil
}

// SetBankPriority sets a bank's priority value (finite).
func (t *BankTree) SetBankPriority(name string, priority float64) error {
	b, ok := t.banks[name]
	if !ok {
		return flotilla.Errorf("bank", name, flotilla.ErrUnknownName, "no such bank")
	}
	if err := checkBankPriority("bank.priority", priority); err != nil {
		return err
	}
	b.priority = priority
	return nil
}

// SetBankShares sets a bank's shares (≥ 0). Fair-shares change at the next
// Recompute.
func (t *BankTree) SetBankShares(name string, shares int64) error {
	b, ok := t.banks[name]
	if !ok {
		return flotilla.Errorf("bank", name, flotilla.ErrUnknownName, "no such bank")
	}
	if err := checkShares("bank.shares", shares); err != nil {
		return err
	}
	b.shares = shares
	return nil
}

// SetAssociationShares sets an association's shares (≥ 0). Fair-shares
// change at the next Recompute.
func (t *BankTree) SetAssociationShares(user, bankName string, shares int64) error {
	a, err := t.association(user, bankName)
	if err != nil {
		return err
	}
	if err := checkShares("association.shares", shares); err != nil {
		return err
	}
	a.shares = shares
	return nil
}

// SetQueuePriority sets the priority value of a queue; queues never set
// count 0.
func (t *BankTree) SetQueuePriority(queue string, priority int64) error {
	if queue == "" {
		return flotilla.Errorf("queue.name", queue, flotilla.ErrRequired, "")
	}
	t.queues[queue] = priority
	return nil
}

// QueuePriority returns a queue's priority value (0 when never set).
func (t *BankTree) QueuePriority(queue string) int64 { return t.queues[queue] }

// Decay advances the usage clock to now, multiplying every association's
// usage by 0.5^((now − clock)/halfLife). now must not be before the clock.
// flux-accounting decays usage in weekly bins; we decay continuously, which
// agrees with it at whole half-lives.
func (t *BankTree) Decay(now time.Time) error {
	if err := t.checkNow(now); err != nil {
		return err
	}
	t.decayTo(now)
	return nil
}

// AddUsage decays all usage to now and then adds amount (finite, ≥ 0) to the
// association's historical usage, which may not exceed MaxUsage.
func (t *BankTree) AddUsage(user, bankName string, amount float64, now time.Time) error {
	a, err := t.association(user, bankName)
	if err != nil {
		return err
	}
	if math.IsNaN(amount) || math.IsInf(amount, 0) {
		return flotilla.Errorf("usage", formatFloat(amount), flotilla.ErrMalformed, "must be finite")
	}
	if amount < 0 {
		return flotilla.Errorf("usage", formatFloat(amount), flotilla.ErrNegative, "")
	}
	if err := t.checkNow(now); err != nil {
		return err
	}
	if a.usage*t.decayFactor(now)+amount > MaxUsage {
		return flotilla.Errorf("usage", formatFloat(amount), flotilla.ErrOutOfRange, "historical usage would exceed %g", MaxUsage)
	}
	t.decayTo(now)
	a.usage += amount
	return nil
}

func (t *BankTree) checkNow(now time.Time) error {
	if now.Before(t.now) {
		return flotilla.Errorf("now", now.Format(time.RFC3339Nano), flotilla.ErrOutOfRange,
			"before the tree's clock %s", t.now.Format(time.RFC3339Nano))
	}
	return nil
}

func (t *BankTree) decayFactor(now time.Time) float64 {
	if dt := now.Sub(t.now); dt > 0 {
		return math.Exp2(-float64(dt) / float64(t.halfLife))
	}
	return 1
}

func (t *BankTree) decayTo(now time.Time) {
	if f := t.decayFactor(now); f != 1 {
		for _, a := range t.assocs {
			a.usage *= f
		}
	}
	t.now = now
}

// Recompute decays usage to now and ranks every association with
// flux-accounting's weighted tree walk (see weightedtree.go): afterwards each
// association's fair-share is rank / number of associations.
func (t *BankTree) Recompute(now time.Time) error {
	if err := t.checkNow(now); err != nil {
		return err
	}
	t.decayTo(now)
	t.rank()
	return nil
}

// Association returns one association's state.
func (t *BankTree) Association(user, bankName string) (AssociationInfo, bool) {
	a, ok := t.assocs[assocKey{user, bankName}]
	if !ok {
		return AssociationInfo{}, false
	}
	return t.info(assocKey{user, bankName}, a), true
}

// Associations returns every association, highest fair-share first, then by
// bank and user.
func (t *BankTree) Associations() []AssociationInfo {
	out := make([]AssociationInfo, 0, len(t.assocs))
	for k, a := range t.assocs {
		out = append(out, t.info(k, a))
	}
	slices.SortFunc(out, func(x, y AssociationInfo) int {
		if c := cmp.Compare(y.FairShare, x.FairShare); c != 0 {
			return c
		}
		if c := cmp.Compare(x.Bank, y.Bank); c != 0 {
			return c
		}
		return cmp.Compare(x.User, y.User)
	})
	return out
}

func (t *BankTree) info(k assocKey, a *association) AssociationInfo {
	return AssociationInfo{User: k.user, Bank: k.bank, Shares: a.shares, Usage: a.usage, FairShare: a.fairShare, Rank: a.rank}
}

// Banks returns every bank but the root, depth first in insertion order.
func (t *BankTree) Banks() []BankInfo {
	var out []BankInfo
	var walk func(name string) float64
	walk = func(name string) float64 {
		b := t.banks[name]
		u := 0.0
		for _, k := range b.users {
			u += t.assocs[k].usage
		}
		at := len(out)
		if name != RootBank {
			out = append(out, BankInfo{Name: b.name, Parent: b.parent, Shares: b.shares, Priority: b.priority})
		}
		for _, c := range b.banks {
			u += walk(c)
		}
		if name != RootBank {
			out[at].Usage = u
		}
		return u
	}
	walk(RootBank)
	return out
}

func (t *BankTree) association(user, bankName string) (*association, error) {
	a, ok := t.assocs[assocKey{user, bankName}]
	if !ok {
		return nil, flotilla.Errorf("association", user+"@"+bankName, flotilla.ErrUnknownName, "no such association")
	}
	return a, nil
}

// Prioritize computes a job's priority from the association's fair-share,
// the bank's and queue's priority values, the urgency (0–31; pass
// DefaultUrgency when the user gave none) and the weights in force, stores
// the breakdown under job.ID (replacing any earlier one) and returns it.
// The user must have an association with job.Bank (or a default bank when
// job.Bank is empty). now is recorded in the breakdown as the moment of
// computation; it does not move the usage clock. Prioritize costs O(1) and
// does not allocate beyond the stored entry.
func (t *BankTree) Prioritize(job JobRef, urgency int, now time.Time) (Breakdown, error) {
	b, err := t.compute(job, urgency, now)
	if err != nil {
		return Breakdown{}, err
	}
	if _, seen := t.jobs[job.ID]; !seen {
		t.jobOrder = append(t.jobOrder, job.ID)
	}
	t.jobs[job.ID] = b
	return b, nil
}

func (t *BankTree) compute(job JobRef, urgency int, now time.Time) (Breakdown, error) {
	if job.ID == "" {
		return Breakdown{}, flotilla.Errorf("job.id", job.ID, flotilla.ErrRequired, "")
	}
	if job.User == "" {
		return Breakdown{}, flotilla.Errorf("job.user", job.User, flotilla.ErrRequired, "")
	}
	if urgency < MinUrgency || urgency > MaxUrgency {
		return Breakdown{}, flotilla.Errorf("job.urgency", strconv.Itoa(urgency), flotilla.ErrOutOfRange, "must be %d–%d", MinUrgency, MaxUrgency)
	}
	bankName := job.Bank
	if bankName == "" {
		def, ok := t.defaultBank[job.User]
		if !ok {
			return Breakdown{}, flotilla.Errorf("job.user", job.User, flotilla.ErrUnknownName, "user has no association")
		}
		bankName = def
	}
	a, ok := t.assocs[assocKey{job.User, bankName}]
	if !ok {
		return Breakdown{}, flotilla.Errorf("job.bank", bankName, flotilla.ErrUnknownName, "user %q has no association with this bank", job.User)
	}
	f := Factors{FairShare: a.fairShare, Queue: t.queues[job.Queue], Bank: t.banks[bankName].priority, Urgency: urgency}
	return Breakdown{
		JobID: job.ID, User: job.User, Bank: bankName, Queue: job.Queue, ComputedAt: now,
		Calculation: Calculate(f, t.weights),
	}, nil
}

// Reprioritize recomputes every stored breakdown with the tree as it is now
// (flux-accounting's priority update): the new breakdowns replace the old
// ones and record now. Fair-shares are not recomputed; call Recompute first
// for that. Stored jobs whose association is gone cannot occur (associations
// are never removed).
func (t *BankTree) Reprioritize(now time.Time) error {
	next := make(map[string]Breakdown, len(t.jobs))
	for _, id := range t.jobOrder {
		old := t.jobs[id]
		b, err := t.compute(JobRef{ID: id, User: old.User, Bank: old.Bank, Queue: old.Queue}, int(old.Calculation.Urgency.Factor), now)
		if err != nil {
			return err
		}
		next[id] = b
	}
	t.jobs = next
	return nil
}

// Breakdown returns the stored breakdown of a job.
func (t *BankTree) Breakdown(jobID string) (Breakdown, bool) {
	b, ok := t.jobs[jobID]
	return b, ok
}

// Breakdowns returns every stored breakdown in the order the jobs were first
// prioritized.
func (t *BankTree) Breakdowns() []Breakdown {
	out := make([]Breakdown, 0, len(t.jobOrder))
	for _, id := range t.jobOrder {
		out = append(out, t.jobs[id])
	}
	return out
}

// Forget drops a job's stored breakdown (when the job ends) and reports
// whether there was one.
func (t *BankTree) Forget(jobID string) bool {
	if _, ok := t.jobs[jobID]; !ok {
		return false
	}
	delete(t.jobs, jobID)
	t.jobOrder = slices.DeleteFunc(t.jobOrder, func(id string) bool { return id == jobID })
	return true
}

func checkShares(field string, s int64) error {
	if s < 0 {
		return flotilla.Errorf(field, strconv.FormatInt(s, 10), flotilla.ErrNegative, "")
	}
	return nil
}

func checkBankPriority(field string, p float64) error {
	if math.IsNaN(p) || math.IsInf(p, 0) {
		return flotilla.Errorf(field, formatFloat(p), flotilla.ErrMalformed, "must be finite")
	}
	return nil
}
