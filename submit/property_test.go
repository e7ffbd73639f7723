package submit

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"

	"github.com/flotilla-sched/flotilla"
)

// A gopter-generated seed drives a deterministic generator of valid
// requests, so a failure names the seed that reproduces it
// (SUBMIT_PROP_SEED replays a run).
func runProperty(t *testing.T, name string, runs int, check func(seed int64) string) {
	seed := int64(20261122)
	if s, err := strconv.ParseInt(os.Getenv("SUBMIT_PROP_SEED"), 10, 64); err == nil {
		seed = s
	}
	params := gopter.DefaultTestParametersWithSeed(seed)
	params.MinSuccessfulTests = runs
	props := gopter.NewProperties(params)
	props.Property(name, prop.ForAll(check, gen.Int64()))
	props.TestingRun(t)
}

var (
	genGraces    = []string{"", "0s", "1s", "30s", "5m"}
	genDeadlines = []string{"", "", "2h"}
	genClasses   = []string{"", flotilla.ArmadaDefault, flotilla.ArmadaPreemptible}
)

// genRequest returns a valid request of 1 … 6 templates: counts absent or
// 0 … 5, optional client ids and GPUs, some templates whole gangs; every
// job requests at least 1 cpu (a request of nothing is refused).
func genRequest(rng *rand.Rand) *Request {
	req := &Request{Queue: "A", JobSet: "s1"}
	for i := range 1 + rng.IntN(6) {
		t := JobTemplate{
			PriorityClass:          genClasses[rng.IntN(len(genClasses))],
			Priority:               rng.Uint32N(10),
			Requests:               map[string]string{"cpu": strconv.Itoa(1 + rng.IntN(4)), "memory": strconv.Itoa(rng.IntN(3)) + "Gi"},
			TerminationGracePeriod: genGraces[rng.IntN(len(genGraces))],
			ActiveDeadline:         genDeadlines[rng.IntN(len(genDeadlines))],
			Runtime:                fmt.Sprintf("%ds", rng.IntN(60)),
			ExitCode:               rng.IntN(2),
		}
		n := 1
		if rng.IntN(4) > 0 {
			n = rng.IntN(6)
			t.Count = &n
		}
		if rng.IntN(2) == 0 {
			t.Requests[DefaultGPUResource] = strconv.Itoa(rng.IntN(3))
		}
		if rng.IntN(2) == 0 {
			t.ClientID = "c" + strconv.Itoa(i)
		}
		if n > 0 && rng.IntN(3) == 0 {
			t.Gang = &GangSpec{ID: "g" + strconv.Itoa(i), Cardinality: n, NodeUniformityLabel: "zone"}
		}
		req.Jobs = append(req.Jobs, t)
	}
	return req
}

func TestValidRequestYieldsSumOfCountsValidJobsWithUniqueIDsExpandedClientIDsAndRuledDurations(t *testing.T) {
	cat := testCatalog()
	gpu, _ := cat.Schema.Index(DefaultGPUResource)
	runProperty(t, "expansion", 300, func(seed int64) string {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		req := genRequest(rng)
		var c counter
		specs, err := Rules{}.Jobs(req, cat, testNow, c.next)
		if err != nil {
			return fmt.Sprintf("valid request rejected: %v", err)
		}
		want := 0
		for _, t := range req.Jobs {
			if t.Count == nil {
				want++
			} else {
				want += *t.Count
			}
		}
		if len(specs) != want || c.calls != want {
			return fmt.Sprintf("%d jobs, %d ids drawn, want %d", len(specs), c.calls, want)
		}
		if err := gangCheck(specs); err != nil {
			return fmt.Sprintf("gang rule: %v", err)
		}
		ids := map[string]bool{}
		k := 0
		for i, t := range req.Jobs {
			n := 1
			if t.Count != nil {
				n = *t.Count
			}
			for e := range n {
				s := specs[k]
				k++
				if err := s.Job.Validate(cat.Schema); err != nil {
					return fmt.Sprintf("jobs[%d] #%d invalid: %v", i, e, err)
				}
				if ids[s.Job.ID] {
					return fmt.Sprintf("id %q twice", s.Job.ID)
				}
				ids[s.Job.ID] = true
				wantCID := t.ClientID
				if wantCID != "" && t.Count != nil {
					wantCID += "-" + strconv.Itoa(e)
				}
				if s.ClientID != wantCID {
					return fmt.Sprintf("jobs[%d] #%d client id %q, want %q", i, e, s.ClientID, wantCID)
				}
				wantGrace := time.Second
				if t.TerminationGracePeriod != "" && t.TerminationGracePeriod != "0s" {
					wantGrace, _ = time.ParseDuration(t.TerminationGracePeriod)
				}
				wantDL := DefaultActiveDeadline
				switch {
				case t.ActiveDeadline != "":
					wantDL, _ = time.ParseDuration(t.ActiveDeadline)
				case s.Job.Requests[gpu] > 0:
					wantDL = DefaultGPUActiveDeadline
				}
				if s.TerminationGracePeriod != wantGrace || s.ActiveDeadline != wantDL {
					return fmt.Sprintf("jobs[%d] #%d grace %s deadline %s, want %s %s", i, e, s.TerminationGracePeriod, s.ActiveDeadline, wantGrace, wantDL)
				}
				wantClass := t.PriorityClass
				if wantClass == "" {
					wantClass = cat.DefaultPriorityClass
				}
				if s.Job.Queue != "A" || s.Job.JobSet != "s1" || !s.Job.SubmitTime.Equal(testNow) || s.Job.PriorityClass != wantClass || s.Job.Priority != t.Priority {
					return fmt.Sprintf("jobs[%d] #%d: %+v", i, e, s.Job)
				}
			}
		}
		return ""
	})
}

// genClientIDs are client ids that collide after count expansion in many
// ways (a with count ≥ 2 makes a-1, a-1 with a count makes a-1-0, …).
var genClientIDs = []string{"a", "a-1", "a-1-0", "a-10", "a-", "b", "b-0"}

func TestRequestClientIDsAreRejectedAsDuplicateExactlyAtTheTemplatesWhoseExpansionRepeatsAnEarlierOne(t *testing.T) {
	cat := testCatalog()
	runProperty(t, "client ids", 500, func(seed int64) string {
		rng := rand.New(rand.NewPCG(uint64(seed), 11))
		req := &Request{Queue: "A", JobSet: "s1"}
		for range 1 + rng.IntN(4) {
			tm := JobTemplate{Requests: map[string]string{"cpu": "1"}}
			if rng.IntN(5) > 0 {
				tm.ClientID = genClientIDs[rng.IntN(len(genClientIDs))]
			}
			if rng.IntN(3) > 0 {
				tm.Count = intp(rng.IntN(13))
			}
			req.Jobs = append(req.Jobs, tm)
		}
		// The oracle: expand every client id, flag a template naming one
		// an earlier template (or itself) named.
		seen, want := map[string]bool{}, map[string]bool{}
		for i, tm := range req.Jobs {
			if tm.ClientID == "" {
				continue
			}
			ids := []string{tm.ClientID}
			if tm.Count != nil {
				ids = ids[:0]
				for k := range *tm.Count {
					ids = append(ids, tm.ClientID+"-"+strconv.Itoa(k))
				}
			}
			for _, id := range ids {
				if seen[id] {
					want[fmt.Sprintf("jobs[%d].clientId", i)] = true
				}
				seen[id] = true
			}
		}
		var c counter
		specs, err := Rules{}.Jobs(req, cat, testNow, c.next)
		got := map[string]bool{}
		for _, p := range flotilla.Problems(err) {
			var fe *flotilla.FieldError
			if !errors.As(p, &fe) || !errors.Is(p, flotilla.ErrDuplicate) {
				return fmt.Sprintf("unexpected problem %v", p)
			}
			got[fe.Field] = true
		}
		if !maps.Equal(got, want) {
			return fmt.Sprintf("%+v: duplicates reported at %v, want %v", req.Jobs, got, want)
		}
		if err == nil {
			for _, s := range specs {
				if s.ClientID != "" && !seen[s.ClientID] {
					return fmt.Sprintf("client id %q not of the expansion", s.ClientID)
				}
			}
		}
		return ""
	})
}
