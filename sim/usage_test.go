package sim_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/sim"
)

// TestUsageSeedsAreTheFirstCyclesHistory: queues[].usage is the usage
// memory every pool's first cycle starts from, as of the simulation's
// start (no time passed: the first cycle's usage is the seed itself), and
// the next cycle decays it from there; the half-life may come from the
// workload or the scheduler's configuration; without usage memory the
// seeds are accepted and unused, as in a scenario file.
func TestUsageSeedsAreTheFirstCyclesHistory(t *testing.T) {
	const halfLife = time.Hour
	oneCluster := `{"clusters": [{"name": "c", "nodes": [{"name": "n", "resources": {"cpu": "4", "memory": "8Gi"}}]}]}`
	twoPools := `{"clusters": [{"name": "c", "nodes": [{"name": "n", "resources": {"cpu": "4"}}]},
		{"name": "d", "pool": "gpu", "nodes": [{"name": "m", "resources": {"cpu": "4"}}]}]}`
	for _, tc := range []struct {
		name, extra, clusters string
		configHalfLife        time.Duration
		pools                 int
		on                    bool
	}{
		{"half-life in the workload", `"usageHalfLife": "1h",`, oneCluster, 0, 1, true},
		{"half-life in the scheduler's configuration", ``, oneCluster, halfLife, 1, true},
		{"every pool starts from the seeds", `"usageHalfLife": "1h", "usageWeight": 2,`, twoPools, 0, 2, true},
		{"no usage memory: seeds unused", ``, oneCluster, 0, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A has the jobs (one cpu); B and C none, seeded: their
			// share stays 0, so each u decays by 2^(−Δt/h) a cycle.
			w, err := sim.ParseWorkload([]byte(`{` + tc.extra + ` "duration": "20s",
				"queues": [{"name": "A"}, {"name": "B", "usage": 0.75}, {"name": "C", "usage": 1}],
				"jobTemplates": [{"id": "a", "queue": "A", "count": 1, "requests": {"cpu": "1"}, "runtime": {"minimum": "1h"}}]}`))
			require.NoError(t, err)
			require.Equal(t, []float64{0, 0.75, 1}, []float64{w.Queues[0].Usage, w.Queues[1].Usage, w.Queues[2].Usage})
			c, err := sim.ParseClusters([]byte(tc.clusters))
			require.NoError(t, err)
			cfg := sim.Config{Workload: w, Clusters: c}
			if tc.configHalfLife > 0 {
				schema, err := flotilla.NewResourceSchema("cpu")
				require.NoError(t, err)
				sc := scheduler.DefaultConfig(schema)
				sc.UsageHalfLife = tc.configHalfLife
				cfg.Scheduler = &sc
			}
			byTime := map[time.Duration][]scheduler.UsageState{}
			_, err = sim.RunObserved(context.Background(), cfg, func(now time.Duration, res *scheduler.Result) {
				byTime[now] = append(byTime[now], res.Usage)
			})
			require.NoError(t, err)
			require.Len(t, byTime[0], tc.pools, "one result per pool at the start")
			step := sim.DefaultCycleInterval
			require.Len(t, byTime[step], tc.pools)
			for p := range tc.pools {
				first, second := byTime[0][p], byTime[step][p]
				if !tc.on {
					assert.Empty(t, first.Usage, "pool %d", p)
					assert.Empty(t, second.Usage, "pool %d", p)
					continue
				}
				assert.Equal(t, sim.Start, first.Time, "pool %d: the seeds' time is the start", p)
				assert.Equal(t, 0.75, first.Usage["B"], "pool %d: no time passed before the first cycle", p)
				assert.Equal(t, 1.0, first.Usage["C"], "pool %d", p)
				assert.Zero(t, first.Usage["A"], "pool %d", p)
				beta := math.Pow(2, -step.Hours()/halfLife.Hours())
				assert.Equal(t, sim.Start.Add(step), second.Time, "pool %d", p)
				assert.InDelta(t, 0.75*beta, second.Usage["B"], 1e-12, "pool %d: one cycle's decay from the start", p)
				assert.InDelta(t, beta, second.Usage["C"], 1e-12, "pool %d", p)
			}
		})
	}
}

// TestAUsageSeedSlowsTheHeavyQueueUntilItDecays: two queues of equal
// weight and equal, unbounded demand on 80 one-cpu slots of two-minute
// jobs; heavy starts with usage 1 (it held the whole cluster lately),
// light with 0. Usage memory: half-life h = 1h, weight k = 1.
//
// Expectations, from the usage multiplier m = clamp(1 + k(1 − u/F⁰),
// 1/(1+k), 1+k) with F⁰ = ½ each:
//
//   - First cycle: m = 1+k for light, 1/(1+k) for heavy, so light's fair
//     share is (1+k)²/((1+k)²+1) = 0.8 and the empty cluster is split so:
//     64 slots against 16. Without the seed, 40 each.
//   - The seeded queue gets less while its usage is the higher: in every
//     cycle of the first half-life.
//   - Once d = u_heavy − u_light ≤ 1/(1+k) no multiplier is clamped.
//     With S = u_heavy + u_light the cluster's busy fraction at a cycle's
//     start (jobs that ended since the last cycle are gone then), the fair
//     shares differ by kd/(1+k(1−S)), and each u moves toward S × its fair
//     share at rate 1/τ, τ = h/ln 2: d' = −d·(1 + kS/(1+k(1−S)))/τ. So over
//     one half-life d falls by 2^−(1 + kS/(1+k(1−S))): a quarter with the
//     cluster always full (S = 1), a little less with S below 1.
//   - It converges: over the last half-hour both shares are ½ to within a
//     slot.
func TestAUsageSeedSlowsTheHeavyQueueUntilItDecays(t *testing.T) {
	const (
		k        = 1.0
		halfLife = 3600.0 // seconds
		slots    = 80
	)
	run := func(seed string) *sim.Output {
		w, err := sim.ParseWorkload([]byte(`{"usageHalfLife": "1h", "usageWeight": 1, "duration": "3h",
			"queues": [{"name": "light"}, {"name": "heavy"` + seed + `}],
			"jobTemplates": [{"id": "l", "queue": "light", "count": 6000, "requests": {"cpu": "1"}, "runtime": {"minimum": "2m"}},
			  {"id": "h", "queue": "heavy", "count": 6000, "requests": {"cpu": "1"}, "runtime": {"minimum": "2m"}}]}`))
		require.NoError(t, err)
		c, err := sim.ParseClusters([]byte(`{"clusters": [{"name": "c", "nodes": [{"name": "n", "count": 10, "resources": {"cpu": "8"}}]}]}`))
		require.NoError(t, err)
		out, err := sim.Run(context.Background(), sim.Config{Workload: w, Clusters: c, CycleInterval: 5 * time.Second})
		require.NoError(t, err)
		return out
	}
	// cycles pairs each cycle's rows: [light, heavy].
	cycles := func(out *sim.Output) [][2]sim.QueueRow {
		byCycle := map[int]*[2]sim.QueueRow{}
		var order []int
		for _, q := range out.Queues {
			r := byCycle[q.Cycle]
			if r == nil {
				r = &[2]sim.QueueRow{}
				byCycle[q.Cycle] = r
				order = append(order, q.Cycle)
			}
			if q.Queue == "heavy" {
				r[1] = q
			} else {
				r[0] = q
			}
		}
		out2 := make([][2]sim.QueueRow, len(order))
		for i, c := range order {
			out2[i] = *byCycle[c]
		}
		return out2
	}
	seeded, unseeded := cycles(run(`, "usage": 1`)), cycles(run(``))

	first := seeded[0]
	wantLight := (1 + k) * (1 + k) / ((1+k)*(1+k) + 1)
	assert.InDelta(t, wantLight, first[0].FairShare, 1e-9)
	assert.InDelta(t, 1-wantLight, first[1].FairShare, 1e-9)
	assert.InDelta(t, wantLight, first[0].Share, 1e-9, "light's share in the first cycle")
	assert.InDelta(t, 1-wantLight, first[1].Share, 1e-9, "heavy's share in the first cycle")
	assert.Equal(t, [2]float64{0, 1}, [2]float64{first[0].Usage, first[1].Usage}, "the seeds, no time passed")
	assert.InDelta(t, 0.5, unseeded[0][0].Share, 1e-9, "without the seed, light's share in the first cycle")
	assert.InDelta(t, 0.5, unseeded[0][1].Share, 1e-9, "without the seed, heavy's share in the first cycle")

	t1 := -1.0 // the first time d ≤ 1/(1+k)
	var d1, sumS float64
	n, checked := 0, false
	for _, c := range seeded {
		light, heavy := c[0], c[1]
		require.Equal(t, light.Time, heavy.Time)
		if light.Time < halfLife {
			require.Less(t, heavy.Share, light.Share, "at %.0fs the seeded queue gets less", light.Time)
		}
		d := heavy.Usage - light.Usage
		if t1 < 0 && d <= 1/(1+k) {
			t1, d1 = light.Time, d
		}
		if t1 >= 0 && light.Time <= t1+halfLife {
			sumS += heavy.Usage + light.Usage
			n++
		}
		if t1 >= 0 && light.Time == t1+halfLife {
			s := sumS / float64(n)
			want := math.Pow(2, -(1 + k*s/(1+k*(1-s))))
			got := d / d1
			t.Logf("d %.3f at %.0fs, %.3f one half-life later: ratio %.3f; mean S %.3f, expected %.3f (%.2f with S = 1)",
				d1, t1, d, got, s, want, math.Pow(2, -(1+k)))
			assert.InDelta(t, want, got, 0.02, "the usage gap over one half-life")
			checked = true
		}
		if light.Time >= 3*halfLife-1800 {
			assert.InDelta(t, 0.5, light.Share, 1.0/slots+1e-9, "light's share at %.0fs", light.Time)
			assert.InDelta(t, 0.5, heavy.Share, 1.0/slots+1e-9, "heavy's share at %.0fs", heavy.Time)
		}
	}
	require.Positive(t, t1, "the gap reached 1/(1+k)")
	require.True(t, checked, "the gap reached 1/(1+k) at %.0fs, too late to watch it for a half-life", t1)
}
