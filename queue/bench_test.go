package queue

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/flotilla-sched/flotilla"
)

// benchJobs makes n typical jobs: a 10-character ID, one of 10 queues, one
// of 100 job sets per queue (names shared, as a decoder that interns them
// would give), both default priority classes, 3-resource requests, no
// selector.
func benchJobs(n int) []*flotilla.Job {
	queues := make([]string, 10)
	for i := range queues {
		queues[i] = "queue-" + strconv.Itoa(i)
	}
	sets := make([]string, 100)
	for i := range sets {
		sets[i] = "jobset-" + strconv.Itoa(i)
	}
	classes := []string{"", flotilla.ArmadaPreemptible}
	rng := rand.New(rand.NewPCG(1, 2))
	jobs := make([]*flotilla.Job, n)
	for i := range jobs {
		jobs[i] = &flotilla.Job{
			ID:            fmt.Sprintf("job-%06d", i),
			Queue:         queues[rng.IntN(len(queues))],
			JobSet:        sets[rng.IntN(len(sets))],
			PriorityClass: classes[rng.IntN(len(classes))],
			Priority:      uint32(rng.IntN(4)),
			SubmitTime:    t0.Add(time.Duration(rng.IntN(3600)) * time.Second),
			Requests:      flotilla.Resources{int64(rng.IntN(8)+1) * 1000, int64(rng.IntN(32)+1) << 30, 0},
		}
	}
	return jobs
}

func heapAlloc() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkStoreAdd1M adds 1,000,000 typical jobs per op and reports the
// live heap they take with the store, after GC: B/job counts jobs and
// store, store-B/job the store alone.
func BenchmarkStoreAdd1M(b *testing.B) {
	const n = 1_000_000
	var total, store float64
	b.ReportAllocs()
	for range b.N {
		b.StopTimer()
		base := heapAlloc()
		jobs := benchJobs(n)
		withJobs := heapAlloc()
		s, err := New(testSchema, flotilla.DefaultPriorityClasses(), flotilla.ArmadaDefault)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		for _, j := range jobs {
			if err := s.Add(j); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		clear(jobs) // the store alone keeps the jobs alive
		jobs = nil
		after := heapAlloc()
		runtime.KeepAlive(jobs)
		if s.Len() != n {
			b.Fatal("lost jobs")
		}
		total = float64(after-base) / n
		store = float64(after) - float64(withJobs) + 8*n // withJobs also held the []*Job slice
		store /= n
		runtime.KeepAlive(s)
		b.StartTimer()
	}
	b.ReportMetric(total, "B/job")
	b.ReportMetric(store, "store-B/job")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/job")
}

// BenchmarkCursorNext is one Next over a queue of 100,000 jobs; the cursor
// is Reset at the end of the queue.
func BenchmarkCursorNext(b *testing.B) {
	s, err := New(testSchema, flotilla.DefaultPriorityClasses(), flotilla.ArmadaDefault)
	if err != nil {
		b.Fatal(err)
	}
	for _, j := range benchJobs(100_000) {
		j.Queue = "A"
		if err := s.Add(j); err != nil {
			b.Fatal(err)
		}
	}
	c := s.Cursor("A")
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, ok := c.Next(); !ok {
			c.Reset(s, "A")
		}
	}
}

// BenchmarkRemove removes jobs in random order from a store of 100,000
// jobs in 10 queues, refilling it (untimed) whenever half are gone.
func BenchmarkRemove(b *testing.B) {
	const n = 100_000
	jobs := benchJobs(n)
	s, err := New(testSchema, flotilla.DefaultPriorityClasses(), flotilla.ArmadaDefault)
	if err != nil {
		b.Fatal(err)
	}
	for _, j := range jobs {
		if err := s.Add(j); err != nil {
			b.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	rng.Shuffle(len(jobs), func(i, j int) { jobs[i], jobs[j] = jobs[j], jobs[i] })
	next := 0
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if next == n/2 {
			b.StopTimer()
			for _, j := range jobs[:next] {
				if err := s.Add(j); err != nil {
					b.Fatal(err)
				}
			}
			rng.Shuffle(len(jobs), func(i, j int) { jobs[i], jobs[j] = jobs[j], jobs[i] })
			next = 0
			b.StartTimer()
		}
		if _, ok := s.Remove(jobs[next].ID); !ok {
			b.Fatal("not found")
		}
		next++
	}
}

// BenchmarkAdd adds one job to a store of about 100,000 (removing it again
// untimed would distort; instead the store grows by b.N).
func BenchmarkAdd(b *testing.B) {
	s, err := New(testSchema, flotilla.DefaultPriorityClasses(), flotilla.ArmadaDefault)
	if err != nil {
		b.Fatal(err)
	}
	for _, j := range benchJobs(100_000) {
		if err := s.Add(j); err != nil {
			b.Fatal(err)
		}
	}
	extra := benchJobs(b.N)
	for i, j := range extra {
		j.ID = "extra-" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for _, j := range extra {
		if err := s.Add(j); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSchedulingKey(b *testing.B) {
	j := benchJobs(1)[0]
	j.NodeSelector = map[string]string{"zone": "a", "rack": "7", "gpu": "a100"}
	j.Tolerations = []flotilla.Toleration{{Key: "gpu", Operator: flotilla.TolerationExists, Effect: flotilla.TaintNoSchedule}}
	var sink uint64
	b.ReportAllocs()
	for b.Loop() {
		sink += SchedulingKey(j, 30000)
	}
	_ = sink
}
