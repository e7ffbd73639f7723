package scheduler

import (
	"math"
	"time"
)

// rateTokens are the cycle's scheduling-rate tokens: the global bucket's
// and each queue's, refilled at the cycle's time from the snapshot's
// buckets (infinite where the config sets no rate). A job placed takes one
// from each; a job displaced within the cycle gives them back.
type rateTokens struct {
	cfg    *Config
	global float64
	queue  []float64
}

// newRateTokens refills the snapshot's buckets at now for the named queues.
func newRateTokens(cfg *Config, limits RateLimitState, now time.Time, queues []queueState) rateTokens {
	t := rateTokens{cfg: cfg, global: math.Inf(1), queue: make([]float64, len(queues))}
	if cfg.MaximumSchedulingRate > 0 {
		t.global = limits.Global.refill(now, cfg.MaximumSchedulingRate, cfg.MaximumSchedulingBurst)
	}
	for qi := range queues {
		t.queue[qi] = math.Inf(1)
		if cfg.MaximumPerQueueSchedulingRate > 0 {
			t.queue[qi] = limits.PerQueue[queues[qi].q.Name].refill(now, cfg.MaximumPerQueueSchedulingRate, cfg.MaximumPerQueueSchedulingBurst)
		}
	}
	return t
}

// take spends n tokens of queue qi's and the global bucket.
func (t *rateTokens) take(qi, n int) {
	t.queue[qi] -= float64(n)
	t.global -= float64(n)
}

// give returns n tokens to queue qi's and the global bucket.
func (t *rateTokens) give(qi, n int) {
	t.queue[qi] += float64(n)
	t.global += float64(n)
}

// globalShort and queueShort report whether the global bucket, or queue
// qi's, has fewer than n tokens left.
func (t *rateTokens) globalShort(n int) bool    { return t.global < float64(n) }
func (t *rateTokens) queueShort(qi, n int) bool { return t.queue[qi] < float64(n) }

// largerThanBurst reports whether a unit of cost jobs can never get enough
// tokens from a bucket: it is skipped rather than blocking its queue.
func (t *rateTokens) largerThanBurst(cost int) bool {
	cfg := t.cfg
	return cost > 1 && ((cfg.MaximumSchedulingRate > 0 && cost > cfg.MaximumSchedulingBurst) ||
		(cfg.MaximumPerQueueSchedulingRate > 0 && cost > cfg.MaximumPerQueueSchedulingBurst))
}

// estimate caps a guess of the jobs a cycle places by the tokens left: the
// global bucket's, and the queues' together.
func (t *rateTokens) estimate(est float64) float64 {
	est = min(est, t.global)
	if t.cfg.MaximumPerQueueSchedulingRate > 0 {
		sum := 0.0
		for _, q := range t.queue {
			sum += max(q, 0)
		}
		est = min(est, sum)
	}
	return est
}

// buckets is the state to carry to the next cycle (Result.RateLimits): the
// buckets the config rates, as they stand at now.
func (t *rateTokens) buckets(now time.Time, queues []queueState) RateLimitState {
	var out RateLimitState
	if t.cfg.MaximumSchedulingRate > 0 {
		out.Global = Bucket{Tokens: t.global, Last: now}
	}
	if t.cfg.MaximumPerQueueSchedulingRate > 0 {
		out.PerQueue = make(map[string]Bucket, len(queues))
		for qi := range queues {
			out.PerQueue[queues[qi].q.Name] = Bucket{Tokens: t.queue[qi], Last: now}
		}
	}
	return out
}
