package gang

import (
	"fmt"
	"strconv"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/queue"
)

// Gang is a set of queued jobs placed all together or not at all. Gangs
// handed out by an Accumulator belong to it and are recycled by Reset; a
// caller may also build one by hand (for Placer.Place), filling every field.
type Gang struct {
	// ID is the members' Job.Gang.ID; "" for a lone job (a gang of one).
	ID string
	// Queue is the members' queue.
	Queue string
	// Cardinality is the number of members the gang needs.
	Cardinality int
	// UniformityLabel is the members' Job.Gang.NodeUniformityLabel.
	UniformityLabel string
	// Topology is the members' Job.Gang.Topology.
	Topology flotilla.GangTopology
	// Members are the members seen so far, in arrival order.
	Members []*queue.Entry
	// Requests is the sum of the members' requests, for fair-share
	// arithmetic (Placer.Place sums the members itself).
	Requests flotilla.Resources
	// ClassPriority is the lowest ClassPriority among the members: the
	// gang's class for queue ordering (a gang of 31 high-priority members
	// and one low-priority member is ordered as a low-priority job).
	ClassPriority int32
}

// Complete reports whether every member is present.
func (g *Gang) Complete() bool { return g.Cardinality > 0 && len(g.Members) == g.Cardinality }

// Accumulator gathers gang members from a stream of queued jobs and hands
// out each gang once its last member arrives: only a complete gang is a
// scheduling candidate (Armada's scheduler, "Gang scheduling"). Use
// one per cycle (one for all queues, or one per queue), and Reset it
// between cycles.
//
// The zero Accumulator is ready to use. It is not safe for concurrent use.
// After a warm-up cycle with as many gangs and members, Add and Reset
// allocate nothing: gangs, member slices and request vectors are recycled.
type Accumulator struct {
	byID  map[string]*Gang
	gangs []*Gang // every gang handed out since Reset, in first-seen order
	free  []*Gang
}

// Add takes one queued job. A job that is not a gang member (empty
// Job.Gang.ID) comes back at once as a complete gang of one with an empty
// ID. A member is added to its gang; the gang is returned with complete
// true when this member was the last one missing, else with complete false
// (the caller moves on to its next job).
//
// A member that cannot join its gang is refused with a *flotilla.FieldError
// naming the gang and what disagrees, and the gang is left as it was: a nil
// entry or job (ErrRequired); a cardinality below 1 (ErrOutOfRange); a
// cardinality, queue, node-uniformity label, topology or request-vector length
// different from the gang's first member (ErrInconsistent); a member beyond
// the cardinality (ErrOutOfRange); a request sum that overflows
// (ErrOutOfRange). Add trusts the stream to offer each job once, as a
// queue.Store does. Cost: one map lookup and O(R), without allocation after
// warm-up.
//
// The returned *Gang stays valid, and keeps growing with later members,
// until Reset.
func (a *Accumulator) Add(e *queue.Entry) (g *Gang, complete bool, err error) {
	if e == nil {
		return nil, false, flotilla.Errorf("entry", "", flotilla.ErrRequired, "nil queue entry")
	}
	j := e.Job
	if j == nil {
		return nil, false, flotilla.Errorf("entry.job", "", flotilla.ErrRequired, "nil job")
	}
	if j.Gang.ID == "" {
		g = a.newGang(j, e)
		return g, true, nil
	}
	if a.byID == nil {
		a.byID = make(map[string]*Gang)
	}
	g, ok := a.byID[j.Gang.ID]
	if !ok {
		if j.Gang.Cardinality < 1 {
			return nil, false, flotilla.Errorf(field(j.Gang.ID, "cardinality"), strconv.Itoa(j.Gang.Cardinality),
				flotilla.ErrOutOfRange, "job %q: a gang has at least 1 member", j.ID)
		}
		g = a.newGang(j, e)
		a.byID[g.ID] = g
		return g, g.Complete(), nil
	}
	if err := g.admit(e); err != nil {
		return nil, false, err
	}
	g.Members = append(g.Members, e)
	g.Requests.Add(j.Requests)
	g.ClassPriority = min(g.ClassPriority, e.ClassPriority)
	return g, g.Complete(), nil
}

// newGang starts a gang (of one, for a lone job) from its first member.
func (a *Accumulator) newGang(j *flotilla.Job, e *queue.Entry) *Gang {
	var g *Gang
	if n := len(a.free); n > 0 {
		g, a.free = a.free[n-1], a.free[:n-1]
	} else {
		g = new(Gang)
	}
	g.ID, g.Queue, g.Cardinality, g.UniformityLabel = j.Gang.ID, j.Queue, j.Gang.Cardinality, j.Gang.NodeUniformityLabel
	g.Topology = j.Gang.Topology
	if g.ID == "" {
		g.Cardinality = 1
	}
	g.Members = append(g.Members[:0], e)
	g.Requests = append(g.Requests[:0], j.Requests...)
	g.ClassPriority = e.ClassPriority
	a.gangs = append(a.gangs, g)
	return g
}

// admit checks that e may join g.
func (g *Gang) admit(e *queue.Entry) error {
	j, first := e.Job, g.Members[0].Job
	switch {
	case j.Gang.Cardinality != g.Cardinality:
		return flotilla.Errorf(field(g.ID, "cardinality"), strconv.Itoa(j.Gang.Cardinality), flotilla.ErrInconsistent,
			"job %q says %d, job %q says %d", j.ID, j.Gang.Cardinality, first.ID, g.Cardinality)
	case j.Queue != g.Queue:
		return flotilla.Errorf(field(g.ID, "queue"), j.Queue, flotilla.ErrInconsistent,
			"job %q is in queue %q, job %q in %q", j.ID, j.Queue, first.ID, g.Queue)
	case j.Gang.NodeUniformityLabel != g.UniformityLabel:
		return flotilla.Errorf(field(g.ID, "nodeUniformityLabel"), j.Gang.NodeUniformityLabel, flotilla.ErrInconsistent,
			"job %q says %q, job %q says %q", j.ID, j.Gang.NodeUniformityLabel, first.ID, g.UniformityLabel)
	case j.Gang.Topology != g.Topology:
		return flotilla.Errorf(field(g.ID, "topology"), topologyString(j.Gang.Topology), flotilla.ErrInconsistent,
			"job %q says %s, job %q says %s", j.ID, topologyString(j.Gang.Topology), first.ID, topologyString(g.Topology))
	case len(j.Requests) != len(g.Requests):
		return flotilla.Errorf(field(g.ID, "requests"), strconv.Itoa(len(j.Requests)), flotilla.ErrInconsistent,
			"job %q has %d resources, job %q has %d", j.ID, len(j.Requests), first.ID, len(g.Requests))
	case len(g.Members) >= g.Cardinality:
		return flotilla.Errorf(field(g.ID, "cardinality"), strconv.Itoa(g.Cardinality), flotilla.ErrOutOfRange,
			"job %q is one member too many: the gang already has its %d", j.ID, g.Cardinality)
	}
	for r, v := range j.Requests {
		if s := g.Requests[r]; (v > 0 && s > maxInt64-v) || (v < 0 && s < minInt64-v) {
			return flotilla.Errorf(field(g.ID, "requests"), strconv.FormatInt(v, 10), flotilla.ErrOutOfRange,
				"job %q: the gang's total of resource %d overflows (values in the resource's unit)", j.ID, r)
		}
	}
	return nil
}

const (
	maxInt64 = 1<<63 - 1
	minInt64 = -1 << 63
)

// Has reports whether a member of gang id has been added since Reset, so
// that the gang is under way (or complete). O(1).
func (a *Accumulator) Has(id string) bool {
	_, ok := a.byID[id]
	return ok
}

// Pending returns the gangs still missing members, in the order their
// first member arrived: what the stream held of gangs that cannot be
// scheduled yet, for reporting. It allocates the returned slice only.
func (a *Accumulator) Pending() []*Gang {
	var out []*Gang
	for _, g := range a.gangs {
		if !g.Complete() {
			out = append(out, g)
		}
	}
	return out
}

// Len is the number of gangs (complete or not, lone jobs included) since
// the last Reset.
func (a *Accumulator) Len() int { return len(a.gangs) }

// Reset forgets every gang, recycling them: every *Gang handed out before
// becomes invalid. It keeps its memory, so a next cycle of the same shape
// allocates nothing.
func (a *Accumulator) Reset() {
	for _, g := range a.gangs {
		clear(g.Members)
		g.Members = g.Members[:0]
		*g = Gang{Members: g.Members, Requests: g.Requests[:0]}
		a.free = append(a.free, g)
	}
	clear(a.gangs)
	a.gangs = a.gangs[:0]
	clear(a.byID)
}

// field is the path of a gang's field in errors: gang "g-1".cardinality.
func field(id, name string) string { return fmt.Sprintf("gang %q.%s", id, name) }

// topologyString renders a gang's topology request for errors.
func topologyString(t flotilla.GangTopology) string {
	if t.IsZero() {
		return "no topology"
	}
	return fmt.Sprintf("{name %q, required %q, preferred %q}", t.Name, t.Required, t.Preferred)
}
