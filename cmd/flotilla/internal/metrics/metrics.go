package metrics

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/server"
)

// Metrics are serve's Prometheus metrics, named after Kueue's
// (kueue_pending_workloads, kueue_admission_attempt_duration_seconds, …)
// with the flotilla_ prefix. Queue gauges are read from the service at
// each scrape; counters and the cycle histogram are fed by the cycle loop
// and the HTTP handler.
type Metrics struct {
	reg         *prometheus.Registry
	cycleTime   prometheus.Histogram
	cycleErrors prometheus.Counter
	leases      prometheus.Counter
	preemptions prometheus.Counter
	expiries    prometheus.Counter
	deadlines   prometheus.Counter
	rejections  prometheus.Counter
	requests    *prometheus.CounterVec
	// overCommitted is the number of nodes the last cycle found holding
	// more than their total (scheduler.Result.OverCommitted).
	overCommitted prometheus.Gauge
	// wait is each queue's jobs' time from submission to the lease a
	// cycle decided (flotilla_queue_wait_seconds).
	wait *prometheus.HistogramVec
	// fairness is each pool's fairness error in its last cycle.
	fairness *prometheus.GaugeVec
}

// New returns serve's metrics; srv returns the service whose
// queues are reported (nil while this process does not lead) and leading
// whether this process leads.
func New(srv func() *server.Server, leading func() bool) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		cycleTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "flotilla_cycle_duration_seconds", Help: "Duration of scheduling cycles.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}),
		cycleErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "flotilla_cycle_errors_total", Help: "Cycles that failed."}),
		leases:      prometheus.NewCounter(prometheus.CounterOpts{Name: "flotilla_leases_total", Help: "Jobs leased to clusters."}),
		preemptions: prometheus.NewCounter(prometheus.CounterOpts{Name: "flotilla_preemptions_total", Help: "Jobs preempted."}),
		expiries:    prometheus.NewCounter(prometheus.CounterOpts{Name: "flotilla_lease_expiries_total", Help: "Leases that expired unrenewed."}),
		deadlines: prometheus.NewCounter(prometheus.CounterOpts{Name: "flotilla_deadline_exceeded_total",
			Help: "Jobs failed on their active deadline."}),
		rejections: prometheus.NewCounter(prometheus.CounterOpts{Name: "flotilla_submit_rejections_total",
			Help: "Submissions refused as bad input (HTTP 400/413)."}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flotilla_http_requests_total",
			Help: "HTTP requests by route and status code."}, []string{"route", "code"}),
		overCommitted: prometheus.NewGauge(prometheus.GaugeOpts{Name: "flotilla_overcommitted_nodes",
			Help: "Nodes whose running jobs requested more than the node's total in the last cycle (full: they take nothing new until preemption brings them back under it)."}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "flotilla_queue_wait_seconds",
			Help:    "Time from a job's submission to a lease a cycle decided for it, per queue.",
			Buckets: prometheus.ExponentialBuckets(0.5, 2, 18)}, []string{"queue"}),
		fairness: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "flotilla_fairness_error",
			Help: "Half the sum over the pool's active queues (fair share above 0) of |share - adjusted fair share| in its last cycle: 0 when every queue holds its adjusted fair share, at most 1."},
			[]string{"pool"}),
	}
	m.reg.MustRegister(m.cycleTime, m.cycleErrors, m.leases, m.preemptions, m.expiries, m.deadlines, m.rejections, m.requests,
		m.overCommitted, m.wait, m.fairness,
		newQueueCollector(sourceOf(srv)), prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "flotilla_leader",
			Help: "1 while this process leads (runs cycles), 0 while it follows (forwards requests to the leader)."},
			func() float64 {
				if leading() {
					return 1
				}
				return 0
			}), prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in Prometheus's text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Cycle records one cycle (ha.Config.OnCycle).
func (m *Metrics) Cycle(rep *server.CycleReport, d time.Duration, err error) {
	m.cycleTime.Observe(d.Seconds())
	if err != nil {
		m.cycleErrors.Inc()
		return
	}
	m.leases.Add(float64(rep.Leased))
	m.preemptions.Add(float64(rep.Preempted))
	m.expiries.Add(float64(rep.Expired))
	m.deadlines.Add(float64(rep.DeadlineExceeded))
	n := 0
	for _, p := range rep.Pools {
		n += len(p.Result.OverCommitted)
	}
	if len(rep.Pools) == 0 && rep.Result != nil {
		n = len(rep.Result.OverCommitted)
	}
	m.overCommitted.Set(float64(n))
	for _, p := range rep.Pools {
		// The leases written: a job whose lease was skipped may be
		// scheduled again, in a later pool or cycle, and observed then.
		var skipped map[string]bool
		if len(p.Skipped) > 0 {
			skipped = make(map[string]bool, len(p.Skipped))
			for _, id := range p.Skipped {
				skipped[id] = true
			}
		}
		for _, a := range p.Result.Scheduled {
			if skipped[a.Job.ID] {
				continue
			}
			m.wait.WithLabelValues(a.Job.Queue).Observe(max(rep.Time.Sub(a.Job.SubmitTime).Seconds(), 0))
		}
		m.fairness.WithLabelValues(p.Pool).Set(FairnessError(p.Result.Queues))
	}
}

// FairnessError is half the sum over the active queues (fair share above
// 0) of |share − adjusted fair share|: 0 when each holds its adjusted fair
// share, 1 at most (shares and adjusted fair shares each sum to 1 at
// most).
func FairnessError(qs []scheduler.QueueReport) float64 {
	sum := 0.0
	for _, q := range qs {
		if q.FairShare > 0 {
			sum += math.Abs(q.Share - q.AdjustedFairShare)
		}
	}
	return sum / 2
}

// Observe records one HTTP request (httpapi.Options.Observe).
func (m *Metrics) Observe(route string, status int, _ time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	if route == "POST /v1/jobs" && (status == http.StatusBadRequest || status == http.StatusRequestEntityTooLarge) {
		m.rejections.Inc()
	}
}

// source is what the queue collector reads of the service: its queues
// and the queue tree's groups with their standing in the last cycle, and
// the resource-seconds preemptions took per queue.
type source interface {
	ListQueues(ctx context.Context) ([]server.QueueInfo, error)
	ListGroups(ctx context.Context) ([]server.GroupInfo, error)
	PreemptionLoss() map[string][]float64
	Schema() *flotilla.ResourceSchema
}

// sourceOf reads the service srv returns; nil (no source) while it
// returns nil.
func sourceOf(srv func() *server.Server) func() source {
	return func() source {
		if s := srv(); s != nil {
			return s
		}
		return nil
	}
}

// queueCollector reports each queue's jobs, shares and usage, and each
// group's shares and usage, at scrape time.
type queueCollector struct {
	src                                                    func() source
	pending, leased, running, share, fair, adjusted, usage *prometheus.Desc
	gShare, gFair, gAdjusted, gUsage                       *prometheus.Desc
	lost                                                   *prometheus.Desc
}

func newQueueCollector(src func() source) *queueCollector {
	q := []string{"queue"}
	qp, gp := []string{"queue", "pool"}, []string{"group", "pool"}
	return &queueCollector{
		src:      src,
		pending:  prometheus.NewDesc("flotilla_queue_pending_jobs", "Jobs queued, waiting for a lease.", q, nil),
		leased:   prometheus.NewDesc("flotilla_queue_leased_jobs", "Jobs leased, not yet running.", q, nil),
		running:  prometheus.NewDesc("flotilla_queue_running_jobs", "Jobs running.", q, nil),
		share:    prometheus.NewDesc("flotilla_queue_share", "The queue's share of the clusters in the pool's last cycle.", qp, nil),
		fair:     prometheus.NewDesc("flotilla_queue_fair_share", "The queue's fair share in the pool's last cycle.", qp, nil),
		adjusted: prometheus.NewDesc("flotilla_queue_adjusted_fair_share", "The queue's demand-adjusted fair share in the pool's last cycle.", qp, nil),
		usage: prometheus.NewDesc("flotilla_queue_usage",
			"The queue's decayed average share after the pool's last cycle (the scheduler's usage memory; 0 when off).", qp, nil),
		gShare: prometheus.NewDesc("flotilla_group_share", "The queue group's share (its children's summed) in the pool's last cycle.", gp, nil),
		gFair:  prometheus.NewDesc("flotilla_group_fair_share", "The queue group's fair share in the pool's last cycle.", gp, nil),
		gAdjusted: prometheus.NewDesc("flotilla_group_adjusted_fair_share",
			"The queue group's demand-adjusted fair share in the pool's last cycle.", gp, nil),
		gUsage: prometheus.NewDesc("flotilla_group_usage",
			"The queue group's decayed average share after the pool's last cycle (its children's summed; 0 when usage memory is off).", gp, nil),
		lost: prometheus.NewDesc("flotilla_preemption_lost_resource_seconds_total",
			"Resource-seconds preemptions took from the queue's runs since the process started: each preempted run's running time times its requests (cpu in cores, memory in bytes).",
			[]string{"queue", "resource"}, nil),
	}
}

func (d *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, x := range []*prometheus.Desc{d.pending, d.leased, d.running, d.share, d.fair, d.adjusted, d.usage,
		d.gShare, d.gFair, d.gAdjusted, d.gUsage, d.lost} {
		ch <- x
	}
}

func (d *queueCollector) Collect(ch chan<- prometheus.Metric) {
	src := d.src()
	if src == nil {
		return // a follower: the leader reports the queues
	}
	gauge := func(desc *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
	}
	if qs, err := src.ListQueues(context.Background()); err == nil {
		for _, q := range qs {
			gauge(d.pending, float64(q.Queued), q.Name)
			gauge(d.leased, float64(q.Leased), q.Name)
			gauge(d.running, float64(q.Running), q.Name)
			pools := q.Pools
			if len(pools) == 0 {
				pools = []server.PoolQueueReport{{Pool: poolName(q.Pool), Report: q.Report}}
			}
			for _, p := range pools {
				gauge(d.share, p.Report.Share, q.Name, p.Pool)
				gauge(d.fair, p.Report.FairShare, q.Name, p.Pool)
				gauge(d.adjusted, p.Report.AdjustedFairShare, q.Name, p.Pool)
				gauge(d.usage, p.Report.Usage, q.Name, p.Pool)
			}
		}
	}
	if gs, err := src.ListGroups(context.Background()); err == nil {
		for _, g := range gs {
			pools := g.Pools
			if len(pools) == 0 {
				pools = []server.PoolGroupReport{{Pool: poolName(g.Pool), Report: g.Report}}
			}
			for _, p := range pools {
				gauge(d.gShare, p.Report.Share, g.Name, p.Pool)
				gauge(d.gFair, p.Report.FairShare, g.Name, p.Pool)
				gauge(d.gAdjusted, p.Report.AdjustedFairShare, g.Name, p.Pool)
				gauge(d.gUsage, p.Report.Usage, g.Name, p.Pool)
			}
		}
	}
	schema := src.Schema()
	for q, v := range src.PreemptionLoss() {
		for i, x := range v {
			if i < schema.Len() {
				ch <- prometheus.MustNewConstMetric(d.lost, prometheus.CounterValue, x, q, schema.Name(i))
			}
		}
	}
}

// poolName is the pool a report names: the default pool before any
// cycle.
func poolName(p string) string {
	if p == "" {
		return backend.DefaultPool
	}
	return p
}
