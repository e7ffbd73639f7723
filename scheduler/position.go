package scheduler

import (
	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/queue"
)

// QueuePosition is a queued job's place in its queue's scheduling order
// (queue.Less), as a cycle reading the same store would meet it.
type QueuePosition struct {
	// Ahead counts the queue's jobs before it: it is the (Ahead+1)-th.
	Ahead int
	// Queued counts the queue's jobs, it included.
	Queued int
	// AheadRequests is what the jobs before it request, summed (saturating
	// at the int64 range), in the units of Job.Requests; nil when none is.
	AheadRequests flotilla.Resources
	// Partial: the reading stopped at its limit before reaching the job,
	// so Ahead and AheadRequests count only the first Ahead jobs (lower
	// bounds).
	Partial bool
}

// PositionOf reads queue name of q up to the job with ID id and returns its
// place; ok is false when the queue does not hold it. It reads at most
// limit entries ahead of the job (limit ≤ 0: no limit), and says Partial
// when it stopped there. It costs O(Ahead) reads (about 0.2 µs each in a
// *queue.Store), for explaining one job (`flotilla explain`, a status
// query), never a cycle's work. The returned vector is the caller's.
func PositionOf(q Queued, name, id string, limit int) (pos QueuePosition, ok bool, err error) {
	if q == nil {
		return QueuePosition{}, false, nil
	}
	if e, held := q.Get(id); !held || e.Job == nil || e.Job.Queue != name {
		return QueuePosition{}, false, nil
	}
	r, err := q.Open(name)
	if err != nil {
		return QueuePosition{}, false, err
	}
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
			if e.Job.ID == id {
				pos.Queued = q.Stats(name).Jobs
				return pos, true, nil
			}
			if limit > 0 && pos.Ahead == limit {
				pos.Queued, pos.Partial = q.Stats(name).Jobs, true
				return pos, true, nil
			}
			if pos.AheadRequests == nil {
				pos.AheadRequests = make(flotilla.Resources, len(e.Job.Requests))
			}
			if len(e.Job.Requests) == len(pos.AheadRequests) {
				pos.AheadRequests.AddSaturating(e.Job.Requests)
			}
			pos.Ahead++
		}
		if n < len(buf) {
			return QueuePosition{}, false, nil
		}
	}
}
