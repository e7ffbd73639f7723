package scenario

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/textform"
)

// gangAcc gathers a gang's members within one round.
type gangAcc struct {
	id            string
	queue, jobSet string
	path          string // the first member template
	card          int    // explicit cardinality, 0 when none given yet
	cardPath      string
	label         string
	topology      flotilla.GangTopology
	members       int
	jobs          []*flotilla.Job
}

// ended records where a job was finished or cancelled.
type ended struct {
	round int
	list  string
	path  string
}

// roundState is what rounds carry from one round to the next.
type roundState struct {
	submitted map[string]string // job id → template path
	round     map[string]int    // job id → round it was submitted in
	gangs     map[string]string // gang id → first template path, all rounds
	ended     map[string]ended
	jobs      int // expanded so far, for MaxJobs
}

func (b *builder) rounds() {
	st := &roundState{submitted: map[string]string{}, round: map[string]int{}, gangs: map[string]string{}, ended: map[string]ended{}}
	queueList := make([]string, 0, len(b.f.Queues))
	for _, q := range b.f.Queues {
		queueList = append(queueList, q.Name)
	}
	for r := range b.f.Rounds {
		rd := &b.f.Rounds[r]
		rp := fmt.Sprintf("rounds[%d]", r)
		br := BuiltRound{Time: b.out.Start.Add(time.Duration(r) * b.out.Settings.RoundDuration)}
		gangs := map[string]*gangAcc{}
		var gangOrder []*gangAcc
		for i := range rd.Submit {
			t := &rd.Submit[i]
			p := fmt.Sprintf("%s.submit[%d]", rp, i)
			n := b.count(p+".count", t.Count, &st.jobs, b.maxJobs, "jobs")
			if t.ID == "" {
				n = 0 // reported by Job.Validate below
			}
			if t.Queue != "" && !b.queueNames[t.Queue] {
				b.add(flotilla.Errorf(p+".queue", t.Queue, flotilla.ErrUnknownName, "no such queue; known: %s", knownList(queueList)))
			}
			class := t.PriorityClass
			if class == "" {
				class = b.out.Settings.DefaultPriorityClass
			} else if !b.classes[class] {
				b.add(flotilla.Errorf(p+".priorityClass", class, flotilla.ErrUnknownName, "no such priority class; known: %s", knownList(b.classNames)))
			}
			if len(t.Requests) == 0 {
				b.add(flotilla.Errorf(p+".requests", "", flotilla.ErrRequired, "a job needs at least one resource request"))
			}
			requests := b.parseResources(p+".requests", t.Requests)
			tolerations := textform.Tolerations(t.Tolerations)
			proto := &flotilla.Job{ID: t.ID, Queue: t.Queue, Requests: requests, NodeSelector: t.NodeSelector, Tolerations: tolerations, AvoidClusters: t.AvoidClusters}
			b.addRenamed(proto.Validate(b.schema), fmt.Sprintf("job %q", t.ID), p)
			var g *gangAcc
			if t.Gang != nil {
				var isNew bool
				g, isNew = b.gangMember(p, t, n, gangs, st)
				if isNew {
					gangOrder = append(gangOrder, g)
				}
			}
			selector := maps.Clone(t.NodeSelector)
			avoid := slices.Clone(t.AvoidClusters)
			dups, firstDup := 0, ""
			for k := range n {
				id := expandedName(t.ID, t.Count, k)
				if prev, dup := st.submitted[id]; dup {
					if dups == 0 {
						firstDup = fmt.Sprintf("job %q is also submitted by %s", id, prev)
					}
					dups++
					continue
				}
				st.submitted[id] = p
				st.round[id] = r
				job := &flotilla.Job{
					ID:            id,
					Queue:         t.Queue,
					JobSet:        t.JobSet,
					PriorityClass: class,
					Priority:      t.Priority,
					// Ties keep submit order: the k-th job of a round is
					// submitted k nanoseconds into it.
					SubmitTime:    br.Time.Add(time.Duration(len(br.Submit))),
					Requests:      requests.Clone(),
					NodeSelector:  selector,
					Tolerations:   tolerations,
					AvoidClusters: avoid,
				}
				if g != nil {
					g.jobs = append(g.jobs, job)
				}
				br.Submit = append(br.Submit, job)
			}
			if dups > 0 {
				b.add(flotilla.Errorf(p+".id", t.ID, flotilla.ErrDuplicate, "%s%s", firstDup, more(dups)))
			}
		}
		for _, g := range gangOrder {
			b.finishGang(g)
		}
		br.Finish = b.ends(rp, r, "finish", rd.Finish, st)
		br.Cancel = b.ends(rp, r, "cancel", rd.Cancel, st)
		b.out.Rounds = append(b.out.Rounds, br)
	}
}

// gangMember checks template t (path p, n jobs) against the other members of
// its gang in this round and returns the gang's accumulator (nil when the
// gang id is missing) and whether t is the gang's first template.
func (b *builder) gangMember(p string, t *JobTemplate, n int, gangs map[string]*gangAcc, st *roundState) (*gangAcc, bool) {
	gs := t.Gang
	gp := p + ".gang"
	if gs.ID == "" {
		b.add(flotilla.Errorf(gp+".id", "", flotilla.ErrRequired, "a gang needs an id"))
		return nil, false
	}
	switch {
	case gs.Cardinality < 0:
		b.add(flotilla.Errorf(gp+".cardinality", fmt.Sprint(gs.Cardinality), flotilla.ErrNegative, ""))
	case gs.Cardinality > b.maxJobs:
		b.add(flotilla.Errorf(gp+".cardinality", fmt.Sprint(gs.Cardinality), flotilla.ErrOutOfRange, "want at most %d", b.maxJobs))
	}
	g, seen := gangs[gs.ID]
	if !seen {
		if prev, used := st.gangs[gs.ID]; used {
			b.add(flotilla.Errorf(gp+".id", gs.ID, flotilla.ErrDuplicate,
				"gang id already used by %s; a gang's members are submitted in one round and its id is never reused", prev))
		} else {
			st.gangs[gs.ID] = p
		}
		g = &gangAcc{id: gs.ID, queue: t.Queue, jobSet: t.JobSet, path: p, label: gs.NodeUniformityLabel, topology: gangTopology(gs)}
		b.checkTopology(gp, gs)
		if gs.Cardinality > 0 {
			g.card, g.cardPath = gs.Cardinality, gp+".cardinality"
		}
		gangs[gs.ID] = g
		g.members = n
		return g, true
	}
	disagree := func(field, value, other string) {
		b.add(flotilla.Errorf(field, value, flotilla.ErrInconsistent, "gang %q: %s has %q", gs.ID, g.path, other))
	}
	if t.Queue != g.queue {
		disagree(p+".queue", t.Queue, g.queue)
	}
	if t.JobSet != g.jobSet {
		disagree(p+".jobSet", t.JobSet, g.jobSet)
	}
	if gs.NodeUniformityLabel != g.label {
		disagree(gp+".nodeUniformityLabel", gs.NodeUniformityLabel, g.label)
	}
	for _, err := range gangTopology(gs).Disagreements(gp+".topology", gs.ID, g.path+".gang.topology", g.topology) {
		b.add(err)
	}
	if gs.Cardinality > 0 {
		if g.card == 0 {
			g.card, g.cardPath = gs.Cardinality, gp+".cardinality"
		} else if gs.Cardinality != g.card {
			b.add(flotilla.Errorf(gp+".cardinality", fmt.Sprint(gs.Cardinality), flotilla.ErrInconsistent,
				"gang %q: %s has %d", gs.ID, g.cardPath, g.card))
		}
	}
	g.members += n
	return g, false
}

// finishGang checks a gang's member count against its cardinality and
// stamps the resolved gang on every member.
func (b *builder) finishGang(g *gangAcc) {
	card := g.card
	if card == 0 {
		card = g.members
	} else if g.members != card {
		b.add(flotilla.Errorf(g.cardPath, fmt.Sprint(card), flotilla.ErrInconsistent,
			"gang %q has %d members in this round; all members are submitted together", g.id, g.members))
	}
	for _, j := range g.jobs {
		j.Gang = flotilla.Gang{ID: g.id, Cardinality: card, NodeUniformityLabel: g.label, Topology: g.topology}
	}
}

// ends checks a finish or cancel list: every id must have been submitted in
// an earlier round (the lists apply at the start of their round) and not
// already finished or cancelled.
func (b *builder) ends(rp string, r int, list string, ids []string, st *roundState) []string {
	for k, id := range ids {
		f := fmt.Sprintf("%s.%s[%d]", rp, list, k)
		if id == "" {
			b.add(flotilla.Errorf(f, "", flotilla.ErrRequired, ""))
			continue
		}
		if _, ok := st.submitted[id]; !ok {
			b.add(flotilla.Errorf(f, id, flotilla.ErrUnknownName, "no job with this id is submitted in an earlier round"))
			continue
		}
		if st.round[id] == r {
			b.add(flotilla.Errorf(f, id, flotilla.ErrInconsistent, "submitted in this same round; %s applies at the start of a round, before its submissions", list))
			continue
		}
		if prev, ok := st.ended[id]; ok {
			if prev.round == r && prev.list == list {
				b.add(flotilla.Errorf(f, id, flotilla.ErrDuplicate, "also %s", prev.path))
			} else {
				b.add(flotilla.Errorf(f, id, flotilla.ErrInconsistent, "the job already ended at %s", prev.path))
			}
			continue
		}
		st.ended[id] = ended{round: r, list: list, path: f}
	}
	if ids == nil {
		return nil
	}
	return append([]string(nil), ids...)
}

// gangTopology is a gang template's topology request.
func gangTopology(gs *GangSpec) flotilla.GangTopology {
	if gs.Topology == nil {
		return flotilla.GangTopology{}
	}
	return flotilla.GangTopology{Name: gs.Topology.Name, Required: gs.Topology.Required, Preferred: gs.Topology.Preferred}
}

// checkTopology judges a gang template's topology (at gp, the template's
// gang) against config.topologies: a level to require or prefer, not with
// a node-uniformity label, naming a configured topology and its levels.
func (b *builder) checkTopology(gp string, gs *GangSpec) {
	if gs.Topology == nil {
		return
	}
	tp := gp + ".topology"
	gt := gangTopology(gs)
	if errs := gt.LevelProblems(tp, gs.NodeUniformityLabel); len(errs) > 0 {
		for _, err := range errs {
			b.add(err)
		}
		return
	}
	if _, _, _, err := flotilla.ResolveTopology(b.out.Settings.Topologies, tp, gt); err != nil {
		b.add(err)
	}
}
