package scheduler

import (
	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/queue"
)

// QueuePosition is a queued job's place in its queue's scheduling order,
// as a cycle reading the same store would offer it: jobs in queue.Less
// order, except that a gang is offered whole when its last member is read
// (a lone job read before that is offered before the gang, even when some
// of the gang's members sort ahead of it). Running jobs a cycle evicts to
// fair share go first in their queue and are not counted.
type QueuePosition struct {
	// Ahead counts the queue's jobs offered before it (for a gang member,
	// before its gang): it is the (Ahead+1)-th.
	Ahead int
	// Queued counts the queue's jobs, it included.
	Queued int
	// AheadRequests is what the jobs before it request, summed (saturating
	// at the int64 range), in the units of Job.Requests; nil when none is.
	AheadRequests flotilla.Resources
	// Partial: the reading stopped at its limit before reaching the job
	// (for a gang member, its gang's last member), so Ahead and
	// AheadRequests are lower bounds.
	Partial bool
	// GangIncomplete: the job is a member of a gang the queue does not
	// hold whole, which no cycle offers until the rest is queued; Ahead
	// and AheadRequests count every job the queue offers now.
	GangIncomplete bool
	// Read counts the entries read besides the job's own (at most the
	// limit): what the answer cost.
	Read int
}

// PositionOf reads queue name of q up to the job with ID id (for a gang
// member, up to the member that completes its gang) and returns its place;
// ok is false when the queue does not hold it. It reads at most limit
// entries besides the job's own (limit ≤ 0: no limit), and says Partial
// when it stopped there.
// It costs O(entries read) (about 0.2 µs each in a *queue.Store), plus a
// count per gang met, for explaining one job (`flotilla explain`, a status
// query), never a cycle's work. The returned vector is the caller's.
func PositionOf(q Queued, name, id string, limit int) (pos QueuePosition, ok bool, err error) {
	if q == nil {
		return QueuePosition{}, false, nil
	}
	target, held := q.Get(id)
	if !held || target.Job == nil || target.Job.Queue != name {
		return QueuePosition{}, false, nil
	}
	r, err := q.Open(name)
	if err != nil {
		return QueuePosition{}, false, err
	}
	// Gangs read in part: members seen and what they request, until the
	// last member offers the gang.
	type pending struct {
		seen int
		req  flotilla.Resources
	}
	gangs := map[string]*pending{}
	ahead := func(n int, req flotilla.Resources) {
		if pos.AheadRequests == nil {
			pos.AheadRequests = make(flotilla.Resources, len(req))
		}
		if len(req) == len(pos.AheadRequests) {
			pos.AheadRequests.AddSaturating(req)
		}
		pos.Ahead += n
	}
	tj := target.Job
	found := false
	var buf [64]*queue.Entry
	for {
		n, err := r.Read(buf[:])
		if err != nil {
			return QueuePosition{}, false, err
		}
		for _, e := range buf[:n] {
			if e == nil || e.Job == nil {
				continue
			}
			j := e.Job
			if j.ID != id {
				if limit > 0 && pos.Read == limit {
					pos.Queued, pos.Partial = q.Stats(name).Jobs, true
					return pos, true, nil
				}
				pos.Read++
			}
			if !j.IsGang() {
				if j.ID == id {
					pos.Queued = q.Stats(name).Jobs
					return pos, true, nil
				}
				ahead(1, j.Requests)
				continue
			}
			g := gangs[j.Gang.ID]
			if g == nil {
				g = &pending{req: make(flotilla.Resources, len(j.Requests))}
				gangs[j.Gang.ID] = g
			}
			g.seen++
			if len(j.Requests) == len(g.req) {
				g.req.AddSaturating(j.Requests)
			}
			found = found || j.ID == id
			if g.seen < j.Gang.Cardinality {
				continue
			}
			delete(gangs, j.Gang.ID)
			if tj.IsGang() && j.Gang.ID == tj.Gang.ID && found {
				pos.Queued = q.Stats(name).Jobs
				return pos, true, nil
			}
			ahead(g.seen, g.req)
		}
		if n < len(buf) {
			break
		}
	}
	if !found {
		return QueuePosition{}, false, nil
	}
	pos.Queued, pos.GangIncomplete = q.Stats(name).Jobs, true
	return pos, true, nil
}
